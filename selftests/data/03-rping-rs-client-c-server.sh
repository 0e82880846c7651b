# rping -V with siw_rs as the client (host A) and the kernel's C siw as the server (host B):
# wire interoperability with siw_rs as MPA initiator.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; two_hosts_down; }
two_hosts siw_rs siw
rping_sizes 20 23 64 1000 4096 65535
