# Every connection-less verbs object path (device/port/GID queries, PD, CQ, QP, SRQ, MR,
# completion channel, teardown order, process exit with live objects) through unmodified
# libibverbs + libsiw: verbs_objects prints one line per check, and its transcript on
# siw_rs must equal the one on the kernel's C siw (same kind of netdev: the two ends of a
# veth pair), but for the SQ flushes the C siw omits (see below). A few absolute expectations taken from the C siw's code pin the reference
# down, so that the comparison cannot pass on two equally broken transcripts.
. "$ROOT/selftests/lib/common.sh"
BIN=$TESTBIN/verbs_objects
OUT=/tmp/verbs_objects.out
cleanup() {
	rdma link delete siw_rs1 2>/dev/null || true
	rdma link delete siw1 2>/dev/null || true
	ip link del va 2>/dev/null || true
	unload_siw_rs
	unload_siw
}

load_siw_rs
load_siw
veth_pair va vb
ip link set va mtu 1500; ip link set vb mtu 1500
# udev gives new veths a persistent MAC shortly after creation; a device created before
# that keeps the old MAC as its GID, and the GID/GUID checks would flap.
udev_settle
rdma link add siw1 type siw netdev vb
rdma link add siw_rs1 type siw_rs netdev va

# run DEVICE TAG: transcript in $OUT.TAG; a crash or hang shows up as a last line that is
# not "end" plus an "exit status" line.
run() {
	local rc=0
	timeout 300 "$BIN" "$1" >"$OUT.$2" 2>"$OUT.$2.stderr" || rc=$?
	[ $rc = 0 ] || echo "exit status $rc" >>"$OUT.$2"
}
run siw1 c
run siw1 c2
run siw_rs1 rs

a=$OUT.c
[ "$(tail -n 1 "$a")" = end ] || fail "verbs_objects did not complete on the C siw: $(tail -n 5 "$a")"
# The reference itself must be deterministic, or the comparison means nothing.
diff -u "$a" "$OUT.c2" >&2 || fail "two runs on the C siw differ"

# Absolute expectations: the C siw's behaviour as read in siw_verbs.c and rdma-core's
# providers/siw/siw.c, so that two equally broken transcripts cannot pass.
[ "$(wc -l <"$a")" -ge 300 ] || fail "C siw transcript has only $(wc -l <"$a") lines"
# One grep for all (process start-up is slow under TCG). Among them: queue sizes rounded up
# to a power of two (CQ, QP, SRQ); the limits; no RTS without the CM; ERR flushing the RQ
# into the CQ and firing the armed channel; CQ overflow raising CQ_ERR; the libsiw ring
# protocol (doorbell ENOTCONN, full rings); the core's EBUSY rules; kernel cleanup at exit.
missing=$(grep -vxF -f "$a" <<'EOF'
device.open -> ok
  max_qp=102400 max_qp_wr=32768 max_sge=6 max_sge_rd=1 max_cq=102400 max_cqe=3276800
gid.query port=1 index=0 -> ok
gid[0] bytes 0-5 == netdev MAC: yes, bytes 6-15 zero: yes
node_guid == EUI-64(netdev MAC): yes
cq.create cqe=1 -> ok cqe=1
cq.create cqe=100 -> ok cqe=128
cq.create cqe=4097 -> ok cqe=8192
cq.create cqe=max_cqe+1(3276801) -> EINVAL
cq.poll n=4 on empty CQ -> 0
  qp.query -> ok state=INIT cap=[sw=128 rw=128 ss=3 rs=3 inl=80] init_cap=[sw=128 rw=128 ss=3 rs=3 inl=80] qp_type=RC
  srq.query(raw) max_wr=128 max_sge=6 limit=0
qp.create RC sw=1 rw=1 ss=7 rs=1 inl=0 -> EINVAL
qp.create RC sw=1 rw=1 ss=1 rs=1 inl=81 -> EINVAL
qp.create UD sw=1 rw=1 ss=1 rs=1 inl=0 -> EOPNOTSUPP
qp.modify qp_state=RTS mask=STATE -> EINVAL | query state=INIT
qp.modify qp_state=ERR mask=STATE -> ok | query state=ERR
cq.poll recv CQ after ERR -> 8
channel after ERR flush (armed) -> event, cq=expected
async after overflow -> event CQ error cq=expected
qp.post_recv until full -> 1 more posted, then ret=-ENOMEM
qp.post_send INIT SEND num_sge=1 (doorbell) -> ret=-1 errno=ENOTCONN bad_wr=#-1
raw POLL_CQ -> EOPNOTSUPP
srq.modify mask=MAX_WR max_wr=200 limit=0 -> EOPNOTSUPP | query(raw) max_wr=128 max_sge=4 limit=0
srq.post_recv until full -> 127 more posted, then ret=-ENOMEM
mr.reg page-aligned len=4096 access=RW -> EINVAL
mr.reg page-aligned len=0 access=LW -> EINVAL
mr.reg unmapped len=4096 access=LW -> EFAULT
mr.reg mmap len=67108864 access=LW|RW|RR -> ok lkey==rkey=yes lkey!=0=yes key_byte=0x00 | dereg -> ok
mr.reg x1000 (4 KiB each) -> 1000 ok, lkeys distinct=yes, all lkey==rkey=yes
cq.destroy (send CQ of a QP) -> EBUSY
pd.dealloc (MR on it) -> EBUSY
restrack after cleanup: pd=0 cq=0 qp=0 mr=0 srq=0 ctx=1
restrack in child before exit: pd=1 cq=2 qp=2 mr=2 srq=1 ctx=2
fork.child -> exited status=0
restrack after child exit: pd=0 cq=0 qp=0 mr=0 srq=0 ctx=1
restrack after close: pd=0 cq=0 qp=0 mr=0 srq=0 ctx=0
EOF
) || true
[ -z "$missing" ] || fail "C siw transcript lacks:"$'\n'"$missing"

