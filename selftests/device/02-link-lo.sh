# rdma link add/delete on the loopback device.
. "$ROOT/selftests/lib/common.sh"
# guest.sh lists siw alone in /etc/libibverbs.d; cleanup puts that back.
only_siw() {
	[ -d /tmp/siw_rs-ibverbs.d ] || return 0
	find /etc/libibverbs.d -name '*.driver' ! -name siw.driver -delete
}
cleanup() { only_siw; rdma link delete siw_rs0 2>/dev/null; unload_siw_rs; }
load_siw_rs
rdma link add siw_rs0 type siw_rs netdev lo
rdma_dev_exists siw_rs0 || fail "siw_rs0 not registered"
has 'netdev lo' "$(rdma link show siw_rs0/1)" || fail "siw_rs0 port not on lo: $(rdma link show)"
has siw_rs0 "$(ibv_devices)" || fail "libibverbs does not list siw_rs0: $(ibv_devices)"
# And with every provider rdma-core ships loaded, as on a host: libsiw still claims it.
if [ -d /tmp/siw_rs-ibverbs.d ]; then
	cp /tmp/siw_rs-ibverbs.d/*.driver /etc/libibverbs.d/
	[ "$(ls /etc/libibverbs.d/*.driver | wc -l)" -gt 1 ] || fail "no other providers to load"
	out=$(ibv_devinfo -d siw_rs0) || fail "with every provider: ibv_devinfo: $out"
	has 'transport:[[:space:]]+iWARP' "$out" || fail "with every provider: $out"
	only_siw
fi
rdma link delete siw_rs0
! rdma_dev_exists siw_rs0 || fail "siw_rs0 still registered after delete"
