# rping -V with the kernel's C siw as the client (host A) and siw_rs as the server (host B):
# wire interoperability with siw_rs as MPA responder.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; two_hosts_down; }
two_hosts siw siw_rs
rping_sizes 20 23 64 1000 4096 65535
