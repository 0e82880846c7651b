# siw_rs loaded with mpa_revision=1: an MPA revision 1 request (no RFC 6581 IRD/ORD word),
# answered with revision 1, to siw_rs (rping -V) and to the C siw (ucmatose and
# rdma_server/rdma_client: as a revision 1 responder the C siw gives the ULP IRD/ORD 0, so
# rping's server could not issue its RDMA Reads there). The C siw as initiator insists on
# a revision 2 reply, so it cannot connect to a revision 1 responder at all (anchor-siw.md
# O5), the limitation siw_rs's initiator does not have.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; pkill ucmatose; pkill rdma_server; pkill tcpdump; two_hosts_down; }
export SIW_RS_PARAMS=mpa_revision=1
for p in "siw_rs siw_rs rping" "siw_rs siw cm"; do
	set -- $p
	two_hosts "$1" "$2"
	capture_start
	if [ "$3" = rping ]; then rping_sizes 10 64 4096; else cm_tools; fi
	frames=$(capture_frames)
	[ "$(grep -c '^req rev=1 .*enhanced=0' <<<"$frames")" = 2 ] || fail "$1 -> $2: requests: $frames"
	[ "$(grep -c '^rep rev=1 .*enhanced=0' <<<"$frames")" = 2 ] || fail "$1 -> $2: replies: $frames"
	log "$1 -> $2: MPA revision 1 requests and replies, $3 passed"
	two_hosts_down
done
# Without the parameter siw_rs offers revision 2 with the IRD/ORD word.
unset SIW_RS_PARAMS
two_hosts siw_rs siw_rs
capture_start
rping_sizes 5 64
frames=$(capture_frames)
has '^req rev=2 crc=0 markers=0 reject=0 enhanced=1' "$frames" || fail "default request: $frames"
has '^rep rev=2 crc=0 markers=0 reject=0 enhanced=1' "$frames" || fail "default reply: $frames"
log "default: MPA revision 2, enhanced, no CRC (the C siw's defaults)"
