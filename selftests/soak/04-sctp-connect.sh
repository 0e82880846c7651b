# rdma_cm connects between two siw_rs_sctp devices through netem's reordering and loss
# (as sctp/02-reorder), SOAK_RUNS times: a connect once ended UNREACHABLE (-110) now and
# then. Each run is an rping of two verified pings, none run again.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; two_hosts_down; }
two_hosts siw_rs_sctp siw_rs_sctp
modprobe sch_netem
modprobe sctp
for h in A B; do
	ip netns exec host$h sysctl -qw net.sctp.rto_min=50 net.sctp.rto_initial=200
done
on_a tc qdisc add dev va root netem delay 5ms reorder 25% 50% loss 1%
on_b tc qdisc add dev vb root netem delay 5ms reorder 25% 50% loss 1%
soak "rping -C 2 over SCTP with loss" rping_sizes 2 4096
