# Port counters (`rdma statistic show link DEV/1`): move known amounts of data between two
# siw_rs devices and read the counters back. New devices count nothing. After
# `ib_write_bw -n 100 -s 65536` the client sent its 6,553,600 bytes of Writes plus
# perftest's few small handshake Sends, and what one end counts as sent the other counts as
# received, FPDU for FPDU and byte for byte. After `ib_read_bw -n 100` the server served
# exactly 100 Read Requests. Both ends count the same connections (perftest -R makes two
# per run), more after each run; nothing failed, so no Terminate, CRC error or refusal is
# counted.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	pkill -f 'ib_(write|read)_bw' || true
	pkill -x rping || true
	two_hosts_down
}
two_hosts siw_rs siw_rs

# expect DEV NAME VALUE
expect() {
	local v
	v=$(counter "$1" "$2")
	[ "$v" = "$3" ] || fail "$1 $2 is $v, expected $3: $(rdma statistic show link "$1/1")"
}

# run_perf TOOL ARGS...: one perftest run over rdma_cm, server on host B.
run_perf() {
	perftest_once "$@"
	[ $PERF_OK = 1 ] || fail "$1 client: $PERF_OUT; server: $(cat /tmp/perf-s.out)"
}

# counts: new devices count nothing; then the Write and the Read runs, each end's counts
# read back.
counts() {
	log "before traffic: $(rdma statistic show link "$DEV_A/1")"
	for d in "$DEV_A" "$DEV_B"; do
		for c in tx_fpdus tx_bytes rx_fpdus rx_bytes read_requests_served crc_errors \
			terminates_sent terminates_received connections_established connections_refused; do
			expect "$d" "$c" 0
		done
	done

	run_perf ib_write_bw -n 100 -s 65536
	log "after ib_write_bw: A: $(rdma statistic show link "$DEV_A/1")"
	log "after ib_write_bw: B: $(rdma statistic show link "$DEV_B/1")"
	sent=$(counter "$DEV_A" tx_bytes)
	[ "$sent" -ge 6553600 ] && [ "$sent" -lt $((6553600 + 4096)) ] ||
		fail "client tx_bytes $sent: not 6553600 plus a little handshake"
	expect "$DEV_B" rx_bytes "$sent"
	expect "$DEV_B" rx_fpdus "$(counter "$DEV_A" tx_fpdus)"
	expect "$DEV_A" rx_bytes "$(counter "$DEV_B" tx_bytes)"
	expect "$DEV_A" rx_fpdus "$(counter "$DEV_B" tx_fpdus)"
	# Two siw_rs ends agree on GSO_EXP (fpdu_gso, on by default): 64 KiB Writes go in FPDUs of
	# up to 16 KiB, 4 or 5 each; FPDUs of one MSS (1500-byte MTU) would make at least 45 each.
	n=$(counter "$DEV_A" tx_fpdus)
	[ "$n" -ge 400 ] && [ "$n" -lt 1000 ] || fail "client tx_fpdus $n for 100 Writes of 64 KiB"
	conns=$(counter "$DEV_A" connections_established)
	[ "$conns" -ge 1 ] || fail "no connection counted after ib_write_bw"
	expect "$DEV_B" connections_established "$conns"

	run_perf ib_read_bw -n 100 -s 4096
	log "after ib_read_bw: A: $(rdma statistic show link "$DEV_A/1")"
	log "after ib_read_bw: B: $(rdma statistic show link "$DEV_B/1")"
	expect "$DEV_B" read_requests_served 100
	expect "$DEV_A" read_requests_served 0
	expect "$DEV_B" rx_bytes "$(counter "$DEV_A" tx_bytes)"
	expect "$DEV_A" rx_bytes "$(counter "$DEV_B" tx_bytes)"
	# The Read Responses: 100 times 4 KiB more into A than the Write run sent back.
	got=$(counter "$DEV_A" rx_bytes)
	[ "$got" -ge 409600 ] || fail "client rx_bytes $got after 100 Reads of 4 KiB"
	now=$(counter "$DEV_A" connections_established)
	[ "$now" -gt "$conns" ] || fail "no connection counted for ib_read_bw ($conns, then $now)"
	expect "$DEV_B" connections_established "$now"
	for d in "$DEV_A" "$DEV_B"; do
		for c in crc_errors terminates_sent terminates_received connections_refused; do
			expect "$d" "$c" 0
		done
	done
}

counts

# A connection's details (`rdma resource show qp -dd`): addresses, MPA, IRD/ORD, queues,
# while rping runs.
on_b rping -s -a 192.168.77.2 -C 100000 >/dev/null 2>&1 &
srv=$!
listening_b 7174
on_a rping -c -a 192.168.77.2 -C 100000 -S 64 >/dev/null 2>&1 &
cli=$!
out=
for _ in $(seq 40); do
	out=$(rdma -dd resource show qp 2>&1 | grep -A1 "$DEV_A") || true
	# Its addresses show from the connect on; what MPA settled only once the QP is in RTS.
	# $DEV_A's own line: the one after it may be the peer's QP, in RTS first.
	has "$DEV_A/[0-9]+ .*state RTS .*mpa_rev" "$out" && break
	sleep 0.5
done
log "rdma -dd resource show qp, $DEV_A: $out"
# $cli and $srv are the subshells of on_a and on_b, not rping itself. By name, not -f: a
# command line naming rping (the runner's, with a test filter) is not to be killed.
pkill -x rping || true
wait $cli $srv 2>/dev/null || true
for f in 'laddr 192\.168\.77\.1:[0-9]+' 'raddr 192\.168\.77\.2:7174' 'mpa_rev 2' 'mpa_crc 0' \
	'mpa_markers_tx 0' 'mpa_markers_rx 0' 'fpdu_gso 1' 'ird [0-9]+' 'ord [0-9]+' 'sq_size [0-9]+' 'rq_size [0-9]+' \
	'tx_fpdus [0-9]+'; do
	has "$f" "$out" || fail "no '$f' in the QP's details: $out"
done
