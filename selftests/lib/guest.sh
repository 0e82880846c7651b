#!/usr/bin/env bash
# Runs inside the VM: the tests a plan file lists (selftests/run writes it), as TAP. A plan
# line is "SUITE PATH"; consecutive lines of one suite form a segment, which begins with
# "# siw_rs-suite SUITE" and ends, after kmemleak's scan, with "# siw_rs-suite-complete
# SUITE". After each test the kernel log it produced is checked for warnings, BUGs, oopses,
# lockdep and KASAN reports.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
plan=$1
export ROOT PATH="/usr/sbin:/sbin:$PATH"
cd "$ROOT" || exit 1

bad_re='WARNING:|BUG:|Oops|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|lockdep|KASAN|UBSAN|kmemleak|Call Trace|RIP:|refcount_t:|list_del corruption|sleeping function called from invalid context'
# The first line of each report (a report's later lines may match bad_re again).
head_re='WARNING:|BUG:|Oops|general protection fault|KASAN|UBSAN|refcount_t:|list_del corruption'

mount -t debugfs none /sys/kernel/debug 2>/dev/null
kmemleak=/sys/kernel/debug/kmemleak
# Forget what boot left unreferenced: only leaks made by the tests count. No automatic
# scans (one a minute after boot, then every ten): under TCG each takes seconds of both
# CPUs from the tests; the suite's two scans at the end find the same leaks.
[ -w "$kmemleak" ] && { echo clear >"$kmemleak"; echo scan=off >"$kmemleak"; }

# cpu_ticks: the CPUs' idle and iowait time so far, all their time (USER_HZ ticks), and the
# processes started since boot.
cpu_ticks() {
	awk '/^cpu / { i = $5 + $6; a = $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }
		/^processes / { p = $2 } END { print i, a, p }' /proc/stat
}

