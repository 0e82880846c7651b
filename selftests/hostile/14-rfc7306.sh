# RFC 7306 from a peer that breaks its rules (issue 12). selftests/lib/hostile_peer.py rfc7306
# connects to an rping server on siw_rs as rping's client would, with or without siw_rs's
# RFC 7306 offer in its MPA request, and sends one bad message instead of rping's advert.
# Each must be answered with the right Terminate and a closed connection, the advert never
# taken, and rping working afterwards:
#   Immediate Data or an Atomic Request without the offer (the connection did not agree):
#     RDMAP Remote Operation "Unexpected OpCode" (0/2/0x06), as the C siw answers them;
#   with the offer (the reply accepts it):
#     an Atomic Request longer than its header: DDP untagged "Message too long" (1/2/0x05);
#     an Atomic Request whose ULPDU ends inside its header: MPA "FPDU start" (2/0/0x03);
#     a Fetch-and-Add on an STag that does not exist: RDMAP "Invalid STag" (0/1/0x00);
#     a Fetch-and-Add on a live MR of the QP's PD registered without remote atomic rights
#     (fuzz_target -n): RDMAP "Access rights violation" (0/1/0x02);
#     an Atomic Response that answers nothing: RDMAP "Catastrophic, localized to RDMAP
#     Stream" (0/2/0x07).
# (A misaligned atomic, the other rule of RFC 7306 section 8.2, is data/20-rfc7306's.)
# Then a good one: a Write with Immediate Data to rping's server, a process, which sees a
# receive of 0 bytes (what was placed in its buffer; libsiw reports nothing more).
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill rping; pkill -x fuzz_target; two_hosts_down; }
two_hosts siw_rs siw_rs

# bad CASE OFFER TERMINATE: one bad connection; TERMINATE is "layer etype ecode".
bad() {
	local case=$1 offer=$2 layer etype ecode
	read -r layer etype ecode <<<"$3"
	on_b timeout 30 rping -s -a 192.168.77.2 -C 1 -S 64 -d >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a timeout 30 python3 "$PEER" rfc7306 --addr 192.168.77.2 --case "$case" \
		${offer:+--offer} 2>&1) || fail "$case: peer: $out"
	wait $srv || true
	has "^reply ext_accept=${offer:-0} ext_offer=0 reject=0" "$out" ||
		fail "$case (offer=${offer:-0}): reply: $out"
	has "^fpdu op=terminate layer=$layer etype=$etype ecode=$ecode" "$out" ||
		fail "$case (offer=${offer:-0}): no Terminate $3: $out"
	has '^closed' "$out" || fail "$case: the connection stayed open: $out"
	has 'Received rkey' "$(cat /tmp/rping-s.out)" &&
		fail "$case: rping's server took something: $(cat /tmp/rping-s.out)"
	log "$case (offer=${offer:-0}): $(grep -E '^fpdu' <<<"$out" | tr '\n' ' ')"
}

bad imm "" "0 2 0x06"
bad atomic-stag "" "0 2 0x06"
bad atomic-long 1 "1 2 0x05"
bad atomic-short 1 "2 0 0x03"
bad atomic-stag 1 "0 1 0x00"
bad atomic-resp 1 "0 2 0x07"
[ "$(counter "$DEV_B" terminates_sent)" -ge 6 ] ||
	fail "host B counted $(counter "$DEV_B" terminates_sent) Terminates, expected 6"

# An atomic on an MR without IBV_ACCESS_REMOTE_ATOMIC.
on_b "$TESTBIN"/fuzz_target -a 192.168.77.2 -n >/tmp/fuzz-target.out 2>&1 &
tgt=$!
listening_b 7180
out=$(on_a timeout 30 python3 "$PEER" atomic-rights --addr 192.168.77.2 2>&1) ||
	fail "atomic-rights: peer: $out"
# RDMAP layer (0), remote protection (1), access rights violation (0x02)
has '^fpdu op=terminate layer=0 etype=1 ecode=0x02' "$out" ||
	fail "atomic-rights: no access-rights Terminate: $out"
has '^fpdu op=11$' "$out" && fail "atomic-rights: an Atomic Response came: $out"
fuzz_target_end $tgt 2
log "atomic-rights (offer=1): $(grep -E '^fpdu' <<<"$out" | tr '\n' ' ')"

# Not bad: with the offer accepted, a Write with Immediate Data to a process's QP. It takes
# the receive rping's server posted for the advert, and libsiw can show it only as a receive
# of what was placed in the buffer, nothing: rping's server must see 0 bytes (it then gives
# up, as on any bogus advert) and siw_rs must not Terminate.
on_b timeout 30 rping -s -a 192.168.77.2 -C 1 -S 64 -d >/tmp/rping-s.out 2>&1 &
srv=$!
listening_b 7174
out=$(on_a timeout 30 python3 "$PEER" rfc7306 --addr 192.168.77.2 --case write-imm --offer 2>&1) ||
	fail "write-imm: peer: $out"
wait $srv || true
has '^reply ext_accept=1 ' "$out" || fail "write-imm: reply: $out"
has 'op=terminate' "$out" && fail "write-imm: Terminated: $out"
has 'Received bogus data, size 0' "$(cat /tmp/rping-s.out)" ||
	fail "write-imm: rping's server did not see a 0-byte receive: $(cat /tmp/rping-s.out)"
log "write-imm (offer=1): rping's server saw a 0-byte receive, no Terminate"
rping_sizes 2 64
