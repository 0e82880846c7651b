# Our kernel consumer between two hosts (sourced by data/16-kverbs and sctp/04-kverbs):
# selftests/data/kverbs, built on the host by selftests/run. kvt_server.ko listens on host B;
# kvt_client.ko's init on host A connects, posts one list of RDMA Write (256 KiB), RDMA Read
# back, a two-SGE Send and an inline solicited Send, and checks the Read data byte for byte;
# the server checks the two-SGE Send and its written buffer byte for byte and replies with
# its status (posting from its softirq completion handler). insmod of the client fails
# unless both sides verified.
KV=$ROOT/selftests/data/kverbs

kvt_cleanup() {
	on_a rmmod kvt_client 2>/dev/null
	on_b rmmod kvt_server 2>/dev/null
	two_hosts_down
}

# kvt_pair A B SRQ: a device of driver or link type A on host A (the client), B on host B
# (the server, with its receives on an SRQ if SRQ is 1); fails the test unless both sides
# verified and the server's teardown took less than 30 s. Both tear down with ib_drain_qp,
# which needs flush completions for work posted in ERROR and, for a QP on an SRQ, the Last
# WQE Reached event (else it waits 60 s, as with the C siw).
kvt_pair() {
	local a=$1 b=$2 srq=$3 out r start secs
	[ -f "$KV/kvt_client.ko" ] && [ -f "$KV/kvt_server.ko" ] ||
		fail "kvt modules not built (selftests/run builds them)"
	two_hosts "$a" "$b"
	on_b insmod "$KV/kvt_server.ko" addr=192.168.77.2 srq="$srq" ||
		fail "$a -> $b: kvt_server load"
	listening_b 7472
	if ! out=$(on_a insmod "$KV/kvt_client.ko" addr=192.168.77.2 2>&1); then
		fail "$a -> $b: kvt_client: $out; kernel log: $(dmesg | grep kvt_ | tail -n 20)"
	fi
	for _ in $(seq 20); do
		[ "$(cat /sys/module/kvt_server/parameters/result)" != 0 ] && break
		sleep 0.5
	done
	r=$(cat /sys/module/kvt_server/parameters/result)
	[ "$r" = 1 ] || fail "$a -> $b: kvt_server result $r: $(dmesg | grep kvt_ | tail -n 20)"
	on_a rmmod kvt_client || fail "$a -> $b: rmmod kvt_client"
	start=$(date +%s)
	on_b rmmod kvt_server || fail "$a -> $b: rmmod kvt_server"
	secs=$(( $(date +%s) - start ))
	[ "$secs" -lt 30 ] || fail "$a -> $b (srq=$srq): the server's teardown took $secs s"
	two_hosts_down
	log "$a client -> $b server (srq=$srq): kernel Write, Read, Sends verified on both sides, teardown in $secs s"
}
