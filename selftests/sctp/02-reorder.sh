# DDP over SCTP through a network that reorders and drops packets (netem on both veths):
# SCTP hands the DDP stream's unordered messages over as they arrive, out of order, and
# siw_rs must put them back in DDP-SSN order (RFC 5043 section 10) before it places them.
# rping -V and the byte-checking program check every byte; the sctp_held counter proves
# that messages did come early and were held for their turn.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; pkill -x data_verify; two_hosts_down; }
two_hosts siw_rs_sctp siw_rs_sctp
modprobe sch_netem
# SCTP's sysctls exist once sctp.ko is in; siw_rs loads it only at its first SCTP socket,
# so this test, run alone (SELFTEST_FILTER), found no net.sctp.rto_min to set.
modprobe sctp
for h in A B; do
	# Quick retransmissions: SCTP's minimum RTO (1 s) would make each loss a long stall.
	ip netns exec host$h sysctl -qw net.sctp.rto_min=50 net.sctp.rto_initial=200
done
# Every fourth packet skips the 5 ms delay and overtakes those before it; 1% are lost.
on_a tc qdisc add dev va root netem delay 5ms reorder 25% 50% loss 1%
on_b tc qdisc add dev vb root netem delay 5ms reorder 25% 50% loss 1%
rping_sizes 20 4096 65535
data_verify
held=$(( $(counter "$DEV_A" sctp_held) + $(counter "$DEV_B" sctp_held) ))
[ "$held" -gt 0 ] || fail "no message came early: the reordering was not exercised"
log "messages held for their DDP-SSN's turn: $held"
