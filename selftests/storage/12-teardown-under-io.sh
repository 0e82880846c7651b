# Teardown under I/O. NVMe-oF (siw_rs on both ends): fio runs on the namespace while
# `rdma link delete` takes the host's device away; nvme-rdma must drop the controller, fio
# end with errors or completions, not hang. NFSv3 over RDMA (siw_rs on both ends, soft
# mount): fio runs on the mount while `rmmod siw_rs` takes every device away; fio ends,
# the unmount finishes. Then both targets come down and every module unloads. The guest
# checks the kernel log for warnings, lockdep and hangs, and kmemleak at the end.
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
cleanup() {
	nvmeof_cleanup
	nfs_server_down
	two_hosts_down
}

one_ns_devices siw_rs siw_rs
nvmet_up 192.168.77.2
dev=$(nvme_connect 192.168.77.2 192.168.77.1)
fio --name=load --filename="$dev" --direct=1 --ioengine=libaio --rw=randrw --bs=4k \
	--iodepth=16 --time_based --runtime=300 --size=64M >/tmp/fio-nvme.out 2>&1 &
fio_pid=$!
sleep 8
kill -0 $fio_pid 2>/dev/null || fail "fio on $dev ended early: $(cat /tmp/fio-nvme.out)"
rdma link delete dev_a
log "NVMe-oF: host device deleted under fio"
for _ in $(seq 120); do kill -0 $fio_pid 2>/dev/null || break; sleep 1; done
if kill -0 $fio_pid 2>/dev/null; then
	kill -9 $fio_pid
	fail "fio on the NVMe-oF namespace still running 120 s after the device went"
fi
wait $fio_pid || log "NVMe-oF fio ended with errors, as it may"
for _ in $(seq 60); do [ -z "$(ls /sys/class/nvme 2>/dev/null)" ] && break; sleep 1; done
[ -z "$(ls /sys/class/nvme 2>/dev/null)" ] || nvme disconnect -n "$NQN" >/dev/null 2>&1 || true
[ -z "$(ls /sys/class/nvme 2>/dev/null)" ] || fail "NVMe controller still there: $(ls /sys/class/nvme)"
nvmet_down
modprobe -r nvme-rdma || fail "nvme-rdma does not unload"
one_ns_devices_down
log "NVMe-oF: controller gone, target down, modules unloaded"

two_hosts siw_rs siw_rs
nfs_server_up
modprobe rpcrdma
# The client, its mount and fio in one shell in host A (the mount lives in its mount
# namespace); it waits for the device to go, then unmounts.
on_a bash -c '
	mkdir -p /tmp/siw-nfs
	mount -t nfs -o vers=3,proto=rdma,port=20049,nolock,soft,timeo=30,retrans=1 \
		192.168.77.2:/tmp/nfs-export /tmp/siw-nfs || exit 1
	fio --name=load --filename=/tmp/siw-nfs/load --direct=1 --ioengine=libaio --rw=randrw \
		--bs=4k --iodepth=16 --time_based --runtime=300 --size=32M >/tmp/fio-nfs.out 2>&1 &
	echo $! >/tmp/fio-nfs.pid
	touch /tmp/nfs-running
	while [ -e /tmp/nfs-running ]; do sleep 0.5; done
	for _ in $(seq 120); do kill -0 "$(cat /tmp/fio-nfs.pid)" 2>/dev/null || break; sleep 1; done
	kill -0 "$(cat /tmp/fio-nfs.pid)" 2>/dev/null && { echo "fio still running"; exit 2; }
	timeout 120 umount -f /tmp/siw-nfs || timeout 60 umount -l /tmp/siw-nfs || exit 3
	echo unmounted
' >/tmp/nfs-client.out 2>&1 &
client=$!
for _ in $(seq 60); do [ -e /tmp/nfs-running ] && break; sleep 0.5; done
[ -e /tmp/nfs-running ] || fail "NFS client did not start: $(cat /tmp/nfs-client.out)"
sleep 8
# Both hosts' devices go with the module; its unload must not wait for the consumers
# forever (the RDMA core asks them to let go), and nothing may refuse it: siw_rs's
# sockets keep the socket layer's own lock classes, which pin no module (the C siw's
# own classes pin siw under lock debugging while any of its sockets lives).
timeout 120 rmmod siw_rs 2>/tmp/rmmod.err || fail "rmmod siw_rs under NFS I/O: $(cat /tmp/rmmod.err)"
log "NFS: siw_rs unloaded under fio, with its devices"
rm -f /tmp/nfs-running
wait $client || fail "NFS client: $(cat /tmp/nfs-client.out); fio: $(tail -n 5 /tmp/fio-nfs.out)"
has unmounted "$(cat /tmp/nfs-client.out)" || fail "NFS client: $(cat /tmp/nfs-client.out)"
nfs_server_down
two_hosts_down
log "NFS: fio ended, unmount finished, server down"
