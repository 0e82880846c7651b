#!/usr/bin/env bash
# The guest half of tools/bench. ROUNDS rounds; in each, every benchmark over the C siw,
# then over siw_rs (interleaved, so a drift of the emulation during the run hits both).
# Prints one line per benchmark: each driver's median, the median of the paired ratios
# siw_rs/C siw and their min..max, each driver's bandwidth as a fraction of the same run's
# TCP ceiling (one iperf3 stream over the same veth), and how many runs failed.
# Arguments: FILTER (a regex over the benchmark names, empty for all), ROUNDS.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROOT PATH="/usr/sbin:/sbin:$PATH"
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
filter=${1:-}
rounds=${2:-5}
FIO_SECS=${BENCH_FIO_SECS:-6}
# BENCH_PLACE: where perftest and iperf3 run on the two vCPUs (see tools/bench). float: where
# the scheduler puts them, each host's received packets processed on the CPU that sent
# them (veth); one: both ends on CPU 0; hosts: host A's process on CPU 0, host B's on
# CPU 1, and each host's received packets processed on its own CPU (RPS on its veth), as
# on two machines.
place=${BENCH_PLACE:-float}
pin_a=() pin_b=()
case "$place" in
float) ;;
one) pin_a=(taskset -c 0) pin_b=(taskset -c 0) ;;
hosts) pin_a=(taskset -c 0) pin_b=(taskset -c 1) ;;
*)
	echo "BENCH_PLACE=$place: not float, one or hosts" >&2
	exit 1
	;;
esac
# bench_hosts DRIVER: two_hosts with DRIVER at both ends, placed as BENCH_PLACE says.
bench_hosts() {
	two_hosts "$1" "$1"
	if [ "$place" = hosts ]; then
		on_a sh -c 'echo 1 >/sys/class/net/va/queues/rx-0/rps_cpus'
		on_b sh -c 'echo 2 >/sys/class/net/vb/queues/rx-0/rps_cpus'
	fi
}

