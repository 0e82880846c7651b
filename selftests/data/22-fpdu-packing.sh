# FPDU packing (RFC 5044 section 5.1, `fpdu_pack`, on by default): FPDUs that are ready
# together (work requests posted in one chain, a message's tail and the next message) share
# TCP segments, each wholly inside the segment it shares. data_verify -l posts each Write
# with the request to check it and each announcement with its Send in one ibv_post_send,
# every byte checked; ib_send_bw -l 16 posts 64-byte Sends sixteen at a time.
# selftests/lib/fpdu_packing.py checks a capture of host B's veth against the RFC, apart
# from siw_rs's code: each packet cut at the MSS (as TSO or GSO would cut it), no FPDU that
# begins inside a segment ends past it, and segments of several FPDUs are there. The
# tx_fpdus_packed counter agrees. Then siw_rs packs into the C siw (whose receiver takes
# FPDUs as a stream: every byte checked again), and with fpdu_pack=0 no segment holds two
# FPDUs and nothing is counted.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	pkill data_verify || true
	pkill -x ib_send_bw || true
	pkill tcpdump || true
	two_hosts_down
}

# send_bw_chains: ib_send_bw -l 16 of 64-byte Sends, server on host B.
send_bw_chains() {
	perftest_once ib_send_bw -s 64 -n 1600 -l 16
	[ $PERF_OK = 1 ] || fail "ib_send_bw -l 16 client: $PERF_OUT; server: $(cat /tmp/perf-s.out)"
	has '^ *64 +1600 ' "$PERF_OUT" || fail "ib_send_bw -l 16: no result line: $PERF_OUT"
}

# packing MIN: stops the capture and checks it (fpdu_packing.py PCAP MIN).
packing() {
	local out frames
	# (In a substitution: the capture's end is a `wait` on tcpdump, which TERM ended.)
	frames=$(capture_frames)
	has '^rep ' "$frames" || fail "no MPA reply in the capture: $frames"
	out=$(python3 "$ROOT/selftests/lib/fpdu_packing.py" /tmp/mpa.pcap "$1") ||
		fail "FPDUs in the capture: $out"
	echo "$out" | sed 's/^/# /'
}

# rs_pair DV_M MIN: two siw_rs hosts, captured: data_verify -l -m DV_M, then the Sends in
# chains; the capture checked with `packing MIN`.
rs_pair() {
	two_hosts siw_rs siw_rs
	capture_start
	data_verify -- -l -m "$1"
	send_bw_chains
	packing "$2"
}

rs_rs() {
	rs_pair 2 8
	n=$(counter "$DEV_A" tx_fpdus_packed)
	all=$(counter "$DEV_A" tx_fpdus)
	# 1600 Sends in chains of 16, and data_verify's pairs: most of the Sends are packed.
	[ "$n" -ge 1000 ] && [ "$n" -lt "$all" ] ||
		fail "client tx_fpdus_packed $n of $all FPDUs: $(rdma statistic show link "$DEV_A/1")"
	expect_b=$(counter "$DEV_B" rx_fpdus)
	[ "$expect_b" = "$all" ] || fail "server received $expect_b FPDUs, client sent $all"
	log "siw_rs to siw_rs: $n of $all FPDUs packed, all contained, every byte checked"
	two_hosts_down
}
rs_rs

# Not captured while data_verify runs: tcpdump on the C siw's host widens a C siw race
# (seen here once): a Send of its already in TCP completes with LOC_QP_OP_ERR when the
# peer's disconnect suspends its transmit first (data_verify's -E says more), and the
# server's last result is such a Send. The capture of the Sends below shows the framing.
rs_c() {
	two_hosts siw_rs siw
	data_verify -- -l -m 1
	capture_start
	send_bw_chains
	packing 8
	log "siw_rs to the C siw: $(counter "$DEV_A" tx_fpdus_packed) FPDUs packed, every byte checked"
	two_hosts_down
}
rs_c

unpacked() {
	rs_pair 1 -1
	[ "$(counter "$DEV_A" tx_fpdus_packed)" = 0 ] ||
		fail "fpdu_pack=0 packed: $(rdma statistic show link "$DEV_A/1")"
	log "fpdu_pack=0: a segment per FPDU"
}
export SIW_RS_PARAMS=fpdu_pack=0
unpacked
unset SIW_RS_PARAMS
