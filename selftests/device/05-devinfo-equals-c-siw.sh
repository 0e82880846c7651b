# ibv_devinfo -v of siw_rs equals the C siw's for the same kind of netdev (one veth end each),
# except for the fields listed below, which legitimately differ.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	rdma link delete siw_rs1 2>/dev/null || true
	rdma link delete siw1 2>/dev/null || true
	ip link del va 2>/dev/null || true
	unload_siw_rs
	unload_siw
}
load_siw_rs
load_siw
veth_pair va vb
ip link set va mtu 1500; ip link set vb mtu 1500
rdma link add siw_rs1 type siw_rs netdev va
rdma link add siw1 type siw netdev vb

# Fields that differ by design:
#   hca_id                         the device names
#   node_guid, sys_image_guid      derived from each netdev's MAC
#   GID[...]                       the MAC itself
#   vendor_part_id                 a per-driver counter of devices created (both start at 1)
differ='^[[:space:]]*(hca_id|node_guid|sys_image_guid|vendor_part_id|GID\[)'
a=$(ibv_devinfo -v -d siw_rs1 | grep -Ev "$differ")
b=$(ibv_devinfo -v -d siw1 | grep -Ev "$differ")
# Guard against comparing two empty or truncated outputs.
for f in max_qp max_cqe max_mr_size max_qp_rd_atom max_srq_wr max_srq_sge \
	 device_cap_flags max_msg_sz port_cap_flags active_mtu; do
	grep -q "$f" <<<"$a" || fail "siw_rs devinfo lacks $f"
done
if ! diff <(echo "$b") <(echo "$a"); then
	fail "ibv_devinfo -v differs between the C siw (<) and siw_rs (>)"
fi
echo "$(wc -l <<<"$a") lines equal"