# Deliberate differences. Two about SQEs a user posted to a QP that is (or goes) in
# ERROR. The verbs spec flushes every outstanding WR on the move to ERROR, and completes a
# WR posted in ERROR with a flush. The C siw does neither for a user QP: from INIT it
# flushes the RQ only, and its doorbell in ERROR flushes nothing, so those SQEs never
# complete. siw_rs flushes them. Each side must show exactly its own behaviour here; the
# rest of the transcripts must be equal.
sq_flush_c='cq.poll after ERR (SQ of a never-connected QP) -> 0
cq.poll after post_send in ERR -> 0'
sq_flush_rs='cq.poll after ERR (SQ of a never-connected QP) -> 4
  wc wr_id=4 status=Work Request Flushed Error opcode=SEND byte_len=0 qp_num=self wc_flags=0x0 vendor_err=0
  wc wr_id=5 status=Work Request Flushed Error opcode=RDMA_WRITE byte_len=0 qp_num=self wc_flags=0x0 vendor_err=0
  wc wr_id=6 status=Work Request Flushed Error opcode=RDMA_READ byte_len=0 qp_num=self wc_flags=0x0 vendor_err=0
  wc wr_id=7 status=Work Request Flushed Error opcode=SEND byte_len=0 qp_num=self wc_flags=0x0 vendor_err=0
cq.poll after post_send in ERR -> 2
  wc wr_id=20 status=Work Request Flushed Error opcode=SEND byte_len=0 qp_num=other wc_flags=0x0 vendor_err=0
  wc wr_id=30 status=Work Request Flushed Error opcode=SEND byte_len=0 qp_num=self wc_flags=0x0 vendor_err=0'
# sq_flush_lines FILE: the lines of those two polls (each header and its wc lines).
sq_flush_lines() {
	awk '/^cq\.poll after (ERR \(SQ of a never-connected QP\)|post_send in ERR) ->/ { p = 1; print; next }
	     p && /^  wc / { print; next } { p = 0 }' "$1"
}
# without_sq_flush FILE: FILE without them.
without_sq_flush() {
	awk '/^cq\.poll after (ERR \(SQ of a never-connected QP\)|post_send in ERR) ->/ { p = 1; next }
	     p && /^  wc / { next } { p = 0; print }' "$1"
}
[ "$(sq_flush_lines "$a")" = "$sq_flush_c" ] ||
	fail "C siw SQ flush lines changed:"$'\n'"$(sq_flush_lines "$a")"
