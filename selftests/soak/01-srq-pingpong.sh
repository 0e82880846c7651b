# ibv_srq_pingpong between two namespaces over GID connections, 16 QPs and 50 iterations,
# SOAK_RUNS times each: its QPs post a Send more after the peer has all it needs and has left,
# which must fail only after the retry time (README, "The peer leaving"), not while the
# tool still polls. Every run must pass, none run again.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_srq_pingpong; two_hosts_down; }
two_hosts siw_rs siw_rs
ga=$(wait_gid_index "$DEV_A" 192.168.77.1); gb=$(wait_gid_index "$DEV_B" 192.168.77.2)
soak "ibv_srq_pingpong -n 50" pingpong ibv_srq_pingpong "-g $gb -n 50" "-g $ga -n 50"
# 64 KiB Sends on one device: the Send more is often still being written when the peer
# leaves, and its data then meets the peer's closed socket (a reset).
soak "ibv_srq_pingpong -s 65536 -e (one device)" pingpong ibv_srq_pingpong \
	"-g $ga -s 65536 -n 100 -c -e" "-g $ga -s 65536 -n 100 -c -e" same
