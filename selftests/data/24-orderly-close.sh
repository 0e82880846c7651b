# Orderly teardown: connections end with FINs, not resets (a socket released with data
# unread resets its connection, __tcp_close, and drops what it still had to send). Bulk
# rping (verified) and perftest's Send, Write and Read bandwidth, between two siw_rs hosts,
# on one siw_rs device, and between siw_rs and the C siw: no connection of siw_rs's is
# reset at its close (the namespace's TcpExt counters; hostile/05 checks a Terminate's
# close, with data unread, from the peer's side).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x rping; pkill -x ib_send_bw; pkill -x ib_write_bw; pkill -x ib_read_bw; two_hosts_down; }
# aborts NS [COUNTER]: the namespace's TCP counter (TcpExt or Tcp), TCPAbortOnClose by default.
aborts() {
	ip netns exec "$1" awk -v want="${2:-TCPAbortOnClose}" '/^(TcpExt|Tcp):/ { if (!h[$1]) { split($0, n); h[$1] = 1 } else {
		split($0, v); for (i in n) if (n[i] == want) print v[i] } }' /proc/net/netstat /proc/net/snmp
}
# workload NAME: the tools between the current two hosts.
workload() {
	local t
	rping_sizes 20 65000
	for t in ib_send_bw ib_write_bw ib_read_bw; do
		perftest_once "$t" -n 500 -s 65536
		[ $PERF_OK = 1 ] || fail "$1: $t: client: $PERF_OUT; server: $(cat /tmp/perf-s.out)"
	done
}
# check NAME [a-only]: no connection of siw_rs's (both hosts', or host A's only) was reset
# at its close, for data unread, for data after the close, or by a zero linger; the RSTs
# sent at all (also to a SYN for a port nobody listens on) are logged.
check() {
	local h c n
	for h in hostA hostB; do
		[ "$h" = hostB ] && [ "${2:-}" = a-only ] && continue
		for c in TCPAbortOnClose TCPAbortOnData TCPAbortOnLinger; do
			n=$(aborts $h $c)
			[ "$n" = 0 ] || fail "$1: $h: $c is $n"
		done
	done
	log "$1: no connection reset at close (RSTs sent: host A $(aborts hostA OutRsts), host B $(aborts hostB OutRsts))"
}
two_hosts siw_rs siw_rs
workload "siw_rs - siw_rs"
check "siw_rs - siw_rs"
# One device: both ends in host A.
one_device() {
	local t srv
	on_a timeout 120 rping -s -a 192.168.77.1 -p 7175 -C 20 -S 65000 -V >/dev/null 2>&1 &
	srv=$!
	listening_in hostA 7175
	on_a timeout 120 rping -c -a 192.168.77.1 -p 7175 -C 20 -S 65000 -V >/tmp/rp1.out 2>&1 ||
		fail "one device: rping client: $(tail -n 3 /tmp/rp1.out)"
	wait $srv || fail "one device: rping server failed"
	for t in ib_send_bw ib_write_bw ib_read_bw; do
		on_a timeout 120 "$t" -R -d "$DEV_A" -n 500 -s 65536 >/tmp/perf-s.out 2>&1 &
		srv=$!
		listening_in hostA 18515
		on_a timeout 120 "$t" -R -d "$DEV_A" -n 500 -s 65536 192.168.77.1 >/tmp/perf-c.out 2>&1 ||
			fail "one device: $t client: $(tail -n 3 /tmp/perf-c.out)"
		wait $srv || fail "one device: $t server: $(tail -n 3 /tmp/perf-s.out)"
	done
}
one_device
check "siw_rs, one device"
two_hosts_down
two_hosts siw_rs siw
workload "siw_rs - C siw"
check "siw_rs - C siw" a-only
