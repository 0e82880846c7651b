# A connect towards a peer that never answers (its address has a neighbour entry with a MAC
# nobody has: every SYN is lost) must not hold the caller (issue 13): rdma_connect returns at
# once, the connect fails as UNREACHABLE after siw_rs's 10 s bound (the C siw blocks in
# rdma_connect until TCP gives up, about two minutes), and destroying the QP and cm_id of a
# connect in progress is immediate. Then rping still works, and rmmod completes.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x connect_abort; two_hosts_down; }
two_hosts siw_rs siw_rs
on_a ip neigh replace 192.168.77.99 lladdr 02:00:00:00:00:99 dev va nud permanent
out=$(on_a timeout 120 "$TESTBIN"/connect_abort -a 192.168.77.99 -w 20000 2>&1) ||
	fail "connect_abort: $out"
echo "$out" | sed 's/^/# /'
has '^wait: .*UNREACHABLE.*: ok$' "$out" || fail "the connect did not end as UNREACHABLE: $out"
rping_sizes 2 64
