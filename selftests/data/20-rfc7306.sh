# RFC 7306 (atomics, RDMA Write with Immediate Data) from a kernel consumer of ours
# (selftests/data/kverbs/k7306.c, built on the host by selftests/run): k7306_server.ko on
# host B, k7306_client.ko on host A, over rdma_cm; host B's veth is captured and the FPDUs
# are read back by selftests/lib/fpdu_opcodes.py, independently of siw_rs's code.
#
# siw_rs <-> siw_rs: the request offers RFC 7306 (MPA bit 0x0200) and the reply accepts it
# (0x0100). The client's six atomics (Fetch-and-Add and Compare-and-Swap, plain and masked)
# return the original values and leave the words as computed (read back by the client,
# checked again by the server); three Writes with Immediate Data (two SGEs, inline,
# zero-length) each complete one receive at the server as RECV_RDMA_WITH_IMM with the
# immediate data and the Write's length, their bytes already placed; a Send with Immediate
# Data is refused (RFC 7306 has none); an atomic on a misaligned word is refused by the
# server with the Terminate RFC 7306 section 8.2 names (0/2/0x07). The capture shows the
# Atomic Requests, Responses and Immediate Data messages as RFC 7306 lays them out.
#
# Against the C siw, both ways, and siw_rs with rfc7306=0: no agreement, so siw_rs's
# consumer's atomic and Write with Immediate Data fail to post (EOPNOTSUPP) and leave its
# queue as it was, a plain Write and a Send still work, and no FPDU of opcode 8 or above is
# on the wire in either direction (the C siw echoes the offer bit in its reply; that is no
# accept). The C siw's client tries no refused post: one would jam its send queue (below).
. "$ROOT/selftests/lib/common.sh"
KV=$ROOT/selftests/data/kverbs
cleanup() {
	on_a rmmod k7306_client 2>/dev/null
	on_b rmmod k7306_server 2>/dev/null
	pkill tcpdump
	two_hosts_down
}
[ -f "$KV/k7306_client.ko" ] && [ -f "$KV/k7306_server.ko" ] ||
	fail "k7306 modules not built (selftests/run builds them)"

# k7306 DRV_A DRV_B EXT POST_ERR [CLIENT_PARAM...]: one run, client on A, server on B, both modules unloaded
# after it; leaves the MPA frames in $frames and the FPDU walk in $fpdus.
k7306() {
	two_hosts "$1" "$2"
	capture_start
	on_b insmod "$KV/k7306_server.ko" addr=192.168.77.2 ext="$3" ||
		fail "$1 -> $2: k7306_server load"
	listening_b 7473
	if ! out=$(on_a insmod "$KV/k7306_client.ko" addr=192.168.77.2 ext="$3" post_err="$4" \
		"${@:5}" 2>&1); then
		fail "$1 -> $2: k7306_client: $out; kernel log: $(dmesg | grep 'k7306\|siw' | tail -n 20)"
	fi
	for _ in $(seq 20); do
		[ "$(cat /sys/module/k7306_server/parameters/result)" != 0 ] && break
		sleep 0.5
	done
	r=$(cat /sys/module/k7306_server/parameters/result)
	[ "$r" = 1 ] || fail "$1 -> $2: k7306_server result $r: $(dmesg | grep k7306_ | tail -n 20)"
	frames=$(capture_frames)
	fpdus=$(python3 "$ROOT/selftests/lib/fpdu_opcodes.py" /tmp/mpa.pcap)
	dmesg | grep 'k7306_' | tail -n 6 | sed 's/^[^]]*] /# /'
	# The server's listener holds its device: unload before the devices go.
	on_a rmmod k7306_client || fail "$1 -> $2: rmmod k7306_client"
	on_b rmmod k7306_server || fail "$1 -> $2: rmmod k7306_server"
}

# count REGEX TEXT: the lines of TEXT that match.
count() { grep -Ec -- "$1" <<<"$2" || true; }

# Both siw_rs: RFC 7306 agreed and used.
k7306 siw_rs siw_rs 1 0
has '^req .*ext_offer=1 ext_accept=0' "$frames" || fail "request without the offer: $frames"
has '^rep .*ext_offer=0 ext_accept=1' "$frames" || fail "reply without the accept: $frames"
echo "$fpdus" | sed 's/^/# /'
[ "$(count '^atomic_req qn=1 ' "$fpdus")" = 7 ] || fail "not 7 Atomic Requests on QN 1: $fpdus"
[ "$(count '^atomic_resp qn=3 ' "$fpdus")" = 6 ] || fail "not 6 Atomic Responses on QN 3: $fpdus"
# What the client asked for, as the RFC lays it out (figure 4).
has '^atomic_req qn=1 msn=1 aop=0 req_id=1 .* add_swap=0x5 add_swap_mask=0x0 ' "$fpdus" ||
	fail "first Fetch-and-Add: $fpdus"
