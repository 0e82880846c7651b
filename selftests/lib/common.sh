# Sourced by the tests (inside the VM). Helpers for loading drivers and asserting.
#
# A test defines `cleanup` (optional); it runs on exit with errexit off, so a cleanup step
# that finds nothing to clean cannot turn a pass into a failure, and the test's own exit
# status is kept. Avoid `cmd | grep -q`: with pipefail, grep's early exit can fail the
# pipeline through SIGPIPE; match on captured output instead (`has PATTERN "$(cmd)"`).
# shellcheck shell=bash
set -euo pipefail
: "${ROOT:?}"
SIW_RS_KO=$ROOT/siw_rs/siw_rs.ko
# The test programs (selftests/*/*.c), which selftests/run builds on the host and names in
# SIW_RS_BIN: gcc in the guest took 10 to 25 s a program under TCG. (The demo and bench
# guests source this file too, and run none of them.)
TESTBIN=${SIW_RS_BIN:-/nonexistent/SIW_RS_BIN-unset}

_siw_rs_exit() {
	local rc=$?
	set +e
	if declare -F cleanup >/dev/null; then cleanup >/dev/null 2>&1; fi
	exit $rc
}
trap _siw_rs_exit EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# nap SECS: sleep without a process (a read timing out on a pipe that nobody writes);
# under TCG a `sleep` costs 0.1 s of CPU to start, so short polls nap instead.
exec {_nap_fd}<> <(:)
nap() { read -r -t "$1" -u "$_nap_fd" _ || true; }
log() { echo "# $*"; }

# has REGEX TEXT: TEXT contains a line matching the extended REGEX.
has() { grep -Eq -- "$1" <<<"$2"; }

# SIW_RS_PARAMS: module parameters for insmod (e.g. "mpa_crc_required=1").
# (A loaded module has /sys/module/NAME/initstate: no lsmod and grep processes, 0.4 s.)
load_siw_rs() { [ -e /sys/module/siw_rs/initstate ] || insmod "$SIW_RS_KO" ${SIW_RS_PARAMS:-}; }
unload_siw_rs() { if [ -e /sys/module/siw_rs/initstate ]; then rmmod siw_rs; fi; }
load_siw() { [ -e /sys/module/siw/initstate ] || modprobe siw; }
unload_siw() { if [ -e /sys/module/siw/initstate ]; then rmmod siw; fi; }

# rdma_dev_exists NAME: the RDMA device is registered (sysfs and the rdma tool agree).
rdma_dev_exists() {
	[ -e "/sys/class/infiniband/$1" ] && has "^link $1/" "$(rdma link show 2>/dev/null)"
}

# udev_settle: `udevadm settle`; a timeout, or udevd unreachable, fails the test (with
# whether a udevd runs: once in CI it could not be reached, "Broken pipe").
udev_settle() {
	udevadm settle -t 60 2>/tmp/udevadm.err ||
		fail "udevadm settle: $(cat /tmp/udevadm.err); udevd: $(pgrep -a systemd-udevd || echo none)"
}

# veth_pair A B: a veth pair with both ends up, in the current namespace. udev gives a new
# veth its persistent MAC shortly after creation; settle first, or a device created on it
# keeps the old MAC as its GID.
veth_pair() {
	ip link add "$1" type veth peer name "$2"
	udev_settle
	ip link set "$1" up
	ip link set "$2" up
}

# expect_fail_with MSG CMD...: CMD fails and its output matches the extended regex MSG.
expect_fail_with() {
	local msg=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "expected '$*' to fail, it succeeded: $out"
	fi
	has "$msg" "$out" || fail "'$*' failed without '$msg': $out"
}

# counter DEV NAME: the value of counter NAME of DEV's port 1.
counter() {
	local out w prev=
	out=$(rdma statistic show link "$1/1") || fail "rdma statistic show link $1/1 failed"
	# The word after NAME, with builtins (an awk per counter cost 0.25 s under TCG).
	for w in $out; do
		[ "$prev" = "$2" ] && { echo "$w"; return 0; }
		prev=$w
	done
	fail "$1 has no counter $2: $out"
}

# fpdu_payload DEV: the mean payload of the FPDUs siw_rs device DEV sent (counters).
fpdu_payload() {
	local n
	n=$(counter "$1" tx_fpdus)
	[ "$n" -gt 0 ] || fail "$1 sent no FPDU"
	echo $(($(counter "$1" tx_bytes) / n))
}

