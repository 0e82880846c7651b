# One siw device per netdev: a second add on the same netdev fails with EEXIST, whether the
# first device is siw_rs's or the C siw's (both drivers look their device up by netdev).
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	for d in siw_rs0 siw_rs1 siw0 siw1; do rdma link delete $d 2>/dev/null || true; done
	ip link del va 2>/dev/null || true
	unload_siw_rs
	unload_siw
}
load_siw_rs
load_siw
veth_pair va vb
rdma link add siw_rs0 type siw_rs netdev va
expect_fail_with "File exists" rdma link add siw_rs1 type siw_rs netdev va
expect_fail_with "File exists" rdma link add siw0 type siw netdev va
rdma link add siw1 type siw netdev vb
expect_fail_with "File exists" rdma link add siw_rs1 type siw_rs netdev vb
rdma_dev_exists siw_rs0 || fail "the first device went away"
! rdma_dev_exists siw_rs1 || fail "a second device was created"
# The name is taken too: the RDMA core refuses a duplicate device name with ENFILE.
expect_fail_with "Too many open files in system" rdma link add siw_rs0 type siw_rs netdev lo
