# Kernel messages: debug messages are switched while the module runs (the `debug` module
# parameter, writable in sysfs, on by default on this kernel with Rust debug assertions);
# each message names its device; a hostile peer's flood of 1,500 TCP connections, each
# ended before MPA (each a debug message), leaves at most the rate limit's 200 lines per 5 s
# in the log, and the kernel then says how many it held back.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x rping; two_hosts_down; }
p=/sys/module/siw_rs/parameters/debug
two_hosts siw_rs siw_rs
[ "$(stat -c %a $p)" = 644 ] || fail "$p: mode $(stat -c %a $p), not 644"
[ "$(cat $p)" = Y ] || fail "debug is $(cat $p) on the test kernel, not Y"

# mark NAME: a line in the kernel log; since NAME: siw_rs's lines after it.
mark() { echo "siw_rs-logs-test $1" >/dev/kmsg; }
since() { dmesg | sed -n "/siw_rs-logs-test $1\$/,\$p" | grep 'siw_rs: ' || true; }

echo 0 >$p
mark off
rping_sizes 2 64
off=$(since off)
[ -z "$off" ] || fail "debug=0, yet siw_rs logged: $(head -n 5 <<<"$off")"

echo 1 >$p
mark on
rping_sizes 2 64
on=$(since on)
has "siw_rs: ($DEV_A|$DEV_B): connection ends in Established" "$on" ||
	fail "debug=1: no connection's end logged with its device: $(head -n 5 <<<"$on")"
! grep -v -E "siw_rs: ($DEV_A|$DEV_B): " <<<"$on" | grep -q . ||
	fail "a message without its device: $(grep -v -E "siw_rs: ($DEV_A|$DEV_B): " <<<"$on" | head -n 3)"
log "debug=0: nothing; debug=1: $(wc -l <<<"$on") lines, each naming its device"

# The flood: connections to an rdma_cm listener, each closed before its MPA request.
on_b timeout 300 rping -s -a 192.168.77.2 -p 7174 -C 1 >/dev/null 2>&1 &
listening_b 7174
mark flood
t0=$SECONDS
on_a python3 - <<-'EOF'
	import socket
	for i in range(1500):
	    s = socket.create_connection(("192.168.77.2", 7174), timeout=10)
	    s.close()
EOF
took=$((SECONDS - t0))
pkill -x rping || true
wait
# The window open when the flood ends is closed by one message after it.
nap 6
rping_sizes 1 64
flood=$(since flood | grep -c 'connection ends in' || true)
windows=$((took / 5 + 3))
log "1500 connections in $took s: $flood lines of their ends logged (at most $((200 * windows)))"
[ "$flood" -le $((200 * windows)) ] || fail "$flood lines for $windows windows of 5 s: not rate-limited"
[ "$flood" -ge 50 ] || fail "only $flood lines: the connections' ends were not logged"
has 'siw_rs_log_debug: [0-9]+ callbacks suppressed' "$(dmesg | sed -n '/siw_rs-logs-test flood$/,$p')" ||
	fail "the kernel never said it held messages back"
