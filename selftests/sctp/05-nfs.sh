# A kernel storage consumer over DDP over SCTP: NFSv4.2 over RDMA between two siw_rs_sctp
# devices, as storage/06-nfs-rs-rs runs it over TCP (the server in host B, the client in
# host A; fio writes and reads back verifying every block), and the data must have gone as
# SCTP DATA chunks. Version 4.2 only (its sessions use the RPC backchannel, which version 3
# does not): the storage suite runs both versions over TCP, and the transport is the same.
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
cleanup() {
	nfs_server_down
	nfs_hosts_down
}
# As nfs_pairing does it, with a look at the client's SCTP counters before the hosts go:
# DDP segments are unordered DATA chunks (SctpInUnorderChunks, SctpOutUnorderChunks).
two_hosts siw_rs_sctp siw_rs_sctp
nfs_server_up
nfs_client 4.2
n=$(on_a awk '$1 ~ /^Sctp(In|Out)UnorderChunks$/ { s += $2 } END { print s + 0 }' /proc/net/sctp/snmp)
# 16 MiB each way (nfs_client) are over 11,000 chunks each way, fio's I/O on top.
[ "$n" -ge 20000 ] || fail "only $n unordered SCTP DATA chunks at the client"
log "client: $n DDP segments as unordered SCTP DATA chunks, in and out"
nfs_server_down
nfs_hosts_down