# two_hosts DRV_A DRV_B: network namespaces hostA and hostB joined by a veth pair
# (va 192.168.77.1, vb 192.168.77.2), with an RDMA device of driver DRV_A (siw_rs or siw)
# on va, named dev_a, and one of DRV_B on vb, named dev_b. The names are exported as
# DEV_A and DEV_B; undo with two_hosts_down.
two_hosts() {
	local a=$1 b=$2
	case "$a$b" in *siw_rs*) load_siw_rs ;; esac
	case " $a $b " in *" siw "*) load_siw ;; esac
	two_host_netns
	DEV_A=${a}_a DEV_B=${b}_b
	ip netns exec hostA rdma link add "$DEV_A" type "$a" netdev va
	ip netns exec hostB rdma link add "$DEV_B" type "$b" netdev vb
	export DEV_A DEV_B
}

# two_host_netns: the namespaces hostA and hostB and the veth pair of two_hosts, without
# RDMA devices.
two_host_netns() {
	# One ip process per namespace (-batch): under TCG each process start costs 0.2 s.
	# Distinct ifindexes: the C siw binds a wildcard listen to its netdev's ifindex in the
	# listener's namespace, so with equal indexes its listener for host A's device would
	# collide (EADDRINUSE) with host B's device listener (siw_rs's listen is dormant then).
	ip -batch - <<-EOF
		netns add hostA
		netns add hostB
		link add va netns hostA index 77 type veth peer name vb netns hostB index 78
	EOF
	# udev gives new veths their persistent MACs; the GID is the MAC at device creation.
	udev_settle
	ip -n hostA -batch - <<-EOF
		addr add 192.168.77.1/24 dev va
		link set va up
		link set lo up
	EOF
	ip -n hostB -batch - <<-EOF
		addr add 192.168.77.2/24 dev vb
		link set vb up
		link set lo up
	EOF
}

# Undoes two_hosts, whatever is left of it (a test may have deleted a device already).
two_hosts_down() {
	ip netns exec hostA rdma link delete "${DEV_A:-none}" 2>/dev/null || true
	ip netns exec hostB rdma link delete "${DEV_B:-none}" 2>/dev/null || true
	printf 'netns del hostA\nnetns del hostB\n' | ip -force -batch - 2>/dev/null || true
	unload_siw_rs 2>/dev/null || true
	unload_siw 2>/dev/null || true
}

# on_a CMD... / on_b CMD...: run in host A / B.
on_a() { ip netns exec hostA "$@"; }
on_b() { ip netns exec hostB "$@"; }

# listening_b PORT: wait (30 s at most) until host B has a TCP listener on PORT. An iWARP
# listen is a kernel TCP socket, so `ss` shows when a server started in the background is
# ready; a fixed sleep was not enough on a loaded machine (the client got ECONNREFUSED).
listening_b() { listening_in hostB "$1"; }

# listening_in NS PORT: wait (30 s at most) until namespace NS has a TCP listener on PORT, or
# an SCTP one (a siw_rs_sctp device's; /proc/net/sctp/eps, column LPORT).
listening_in() {
	# One process that polls in the namespace with builtins only: under TCG `ss` and `awk`
	# per look cost 0.5 s. /proc/net/tcp(6) column st 0A is LISTEN; the fd 3 read timing
	# out is the 0.1 s sleep.
	ip netns exec "$1" bash -c '
		printf -v port "%04X" "$1"
		exec 3<> <(:)
		for ((n = 0; n < 300; n++)); do
			for f in /proc/net/tcp /proc/net/tcp6; do
				[ -r $f ] || continue
				while read -r _ l _ st _; do
					[ "${l##*:}" = "$port" ] && [ "$st" = 0A ] && exit 0
				done <$f
			done
			if [ -r /proc/net/sctp/eps ]; then
				while read -r _ _ _ _ _ lport _; do
					[ "$lport" = "$1" ] && exit 0
				done </proc/net/sctp/eps
			fi
			read -t 0.1 -u 3 || true
		done
		exit 1' listening_in "$2" ||
		fail "nothing listens in $1 on port $2 after 30 s"
}

