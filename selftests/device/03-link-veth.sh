# rdma link add/delete on one end of a veth pair, and on a veth inside a network namespace.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	rdma link delete siw_rs1 2>/dev/null || true
	ip netns exec nsA rdma link delete siw_rs2 2>/dev/null || true
	ip link del va 2>/dev/null || true
	ip netns del nsA 2>/dev/null || true
	unload_siw_rs
}
load_siw_rs
veth_pair va vb
rdma link add siw_rs1 type siw_rs netdev va
rdma_dev_exists siw_rs1 || fail "siw_rs1 not registered"
has 'state:.*PORT_ACTIVE' "$(ibv_devinfo -d siw_rs1)" || fail "port not active: $(ibv_devinfo -d siw_rs1)"
ip link set va down
has 'state:.*PORT_DOWN' "$(ibv_devinfo -d siw_rs1)" || fail "port not down after link down"
rdma link delete siw_rs1
! rdma_dev_exists siw_rs1 || fail "siw_rs1 still registered"

# In a namespace: the device follows the netdev (shared rdma netns mode).
ip link set va up
ip netns add nsA
ip link set vb netns nsA
ip netns exec nsA ip link set vb up
ip netns exec nsA rdma link add siw_rs2 type siw_rs netdev vb
# The rdma tool names the netdev only inside the netdev's namespace.
has 'netdev vb' "$(ip netns exec nsA rdma link show siw_rs2/1)" ||
	fail "siw_rs2 not on vb: $(ip netns exec nsA rdma link show)"
ip netns exec nsA rdma link delete siw_rs2
! rdma_dev_exists siw_rs2 || fail "siw_rs2 still registered"
