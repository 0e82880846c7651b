# Sourced by selftests/run (on the host) and selftests/lib/guest.sh (in the VM): what in a
# kernel log is a report. shellcheck shell=bash
#
# REPORT_HEAD_RE: the first line of each report, one line a report (a report's later lines
# may match REPORT_RE again; "cut here" comes before a WARNING's head and is not one).
REPORT_HEAD_RE='WARNING:|BUG:|kernel BUG at|Oops|general protection fault|KASAN|UBSAN|refcount_t:|list_(add|del) corruption|INFO: task .* blocked for more than|rcu: INFO:|rcu_.* detected stall|self-detected stall|INFO: trying to register non-static key|Kernel panic|DEBUG_LOCKS_WARN_ON|ODEBUG:|page allocation failure|\[siw_rs-harness\]'
# REPORT_RE: any line of a report. (kmemleak's "N new suspected memory leaks" is not: its
# verdict is each segment's own test, in guest.sh.)
REPORT_RE="$REPORT_HEAD_RE|possible circular locking|possible recursive locking|inconsistent lock state|lockdep is turned off|turning off the locking correctness validator|kmemleak: (Kernel memory leak detector disabled|Cannot )|Call Trace|RIP:|cut here|sleeping function called from invalid context"
