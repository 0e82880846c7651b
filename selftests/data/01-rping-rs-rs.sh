# rping -V (verify every byte of every transfer) between two siw_rs hosts: connection setup
# through iw_cm and MPA, then Send, RDMA Read and RDMA Write in both directions.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs
for size in 23 64 1000 4096 65536; do
	on_b timeout 60 rping -s -a 192.168.77.2 -C 20 -S "$size" -V >/tmp/rping-s.out 2>&1 &
	srv=$!
	sleep 1
	if ! out=$(on_a timeout 60 rping -c -a 192.168.77.2 -C 20 -S "$size" -V -v 2>&1); then
		wait $srv || true; echo "server: $(cat /tmp/rping-s.out)"
		fail "rping client, size $size: $out"
	fi
	wait $srv || fail "rping server, size $size: $(cat /tmp/rping-s.out)"
	n=$(grep -c '^ping data' <<<"$out" || true)
	[ "$n" = 20 ] || fail "size $size: $n of 20 pings verified: $out"
	log "size $size: 20 pings verified"
done
