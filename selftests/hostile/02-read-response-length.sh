# A peer answers an RDMA Read with a last Read Response that is short or empty: the Read
# must fail with a Terminate (DDP tagged base/bounds, as the C siw), never complete as
# successful over stale data (issue 13, defect 8). A full answer is the control: then
# rping's server goes on and sends its next message.
#
# The peer (selftests/lib/hostile_peer.py rping-read) plays rping's client towards an
# rping server on siw_rs: it advertises a 64-byte buffer, the server Reads it.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs
for answer in 64 32 0; do
	on_b timeout 30 rping -s -a 192.168.77.2 -C 1 -S 64 -d >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a timeout 30 python3 "$PEER" rping-read --addr 192.168.77.2 --size 64 --answer "$answer" 2>&1) ||
		fail "peer ($answer bytes): $out"
	wait $srv || true
	has '^read request: size=64 ' "$out" || fail "no read request: $out"
	if [ "$answer" = 64 ]; then
		has '^fpdu op=send' "$out" || fail "full response: the server did not go on: $out; server: $(cat /tmp/rping-s.out)"
		has '^fpdu op=terminate' "$out" && fail "full response was terminated: $out"
	else
		# DDP layer (1), tagged buffer error (1), base or bounds violation (0x01)
		has '^fpdu op=terminate layer=1 etype=1 ecode=0x01' "$out" ||
			fail "$answer of 64 bytes: no DDP base/bounds Terminate: $out"
		has '^fpdu op=send' "$out" && fail "$answer of 64 bytes: the Read completed: $out"
	fi
	log "read response of $answer of 64 bytes: $(grep -E '^fpdu' <<<"$out" | tr '\n' ' ')"
done
rping_sizes 2 64
