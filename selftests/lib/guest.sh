#!/usr/bin/env bash
# Runs inside the VM: the tests a plan file lists (selftests/run writes it), as TAP. A plan
# line is "SUITE PATH"; consecutive lines of one suite form a segment, which begins with
# "# siw_rs-suite SUITE" and ends, after kmemleak's scan, with "# siw_rs-suite-complete
# SUITE"; the plan's end is "# siw_rs-plan-complete".
#
# The kernel log is never cleared. A reader copies every record of it, from boot on, to
# SIW_RS_KMSG (a file of selftests/run's log directory, on the host), and every window of
# the run (a test, the time between tests, a kmemleak scan) is delimited by a marker line
# in the kernel log itself. After each test its window is checked for reports here;
# selftests/run checks all the rest (boot, between tests, the scans, shutdown) and the
# console once the VM is gone.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
plan=$1
export ROOT PATH="/usr/sbin:/sbin:$PATH"
cd "$ROOT" || exit 1
. "$ROOT/selftests/lib/reports.sh"
KMSG=${SIW_RS_KMSG:?}
# Where a test leaves files for the host to keep (the directory the copy of the log is in).
export SIW_RS_ARTIFACTS=${KMSG%/*}

mount -t debugfs none /sys/kernel/debug 2>/dev/null
# Markers are written to /dev/kmsg, whose writers are rate-limited by default.
echo on >/proc/sys/kernel/printk_devkmsg
# The reader: `cat` ends when the ring overran it (EPIPE); it is started again, and
# klog.awk drops the records a reopened /dev/kmsg repeats and names the ones lost.
(while :; do cat /dev/kmsg; done) >>"$KMSG" 2>/dev/null &
kmsg_reader=$!

# mark TEXT: a marker line in the kernel log (at warning level, so that the console, which
# selftests/run keeps, shows it too), in MARK, and in MARK_AT the copy's size before it.
# It is waited for in the copy, so that everything logged before it is there.
exec {nap_fd}<> <(:)
marks=0
mark() {
	local i
	marks=$((marks + 1))
	MARK="siw_rs-window $marks $*"
	MARK_AT=$(stat -c %s "$KMSG")
	echo "<4>$MARK" >/dev/kmsg
	for ((i = 0; i < 200; i++)); do
		tail -c +"$((MARK_AT + 1))" "$KMSG" | grep -qF -- "$MARK" && return 0
		read -r -t 0.05 -u "$nap_fd" _ || true
	done
	echo "# the kernel log's copy lacks the marker \"$MARK\" after 10 s"
}

# window FROM AT TO: the kernel log from marker FROM (the copy's size AT before it) to
# marker TO, as dmesg prints it.
window() { tail -c +"$(($2 + 1))" "$KMSG" | awk -v from="$1" -v to="$3" -f "$ROOT/selftests/lib/klog.awk"; }

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
# devices are found with every provider loaded; selftests/upstream puts rxe's back.
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

# lockdep_on: lockdep still watches (its first report turns it off for the rest of the
# boot, so a test after one would run unchecked; selftests/run plans a test that excuses a
# report last in its VM, and this holds it to that).
lockdep_on() { [ ! -r /proc/lockdep_stats ] || grep -Eq '^ *debug_locks: +1$' /proc/lockdep_stats; }

# excused KLOG: whether the test's one report is the upstream one it named. A test may
# write /tmp/siw_rs-known-report, two lines: an extended regex the report's head line (its
# text after the timestamp) must match whole, and one that a line of the report (up to 80
# lines from its head) must match. Only a window with exactly one report qualifies: a
# second report (a hung task, a stall) is never excused with it.
excused() {
	local heads head body first end
	[ -s /tmp/siw_rs-known-report ] || return 1
	head=$(sed -n 1p /tmp/siw_rs-known-report) body=$(sed -n 2p /tmp/siw_rs-known-report)
	[ -n "$head" ] && [ -n "$body" ] || return 1
	heads=$(grep -E "$REPORT_HEAD_RE" <<<"$1")
	[ -n "$heads" ] && [ "$(wc -l <<<"$heads")" = 1 ] || return 1
	sed 's/^\[[ 0-9.]*\] //' <<<"$heads" | grep -Eqx -- "$head" || return 1
	first=$(grep -nE -m1 "$REPORT_HEAD_RE" <<<"$1" | cut -d: -f1)
	tail -n +"$first" <<<"$1" | head -n 80 | grep -Eq -- "$body" || return 1
	# Nothing of a report before its head or after its end (its stack's </TASK>, or 300
	# lines): a bare Call Trace of something else is not excused with it.
	end=$(tail -n +"$first" <<<"$1" | grep -nE -m1 '</TASK>|---\[ end trace' | cut -d: -f1)
	end=$((first + ${end:-300}))
	[ -z "$(head -n $((first - 1)) <<<"$1" | grep -E "$REPORT_RE")" ] || return 1
	[ -z "$(tail -n +"$end" <<<"$1" | grep -E "$REPORT_RE")" ] || return 1
	echo "# $name: excused its named upstream report: $heads"
}

run_test() { # PATH: one test, its TAP line
	local t=$1 name out keep st rc secs start klog bad first idle idle0 idle1 all0 all1 procs0 procs1 begin begin_at
	n=$((n + 1))
	name=$(basename "$t" .sh)
	rm -f /tmp/siw_rs-known-report
	if ! lockdep_on; then
		echo "not ok $n - $name (lockdep is off: an earlier report in this boot turned it off)"
		return
	fi
	mark "begin test $suite/$name"
	begin=$MARK begin_at=$MARK_AT
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
	mark "end test $suite/$name"
	klog=$(window "$begin" "$begin_at" "$MARK")
	bad=$(grep -E "$REPORT_RE" <<<"$klog")
	# A window the copy lacks is not a clean one.
	if ! grep -qF -- "$begin" <<<"$klog" || ! grep -qF -- "$MARK" <<<"$klog"; then
		bad="[siw_rs-harness] the kernel log's copy lacks this test's window (its markers)"
		klog+=$'\n'"$bad"
	fi
	if [ -n "$bad" ] && excused "$klog"; then bad=; fi
	rm -f /tmp/siw_rs-known-report
	local reason
	reason=$(sed -n 's/^SKIP: //p' <<<"$out" | tail -n 1)
	if [ $rc = 4 ] && [ -z "$bad" ] && [ -n "$reason" ]; then
		# Skipped (kselftest's exit code 4), with the reason its "SKIP: " line gives.
		echo "ok $n - $name # SKIP $reason"
	elif [ $rc = 0 ] && [ -z "$bad" ]; then
		# Its time (under TCG): where the suites' budget goes (.ci/run has 80 minutes).
		echo "ok $n - $name ($secs s, $idle% idle, $((procs1 - procs0)) processes)"
		# A passing test's own "# " lines, when asked for (make fuzz-vm: its figures).
		if [ -n "${SIW_RS_VERBOSE:-}" ]; then grep '^# ' <<<"$out" | sed 's/^/#   /' || true; fi
	else
		if [ $rc = 4 ] && [ -z "$reason" ]; then
			echo "not ok $n - $name (exit 4, a skip that gives no \"SKIP: \" reason, $secs s)"
		else
			echo "not ok $n - $name (exit $rc, $secs s)"
		fi
		sed 's/^/#   /' <<<"$out" | tail -n "$keep"
		if [ -n "$bad" ]; then
			# From a little before the first report on: its head names the culprit.
			first=$(grep -nE -m1 "$REPORT_RE" <<<"$klog" | cut -d: -f1)
			echo "#   kernel log:"
			tail -n +"$(( first > 5 ? first - 5 : 1 ))" <<<"$klog" | head -n 80 | sed 's/^/#   | /'
			# Later reports' heads too (at most four): a second report, past the first's
			# 80 lines, may be the one that explains a hang.
			grep -nE "$REPORT_HEAD_RE" <<<"$klog" |
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
# (The scans' own window of the kernel log is checked by selftests/run.)
suite_end() {
	local leaks start=$SECONDS
	n=$((n + 1))
	mark "begin kmemleak $1"
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
	mark "end kmemleak $1"
	echo "# siw_rs-suite-complete $1"
}

echo "TAP version 13"
n=0 cur= suite=
mark "begin plan"
while read -r suite t <&3; do
	if [ "$suite" != "$cur" ]; then
		[ -n "$cur" ] && suite_end "$cur"
		cur=$suite
		echo "# siw_rs-suite $suite"
	fi
	run_test "$t"
done 3<"$plan"
[ -n "$cur" ] && suite_end "$cur"
mark "end plan"
echo "# siw_rs-plan-complete"
# What the kernel logs from here to the power-off stays in the copy: the reader runs on.
sync
exit 0
