# The hostile peer against a kernel consumer (issue 13): selftests/lib/frame_fuzz.py fuzzes
# selftests/hostile/kfuzz/kfuzz_target.ko, which takes every connection as kernel ULPs do
# (kernel QP and CQ, completions in softirq, receives through the PD's local DMA lkey, a
# 64 KiB MR made by fast registration, a second one registered and invalidated with
# LOCAL_INV before any traffic; its Send "ready" tells the peer the MRs are in place).
# Besides what 09 sends, the peer invalidates the live MR with a Send with Invalidate (the
# target must count each as an invalidating receive) and must then be refused a Write to
# it (Terminate or close), invalidates the dead one again (allowed), and, as the
# target never reposts its receives, every Send beyond them must be Terminated; more Read
# Requests than the announced IRD behind a zero window must be Terminated too. FUZZ_FRAMES
# frames (default 100000, every one sent; FUZZ_SECONDS, default 0, bounds the time instead),
# seeded (SEED=N repeats a run). Afterwards:
# every connection the target took was released (none open), no verbs call failed where
# it must not, an rping on the device, rmmod of the target and of siw_rs, unreclaimable
# slab back; the suite checks the kernel log and kmemleak.
. "$ROOT/selftests/lib/common.sh"
KF=$ROOT/selftests/hostile/kfuzz/kfuzz_target.ko
P=/sys/module/kfuzz_target/parameters
cleanup() { pkill -f frame_fuzz.py; pkill -x rping; rmmod kfuzz_target 2>/dev/null; two_hosts_down; }
counters() {
	local c out=
	for c in requests established ended open recvs invalidated error_wcs failures; do
		out+="$c $(cat $P/$c) "
	done
	echo "$out"
}
[ -f "$KF" ] || fail "kfuzz_target.ko not built (selftests/run builds it)"
two_hosts siw_rs siw_rs
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
frames=${FUZZ_FRAMES:-100000}
secs=${FUZZ_SECONDS:-0}
log "frame_fuzz seed $seed, $frames frames against kfuzz_target (SEED=$seed repeats it)"
slab0=$(unreclaimable_kb)
on_b insmod "$KF" addr=192.168.77.2 || fail "insmod kfuzz_target"
listening_b 7181
start=$(date +%s)
rc=0
on_a python3 "$ROOT/selftests/lib/frame_fuzz.py" --addr 192.168.77.2 --port 7181 \
	--seed "$seed" --frames "$frames" --seconds "$secs" >/tmp/kframe-fuzz.out 2>&1 || rc=$?
took=$(( $(date +%s) - start ))
out=$(grep -v '^#' /tmp/kframe-fuzz.out || true)
log "$(head -n 30 <<<"$out")"
[ $rc = 0 ] || fail "frame_fuzz (seed $seed) failed: $(grep -E '^(FAIL|Traceback|  File|[A-Za-z]*Error)' /tmp/kframe-fuzz.out | head -n 10)"
has '^frame_fuzz: .* failures 0 ' "$out" || fail "frame_fuzz (seed $seed) printed no summary"
sent=$(sed -nE 's/^frame_fuzz: .* frames ([0-9]+) .*/\1/p' <<<"$out")
[ "${sent:-0}" -ge "$frames" ] || [ "$secs" != 0 ] ||
	fail "frame_fuzz (seed $seed) sent ${sent:-no} frames of the $frames asked for"
has 'send-invalidate-then-write=' "$out" || fail "the run never invalidated the live MR"
has 'conn-ird-overflow=' "$out" || fail "the run never overflowed the IRD"
# RFC 7306: half the connections offered it; atomics (checked value by value) and
# Immediate Data went in their valid traffic.
for k in valid-atomic valid-imm; do
	has "$k=[1-9]" "$out" || fail "the run had no $k"
done
log "RFC 7306: $(grep -oE '(fpdu-[a-z0-9-]*7306|valid-atomic|valid-imm|atomic-[a-z-]*|imm-payload)=[0-9]+' <<<"$out" | tr '\n' ' ')"
# Every connection ended: the last ones' DISCONNECTED events may still be on their way.
for _ in $(seq 30); do [ "$(cat $P/open)" = 0 ] && break; sleep 1; done
log "kfuzz_target: $(counters)($took s)"
[ "$(cat $P/open)" = 0 ] || fail "connections the peer had closed were still open at the target: $(counters)"
[ "$(cat $P/failures)" = 0 ] || fail "verbs calls failed in kfuzz_target: $(dmesg | grep kfuzz_target | tail -n 10)"
[ "$(cat $P/requests)" -gt 0 ] && [ "$(cat $P/established)" -gt 0 ] ||
	fail "kfuzz_target took no connection: $(counters)"
# Each Send with Invalidate of the live MR (then a Write to it, which must be refused) or of
# the dead one had a receive free: each must have completed as an invalidation. (Bit
# flips may add one; nothing may take one away.)
class_count() { local n; n=$(grep -o "$1=[0-9]*" <<<"$out" | cut -d= -f2) || true; echo "${n:-0}"; }
want=$(( $(class_count send-invalidate-then-write) + $(class_count send-invalidate-dead) ))
log "$want Sends with Invalidate of this PD's MRs sent, $(cat $P/invalidated) received as such"
[ "$(cat $P/invalidated)" -ge "$want" ] ||
	fail "$want Sends with Invalidate of the target's MRs, but only $(cat $P/invalidated) receives invalidated"
rping_sizes 10 4096
rmmod kfuzz_target || fail "rmmod kfuzz_target"
two_hosts_down
unloaded_slab_back "$slab0"
