# perftest (ib_{write,read,send}_{bw,lat} -R) over rdma_cm, siw client (host A) and siw_rs server
# (host B).
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -f 'ib_(write|read|send)_'; two_hosts_down; }
two_hosts siw siw_rs
perftest_all

# The C siw as initiator never offers GSO_EXP: siw_rs's FPDUs to it (Read Responses,
# Send and Write replies of the latency tests) stay within one TCP segment.
m=$(fpdu_payload "$DEV_B")
log "siw_rs server: $m payload bytes per FPDU"
[ "$m" -le 1448 ] || fail "siw_rs sent the C siw FPDUs larger than one segment ($m)"
