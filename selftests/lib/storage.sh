# Sourced by the storage tests (inside the VM), after common.sh: kernel storage consumers
# over RDMA. NVMe-oF and iSER bind their rdma_cm ids in the initial network namespace
# (nvme-rdma, nvmet-rdma, ib_iser and ib_isert all use &init_net), so their two "hosts" are
# the two ends of a veth pair in that namespace: a device of one driver on va
# (192.168.77.1, the initiator's source address) and one of the other on vb (192.168.77.2,
# where the target listens). Both addresses being local, the kernel would deliver between
# them over lo, and rdma_cm would put both ends on the target's device; policy routing
# sends 192.168.77.1 -> .2 out of va and .2 -> .1 out of vb instead, so each side runs on
# its own device and driver and the TCP between them crosses the veth. NFS is
# namespace-aware and uses the two-namespace topology of common.sh.
# shellcheck shell=bash

NQN=nqn.2026-11.dev.siw-rs:storage-test
HOSTNQN=nqn.2014-08.org.nvmexpress:uuid:5e1f0c2a-7b3d-4c8e-9a61-0d2f3b4c5d6e
HOSTID=5e1f0c2a-7b3d-4c8e-9a61-0d2f3b4c5d6e

# one_ns_devices DRV_A DRV_B: veth va (192.168.77.1) / vb (192.168.77.2) in this namespace,
# an RDMA device of DRV_A (siw_rs or siw) on va named dev_a, one of DRV_B on vb named
# dev_b. DRV_B may be "none" (one device, on va, which then holds both addresses).
one_ns_devices() {
	local a=$1 b=$2
	case "$a$b" in *siw_rs*) load_siw_rs ;; esac
	case " $a $b " in *" siw "*) load_siw ;; esac
	veth_pair va vb
	ip link set lo up
	if [ "$b" = none ]; then
		ip addr add 192.168.77.1/24 dev va
		ip addr add 192.168.77.2/24 dev va
		rdma link add dev_a type "$a" netdev va
	else
		ip addr add 192.168.77.1/24 dev va
		ip addr add 192.168.77.2/24 dev vb
		cross_veth_routes
		rdma link add dev_a type "$a" netdev va
		rdma link add dev_b type "$b" netdev vb
	fi
}

# Traffic between the two local addresses leaves by a veth end and arrives at the other:
# for locally sent packets (iif lo; received ones must still be delivered locally), two
# rules ahead of the local table route anything to .2 via va (initiators may leave the
# source to the route: ib_iser does) and .2 -> .1 via vb. Each end accepts packets from a
# local source, and each knows the other's MAC (no ARP between local addresses).
cross_veth_routes() {
	local i
	for i in all va vb; do
		sysctl -qw "net.ipv4.conf.$i.accept_local=1" "net.ipv4.conf.$i.rp_filter=0"
	done
	ip rule add pref 10 to 192.168.77.2 iif lo lookup 100
	ip rule add pref 11 from 192.168.77.2 to 192.168.77.1 iif lo lookup 101
	ip rule add pref 1000 lookup local
	ip rule del pref 0 lookup local
	ip route add 192.168.77.2 dev va src 192.168.77.1 table 100
	ip route add 192.168.77.1 dev vb src 192.168.77.2 table 101
	ip neigh replace 192.168.77.2 lladdr "$(cat /sys/class/net/vb/address)" dev va nud permanent
	ip neigh replace 192.168.77.1 lladdr "$(cat /sys/class/net/va/address)" dev vb nud permanent
}

cross_veth_routes_down() {
	ip rule del pref 10 2>/dev/null || true
	ip rule del pref 11 2>/dev/null || true
	if ! has '^0:' "$(ip rule show)"; then ip rule add pref 0 lookup local; fi
	ip rule del pref 1000 2>/dev/null || true
	ip route flush table 100 2>/dev/null || true
	ip route flush table 101 2>/dev/null || true
}

one_ns_devices_down() {
	rdma link delete dev_a 2>/dev/null || true
	rdma link delete dev_b 2>/dev/null || true
	cross_veth_routes_down
	ip link del va 2>/dev/null || true
	unload_siw_rs || fail "siw_rs does not unload: $(lsmod | head -n 20)"
	unload_siw || fail "siw does not unload"
}

CFS=/sys/kernel/config/nvmet