# perftest: name | command line (server and client add -R -d DEV and the address). Two
# namespaces joined by a veth pair, one device of the driver in each, rdma_cm. *_bw rows
# give MB/s, *_rate rows messages per second (perftest's MsgRate), *_lat rows the typical
# latency in us.
perf=(
	"write_bw 4K|ib_write_bw -s 4096 -n 1000"
	"write_bw 64K|ib_write_bw -s 65536 -n 200"
	"write_bw 1M|ib_write_bw -s 1048576 -n 20"
	"read_bw 4K|ib_read_bw -s 4096 -n 1000"
	"read_bw 64K|ib_read_bw -s 65536 -n 200"
	"read_bw 1M|ib_read_bw -s 1048576 -n 20"
	"send_bw 4K|ib_send_bw -s 4096 -n 1000"
	"send_bw 64K|ib_send_bw -s 65536 -n 200"
	"send_bw 1M|ib_send_bw -s 1048576 -n 20"
	"write_rate 64|ib_write_bw -s 64 -n 5000"
	"send_rate 64|ib_send_bw -s 64 -n 5000"
	# The same, posted 16 at a time (perftest's post list: one ibv_post_send, one doorbell
	# per 16): what a driver can make of work requests that come together (siw_rs packs
	# their FPDUs into shared TCP segments, fpdu_pack).
	"write_rate 64 list|ib_write_bw -s 64 -n 4800 -l 16"
	"send_rate 64 list|ib_send_bw -s 64 -n 4800 -l 16"
	"write_lat 8|ib_write_lat -s 8 -n 300"
	"write_lat 4K|ib_write_lat -s 4096 -n 300"
	"send_lat 8|ib_send_lat -s 8 -n 300"
	"send_lat 4K|ib_send_lat -s 4096 -n 300"
	"read_lat 8|ib_read_lat -s 8 -n 300"
	"read_lat 4K|ib_read_lat -s 4096 -n 300"
	# The same with perftest's -e: each side sleeps on its completion channel instead of
	# polling. Polled, a reply waits for QEMU's round robin to reach the other vCPU, at
	# the next timer deadline (HZ=1000 on two vCPUs): those rows come in steps of 0.5 ms
	# for either driver and measure the emulator. Asleep, a vCPU halts and the other runs
	# at once, so these rows measure the drivers (and the wake-ups they cause). ib_write_lat
	# has no -e (its server polls the buffer).
	"send_lat 8 ev|ib_send_lat -s 8 -n 300 -e"
	"send_lat 4K ev|ib_send_lat -s 4096 -n 300 -e"
	"read_lat 8 ev|ib_read_lat -s 8 -n 300 -e"
	"read_lat 4K ev|ib_read_lat -s 4096 -n 300 -e"
)
# The bandwidth rows again with the MPA CRC on at both ends (siw_rs loaded with
# mpa_crc_required=1). siw_rs only: the C siw's CRC is off at compile time
# (siw_main.c: `const bool mpa_crc_required;`), and as initiator it never asks for one.
crc=(
	"write_bw 4K crc|ib_write_bw -s 4096 -n 1000"
	"write_bw 64K crc|ib_write_bw -s 65536 -n 200"
	"write_bw 1M crc|ib_write_bw -s 1048576 -n 20"
	"read_bw 4K crc|ib_read_bw -s 4096 -n 1000"
	"read_bw 64K crc|ib_read_bw -s 65536 -n 200"
	"read_bw 1M crc|ib_read_bw -s 1048576 -n 20"
	"send_bw 4K crc|ib_send_bw -s 4096 -n 1000"
	"send_bw 64K crc|ib_send_bw -s 65536 -n 200"
	"send_bw 1M crc|ib_send_bw -s 1048576 -n 20"
)
# The ceiling: one TCP stream (iperf3, 5 s) over the same veth, once per round.
tcp=("tcp 1 stream|iperf3")
# Kernel storage consumers (fio, direct I/O, libaio, FIO_SECS seconds after 2 s of ramp):
# NVMe-oF/RDMA to an nvmet null_blk namespace, NFSv3 over RDMA to a tmpfs export; both
# ends of one driver. NFSv3: the transport is the same as 4.x's, without the 10 s grace.
storage=(
	"nvme randread 4K"
	"nvme seqread 128K"
	"nfs3 seqwrite 1M"
	"nfs3 seqread 1M"
)
unit_of() {
	case "$1" in
	*_lat*) echo us ;;
	*_rate*) echo msg/s ;;
	nvme\ randread*) echo IOPS ;;
	nvme* | nfs*) echo MiB/s ;;
	*) echo MB/s ;;
	esac
}
selected() { [ -z "$filter" ] || has "$filter" "$1"; }
any_selected() {
	local n
	for n in "$@"; do selected "${n%%|*}" && return 0; done
	return 1
}

# run_perf NAME CMD...: the benchmark once between host A (client) and B (server); prints
# the figure: average MB/s for *_bw rows, messages/s for *_rate, typical latency in us for
# *_lat, "-" if it failed.
run_perf() {
	local name=$1 out i
	shift
	for i in 1 2 3; do
		on_b "${pin_b[@]}" timeout 600 "$@" -R -d "$DEV_B" >/tmp/bench-s.out 2>&1 &
		listening_b 18515
		out=$(on_a "${pin_a[@]}" timeout 600 "$@" -R -d "$DEV_A" 192.168.77.2 2>&1) || true
		wait || true
		case "$name" in
		*_bw*) awk -v s="$3" '$1 == s && NF >= 4 { print $4; exit }' <<<"$out" ;;
		*_rate*) awk -v s="$3" '$1 == s && NF >= 5 { printf "%.0f\n", $5 * 1000000; exit }' <<<"$out" ;;
		*_lat*) awk -v s="$3" '$1 == s && NF >= 5 { print $5; exit }' <<<"$out" ;;
		esac | grep . && return 0
		# perftest's own races (see docs/bench.md): a connect that found no
		# listener yet, or a handshake out of step. Counted, not hidden.
		has 'Correlation coefficient|Failed to connect RDMA CM events' "$out" || break
		echo "# $name: retried after: $(tail -n 2 <<<"$out" | tr '\n' ' ')" >&2
	done
	echo "# failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')" >&2
	echo "-"
}

