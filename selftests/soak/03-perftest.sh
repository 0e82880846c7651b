# perftest over rdma_cm (-R) between two namespaces, SOAK_RUNS times each of two runs that
# met perftest's own races: its second listen (ib_read_bw, whose client connects again at
# once) and its end exchange (ib_send_bw -l 16 of small Sends). Both sides must exit 0 and
# the client print its result, none run again (common.sh, perftest_listen_gap, PERFTEST_OPTS).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ib_read_bw; pkill -x ib_send_bw; two_hosts_down; }
two_hosts siw_rs siw_rs
perf() {
	perftest_once "$@"
	[ $PERF_OK = 1 ] || fail "$1 client: $PERF_OUT; server: $(cat /tmp/perf-s.out)"
}
soak "ib_read_bw -n 100 -s 4096" perf ib_read_bw -n 100 -s 4096
soak "ib_send_bw -n 1600 -s 64 -l 16" perf ib_send_bw -n 1600 -s 64 -l 16
