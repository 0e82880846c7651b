# siw_rs loaded with mpa_crc_required=1: every connection uses the MPA CRC, whichever side
# siw_rs is on. tcpdump on host B shows the MPA frames: as initiator siw_rs asks for CRC
# (C bit), as responder it sets C in the reply even when the C siw (default: no CRC) did
# not ask, and the C siw then sends and checks CRCs too; rping -V verifies the data.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; pkill tcpdump; two_hosts_down; }
export SIW_RS_PARAMS=mpa_crc_required=1
# pairing, then the expected request and reply CRC bits
for p in "siw_rs siw_rs 1 1" "siw siw_rs 0 1" "siw_rs siw 1 1"; do
	set -- $p
	two_hosts "$1" "$2"
	capture_start
	rping_sizes 10 64 4096 65535
	frames=$(capture_frames)
	[ "$(grep -c "^req .*crc=$3" <<<"$frames")" = 3 ] || fail "$1 -> $2: requests: $frames"
	[ "$(grep -c "^rep .*crc=$4" <<<"$frames")" = 3 ] || fail "$1 -> $2: replies: $frames"
	log "$1 -> $2: MPA request crc=$3, reply crc=$4, data verified"
	two_hosts_down
done
