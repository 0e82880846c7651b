# rdma-core's own test suite (pyverbs; Debian's python3-pyverbs, rdma-core 44), unedited,
# on one device whose netdev is host A's end of the veth, once per driver: siw_rs, the C
# siw and rxe (Soft-RoCE). Each run's pass, skip, fail and error counts are printed, and
# every test that did not pass or skip is named. siw_rs must have no failure and no error,
# and pass at least what the C siw passes. (The C siw's one GID is its MAC, which the
# suite's traffic tests refuse, so it passes the API tests alone; siw_rs's address GIDs
# let the traffic tests run. rxe's counts are shown beside them, not judged: its failures
# are rxe's.) Debian gzips the larger files of the installed suite, which then do not
# import: it runs from a gunzipped copy, through selftests/lib/pyverbs_run.py, which says
# why a wrapper and which test it skips on iWARP devices, and why (one that reads the data
# sink's memory at the source's Write completion, which RFC 5040 does not order).
. "$ROOT/selftests/lib/common.sh"
PV=/tmp/siw_rs-pyverbs
cleanup() {
	ip netns exec hostA rdma link delete pv 2>/dev/null
	rm -f /etc/libibverbs.d/rxe.driver
	modprobe -r rdma_rxe 2>/dev/null
	two_hosts_down
}
[ -d /usr/share/doc/rdma-core/tests ] || fail "no pyverbs tests: python3-pyverbs is not installed (tools/setup)"
rm -rf "$PV"
cp -r /usr/share/doc/rdma-core/tests "$PV"
gunzip -f "$PV"/*.gz
two_host_netns

# suite DRIVER [GID]: the suite on a device of link type DRIVER on va; its summary in SUM,
# each test's line in /tmp/pyverbs-DRIVER.out.
suite() {
	local drv=$1 gid=${2:-} out rc=0 bad
	ip netns exec hostA rdma link add pv type "$drv" netdev va || fail "rdma link add pv type $drv"
	for _ in $(seq 50); do
		[ "$(cat /sys/class/infiniband/pv/ports/1/state 2>/dev/null)" = "4: ACTIVE" ] && break
		sleep 0.2
	done
	[ -z "$gid" ] || gid=$(wait_gid_index pv "$gid")
	ip netns exec hostA timeout 500 /usr/bin/python3 "$ROOT/selftests/lib/pyverbs_run.py" "$PV" \
		--dev pv ${gid:+--gid "$gid"} >/tmp/pyverbs-"$drv".out 2>/tmp/pyverbs-"$drv".err || rc=$?
	ip netns exec hostA rdma link delete pv || fail "rdma link delete pv ($drv)"
	cp /tmp/pyverbs-"$drv".out /tmp/pyverbs-"$drv".err "${SIW_RS_ARTIFACTS:-/tmp}/" 2>/dev/null || true
	SUM=$(grep '^PYVERBS-SUMMARY ' /tmp/pyverbs-"$drv".out) ||
		fail "$drv: the suite printed no summary (exit $rc): $(tail -n 20 /tmp/pyverbs-"$drv".err)"
	log "$drv: ${SUM#PYVERBS-SUMMARY }"
	bad=$(grep -E '^PYVERBS (FAIL|ERROR|XPASS) ' /tmp/pyverbs-"$drv".out || true)
	[ -z "$bad" ] || sed "s/^/$drv: /" <<<"$bad" | cut -c1-240 | while read -r l; do log "$l"; done
}
count() { sed -nE "s/.* $1=([0-9]+).*/\\1/p" <<<"$2"; }

load_siw_rs
suite siw_rs 192.168.77.1
rs=$SUM
unload_siw_rs
load_siw
suite siw
c=$SUM
unload_siw
modprobe rdma_rxe || fail "modprobe rdma_rxe"
# The guest lists libsiw alone (guest.sh); rxe's provider for its run.
cp /tmp/siw_rs-ibverbs.d/rxe.driver /etc/libibverbs.d/ || fail "no rxe provider file"
suite rxe
rm -f /etc/libibverbs.d/rxe.driver
modprobe -r rdma_rxe || fail "modprobe -r rdma_rxe"

[ "$(count failed "$rs")" = 0 ] && [ "$(count errors "$rs")" = 0 ] ||
	fail "siw_rs: failures or errors in rdma-core's suite: $rs"
[ "$(count passed "$rs")" -ge "$(count passed "$c")" ] ||
	fail "siw_rs passes fewer of rdma-core's tests than the C siw: $rs; C siw: $c"
[ "$(count ran "$rs")" -gt 200 ] || fail "siw_rs: the suite ran only $(count ran "$rs") tests"
