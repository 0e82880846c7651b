// SPDX-License-Identifier: GPL-2.0
/*
 * The C half of siw_rs's layout check (siw_rs/glue/layout.rs): every entry of
 * include/siw_rs_layout.h, measured by the C compiler.
 */
#include <linux/netdevice.h>
#include <linux/uio.h>
#include <net/sock.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/iw_cm.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>

#include "siw_rs_helpers.h"

#define SIW_RS_SIZE(t) sizeof(t),
#define SIW_RS_OFFSET(t, f) offsetof(t, f),
static const unsigned long siw_rs_c_layout[] = {
#include "siw_rs_layout.h"
};
#undef SIW_RS_SIZE
#undef SIW_RS_OFFSET

/* Entry @i of the C side of the layout list; ~0UL past its end. */
unsigned long siw_rs_layout(unsigned int i)
{
	return i < ARRAY_SIZE(siw_rs_c_layout) ? siw_rs_c_layout[i] : ~0UL;
}
