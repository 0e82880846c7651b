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
NVME_IMG_SIZE=64m
TIMEOUT=60
CFG
cd /run/bt/blktests
# shellcheck disable=SC2086 # a list of tests or groups
./check -o /run/bt/results $BLKTESTS_TESTS 2>&1 | tee /run/bt/check.log
rc=${PIPESTATUS[0]}
{
	echo "# modules at the end: $(lsmod | awk 'NR > 1 && /^(siw|siw_rs) / { print $1 }' | tr '\n' ' ')"
	echo "# RDMA links left: $(rdma link show | wc -l)"
} >>/run/bt/check.log
if [ "$drv" = siw_rs ] && [ -d /sys/module/siw ]; then
	echo "# FAIL: the C siw was loaded during siw_rs's run" >>/run/bt/check.log
	rc=1
fi
[ "$drv" = siw_rs ] && { rmmod siw_rs; echo "# rmmod siw_rs: $?" >>/run/bt/check.log; }
dmesg >/run/bt/dmesg.txt
cp -a /run/bt/results /run/bt/check.log /run/bt/dmesg.txt "$out"/
exit "$rc"
