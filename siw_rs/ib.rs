// SPDX-License-Identifier: GPL-2.0

//! Glue between siw_rs and the kernel's RDMA and networking C APIs.
//!
//! This module and its children are the only place in the driver that touches C. They turn
//! the C objects (`ib_device`, `net_device`, `rdma_link_ops`, netdev notifiers) into safe
//! types and `#[vtable]` traits, so the driver logic above them is safe Rust. Every `unsafe`
//! block here carries a `// SAFETY:` comment saying why it is sound.

mod bindings;
pub(crate) mod cm;
pub(crate) mod device;
pub(crate) mod link;
pub(crate) mod mem;
pub(crate) mod netdev;
pub(crate) mod object;
pub(crate) mod sock;
pub(crate) mod verbs;
pub(crate) mod work;

/// 32 random bits from the kernel's CSPRNG (`get_random_u32`).
pub(crate) fn random_u32() -> u32 {
    // SAFETY: Callable from any context; no arguments.
    unsafe { bindings::get_random_u32() }
}
