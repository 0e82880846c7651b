# siw_rs's listener for connections made by modify_qp (port 791, on each address of the
# device, as long as the device and the address are there): it answers only requests from
# privileged source ports (those siw_rs's initiators bind, which no unprivileged process can
# take), refuses one for a QP that does not exist with its reason (1: no such QP), and
# answers garbage with nothing. gid_connect_port=0 turns it off.
. "$ROOT/selftests/lib/common.sh"
cleanup() { two_hosts_down; }
two_hosts siw_rs siw_rs
peer() { on_a python3 "$ROOT/selftests/lib/hostile_peer.py" gid-request --addr 192.168.77.2 "$@" 2>&1; }
listening_in hostB 791
has '192\.168\.77\.2:791' "$(on_b ss -Htln)" || fail "no listener on 192.168.77.2:791: $(on_b ss -Htln)"
out=$(peer --to-qpn 999999 --src-port 40001)
has 'closed without a reply' "$out" || fail "a request from an unprivileged port was answered: $out"
out=$(peer --to-qpn 999999 --src-port 700)
has 'reply rev=2 reject=1 pd_len=16 reason=1' "$out" || fail "no refusal (no such QP): $out"
out=$(peer --garbage --src-port 701)
has 'closed without a reply' "$out" || fail "garbage was answered: $out"
log "unprivileged port: no answer; no such QP: refused with reason 1; garbage: no answer"
# The listener follows the address, and goes with the device.
ip -n hostB addr del 192.168.77.2/24 dev vb
for n in $(seq 50); do has '192\.168\.77\.2:791' "$(on_b ss -Htln)" || break; sleep 0.2; done
has '192\.168\.77\.2:791' "$(on_b ss -Htln)" && fail "the listener stayed after its address went"
ip -n hostB addr add 192.168.77.2/24 dev vb
listening_in hostB 791
on_b rdma link delete "$DEV_B"
[ -z "$(on_b ss -Htln 'sport = :791')" ] || fail "a listener outlived its device: $(on_b ss -Htln)"
# Off: no listener at all.
on_a rdma link delete "$DEV_A"
unload_siw_rs
SIW_RS_PARAMS="gid_connect_port=0" load_siw_rs
on_b rdma link add "$DEV_B" type siw_rs netdev vb
sleep 1
[ -z "$(on_b ss -Htln 'sport = :791')" ] || fail "gid_connect_port=0 still listens: $(on_b ss -Htln)"