has '^atomic_req .* aop=2 .* add_swap=0xbbbb add_swap_mask=0xffffffffffffffff compare=0xaaaa compare_mask=0xffffffffffffffff' "$fpdus" ||
	fail "Compare-and-Swap: $fpdus"
has '^atomic_req .* aop=0 .* add_swap=0x100000001 add_swap_mask=0x80000000 ' "$fpdus" ||
	fail "masked Fetch-and-Add: $fpdus"
has '^atomic_req .* aop=2 .* add_swap=0xaabbccdd00000000 add_swap_mask=0xffffffff00000000 compare=0x88 compare_mask=0xff$' "$fpdus" ||
	fail "masked Compare-and-Swap: $fpdus"
# The original values, in order (figure 6), each answering its request.
origs=$(grep '^atomic_resp' <<<"$fpdus" | sed 's/.*orig=//' | tr '\n' ' ')
[ "$origs" = "0x1000 0x1005 0xaaaa 0xbbbb 0xffffffff 0x1122334455667788 " ] ||
	fail "Atomic Response values: $origs"
for i in 1 2 3 4 5 6; do
	has "^atomic_resp qn=3 msn=$i req_id=$i " "$fpdus" || fail "Atomic Response $i: $fpdus"
done
# Three Immediate Data messages on QN 0, the immediate data in the last four octets, the
# zero-length Write's solicited (opcode 9), each right behind the last segment of its Write.
has '^imm op=8 qn=0 msn=1 data=0000000012345678 after=write-last$' "$fpdus" || fail "Immediate Data 1: $fpdus"
has '^imm op=8 qn=0 msn=2 data=000000009abcdef0 after=write-last$' "$fpdus" || fail "Immediate Data 2: $fpdus"
has '^imm op=9 qn=0 msn=3 data=000000000badcafe after=write-last$' "$fpdus" || fail "Immediate Data 3: $fpdus"
# The misaligned atomic: a Terminate "Catastrophic error, localized to RDMAP Stream".
has '^term layer=0 etype=2 ecode=0x7$' "$fpdus" || fail "no Terminate 0/2/0x07: $fpdus"
[ "$(counter "$DEV_B" terminates_sent)" -ge 1 ] || fail "host B counted no Terminate"
two_hosts_down
log "siw_rs -> siw_rs: six atomics, three Writes with Immediate Data verified; misaligned atomic Terminated"

# No agreement: nothing of RFC 7306 on the wire, plain traffic works.
none_on_wire() {
	if has 'opcodes .*(^|[ ,])(8|9|10|11):' "$fpdus"; then
		fail "$1: an RFC 7306 opcode on the wire: $fpdus"
	fi
	has 'opcodes .*0:' "$fpdus" || fail "$1: no RDMA Write on the wire: $fpdus"
}
k7306 siw_rs siw 0 -95
has '^req .*ext_offer=1 ext_accept=0' "$frames" || fail "siw_rs -> siw: request: $frames"
# The C siw answers with the request's own bits: the offer comes back, no accept.
has '^rep .*ext_offer=1 ext_accept=0' "$frames" || fail "siw_rs -> siw: reply: $frames"
none_on_wire "siw_rs -> siw"
two_hosts_down
log "siw_rs -> C siw: offer echoed, not accepted; atomics refused to post (EOPNOTSUPP), plain Write passed"

# The C siw's siw_post_send() leaves a refused request's flags in its queue slot, which
# then reads as full: one refused post, and every later one fails (ENOMEM). Its client
# posts only what it can.
k7306 siw siw_rs 0 -22 try_refused=0
has '^req .*ext_offer=0' "$frames" || fail "siw -> siw_rs: request: $frames"
has '^rep .*ext_accept=0' "$frames" || fail "siw -> siw_rs: reply: $frames"
none_on_wire "siw -> siw_rs"
two_hosts_down
log "C siw -> siw_rs: nothing offered, nothing accepted; plain Write passed"

export SIW_RS_PARAMS=rfc7306=0
k7306 siw_rs siw_rs 0 -95
has '^req .*ext_offer=0' "$frames" || fail "rfc7306=0: request: $frames"
none_on_wire "rfc7306=0"
two_hosts_down
unset SIW_RS_PARAMS
log "siw_rs with rfc7306=0: nothing offered, atomics refused to post"
