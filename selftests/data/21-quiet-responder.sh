# siw_rs as initiator towards a responder that missed its first FPDUs. The C siw as
# responder hands its socket to the QP only after it has sent the MPA reply; an FPDU that
# arrives in between stays unread until more data comes (siw_rs/proto/src/mpa.rs,
# ResponderWake). Seen in CI on 2026-11-28: rping, siw_rs client, C siw server, both
# waiting until the server's timeout killed it, the client's advert unread in the server's
# socket. hostile_peer.py quiet-responder plays such a responder: it answers the MPA
# request, then sends nothing and prints every FPDU it gets. rping's client, whose advert
# waits for an answer, must follow it with zero-length RDMA Writes (STag 1, the RFC 6581
# Write RTR message): the first 20 ms after the reply (nominally), at most four, the last
# 1.7 s after the reply (nominally), and nothing else.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill -x rping; two_hosts_down; }

two_hosts siw_rs siw_rs
on_b timeout 30 python3 "$PEER" quiet-responder --addr 192.168.77.2 --hold 6 >/tmp/quiet.out 2>&1 &
peer=$!
listening_b 7174
on_a timeout 30 rping -c -a 192.168.77.2 -C 1 -S 64 -V -v >/tmp/rping-c.out 2>&1 &
cli=$!
wait $peer || fail "peer: $(cat /tmp/quiet.out)"
wait $cli || true
out=$(cat /tmp/quiet.out)
log "$(tr '\n' ' ' <<<"$out")"
fpdus=$(grep '^fpdu ' <<<"$out" || true)
has '^fpdu op=send len=16 at=\+0\.000$' "$(head -n 1 <<<"$fpdus")" ||
	fail "the first FPDU is not rping's advert: $out"
wakes=$(tail -n +2 <<<"$fpdus")
[ -n "$wakes" ] || fail "no zero-length Write followed the advert in 6 s: $out"
others=$(grep -v '^fpdu op=write len=0 stag=0x1 at=' <<<"$wakes" || true)
[ -z "$others" ] || fail "FPDUs other than zero-length Writes to STag 1 after the advert: $others"
n=$(wc -l <<<"$wakes")
[ "$n" -le 4 ] || fail "$n zero-length Writes, at most 4 expected: $out"
first=$(head -n 1 <<<"$wakes" | sed 's/.*at=+//')
last=$(tail -n 1 <<<"$wakes" | sed 's/.*at=+//')
# Under TCG, timers and processes run late: twice the nominal times and more.
awk -v f="$first" -v l="$last" 'BEGIN { exit !(f <= 1.0 && l <= 4.0) }' ||
	fail "the Writes came at +$first s to +$last s after the advert (nominally 0.02 to 1.7 s)"
log "$n zero-length Writes after the advert, at +$first s to +$last s"
has 'ping data' "$(cat /tmp/rping-c.out)" && fail "rping pinged a peer that never answered"
true
two_hosts_down

# The defect itself, in the C siw, made certain, and what the Writes do to it. The C siw
# serves rping on host B; rping is stopped (SIGSTOP) before the peer connects, so the C siw
# reads the MPA request and waits for the accept. hostile_peer.py strand sends rping's
# advert then (before the reply, which no initiator may do, but it lands as an early
# FPDU from a fast initiator would: ignored by the C siw's connection manager), and
# continues rping, which accepts. After the reply the advert stays unread ("stranded": no
# FPDU in 3 s). With --wake a zero-length Write follows, and rping's server, given the
# advert at last, reads the advertised buffer (a Read Request comes).
two_hosts siw_rs siw
for wake in "" --wake; do
	on_b timeout 60 rping -s -a 192.168.77.2 -C 1 -S 64 -V -v >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	pid=$(pgrep -x rping)
	kill -STOP "$pid"
	out=$(on_a timeout 30 python3 "$PEER" strand --addr 192.168.77.2 --cont "$pid" $wake 2>&1) ||
		fail "strand $wake: $out"
	log "strand $wake: $(tr '\n' ' ' <<<"$out")"
	has '^stranded$' "$out" ||
		fail "the C siw took an FPDU that came between its accept and its reply: $out (README: update the C siw's defect)"
	if [ -n "$wake" ]; then
		has '^fpdu op=read-request at=' "$out" ||
			fail "after the zero-length Write, rping's server did not read the advertised buffer: $out"
	fi
	pkill -x rping || true
	wait $srv || true
done
true