# run_tcp [IPERF3 ARGS]: one iperf3 stream from host A to B, for 5 s or as ARGS say;
# prints the receiver's MB/s.
run_tcp() {
	local out args=("$@")
	[ $# -gt 0 ] || args=(-t 5)
	on_b "${pin_b[@]}" iperf3 -s -1 >/tmp/bench-tcp.out 2>&1 &
	listening_b 5201
	out=$(on_a "${pin_a[@]}" iperf3 -c 192.168.77.2 "${args[@]}" -J 2>&1) || true
	wait || true
	python3 -c 'import json, sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 8e6))' \
		<<<"$out" 2>/dev/null || { echo "# iperf3 failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')" >&2; echo "-"; }
}

# fio_rate RW BS DEPTH FILE SIZE WHAT: one fio job; prints the read or write figure WHAT
# (iops, or mib: MiB/s) of the job's direction.
fio_rate() {
	local rw=$1 bs=$2 depth=$3 file=$4 size=$5 what=$6 out
	out=$(fio --output-format=terse --terse-version=3 --direct=1 --ioengine=libaio \
		--time_based --runtime="$FIO_SECS" --ramp_time=2 --name=bench --rw="$rw" --bs="$bs" \
		--iodepth="$depth" --filename="$file" --size="$size" 2>&1) || fail "fio $rw $bs: $out"
	# Terse v3: read KiB/s and IOPS in fields 7 and 8, write KiB/s and IOPS in 48 and 49.
	awk -F';' -v rw="$rw" -v what="$what" '/^3;/ {
		w = rw ~ /write/; bw = w ? $48 : $7; iops = w ? $49 : $8
		if (what == "iops") printf "%d\n", iops; else printf "%.1f\n", bw / 1024
		f = 1 }
		END { exit !f }' <<<"$out" || fail "fio $rw $bs printed no result: $out"
}

# Each storage group runs in a subshell under errexit (the selftests' helpers are written
# for it; a figure is assigned before it is printed, so a failed fio stops the group) and
# prints "= NAME|VALUE" lines; its EXIT trap undoes whatever was set up.
nvme_bench() {
	local dev v
	one_ns_devices "$1" "$1"
	nvmet_up 192.168.77.2
	dev=$(nvme_connect 192.168.77.2 192.168.77.1)
	if selected "nvme randread 4K"; then
		v=$(fio_rate randread 4k 32 "$dev" 512M iops)
		echo "= nvme randread 4K|$v"
	fi
	if selected "nvme seqread 128K"; then
		v=$(fio_rate read 128k 8 "$dev" 512M mib)
		echo "= nvme seqread 128K|$v"
	fi
}
nvme_bench_down() {
	nvme disconnect -n "$NQN" >/dev/null 2>&1 || true
	nvmet_down
	one_ns_devices_down
}

# NFS: the client in the initial namespace (the C siw cannot mount from another, see
# nfs_pairing), the server in host B.
nfs_bench() {
	local f=/tmp/siw-nfs/bench.dat v
	nfs_hosts_init_a "$1" "$1"
	nfs_server_up
	modprobe rpcrdma
	mkdir -p /tmp/siw-nfs
	mount -t nfs -o vers=3,proto=rdma,port=20049,nolock 192.168.77.2:/tmp/nfs-export /tmp/siw-nfs
	# The file the read row reads is written first in any case.
	v=$(fio_rate write 1M 4 "$f" 256M mib)
	echo "= nfs3 seqwrite 1M|$v"
	if selected "nfs3 seqread 1M"; then
		v=$(fio_rate read 1M 4 "$f" 256M mib)
		echo "= nfs3 seqread 1M|$v"
	fi
	rm -f "$f"
	umount /tmp/siw-nfs
}
nfs_bench_down() {
	umount /tmp/siw-nfs 2>/dev/null || true
	nfs_server_down
	nfs_hosts_down
}

