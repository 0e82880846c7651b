# Bad input to connections made by modify_qp (selftests/gid/gid_errors.c): an empty or MAC
# source GID, no global route, a zero or multicast destination, a QP naming itself (each an
# errno); an unreachable peer (ERROR, flushes and a fatal event after the bound); a QP number
# that exists nowhere, a peer waiting for another QP, a peer destroyed while connecting, two
# QPs claiming one peer, PSNs that do not match (ERROR and a fatal event at the bound: every
# refusal is the same); a good pair alongside. From the initial namespace, where host A's
# device is visible but its netdev is not, RTR with an address vector is refused.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x gid_errors; two_hosts_down; }
SIW_RS_PARAMS="gid_connect_timeout_ms=3000"
two_hosts siw_rs siw_rs
g=$(wait_gid_index "$DEV_A" 192.168.77.1)
out=$(on_a timeout 300 "$TESTBIN"/gid_errors -d "$DEV_A" -g "$g" -U 192.168.77.99 -t 3000 2>&1) ||
	fail "gid_errors: $out"
echo "$out" | sed 's/^/# /'
has 'all [0-9]+ cases ok' "$out" || fail "gid_errors: $out"
out=$(timeout 60 "$TESTBIN"/gid_errors -d "$DEV_A" -g "$g" -U 192.168.77.99 -t 3000 \
	-c other_netns 2>&1) || fail "gid_errors from the initial namespace: $out"
echo "$out" | sed 's/^/# /'
has 'all 1 cases ok' "$out" || fail "gid_errors from the initial namespace: $out"
