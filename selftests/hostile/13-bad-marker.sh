# A peer whose MPA markers lie (issue 12). siw_rs loaded with mpa_markers=1 asks every peer
# for markers (RFC 5044 section 4.3). selftests/lib/hostile_peer.py bad-marker connects to
# an rping server, asks for markers too, and sends rping's advert behind a leading marker
# whose FPDUPTR is not 0 (256: inside the FPDU; 65532: before the stream began). The server
# must answer with a Terminate, MPA layer (2), "Marker and ULPDU Length disagree" (0x03),
# inserting its own markers (its first one, FPDUPTR 0), and close; rping never sees the
# advert, and a good connection works afterwards.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -f hostile_peer.py; pkill rping; two_hosts_down; }
export SIW_RS_PARAMS=mpa_markers=1
two_hosts siw_rs siw_rs
for ptr in 256 65532; do
	on_b timeout 30 rping -s -a 192.168.77.2 -C 1 -S 64 -d >/tmp/rping-s.out 2>&1 &
	srv=$!
	listening_b 7174
	out=$(on_a timeout 30 python3 "$PEER" bad-marker --addr 192.168.77.2 --ptr $ptr 2>&1) ||
		fail "peer: $out"
	wait $srv || true
	has '^reply markers=1 reject=0' "$out" || fail "FPDUPTR $ptr: reply: $out"
	has '^lead marker ptr=0$' "$out" || fail "FPDUPTR $ptr: the server's first marker: $out"
	has '^fpdu op=terminate layer=2 etype=0 ecode=0x03' "$out" ||
		fail "FPDUPTR $ptr: no Terminate for the marker: $out"
	has 'Received rkey' "$(cat /tmp/rping-s.out)" &&
		fail "FPDUPTR $ptr: the advert was taken: $(cat /tmp/rping-s.out)"
	log "FPDUPTR $ptr: $(grep -E '^fpdu' <<<"$out" | tr '\n' ' ')"
done
rping_sizes 2 64
