# The GID and node GUID follow the netdev's MAC at creation, as in the C siw.
. "$ROOT/selftests/lib/common.sh"
cleanup() { rdma link delete siw_rs1 2>/dev/null; ip link del va 2>/dev/null; unload_siw_rs; }
load_siw_rs
veth_pair va vb
ip link set va address 02:11:22:33:44:55
rdma link add siw_rs1 type siw_rs netdev va
sys=/sys/class/infiniband/siw_rs1
guid=$(cat $sys/node_guid)
gid=$(cat $sys/ports/1/gids/0)
[ "$guid" = 0011:22ff:fe33:4455 ] || fail "node_guid is $guid, want 0011:22ff:fe33:4455"
[ "$gid" = 0211:2233:4455:0000:0000:0000:0000:0000 ] || fail "GID 0 is $gid"
# libibverbs reports the same (through query_device and the GID cache).
has 'node_guid:[[:space:]]+0011:22ff:fe33:4455' "$(ibv_devinfo -d siw_rs1)" || fail "ibv_devinfo node_guid"
# A MAC change is reported to consumers as a LID change event; it must not disturb the device.
ip link set va address 02:11:22:33:44:66
ibv_devinfo -d siw_rs1 >/dev/null
