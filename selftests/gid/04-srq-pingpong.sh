# ibv_srq_pingpong, unmodified: 16 QPs per side sharing one SRQ, each QP connected through
# modify_qp; between two namespaces (IPv4 and IPv6) and between two processes on one device.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill -x ibv_srq_pingpong; two_hosts_down; }
two_hosts siw_rs siw_rs
ip -n hostA addr add fd00:77::1/64 dev va nodad
ip -n hostB addr add fd00:77::2/64 dev vb nodad
ga4=$(wait_gid_index "$DEV_A" 192.168.77.1); gb4=$(wait_gid_index "$DEV_B" 192.168.77.2)
ga6=$(wait_gid_index "$DEV_A" fd00:77::1); gb6=$(wait_gid_index "$DEV_B" fd00:77::2)
pingpong ibv_srq_pingpong "-g $gb4 -s 4096 -n 1000 -c" "-g $ga4 -s 4096 -n 1000 -c"
# Few iterations over 16 QPs: most QPs end together, and a late Send is likeliest.
pingpong ibv_srq_pingpong "-g $gb4 -n 50" "-g $ga4 -n 50"
pingpong ibv_srq_pingpong "-g $gb6 -s 1 -n 1000 -c -e" "-g $ga6 -s 1 -n 1000 -c -e"
pingpong ibv_srq_pingpong "-g $ga4 -s 65536 -n 1000 -c -e" "-g $ga4 -s 65536 -n 1000 -c -e" same
