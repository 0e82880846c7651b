# A network namespace holding a siw_rs device goes away whole: the device's listeners are
# the kernel's own sockets, which keep no reference on the namespace (one that did would
# keep it, its veth and the device alive for ever after `ip netns del`), and they close
# when the veth leaves the dying namespace, before its TCP goes. Twice: once with a QP
# waiting there (so a listener open) when the namespace's last process goes, once with a
# QP connection made by modify_qp up in that namespace when it goes.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_rc_pingpong; pkill -x gid_wait; two_hosts_down; ip netns del hostC 2>/dev/null; }
gone() { # gone DEV: wait (10 s) until DEV is unregistered
	local n
	for n in $(seq 50); do rdma_dev_exists "$1" || return 0; sleep 0.2; done
	fail "$1 is still registered 10 s after its namespace went"
}
load_siw_rs
ip netns add hostC
ip link add vc netns hostC type veth peer name vd netns hostC
ip -n hostC addr add 192.168.78.1/24 dev vc
ip -n hostC link set vc up
ip -n hostC link set vd up
ip netns exec hostC rdma link add siw_rs_c type siw_rs netdev vc
gc=$(wait_gid_index siw_rs_c 192.168.78.1)
# The QP waits for a peer below its own address: it is the end that listens.
ip netns exec hostC "$TESTBIN"/gid_wait -d siw_rs_c -g "$gc" -D 10.0.0.1 -q 4242 -r 1 -s 2 \
	-n 64 -w 600000 </dev/null >/tmp/gw-c.out 2>&1 &
listening_in hostC 791 || fail "no listener for the waiting QP: $(cat /tmp/gw-c.out)"
# The process holds the namespace; once it is killed, nothing else may.
ip netns del hostC
pkill -x gid_wait
gone siw_rs_c
log "siw_rs_c went with its namespace"
# A connection made by modify_qp in a namespace whose name is deleted: two processes of host
# A (their own exchange over its 127.0.0.1; only processes of the netdev's namespace make
# such connections) connect two QPs of host A's device; the namespace stays while they
# run, and goes, with the device, once they are killed (the connection's sockets let go).
two_hosts siw_rs siw_rs
g=$(wait_gid_index "$DEV_A" 192.168.77.1)
ip -n hostA link set lo up
on_a stdbuf -oL ibv_rc_pingpong -d "$DEV_A" -g "$g" -p 18600 -n 1000000 -s 64 >/tmp/pp-s.out 2>&1 &
for n in $(seq 60); do [ -n "$(on_a ss -Htln 'sport = :18600')" ] && break; sleep 0.5; done
on_a stdbuf -oL ibv_rc_pingpong -d "$DEV_A" -g "$g" -p 18600 -n 1000000 -s 64 127.0.0.1 >/tmp/pp-c.out 2>&1 &
sleep 3
has 'remote address' "$(cat /tmp/pp-c.out)" || fail "the pingpong did not start: $(cat /tmp/pp-c.out)"
ip netns del hostA
sleep 2
rdma_dev_exists "$DEV_A" || fail "$DEV_A went while its connection was up"
pgrep -x ibv_rc_pingpong >/dev/null || fail "the pingpong stopped when the namespace was deleted: $(cat /tmp/pp-c.out)"
pkill -KILL -x ibv_rc_pingpong
wait
gone "$DEV_A"
log "$DEV_A went with its namespace once its connection was gone"
