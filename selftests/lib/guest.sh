#!/usr/bin/env bash
# Runs inside the VM: every test of one suite, as TAP. After each test the kernel log it
# produced is checked for warnings, BUGs, oopses, lockdep and KASAN reports; at the end
# kmemleak is asked to scan. The last line marks that the suite ran to completion.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
suite=$1 filter=${2:-}
export ROOT PATH="/usr/sbin:/sbin:$PATH"
cd "$ROOT" || exit 1

bad_re='WARNING:|BUG:|Oops|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|KASAN|UBSAN|kmemleak|Call Trace|RIP:|refcount_t:|list_del corruption|sleeping function called from invalid context'

mount -t debugfs none /sys/kernel/debug 2>/dev/null
kmemleak=/sys/kernel/debug/kmemleak
# Forget what boot left unreferenced: only leaks made by the tests count.
[ -w "$kmemleak" ] && echo clear >"$kmemleak"

tests=()
for t in "$ROOT/selftests/$suite"/*.sh; do
	[ -n "$filter" ] && ! [[ "$t" =~ $filter ]] && continue
	tests+=("$t")
done
echo "TAP version 13"
echo "1..$(( ${#tests[@]} + 1 ))"
n=0
for t in "${tests[@]}"; do
	n=$((n + 1))
	name=$(basename "$t" .sh)
	before=$(dmesg | wc -l)
	start=$(date +%s)
	out=$(cd /tmp && timeout "${SIW_RS_TEST_TIMEOUT:-600}" bash "$t" 2>&1)
	rc=$?
	secs=$(( $(date +%s) - start ))
	klog=$(dmesg | tail -n +"$((before + 1))")
	bad=$(grep -E "$bad_re" <<<"$klog")
	# A test may name, in /tmp/siw_rs-known-report, one report of an upstream bug outside
	# siw_rs (the C siw's as a peer, or a kernel consumer's). It is excused only when it is
	# the only report in the test's log and its first lines match; lockdep then stays off
	# for the rest of the boot, so such a test must come last in its suite.
	if [ -n "$bad" ] && [ -s /tmp/siw_rs-known-report ]; then
		heads=$(grep -E 'WARNING:|BUG:|Oops|general protection fault|KASAN|UBSAN|refcount_t:|list_del corruption' <<<"$klog")
		first=$(grep -nE -m1 "$bad_re" <<<"$klog" | cut -d: -f1)
		if [ "$(wc -l <<<"$heads")" = 1 ] &&
			grep -Eq -- "$(cat /tmp/siw_rs-known-report)" <<<"$(tail -n +"$first" <<<"$klog" | head -n 12)"; then
			echo "# $name: excused a known upstream report: $heads"
			bad=
		fi
	fi
	rm -f /tmp/siw_rs-known-report
	if [ $rc = 0 ] && [ -z "$bad" ]; then
		# Its time (under TCG): where the suites' budget goes (.ci/run has 80 minutes).
		echo "ok $n - $name ($secs s)"
		# A passing test's own "# " lines, when asked for (make fuzz-vm: its figures); its
		# "# retried: " lines always (a retry that passed must still be seen).
		if [ -n "${SIW_RS_VERBOSE:-}" ]; then grep '^# ' <<<"$out" | sed 's/^/#   /' || true
		else grep '^# retried: ' <<<"$out" | sed 's/^/#   /' || true; fi
	else
		echo "not ok $n - $name (exit $rc, $secs s)"
		sed 's/^/#   /' <<<"$out" | tail -n 40
		if [ -n "$bad" ]; then
			# From a little before the first report on: its head names the culprit.
			first=$(grep -nE -m1 "$bad_re" <<<"$klog" | cut -d: -f1)
			echo "#   kernel log:"
			tail -n +"$(( first > 5 ? first - 5 : 1 ))" <<<"$klog" | head -n 80 | sed 's/^/#   | /'
		fi
	fi
done

n=$((n + 1))
if [ -r "$kmemleak" ]; then
	# Objects must be unreferenced across two scans, a few seconds apart, to be reported.
	echo scan >"$kmemleak"; sleep 6; echo scan >"$kmemleak"
	leaks=$(cat "$kmemleak")
	if [ -z "$leaks" ]; then
		echo "ok $n - kmemleak: no leaks"
	else
		echo "not ok $n - kmemleak: leaks reported"
		sed 's/^/#   /' <<<"$leaks" | head -n 60
	fi
else
	echo "not ok $n - kmemleak: /sys/kernel/debug/kmemleak not available"
fi
echo "# siw_rs-suite-complete"