# nvmet_up ADDR: a memory-backed null_blk namespace (/dev/nullb0), exported by nvmet over
# RDMA at ADDR:4420 as $NQN to any host.
nvmet_up() {
	modprobe null_blk nr_devices=1 gb=1 memory_backed=1 || fail "null_blk"
	modprobe nvmet-rdma || fail "nvmet-rdma"
	[ -d "$CFS" ] || mount -t configfs none /sys/kernel/config
	mkdir "$CFS/subsystems/$NQN"
	echo 1 >"$CFS/subsystems/$NQN/attr_allow_any_host"
	mkdir "$CFS/subsystems/$NQN/namespaces/1"
	echo -n /dev/nullb0 >"$CFS/subsystems/$NQN/namespaces/1/device_path"
	echo 1 >"$CFS/subsystems/$NQN/namespaces/1/enable"
	mkdir "$CFS/ports/1"
	echo rdma >"$CFS/ports/1/addr_trtype"
	echo ipv4 >"$CFS/ports/1/addr_adrfam"
	echo "$1" >"$CFS/ports/1/addr_traddr"
	echo 4420 >"$CFS/ports/1/addr_trsvcid"
	ln -s "$CFS/subsystems/$NQN" "$CFS/ports/1/subsystems/$NQN" || fail "nvmet: enabling the port"
}

# nvmet_down: undoes nvmet_up; every step that has something to undo must succeed (the
# modules must unload: a reference the RDMA stack kept would show here).
nvmet_down() {
	local ns=$CFS/subsystems/$NQN/namespaces/1
	if [ -L "$CFS/ports/1/subsystems/$NQN" ]; then
		rm "$CFS/ports/1/subsystems/$NQN" || fail "nvmet: disabling the port"
	fi
	if [ -d "$CFS/ports/1" ]; then rmdir "$CFS/ports/1" || fail "nvmet: removing the port"; fi
	if [ -d "$ns" ]; then
		echo 0 >"$ns/enable"
		rmdir "$ns" || fail "nvmet: removing the namespace"
	fi
	if [ -d "$CFS/subsystems/$NQN" ]; then
		rmdir "$CFS/subsystems/$NQN" || fail "nvmet: removing the subsystem"
	fi
	if has '^nvmet_rdma ' "$(lsmod)"; then
		modprobe -r nvmet-rdma nvmet || fail "nvmet-rdma does not unload: $(lsmod | grep nvme)"
	fi
	if has '^null_blk ' "$(lsmod)"; then modprobe -r null_blk || fail "null_blk does not unload"; fi
}

# nvme_connect ADDR SRC: connects to $NQN at ADDR:4420 from source address SRC; prints
# the namespace's block device once it is there.
nvme_connect() {
	local out n d
	modprobe nvme-rdma || fail "nvme-rdma"
	out=$(nvme connect -t rdma -a "$1" -s 4420 -w "$2" -n "$NQN" --hostnqn="$HOSTNQN" \
		--hostid="$HOSTID" 2>&1) || fail "nvme connect $1 from $2: $out; $(dmesg | tail -n 20)"
	for n in $(seq 60); do
		for d in /sys/class/nvme/nvme*; do
			[ -e "$d/subsysnqn" ] && [ "$(cat "$d/subsysnqn")" = "$NQN" ] || continue
			# The controller's namespaces: nvmeXnY, or with native multipath its path
			# nvmeScCnY, whose block device is the subsystem's head nvmeSnY.
			for b in "$d"/nvme*n*; do
				[ -e "$b" ] || continue
				b=$(basename "$b" | sed -E 's/^nvme([0-9]+)c[0-9]+n([0-9]+)$/nvme\1n\2/')
				[ -b "/dev/$b" ] && { echo "/dev/$b"; return 0; }
			done
		done
		sleep 0.5
	done
	fail "no namespace block device after nvme connect: $(ls /sys/class/nvme 2>&1)"
}

nvme_disconnect() {
	local out
	out=$(nvme disconnect -n "$NQN" 2>&1) || fail "nvme disconnect: $out"
	has 'disconnected 1 controller' "$out" || fail "nvme disconnect: $out"
}

