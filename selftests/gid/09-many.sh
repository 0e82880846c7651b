# 500 connections made by modify_qp up at once (selftests/gid/gid_many.c, one device, its own
# address, PSNs of their own, one Send each way per pair checked): none of them takes one of
# sunrpc's reserved ports (665-1023) but the listener's own, gid_connect_port (791), and
# meanwhile every other one of those ports can be bound on the address, as xprtsock binds
# them (without SO_REUSEADDR).
. "$ROOT/selftests/lib/common.sh"
cleanup() { exec 3>&- 2>/dev/null; pkill -x gid_many; rm -f /tmp/gm.in; two_hosts_down; }
two_hosts siw_rs siw_rs
g=$(wait_gid_index "$DEV_A" 192.168.77.1)
rm -f /tmp/gm.in
mkfifo /tmp/gm.in
on_a "$TESTBIN"/gid_many -d "$DEV_A" -g "$g" -n 500 -t 300000 </tmp/gm.in >/tmp/gm.out 2>&1 &
pid=$!
exec 3>/tmp/gm.in
for n in $(seq 1600); do
	has '^(connected|FAIL)' "$(cat /tmp/gm.out)" && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.2
done
has '^connected 500 pairs' "$(cat /tmp/gm.out)" || fail "gid_many: $(cat /tmp/gm.out)"
log "$(cat /tmp/gm.out)"
up=$(on_a ss -Htn state established '( dport = :791 )' | wc -l)
[ "$up" -ge 500 ] || fail "only $up connections to port 791 are up"
low=$(on_a ss -Htan '( sport >= :665 and sport <= :1023 and sport != :791 )' | head -n 5)
[ -z "$low" ] || fail "sockets on sunrpc's reserved ports: $low"
out=$(on_a python3 -c '
import socket
ok = 0
for p in [p for p in range(665, 1024) if p != 791]:
    s = socket.socket()
    try:
        s.bind(("192.168.77.1", p))
        ok += 1
    except OSError as e:
        print(f"port {p}: {e}")
    s.close()
print(f"bound {ok} of 358")
' 2>&1)
has '^bound 358 of 358' "$out" || fail "reserved ports not free with $up connections up: $out"
log "$up connections up from ephemeral ports; all 358 reserved ports but 791 bound meanwhile"
echo >&3
exec 3>&-
wait "$pid" || fail "gid_many exited with $?: $(cat /tmp/gm.out)"
