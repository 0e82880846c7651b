# rdma_cm picks an active side's port itself, without asking TCP (cma.c,
# cma_alloc_any_port), and siw_rs, as the C siw, binds its TCP socket to that port with
# SO_REUSEADDR: TCP grants it where other sockets still hold the port only if they set it
# too (inet_csk_bind_conflict). Host A's ephemeral range is narrowed to ten ports, each
# left in TIME_WAIT by a plain TCP connection that set SO_REUSEADDR
# (as selftests/lib/hostile_peer.py's dial() connects): rping's connects
# from that range must still succeed, from a siw_rs client and from a C siw one. (A port
# held by a socket without SO_REUSEADDR fails such a connect with EADDRINUSE, with either
# driver: README, "Limits".)
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -f 'tw_server' ; pkill rping; two_hosts_down; }

# time_wait N: N connections from host A to a TCP server in host B, each closed by A
# first, so that A keeps each port in TIME_WAIT.
time_wait() {
	on_b python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("192.168.77.2", 7399)); s.listen(64)
for _ in range(int(sys.argv[1])):
    c, _ = s.accept()
    while c.recv(64): pass
    c.close()
' "$1" tw_server &
	local srv=$!
	listening_b 7399
	# As hostile_peer.py's dial() connects.
	on_a python3 -c '
import socket, sys, time
for _ in range(int(sys.argv[1])):
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    c.connect(("192.168.77.2", 7399))
    c.close()
    time.sleep(0.05)
' "$1" || fail "the TCP connections from host A failed"
	wait $srv || fail "the TCP server in host B failed"
}

for pair in "siw_rs siw_rs" "siw siw_rs"; do
	set -- $pair
	two_hosts "$1" "$2"
	ip netns exec hostA sysctl -qw net.ipv4.ip_local_port_range="40000 40009"
	time_wait 10
	tw=$(ip netns exec hostA ss -Htan state time-wait '( sport >= :40000 and sport <= :40009 )' | wc -l)
	[ "$tw" = 10 ] || fail "$1 client: $tw of 10 ports in TIME_WAIT: $(ip netns exec hostA ss -tan)"
	rping_sizes 4 64 1024
	log "$1 client -> $2 server: rping from ports held in TIME_WAIT"
	two_hosts_down
done
