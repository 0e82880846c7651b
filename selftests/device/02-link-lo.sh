# rdma link add/delete on the loopback device.
. "$ROOT/selftests/lib/common.sh"
cleanup() { rdma link delete siw_rs0 2>/dev/null; unload_siw_rs; }
load_siw_rs
rdma link add siw_rs0 type siw_rs netdev lo
rdma_dev_exists siw_rs0 || fail "siw_rs0 not registered"
has 'netdev lo' "$(rdma link show siw_rs0/1)" || fail "siw_rs0 port not on lo: $(rdma link show)"
has siw_rs0 "$(ibv_devices)" || fail "libibverbs does not list siw_rs0: $(ibv_devices)"
rdma link delete siw_rs0
! rdma_dev_exists siw_rs0 || fail "siw_rs0 still registered after delete"
