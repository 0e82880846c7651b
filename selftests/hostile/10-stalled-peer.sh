# A peer that stops reading (issue 13, bounded resources): it asks for a 64 KiB MR with
# every Read Request the IRD allows, through a 4 KiB receive buffer, and then reads nothing,
# so siw_rs's TCP sends into a closed window while the QP has work outstanding.
# 1. With peer_timeout_ms=3000 the connection is given up (TCP_USER_TIMEOUT covers zero
#    window probes) and the listener sees it end, a few seconds after the stall began;
#    the C siw would hold it for ever.
# 2. With the default (60 s), while another such peer holds on: destroying the QP (the
#    listener process ends) is prompt, and so are `rdma link delete` and `rmmod siw_rs`
#    after it, the peer still holding its end. (With the process still alive, deleting
#    the device waits until the process closes it, as with the C siw: neither implements
#    disassociate_ucontext, so ib_uverbs waits for its files before rdma_cm can tell the
#    process DEVICE_REMOVAL.)
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -x fuzz_target; pkill -f hostile_peer.py; two_hosts_down; }

# wait_line FILE REGEX SECS: wait until FILE has a line matching REGEX; fails after SECS.
wait_line() {
	local n
	for n in $(seq $(( $3 * 10 ))); do
		has "$2" "$(cat "$1" 2>/dev/null)" && return 0
		sleep 0.1
	done
	fail "no '$2' in $1 after $3 s: $(cat "$1")"
}
# stall OUT HOLD: a stalled peer towards host B's listener, in the background.
stall() {
	on_a python3 "$PEER" stall --addr 192.168.77.2 --hold "$2" >"$1" 2>&1 &
	wait_line "$1" '^stalled' 20
	# Its receive window is shut: host B's socket towards it has data it cannot send.
	local q n
	for n in $(seq 50); do
		q=$(on_b ss -Htn 'sport = :7180' | awk '{ print $3; exit }')
		[ "${q:-0}" -gt 0 ] && break
		sleep 0.2
	done
	[ "${q:-0}" -gt 0 ] || fail "host B has nothing queued towards the stalled peer: A: $(on_a ss -tni) B: $(on_b ss -tni); $(cat "$1" /tmp/fuzz-target.out)"
	log "stalled: $(head -n 1 "$1"); $q bytes queued at host B"
}

SIW_RS_PARAMS="peer_timeout_ms=3000" two_hosts siw_rs siw_rs
on_b "$TESTBIN"/fuzz_target -a 192.168.77.2 -v >/tmp/fuzz-target.out 2>&1 &
listening_b 7180
# The timeout runs from when host B's data first sat unsent, which is after t0 (the stalled
# peer not yet started) and before `stall` returns (the queue seen): the end must come
# 3000 ms after t0 at the earliest. Measured only from `stall`'s return, the lower bound
# would shrink by however long that took to see the stall (1.6 s once, on a slow machine).
t0=$(date +%s%N)
stall /tmp/stall1.out 40
start=$(date +%s%N)
wait_line /tmp/fuzz-target.out '^fuzz_target: ended 1 ' 30
end=$(date +%s%N)
took=$(( (end - start) / 1000000 )) since=$(( (end - t0) / 1000000 ))
log "peer_timeout_ms=3000: $(grep '^fuzz_target: ended 1 ' /tmp/fuzz-target.out), $took ms after the stall was seen, $since ms after the peer started"
[ "$since" -ge 3000 ] || fail "the connection ended $since ms after the stalled peer started, before the peer timeout (3000 ms) could have"
pkill -f hostile_peer.py
pkill -TERM -x fuzz_target
wait_line /tmp/fuzz-target.out 'open 0 ' 10
two_hosts_down
has '^siw_rs ' "$(lsmod)" && fail "siw_rs still loaded"

two_hosts siw_rs siw_rs
on_b "$TESTBIN"/fuzz_target -a 192.168.77.2 -v >/tmp/fuzz-target.out 2>&1 &
listening_b 7180
stall /tmp/stall2.out 120
sleep 3
has '^fuzz_target: ended' "$(cat /tmp/fuzz-target.out)" && fail "the default peer timeout ended the stall in 3 s"
start=$(date +%s%N)
pkill -TERM -x fuzz_target
wait_line /tmp/fuzz-target.out '^fuzz_target: requests 1 established 1 ended 0 open 1 ' 10
log "QP of a stalled connection destroyed in $(( ($(date +%s%N) - start) / 1000000 )) ms"
start=$(date +%s%N)
on_b timeout 20 rdma link delete "$DEV_B" || fail "rdma link delete with a stalled peer: timed out or failed"
on_a timeout 20 rdma link delete "$DEV_A" || fail "rdma link delete (host A): timed out or failed"
timeout 20 rmmod siw_rs || fail "rmmod with a stalled peer still connected: timed out or failed"
log "devices deleted and siw_rs unloaded in $(( ($(date +%s%N) - start) / 1000000 )) ms, the peer still holding its end"
has 'held' "$(cat /tmp/stall2.out)" && fail "the stalled peer ended before the test did"
true
