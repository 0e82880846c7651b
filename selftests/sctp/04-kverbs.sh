# A kernel consumer over DDP over SCTP: our kernel consumer (selftests/lib/kverbs.sh), as
# data/16-kverbs runs it over TCP, between two siw_rs_sctp devices, with the server's
# receives on an SRQ: one posted list of RDMA Write, Read, a two-SGE Send and an inline
# Send, every byte checked on both sides, ib_drain_qp at teardown (under 30 s).
#
# This suite runs in its own VM, without the C siw: the C siw takes sk_callback_lock with a
# plain read_lock() in process context (siw_qp_llp_data_ready() from release_sock()), which
# makes lockdep's one class for every AF_INET socket's callback lock "softirq-unsafe", and
# SCTP's close takes it under the socket's spinlock: lockdep then reports SCTP's own close
# path once the C siw ran in the same boot.
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/kverbs.sh"
cleanup() { kvt_cleanup; }
kvt_pair siw_rs_sctp siw_rs_sctp 1
