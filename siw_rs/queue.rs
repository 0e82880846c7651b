// SPDX-License-Identifier: GPL-2.0

//! Work and completion queue memory: power-of-two rings shared with user space.

use crate::device::Siw;
use crate::ib::{
    mem::{
        MmapEntry,
        SharedMem, //
    },
    object::{
        wqe,
        User, //
    },
};
use crate::qp::WQE_FLAGS;
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::Arc, //
};

/// Posts a kernel consumer's work queue element at byte offset `off` of `mem`, as a process
/// would: `ENOMEM` while the slot still holds an element the driver has not taken (the queue
/// is full); else `fill` writes the element with its flags word zero, and then the flags
/// `flags | VALID` are published with release ordering, so the taker sees it whole.
/// Callers serialise on their queue's producer index.
pub(crate) fn post_wqe(
    mem: &SharedMem,
    off: usize,
    flags: u16,
    fill: impl FnOnce() -> Result,
) -> Result {
    let f = mem
        .atomic_u16(off.checked_add(WQE_FLAGS).ok_or(EINVAL)?)
        .ok_or(EINVAL)?;
    if f.load(Ordering::Acquire) & wqe::VALID != 0 {
        return Err(ENOMEM);
    }
    fill()?;
    f.store(flags | wqe::VALID, Ordering::Release);
    Ok(())
}

/// A ring of `entries` elements of `elem` bytes (plus `extra` bytes behind them), in memory
/// that a user process can map when the queue belongs to one.
pub(crate) struct Ring {
    /// The memory.
    pub(crate) mem: Arc<SharedMem>,
    /// Number of elements (a power of two).
    pub(crate) entries: u32,
    /// The mmap registration, for user queues.
    mmap: Option<MmapEntry>,
}

impl Ring {
    /// Allocates a ring for at least `min_entries` elements (rounded up to a power of two,
    /// as all queue indices are free-running counters taken modulo the size).
    pub(crate) fn new(
        min_entries: u32,
        elem: usize,
        extra: usize,
        user: Option<&mut User<'_, Siw>>,
    ) -> Result<Self> {
        let entries = min_entries.checked_next_power_of_two().ok_or(EINVAL)?;
        let len = usize::try_from(entries)
            .ok()
            .and_then(|n| n.checked_mul(elem))
            .and_then(|n| n.checked_add(extra))
            .ok_or(EINVAL)?;
        let mem = SharedMem::new(len, user.is_some())?;
        let mmap = match user {
            Some(u) => Some(u.ctx.mmap_insert(&mem)?),
            None => None,
        };
        Ok(Self { mem, entries, mmap })
    }

    /// The byte offset of the slot a free-running `counter` names, for elements of `elem`
    /// bytes. `entries` is a power of two, so this is a mask; arithmetic saturates, and an
    /// offset past the end is rejected by every accessor of the memory.
    pub(crate) fn offset(&self, counter: u32, elem: usize) -> usize {
        let slot = counter & self.entries.wrapping_sub(1);
        (slot as usize).saturating_mul(elem)
    }

    /// The byte offset just past the last element (where a CQ's control word sits).
    pub(crate) fn end(&self, elem: usize) -> usize {
        (self.entries as usize).saturating_mul(elem)
    }

    /// The key user space passes to `mmap()` (libsiw's `*_key` response fields).
    pub(crate) fn key(&self) -> u64 {
        self.mmap.as_ref().map_or(0, MmapEntry::key)
    }
}
