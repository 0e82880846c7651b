#!/usr/bin/env bash
# The guest half of tools/demo.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
export PATH="/usr/sbin:/sbin:$PATH"
run() { echo; echo "\$ $*"; "$@"; }

run insmod "$ROOT/siw_rs/siw_rs.ko"
ip netns add hostA; ip netns add hostB
ip link add va netns hostA type veth peer name vb netns hostB
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
grep -E '^(pd|cq|qp|srq|mr)\.' /tmp/verbs_objects.out | head -n 12
echo "... $(wc -l </tmp/verbs_objects.out) checks in all"
echo
echo "siw_rs devices are up on both ends; RDMA data transfer arrives with the data path (issue 4)."
run rdma link delete siw_rs_a
run rdma link delete siw_rs_b
run rmmod siw_rs
echo; echo "kernel log (siw_rs):"; dmesg | grep -E '\] (siw_rs|infiniband)' | tail -n 5
