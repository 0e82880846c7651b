# ibv_rc_pingpong of 64 KiB messages between two namespaces over GID connections,
# SOAK_RUNS times: the peer that finishes first leaves while the other's receives are
# still posted, which must not complete them behind the last message (README, "The peer
# leaving").
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_rc_pingpong; two_hosts_down; }
two_hosts siw_rs siw_rs
ga=$(wait_gid_index "$DEV_A" 192.168.77.1); gb=$(wait_gid_index "$DEV_B" 192.168.77.2)
soak "ibv_rc_pingpong -s 65536 -n 250" pingpong ibv_rc_pingpong "-g $gb -s 65536 -n 250 -c" "-g $ga -s 65536 -n 250 -c"