# fio_verify DEV SECONDS: fio on DEV with direct I/O and verification: random 4 KiB writes
# and sequential 1 MiB writes, each block checked (crc32c and the offset in a header) when
# read back. For SECONDS (time-based; the verify pass follows), or, with SECONDS 0, one
# pass: 4 MiB of random 4 KiB writes (1,024 at queue depth 16) and 16 MiB of 1 MiB ones,
# each read back and checked. The cost is per I/O, not per byte: under TCG a 4 KiB write
# took about 5.6 ms (NVMe-oF between two siw_rs) and a 1 MiB one about 210 ms, so the
# random job was 16 MiB (4,096 writes) until 2026-11-28 and 87% of fio's time, and 32 MiB
# before 2026-11-27. fio exits non-zero on any verify error.
fio_verify() {
	local dev=$1 secs=$2 tb=() out
	[ "$secs" != 0 ] && tb=(--time_based --runtime="$secs")
	out=$(fio --output-format=terse --terse-version=3 --direct=1 --ioengine=libaio \
		--verify=crc32c --verify_fatal=1 --do_verify=1 --filename="$dev" \
		"${tb[@]}" \
		--name=rand4k --rw=randwrite --bs=4k --iodepth=16 --size=4M --offset=0 \
		--name=seq1m --rw=write --bs=1M --iodepth=4 --size=16M --offset=64M 2>&1) ||
		fail "fio verify on $dev: $out"
	fio_verified "fio on $dev" "$out"
}

# fio_verified WHAT OUT: each job of fio's terse output OUT wrote something and read back
# (verified) at least as much; logs each job's figures, WHAT naming the run.
fio_verified() {
	local name rkb rms wkb wms
	# Terse v3: field 3 is the job name, 6 the KiB read (the verify pass) and 9 its time
	# (ms), 47 the KiB written and 50 their time.
	while read -r name rkb rms wkb wms; do
		[ "$wkb" -gt 0 ] && [ "$rkb" -ge "$wkb" ] || fail "$1, $name: wrote $wkb KiB, verified $rkb KiB"
		log "$1, $name: wrote $wkb KiB ($wms ms), read back and verified $rkb KiB ($rms ms)"
	done < <(awk -F';' '/^3;/ { print $3, $6, $9, $47, $50 }' <<<"$2")
	has '^3;' "$2" || fail "$1: fio printed no results: $2"
}

# nvmeof_cleanup: a test's cleanup after nvmeof_pairing (disconnect, nvmet down, devices
# down), in whatever state the test stopped.
nvmeof_cleanup() {
	nvme disconnect -n "$NQN" 2>/dev/null
	nvmet_down
	one_ns_devices_down
}

# nvmeof_pairing DRV_HOST DRV_TARGET: the target on DRV_TARGET's device (vb), the host on
# DRV_HOST's (va); connect, fio with verify, disconnect. DRV_TARGET "none": both on one
# DRV_HOST device, the host connecting to its own address.
nvmeof_pairing() {
	local h=$1 t=$2 dev
	one_ns_devices "$h" "$t"
	nvmet_up 192.168.77.2
	dev=$(nvme_connect 192.168.77.2 192.168.77.1)
	log "$h host -> ${t/none/same device} target: connected, namespace $dev"
	fio_verify "$dev" 0
	nvme_disconnect
	nvmet_down
	one_ns_devices_down
}

EXPORT=/tmp/nfs-export
NFS_RDMA_PORT=20049

# nfs_server_up: an NFS server in host B (nfsd, mountd and rpcbind in its namespace)
# exporting a tmpfs at $EXPORT over RDMA on port 20049 (and TCP, which mountd's protocol
# needs for NFSv3). NFSv4's grace period is cut to its 10 s minimum.
nfs_server_up() {
	local out
	rm -f /tmp/nfs-src-*
	modprobe nfsd || fail "nfsd"
	modprobe rpcrdma || fail "rpcrdma"
	mkdir -p "$EXPORT" /run/rpcbind
	mountpoint -q "$EXPORT" || mount -t tmpfs -o size=512m tmpfs "$EXPORT"
	chmod 1777 "$EXPORT"
	# nfs-utils keeps its state here; the guest's root is the host's, not to be written.
	mountpoint -q /var/lib/nfs || mount -t tmpfs tmpfs /var/lib/nfs
	mkdir -p /var/lib/nfs/rpc_pipefs /var/lib/nfs/v4recovery
	: >/var/lib/nfs/etab
	: >/var/lib/nfs/rmtab
	# One shell: `ip netns exec` gives each command its own mount namespace, and the
	# daemons keep the one they started in (with host B's nfsd filesystem mounted).
	out=$(on_b bash -s <<-'SRV' 2>&1
		set -e
		mount -t nfsd nfsd /proc/fs/nfsd
		echo 10 >/proc/fs/nfsd/nfsv4leasetime
		echo 10 >/proc/fs/nfsd/nfsv4gracetime
		rpcbind -w
		exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 192.168.77.0/24:/tmp/nfs-export
		rpc.mountd --no-udp
		rpc.nfsd --no-udp 4
		echo "rdma 20049" >/proc/fs/nfsd/portlist
		cat /proc/fs/nfsd/portlist
	SRV
	) || fail "nfs server: $out"
	has '^rdma 20049' "$out" || fail "nfsd does not listen on rdma 20049: $out"
	listening_b "$NFS_RDMA_PORT"
}

