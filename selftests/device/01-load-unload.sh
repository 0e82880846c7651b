# siw_rs.ko loads, registers its link type, and unloads cleanly.
. "$ROOT/selftests/lib/common.sh"
trap 'unload_siw_rs' EXIT
insmod "$SIW_RS_KO"
lsmod | grep -q '^siw_rs ' || fail "siw_rs not in lsmod after insmod"
modinfo "$SIW_RS_KO" | grep -q 'alias: *rdma-link-siw_rs' || fail "module alias rdma-link-siw_rs missing"
rmmod siw_rs
! lsmod | grep -q '^siw_rs ' || fail "siw_rs still loaded after rmmod"
# A second cycle catches state a first unload left behind.
insmod "$SIW_RS_KO"
rmmod siw_rs
