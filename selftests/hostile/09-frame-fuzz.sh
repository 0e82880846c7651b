# A hostile peer, in the VM (issue 13): selftests/lib/frame_fuzz.py fuzzes a siw_rs
# listener (selftests/hostile/fuzz_target.c, a user-space QP per connection, with a live
# MR whose bytes it knows, a deregistered STag and posted receives) over raw TCP: valid
# traffic (Writes, Sends, Read Requests whose responses it checks byte for byte), then
# hostile frames of every kind, attacks on the MPA negotiation and on the connection;
# FUZZ_FRAMES frames (default 100000), seeded (SEED=N repeats a run). The fuzzer fails on
# a Terminate during valid traffic, wrong Read Response data, or a fatal frame that was
# neither terminated nor closed within 5 s, and when it sent fewer frames than asked.
# FUZZ_SECONDS (default 0: none) bounds the run's time instead, for a quick look.
# Afterwards: every connection the listener took has ended (none left open), the listener's device still serves an rping (every byte
# verified), unreclaimable slab is back near where it started, and siw_rs unloads; the
# suite checks the kernel log (no warning, BUG, oops, lockdep, KASAN) and kmemleak.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x fuzz_target; pkill -f frame_fuzz.py; pkill -x rping; two_hosts_down; }
two_hosts siw_rs siw_rs
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
frames=${FUZZ_FRAMES:-100000}
secs=${FUZZ_SECONDS:-0}
log "frame_fuzz seed $seed, $frames frames (SEED=$seed repeats it)"
slab0=$(unreclaimable_kb)
on_b "$TESTBIN"/fuzz_target -a 192.168.77.2 >/tmp/fuzz-target.out 2>&1 &
tgt=$!
listening_b 7180
start=$(date +%s)
rc=0
on_a python3 "$ROOT/selftests/lib/frame_fuzz.py" --addr 192.168.77.2 --seed "$seed" \
	--frames "$frames" --seconds "$secs" >/tmp/frame-fuzz.out 2>&1 || rc=$?
took=$(( $(date +%s) - start ))
out=$(grep -v '^#' /tmp/frame-fuzz.out || true)
log "$(head -n 30 <<<"$out")"
[ $rc = 0 ] || fail "frame_fuzz (seed $seed) failed: $(grep -E '^(FAIL|Traceback|  File|[A-Za-z]*Error)' /tmp/frame-fuzz.out | head -n 10)"
has '^frame_fuzz: .* failures 0 ' "$out" || fail "frame_fuzz (seed $seed) printed no summary"
sent=$(sed -nE 's/^frame_fuzz: .* frames ([0-9]+) .*/\1/p' <<<"$out")
[ "${sent:-0}" -ge "$frames" ] || [ "$secs" != 0 ] ||
	fail "frame_fuzz (seed $seed) sent ${sent:-no} frames of the $frames asked for"
# RFC 7306: half the connections offered it; atomics (checked value by value) and
# Immediate Data went in their valid traffic.
for k in valid-atomic valid-imm; do
	has "$k=[1-9]" "$out" || fail "the run had no $k"
done
log "RFC 7306: $(grep -oE '(fpdu-[a-z0-9-]*7306|valid-atomic|valid-imm|atomic-[a-z-]*|imm-payload)=[0-9]+' <<<"$out" | tr '\n' ' ')"
fuzz_target_end $tgt 5 "$took s"
rping_sizes 10 4096
two_hosts_down
unloaded_slab_back "$slab0"
