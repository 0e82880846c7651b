# STags a peer cannot guess or probe (issue 13, defect 5; RFC 5040 section 8.1.1 item 8).
# Indices were one global counter from 1 with key 0, so a peer could guess the next
# region's STag; now the 24-bit index is random (and a kernel MR's key). A peer naming an
# STag of another PD got "STag not associated" (telling it the STag exists); now it gets
# the same "invalid STag" Terminate as for one that does not exist.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs

# 1. Three rping runs register six regions on host A: their indices must not be a run.
idx=()
for i in 1 2 3; do
	on_b timeout 60 rping -s -a 192.168.77.2 -C 1 -S 64 >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a timeout 60 rping -c -a 192.168.77.2 -C 1 -S 64 -d 2>&1) || fail "rping: $out"
	wait $srv || fail "rping server: $(cat /tmp/rping-s.out)"
	for k in $(sed -nE 's/.*rkey ([0-9a-f]+) len.*/\1/p' <<<"$out"); do
		idx+=($(( 0x$k >> 8 )))
	done
done
[ "${#idx[@]}" -ge 6 ] || fail "expected 6 rkeys from rping -d, got ${#idx[@]}: $out"
sorted=($(printf '%s\n' "${idx[@]}" | sort -n))
span=$(( sorted[${#sorted[@]} - 1] - sorted[0] ))
[ "$span" -gt 4096 ] || fail "STag indices ${idx[*]} lie within $span of each other: guessable"
log "STag indices of six regions: ${idx[*]}"

# 2. A Write naming another PD's STag gets the invalid-STag Terminate.
# 2000 Writes follow it in the same send, unread when siw_rs decides on the Terminate: the
# connection still ends in order (a FIN after the Terminate), not with a reset, which
# could throw the Terminate away.
on_b python3 "$PEER" stag-probe --addr 192.168.77.2 --port 7174 --port2 7175 --burst 2000 >/tmp/peer.out 2>&1 &
peer=$!
listening_b 7174
on_a timeout 40 rping -c -a 192.168.77.2 -p 7174 -C 1 -S 64 >/tmp/rping-1.out 2>&1 &
c1=$!
for n in $(seq 40); do has 'client 1' "$(cat /tmp/peer.out)" && break; sleep 0.5; done
on_a timeout 40 rping -c -a 192.168.77.2 -p 7175 -C 1 -S 64 >/tmp/rping-2.out 2>&1 || true
wait $peer || fail "peer: $(cat /tmp/peer.out)"
wait $c1 || true
out=$(cat /tmp/peer.out)
# DDP layer (1), tagged buffer (1), invalid STag (0x00); "not associated" is 0x02.
has '^fpdu op=terminate layer=1 etype=1 ecode=0x00' "$out" || fail "no invalid-STag Terminate: $out"
has '^closed \(peer closed after 0 of ' "$out" || fail "the connection did not end in order: $out"
log "$(grep -E '^(client|fpdu)' <<<"$out" | tr '\n' ' ')"
rping_sizes 2 64
