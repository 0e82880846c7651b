# NVMe over Fabrics (RDMA), host and target on one siw_rs device (va, both addresses): nvmet
# exports a memory-backed null_blk namespace at 192.168.77.2, nvme-cli connects from 192.168.77.1
# on the same device; fio writes with direct I/O and reads back
# verifying every block (4 KiB random and 1 MiB sequential); nvme disconnect.
# (See selftests/lib/storage.sh for why both ends share the initial namespace.)
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
cleanup() { nvmeof_cleanup; }
nvmeof_pairing siw_rs none
