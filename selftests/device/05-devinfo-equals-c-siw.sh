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
#   GID[...]                       GID 0 is the MAC itself, on both; siw_rs lists the
#                                  netdev's addresses after it (checked below)
#   gid_tbl_len                    the C siw's table has GID 0 alone; siw_rs's 32 entries
#                                  (deliberate: README "Connections without rdma_cm")
#   vendor_part_id                 a per-driver counter of devices created (both start at 1)
differ='^[[:space:]]*(hca_id|node_guid|sys_image_guid|vendor_part_id|gid_tbl_len|GID\[)'
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
# The deliberate differences, as they should be.
ra=$(ibv_devinfo -v -d siw_rs1) rb=$(ibv_devinfo -v -d siw1)
has 'gid_tbl_len:[[:space:]]+1$' "$rb" || fail "the C siw's gid_tbl_len is not 1: $rb"
has 'gid_tbl_len:[[:space:]]+32$' "$ra" || fail "siw_rs's gid_tbl_len is not 32: $ra"
# User space is offered no atomics (libsiw cannot post one), as by the C siw.
has 'atomic_cap:[[:space:]]+ATOMIC_NONE' "$ra" || fail "siw_rs's atomic_cap is not ATOMIC_NONE: $ra"
mac_gid() { local m; m=$(tr -d : </sys/class/net/$1/address); echo "${m:0:4}:${m:4:4}:${m:8:4}:0000:0000:0000:0000:0000"; }
[ "$(cat /sys/class/infiniband/siw_rs1/ports/1/gids/0)" = "$(mac_gid va)" ] || fail "siw_rs's GID 0 is not va's MAC"
[ "$(cat /sys/class/infiniband/siw1/ports/1/gids/0)" = "$(mac_gid vb)" ] || fail "the C siw's GID 0 is not vb's MAC"
