# Sourced by the tests (inside the VM). Helpers for loading drivers and asserting.
# shellcheck shell=bash
set -euo pipefail
: "${ROOT:?}"
SIW_RS_KO=$ROOT/siw_rs/siw_rs.ko

fail() { echo "FAIL: $*" >&2; exit 1; }
log() { echo "# $*"; }

load_siw_rs() { lsmod | grep -q '^siw_rs ' || insmod "$SIW_RS_KO"; }
unload_siw_rs() { if lsmod | grep -q '^siw_rs '; then rmmod siw_rs; fi; }
load_siw() { lsmod | grep -q '^siw ' || modprobe siw; }

# rdma_dev_exists NAME: the RDMA device is registered (rdma tool and sysfs agree).
rdma_dev_exists() {
	[ -e "/sys/class/infiniband/$1" ] && rdma link show 2>/dev/null | grep -q "link $1/"
}

# veth_pair A B: a veth pair with both ends up, in the current namespace.
veth_pair() {
	ip link add "$1" type veth peer name "$2"
	ip link set "$1" up
	ip link set "$2" up
}

# expect_fail_with MSG CMD...: CMD fails and its output contains MSG.
expect_fail_with() {
	local msg=$1 out
	shift
	if out=$("$@" 2>&1); then
		fail "expected '$*' to fail, it succeeded: $out"
	fi
	grep -qi -- "$msg" <<<"$out" || fail "'$*' failed without '$msg': $out"
}
