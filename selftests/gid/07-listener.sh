# siw_rs's listener for connections made by modify_qp (port 791): open on an address only
# while a QP waits there in RTR or RTS, closed when none does. Requests for a QP that does
# not exist, one in INIT, one only in RTR, one waiting for another peer QP, with a wrong
# PSN, or garbage all get one refusal, octet for octet the same; the request with the
# PSN the QP expects, from the peer it waits for, is accepted from an unprivileged port
# (the initiator's PSN is what authenticates it) and its Send arrives intact, after 300
# fuzzed requests (the good one changed at random) were all refused alike.
# gid_connect_port=0: RTR with an address vector is refused.
. "$ROOT/selftests/lib/common.sh"
cleanup() {
	exec 3>&- 4>&- 2>/dev/null
	pkill -x gid_wait
	rm -f /tmp/gw.in /tmp/gw4.in
	two_hosts_down
}
# The QPs wait through the whole sequence of requests (a minute and more under TCG).
SIW_RS_PARAMS="gid_connect_timeout_ms=600000"
two_hosts siw_rs siw_rs
peer() { on_a python3 "$ROOT/selftests/lib/hostile_peer.py" gid-request --addr 192.168.77.2 "$@" 2>&1; }
l791() { on_b ss -Htln 'sport = :791'; }
# until_quiet: wait (10 s) until nothing listens at 791 in host B.
until_quiet() {
	local n
	for n in $(seq 50); do [ -z "$(l791)" ] && return 0; sleep 0.2; done
	fail "$1: still listening: $(l791)"
}
# until_line FILE REGEX: wait (60 s) for a line of FILE matching REGEX.
until_line() {
	local n
	for n in $(seq 300); do has "$2" "$(cat "$1")" && return 0; sleep 0.2; done
	fail "no '$2' in $1: $(cat "$1")"
}
gb=$(wait_gid_index "$DEV_B" 192.168.77.2)
sleep 1
[ -z "$(l791)" ] || fail "a device nobody uses listens: $(l791)"
log "a fresh device: no listener"

# W waits for QP 4242 of 192.168.77.1 with rq_psn 0x5a5a5a; I stays in INIT beside it.
rm -f /tmp/gw.in /tmp/gw4.in
mkfifo /tmp/gw.in /tmp/gw4.in
on_b "$TESTBIN"/gid_wait -d "$DEV_B" -g "$gb" -D 192.168.77.1 -q 4242 -r 0x5a5a5a \
	-s 0x123456 -n 4096 -w 120000 </tmp/gw.in >/tmp/gw.out 2>&1 &
exec 3>/tmp/gw.in
until_line /tmp/gw.out '^ready'
read -r _ W I < <(grep '^qpn' /tmp/gw.out)
listening_in hostB 791 || fail "no listener while a QP waits: $(cat /tmp/gw.out)"
# The PSNs authenticate: nobody reads them back (nldev shows query_qp's to every user).
res=$(on_b rdma resource show qp 2>&1 || true)
res=$(grep -E "lqpn $W( |$)" <<<"$res" || true)
has "lqpn $W" "$res" || fail "rdma resource does not show W: $(on_b rdma resource show qp 2>&1)"
! has "$((0x5a5a5a))|$((0x123456))" "$res" || fail "rdma resource shows W's PSNs: $res"
# R waits too, for QP 5151, but only in RTR (and for no receive: it only holds its QP).
on_b "$TESTBIN"/gid_wait -d "$DEV_B" -g "$gb" -D 192.168.77.1 -q 5151 -r 0x777 \
	-s 0x888 -n 64 -w 1 -R </tmp/gw4.in >/tmp/gw4.out 2>&1 &
exec 4>/tmp/gw4.in
until_line /tmp/gw4.out '^ready'
read -r _ R _ < <(grep '^qpn' /tmp/gw4.out)
none=1
while [ "$none" = "$W" ] || [ "$none" = "$I" ] || [ "$none" = "$R" ]; do none=$((none + 1)); done
declare -A ask=(
	[wrong-psn]="--to-qpn $W --from-qpn 4242 --psn 0x5a5a5b"
	[zero-psn]="--to-qpn $W --from-qpn 4242 --psn 0"
	[other-peer-qp]="--to-qpn $W --from-qpn 4243 --psn 0x5a5a5a"
	[in-init]="--to-qpn $I --from-qpn 4242 --psn 0x5a5a5a"
	[only-rtr]="--to-qpn $R --from-qpn 5151 --psn 0x777"
	[no-such-qp]="--to-qpn $none --from-qpn 4242 --psn 0x5a5a5a"
	[garbage]="--garbage"
)
first=
for k in "${!ask[@]}"; do
	# shellcheck disable=SC2086
	out=$(peer ${ask[$k]})
	has 'reply rev=2 reject=1 pd_len=20 bytes=' "$out" || fail "$k: not refused: $out"
	b=$(sed -n 's/.*bytes=\([0-9a-f]*\).*/\1/p' <<<"$out")
	[ -z "$first" ] && first=$b
	[ "$b" = "$first" ] || fail "$k: refused differently: $b, not $first"