nfs_server_down() {
	on_b bash -c 'mount -t nfsd nfsd /proc/fs/nfsd 2>/dev/null; rpc.nfsd 0; exportfs -ua' \
		>/dev/null 2>&1 || true
	pkill -x rpc.mountd || true
	pkill -x rpcbind || true
	umount /var/lib/nfs 2>/dev/null || true
	umount "$EXPORT" 2>/dev/null || true
	rm -f /tmp/nfs-src-*
	modprobe -r rpcrdma nfsd nfsv4 nfsv3 nfs 2>/dev/null || true
}

# nfs_client VERS [MIB [SECS]]: in host A, mount host B's export over RDMA with NFS version
# VERS; write MIB MiB (default 16) of pseudo-random data, unmount, mount again, read it back
# and compare byte for byte; then fio with verify (direct I/O): 1 MiB of 4 KiB random
# writes at queue depth 16 and 4 MiB of 1 MiB ones, each block read back and checked after
# its job's writes, again and again until SECS seconds (default 0: once) have passed, every
# run's writes verified. (A time-based fio run cannot promise that: on a slow day its time
# ran out before its first verify.) Then unmount. All in one shell: a mount made under
# `ip netns exec` lives in that command's mount namespace.
nfs_client() {
	local vers=$1 mib=${2:-16} secs=${3:-0} out
	modprobe rpcrdma || fail "rpcrdma"
	# One file per size, for every server of the test.
	[ -s /tmp/nfs-src-$mib ] || head -c "${mib}M" /dev/urandom >/tmp/nfs-src-$mib
	out=$(on_a env VERS="$vers" MIB="$mib" SECS="$secs" bash -s <<-'CLI' 2>&1
		set -e
		o="vers=$VERS,proto=rdma,port=20049,nolock,actimeo=0"
		# NFSv4 names the export by its place in the pseudo filesystem, of which it is
		# the root (fsid=0); NFSv3 by its path.
		case $VERS in 3) src=192.168.77.2:/tmp/nfs-export ;; *) src=192.168.77.2:/ ;; esac
		mkdir -p /tmp/siw-nfs
		mount -t nfs -o "$o" "$src" /tmp/siw-nfs
		grep ' /tmp/siw-nfs ' /proc/mounts
		SECONDS=0
		cp /tmp/nfs-src-$MIB /tmp/siw-nfs/data
		umount /tmp/siw-nfs
		w=$SECONDS
		mount -t nfs -o "$o" "$src" /tmp/siw-nfs
		SECONDS=0
		cmp /tmp/nfs-src-$MIB /tmp/siw-nfs/data
		echo "$MIB MiB read back identical (written and unmounted in $w s, read in $SECONDS s)"
		SECONDS=0
		rm /tmp/siw-nfs/data
		runs=0
		while [ $runs = 0 ] || [ $SECONDS -lt "$SECS" ]; do
			fio --output-format=terse --terse-version=3 --direct=1 --ioengine=libaio \
				--verify=crc32c --verify_fatal=1 --do_verify=1 \
				--filename=/tmp/siw-nfs/fio.dat \
				--name=rand4k --rw=randwrite --bs=4k --iodepth=16 --size=1M --offset=0 \
				--name=seq1m --rw=write --bs=1M --iodepth=4 --size=4M --offset=1M
			runs=$((runs + 1))
		done
		echo "fio done: $runs runs in $SECONDS s"
		rm /tmp/siw-nfs/fio.dat
		umount /tmp/siw-nfs
	CLI
	) || fail "nfs v$vers client: $out; kernel log: $(dmesg | tail -n 20)"
	has "proto=rdma" "$(grep ' /tmp/siw-nfs ' <<<"$out")" || fail "nfs v$vers: not mounted over RDMA: $out"
	has "vers=$vers" "$(grep ' /tmp/siw-nfs ' <<<"$out")" || fail "nfs v$vers: mounted as: $out"
	has "$mib MiB read back identical" "$out" || fail "nfs v$vers: $out"
	fio_verified "NFSv$vers over RDMA: fio" "$out"
	log "NFSv$vers over RDMA: $mib MiB written, remounted, read back identical" \
		"($(grep -o 'written and .* s' <<<"$out")); $(grep '^fio done' <<<"$out")"
}

