# Deleting the netdev unregisters the siw_rs device on it.
. "$ROOT/selftests/lib/common.sh"
cleanup() { ip link del va 2>/dev/null; unload_siw_rs; }
load_siw_rs
veth_pair va vb
rdma link add siw_rs1 type siw_rs netdev va
rdma_dev_exists siw_rs1 || fail "siw_rs1 not registered"
ip link del va
for _ in $(seq 50); do rdma_dev_exists siw_rs1 || break; sleep 0.2; done
! rdma_dev_exists siw_rs1 || fail "siw_rs1 still registered after its netdev was deleted"
