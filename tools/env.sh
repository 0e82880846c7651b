# Sourced by the tools: the toolchain and cache locations siw_rs builds with.
# Rust for the kernel is Debian's rustc-web (rustup's rustc comes first on PATH and has
# no library source); host crates use rustup's cargo.
# A script that runs under errexit says which command failed, and where, before it ends:
# a bare "Error 2" from make is no help to a newcomer.
case $- in
*e*)
	set -E
	trap 'rc=$?; printf "%s: line %s: \"%s\" failed (exit %s)\n" "${0##*/}" "$LINENO" "$BASH_COMMAND" "$rc" >&2' ERR
	;;
esac
SIW_RS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SIW_RS_CACHE=${SIW_RS_CACHE:-/var/lib/siw_rs}
SIW_RS_KVER=${SIW_RS_KVER:-7.3}
KSRC=${KSRC:-$SIW_RS_CACHE/linux-source-$SIW_RS_KVER}
export PATH="$HOME/.cargo/bin:$PATH"
# pip puts vng next to the Python that installed it (pyenv's, or /usr/local/bin).
[ -d "$HOME/.pyenv/shims" ] && PATH="$PATH:$HOME/.pyenv/shims"
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null); then
	PATH="$PATH:$(dirname "$py")"
fi
# How every tool boots a VM (QEMU under TCG, the host's root filesystem): `vng "${SIW_RS_VNG[@]}"
# -r KDIR ...`. The root is 9p (forced, so these flags are always the ones in use) with
# cache=loose: the guest keeps what it read of the host's files in its page cache. Without it,
# each exec read its binary and libc again through 9p: 210 ms per /bin/true and 1.5 s per
# python3 start under TCG, against 90 ms and 0.7 s with the cache, which the shell-driven
# tests do thousands of times. The host's files must not change while a VM runs (they do not:
# the guest sees the root read-only, and the tools build before they boot).
SIW_RS_VNG=(--disable-kvm --cpus 2 --memory 2G --user root --force-9p
            --append "rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose")
KMAKE_VARS=(LLVM=-19 RUSTC=/usr/bin/rustc BINDGEN="$(command -v bindgen || echo bindgen)"
            RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library)

# Kernel flavours, each cached in a directory of its own: "test" (tools/kernel.config,
# with lockdep, kmemleak and the other debugging the selftests rely on); "bench" and
# "kasan", that kernel with the options of tools/kernel-bench.config (no lock or memory
# debugging, which would multiply the cost of every lock and allocation and distort any
# timing) or tools/kernel-kasan.config (KASAN and UBSAN on top) overriding it.
SIW_RS_KFLAVOR=${SIW_RS_KFLAVOR:-test}

# siw_rs_fragment: the configuration fragment of the flavour, one option per line.
siw_rs_fragment() {
	local base=$SIW_RS_ROOT/tools/kernel.config over=$SIW_RS_ROOT/tools/kernel-$SIW_RS_KFLAVOR.config
	case $SIW_RS_KFLAVOR in
	test) cat "$base" ;;
	bench | kasan)
		# The base fragment without the options the override sets, then the override.
		grep -v -f <(sed -n 's/^\(CONFIG_[A-Za-z0-9_]*=\).*/^\1/p' "$over") "$base"
		cat "$over"
		;;
	*) printf 'unknown kernel flavour SIW_RS_KFLAVOR=%s (test, bench or kasan)\n' "$SIW_RS_KFLAVOR" >&2
	   return 1 ;;
	esac
}

# siw_rs_kflavor_of DIR: the flavour of a cached build directory, from its name.
siw_rs_kflavor_of() {
	case ${1##*/} in kbuild-*-bench-*) echo bench ;; kbuild-*-kasan-*) echo kasan ;; *) echo test ;; esac
}

# The cache key: kernel version, flavour, configuration fragment and toolchain.
siw_rs_kbuild_dir() {
	local h tag=
	[ "$SIW_RS_KFLAVOR" = test ] || tag=$SIW_RS_KFLAVOR-
	h=$( { siw_rs_fragment
	       sed -n 's/^KBUILD_RECIPE_VERSION=//p' "$SIW_RS_ROOT/tools/build-kernel"
	       # Absent before tools/setup: tolerated here, reported by the tools that need them.
	       head -5 "$KSRC/Makefile" 2>/dev/null || true
	       /usr/bin/rustc --version 2>/dev/null || true
	       { clang-19 --version 2>/dev/null || true; } | head -1
	     } | sha256sum | cut -c1-12)
	echo "$SIW_RS_CACHE/kbuild-$SIW_RS_KVER-$tag$h"
}

# siw_rs_vm_sees DIR...: fails, saying why, when a VM could not see a DIR of the host as it
# is. virtme-ng's init mounts an empty tmpfs over these (the guest's writable scratch
# places), hiding a kernel build's modules (`modprobe` finds none) or the repository under
# them. /tmp is not among them. Called by the tools that boot a VM, on the kernel build and
# the repository; the build-only tests (tools/test-tools) keep their caches under /tmp.
siw_rs_vm_sees() {
	local d hidden
	for d in "$@"; do
		d=$(realpath -m "$d")
		for hidden in /var/log /var/tmp /var/cache /var/spool/rsyslog /var/lib/portables \
			/var/lib/machines /var/lib/private /var/lib/apt /var/lib/snapd/cookie /var/lib/sudo; do
			case $d/ in
			"$hidden"/*)
				printf '%s: %s is under %s, which the VM covers with an empty tmpfs; move it (SIW_RS_CACHE for the kernel cache)\n' \
					"${0##*/}" "$d" "$hidden" >&2
				return 1 ;;
			esac
		done
	done
}