# hung_dump PID NAME SECS [WHAT]: if PID is still running after SECS seconds, print the
# kernel and user stacks of every NAME process, both hosts' sockets and RDMA resources, the
# kernel log's tail (as "#" lines), then kill it (its exit status then fails the caller's
# wait). WHAT says what the wait was for ("after its peer finished" unless given).
hung_dump() {
	local pid=$1 name=$2 n=0 p t
	while kill -0 "$pid" 2>/dev/null && [ $n -lt $(($3 * 10)) ]; do nap 0.1; n=$((n + 1)); done
	kill -0 "$pid" 2>/dev/null || return 0
	echo "# $name still running $3 s ${4:-after its peer finished}:"
	for p in $(pgrep -x "$name"); do
		echo "# $name $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
		for t in /proc/"$p"/task/*; do
			echo "# $name $p thread ${t##*/} kernel stack:"; sed 's/^/#   /' "$t/stack"
		done
		if command -v gdb >/dev/null; then
			gdb -p "$p" -batch -ex 'thread apply all bt' 2>&1 | grep '^#' | sed 's/^/#   /'
		fi
	done
	echo "# host A sockets:"; on_a ss -tnoi 2>&1 | sed 's/^/#   /'
	echo "# host B sockets:"; on_b ss -tnoi 2>&1 | sed 's/^/#   /'
	# Each QP's state and connection, and the devices' counters: which side waits for what.
	echo "# RDMA resources:"; rdma resource show qp -dd 2>&1 | sed 's/^/#   /'
	rdma statistic show 2>&1 | sed 's/^/#   /'
	echo "# kernel log:"; dmesg | tail -n 30 | sed 's/^/#   /'
	pkill -9 -x "$name"
}

# fuzz_target_end PID SECS [NOTE]: selftests/hostile/fuzz_target.c (process PID) after its
# peer is done: it must still run; after SECS seconds (the last connections' DISCONNECTED
# events may still be on their way) it is told to end, and must end, having seen every
# connection end. Logs its summary line (with NOTE).
fuzz_target_end() {
	local out
	kill -0 "$1" 2>/dev/null || fail "fuzz_target died: $(cat /tmp/fuzz-target.out)"
	sleep "$2"
	pkill -TERM -x fuzz_target
	hung_dump "$1" fuzz_target 30
	wait "$1" || fail "fuzz_target: $(cat /tmp/fuzz-target.out)"
	out=$(cat /tmp/fuzz-target.out)
	log "$(tail -n 1 <<<"$out")${3:+ ($3)}"
	has '^fuzz_target: requests [0-9]+ established [0-9]+ ended [0-9]+ open 0 ' "$out" ||
		fail "connections the peer had closed were still open at the listener: $(tail -n 3 <<<"$out")"
}

# unreclaimable_kb: the kernel's unreclaimable slab, in kB.
unreclaimable_kb() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; }

# unloaded_slab_back KB: after two_hosts_down at the end of a long run: siw_rs is unloaded,
# and unreclaimable slab is back within 16 MiB of KB (unreclaimable_kb before the run).
unloaded_slab_back() {
	local now
	has '^siw_rs ' "$(lsmod)" && fail "siw_rs still loaded after the run"
	echo 3 >/proc/sys/vm/drop_caches
	now=$(unreclaimable_kb)
	log "unreclaimable slab: $1 kB before, $now kB after siw_rs unloaded"
	[ $(( now - $1 )) -lt 16384 ] || fail "unreclaimable slab grew by $(( now - $1 )) kB"
}

# rping_brief OUT ERR: an rping client's stdout and stderr, short: its "ping data" lines
# counted, the last one shown, and every other line (errors, events) as printed.
rping_brief() {
	local pings
	pings=$(grep -c '^ping data' <<<"$1" || true)
	echo "[$pings ping lines, the last: $(grep '^ping data' <<<"$1" | tail -n 1)]" \
		"$(grep -v '^ping data' <<<"$1" | tr '\n' '|') stderr: $(tr '\n' '|' <<<"$2")"
}