# BENCH_PROFILE=1: instead of the table, each selected perftest row once per driver under
# `perf record -a` (cpu-clock), and the TCP row (iperf3 moving the bytes of the 64 KiB
# Write row) once. Under -icount guest time counts instructions, so a sample stands for a
# fixed number of instructions: the samples outside the idle loop, per message, compare
# the two drivers' cost, and the symbols say where it goes. Each row runs twice, with N
# and with K N messages, and the report is the difference: what the messages more cost,
# without the connection setup and the tools' start and exit (which otherwise make most
# of a latency row's samples).
IDLE='default_idle|pv_native_safe_halt|acpi_idle|cpuidle|poll_idle|do_idle|native_safe_halt'
# profile_rec OUT CMD...: runs CMD (which prints the row's result) under perf; leaves the
# samples outside the idle loop in OUT.syms, one "symbol (dso)" a line, and in OUT.n the
# counts: all samples, context switches, packets, and the result.
profile_rec() {
	local out=$1 pid v c0 c1 p0 p1
	shift
	rm -f /tmp/bench-ctl /tmp/bench-ack
	mkfifo /tmp/bench-ctl /tmp/bench-ack
	# Started disabled and enabled through its control fifo: once the ack is read, perf
	# really samples (its start-up, reading every process's maps, takes a while).
	perf record -a ${BENCH_CALLERS:+-g} -F 4000 -D -1 --control fifo:/tmp/bench-ctl,/tmp/bench-ack \
		-o /tmp/bench.perf >/dev/null 2>&1 &
	pid=$!
	exec 8<>/tmp/bench-ctl 9<>/tmp/bench-ack
	echo enable >&8
	read -r -t 120 _ <&9 || echo "# perf did not acknowledge" >&2
	exec 8>&- 9<&-
	c0=$(awk '$1 == "ctxt" { print $2 }' /proc/stat)
	# Packets host A sent and received on its veth (both directions of the connection).
	p0=$(ip netns exec hostA cat /sys/class/net/va/statistics/{tx,rx}_packets | paste -sd+ | bc)
	v=$("$@")
	c1=$(awk '$1 == "ctxt" { print $2 }' /proc/stat)
	p1=$(ip netns exec hostA cat /sys/class/net/va/statistics/{tx,rx}_packets | paste -sd+ | bc)
	kill -INT "$pid"
	wait "$pid" || true
	# One "symbol+offset (dso)" a sample; with BENCH_CALLERS, one paragraph a sample: the
	# sampled place, then its callers, one a line.
	perf script -i /tmp/bench.perf --kallsyms=/proc/kallsyms \
		-F "ip,sym,symoff,dso" 2>/dev/null |
		awk '{ $1 = ""; sub(/^ /, ""); print }' >/tmp/bench-chains.txt || true
	# With call chains a sample is a paragraph (the sampled place first), else a line.
	local rs='\n'
	[ -z "${BENCH_CALLERS:-}" ] || rs=
	# The sampled places in the driver's own code, as symbol+offset (for `objdump -d`).
	awk -v RS="$rs" -F '\n' '$1 ~ /\((\/lib\/modules\/.*\/siw\.ko|\[siw_rs\])\)$/ { print $1 }' \
		/tmp/bench-chains.txt >"$out.offs"
	awk -v RS="$rs" -F '\n' '{ l = $1; sub(/\+0x[0-9a-f]+ /, " ", l); print l }' \
		/tmp/bench-chains.txt >/tmp/bench-all.txt
	grep -Ev "$IDLE" </tmp/bench-all.txt >"$out.syms" || true
	echo "$(wc -l </tmp/bench-all.txt) $((c1 - c0)) $((p1 - p0)) $v" >"$out.n"
	# BENCH_CALLERS: who called each named symbol, by samples and call site
	# (symbol+offset: `objdump -d` of the module, or addr2line, names the line).
	: >"$out.callers"
	if [ -n "${BENCH_CALLERS:-}" ]; then
		awk -v RS= -F '\n' -v syms="$BENCH_CALLERS" '
			BEGIN { n = split(syms, want, "|") }
			{ for (i = 1; i <= n; i++) if (index($1, want[i] "+") == 1) {
				c = (NF >= 2) ? $2 : "(none)"; count[want[i] " <- " c]++ } }
			END { for (k in count) printf "%8d %s\n", count[k], k }' /tmp/bench-chains.txt |
			sort -rn | awk 'NR <= 40' >"$out.callers"
	fi
}
# profile_cmd DRIVER NAME N K FN: FN M runs the row with M messages and prints its result;
# writes the report of the difference between K N and N messages.
profile_cmd() {
	local drv=$1 name=$2 short=$3 long=$(($3 * $4)) fn=$5 m
	m=$((long - short))
	profile_rec /tmp/bench-short "$fn" "$short"
	profile_rec /tmp/bench-long "$fn" "$long"
	# Per symbol: samples of the long run minus the short run's.
	sort /tmp/bench-short.syms | uniq -c | awk '{ c = $1; $1 = ""; print "S" c $0 }' >/tmp/bench-d.txt
	sort /tmp/bench-long.syms | uniq -c | awk '{ c = $1; $1 = ""; print "L" c $0 }' >>/tmp/bench-d.txt
	awk '{ k = substr($0, index($0, " ") + 1); c = substr($1, 2) + 0
		d[k] += (substr($1, 1, 1) == "L") ? c : -c }
		END { for (k in d) printf "%d %s\n", d[k], k }' /tmp/bench-d.txt | sort -rn >/tmp/bench-syms.txt
	read -r sa sc sp _ </tmp/bench-short.n
	read -r la lc lp v </tmp/bench-long.n
	# The driver's own code: the module (siw.ko, or siw_rs's, which perf names [siw_rs]).
	# User space (the benchmark, its libraries, the vDSO) is counted apart: perftest polls
	# its completion queue, and under QEMU's round robin the polling vCPU's instructions
	# take guest time as much as any others; iperf3 sleeps in send and recv.
	awk -v m="$m" -v drv="$drv" -v name="$name" -v v="$v" -v long="$long" -v short="$short" \
		-v all="$((la - sa))" -v ctxt="$((lc - sc))" -v pk="$((lp - sp))" '
		{ n += $1
		  if ($NF ~ /^\(\/lib\/modules\/.*\/siw\.ko\)$|^\(\[siw_rs\]\)$/) d += $1
		  if ($NF ~ /^\((\/usr\/|\/lib\/x86_64-linux-gnu\/|\[vdso\])/) u += $1
		  line[NR] = $0 }
		END {
		  printf "## %s %s: result %s (%d messages); the %d messages more than in a run of %d cost %d samples, %d of them in the idle loop, %.3f per message outside it;", drv, name, v, long, m, short, all, all - n, n / m
		  printf " of them user space %.3f (%.1f%%), the kernel %.3f, the driver\047s own code %.4f (%.1f%%);", u / m, n ? 100 * u / n : 0, (n - u) / m, d / m, n ? 100 * d / n : 0
		  printf " %.2f context switches and %.2f packets (both ways) per message; per symbol: samples, per 1000 messages\n", ctxt / m, pk / m
		  for (i = 1; i <= NR && i <= 60; i++) {
		    c = line[i]; split(c, f, " "); sub(/^[-0-9]+ /, "", c)
		    printf "%8d %8.2f %s\n", f[1], f[1] * 1000 / m, c
		  }
		}' /tmp/bench-syms.txt >"$BENCH_PROFILE/$(tr ' ' _ <<<"$name")-$drv.txt"
	dmesg | grep -i perf | tail -n 3 >>"$BENCH_PROFILE/$(tr ' ' _ <<<"$name")-$drv.txt"
	# The driver's own code in the long run: every function, then the hottest places
	# (under TCG a sample lands where a translated block starts: read them as blocks).
	[ ! -s /tmp/bench-long.offs ] || {
		echo "# the driver's own code in the long run, by function (samples, symbol)"
		sed 's/+0x[0-9a-f]* / /' /tmp/bench-long.offs | sort | uniq -c | sort -rn
		echo "# the driver's own code in the long run, by place (samples, symbol+offset)"
		# (awk, not head: under pipefail, head leaving early fails the pipeline with SIGPIPE)
		sort /tmp/bench-long.offs | uniq -c | sort -rn | awk 'NR <= 40'
	} >>"$BENCH_PROFILE/$(tr ' ' _ <<<"$name")-$drv.txt"
	[ ! -s /tmp/bench-long.callers ] || {
		echo "# callers in the long run (samples): BENCH_CALLERS"
		cat /tmp/bench-long.callers
	} >>"$BENCH_PROFILE/$(tr ' ' _ <<<"$name")-$drv.txt"
}
# perf_n M: the perftest row in ROW (name|command) with M messages.
perf_n() {
	local name=${ROW%%|*} cmd
	read -r -a cmd <<<"$(sed "s/-n [0-9]*/-n $1/" <<<"${ROW#*|}")"
	run_perf "$name" "${cmd[@]}"
}
# tcp_n M: the TCP row moving M times 64 KiB.
tcp_n() { run_tcp -n $(($1 * 65536)); }
# profile_row DRIVER NAME|CMD: a perftest row, from its message count: 10 times as many
# more, and for a latency row 100 times (its 300 round trips cost less than the spread of
# the setup's cost from run to run).
profile_row() {
	local drv=$1 n k=11
	ROW=$2
	n=$(awk '{ for (i = 1; i < NF; i++) if ($i == "-n") print $(i + 1) }' <<<"${ROW#*|}")
	case "${ROW%%|*}" in *_lat*) k=101 ;; esac
	profile_cmd "$drv" "${ROW%%|*}" "$n" "$k" perf_n
}
# BENCH_TRACE (a host directory): instead of the table, each selected perftest row twice per
# driver, with BENCH_TRACE_N messages and three times as many, while QEMU logs every block
# it executes in module code (see tools/bench-trace.py, which counts the instructions).
# trace_ctl on FILE | off: asks the host to switch the log and waits until it has.
trace_seq=0
trace_ctl() {
	local i
	trace_seq=$((trace_seq + 1))
	echo "$*" >"$BENCH_TRACE/ctl.$trace_seq.tmp"
	mv "$BENCH_TRACE/ctl.$trace_seq.tmp" "$BENCH_TRACE/ctl.$trace_seq"
	# Guest time does not pass while the guest sleeps (-icount, sleep=off): a count of
	# polls, not seconds, bounds the wait.
	for i in $(seq 200000); do
		[ ! -e "$BENCH_TRACE/ack.$trace_seq" ] || return 0
		sleep 0.01
	done
	echo "# the host did not switch the log ($*)" >&2
}
if [ -n "${BENCH_TRACE:-}" ]; then
	echo 0 >/proc/sys/kernel/kptr_restrict
	# Where the kernel's text lies (KASLR), for BENCH_TRACE=kernel's disassembly of vmlinux.
	awk '$3 == "_stext" { print $1 }' /proc/kallsyms >"$BENCH_TRACE/kernel-text.txt"
	for drv in siw siw_rs; do
		bench_hosts "$drv"
		# Where the module's code lies, for the host's disassembly.
		for s in /sys/module/"$drv"/sections/.text*; do
			echo "$drv ${s##*/} $(cat "$s")"
		done >"$BENCH_TRACE/sections-$drv.txt"
		for b in "${perf[@]}"; do
			selected "${b%%|*}" || continue
			ROW=$b
			name=$(tr ' ' _ <<<"${b%%|*}")
			# A run not logged first, so that both logged runs find the tools, their
			# libraries and the page cache alike: what starting them costs then cancels
			# out of the difference (it did not, without: a whole-kernel count of the C
			# siw's write_rate 64 came out at -4474 per message).
			perf_n 100 >/dev/null
			for n in "$BENCH_TRACE_N" $((3 * BENCH_TRACE_N)); do
				trace_ctl on "exec-$name-$drv-$n.log"
				perf_n "$n" >"$BENCH_TRACE/result-$name-$drv-$n.txt"
				trace_ctl off
			done
		done
		two_hosts_down
	done
	exit 0
