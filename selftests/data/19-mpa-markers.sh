# MPA markers (RFC 5044 section 4.3), asked for with mpa_markers=1. Between two siw_rs
# devices both ends ask, so both insert them. rping -V and data_verify check the data;
# selftests/lib/mpa_markers.py checks every marker in a capture of host B's veth against
# the RFC, independently of siw_rs's code: one at every 512th octet of each stream's Full
# Operation Phase, pointing at the length field of its FPDU. A second round adds the CRC,
# which covers the markers (the script recomputes it), and a peer-to-peer RTR Write (an
# FPDU framed before any request). The C siw refuses markers (siw_cm.c rejects a request
# with M and gives up on a reply with M): a siw_rs that asks for them cannot connect to it
# in either direction, and siw_rs without the parameter still can.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; pkill tcpdump; pkill data_verify; two_hosts_down; }

# markers_round CRC: rping and data_verify between two siw_rs, markers checked.
markers_round() {
	two_hosts siw_rs siw_rs
	capture_start
	rping_sizes 5 64 4096 65535
	frames=$(capture_frames)
	[ "$(grep -c "^req .*crc=$1 markers=1" <<<"$frames")" = 3 ] || fail "requests: $frames"
	[ "$(grep -c "^rep .*crc=$1 markers=1" <<<"$frames")" = 3 ] || fail "replies: $frames"
	out=$(python3 "$ROOT/selftests/lib/mpa_markers.py" /tmp/mpa.pcap "$1") ||
		fail "markers in the capture: $out"
	echo "$out" | sed 's/^/# /'
	data_verify -- -m 2
	two_hosts_down
}

export SIW_RS_PARAMS=mpa_markers=1
markers_round 0
log "markers: rping and data_verify passed, every marker as RFC 5044 says"
export SIW_RS_PARAMS="mpa_markers=1 mpa_crc_required=1 peer_to_peer=2"
markers_round 1
log "markers with CRC and an RTR Write: passed, CRCs cover the markers"

# Against the C siw, both ways: the connection is refused, nothing hangs.
export SIW_RS_PARAMS=mpa_markers=1
for p in "siw_rs siw" "siw siw_rs"; do
	set -- $p
	two_hosts "$1" "$2"
	on_b timeout 60 rping -s -a 192.168.77.2 -C 1 -S 64 -V >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	t0=$SECONDS rc=0
	out=$(on_a timeout 60 rping -c -a 192.168.77.2 -C 1 -S 64 -V -v 2>&1) || rc=$?
	[ $rc != 0 ] || fail "$1 -> $2 connected with markers asked for: $out"
	# Refused, not left hanging until the timeout ended the client.
	[ $rc != 124 ] && [ $rc != 137 ] && [ $((SECONDS - t0)) -lt 30 ] ||
		fail "$1 -> $2: the client was not refused, it hung ($((SECONDS - t0)) s, exit $rc): $out"
	[ "$(grep -c '^ping data' <<<"$out" || true)" = 0 ] || fail "$1 -> $2: data moved: $out"
	# The server itself, not the subshell that started it: left running until its timeout, it
	# holds its device's deletion (or the next case's port) for up to 60 s.
	pkill -x rping || true
	wait $srv 2>/dev/null || true
	# The C siw as responder answers with an MPA Reject, which siw_rs counts.
	if [ "$1" = siw_rs ]; then
		[ "$(counter "$DEV_A" connections_refused)" -ge 1 ] ||
			fail "siw_rs counted no refusal: $(rdma statistic show link "$DEV_A/1")"
	fi
	log "$1 -> $2 with markers asked for: refused ($(tail -n 1 <<<"$out"))"
	two_hosts_down
done
unset SIW_RS_PARAMS
two_hosts siw_rs siw
rping_sizes 2 64
log "without mpa_markers siw_rs still connects to the C siw"