# rping_sizes N SIZE...: for each SIZE, an rping -V server on host B and client on host A,
# N iterations; every ping's data is verified by rping on both sides, and the client must
# report N verified pings.
#
# Both sides are watched: a client still running after 60 s and a fifth of a second per
# ping (20 pings take a second or two), or a server still running 30 s after its client,
# is shown (hung_dump) and killed. (Once in CI, 2026-11-28, both waited until the server's
# `timeout 120` killed it; the client then saw the connection end and exited 0, so only a
# silent server was reported. The cause: the C siw responder's missed first FPDU, see
# ResponderWake in siw_rs/proto/src/mpa.rs.) The client's stdout is kept apart from its
# stderr: flushed in 4 KiB pieces, it would have a "ping data" line split around an event
# line written to stderr meanwhile.
rping_sizes() {
	local count=$1 size out err n srv cli rc limit=$((60 + $1 / 5))
	shift
	for size in "$@"; do
		on_b timeout $((limit + 60)) rping -s -a 192.168.77.2 -C "$count" -S "$size" -V \
			>/tmp/rping-s.out 2>&1 &
		srv=$!
		listening_b 7174
		on_a timeout $((limit + 60)) rping -c -a 192.168.77.2 -C "$count" -S "$size" -V -v \
			>/tmp/rping-c.out 2>/tmp/rping-c.err &
		cli=$!
		hung_dump $cli rping $limit "(the client, size $size)"
		rc=0
		wait $cli || rc=$?
		out=$(cat /tmp/rping-c.out)
		err=$(cat /tmp/rping-c.err)
		if [ $rc != 0 ]; then
			hung_dump $srv rping 30
			wait $srv || true
			fail "rping client, size $size, exited with $rc: $(rping_brief "$out" "$err");" \
				"server: $(cat /tmp/rping-s.out)"
		fi
		# The client is done: the server only waits for the DISCONNECTED event now.
		hung_dump $srv rping 30
		wait $srv ||
			fail "rping server, size $size: $(cat /tmp/rping-s.out); client: $(rping_brief "$out" "$err")"
		n=$(grep -c '^ping data' <<<"$out" || true)
		[ "$n" = "$count" ] || fail "size $size: $n of $count pings verified:" \
			"$(rping_brief "$out" "$err"); server: $(cat /tmp/rping-s.out)"
		log "size $size: $count pings verified"
	done
}

# pingpong PROG "SERVER ARGS" "CLIENT ARGS" [same]: an rdma-core pingpong (ibv_rc_pingpong,
# ibv_srq_pingpong), server on host B's device, client on host A's; with "same", both on
# host A's device (two processes, one device). Both must exit 0 and print their result.
#
# ibv_srq_pingpong's QPs may post a Send more after the other side has everything it needs
# and has left (its count of sends is over all QPs, and each QP posts its next one while
# the count is short). That Send cannot be delivered; as on InfiniBand, it fails only after
# the QP's retry time (README, "Connections without rdma_cm"), by which time the tool has
# finished: it waits for no more completions once both counts are full (srq_pingpong.c,
# `while (rcnt < iters || scnt < iters)`).
pingpong() {
	local prog=$1 sargs=$2 cargs=$3 out srv sns=hostB sdev=$DEV_B saddr=192.168.77.2
	if [ "${4:-}" = same ]; then sns=hostA sdev=$DEV_A saddr=192.168.77.1; fi
	local done_re='^[0-9]+ iters in'
	# shellcheck disable=SC2086 # the argument strings are word lists
	ip netns exec $sns timeout 300 "$prog" -d "$sdev" $sargs >/tmp/pp-s.out 2>&1 &
	srv=$!
	listening_in $sns 18515
	# On failure the address lines are left out (16 QPs' worth would push the error,
	# which stderr writes before stdout's buffered lines, out of the log's tail), and
	# the exit status is given (above 128: a signal).
	local rc=0 src=0
	# shellcheck disable=SC2086
	out=$(on_a timeout 300 "$prog" -d "$DEV_A" $cargs $saddr 2>&1) || rc=$?
	wait $srv || src=$?
	[ $rc = 0 ] || fail "$prog client $cargs exited with $rc: $(grep -v ' address: ' <<<"$out");" \
		"server (exit $src): $(grep -v ' address: ' /tmp/pp-s.out)"
	[ $src = 0 ] || fail "$prog server $sargs exited with $src: $(grep -v ' address: ' /tmp/pp-s.out);" \
		"client: $(grep -v ' address: ' <<<"$out")"
	has "$done_re" "$out" || fail "$prog client $cargs printed no result: $out"
	has "$done_re" "$(cat /tmp/pp-s.out)" || fail "$prog server $sargs printed no result: $(cat /tmp/pp-s.out)"
	log "$prog $cargs${4:+ (one device)}: $(grep -E "$done_re" <<<"$out")"
}

