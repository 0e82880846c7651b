// SPDX-License-Identifier: GPL-2.0

//! Per-device object limits (`max_pd`, `max_cq`, ...), counted with RAII guards.

use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{
    prelude::*,
    sync::Arc, //
};

/// The kinds of object a device counts.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    /// User contexts.
    Ctx = 0,
    /// Protection domains.
    Pd,
    /// Completion queues.
    Cq,
    /// Shared receive queues.
    Srq,
    /// Queue pairs.
    Qp,
    /// Memory regions.
    Mr,
}

/// The object counts of a device.
#[derive(Default)]
pub(crate) struct Counts([AtomicU32; 6]);

impl Counts {
    fn get(&self, kind: Kind) -> &AtomicU32 {
        // Every `Kind` discriminant is below 6.
        &self.0[kind as usize % 6]
    }
}

/// One slot of a per-device object count; released on drop.
pub(crate) struct Counted {
    counts: Arc<Counts>,
    kind: Kind,
}

impl Counted {
    /// Takes a slot of `kind`, failing with `ENOMEM` at `max` (as the C siw does).
    pub(crate) fn new(counts: &Arc<Counts>, kind: Kind, max: u32) -> Result<Self> {
        let c = counts.get(kind);
        if c.fetch_add(1, Ordering::Relaxed) >= max {
            c.fetch_sub(1, Ordering::Relaxed);
            return Err(ENOMEM);
        }
        Ok(Self {
            counts: counts.clone(),
            kind,
        })
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.counts.get(self.kind).fetch_sub(1, Ordering::Relaxed);
    }
}
