# A hostile MPA peer sends frames with more private data than the iw_cm can carry (its
# events count it in a u8): issue 13, defect 1. Before the fix a 256..260-byte Reply passed
# siw_rs's reader, the CONNECT_REPLY upcall failed and was dropped, and the initiator's
# cm_id stayed in CONN_SENT: the next close hit iwcm.c's BUG(), rping hung in D state and
# neither `rdma link delete` nor rmmod completed.
#
# Initiator: rping (siw_rs, host A) connects to a raw-TCP responder on host B that answers
# with a Reply or Reject of 255 (fits), 256 or 260 bytes. rping must see ESTABLISHED for
# 255, REJECTED with ECONNREFUSED (-111) for a 255-byte Reject, REJECTED with ECONNRESET
# (-104) for anything larger, and all within 20 s while the peer keeps the connection open.
# Responder: a raw-TCP initiator sends requests of 255 and 256 bytes to an rping server
# (siw_rs, host B): 255 is accepted, 256 answered with a Reject frame, not a silent close.
# Afterwards a normal rping works, and `rdma link delete` and rmmod complete promptly.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs

# ULP private data, reply revision, reject?, what rping must report
for c in "255 2 no RDMA_CM_EVENT_ESTABLISHED" \
	"256 2 no RDMA_CM_EVENT_REJECTED, error -104" \
	"260 1 no RDMA_CM_EVENT_REJECTED, error -104" \
	"255 2 yes RDMA_CM_EVENT_REJECTED, error -111" \
	"256 2 yes RDMA_CM_EVENT_REJECTED, error -104" \
	"260 1 yes RDMA_CM_EVENT_REJECTED, error -104"; do
	set -- $c
	len=$1 rev=$2 rej=$3
	shift 3
	want="$*"
	opt=()
	[ "$rej" = yes ] && opt=(--reject)
	# Accepted: hold briefly, the peer's close then ends rping. Else hold past rping's limit.
	hold=25
	[ "$want" = RDMA_CM_EVENT_ESTABLISHED ] && hold=3
	on_b python3 "$PEER" mpa-reply --addr 192.168.77.2 --pd-len "$len" --rev "$rev" \
		--hold "$hold" "${opt[@]}" >/tmp/peer.out 2>&1 &
	peer=$!
	listening_b 7174
	start=$(date +%s)
	rc=0
	out=$(on_a timeout 20 rping -c -a 192.168.77.2 -C 1 -S 64 -d 2>&1) || rc=$?
	took=$(( $(date +%s) - start ))
	# 124: timeout's exit status, rping hung.
	[ $rc != 124 ] || fail "reply $len rev $rev reject=$rej: rping hung: $out"
	[ "$want" = RDMA_CM_EVENT_ESTABLISHED ] || [ $rc != 0 ] ||
		fail "reply $len rev $rev reject=$rej: rping connected to a fake peer: $out"
	wait $peer || fail "peer ($len $rev $rej): $(cat /tmp/peer.out)"
	has 'sent reply' "$(cat /tmp/peer.out)" || fail "peer sent no reply: $(cat /tmp/peer.out)"
	has "$want" "$out" || fail "reply $len bytes rev $rev reject=$rej: rping did not report '$want' (after $took s): $out"
	if [ "$want" != RDMA_CM_EVENT_ESTABLISHED ]; then
		has RDMA_CM_EVENT_ESTABLISHED "$out" && fail "reply $len rev $rev reject=$rej: established: $out"
		[ "$took" -lt 15 ] || fail "reply $len rev $rev reject=$rej: rping took $took s"
	fi
	log "reply with $len bytes (rev $rev, reject=$rej): rping saw '$want' after $took s"
done

# The responder side: rping's server, a raw initiator.
for c in "255 0" "256 1"; do
	set -- $c
	on_b timeout 30 rping -s -a 192.168.77.2 -C 1 -S 64 >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a python3 "$PEER" mpa-request --addr 192.168.77.2 --pd-len "$1" 2>&1) ||
		fail "request peer: $out"
	has "^reply rev=2 reject=$2 " "$out" || fail "request with $1 bytes: $out"
	if [ "$2" = 1 ]; then
		# Refused before the ULP saw it: the server is still listening.
		listening_b 7174
		pkill rping
	fi
	wait $srv || true
	log "request with $1 bytes: $out"
done

rping_sizes 2 64
for d in "hostA $DEV_A" "hostB $DEV_B"; do
	set -- $d
	timeout 30 ip netns exec "$1" rdma link delete "$2" || fail "rdma link delete $2 did not complete"
done
DEV_A= DEV_B=
timeout 30 rmmod siw_rs || fail "rmmod siw_rs did not complete"
log "devices deleted and siw_rs unloaded"