# perftest_listen_gap on|off: with -R, perftest's server listens twice on its port, the
# second time only after the first connection's exchanges (perftest 4.5-0.17,
# src/perftest_communication.c: rdma_server_connect destroys its listening id after the
# accept, and rdma_cm_server_connection listens again), while the client connects again as
# soon as its side of those exchanges is done. A server whose vCPU is slow in between
# refuses the second connect (TCP's RST, SCTP's ABORT): the client's retry then crashes in
# librdmacm (a use-after-free, fixed upstream in perftest 3d9d8d0) and the server waits for
# ever. "on" drops, in host B, exactly such refusals from the port (a RST+ACK with
# sequence number 0; an ABORT without an error cause, as the answer to an INIT nobody
# listens for is, where one that ends an association carries one), so the
# client's SYN or INIT is sent again and meets the second listen; "off" takes that away.
# Each drop is counted, and perftest_gap_hits logs them.
perftest_listen_gap() {
	if [ "$1" = off ]; then
		ip netns exec hostB tc qdisc del dev vb root 2>/dev/null || true
		return 0
	fi
	ip netns exec hostB tc -batch - <<-EOF || fail "tc: the filter for perftest's listen gap"
		qdisc add dev vb root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
		qdisc add dev vb parent 1:3 handle 30: netem loss 100%
		filter add dev vb parent 1: protocol ip prio 1 u32 match u8 0x45 0xff at 0 match u8 6 0xff at 9 match u16 18515 0xffff at 20 match u32 0 0xffffffff at 24 match u8 0x14 0x14 at 33 flowid 1:3
		filter add dev vb parent 1: protocol ip prio 2 u32 match u8 0x45 0xff at 0 match u8 132 0xff at 9 match u16 18515 0xffff at 20 match u8 6 0xff at 32 match u16 4 0xffff at 34 flowid 1:3
	EOF
}
# perftest_gap_hits WHAT: logs how many refusals perftest_listen_gap dropped, if any.
perftest_gap_hits() {
	local d
	d=$(ip netns exec hostB tc -s qdisc show dev vb parent 1:3 2>/dev/null |
		sed -nE 's/.*\(dropped ([0-9]+),.*/\1/p' | head -n 1)
	[ "${d:-0}" = 0 ] || log "$1: perftest's listen gap was met: $d refusal(s) dropped, the connect sent again"
}

# PERFTEST_OPTS: for both sides of every run. -F: a failed clock calibration (perftest fits
# the TSC against gettimeofday() over 200 samples, which a vCPU QEMU leaves for a moment
# spoils, get_clock.c) reports no rate rather than ending the bandwidth tools with
# "Can't produce a report" (perftest_parameters.c); no rate is judged here.
# --wait_destroy=1: a second before either side tears down. perftest's last exchange is a
# Send each way, and each side tears down once its own Send has completed, which over
# iWARP means handed to TCP, not received: without the pause the server's teardown could
# end the connection before its reply reached the client's receive (perftest_resources.c,
# ctx_close_connection; on InfiniBand the completion means the peer had it).
PERFTEST_OPTS=(-F --wait_destroy=1)

# perftest_once TOOL ARGS...: one perftest run over rdma_cm (-R), server on host B and
# client on host A, both with ARGS; the client's output in PERF_OUT, the server's in
# /tmp/perf-s.out, PERF_OK 1 if both exited 0.
perftest_once() {
	local t=$1 srv
	shift
	PERF_OK=1
	perftest_listen_gap on
	on_b timeout 120 "$t" -R "${PERFTEST_OPTS[@]}" -d "$DEV_B" "$@" >/tmp/perf-s.out 2>&1 &
	srv=$!
	listening_b 18515
	PERF_OUT=$(on_a timeout 120 "$t" -R "${PERFTEST_OPTS[@]}" -d "$DEV_A" "$@" 192.168.77.2 2>&1) || PERF_OK=0
	hung_dump $srv "$t" 30
	wait $srv || PERF_OK=0
	perftest_gap_hits "$t"
	perftest_listen_gap off
}

