// SPDX-License-Identifier: GPL-2.0

//! Glue between siw_rs and the kernel's C APIs: the only place in the driver with `unsafe`.
//!
//! - [`rdma`]: a generic RDMA provider layer (the `ib_device` and its driver trait, the verbs
//!   objects, pinned user memory, mmap, iw_cm, `rdma link`), with no siw knowledge; written
//!   as the kernel crate's own abstractions are, so it could move to `rust/kernel/`.
//! - [`net`]: kernel TCP sockets with their callbacks, and network devices with their
//!   notifier.
//! - [`workqueue`]: the module's workqueue.
//! - [`log`]: messages peers and processes cause: device names, rate limits, `debug`.
//! - [`sync`]: locks that softirq (a socket callback) shares with process context.
//! - [`siw_abi`]: the siw user ABI (`include/uapi/rdma/siw-abi.h`), the one siw-specific part.
//!
//! Everything here turns C objects into safe types and `#[vtable]` traits, so the driver
//! logic above is safe Rust; the crate root forbids `unsafe` everywhere else. Every `unsafe`
//! block here carries a `// SAFETY:` comment saying why it is sound.

mod bindings;
pub(crate) mod iov;
pub(crate) mod layout;
pub(crate) mod log;
pub(crate) mod net;
pub(crate) mod rdma;
pub(crate) mod siw_abi;
pub(crate) mod sync;
pub(crate) mod workqueue;

/// 32 random bits from the kernel's CSPRNG (`get_random_u32`).
pub(crate) fn random_u32() -> u32 {
    // SAFETY: Callable from any context; no arguments.
    unsafe { bindings::get_random_u32() }
}

/// A SipHash key from the kernel's CSPRNG, for numbers others must not predict.
pub(crate) struct SipKey(bindings::siphash_key_t);

impl SipKey {
    /// A fresh random key.
    pub(crate) fn random() -> Self {
        // SAFETY: Callable from any context; no arguments.
        let key = unsafe { [bindings::get_random_u64(), bindings::get_random_u64()] };
        Self(bindings::siphash_key_t { key })
    }

    /// SipHash-2-4 of `v` under this key (`siphash_1u64`).
    pub(crate) fn hash(&self, v: u64) -> u64 {
        // SAFETY: A pure function of its arguments; the key is valid for the call.
        unsafe { bindings::siphash_1u64(v, &self.0) }
    }
}
