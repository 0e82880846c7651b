# A peer that keeps its TCP end alive but never answers an RDMA Read (issue 13: "an idle
# connection with work outstanding is detected"): TCP_USER_TIMEOUT and keepalives cannot
# see it, as it acks everything. hostile_peer.py plays rping's client towards an rping
# server on siw_rs: it advertises its buffer, takes the server's Read Request and stays
# silent, reading all that comes. siw_rs's Read watchdog (peer_timeout_ms) ends a
# connection whose Read Request was outstanding at two looks peer_timeout_ms apart with no
# byte received in between: with 3000 the server sees the connection end (its Read
# flushed, the QP fatal) 3 to 6 s after the Read Request, and the kernel log says why. A
# peer that answers late, but within two looks, keeps its connection.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill -x rping; two_hosts_down; }

unload_siw_rs
SIW_RS_PARAMS="peer_timeout_ms=3000" two_hosts siw_rs siw_rs
on_b timeout 60 rping -s -a 192.168.77.2 -C 1 -S 64 -v >/tmp/rping-s.out 2>&1 &
srv=$!
listening_b 7174
out=$(on_a timeout 60 python3 "$PEER" rping-read --addr 192.168.77.2 --size 64 --silent 30 2>&1) ||
	fail "peer: $out"
log "$(tr '\n' ' ' <<<"$out")"
has '^read request: size=64 ' "$out" || fail "rping's server sent no Read Request: $out"
secs=$(sed -n 's/^closed after \([0-9]*\)\..*/\1/p' <<<"$out")
[ -n "$secs" ] || fail "the silent peer's connection was not ended in 30 s: $out"
[ "$secs" -ge 3 ] && [ "$secs" -le 8 ] ||
	fail "ended $secs s after the Read Request, expected 3 to 6 and some slack (peer_timeout_ms=3000)"
has 'RDMA Read unanswered for 3000 ms' "$(dmesg)" || fail "no word of the watchdog in the kernel log: $(dmesg | tail -n 5)"
wait $srv || true
# rping's server saw its Read end without data (it says so, and never pings).
has 'wait for RDMA_READ_COMPLETE state' "$(cat /tmp/rping-s.out)" ||
	fail "rping's server did not see its Read fail: $(cat /tmp/rping-s.out)"
has 'ping data' "$(cat /tmp/rping-s.out)" && fail "rping's server pinged: $(cat /tmp/rping-s.out)"
log "rping server: $(tr '\n' ' ' </tmp/rping-s.out)"
two_hosts_down

# A slow peer is not a silent one: answered 4 s after the Read Request (after one look of
# the watchdog saw it outstanding, before the next), the Read completes and the
# connection stays; rping's server sends its next message, and nothing ends the
# connection until the peer leaves 10 s later.
unload_siw_rs
SIW_RS_PARAMS="peer_timeout_ms=3000" two_hosts siw_rs siw_rs
on_b timeout 60 rping -s -a 192.168.77.2 -C 1 -S 64 -v >/tmp/rping-s.out 2>&1 &
srv=$!
listening_b 7174
out=$(on_a timeout 60 python3 "$PEER" rping-read --addr 192.168.77.2 --size 64 --answer 64 --delay 4 2>&1) ||
	fail "peer: $out"
log "$(tr '\n' ' ' <<<"$out")"
has '^fpdu op=send' "$out" || fail "rping's server went no further after the late answer: $out"
has '^closed \(timed out\)' "$out" || fail "the connection of a slow peer was ended: $out"
pkill -x rping || true
wait $srv || true
true