fi
if [ -n "${BENCH_PROFILE:-}" ]; then
	echo 0 >/proc/sys/kernel/kptr_restrict
	echo -1 >/proc/sys/kernel/perf_event_paranoid
	# Under TCG a sampling interrupt looks slow to the kernel, which would throttle the
	# sample rate down to almost nothing.
	echo 0 >/proc/sys/kernel/perf_cpu_time_max_percent
	for drv in siw siw_rs; do
		bench_hosts "$drv"
		for b in "${perf[@]}"; do
			selected "${b%%|*}" || continue
			profile_row "$drv" "$b"
		done
		# The ceiling, per 64 KiB: as many bytes as the 64 KiB Write row moves.
		if [ "$drv" = siw ] && selected "${tcp[0]%%|*}"; then
			profile_cmd tcp "${tcp[0]%%|*}" 200 11 tcp_n
		fi
		two_hosts_down
	done
	if any_selected "${crc[@]}"; then
		SIW_RS_PARAMS="${SIW_RS_PARAMS:+$SIW_RS_PARAMS }mpa_crc_required=1" bench_hosts siw_rs
		for b in "${crc[@]}"; do
			selected "${b%%|*}" || continue
			profile_row siw_rs "$b"
		done
		two_hosts_down
	fi
	exit 0
