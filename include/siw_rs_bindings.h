/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C API that siw_rs binds to. bindgen reads this header at build time with the
 * kernel's own bindgen flags (see siw_rs/Kbuild), and produces siw_rs/glue/bindings_generated.rs.
 * Only the glue modules under siw_rs/glue/ use the result.
 */
#include <linux/netdevice.h>
#include <linux/etherdevice.h>
#include <linux/if_arp.h>
#include <linux/inetdevice.h>
#include <linux/cpumask.h>
#include <net/addrconf.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <uapi/linux/sctp.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/ib_umem.h>
#include <rdma/rdma_netlink.h>
#include <rdma/restrack.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/siw-abi.h>
#include <linux/uio.h>
#include <linux/workqueue.h>
#include <linux/namei.h>
#include <linux/path.h>
#include <linux/crc32.h>
#include <linux/siphash.h>
#include <uapi/rdma/ib_user_ioctl_verbs.h>

#include "siw_rs_helpers.h"