if [ "$(sq_flush_lines "$OUT.rs")" != "$sq_flush_rs" ]; then
	[ "$(tail -n 1 "$OUT.rs")" = end ] || fail "verbs_objects did not complete on siw_rs: $(tail -n 5 "$OUT.rs")"
	fail "siw_rs SQ flush lines:"$'\n'"$(sq_flush_lines "$OUT.rs")"$'\n'"expected:"$'\n'"$sq_flush_rs"
fi
without_sq_flush "$a" >"$a.cmp"
without_sq_flush "$OUT.rs" >"$OUT.rs.cmp"

# Three more, of connections without rdma_cm (README "Connections without rdma_cm"): the
# GID table has 32 entries on siw_rs (the netdev's addresses after GID 0; va has its IPv6
# link-local one), GID 0 alone on the C siw; and an RTR with an address vector but no
# global route is refused (EINVAL) by siw_rs, ignored by the C siw. Each side must show
# exactly its own line; siw_rs's are then put in the C siw's words for the comparison.
differs() { # differs C_LINE RS_LINE
	grep -qxF -- "$1" "$a.cmp" || fail "C siw transcript lacks: $1"
	grep -qxF -- "$2" "$OUT.rs.cmp" || fail "siw_rs transcript lacks: $2"
	C=$1 RS=$2 awk '$0 == ENVIRON["RS"] { print ENVIRON["C"]; next } { print }' \
		"$OUT.rs.cmp" >"$OUT.rs.cmp.tmp" && mv "$OUT.rs.cmp.tmp" "$OUT.rs.cmp"
}
port_c=$(grep -m1 '^port.query port=1 -> ok' "$a.cmp")
differs "$port_c" "${port_c/gid_tbl_len=1 /gid_tbl_len=32 }"
differs 'gid.query port=1 index=1 -> ret=-1 errno=EINVAL' 'gid.query port=1 index=1 -> ok'
rtr='qp.modify qp_state=RTR mask=STATE|AV|PATH_MTU|RQ_PSN|MIN_RNR_TIMER|MAX_DEST_RD_ATOMIC|DEST_QPN (IB-style)'
differs "$rtr -> ok | query state=INIT" "$rtr -> EINVAL | query state=INIT"
# No atomics for user space, through either query, as the C siw: libsiw cannot post one
# (kernel consumers get RFC 7306's where both ends agree; README "RFC 7306").
grep -q '^  atomic_cap=0 ' "$OUT.rs.cmp" || fail "siw_rs's ibv_query_device gives atomic_cap other than 0"
grep -q '^  atomic_cap_ex=0 ' "$OUT.rs.cmp" ||
	fail "siw_rs's ibv_query_device_ex gives atomic capabilities: $(grep atomic_cap_ex "$OUT.rs.cmp")"

# The comparison. verbs_objects prints nothing that legitimately differs between two
# devices (names, GUIDs, GIDs, MACs, keys, QP numbers and vendor_part_id are only compared
# against each other inside the program), so nothing else is filtered out.
if ! diff -q "$a.cmp" "$OUT.rs.cmp" >/dev/null; then
	[ -s "$OUT.rs.stderr" ] && sed 's/^/siw_rs stderr: /' "$OUT.rs.stderr" | tail -n 5 >&2
	diff -u "$a.cmp" "$OUT.rs.cmp" | head -n 25 >&2 || true
	fail "verbs_objects transcripts differ between the C siw (-) and siw_rs (+):" \
		"$(diff "$a.cmp" "$OUT.rs.cmp" | grep -c '^[<>]') lines; first hunk" \
		"$(diff "$a.cmp" "$OUT.rs.cmp" | head -n 1)"
fi
echo "$(wc -l <"$a.cmp") lines equal, plus the SQ flush lines as expected on each side"
