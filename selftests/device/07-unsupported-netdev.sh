# A netdev whose link type siw cannot run over (here an IPv6-in-IPv4 SIT tunnel) is refused
# with EINVAL and a kernel message naming the reason.
. "$ROOT/selftests/lib/common.sh"
cleanup() { rdma link delete siw_rs9 2>/dev/null; unload_siw_rs; }
load_siw_rs
modprobe sit
ip link show sit0 >/dev/null
expect_fail_with "Invalid argument" rdma link add siw_rs9 type siw_rs netdev sit0
! rdma_dev_exists siw_rs9 || fail "a device was created on sit0"
has "siw_rs: cannot attach to a netdev of link type 776" "$(dmesg | tail -n 5)" ||
	fail "no clear error in the kernel log: $(dmesg | tail -n 5)"
