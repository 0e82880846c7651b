#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# gen-bindings.sh BINDGEN KCMD PARAMS HEADER OUT INCDIR
#
# Runs bindgen over HEADER the way the kernel generated its own rust/bindings: the same
# bindgen options (rust/Makefile, rust/bindgen_parameters) and the same C flags, which are
# taken from KCMD, the kernel build tree's .bindings_generated.rs.cmd. 
set -euo pipefail
bindgen=$1 kcmd=$(realpath "$2") params=$(realpath "$3") header=$(realpath "$4")
out=$(realpath -m "$5") incdir=$(realpath "$6")
# The kernel's flags name paths relative to its build tree (objtree), which is where the
# .cmd file's rust/bindings/ directory sits.
cd "$(dirname "$kcmd")/../.."

# The saved command is "bindgen IN OPTS -o OUT -- CFLAGS -DMODULE ; sed ...": keep CFLAGS,
# minus the dependency-file option that names the kernel's own .d file.
flags=$(sed -n 's/^savedcmd_[^ ]* := //p' "$kcmd" | sed 's/ ; .*//; s/^.* -- //' |
	tr ' ' '\n' | grep -v '^-Wp,-MMD' | tr '\n' ' ')
[ -n "$flags" ] || { echo "gen-bindings: no C flags found in $kcmd" >&2; exit 1; }

# Both carry shell quoting, which rust/Makefile's $(shell ...) expansion also resolves.
eval "cflags=( $flags )"
# The kCFI enum encodings need #![feature(cfi_encoding)], which modules may not enable;
# siw_rs makes no indirect calls through those enum-typed function pointers.
eval "opts=( $(grep -Ev '^#|^$|cfi_encoding' "$params" | tr '\n' ' ') )"

"$bindgen" "$header" "${opts[@]}" \
	--rust-target 1.85 --use-core --with-derive-default --ctypes-prefix ffi \
	--no-layout-tests --no-debug '.*' --enable-function-attribute-detection \
	--allowlist-function 'rust_helper_.*|siw_rs_layout|siw_rs_current_holds|siw_rs_debug_on|siw_rs_log_(debug|warn)|crc32c|destroy_workqueue|kern_path|path_put|_?ib_.*|rdma_.*|iw_.*|(un)?register_(netdevice|inetaddr|inet6addr)_notifier|ip_sock_set_freebind|vfree|remap_vmalloc_range|get_random_u(32|64)|siphash_1u64|_?_?sock_create|sock_release|sock_set_reuseaddr|kernel_(bind|listen|connect|accept|sock_shutdown|getsockname|getpeername)|tcp_sock_set_(nodelay|keepidle|keepintvl|keepcnt|user_timeout)|sock_set_keepalive|lock_sock_nested|release_sock|tcp_sendmsg_locked|tcp_read_sock|kernel_(sendmsg|recvmsg)|do_sock_setsockopt|sock_no_linger|(add|remove)_wait_queue|skb_(prepare_seq_read|seq_read|abort_seq_read)|iov_iter_(bvec|kvec)' \
	--allowlist-type 'siw_.*|rust_sk_callbacks|path|wq_flags|ib_.*|iw_.*|rdma_.*|net_device|notifier_block|netdev_cmd|kvec|socket|msghdr|bio_vec|iov_iter|read_descriptor_t|sk_buff|skb_seq_state|sockaddr_storage|sockaddr_in6?|sock_type|sock_shutdown_cmd|sockptr_t|cmsghdr|wait_queue_entry|wait_queue_head|sctp_(sndinfo|rcvinfo|initmsg|setadaptation|event|sn_type|cmsg_type|sinfo_flags|msg_flags)' \
	--allowlist-var 'RDMA_DRIVER_SIW|SIW_.*|ARPHRD_.*|NETDEV_.*|NOTIFY_.*|ETH_ALEN|IB_.*|RDMA_.*|IW_.*|IBK_.*|AF_INET6?|IPPROTO_(TCP|SCTP)|SOL_SCTP|SCTP_(ADAPTATION_LAYER|INITMSG|EVENT|NODELAY|RECVRCVINFO|FUTURE_ASSOC)|MSG_(DONTWAIT|MORE|EOR|SPLICE_PAGES|NOSIGNAL)|ITER_SOURCE|O_NONBLOCK|TCP_(ESTABLISHED|LISTEN|SYN_SENT|SYN_RECV)|PAGE_.*' \
	--opaque-type 'sock' \
	-o "$out.tmp" -- "${cflags[@]}" -DMODULE -I"$incdir"
# Same fix-ups as rust/Makefile: const helpers lose their prefix, and so do function helpers
# (rust_helper_NAME is called NAME, the name of the static inline function it wraps).
sed -Ei -e 's/pub const RUST_CONST_HELPER_([a-zA-Z0-9_]*)/pub const \1/g' \
	-e 's/pub fn rust_helper_([a-zA-Z0-9_]*)/#[link_name = "rust_helper_\1"]\n    pub fn \1/g' \
	"$out.tmp"
mv "$out.tmp" "$out"

# The Rust side of the layout check (siw_rs/glue/layout.rs): the entries of
# siw_rs_layout.h, measured on the bindings, in the same order as helpers/layout.c measures them.
layout=$(dirname "$out")/layout_generated.rs
sed -nE \
	-e 's/^SIW_RS_SIZE\((struct )?([A-Za-z0-9_]+)\)$/    ("sizeof(\1\2)", size_of::<bindings::\2>()),/p' \
	-e 's/^SIW_RS_OFFSET\((struct )?([A-Za-z0-9_]+), ([A-Za-z0-9_]+)\)$/    ("offsetof(\1\2, \3)", offset_of!(bindings::\2, \3)),/p' \
	"$incdir/siw_rs_layout.h" >"$layout.tmp"
[ "$(grep -c '^SIW_RS_' "$incdir/siw_rs_layout.h")" = "$(wc -l <"$layout.tmp")" ] ||
	{ echo "gen-bindings: siw_rs_layout.h has entries this script cannot read" >&2; exit 1; }
{ echo '['; cat "$layout.tmp"; echo ']'; } >"$layout"
rm -f "$layout.tmp"
