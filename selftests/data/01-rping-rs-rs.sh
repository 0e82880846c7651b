# rping -V (verify every byte of every transfer) between two siw_rs hosts: connection setup
# through iw_cm and MPA, then Send, RDMA Read and RDMA Write in both directions, from
# rping's smallest buffer (23 bytes) to its largest.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs
rping_sizes 20 23 64 1000 4096 65535