fi

declare -A res # res[DRIVER|NAME|ROUND]
# storage_group KIND DRIVER ROUND: the group's benchmarks; a failed group leaves its
# selected rows at "-".
storage_group() {
	local kind=$1 drv=$2 r=$3 line rc
	# Not tested by `if` or `||`: bash ignores errexit inside a subshell so tested.
	set +e
	(
		set -e
		trap "${kind}_bench_down" EXIT
		"${kind}_bench" "$drv"
	) >/tmp/bench-st.out 2>/tmp/bench-st.err
	rc=$?
	set -e
	if [ "$rc" != 0 ]; then
		echo "# $drv $kind round $r failed: $(tail -n 3 /tmp/bench-st.err | tr '\n' ' ')" >&2
	fi
	while IFS= read -r line; do
		case "$line" in "= "*) line=${line#= } ;; *) continue ;; esac
		res[$drv|${line%%|*}|$r]=${line#*|}
	done </tmp/bench-st.out
}

for r in $(seq "$rounds"); do
	for drv in siw siw_rs; do
		if any_selected "${perf[@]}" "${tcp[@]}"; then
			bench_hosts "$drv"
			for b in "${perf[@]}"; do
				name=${b%%|*}
				selected "$name" || continue
				read -r -a cmd <<<"${b#*|}"
				res[$drv|$name|$r]=$(run_perf "$name" "${cmd[@]}")
			done
			if [ "$drv" = siw ] && any_selected "${tcp[@]}"; then
				res[tcp|${tcp[0]%%|*}|$r]=$(run_tcp)
			fi
			two_hosts_down
		fi
		if [ "$drv" = siw_rs ] && any_selected "${crc[@]}"; then
			SIW_RS_PARAMS="${SIW_RS_PARAMS:+$SIW_RS_PARAMS }mpa_crc_required=1" \
				bench_hosts siw_rs
			for b in "${crc[@]}"; do
				name=${b%%|*}
				selected "$name" || continue
				read -r -a cmd <<<"${b#*|}"
				res[$drv|$name|$r]=$(run_perf "$name" "${cmd[@]}")
			done
			two_hosts_down
		fi
		if any_selected "${storage[@]:0:2}"; then storage_group nvme "$drv" "$r"; fi
		if any_selected "${storage[@]:2:2}"; then storage_group nfs "$drv" "$r"; fi
		for b in "${perf[@]}" "${crc[@]}" "${storage[@]}"; do
			name=${b%%|*}
			selected "$name" || continue
			echo "# round $r $drv $name: ${res[$drv|$name|$r]:--}"
		done
	done
	if selected "${tcp[0]%%|*}"; then
		echo "# round $r ${tcp[0]%%|*}: ${res[tcp|${tcp[0]%%|*}|$r]:--}"
	fi
done

# The TCP ceiling's median, for the bandwidth rows' fractions of it.
t=()
for r in $(seq "$rounds"); do t+=("${res[tcp|${tcp[0]%%|*}|$r]:--}"); done
tcpmed=$({ tr ' ' '\n' <<<"${t[*]}" | grep -v '^-$' || true; } | sort -g | awk '{ v[NR] = $1 }
	END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2); else print "-" }')

