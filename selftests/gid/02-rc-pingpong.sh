# ibv_rc_pingpong, unmodified, between two network namespaces with one siw_rs device each:
# the QPs exchange QP numbers and GIDs over TCP and connect through modify_qp alone. IPv4
# and IPv6 GIDs, 1 byte to 64 KiB, 250 iterations (1000 until 2026-11-27: at 64 KiB still
# 16 MiB each way), polling and with completion events (-e), the received buffers validated
# (-c). The peer that finishes first leaves while the other may not yet have polled its
# last completion: that QP must stay in RTS, its receives not flushed (README, "The peer
# leaving"), or ibv_rc_pingpong, which polls two completions at a time, fails on a flush.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_rc_pingpong; two_hosts_down; }
two_hosts siw_rs siw_rs
ip -n hostA addr add fd00:77::1/64 dev va nodad
ip -n hostB addr add fd00:77::2/64 dev vb nodad
ga4=$(wait_gid_index "$DEV_A" 192.168.77.1); gb4=$(wait_gid_index "$DEV_B" 192.168.77.2)
ga6=$(wait_gid_index "$DEV_A" fd00:77::1); gb6=$(wait_gid_index "$DEV_B" fd00:77::2)
pingpong ibv_rc_pingpong "-g $gb4 -s 1 -n 1000 -c" "-g $ga4 -s 1 -n 1000 -c"
pingpong ibv_rc_pingpong "-g $gb4 -s 4096 -n 1000 -c -e" "-g $ga4 -s 4096 -n 1000 -c -e"
pingpong ibv_rc_pingpong "-g $gb4 -s 65536 -n 1000 -c" "-g $ga4 -s 65536 -n 1000 -c"
pingpong ibv_rc_pingpong "-g $gb6 -s 1 -n 1000 -c -e" "-g $ga6 -s 1 -n 1000 -c -e"
pingpong ibv_rc_pingpong "-g $gb6 -s 65536 -n 1000 -c" "-g $ga6 -s 65536 -n 1000 -c"