done
log "refusals for ${!ask[*]}: all $first"
# The good request with its private data changed at random, or random frames: never
# accepted, every answer the same refusal (or none, for what is not an MPA request).
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
t=$SECONDS
out=$(peer --to-qpn "$W" --from-qpn 4242 --psn 0x5a5a5a --fuzz 300 --seed "$seed")
has "^gid-fuzz: refused [0-9]+ other-reply 0 accepted 0 closed [0-9]+ refusal=$first\$" "$out" ||
	fail "gid fuzz (SEED=$seed): $out"
log "seed $seed: $(grep '^gid-fuzz' <<<"$out" | cut -d' ' -f1-9), $((SECONDS - t)) s"
has '^ready' "$(cat /tmp/gw.out)" && ! has '^(received|receive completed)' "$(cat /tmp/gw.out)" ||
	fail "W was disturbed by the refused requests: $(cat /tmp/gw.out)"

# The peer W waits for, with its PSN, from an ephemeral port.
out=$(peer --to-qpn "$W" --from-qpn 4242 --psn 0x5a5a5a --send 4096)
has 'reply rev=2 reject=0' "$out" && has 'accepted psn=0x123456' "$out" ||
	fail "the right request was not accepted with W's sq_psn: $out"
port=$(sed -n 's/.*from port \([0-9]*\).*/\1/p' <<<"$out")
[ "$port" -ge 1024 ] || fail "the test's own source port $port is privileged"
until_line /tmp/gw.out '^(received|receive completed|no receive)'
has '^received 4096 bytes, pattern ok' "$(cat /tmp/gw.out)" || fail "W: $(cat /tmp/gw.out)"
log "accepted from port $port with the right PSN; 4096 bytes arrived intact"
# R still waits: the listener stays; R gone, nobody waits: it closes.
[ -n "$(l791)" ] || fail "the listener closed while R still waits"
echo >&4
exec 4>&-
until_quiet "after the last waiting QP went"
out=$(peer --to-qpn "$W" --from-qpn 4242 --psn 0x5a5a5a)
has '^no connection' "$out" || fail "a request got through with nobody waiting: $out"
echo >&3
exec 3>&-
wait
log "no listener once no QP waits"

# A QP waiting: the listener goes with its address.
on_b "$TESTBIN"/gid_wait -d "$DEV_B" -g "$gb" -D 192.168.77.1 -q 4242 -r 1 -s 2 -n 64 \
	-w 1 </tmp/gw.in >/tmp/gw.out 2>&1 &
exec 3>/tmp/gw.in
until_line /tmp/gw.out '^ready'
listening_in hostB 791 || fail "no listener for the second waiting QP"
ip -n hostB addr del 192.168.77.2/24 dev vb
until_quiet "after its address went"
echo >&3
exec 3>&-
wait
ip -n hostB addr add 192.168.77.2/24 dev vb
# Off: no connection made by modify_qp at all.
on_a rdma link delete "$DEV_A"
on_b rdma link delete "$DEV_B"
unload_siw_rs
SIW_RS_PARAMS="gid_connect_port=0" load_siw_rs
on_b rdma link add "$DEV_B" type siw_rs netdev vb
gb=$(wait_gid_index "$DEV_B" 192.168.77.2)
out=$(on_b "$TESTBIN"/gid_wait -d "$DEV_B" -g "$gb" -D 192.168.77.1 -q 4242 -r 1 -s 2 -n 64 \
	-w 100 </dev/null 2>&1) && fail "gid_connect_port=0: RTR with an AV succeeded: $out"
has 'modify_qp RTR: Operation not supported' "$out" || fail "gid_connect_port=0: $out"
[ -z "$(l791)" ] || fail "gid_connect_port=0 still listens: $(l791)"
