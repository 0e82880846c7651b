# A misbehaving peer of DDP over SCTP (RFC 5043; selftests/lib/sctp_peer.py speaks the
# adaptation layer itself over a plain SCTP socket) against an rping server on a
# siw_rs_sctp device. Each bad start ends the association, never the kernel, and rping never
# sees a connection request:
# - no DDP Adaptation Indication in the INIT (section 11.1): aborted, nothing sent;
# - a DDP segment before any Initiate (section 6.6), an Initiate with 600 octets of private
#   data (section 5.2.3: 512 at most), a DDP-SSN no message in flight can have (section 10),
#   a message longer than any segment siw_rs takes (section 9), and 5 MiB of messages that
#   are all early (their DDP-SSN 0 never comes; siw_rs holds 4 MiB at most): the session's
#   Terminate, then a graceful close.
# A bad segment after the Accept (a Send with MSN 5) gets RDMAP's Terminate (DDP, untagged
# buffer, MSN out of range: layer 1, type 2, code 0x03) in a DDP segment, then the session's
# Terminate. The active side: a peer that answers rping's Initiate with a Session Reject
# fails rping's connect (REJECTED). A good rping works afterwards.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/sctp_peer.py
cleanup() { pkill -f sctp_peer.py; pkill rping; two_hosts_down; }
two_hosts siw_rs_sctp siw_rs_sctp
peer_case() { # CASE EXPECTED-REGEX...
	local c=$1 out srv re
	shift
	on_b timeout 60 rping -s -a 192.168.77.2 -C 1 -S 64 -d >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a timeout 60 python3 "$PEER" client --addr 192.168.77.2 --case "$c" 2>&1) ||
		fail "$c: peer: $out"
	for re in "$@"; do
		has "$re" "$out" || fail "$c: expected /$re/: $out"
	done
	has 'open after' "$out" && fail "$c: the association stayed open: $out"
	# The server itself, not the subshell that started it: left running until its timeout, it
	# holds its device's deletion (or the next case's port) for up to 60 s.
	pkill -x rping || true
	wait $srv 2>/dev/null || true
	if [ "$c" != bad-segment ]; then
		has 'cma event RDMA_CM_EVENT_CONNECT_REQUEST' "$(cat /tmp/rping-s.out)" &&
			fail "$c: rping saw a connection request: $(cat /tmp/rping-s.out)"
	fi
	log "$c: $(tr '\n' ' ' <<<"$out")"
}
peer_case no-adaptation '^aborted'
for c in early-segment big-pd ssn-jump too-long; do
	peer_case $c '^control ssn=0 function=4$' '^(closed|aborted)'
done
# The flood must reach the bound (4 MiB) before the 5 s deadline for an Initiate ends the
# association without a word: at an MTU of 1500 its 5 MiB are 3,600 DATA chunks, which once
# took longer than that under TCG. Jumbo frames make them 640.
ip -n hostA link set va mtu 9000
ip -n hostB link set vb mtu 9000
peer_case flood-early '^control ssn=0 function=4$' '^(closed|aborted)'
ip -n hostA link set va mtu 1500
ip -n hostB link set vb mtu 1500
held=$(counter "$DEV_B" sctp_held)
[ "$held" -ge 250 ] || fail "flood-early: $held messages held, expected the bound (about 256)"
peer_case bad-segment '^accept ssn=0' '^segment ssn=1 op=7 layer=1 etype=2 ecode=0x03$' \
	'^control ssn=2 function=4$' '^(closed|aborted)'

# The active side refused.
on_b timeout 60 python3 "$PEER" reject-server --addr 192.168.77.2 >/tmp/peer-s.out 2>&1 &
srv=$!
listening_b 7174
out=$(on_a timeout 60 rping -c -a 192.168.77.2 -C 1 -S 64 -v 2>&1) && fail "rping connected to a peer that rejected it: $out"
wait $srv || fail "reject-server: $(cat /tmp/peer-s.out)"
has '^initiate ppid=17 function=1' "$(cat /tmp/peer-s.out)" || fail "reject-server: $(cat /tmp/peer-s.out)"
has 'REJECTED' "$out" || fail "rping against a Reject: $out"
[ "$(counter "$DEV_A" connections_refused)" -ge 1 ] || fail "the Reject was not counted"
log "Reject: $(tr '\n' ' ' </tmp/peer-s.out) / rping: $(grep -m1 REJECTED <<<"$out")"
rping_sizes 2 64
