# A connect over SCTP whose first COOKIE-ACK is lost. The responder's siw_rs accepts the
# association as soon as it is up, and Linux gives the accepted socket an endpoint of its
# own with a new cookie key (sctp_clone_sock() does not copy the listener's): the
# initiator's COOKIE-ECHO, sent again for the lost ACK and signed with the listener's key,
# is then discarded every time (SctpInPktDiscards), and that association never comes up.
# siw_rs's initiator gives one association SCTP_TRY_TIMEOUT_MS (2 s), then aborts it and
# connects again on a fresh socket (cm.rs; README, "DDP over SCTP"): the connect must
# succeed well within its 10 s, counted in sctp_stalled_assocs. The first check, with a
# plain SCTP client and server (python3) under the same loss, shows that the stall is the
# kernel's, not siw_rs's.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; pkill -f sctp_plain; perftest_listen_gap off; two_hosts_down; }
two_hosts siw_rs_sctp siw_rs_sctp
modprobe sctp
modprobe sch_prio
modprobe cls_u32

# drop_first_cookie_ack PORT: host B drops the COOKIE-ACKs it sends from PORT (chunk type
# 11 first in the packet), until one has been dropped.
drop_first_cookie_ack() {
	ip netns exec hostB tc -batch - <<-EOF || fail "tc: the COOKIE-ACK filter"
		qdisc add dev vb root handle 1: prio bands 3 priomap 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1
		qdisc add dev vb parent 1:3 handle 30: netem loss 100%
		filter add dev vb parent 1: protocol ip prio 1 u32 match u8 0x45 0xff at 0 match u8 132 0xff at 9 match u16 $1 0xffff at 20 match u8 11 0xff at 32 flowid 1:3
	EOF
	(
		for _ in $(seq 400); do
			d=$(ip netns exec hostB tc -s qdisc show dev vb parent 1:3 |
				sed -nE 's/.*\(dropped ([0-9]+),.*/\1/p' | head -n 1)
			[ "${d:-0}" -ge 1 ] && break
			nap 0.025
		done
		ip netns exec hostB tc qdisc del dev vb root
	) &
	DROPPER=$!
}
discards() { ip netns exec hostB awk '$1 == "SctpInPktDiscards" { print $2 }' /proc/net/sctp/snmp; }

# The kernel alone: a plain one-to-one SCTP server that accepts at once, and a client
# whose connect() waits 5 s at most.
on_b python3 -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP)
s.bind(("192.168.77.2", 7390)); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20); c.recv(16)
' sctp_plain &
plain=$!
listening_in hostB 7390
d0=$(discards)
drop_first_cookie_ack 7390
rc=0
out=$(on_a python3 -c '
import socket, sys
c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_SCTP); c.settimeout(5)
try:
    c.connect(("192.168.77.2", 7390))
except OSError as e:
    print("connect:", e); sys.exit(3)
c.send(b"x")
' sctp_plain 2>&1) || rc=$?
wait $DROPPER
kill $plain 2>/dev/null || true
wait $plain 2>/dev/null || true
d1=$(discards)
log "plain SCTP, first COOKIE-ACK lost: connect exit $rc ($out), $((d1 - d0)) COOKIE-ECHOs discarded by host B"

# siw_rs over the same loss: rping from host A must connect and verify its pings.
r0=$(counter "$DEV_A" sctp_stalled_assocs)
drop_first_cookie_ack 7174
start=$(date +%s)
rping_sizes 2 64
wait $DROPPER
secs=$(( $(date +%s) - start ))
r1=$(counter "$DEV_A" sctp_stalled_assocs)
[ $((r1 - r0)) -ge 1 ] || fail "no association stalled: was the COOKIE-ACK lost?"
[ "$secs" -lt 10 ] || fail "rping over SCTP took $secs s with its first COOKIE-ACK lost"
log "siw_rs, first COOKIE-ACK lost: rping verified in $secs s, $((r1 - r0)) association(s) stalled and replaced"
