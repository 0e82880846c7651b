# rmmod siw_rs while its devices exist unregisters them all; a C siw device survives it.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	rdma link delete siw1 2>/dev/null || true
	ip link del va 2>/dev/null || true
	unload_siw_rs
	unload_siw
}
load_siw_rs
load_siw
veth_pair va vb
rdma link add siw_rs0 type siw_rs netdev lo
rdma link add siw_rs1 type siw_rs netdev va
rdma link add siw1 type siw netdev vb
rmmod siw_rs
! rdma_dev_exists siw_rs0 || fail "siw_rs0 survived rmmod"
! rdma_dev_exists siw_rs1 || fail "siw_rs1 survived rmmod"
rdma_dev_exists siw1 || fail "rmmod siw_rs took the C siw's device with it"
ibv_devinfo -d siw1 >/dev/null || fail "the C siw device no longer works"
