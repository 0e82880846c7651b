# data_verify with siw_rs as the client and the kernel's C siw as the server. The error
# paths leave out read_right: the C siw serves Reads from regions without REMOTE_READ
# (anchor-siw.md O2), which 10 and 11 check siw_rs refuses.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill data_verify; two_hosts_down; }
two_hosts siw_rs siw
data_verify -- -m 2
data_verify -q -- -m 1
data_verify -E -- -E
