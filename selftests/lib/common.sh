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