# nfs_pairing DRV_CLIENT DRV_SERVER [init]: the server in host B on DRV_SERVER's device,
# the client in host A on DRV_CLIENT's; NFSv3 and NFSv4.2. With "init", host A is the
# initial namespace: the C siw makes a kernel consumer's connection in the caller's
# namespace, and xprtrdma connects from a worker, which runs in the initial one, so a C siw
# client can mount over RDMA only from there (siw_rs makes it in its netdev's namespace).
nfs_pairing() {
	if [ "${3:-}" = init ]; then
		nfs_hosts_init_a "$1" "$2"
	else
		two_hosts "$1" "$2"
	fi
	nfs_server_up
	# 64 MiB each; 30 s of verified fio on NFSv4.2, one fio run on v3 (for time).
	nfs_client 3 64
	nfs_client 4.2 64 30
	nfs_server_down
	nfs_hosts_down
}

# nfs_hosts_init_a DRV_A DRV_B: two_hosts, but host A is the initial namespace.
nfs_hosts_init_a() {
	local a=$1 b=$2
	case "$a$b" in *siw_rs*) load_siw_rs ;; esac
	case " $a $b " in *" siw "*) load_siw ;; esac
	ip netns add hostB
	ip link add va index 77 type veth peer name vb netns hostB index 78
	udev_settle
	ip addr add 192.168.77.1/24 dev va
	ip -n hostB addr add 192.168.77.2/24 dev vb
	ip link set va up
	ip -n hostB link set vb up
	ip link set lo up
	ip -n hostB link set lo up
	DEV_A=${a}_a DEV_B=${b}_b
	rdma link add "$DEV_A" type "$a" netdev va
	ip netns exec hostB rdma link add "$DEV_B" type "$b" netdev vb
	NFS_A_INIT=1
	on_a() { "$@"; }
}

nfs_hosts_down() {
	if [ -z "${NFS_A_INIT:-}" ]; then
		two_hosts_down
		return 0
	fi
	rdma link delete "${DEV_A:-none}" 2>/dev/null || true
	ip netns exec hostB rdma link delete "${DEV_B:-none}" 2>/dev/null || true
	ip link del va 2>/dev/null || true
	ip netns del hostB 2>/dev/null || true
	unload_siw_rs || fail "siw_rs does not unload"
	unload_siw || fail "siw does not unload"
}

TIQN=iqn.2026-11.dev.siw-rs:storage-target
TCFS=/sys/kernel/config/target

# iser_target_up ADDR: an LIO iSCSI target with a 128 MiB ramdisk LUN and an iSER portal at
# ADDR:3260, open to any initiator. LIO opens a TCP portal with every network portal, and
# on iWARP the iSER listener needs the same TCP port: the TCP one is made from a namespace
# of its own ("lio", where it binds without the address and serves nothing), so isert's
# listener (rdma_cm, initial namespace) gets the port.
iser_target_up() {
	local np=$TCFS/iscsi/$TIQN/tpgt_1/np/$1:3260 t=$TCFS/iscsi/$TIQN/tpgt_1
	modprobe ib_isert || fail "ib_isert"
	modprobe target_core_mod || fail "target_core_mod"
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	mkdir -p "$TCFS/core/rd_mcp_0/ramdisk"
	echo rd_pages=32768 >"$TCFS/core/rd_mcp_0/ramdisk/control"
	echo 1 >"$TCFS/core/rd_mcp_0/ramdisk/enable"
	mkdir -p "$t/lun/lun_0"
	ln -s "$TCFS/core/rd_mcp_0/ramdisk" "$t/lun/lun_0/ramdisk"
	echo 0 >"$t/attrib/authentication"
	echo 1 >"$t/attrib/generate_node_acls"
	echo 1 >"$t/attrib/cache_dynamic_acls"
	echo 0 >"$t/attrib/demo_mode_write_protect"
	ip netns add lio
	ip netns exec lio sh -c "sysctl -qw net.ipv4.ip_nonlocal_bind=1 &&
		mount -t configfs none /sys/kernel/config && mkdir '$np'" || fail "LIO network portal"
	echo 1 >"$np/iser" || fail "LIO: enabling iSER on $1:3260: $(dmesg | tail -n 5)"
	echo 1 >"$t/enable"
}

