# iSER: an LIO target with a ramdisk LUN and an iSER portal on the siw_rs device (vb),
# open-iscsi's iser transport on the siw device (va): login, fio with direct I/O and
# verification of every block (4 KiB random, 1 MiB sequential), logout.
# (See selftests/lib/storage.sh for the topology and the TCP portal.)
. "$ROOT/selftests/lib/common.sh"
. "$ROOT/selftests/lib/storage.sh"
cleanup() {
	iser_down
	iser_target_down
	one_ns_devices_down
}
iser_pairing siw siw_rs
