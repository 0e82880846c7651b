# ibv_rc_pingpong between two processes on one siw_rs device (its own address at both
# ends: the QP numbers decide which end connects), IPv4 and IPv6, with and without events.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_rc_pingpong; two_hosts_down; }
two_hosts siw_rs siw_rs
ip -n hostA addr add fd00:77::1/64 dev va nodad
g4=$(wait_gid_index "$DEV_A" 192.168.77.1); g6=$(wait_gid_index "$DEV_A" fd00:77::1)
pingpong ibv_rc_pingpong "-g $g4 -s 4096 -n 1000 -c" "-g $g4 -s 4096 -n 1000 -c" same
pingpong ibv_rc_pingpong "-g $g6 -s 65536 -n 1000 -c -e" "-g $g6 -s 65536 -n 1000 -c -e" same
pingpong ibv_rc_pingpong "-g $g4 -s 1 -n 1000 -c -e" "-g $g4 -s 1 -n 1000 -c -e" same