# perftest_all: each perftest benchmark over rdma_cm (-R), server on host B, client on host
# A; both must exit 0 and the client must print its result line. (perftest checks
# completions, not data; the byte checks are rping's and data_verify's.)
perftest_all() {
	local t
	for t in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
		perftest_once "$t" -n 100 -s 4096
		[ $PERF_OK = 1 ] || fail "$t: client: $PERF_OUT; server: $(cat /tmp/perf-s.out)"
		has '^ *4096 +100 ' "$PERF_OUT" || fail "$t: no result line: $PERF_OUT"
		has 'Correlation coefficient' "$PERF_OUT$(cat /tmp/perf-s.out)" &&
			log "$t: perftest's clock calibration failed: no rate (-F)"
		log "$t: $(grep -E '^ *4096 +100 ' <<<"$PERF_OUT" | tr -s ' ')"
	done
}

# cm_tools: librdmacm's ucmatose and rdma_server/rdma_client, server on host B.
cm_tools() {
	local out srv
	on_b timeout 120 ucmatose -b 192.168.77.2 >/tmp/cm-s.out 2>&1 &
	srv=$!
	listening_b 7471
	out=$(on_a timeout 120 ucmatose -s 192.168.77.2 -b 192.168.77.1 2>&1) ||
		{ wait $srv || true; fail "ucmatose client: $out; server: $(cat /tmp/cm-s.out)"; }
	wait $srv || fail "ucmatose server: $(cat /tmp/cm-s.out)"
	has 'return status 0' "$out" || fail "ucmatose: $out"
	on_b timeout 120 rdma_server -s 192.168.77.2 >/tmp/cm-s.out 2>&1 &
	srv=$!
	listening_b 7471
	out=$(on_a timeout 120 rdma_client -s 192.168.77.2 2>&1) ||
		{ wait $srv || true; fail "rdma_client: $out; server: $(cat /tmp/cm-s.out)"; }
	wait $srv || fail "rdma_server: $(cat /tmp/cm-s.out)"
	has 'rdma_client: end 0' "$out" || fail "rdma_client: $out"
	has 'rdma_server: end 0' "$(cat /tmp/cm-s.out)" || fail "rdma_server: $(cat /tmp/cm-s.out)"
	log "ucmatose and rdma_server/rdma_client passed"
}

