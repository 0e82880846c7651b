# The driver's KUnit tests (siw_rs/kunit.rs) run when siw_rs.ko loads, and all pass: ring
# indexing and posting, object limits, the completion mapping, the kernel-only RFC 7306
# element layout and atomic execution on a kernel word, fast registration, the Read
# watchdog's verdict, the OwnerLock a QP's state shares with the socket's callback.
. "$ROOT/selftests/lib/common.sh"
cleanup() { unload_siw_rs; }
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
unload_siw_rs
insmod "$SIW_RS_KO"
# suite:number of test cases
for s in siw_rs_queue:4 siw_rs_limit:1 siw_rs_cq:3 siw_rs_rfc7306:2 siw_rs_fastreg:4 siw_rs_watchdog:2 siw_rs_sync:3; do
	name=${s%%:*} want=${s##*:}
	f=/sys/kernel/debug/kunit/$name/results
	[ -r "$f" ] || fail "no KUnit results for $name ($f): did the suite run?"
	r=$(cat "$f")
	if has '^ *not ok ' "$r"; then
		echo "$r" >&2
		fail "KUnit suite $name has failures"
	fi
	# The cases' results are indented under the suite's; a skip would say "# SKIP".
	got=$(grep -cE '^\s+ok [0-9]+ [a-z0-9_]+$' <<<"$r")
	[ "$got" = "$want" ] ||
		{ echo "$r" >&2; fail "KUnit suite $name: $got cases passed, expected $want"; }
	has "^ok [0-9]+ $name$" "$r" || fail "KUnit suite $name did not report ok"
	log "$name: $want passed"
done
rmmod siw_rs
