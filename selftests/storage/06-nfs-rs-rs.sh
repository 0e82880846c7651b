# NFSv3 and NFSv4.2 over RDMA (proto=rdma, port 20049): the server (nfsd, mountd, rpcbind)
# in host B on the siw_rs device exports a tmpfs, the client in host A mounts it on the siw_rs
# device; 16 MiB of pseudo-random data written, remounted, read back and compared; fio with
# verify (direct I/O: 1 MiB of 4 KiB random writes, 4 MiB of 1 MiB ones, all read back).
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
cleanup() {
	nfs_server_down
	nfs_hosts_down
}
nfs_pairing siw_rs siw_rs
