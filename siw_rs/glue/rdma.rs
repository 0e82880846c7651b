// SPDX-License-Identifier: GPL-2.0

//! A generic RDMA provider layer: what a driver needs to register an `ib_device` and serve
//! its verbs, in safe Rust.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h),
//! [`include/rdma/iw_cm.h`](srctree/include/rdma/iw_cm.h),
//! [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h),
//! [`include/rdma/rdma_netlink.h`](srctree/include/rdma/rdma_netlink.h).
//!
//! Nothing here knows siw: the driver names its driver id and user ABI version in its
//! [`device::Driver`] implementation, brings its own uverbs request and response types
//! ([`object::Abi`]), and leaves out the ops it does not implement (`#[vtable]`: their
//! `ib_device_ops` entries stay NULL, and the core answers for them).

pub(crate) mod cm;
pub(crate) mod device;
pub(crate) mod link;
pub(crate) mod mmap;
pub(crate) mod object;
pub(crate) mod umem;
pub(crate) mod verbs;
