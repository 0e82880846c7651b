# A process that lies (issue 13): selftests/hostile/ring_fuzz.c writes nonsense into the
# rings siw_rs maps into it (SQEs, RQEs, CQEs, the CQ control word; elements changed after
# the doorbell), sends real traffic into it between two of its QPs (connected by modify_qp on
# one device), and calls verbs with out-of-range arguments, for 1500 seeded rounds. The
# kernel may answer with errnos and error completions only (the suite checks its log after
# every test); meanwhile an rping of another process on host B's device must be unaffected,
# every byte verified, and rmmod must complete afterwards. SEED=N repeats a run.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ring_fuzz; pkill -x rping; two_hosts_down; }
two_hosts siw_rs siw_rs
g=$(wait_gid_index "$DEV_A" 192.168.77.1)
seed=${SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
log "ring_fuzz seed $seed (SEED=$seed repeats it)"
on_a timeout 600 "$TESTBIN"/ring_fuzz -d "$DEV_A" -g "$g" -s "$seed" -n 1500 >/tmp/ring-fuzz.out 2>&1 &
fuzz=$!
# Another process's traffic, over the other device and the same veth, meanwhile.
rping_sizes 20 4096
rc=0
wait $fuzz || rc=$?
# Its exit status says how it ended (1: a check failed, 3: a watchdog fired, above 128: a
# signal); its FAIL lines say why, wherever they are among the progress lines.
[ $rc = 0 ] || fail "ring_fuzz (seed $seed) exited with $rc: $(grep -E '^FAIL' /tmp/ring-fuzz.out | head -n 5);" \
	"last lines: $(tail -n 5 /tmp/ring-fuzz.out)"
out=$(cat /tmp/ring-fuzz.out)
has '^ring_fuzz: .*ring faults 0; done$' "$out" || fail "ring_fuzz (seed $seed): $(tail -n 20 <<<"$out")"
has '^ring_fuzz: teardown done$' "$out" || fail "ring_fuzz teardown (seed $seed): $(tail -n 5 <<<"$out")"
grep -E '^(round [0-9]*500|ring_fuzz)' <<<"$out" | sed 's/^/# /'
two_hosts_down
has '^siw_rs ' "$(lsmod)" && fail "siw_rs still loaded after the fuzzing"
true
