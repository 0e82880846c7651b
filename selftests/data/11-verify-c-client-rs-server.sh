# data_verify with the kernel's C siw as the client and siw_rs as the server: the data
# phases, with and without an SRQ on the server, and every error path.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill data_verify; two_hosts_down; }
two_hosts siw siw_rs
data_verify -- -m 2
data_verify -q -- -m 1
data_verify -e -- -e
