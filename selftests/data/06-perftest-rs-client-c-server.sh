# perftest (ib_{write,read,send}_{bw,lat} -R) over rdma_cm, siw_rs client (host A) and siw server
# (host B).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -f 'ib_(write|read|send)_'; two_hosts_down; }
two_hosts siw_rs siw
perftest_all

# siw_rs offers GSO_EXP (fpdu_gso, on by default). The C siw as responder echoes it (its
# reply is the request's header, bits kept) and receives FPDUs of any length: siw_rs's
# 4 KiB Writes and Sends went as one FPDU each, more payload per FPDU than one TCP segment
# (MSS 1448 over the veth) carries.
m=$(fpdu_payload "$DEV_A")
log "siw_rs client: $m payload bytes per FPDU"
[ "$m" -gt 1448 ] || fail "siw_rs sent FPDUs of one segment ($m bytes each) to the C siw"
