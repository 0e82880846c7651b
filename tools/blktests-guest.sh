#!/usr/bin/env bash
# Runs in the VM for tools/blktests: DRV (siw or siw_rs) OUT (the host's directory). Gives
# blktests what its nvme group asks of a machine: configfs and debugfs, the kernel's
# configuration where it looks for it, and one Ethernet netdev with carrier and an IPv4
# address (a veth whose peer is up in a namespace of its own; blktests adds its soft RDMA
# device on every such netdev and never on lo).
set -u
drv=$1 out=$2 KO=$(cd "$(dirname "$0")/.." && pwd)/siw_rs/siw_rs.ko
export PATH=/usr/sbin:/sbin:$PATH
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
echo on >/proc/sys/kernel/printk_devkmsg
if [ ! -e /proc/config.gz ] && [ -r "$KDIR/.config" ]; then
	mount -t tmpfs tmpfs /boot && cp "$KDIR/.config" "/boot/config-$(uname -r)"
fi
ip link set lo up
ip netns add btpeer
ip link add bt0 type veth peer name bt1 netns btpeer
ip -n btpeer link set bt1 up
ip addr add 192.168.78.1/24 dev bt0
ip link set bt0 up
udevadm settle
if [ "$drv" = siw_rs ]; then
	# blktests loads `siw` by name: it gets siw_rs, registered for `type siw`.
	mkdir -p /etc/modprobe.d
	echo "install siw [ -d /sys/module/siw_rs ] || /sbin/insmod $KO siw_link=1" \
		>/etc/modprobe.d/siw_rs-as-siw.conf
fi
mkdir -p /run/bt && mount -t tmpfs -o size=1500m tmpfs /run/bt
cp -a "$BLKTESTS_SRC" /run/bt/blktests
cat >/run/bt/blktests/config <<CFG
NVMET_TRTYPES=rdma
NVMET_BLKDEV_TYPES="device file"
TIMEOUT=60
CFG
cd /run/bt/blktests
# The results (and the tests' scratch files) stay on the tmpfs; a copy of the results goes
# to the host's directory every 20 s, so that a run cut short keeps what it has.
copy_results() { (cd /run/bt && find results -name 'tmpdir.*' -prune -o -type f -print | cpio -pdmu --quiet "$out"); }
(while sleep 20; do copy_results; done) &
copier=$!
# Namespaces of 64 MiB keep the fio runs short under TCG; nvme/012 (XFS on the namespace)
# asks for 350 MiB and gets it, in a second pass.
# shellcheck disable=SC2086 # a list of tests or groups
NVME_IMG_SIZE=64m ./check -o /run/bt/results -x nvme/012 $BLKTESTS_TESTS 2>&1 | tee "$out/check.log"
rc=${PIPESTATUS[0]}
case " $BLKTESTS_TESTS " in
*" nvme "* | *" nvme/012 "*)
	NVME_IMG_SIZE=350m ./check -o /run/bt/results nvme/012 2>&1 | tee -a "$out/check.log"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1 ;;
esac
kill $copier
copy_results
{
	echo "# modules at the end: $(lsmod | awk 'NR > 1 && /^(siw|siw_rs) / { print $1 }' | tr '\n' ' ')"
	echo "# RDMA links left: $(rdma link show | wc -l)"
} >>"$out/check.log"
if [ "$drv" = siw_rs ] && [ -d /sys/module/siw ]; then
	echo "# FAIL: the C siw was loaded during siw_rs's run" >>"$out/check.log"
	rc=1
fi
[ "$drv" = siw_rs ] && { rmmod siw_rs; echo "# rmmod siw_rs: $?" >>"$out/check.log"; }
# blktests checks the kernel log per test; kmemleak is read once, at the end.
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak; sleep 5; echo scan >/sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak >"$out/kmemleak.txt"
	echo "# kmemleak: $(grep -c '^unreferenced object' "$out/kmemleak.txt") unreferenced objects" >>"$out/check.log"
fi
dmesg >"$out/dmesg.txt"
exit "$rc"