# iser_target_down: undoes iser_target_up; every step with something to undo must succeed.
iser_target_down() {
	local t=$TCFS/iscsi/$TIQN/tpgt_1 np
	if [ -d "$t" ]; then
		echo 0 >"$t/enable"
		for np in "$t"/np/*; do
			[ -d "$np" ] || continue
			echo 0 >"$np/iser"
			rmdir "$np" || fail "LIO: removing $np"
		done
		rm -f "$t/lun/lun_0/ramdisk"
		rmdir "$t/lun/lun_0" "$t" "$TCFS/iscsi/$TIQN" || fail "LIO: removing the target"
	fi
	# The fabric's directory holds iscsi_target_mod.
	if [ -d "$TCFS/iscsi" ]; then rmdir "$TCFS/iscsi" || fail "LIO: removing the iscsi fabric"; fi
	if [ -d "$TCFS/core/rd_mcp_0/ramdisk" ]; then
		rmdir "$TCFS/core/rd_mcp_0/ramdisk" "$TCFS/core/rd_mcp_0" || fail "LIO: removing the ramdisk"
	fi
	ip netns del lio 2>/dev/null || true
	if has '^ib_isert ' "$(lsmod)"; then
		modprobe -r ib_isert iscsi_target_mod target_core_iblock target_core_file target_core_mod ||
			fail "ib_isert does not unload: $(lsmod | grep -E 'isert|target')"
	fi
}

# iser_login ADDR: open-iscsi's iscsid and a node for the target at ADDR:3260 on the iser
# transport (no discovery: SendTargets would go over TCP); logs in and prints the LUN's
# block device.
iser_login() {
	local out n d
	modprobe ib_iser || fail "ib_iser"
	mkdir -p /run/lock/iscsi /etc/iscsi/nodes /etc/iscsi/send_targets
	mountpoint -q /etc/iscsi/nodes || mount -t tmpfs tmpfs /etc/iscsi/nodes
	pgrep -x iscsid >/dev/null || iscsid || fail "iscsid"
	out=$(iscsiadm -m node -o new -T "$TIQN" -p "$1:3260" -I iser 2>&1) || fail "iscsiadm new node: $out"
	out=$(iscsiadm -m node -T "$TIQN" -p "$1:3260" -I iser --login 2>&1) ||
		fail "iSER login: $out; $(dmesg | tail -n 20)"
	has 'successful' "$out" || fail "iSER login: $out"
	for n in $(seq 60); do
		for d in /sys/class/iscsi_session/session*/device/target*/*/block/sd*; do
			[ -e "$d" ] && [ -b "/dev/${d##*/}" ] && { echo "/dev/${d##*/}"; return 0; }
		done
		sleep 0.5
	done
	fail "no SCSI disk after the iSER login"
}

iser_logout() {
	local out
	out=$(iscsiadm -m node -T "$TIQN" -p "$1:3260" -I iser --logout 2>&1) || fail "iSER logout: $out"
	out=$(iscsiadm -m node -o delete -T "$TIQN" -p "$1:3260" -I iser 2>&1) || fail "iSER node delete: $out"
}

iser_down() {
	iscsiadm -m node -T "$TIQN" --logout >/dev/null 2>&1 || true
	iscsiadm -m node -o delete >/dev/null 2>&1 || true
	pkill -x iscsid || true
	umount /etc/iscsi/nodes 2>/dev/null || true
	if has '^ib_iser ' "$(lsmod)"; then
		for _ in 1 2 3 4 5; do modprobe -r ib_iser 2>/dev/null && break; sleep 1; done
		! has '^ib_iser ' "$(lsmod)" || fail "ib_iser does not unload"
	fi
}

# iser_pairing DRV_INITIATOR DRV_TARGET: the LIO target's iSER portal on DRV_TARGET's
# device (vb), open-iscsi's iser transport on DRV_INITIATOR's (va): login, fio with verify,
# logout.
iser_pairing() {
	local i=$1 t=$2 dev
	one_ns_devices "$i" "$t"
	iser_target_up 192.168.77.2
	dev=$(iser_login 192.168.77.2)
	log "$i initiator -> $t target: iSER login, LUN $dev"
	fio_verify "$dev" 0
	iser_logout 192.168.77.2
	iser_down
	iser_target_down
	one_ns_devices_down
}
