# The GID and node GUID follow the netdev's MAC at creation, as in the C siw.
. "$ROOT/selftests/lib/common.sh"
trap 'rdma link delete siw_rs1 2>/dev/null; ip link del va 2>/dev/null; unload_siw_rs' EXIT
load_siw_rs
veth_pair va vb
ip link set va address 02:11:22:33:44:55
rdma link add siw_rs1 type siw_rs netdev va
out=$(ibv_devinfo -v -d siw_rs1)
grep -Eq 'node_guid:[[:space:]]+0011:22ff:fe33:4455' <<<"$out" || fail "node_guid: $out"
grep -Eq 'GID\[ *0\]:[[:space:]]+0211:2233:4455:0000:0000:0000:0000:0000' <<<"$out" || fail "GID: $out"
# A MAC change is reported to consumers as a LID change event; it must not disturb the device.
ip link set va address 02:11:22:33:44:66
ibv_devinfo -d siw_rs1 >/dev/null