printf '\n%-18s %6s %10s %10s %9s %11s %6s %6s  %s\n' benchmark unit "C siw" siw_rs "siw_rs/C" \
	"pairs" "C/TCP" "rs/TCP" ""
for b in "${perf[@]}" "${crc[@]}" "${storage[@]}"; do
	name=${b%%|*}
	selected "$name" || continue
	c=() s=()
	for r in $(seq "$rounds"); do
		c+=("${res[siw|$name|$r]:--}")
		s+=("${res[siw_rs|$name|$r]:--}")
	done
	# Medians over the runs that gave a figure; ratios over the rounds where both did.
	awk -v name="$name" -v unit="$(unit_of "$name")" -v c="${c[*]}" -v s="${s[*]}" \
		-v tcp="$tcpmed" '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n == 0 ? "-" : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
	}
	function fmt(v) { return v == "-" ? "-" : sprintf(v >= 100 ? "%.0f" : "%.2f", v) }
	function frac(v) { return (v == "-" || tcp == "-" || name !~ /_bw/) ? "" : sprintf("%.2f", v / tcp) }
	BEGIN {
		# The CRC rows have no C siw figure (see crc=()).
		nocsiw = name ~ / crc$/
		n = split(c, C, " "); split(s, S, " ")
		nc = ns = nr = 0; lo = hi = ""; bad = 0
		for (i = 1; i <= n; i++) {
			if (C[i] != "-") cv[++nc] = C[i] + 0; else if (!nocsiw) bad++
			if (S[i] != "-") sv[++ns] = S[i] + 0; else bad++
			if (C[i] != "-" && S[i] != "-" && C[i] + 0 > 0) {
				q = (S[i] + 0) / (C[i] + 0); rv[++nr] = q
				if (lo == "" || q < lo) lo = q
				if (hi == "" || q > hi) hi = q
			}
		}
		mr = median(rv, nr); mc = median(cv, nc); ms = median(sv, ns)
		printf "%-18s %6s %10s %10s %9s %11s %6s %6s  %s\n", name, unit,
			nocsiw ? "n/a" : fmt(mc), fmt(ms),
			mr == "-" ? "-" : sprintf("%.2f", mr), nr ? sprintf("%.2f..%.2f", lo, hi) : "-",
			frac(mc), frac(ms), bad ? bad " run(s) FAILED" : ""
	}'
done
if selected "${tcp[0]%%|*}"; then
	printf '%-18s %6s %10s %10s  %s\n' "${tcp[0]%%|*}" MB/s "$tcpmed" "$tcpmed" \
		"(the ceiling: iperf3 over the same veth, median of ${t[*]})"
fi
echo "($rounds rounds, C siw then siw_rs in each, BENCH_PLACE=$place; medians; pairs: min..max of the per-round"
echo " ratios; C/TCP, rs/TCP: each driver's bandwidth over the TCP ceiling; bandwidth, IOPS"
echo " and msg/s: higher is better, latency: lower; guest time counts instructions)"
