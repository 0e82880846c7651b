// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory named by an STag (`index << 8 | key`), which is both
//! the local and the remote key, as in the C siw.

use crate::{
    device::{
        Siw,
        SiwDev,
        MAX_MR, //
    },
    glue::{
        random_u32,
        rdma::{
            object::User,
            umem::{
                KernelMem,
                MrMem,
                UserPages, //
            },
            verbs::{
                Access,
                AccessFlags,
                MrKeys,
                UserMr, //
            },
        },
        siw_abi::{
            UreqRegMr,
            UrespRegMr, //
        },
    },
    limit::{
        Counted,
        Kind, //
    },
    table::Tables,
};
use kernel::{
    prelude::*,
    sync::{Arc, UniqueArc},
};

/// A random 8-bit STag key.
fn random_key() -> u8 {
    u8::try_from(random_u32() & 0xff).unwrap_or(0)
}

/// STag indices are 24 bits, chosen at random ([`Tables::publish_mr`]); 0 is never used.
pub(crate) const STAG_INDEX_MASK: u32 = 0x00ff_ffff;

/// Why an access to a region was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AccessError {
    /// No such STag (or the key does not match).
    InvalidStag,
    /// The region belongs to another PD.
    Pd,
    /// The region lacks the access right.
    Rights,
    /// The range leaves the region.
    Bounds,
}

/// What the data path sees of a region.
pub(crate) struct MrCore {
    /// The STag (local and remote key).
    pub(crate) stag: u32,
    /// The owning PD.
    pd: usize,
    /// The access rights.
    access: AccessFlags,
    /// Start of the region (the iova both sides address it by).
    virt: u64,
    /// The memory: pinned user pages, or kernel memory for a DMA MR.
    pub(crate) pages: MrMem,
}

impl MrCore {
    /// Checks an access of `len` bytes at address `addr` by a QP of PD `pd` that needs the
    /// rights `need` (none for local read); returns the offset into the region.
    pub(crate) fn check(
        &self,
        pd: usize,
        addr: u64,
        len: u32,
        need: AccessFlags,
    ) -> Result<usize, AccessError> {
        if self.pd != pd {
            return Err(AccessError::Pd);
        }
        if !self.access.contains_all(need) {
            return Err(AccessError::Rights);
        }
        let off = addr.checked_sub(self.virt).ok_or(AccessError::Bounds)?;
        let end = off.checked_add(u64::from(len)).ok_or(AccessError::Bounds)?;
        if end > self.pages.len() as u64 {
            return Err(AccessError::Bounds);
        }
        usize::try_from(off).map_err(|_| AccessError::Bounds)
    }
}

/// Local read needs no right.
pub(crate) const LOCAL_READ: AccessFlags = AccessFlags::from_raw(0);
/// The right a receive buffer or Read sink needs.
pub(crate) const LOCAL_WRITE: AccessFlags = AccessFlags::from_raw(Access::LocalWrite as u32);
/// The right an inbound RDMA Write needs.
pub(crate) const REMOTE_WRITE: AccessFlags = AccessFlags::from_raw(Access::RemoteWrite as u32);
/// The right an inbound RDMA Read needs.
pub(crate) const REMOTE_READ: AccessFlags = AccessFlags::from_raw(Access::RemoteRead as u32);

/// A registered memory region.
pub(crate) struct SiwMr {
    index: u32,
    tables: Arc<Tables>,
    _count: Counted,
}

impl SiwMr {
    /// Registers `mr` in PD `pd`.
    pub(crate) fn new(
        dev: &SiwDev,
        pd: usize,
        mr: UserMr,
        mut user: Option<&mut User<'_, Siw>>,
    ) -> Result<(Self, MrKeys)> {
        let count = Counted::new(&dev.counts, Kind::Mr, MAX_MR)?;
        let req: Option<UreqRegMr> = match user.as_deref_mut() {
            Some(u) => Some(u.udata.request()?),
            None => None,
        };
        // The user may choose the 8-bit key part of the STag; a kernel user gets a random
        // one. The index is random either way.
        let key = match req {
            Some(req) => req.stag_key,
            None => random_key(),
        };
        let core = UniqueArc::new(
            MrCore {
                stag: u32::from(key),
                pd,
                access: mr.access,
                virt: mr.virt,
                pages: MrMem::User(UserPages::new(mr.umem, mr.len)?),
            },
            GFP_KERNEL,
        )?;
        let stag = dev.tables.publish_mr(core)?;
        let index = stag >> 8;
        let this = Self {
            index,
            tables: dev.tables.clone(),
            _count: count,
        };
        if let Some(u) = user {
            let resp = UrespRegMr {
                stag,
                ..Default::default()
            };
            u.udata.respond(&resp)?;
        }
        Ok((
            this,
            MrKeys {
                lkey: stag,
                rkey: stag,
            },
        ))
    }
}

impl SiwMr {
    /// A kernel consumer's DMA MR in PD `pd`: all of kernel memory, by kernel virtual
    /// address, with the rights `access` (remote rights only with the consumer's
    /// `IB_PD_UNSAFE_GLOBAL_RKEY`, as the core asks for them then alone).
    pub(crate) fn dma(
        dev: &SiwDev,
        pd: usize,
        access: AccessFlags,
        mem: KernelMem,
    ) -> Result<(Self, MrKeys)> {
        let count = Counted::new(&dev.counts, Kind::Mr, MAX_MR)?;
        let key = random_key();
        let core = UniqueArc::new(
            MrCore {
                stag: u32::from(key),
                pd,
                access,
                virt: 0,
                pages: MrMem::Kernel(mem),
            },
            GFP_KERNEL,
        )?;
        let stag = dev.tables.publish_mr(core)?;
        let index = stag >> 8;
        Ok((
            Self {
                index,
                tables: dev.tables.clone(),
                _count: count,
            },
            MrKeys {
                lkey: stag,
                rkey: stag,
            },
        ))
    }
}

impl Drop for SiwMr {
    fn drop(&mut self) {
        // Work in flight keeps its own reference; the pages go with the last one.
        drop(self.tables.remove_mr(self.index));
    }
}
