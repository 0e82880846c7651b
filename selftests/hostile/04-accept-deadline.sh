# A connection request the ULP never answers must not hold a socket and an endpoint
# forever (issue 13, defect 6): the core may even drop a request silently when its
# listener goes away, so siw_rs keeps every request itself and ends it after 10 s.
#
# rping's server is stopped (SIGSTOP) once it listens; a raw initiator sends an MPA
# request. siw_rs reports it, nobody accepts: the initiator must see the connection closed
# after the deadline (about 10 s), not wait until its own 40 s limit. rping, continued,
# then finds the request gone; a normal rping works afterwards.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -CONT -x rping; pkill -f hostile_peer.py; pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs
on_b timeout 90 rping -s -a 192.168.77.2 -C 1 -S 64 >/tmp/rping-s.out 2>&1 &
srv=$!
listening_b 7174
pkill -STOP -x rping
start=$(date +%s)
out=$(on_a python3 "$PEER" mpa-request --addr 192.168.77.2 --pd-len 0 --timeout 40 2>&1) ||
	fail "peer: $out"
took=$(( $(date +%s) - start ))
pkill -CONT -x rping
has '^closed without a reply' "$out" || fail "the request was answered: $out"
has 'timed out' "$out" && fail "nothing ended the unanswered request in 40 s: $out"
[ "$took" -ge 8 ] && [ "$took" -le 30 ] || fail "the request ended after $took s, not about 10: $out"
log "unanswered request closed after $took s"
wait $srv && fail "rping accepted a request siw_rs had ended: $(cat /tmp/rping-s.out)"
log "rping: $(tail -n 2 /tmp/rping-s.out | tr '\n' ' ')"
rping_sizes 2 64
