# librdmacm's ucmatose and rdma_server/rdma_client, siw client (host A) and siw_rs server (host B).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill ucmatose; pkill rdma_server; two_hosts_down; }
two_hosts siw siw_rs
cm_tools
