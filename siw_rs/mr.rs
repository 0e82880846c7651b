// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory named by an STag (`index << 8 | key`), which is both
//! the local and the remote key, as in the C siw.

use crate::{
    device::{
        Siw,
        SiwDev,
        MAX_MR, //
    },
    ib::{
        object::{
            UreqRegMr,
            UrespRegMr,
            User, //
        },
        verbs::{
            MrKeys,
            Umem,
            UserMr, //
        },
    },
    limit::{
        Counted,
        Kind, //
    },
};
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::prelude::*;

/// STag indices are 24 bits; 0 is never used.
const STAG_INDEX_MASK: u32 = 0x00ff_ffff;

/// The next STag index.
static NEXT_STAG_INDEX: AtomicU32 = AtomicU32::new(1);

/// A registered memory region. Placement and the STag checks on inbound traffic read these
/// fields; they arrive with the data path.
#[expect(
    dead_code,
    reason = "read by the data path (TX/RX), which arrives with the connection manager"
)]
pub(crate) struct SiwMr {
    /// The pinned pages.
    umem: Umem,
    /// The STag (local and remote key).
    stag: u32,
    /// `IB_ACCESS_*` rights.
    access: u32,
    /// Start of the region in the peer's view (the iova).
    virt: u64,
    /// Length in bytes.
    len: u64,
    _count: Counted,
}

impl SiwMr {
    /// Registers `mr`.
    pub(crate) fn new(
        dev: &SiwDev,
        mr: UserMr,
        user: Option<&mut User<'_, Siw>>,
    ) -> Result<(Self, MrKeys)> {
        let count = Counted::new(&dev.counts, Kind::Mr, MAX_MR)?;
        let index = loop {
            let i = NEXT_STAG_INDEX.fetch_add(1, Ordering::Relaxed) & STAG_INDEX_MASK;
            if i != 0 {
                break i;
            }
        };
        let mut stag = index << 8;
        if let Some(u) = user {
            // The user may choose the 8-bit key part of the STag.
            let req: UreqRegMr = u.udata.request()?;
            stag |= u32::from(req.stag_key);
            let resp = UrespRegMr {
                stag,
                ..Default::default()
            };
            u.udata.respond(&resp)?;
        }
        let keys = MrKeys {
            lkey: stag,
            rkey: stag,
        };
        let this = Self {
            umem: mr.umem,
            stag,
            access: mr.access,
            virt: mr.virt,
            len: mr.len,
            _count: count,
        };
        Ok((this, keys))
    }
}