# libibverbs dlopens every provider /etc/libibverbs.d lists (17 on Debian) in each process
# that looks for devices: 0.8 s per rping, perftest or data_verify start under TCG. The VM
# has no RDMA hardware, and siw_rs and the C siw are both served by libsiw (driver_id
# RDMA_DRIVER_SIW), so the guest's /etc overlay lists siw alone; rdma-core itself is not
# touched, and `make demo` keeps the full list. device/02-link-lo checks that siw_rs's
# devices are found with every provider loaded.
if [ -f /etc/libibverbs.d/siw.driver ]; then
	mkdir -p /tmp/siw_rs-ibverbs.d
	mv /etc/libibverbs.d/*.driver /tmp/siw_rs-ibverbs.d/ 2>/dev/null
	cp /tmp/siw_rs-ibverbs.d/siw.driver /etc/libibverbs.d/
fi

# profile: where the traced test's time went, as "#" lines under its TAP line: the commands
# that took longest in all (a command's time runs from its trace line to the next one, so a
# function's time goes to the commands it ran; the last command's is not known, and shows
# as 0).
profile() {
	awk '/^\++[0-9]+\.[0-9]+ / {
		match($0, /^\++/); t = substr($0, RLENGTH + 1, index($0, " ") - RLENGTH - 1)
		if (k != "") { sum[k] += t - t0; cnt[k]++ }
		k = substr($0, index($0, " ") + 1, 70); t0 = t
	} END {
		if (k != "") { sum[k] += 0; cnt[k]++ }
		for (c in sum) printf "%8.2f s %5d x  %s\n", sum[c], cnt[c], c
	}' /tmp/siw_rs-trace | sort -rn | head -n "${SIW_RS_PROFILE_LINES:-25}" | sed 's/^/#   profile: /'
}

run_test() { # PATH: one test, its TAP line
	local t=$1 name out keep st rc secs start klog bad heads first idle idle0 idle1 all0 all1 procs0 procs1
	n=$((n + 1))
	name=$(basename "$t" .sh)
	# The test's kernel log starts empty. (Counting lines from a mark broke once the ring,
	# 128 KiB here, was full: the count stays put, and a report past it went unseen. What
	# the kernel logs between tests goes to the console, warnings and worse, as before.)
	dmesg -C
	start=$(date +%s)
	read -r idle0 all0 procs0 < <(cpu_ticks)
	local cmd=(bash "$t")
	# Traced, each command stamped with its start (bash takes PS4 from the environment
	# only when not root, hence set here; EPOCHREALTIME's decimal mark is the locale's).
	[ -n "${SIW_RS_PROFILE:-}" ] && cmd=(env LC_ALL=C bash -c \
		'exec 9>/tmp/siw_rs-trace; BASH_XTRACEFD=9; PS4="+\${EPOCHREALTIME} "; set -x; . "$0"' "$t")
	# Output to a file, not a pipe: a child left blocked in the kernel would hold a pipe
	# open, and the runner with it, until the VM's timeout; a file lets the run go on.
	(cd /tmp && timeout -k 10 "${SIW_RS_TEST_TIMEOUT:-600}" "${cmd[@]}" >/tmp/siw_rs-test.out 2>&1)
	rc=$?
	out=$(cat /tmp/siw_rs-test.out)
	keep=40
	if [ $rc = 124 ] || [ $rc = 137 ]; then
		keep=160
		# Timed out: what still waits, and where in the kernel (a hang's evidence).
		out+=$'\n'"timed out after ${SIW_RS_TEST_TIMEOUT:-600} s; processes in D state:"
		# /proc/PID/stat read with builtins: the state follows the ") " that ends the name.
		for p in /proc/[0-9]*; do
			read -r st 2>/dev/null <"$p/stat" || continue
			st=${st##*) }
			[ "${st%% *}" = D ] || continue
			out+=$'\n'"$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null) [${p#/proc/}]:"$'\n'"$(cat "$p/stack" 2>/dev/null)"
		done
		# The connections' and QPs' states as the RDMA core sees them, bounded in time (a
		# device being removed holds the lock the rdma tool's queries take).
		out+=$'\n'"rdma resource:"$'\n'"$(timeout -k 2 10 rdma resource show cm_id 2>&1)"
		out+=$'\n'"$(timeout -k 2 10 rdma resource show qp 2>&1)"
	fi
	secs=$(( $(date +%s) - start ))
	# How much of the test the guest's CPUs sat idle (waiting on a timeout, not computing),
	# and how many processes it started (each costs about 0.2 s under TCG).
	read -r idle1 all1 procs1 < <(cpu_ticks)
	idle=$(( 100 * (idle1 - idle0) / ((all1 - all0) > 0 ? all1 - all0 : 1) ))
	klog=$(dmesg)
	# A test that retried past a user-space tool's known crash (perftest's race, see
	# perftest_all in common.sh: the refused client crashes in librdmacm's error path) names
	# the tool, one a line, in /tmp/siw_rs-user-crashes. The kernel's line for that crash,
	# "traps: NAME[PID] general protection fault ip:.. sp:.. error:.. in librdmacm..", is a
	# user-space fault, not a kernel report: only such lines, of the named tools, are set
	# aside, and the test must still pass on its own checks.
	if [ -s /tmp/siw_rs-user-crashes ]; then
		while read -r tool; do
			klog=$(grep -Ev "\] traps: $tool\[[0-9]+\] general protection fault ip:[0-9a-f]+ sp:[0-9a-f]+ error:[0-9a-f]+ in librdmacm" <<<"$klog")
		done </tmp/siw_rs-user-crashes
	fi
	rm -f /tmp/siw_rs-user-crashes
	bad=$(grep -E "$bad_re" <<<"$klog")
	# A test may name, in /tmp/siw_rs-known-report, one report of an upstream bug outside
	# siw_rs (the C siw's as a peer, or a kernel consumer's). It is excused only when it is
	# the only report in the test's log and its first lines match; lockdep then stays off
	# for the rest of the boot, so selftests/run plans such a test last in its VM.
	if [ -n "$bad" ] && [ -s /tmp/siw_rs-known-report ]; then
		heads=$(grep -E "$head_re" <<<"$klog")
		first=$(grep -nE -m1 "$bad_re" <<<"$klog" | cut -d: -f1)
		if [ "$(wc -l <<<"$heads")" = 1 ] &&
			grep -Eq -- "$(cat /tmp/siw_rs-known-report)" <<<"$(tail -n +"$first" <<<"$klog" | head -n 12)"; then
			echo "# $name: excused a known upstream report: $heads"
			bad=
		fi
	fi
	rm -f /tmp/siw_rs-known-report
	if [ $rc = 4 ] && [ -z "$bad" ]; then
		# Skipped (kselftest's exit code 4), with the reason its "SKIP: " line gives.
		echo "ok $n - $name # SKIP $(sed -n 's/^SKIP: //p' <<<"$out" | tail -n 1)"
	elif [ $rc = 0 ] && [ -z "$bad" ]; then
		# Its time (under TCG): where the suites' budget goes (.ci/run has 80 minutes).
		echo "ok $n - $name ($secs s, $idle% idle, $((procs1 - procs0)) processes)"
		# A passing test's own "# " lines, when asked for (make fuzz-vm: its figures); its
		# "# retried: " lines always (a retry that passed must still be seen).
		if [ -n "${SIW_RS_VERBOSE:-}" ]; then grep '^# ' <<<"$out" | sed 's/^/#   /' || true
		else grep '^# retried: ' <<<"$out" | sed 's/^/#   /' || true; fi
	else
		echo "not ok $n - $name (exit $rc, $secs s)"
		sed 's/^/#   /' <<<"$out" | tail -n "$keep"
		if [ -n "$bad" ]; then
			# From a little before the first report on: its head names the culprit.
			first=$(grep -nE -m1 "$bad_re" <<<"$klog" | cut -d: -f1)
			echo "#   kernel log:"
			tail -n +"$(( first > 5 ? first - 5 : 1 ))" <<<"$klog" | head -n 80 | sed 's/^/#   | /'
			# Later reports' heads too (at most four): a second report, past the first's
			# 80 lines, may be the one that explains a hang.
			grep -nE "$head_re" <<<"$klog" |
				awk -F: -v f="$first" '$1 > f + 80 { print $1 }' | head -n 4 | while read -r ln; do
				echo "#   kernel log, line $ln:"
				tail -n +"$ln" <<<"$klog" | head -n 30 | sed 's/^/#   | /'
			done
		elif [ -n "$klog" ]; then
			# No report, but what the kernel said during the test (a connection's end,
			# the C siw's warnings about what it received) is often the failure's cause.
			echo "#   kernel log, the test's last 25 lines:"
			tail -n 25 <<<"$klog" | sed 's/^/#   | /'
		fi
	fi
	# Under the test's TAP line and report.
	if [ -n "${SIW_RS_PROFILE:-}" ]; then profile; fi
}

# suite_end SUITE: kmemleak's verdict on the segment's tests, and the segment's end mark.
suite_end() {
	local leaks start=$SECONDS
	n=$((n + 1))
	if [ -r "$kmemleak" ]; then
		# Objects must be unreferenced across two scans, a few seconds apart, to be reported.
		echo scan >"$kmemleak"; sleep 6; echo scan >"$kmemleak"
		leaks=$(cat "$kmemleak")
		if [ -z "$leaks" ]; then
			echo "ok $n - kmemleak: no leaks ($((SECONDS - start)) s)"
		else
			echo "not ok $n - kmemleak: leaks reported"
			sed 's/^/#   /' <<<"$leaks" | head -n 60
			# Reported once: the next segment's verdict is about its own tests.
			echo clear >"$kmemleak"
		fi
	else
		echo "not ok $n - kmemleak: /sys/kernel/debug/kmemleak not available"
	fi
	echo "# siw_rs-suite-complete $1"
}

echo "TAP version 13"
n=0 cur=
while read -r suite t <&3; do
	if [ "$suite" != "$cur" ]; then
		[ -n "$cur" ] && suite_end "$cur"
		cur=$suite
		echo "# siw_rs-suite $suite"
	fi
	run_test "$t"
done 3<"$plan"
[ -n "$cur" ] && suite_end "$cur"
