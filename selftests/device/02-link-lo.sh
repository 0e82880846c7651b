# rdma link add/delete on the loopback device.
. "$ROOT/selftests/lib/common.sh"
trap 'rdma link delete siw_rs0 2>/dev/null; unload_siw_rs' EXIT
load_siw_rs
rdma link add siw_rs0 type siw_rs netdev lo
rdma_dev_exists siw_rs0 || fail "siw_rs0 not registered"
rdma link show siw_rs0/1 | grep -q 'netdev lo' || fail "siw_rs0 port not on lo: $(rdma link show)"
ibv_devices | grep -q siw_rs0 || fail "libibverbs does not list siw_rs0: $(ibv_devices)"
rdma link delete siw_rs0
! rdma_dev_exists siw_rs0 || fail "siw_rs0 still registered after delete"
