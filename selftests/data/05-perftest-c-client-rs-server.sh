# perftest (ib_{write,read,send}_{bw,lat} -R) over rdma_cm, siw client (host A) and siw_rs server
# (host B).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -f 'ib_(write|read|send)_'; two_hosts_down; }
two_hosts siw siw_rs
perftest_all
