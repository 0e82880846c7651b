# Fast registration at the verbs level, from a kernel consumer (selftests/data/kverbs/kfr.c,
# built on the host by selftests/run): on one siw_rs device, a connection to its own
# address. REG_MR, RDMA Write into the registered STag and RDMA Read with Invalidate into a
# registered sink (both checked byte for byte), Send with Invalidate (IB_WC_WITH_INVALIDATE
# and the STag in the receive completion); and the error paths: a page list too long, REG_MR
# of a valid MR, a Write after LOCAL_INV and after a remote invalidation (refused, nothing
# placed), Send with Invalidate of another PD's STag and of a DMA MR's (refused). insmod
# fails unless every check passed.
. "$ROOT/selftests/lib/common.sh"
KFR=$ROOT/selftests/data/kverbs/kfr.ko
cleanup() {
	rmmod kfr 2>/dev/null
	rdma link delete rs0 2>/dev/null
	ip link del ve0 2>/dev/null
	unload_siw_rs
}
[ -f "$KFR" ] || fail "kfr.ko not built (selftests/run builds it)"
load_siw_rs
veth_pair ve0 ve1
ip addr add 192.168.78.1/24 dev ve0
rdma link add rs0 type siw_rs netdev ve0
if ! out=$(insmod "$KFR" addr=192.168.78.1 2>&1); then
	fail "kfr: $out; kernel log: $(dmesg | grep 'kfr\|siw_rs' | tail -n 30)"
fi
dmesg | grep 'kfr: ' | tail -n 12 | sed 's/^[^]]*] /# /'
has 'kfr: all fast-registration checks passed' "$(dmesg)" || fail "kfr: no pass line"
rmmod kfr
