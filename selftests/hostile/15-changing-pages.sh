# Received bytes that change while siw_rs reads them. selftests/lib/hostile_peer.py
# changing-pages sends RDMA Writes into fuzz_target's MR with sendfile() from a file that a
# second thread keeps rewriting: the skbs siw_rs reads reference those page-cache pages,
# so the bytes change under it, in payload and now and then in a header, as they can in
# any page someone splices into a socket. siw_rs reads received bytes only by copying them
# out, and decides on its copies (README, "Received bytes are never a &[u8]"). Whatever
# it reads, the kernel must stay whole: connections end with a Terminate or go on, most
# connections read the MR back whole, the listener survives and sees every connection
# end, a good connection works afterwards; the suite checks the kernel log and kmemleak.
. "$ROOT/selftests/lib/common.sh"
PEER=$ROOT/selftests/lib/hostile_peer.py
cleanup() { pkill -x fuzz_target; pkill -f hostile_peer.py; pkill -x rping; two_hosts_down; }
two_hosts siw_rs siw_rs
slab0=$(unreclaimable_kb)
on_b "$TESTBIN"/fuzz_target -a 192.168.77.2 >/tmp/fuzz-target.out 2>&1 &
tgt=$!
listening_b 7180
out=$(on_a timeout 120 python3 "$PEER" changing-pages --addr 192.168.77.2 --seconds 20 2>&1) ||
	fail "peer: $out"
log "$out"
read -r conns bytes backs closed hw pw < <(sed -nE 's/^changing-pages: connections ([0-9]+) bytes ([0-9]+) read-backs ([0-9]+) closed ([0-9]+) header-writes ([0-9]+) payload-writes ([0-9]+)$/\1 \2 \3 \4 \5 \6/p' <<<"$out")
[ -n "${conns:-}" ] || fail "no summary: $out"
[ "$conns" -ge 2 ] || fail "only $conns connections in 20 s"
[ "$pw" -ge 1000 ] || fail "only $pw rewrites of payload: the pages hardly changed"
[ "$backs" -ge 1 ] || fail "no connection read the MR back: $out"
[ $((backs + closed)) -eq "$conns" ] || fail "connections neither read back nor closed: $out"
fuzz_target_end $tgt 3
rping_sizes 2 4096
two_hosts_down
unloaded_slab_back "$slab0"
