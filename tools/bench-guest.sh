#!/usr/bin/env bash
# The guest half of tools/bench: each benchmark over the C siw, then over siw_rs; prints
# one line per benchmark with both results and siw_rs's share of the C siw's.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROOT PATH="/usr/sbin:/sbin:$PATH"
. "$ROOT/selftests/lib/common.sh"
filter=${1:-}

# name | perftest command line (server and client add -R -d DEV and the address)
benches=(
	"write_bw 4K|ib_write_bw -s 4096 -n 1000"
	"write_bw 64K|ib_write_bw -s 65536 -n 200"
	"read_bw 64K|ib_read_bw -s 65536 -n 200"
	"send_bw 64K|ib_send_bw -s 65536 -n 200"
	"write_lat 64|ib_write_lat -s 64 -n 300"
	"send_lat 64|ib_send_lat -s 64 -n 300"
	"read_lat 64|ib_read_lat -s 64 -n 300"
)

# run_one CMD...: runs the benchmark once between host A (client) and B (server); prints
# the figure: average MB/s for *_bw, typical latency in us for *_lat.
run_one() {
	local out i
	for i in 1 2 3; do
		on_b timeout 600 "$@" -R -d "$DEV_B" >/tmp/bench-s.out 2>&1 &
		listening_b 18515
		out=$(on_a timeout 600 "$@" -R -d "$DEV_A" 192.168.77.2 2>&1) || true
		wait || true
		case "$1" in
		*_bw) awk -v s="$3" '$1 == s && NF >= 4 { print $4; exit }' <<<"$out" ;;
		*_lat) awk -v s="$3" '$1 == s && NF >= 5 { print $5; exit }' <<<"$out" ;;
		esac | grep . && return 0
		has 'Correlation coefficient' "$out" || break
	done
	echo "failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')" >&2
	echo "-"
}

declare -A res
for drv in siw siw_rs; do
	two_hosts "$drv" "$drv"
	for b in "${benches[@]}"; do
		name=${b%%|*}
		[ -n "$filter" ] && ! has "$filter" "$name" && continue
		read -r -a cmd <<<"${b#*|}"
		res[$drv:$name]=$(run_one "${cmd[@]}")
		echo "# $drv $name: ${res[$drv:$name]}"
	done
	two_hosts_down
done

printf '%-14s %12s %12s %10s\n' benchmark "C siw" siw_rs "siw_rs/C"
for b in "${benches[@]}"; do
	name=${b%%|*}
	[ -n "$filter" ] && ! has "$filter" "$name" && continue
	c=${res[siw:$name]} r=${res[siw_rs:$name]}
	unit=MB/s; case "$name" in *lat*) unit=us ;; esac
	ratio=$(awk -v c="$c" -v r="$r" 'BEGIN { if (c + 0 > 0 && r + 0 > 0) printf "%.2f", r / c; else print "-" }')
	printf '%-14s %9s %-2s %9s %-2s %10s\n' "$name" "$c" "$unit" "$r" "$unit" "$ratio"
done
echo "(bandwidth: higher is better; latency: lower is better; guest time counts instructions)"
