# A kernel consumer over DDP over SCTP: selftests/data/kverbs (kvt_server.ko on host B, with
# its receives on an SRQ; kvt_client.ko on host A) between two siw_rs_sctp devices, as
# data/16-kverbs runs it over TCP: one posted list of RDMA Write, Read, a two-SGE Send and
# an inline Send, every byte checked on both sides, ib_drain_qp at teardown (under 30 s).
#
# This suite runs in its own VM, without the C siw: the C siw takes sk_callback_lock with a
# plain read_lock() in process context (siw_qp_llp_data_ready() from release_sock()), which
# makes lockdep's one class for every AF_INET socket's callback lock "softirq-unsafe", and
# SCTP's close takes it under the socket's spinlock: lockdep then reports SCTP's own close
# path once the C siw ran in the same boot.
. "$ROOT/selftests/lib/common.sh"
KV=$ROOT/selftests/data/kverbs
cleanup() {
	on_a rmmod kvt_client 2>/dev/null
	on_b rmmod kvt_server 2>/dev/null
	two_hosts_down
}
[ -f "$KV/kvt_client.ko" ] && [ -f "$KV/kvt_server.ko" ] ||
	fail "kvt modules not built (selftests/run builds them)"
two_hosts siw_rs_sctp siw_rs_sctp
on_b insmod "$KV/kvt_server.ko" addr=192.168.77.2 srq=1 || fail "kvt_server load"
listening_b 7472
if ! out=$(on_a insmod "$KV/kvt_client.ko" addr=192.168.77.2 2>&1); then
	fail "kvt_client: $out; kernel log: $(dmesg | grep kvt_ | tail -n 20)"
fi
for _ in $(seq 20); do
	[ "$(cat /sys/module/kvt_server/parameters/result)" != 0 ] && break
	sleep 0.5
done
r=$(cat /sys/module/kvt_server/parameters/result)
[ "$r" = 1 ] || fail "kvt_server result $r: $(dmesg | grep kvt_ | tail -n 20)"
on_a rmmod kvt_client || fail "rmmod kvt_client"
start=$(date +%s)
on_b rmmod kvt_server || fail "rmmod kvt_server"
secs=$(( $(date +%s) - start ))
[ "$secs" -lt 30 ] || fail "the server's teardown took $secs s"
log "siw_rs_sctp: kernel Write, Read, Sends verified on both sides (SRQ), teardown in $secs s"
