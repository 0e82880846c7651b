# A process names another process's QP by number (rdma_conn_param.qp_num) in
# rdma_connect() and in rdma_accept(), as the same user and as another (nobody): each is
# refused with EINVAL, as a QP that does not exist is, and changes nothing: the victim's
# QP then connects with its own rdma_connect() and its 4 KiB come back byte for byte
# (selftests/verbs/qp_hijack.c). Its QP number fits the rdma_cm's 24 bits.
. "$ROOT/selftests/lib/common.sh"
BIN=/tmp/qp_hijack.$$
FIFO=/tmp/qp_hijack.$$.fifo
cleanup() { pkill -x "qp_hijack.$$"; rm -f "$BIN" "$FIFO"; two_hosts_down; }
two_hosts siw_rs siw_rs
# Another user must be able to run it: the run's binary directory is private.
install -m 755 "$TESTBIN/qp_hijack" "$BIN"
mkfifo "$FIFO"
on_b "$BIN" server 192.168.77.2 7471 >/tmp/qp_hijack-s.out 2>&1 &
srv=$!
listening_b 7471
on_a "$BIN" victim 192.168.77.2 7471 "$FIFO" >/tmp/qp_hijack-v.out 2>&1 &
vic=$!
qpn=
for _ in $(seq 300); do
	qpn=$(sed -n 's/^qpn //p' /tmp/qp_hijack-v.out)
	[ -n "$qpn" ] && break
	kill -0 "$vic" 2>/dev/null || break
	nap 0.1
done
[ -n "$qpn" ] || fail "the victim printed no QP number: $(cat /tmp/qp_hijack-v.out)"
[ "$qpn" -gt 0 ] && [ "$qpn" -lt 16777216 ] || fail "QP number $qpn is not 24 bits"
log "the victim's QP: $qpn"
port=7480
for who in root nobody; do
	as=()
	[ "$who" = nobody ] && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	out=$(on_a "${as[@]}" "$BIN" connect 192.168.77.2 7471 "$qpn" 2>&1) ||
		fail "rdma_connect as $who naming QP $qpn: $out"
	has '^refused: Invalid argument$' "$out" || fail "rdma_connect as $who: $out"
	log "rdma_connect as $who: $out"
	port=$((port + 1))
	on_a "${as[@]}" "$BIN" accept 192.168.77.1 "$port" "$qpn" >/tmp/qp_hijack-a.out 2>&1 &
	acc=$!
	listening_in hostA "$port"
	out=$(on_b "$BIN" client 192.168.77.1 "$port" 2>&1) || fail "a connection to $who's listener: $out"
	wait "$acc" || fail "rdma_accept as $who naming QP $qpn: $(cat /tmp/qp_hijack-a.out)"
	out=$(cat /tmp/qp_hijack-a.out)
	has '^refused: Invalid argument$' "$out" || fail "rdma_accept as $who: $out"
	log "rdma_accept as $who: $out"
done
echo go >"$FIFO"
wait "$vic" || fail "the victim: $(cat /tmp/qp_hijack-v.out)"
wait "$srv" || fail "the server: $(cat /tmp/qp_hijack-s.out)"
log "$(tail -1 /tmp/qp_hijack-v.out)"
