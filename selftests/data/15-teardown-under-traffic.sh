# Tear siw_rs down while data moves: rping -V runs without end between two siw_rs hosts.
# rmmod siw_rs must refuse cleanly (the devices are in use). `rdma link delete` of the
# server's device, issued while the data moves, waits for the device's users (like the C
# siw, siw_rs has no disassociate_ucontext); the rpings are then killed mid-transfer, and
# the delete must complete, the other device go too, and rmmod succeed. The runner fails
# the test on any oops, lockdep report or leak.
. "$ROOT/selftests/lib/common.sh"
cleanup() { pkill rping; two_hosts_down; }
two_hosts siw_rs siw_rs
on_b rping -s -a 192.168.77.2 -S 4096 -V >/tmp/td-s.out 2>&1 &
srv=$!
listening_b 7174
on_a rping -c -a 192.168.77.2 -S 4096 -V >/tmp/td-c.out 2>&1 &
cli=$!
sleep 8
kill -0 $cli 2>/dev/null || fail "rping client ended early: $(cat /tmp/td-c.out)"
if rmmod siw_rs 2>/tmp/rmmod.out; then
	fail "rmmod siw_rs succeeded with devices in use"
fi
log "rmmod while in use: $(cat /tmp/rmmod.out)"
on_b rdma link delete "$DEV_B" &
del=$!
sleep 3
kill -0 $cli 2>/dev/null || fail "rping client ended early: $(cat /tmp/td-c.out)"
pkill -9 -x rping
for _ in $(seq 60); do kill -0 $del 2>/dev/null || break; sleep 1; done
kill -0 $del 2>/dev/null && fail "rdma link delete still waiting 60 s after its users ended"
wait $del || fail "rdma link delete failed"
rdma_dev_exists "$DEV_B" && fail "$DEV_B still registered"
on_a rdma link delete "$DEV_A"
rmmod siw_rs || fail "rmmod after the traffic ended"
log "device delete and rmmod around running traffic: clean"
