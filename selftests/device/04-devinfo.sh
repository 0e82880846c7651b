# ibv_devinfo through unmodified libibverbs + libsiw sees an iWARP device with the siw identity.
. "$ROOT/selftests/lib/common.sh"
cleanup() { rdma link delete siw_rs0 2>/dev/null; unload_siw_rs; }
load_siw_rs
rdma link add siw_rs0 type siw_rs netdev lo
out=$(ibv_devinfo -d siw_rs0)
echo "$out"
has 'transport:[[:space:]]+iWARP' "$out" || fail "transport is not iWARP"
has 'vendor_id:[[:space:]]+0x626d74' "$out" || fail "vendor_id is not 0x626d74"
has 'phys_port_cnt:[[:space:]]+1' "$out" || fail "phys_port_cnt is not 1"
has 'link_layer:[[:space:]]+Ethernet' "$out" || fail "link_layer is not Ethernet"
# The driver-private GET_CONTEXT response reached libsiw: the context opened (devinfo -v
# queries through it) and the device reports its attributes.
has 'max_qp:[[:space:]]+102400' "$(ibv_devinfo -v -d siw_rs0)" || fail "max_qp is not 102400"
