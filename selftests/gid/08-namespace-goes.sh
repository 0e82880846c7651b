# A network namespace holding a siw_rs device goes away whole: the device's listeners are
# the kernel's own sockets, which keep no reference on the namespace (one that did would
# keep it, its veth and the device alive for ever after `ip netns del`), and they close
# when the veth leaves the dying namespace, before its TCP goes. Twice: once with a QP
# connection made by modify_qp up in that namespace when it goes.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_rc_pingpong; two_hosts_down; ip netns del hostC 2>/dev/null; }
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
listening_in hostC 791
ip netns del hostC
gone siw_rs_c
log "siw_rs_c went with its namespace"
# A connection made by modify_qp holds its namespace, as every siw_rs connection does: two
# processes of the initial namespace (their own exchange over 127.0.0.1) connect two QPs of
# host A's device; host A's namespace is deleted under them: it stays while they run, and
# goes, with the device, once they are killed.
two_hosts siw_rs siw_rs
g=$(wait_gid_index "$DEV_A" 192.168.77.1)
stdbuf -oL ibv_rc_pingpong -d "$DEV_A" -g "$g" -p 18600 -n 1000000 -s 64 >/tmp/pp-s.out 2>&1 &
for n in $(seq 60); do [ -n "$(ss -Htln 'sport = :18600')" ] && break; sleep 0.5; done
stdbuf -oL ibv_rc_pingpong -d "$DEV_A" -g "$g" -p 18600 -n 1000000 -s 64 127.0.0.1 >/tmp/pp-c.out 2>&1 &
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
