# DDP over SCTP (RFC 5043) between two siw_rs_sctp devices (`rdma link add ... type
# siw_rs_sctp`): rping -V (every byte of every transfer checked), perftest, and the
# byte-checking program, over one SCTP association per connection. A capture of the whole
# run, decoded independently (selftests/lib/sctp_chunks.py), shows no TCP at all (no MPA),
# the DDP Adaptation Indication in every INIT and INIT-ACK, every DATA chunk unordered with
# PPID 16 or 17, the DDP-SSNs of each direction without a gap, the Session Initiate and
# Accept first and a Session Terminate last.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	pkill rping; pkill -x data_verify
	[ -n "${CAPTURE_PID:-}" ] && kill "$CAPTURE_PID" 2>/dev/null
	two_hosts_down
}
two_hosts siw_rs_sctp siw_rs_sctp
on_b tcpdump -i vb -s 0 -U -w /tmp/sctp.pcap 'ip' >/tmp/tcpdump.out 2>&1 &
CAPTURE_PID=$!
sleep 2
rping_sizes 10 23 4096 65535
data_verify
sleep 2
kill "$CAPTURE_PID"; wait "$CAPTURE_PID" 2>/dev/null || true
CAPTURE_PID=
out=$(python3 "$ROOT/selftests/lib/sctp_chunks.py" /tmp/sctp.pcap) || fail "capture: $out"
log "$out"
perftest_all
