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

_siw_rs_exit() {
	local rc=$?
	set +e
	if declare -F cleanup >/dev/null; then cleanup >/dev/null 2>&1; fi
	exit $rc
}
trap _siw_rs_exit EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "# $*"; }

# has REGEX TEXT: TEXT contains a line matching the extended REGEX.
has() { grep -Eq -- "$1" <<<"$2"; }

load_siw_rs() { has '^siw_rs ' "$(lsmod)" || insmod "$SIW_RS_KO"; }
unload_siw_rs() { if has '^siw_rs ' "$(lsmod)"; then rmmod siw_rs; fi; }
load_siw() { has '^siw ' "$(lsmod)" || modprobe siw; }
unload_siw() { if has '^siw ' "$(lsmod)"; then rmmod siw; fi; }

# rdma_dev_exists NAME: the RDMA device is registered (sysfs and the rdma tool agree).
rdma_dev_exists() {
	[ -e "/sys/class/infiniband/$1" ] && has "^link $1/" "$(rdma link show 2>/dev/null)"
}

# veth_pair A B: a veth pair with both ends up, in the current namespace. udev gives a new
# veth its persistent MAC shortly after creation; settle first, or a device created on it
# keeps the old MAC as its GID.
veth_pair() {
	ip link add "$1" type veth peer name "$2"
	udevadm settle
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

# two_hosts DRV_A DRV_B: network namespaces hostA and hostB joined by a veth pair
# (va 192.168.77.1, vb 192.168.77.2), with an RDMA device of driver DRV_A (siw_rs or siw)
# on va, named dev_a, and one of DRV_B on vb, named dev_b. The names are exported as
# DEV_A and DEV_B; undo with two_hosts_down.
two_hosts() {
	local a=$1 b=$2
	case "$a$b" in *siw_rs*) load_siw_rs ;; esac
	case " $a $b " in *" siw "*) load_siw ;; esac
	ip netns add hostA
	ip netns add hostB
	ip link add va netns hostA type veth peer name vb netns hostB
	# udev gives new veths their persistent MACs; the GID is the MAC at device creation.
	udevadm settle
	ip -n hostA addr add 192.168.77.1/24 dev va
	ip -n hostB addr add 192.168.77.2/24 dev vb
	ip -n hostA link set va up
	ip -n hostB link set vb up
	ip -n hostA link set lo up
	ip -n hostB link set lo up
	DEV_A=${a}_a DEV_B=${b}_b
	ip netns exec hostA rdma link add "$DEV_A" type "$a" netdev va
	ip netns exec hostB rdma link add "$DEV_B" type "$b" netdev vb
	export DEV_A DEV_B
}

two_hosts_down() {
	ip netns exec hostA rdma link delete "${DEV_A:-none}" 2>/dev/null
	ip netns exec hostB rdma link delete "${DEV_B:-none}" 2>/dev/null
	ip netns del hostA 2>/dev/null
	ip netns del hostB 2>/dev/null
	unload_siw_rs 2>/dev/null
	unload_siw 2>/dev/null
	return 0
}

# on_a CMD... / on_b CMD...: run in host A / B.
on_a() { ip netns exec hostA "$@"; }
on_b() { ip netns exec hostB "$@"; }

# rping_sizes N SIZE...: for each SIZE, an rping -V server on host B and client on host A,
# N iterations; every ping's data is verified by rping on both sides, and the client must
# report N verified pings.
rping_sizes() {
	local count=$1 size out n srv
	shift
	for size in "$@"; do
		on_b timeout 120 rping -s -a 192.168.77.2 -C "$count" -S "$size" -V >/tmp/rping-s.out 2>&1 &
		srv=$!
		sleep 1
		if ! out=$(on_a timeout 120 rping -c -a 192.168.77.2 -C "$count" -S "$size" -V -v 2>&1); then
			wait $srv || true
			fail "rping client, size $size: $out; server: $(cat /tmp/rping-s.out)"
		fi
		wait $srv || fail "rping server, size $size: $(cat /tmp/rping-s.out)"
		n=$(grep -c '^ping data' <<<"$out" || true)
		[ "$n" = "$count" ] || fail "size $size: $n of $count pings verified: $out; server: $(cat /tmp/rping-s.out)"
		log "size $size: $count pings verified"
	done
}
