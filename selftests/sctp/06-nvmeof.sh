# A kernel storage consumer over DDP over SCTP: NVMe over Fabrics (RDMA) between two
# siw_rs_sctp devices, as storage/02-nvmeof-rs-rs runs it over TCP: nvmet exports a
# memory-backed null_blk namespace on one (vb), nvme-cli connects from the other (va); fio
# writes with direct I/O and reads back verifying every block (4 KiB random and 1 MiB
# sequential); nvme disconnect. Fast registration, Send with Invalidate and many QPs at
# once, each its own SCTP association.
#
# nvmet has a lock order lockdep reports (not siw_rs's locks): a command that arrives
# before the target's ESTABLISHED event waits, and runs from the rdma_cm handler
# (nvmet_rdma_queue_established: handler_mutex, then the I/O Connect takes
# nvmet_config_sem); removing the port's subsystem link takes nvmet_config_sem, then
# rdma_destroy_id takes a handler_mutex. Whether the first command beats the event is
# timing (over SCTP often). That one report is excused (selftests/lib/guest.sh); lockdep
# is off afterwards, so selftests/run runs this test last in its VM (its own: data/17 is
# last in the first).
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
printf '%s\n' 'WARNING: possible circular locking dependency detected' \
	'\(nvmet_config_sem\).* at: nvmet_port_subsys_drop_link' >/tmp/siw_rs-known-report
cleanup() { nvmeof_cleanup; }
# SctpOutUnorderChunks: DDP segments are unordered DATA chunks.
chunks() { awk '$1 == "SctpOutUnorderChunks" { print $2 }' /proc/net/sctp/snmp; }
modprobe sctp || fail "sctp module"
before=$(chunks)
nvmeof_pairing siw_rs_sctp siw_rs_sctp
# fio writes 32 MiB and reads them back: at least 20000 segments of 1434 octets went over
# SCTP (23,000 for the data alone).
sent=$(( $(chunks) - before ))
[ "$sent" -ge 20000 ] || fail "only $sent unordered SCTP DATA chunks sent"
log "$sent DDP segments sent as unordered SCTP DATA chunks"
# Every queue's association ends (the header line is all that may stay).
for _ in $(seq 20); do
	[ "$(wc -l </proc/net/sctp/assocs)" -le 1 ] && break
	sleep 0.5
done
[ "$(wc -l </proc/net/sctp/assocs)" -le 1 ] ||
	fail "SCTP associations left after the disconnect: $(cat /proc/net/sctp/assocs)"
