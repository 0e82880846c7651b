# Kernel verbs: a kernel consumer of ours (selftests/data/kverbs, built on the host by
# selftests/run) on each host, over rdma_cm in the host's namespace: kvt_server.ko listens on
# host B; kvt_client.ko's init on host A connects, posts one list of RDMA Write (256 KiB),
# RDMA Read back, a two-SGE Send and an inline solicited Send, and checks the Read data byte
# for byte; the server checks the two-SGE Send and its written buffer byte for byte and
# replies with its status (posting from its softirq completion handler). insmod of the
# client fails unless both sides verified. Both tear down with ib_drain_qp, which needs
# flush completions for work posted in ERROR, and, for a QP on an SRQ, the Last WQE Reached
# event (else it waits 60 s: the teardown must take less than 30). Run siw_rs<->siw_rs
# (with the server's receives posted to its QP, then to an SRQ), and against the C siw
# both ways.
. "$ROOT/selftests/lib/common.sh"
KV=$ROOT/selftests/data/kverbs
cleanup() {
	on_a rmmod kvt_client 2>/dev/null
	on_b rmmod kvt_server 2>/dev/null
	two_hosts_down
}
[ -f "$KV/kvt_client.ko" ] && [ -f "$KV/kvt_server.ko" ] ||
	fail "kvt modules not built (selftests/run builds them)"
for p in "siw_rs siw_rs 0" "siw_rs siw_rs 1" "siw siw_rs 0" "siw_rs siw 0"; do
	set -- $p
	two_hosts "$1" "$2"
	on_b insmod "$KV/kvt_server.ko" addr=192.168.77.2 srq="$3" ||
		fail "$1 -> $2: kvt_server load"
	listening_b 7472
	if ! out=$(on_a insmod "$KV/kvt_client.ko" addr=192.168.77.2 2>&1); then
		fail "$1 -> $2: kvt_client: $out; kernel log: $(dmesg | grep kvt_ | tail -n 20)"
	fi
	for _ in $(seq 20); do
		[ "$(cat /sys/module/kvt_server/parameters/result)" != 0 ] && break
		sleep 0.5
	done
	r=$(cat /sys/module/kvt_server/parameters/result)
	[ "$r" = 1 ] || fail "$1 -> $2: kvt_server result $r: $(dmesg | grep kvt_ | tail -n 20)"
	on_a rmmod kvt_client || fail "$1 -> $2: rmmod kvt_client"
	# The server's teardown drains its QP (ib_drain_qp); on an SRQ that waits for the
	# Last WQE Reached event, up to 60 s if it never comes (as from the C siw).
	start=$(date +%s)
	on_b rmmod kvt_server || fail "$1 -> $2: rmmod kvt_server"
	secs=$(( $(date +%s) - start ))
	[ "$secs" -lt 30 ] || fail "$1 -> $2 (srq=$3): the server's teardown took $secs s"
	two_hosts_down
	log "$1 client -> $2 server (srq=$3): kernel Write, Read, Sends verified on both sides"
done
