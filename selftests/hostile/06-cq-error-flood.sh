# A process that keeps its CQ full and rings the doorbell of a QP in ERROR in a loop must
# not grow kernel memory (issue 13, defect 4): each ring flushes into a CQ without room.
# siw_rs reports the overflow once (the CQ is in error from then on); it reported one
# CQ_ERR async event per write(2) before, each queued in the kernel until read. Deliberate
# difference: the C siw also reports every overflow.
. "$ROOT/selftests/lib/common.sh"
BIN=$TESTBIN/cq_flood
cleanup() { rdma link delete siw_rs1; ip link del va; unload_siw_rs; }
load_siw_rs
veth_pair va vb
rdma link add siw_rs1 type siw_rs netdev va
out=$(timeout 120 "$BIN" siw_rs1) || fail "cq_flood: $out"
has 'doorbells=2000$' "$out" || fail "doorbells refused: $out"
size=$(sed -nE 's/^cq_size=([0-9]+) .*/\1/p' <<<"$out")
posted=$(sed -nE 's/.* posted=([0-9]+) .*/\1/p' <<<"$out")
[ -n "$size" ] && [ "$posted" -gt "$size" ] || fail "the SQ did not hold more than the CQ: $out"
has "flush cqes=$size " "$out" || fail "the CQ did not fill with flush CQEs: $out"
has ' cq_err_events=1 ' "$out" || fail "one CQ error event expected: $out"
log "$out"
