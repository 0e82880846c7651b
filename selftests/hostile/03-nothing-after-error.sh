# Once an FPDU is in error, nothing after it is taken, even when the error ends one piece
# of the socket's data exactly and the next FPDU is already queued (issue 13, defect 7):
# a peer sends a Read Request naming an STag that does not exist, in a segment of its own,
# then rping's buffer advert (a Send) in the next. The server must Terminate with an
# RDMAP invalid STag error, and rping's server must never receive the advert.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs
for try in 1 2 3; do
	on_b timeout 30 rping -s -a 192.168.77.2 -C 1 -S 64 -d >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a timeout 30 python3 "$PEER" rping-read --addr 192.168.77.2 --bad-read-first 2>&1) ||
		fail "peer: $out"
	wait $srv || true
	# RDMAP layer (0), remote protection error (1), invalid STag (0x00)
	has '^fpdu op=terminate layer=0 etype=1 ecode=0x00' "$out" || fail "no invalid-STag Terminate: $out"
	has 'Received rkey' "$(cat /tmp/rping-s.out)" &&
		fail "try $try: the Send after the error completed: $(cat /tmp/rping-s.out)"
	log "try $try: $(grep -E '^fpdu' <<<"$out" | tr '\n' ' ')"
done
rping_sizes 2 64
