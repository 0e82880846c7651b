# NVMe over Fabrics (RDMA): nvmet exports a memory-backed null_blk namespace on the siw_rs device (vb),
# nvme-cli connects from the siw_rs device (va); fio writes with direct I/O and reads back
# verifying every block (4 KiB random and 1 MiB sequential); nvme disconnect.
# (See selftests/lib/storage.sh for why both ends share the initial namespace.)
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
cleanup() { nvmeof_cleanup; }
nvmeof_pairing siw_rs siw_rs