# data_verify [SERVER_OPTS -- CLIENT_OPTS]: selftests/data/data_verify.c, server on host B,
# client on host A; both must exit 0. Prints the client's result lines.
data_verify() {
	local sopts=() copts=() out srv port=7471
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sopts+=("$1"); shift; done
	[ $# -gt 0 ] && shift
	copts=("$@")
	# With -g (connections made by modify_qp) the out-of-band exchange is on 7472.
	[[ " ${sopts[*]} " == *" -g "* ]] && port=7472
	on_b timeout 300 "$TESTBIN"/data_verify -v -s 192.168.77.2 "${sopts[@]}" >/tmp/dv-s.out 2>&1 &
	srv=$!
	listening_b $port
	if ! out=$(on_a timeout 300 "$TESTBIN"/data_verify -c 192.168.77.2 "${copts[@]}" 2>&1); then
		# The server may still wait for a connection that will not come.
		pkill -x data_verify || true
		wait $srv || true
		fail "data_verify client ${copts[*]}: $out; server: $(cat /tmp/dv-s.out)"
	fi
	# The client is done: the server has only its teardown left. If it is still
	# there after 30 s, show where it waits before failing.
	local n=0 rc=0
	while kill -0 $srv 2>/dev/null && [ $n -lt 300 ]; do nap 0.1; n=$((n + 1)); done
	if kill -0 $srv 2>/dev/null; then
		local p
		for p in $(pgrep -x data_verify); do
			echo "# data_verify $p stack:"; sed 's/^/#   /' "/proc/$p/stack"
			if command -v gdb >/dev/null; then
				gdb -p "$p" -batch -ex 'thread apply all bt' 2>&1 | grep '^#' | sed 's/^/#   /'
			fi
		done
		# Whether the server's socket still holds unread bytes (Recv-Q) tells a lost
		# receive wakeup from a lost completion.
		echo "# host B sockets:"; on_b ss -tnoi | sed 's/^/#   /'
		pkill -9 -x data_verify
	fi
	wait $srv || rc=$?
	[ $rc = 0 ] || fail "data_verify server ${sopts[*]} (exit $rc): $(cat /tmp/dv-s.out)"
	echo "$out" | sed 's/^/# /'
	grep -h 'SRQ limit' /tmp/dv-s.out | sed 's/^/# /' || true
}

# capture_start / capture_frames: record host B's veth with tcpdump, then print the MPA
# frames seen (selftests/lib/mpa_frames.py).
capture_start() {
	local n
	on_b tcpdump -i vb -s 0 -U -w /tmp/mpa.pcap 'tcp' >/tmp/tcpdump.out 2>&1 &
	CAPTURE_PID=$!
	# tcpdump says "listening on" once its filter is set: from then on it records.
	for n in $(seq 200); do
		has '^tcpdump: listening on' "$(cat /tmp/tcpdump.out)" && return 0
		kill -0 "$CAPTURE_PID" 2>/dev/null || fail "tcpdump ended: $(cat /tmp/tcpdump.out)"
		sleep 0.1
	done
	fail "tcpdump not listening after 20 s: $(cat /tmp/tcpdump.out)"
}
capture_frames() {
	sleep 1
	kill "$CAPTURE_PID" 2>/dev/null
	wait "$CAPTURE_PID" 2>/dev/null
	python3 "$ROOT/selftests/lib/mpa_frames.py" /tmp/mpa.pcap
}

# gid_of ADDR: the GID of an IPv4 or IPv6 address as sysfs prints it (IPv4 mapped into IPv6,
# eight groups of four hex digits). Builtins only: a python3 start costs 1.5 s under TCG.
gid_of() {
	local a=$1 head tail h=() t=() out=() g i
	if [[ $a =~ ^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$ ]]; then
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' "${BASH_REMATCH[@]:1:4}"
		return 0
	fi
	[[ $a =~ ^[0-9A-Fa-f:]+$ ]] || fail "gid_of: not an address: $a"
	if [[ $a == *::* ]]; then head=${a%%::*} tail=${a#*::}; else head=$a tail=; fi
	[ -n "$head" ] && IFS=: read -ra h <<<"$head"
	[ -n "$tail" ] && IFS=: read -ra t <<<"$tail"
	out=("${h[@]}")
	for ((i = ${#h[@]} + ${#t[@]}; i < 8; i++)); do out+=(0); done
	out+=("${t[@]}")
	[ ${#out[@]} = 8 ] || fail "gid_of: not an address: $a"
	for i in 0 1 2 3 4 5 6 7; do printf -v g '%04x' "$((16#${out[i]}))"; out[i]=$g; done
	(IFS=:; echo "${out[*]}")
}

# gid_index DEV ADDR: the index of ADDR's GID in port 1 of RDMA device DEV (fails if absent).
gid_index() {
	local want f v
	want=$(gid_of "$2")
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		read -r v <"$f" || continue
		if [ "$v" = "$want" ]; then
			echo "${f##*/}"
			return 0
		fi
	done
	fail "$1 has no GID for $2 ($want): $(cat /sys/class/infiniband/"$1"/ports/1/gids/* | grep -v '^0000:0000:0000:0000:0000:0000:0000:0000$' | tr '\n' ' ')"
}

# wait_gid_index DEV ADDR: gid_index, once the address has reached the table (the table is
# refreshed by work queued from the address notifiers; 10 s at most).
wait_gid_index() {
	local n want
	want=$(gid_of "$2")
	for n in $(seq 50); do
		grep -qx "$want" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null && break
		sleep 0.2
	done
	gid_index "$1" "$2"
}

# soak NAME CMD...: runs CMD (a function of this file, or a command) SOAK_RUNS times
# (default 200), each in a subshell of its own, none run again, and logs how many runs passed;
# each failed run's last words are logged; fails if any run failed. make soak runs the
# suite that uses it (selftests/soak), outside make check.
soak() {
	local name=$1 i rc failed=0 runs=${SOAK_RUNS:-200} start=$SECONDS
	shift
	for ((i = 1; i <= runs; i++)); do
		# Not in a condition, where errexit would not hold inside the subshell either.
		set +e
		( set -e; "$@" ) >/tmp/soak-run.out 2>&1
		rc=$?
		set -e
		if [ $rc != 0 ]; then
			failed=$((failed + 1))
			log "$name: run $i of $runs failed: $(tail -n 6 /tmp/soak-run.out | tr '\n' ' ' | cut -c1-600)"
		fi
	done
	log "$name: $((runs - failed)) of $runs runs passed ($((SECONDS - start)) s)"
	[ "$failed" = 0 ] || fail "$name: $failed of $runs runs failed"
}
