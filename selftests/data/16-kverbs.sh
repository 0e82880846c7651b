# Kernel verbs: a kernel consumer of ours (selftests/lib/kverbs.sh: kvt_server.ko on host B,
# kvt_client.ko on host A, over rdma_cm in each host's namespace): one posted list of RDMA
# Write, Read, a two-SGE Send and an inline solicited Send, every byte checked on both sides,
# ib_drain_qp at teardown (under 30 s: for a QP on an SRQ it needs the Last WQE Reached
# event). Run siw_rs<->siw_rs (with the server's receives posted to its QP, then to an SRQ),
# and against the C siw both ways.
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/kverbs.sh"
cleanup() { kvt_cleanup; }
kvt_pair siw_rs siw_rs 0
kvt_pair siw_rs siw_rs 1
kvt_pair siw siw_rs 0
kvt_pair siw_rs siw 0
