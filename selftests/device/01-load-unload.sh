# siw_rs.ko loads, registers its link type, and unloads cleanly.
. "$ROOT/selftests/lib/common.sh"
cleanup() { unload_siw_rs; }
insmod "$SIW_RS_KO"
has '^siw_rs ' "$(lsmod)" || fail "siw_rs not in lsmod after insmod"
has 'alias: *rdma-link-siw_rs' "$(modinfo "$SIW_RS_KO")" || fail "module alias rdma-link-siw_rs missing"
rmmod siw_rs
! has '^siw_rs ' "$(lsmod)" || fail "siw_rs still loaded after rmmod"
# A second cycle catches state a first unload left behind.
insmod "$SIW_RS_KO"
rmmod siw_rs
