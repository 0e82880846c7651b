# data_verify connecting through GIDs instead of rdma_cm: its whole matrix of RDMA Write,
# RDMA Read and Send (1 to 3 SGEs, inline, 1 byte to 256 KiB), every byte checked; again
# with the server receiving through an SRQ; then its error paths.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill data_verify; two_hosts_down; }
two_hosts siw_rs siw_rs
ga=$(wait_gid_index "$DEV_A" 192.168.77.1); gb=$(wait_gid_index "$DEV_B" 192.168.77.2)
data_verify -g "$gb" -d "$DEV_B" -- -g "$ga" -d "$DEV_A" -m 2
data_verify -g "$gb" -d "$DEV_B" -q -- -g "$ga" -d "$DEV_A" -m 1
data_verify -g "$gb" -d "$DEV_B" -e -- -g "$ga" -d "$DEV_A" -e
