# Drop-in for the C siw (module parameter siw_link=1): scripts that hard-code
# `rdma link add NAME type siw` get siw_rs devices, unedited, while the C siw is not loaded.
# Two such devices, one per host namespace, pass rping's data checks; the C siw module is
# never loaded (no rdma-link-siw autoload); unloading siw_rs takes the devices away. With
# the C siw loaded first, siw_rs leaves the type to it.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	ip netns exec hostA rdma link delete s_a 2>/dev/null
	ip netns exec hostB rdma link delete s_b 2>/dev/null
	rdma link delete c0 2>/dev/null
	ip netns del hostA 2>/dev/null
	ip netns del hostB 2>/dev/null
	ip link del ve0 2>/dev/null
	unload_siw_rs
	unload_siw
}
unload_siw
SIW_RS_PARAMS="siw_link=1" load_siw_rs
has 'serving `rdma link add ... type siw`' "$(dmesg)" || fail "siw_link=1 not taken: $(dmesg | tail -n 5)"
two_host_netns
# Exactly what a script written for the C siw runs.
ip netns exec hostA rdma link add s_a type siw netdev va
ip netns exec hostB rdma link add s_b type siw netdev vb
! has '^siw ' "$(lsmod)" || fail "the C siw was loaded for type siw"
DEV_A=s_a DEV_B=s_b
rping_sizes 3 64 8192
log "type siw devices are siw_rs's: rping verified"
ip netns exec hostA rdma link delete s_a
ip netns exec hostB rdma link delete s_b
ip netns del hostA
ip netns del hostB
unload_siw_rs
# With the C siw loaded, siw_rs does not take its type.
veth_pair ve0 ve1
load_siw
SIW_RS_PARAMS="siw_link=1" load_siw_rs
has 'siw_link=1 ignored: the C siw is loaded' "$(dmesg)" || fail "siw_link=1 taken with siw loaded"
rdma link add c0 type siw netdev ve0
rmmod siw_rs
rdma_dev_exists c0 || fail "type siw went to siw_rs with the C siw loaded"
rdma link delete c0
unload_siw
log "with the C siw loaded, type siw stays the C siw's"
