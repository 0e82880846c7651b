#!/usr/bin/env bash
# The guest half of tools/demo.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export ROOT PATH="/usr/sbin:/sbin:$PATH"
. "$ROOT/selftests/lib/common.sh"
run() { echo; echo "\$ $*"; "$@"; }

run insmod "$ROOT/siw_rs/siw_rs.ko"
ip netns add hostA; ip netns add hostB
ip link add va netns hostA type veth peer name vb netns hostB
udev_settle
ip -n hostA addr add 192.168.77.1/24 dev va; ip -n hostA link set va up
ip -n hostB addr add 192.168.77.2/24 dev vb; ip -n hostB link set vb up
run ip netns exec hostA rdma link add siw_rs_a type siw_rs netdev va
run ip netns exec hostB rdma link add siw_rs_b type siw_rs netdev vb
run rdma link show
run ibv_devices
run ibv_devinfo -d siw_rs_a
run ip netns exec hostA ping -c 2 192.168.77.2
echo
echo "Verbs objects through unmodified libibverbs + libsiw (selftests/verbs/verbs_objects.c):"
gcc -O1 -o /tmp/verbs_objects "$ROOT/selftests/verbs/verbs_objects.c" -libverbs
ip netns exec hostA /tmp/verbs_objects siw_rs_a >/tmp/verbs_objects.out 2>&1 || true
# (awk, not grep | head: with pipefail, head's early exit could fail grep with SIGPIPE)
awk '/^(pd|cq|qp|srq|mr)\./ && n++ < 12' /tmp/verbs_objects.out
echo "... $(wc -l </tmp/verbs_objects.out) checks in all"
echo
echo "rping -V between the two hosts: Send, RDMA Read and RDMA Write, every byte checked:"
ip netns exec hostB rping -s -a 192.168.77.2 -C 5 -S 1024 -V >/tmp/rping-server.out 2>&1 &
listening_b 7174
run ip netns exec hostA rping -c -a 192.168.77.2 -C 5 -S 1024 -V -v
wait
echo
echo "ib_write_bw -R (perftest over rdma_cm; TCG makes the numbers meaningless):"
ip netns exec hostB ib_write_bw -R -d siw_rs_b -n 200 >/dev/null 2>&1 &
listening_b 18515
ip netns exec hostA ib_write_bw -R -d siw_rs_a -n 200 192.168.77.2 | tail -n 3
wait
run rdma link delete siw_rs_a
run rdma link delete siw_rs_b
run rmmod siw_rs
echo; echo "kernel log (siw_rs):"; dmesg | grep -E '\] (siw_rs|infiniband)' | tail -n 5
