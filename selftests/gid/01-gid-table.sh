# The GID table: entry 0 is the C siw's (the MAC), the entries after it the netdev's
# addresses (IPv4 mapped into IPv6, and IPv6), kept current as addresses come and go, each
# keeping its index; ibv_devinfo -v and sysfs show them. (The C siw has entry 0 alone: a
# deliberate difference, README "Connections without rdma_cm".)
. "$ROOT/selftests/lib/common.sh"
cleanup() { two_hosts_down; }
two_hosts siw_rs siw_rs
ip -n hostA addr add fd00:77::1/64 dev va nodad
gids=/sys/class/infiniband/$DEV_A/ports/1/gids
# Entry 0: the MAC in octets 0..5, as the C siw's (connection manager lookups use it).
mac=$(on_a cat /sys/class/net/va/address)
m=${mac//:/}
want0="${m:0:4}:${m:4:4}:${m:8:4}:0000:0000:0000:0000:0000"
[ "$(cat $gids/0)" = "$want0" ] || fail "GID 0 is $(cat $gids/0), not the MAC GID $want0"
v4=$(wait_gid_index "$DEV_A" 192.168.77.1)
v6=$(wait_gid_index "$DEV_A" fd00:77::1)
[ "$v4" -ge 1 ] && [ "$v6" -ge 1 ] || fail "addresses at index 0: v4 $v4 v6 $v6"
log "192.168.77.1 is GID $v4, fd00:77::1 is GID $v6"
out=$(ibv_devinfo -v -d "$DEV_A")
# ibv_devinfo prints a GID as an address or in eight groups, depending on its type.
has "GID\[ *$v4\]:[[:space:]]+(::ffff:192\.168\.77\.1|$(gid_of 192.168.77.1))" "$out" ||
	fail "ibv_devinfo -v lacks the IPv4 GID: $out"
has "GID\[ *$v6\]:[[:space:]]+(fd00:77::1|$(gid_of fd00:77::1))" "$out" ||
	fail "ibv_devinfo -v lacks the IPv6 GID: $out"
has "gid_tbl_len:[[:space:]]+32" "$out" || fail "gid_tbl_len is not 32: $out"
# An address that comes appears, one that goes leaves; the others keep their index.
ip -n hostA addr add 10.77.0.1/24 dev va
new=$(wait_gid_index "$DEV_A" 10.77.0.1)
log "10.77.0.1 came as GID $new"
ip -n hostA addr del 192.168.77.1/24 dev va
for n in $(seq 50); do
	grep -qx "$(gid_of 192.168.77.1)" $gids/* || break
	sleep 0.2
done
grep -qx "$(gid_of 192.168.77.1)" $gids/* && fail "192.168.77.1 is still in the table after it went"
[ "$(gid_index "$DEV_A" fd00:77::1)" = "$v6" ] || fail "fd00:77::1 moved from GID $v6"
[ "$(gid_index "$DEV_A" 10.77.0.1)" = "$new" ] || fail "10.77.0.1 moved from GID $new"
[ "$(cat $gids/$v4)" = "0000:0000:0000:0000:0000:0000:0000:0000" ] ||
	fail "GID $v4 was not emptied: $(cat $gids/$v4)"
# The address coming back takes a free entry again.
ip -n hostA addr add 192.168.77.1/24 dev va
wait_gid_index "$DEV_A" 192.168.77.1 >/dev/null
# rdma_cm still finds the device (by GID 0) and moves verified data.
rping_sizes 5 64
