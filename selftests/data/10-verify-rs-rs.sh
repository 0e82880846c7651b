# data_verify between two siw_rs hosts: 2 MiB each of RDMA Write, RDMA Read and Send
# (1 to 3 SGEs, inline, 1 byte to 256 KiB), every byte checked; again with the server
# receiving through an SRQ; then the error paths (bad rkey, out of bounds, missing
# REMOTE_WRITE, missing REMOTE_READ, flush of posted receives).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill data_verify; two_hosts_down; }
two_hosts siw_rs siw_rs
data_verify -- -m 2
data_verify -q -- -m 1
data_verify -e -- -e
