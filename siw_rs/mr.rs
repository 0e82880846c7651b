// SPDX-License-Identifier: GPL-2.0

//! Memory regions: pinned user memory named by an STag (`index << 8 | key`), which is both
//! the local and the remote key, as in the C siw.

use crate::{
    device::{
        Siw,
        SiwDev,
        MAX_MR,
        MAX_SGE_PBL, //
    },
    glue::{
        random_u32,
        rdma::{
            object::User,
            umem::{
                KernelMem,
                KernelPages,
                MappedPage,
                MrMem,
                UserPages, //
            },
            verbs::{
                Access,
                AccessFlags,
                MrKeys,
                MrMap,
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
    proto::error::TermError,
    table::Tables,
};
use core::sync::atomic::{
    AtomicBool,
    Ordering, //
};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    sync::{
        Arc,
        SpinLockIrq,
        UniqueArc, //
    },
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

impl AccessError {
    /// The Terminate error of a Read Request whose source is refused so (RFC 5040 section
    /// 7.4.1).
    pub(crate) fn of_read(self) -> TermError {
        match self {
            Self::InvalidStag | Self::Pd => TermError::RdmapInvalidStag,
            Self::Rights => TermError::RdmapAccessRights,
            Self::Bounds => TermError::RdmapBaseBounds,
        }
    }
}

/// What the data path sees of a region: for a fast-registration MR, one registration of it.
///
/// A registration never changes: `REG_MR` publishes a new one under the MR's STag index,
/// and invalidation or deregistration clears `valid` of the current one. Every inbound
/// segment looks the STag up again, and placement checks `valid` before each piece of a
/// segment, so nothing is placed once the STag is invalid, deregistered or re-registered
/// under a new key; a Read Response checks its source before each FPDU (RFC 5040 section
/// 8.1.1, item 6). A local element being sent from a registration finishes with it.
pub(crate) struct MrCore {
    /// The STag (local and remote key).
    pub(crate) stag: u32,
    /// The owning PD.
    pd: usize,
    /// The access rights.
    access: AccessFlags,
    /// Start of the region (the iova both sides address it by).
    virt: u64,
    /// The memory: pinned user pages, kernel memory for a DMA MR, or the pages a kernel
    /// consumer mapped onto a fast-registration MR.
    pub(crate) pages: MrMem,
    /// A fast-registration MR's mapping, which `REG_MR` registers; `None` for the others,
    /// which are valid from registration to deregistration and cannot be invalidated.
    fast: Option<Arc<FastMap>>,
    /// The STag state of RFC 5040 (valid / invalid); only a fast-registration MR is ever
    /// invalid.
    valid: AtomicBool,
}

impl MrCore {
    /// Whether the STag is valid (RFC 5040: accesses to an invalid STag are refused).
    pub(crate) fn is_valid(&self) -> bool {
        self.valid.load(Ordering::Acquire)
    }

    /// The STag goes invalid (Local Invalidate, remote invalidation, deregistration):
    /// lookups no longer find it, and work still holding this registration (a Read
    /// Response being sent from it, an FPDU half placed into it) stops at its next step
    /// (RFC 5040 section 8.1.1, item 6).
    pub(crate) fn set_invalid(&self) {
        self.valid.store(false, Ordering::Release);
    }

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
/// The right an inbound RFC 7306 Atomic Request needs.
pub(crate) const REMOTE_ATOMIC: AccessFlags = AccessFlags::from_raw(Access::RemoteAtomic as u32);

/// The pages `map_mr_sg` mapped onto a fast-registration MR, waiting for a `REG_MR`.
#[pin_data]
pub(crate) struct FastMap {
    /// The most pages the MR takes (`max_num_sg` of `ib_alloc_mr`).
    max: usize,
    #[pin]
    map: SpinLockIrq<Mapped>,
}

/// The mapping itself.
struct Mapped {
    /// Room for `max` pages, allocated with the MR: mapping runs in atomic context.
    pages: KVec<MappedPage>,
    page_size: u64,
    /// The offset of the first byte in the first page.
    first: u64,
}

/// Why a `REG_MR` or an invalidation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FastRegError {
    /// No such MR in this PD, or not with this key.
    Stag,
    /// Not a fast-registration MR (registered user memory, a DMA MR), or a `REG_MR` of an
    /// MR that is valid (it must be invalidated first).
    NotAllowed,
    /// The mapping does not hold the range, or no memory for the registration.
    Mapping,
}

/// Registers the fast-registration MR whose STag index `mr` names under `key` with `access`,
/// for `length` bytes from `iova`, over the pages last mapped onto it (`IB_WR_REG_MR`, posted
/// to a QP of PD `pd`). The MR must be of that PD and invalid, and `key` must keep its index.
/// (Consumers bump the `ib_mr`'s keys with `ib_update_fast_reg_key` before posting, so only
/// the index of `mr` says which MR is meant.)
pub(crate) fn register(
    tables: &Tables,
    pd: usize,
    mr: u32,
    key: u32,
    access: AccessFlags,
    iova: u64,
    length: u64,
) -> Result<(), FastRegError> {
    if key >> 8 != mr >> 8 {
        return Err(FastRegError::Stag);
    }
    let cur = tables.mr_at(mr >> 8).ok_or(FastRegError::Stag)?;
    if cur.pd != pd {
        return Err(FastRegError::Stag);
    }
    let fast = cur.fast.clone().ok_or(FastRegError::NotAllowed)?;
    if cur.is_valid() {
        return Err(FastRegError::NotAllowed);
    }
    let mut pages = KVec::with_capacity(fast.max, GFP_KERNEL).map_err(|_| FastRegError::Mapping)?;
    let (page_size, first) = {
        let m = fast.map.lock();
        // Within the capacity just reserved: no allocation under the lock.
        pages
            .extend_from_slice(&m.pages, GFP_ATOMIC)
            .map_err(|_| FastRegError::Mapping)?;
        (m.page_size, m.first)
    };
    let mem =
        KernelPages::new(pages, page_size, first, length).map_err(|_| FastRegError::Mapping)?;
    let reg = Arc::new(
        MrCore {
            stag: key,
            pd,
            access,
            virt: iova,
            pages: MrMem::Pages(mem),
            fast: Some(fast),
            valid: AtomicBool::new(true),
        },
        GFP_KERNEL,
    )
    .map_err(|_| FastRegError::Mapping)?;
    tables.replace_mr(mr >> 8, &cur, reg).map_err(|e| {
        if e == EBUSY {
            FastRegError::NotAllowed
        } else {
            FastRegError::Stag
        }
    })
}

/// Invalidates the STag `stag` for a QP of PD `pd`: a Local Invalidate, a Read with
/// Invalidate's sink, or the STag a peer's Send with Invalidate names. Only a
/// fast-registration MR of the PD can be invalidated; invalidating an invalid one is no
/// error (as by the verbs).
pub(crate) fn invalidate(tables: &Tables, pd: usize, stag: u32) -> Result<(), FastRegError> {
    let cur = tables.mr_at(stag >> 8).ok_or(FastRegError::Stag)?;
    if cur.pd != pd || cur.stag != stag {
        return Err(FastRegError::Stag);
    }
    if cur.fast.is_none() {
        return Err(FastRegError::NotAllowed);
    }
    cur.set_invalid();
    Ok(())
}

/// A registered memory region.
pub(crate) struct SiwMr {
    index: u32,
    tables: Arc<Tables>,
    /// The mapping of a fast-registration MR.
    fast: Option<Arc<FastMap>>,
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
                fast: None,
                valid: AtomicBool::new(true),
            },
            GFP_KERNEL,
        )?;
        let stag = dev.tables.publish_mr(core)?;
        let index = stag >> 8;
        let this = Self {
            index,
            tables: dev.tables.clone(),
            fast: None,
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
                fast: None,
                valid: AtomicBool::new(true),
            },
            GFP_KERNEL,
        )?;
        let stag = dev.tables.publish_mr(core)?;
        let index = stag >> 8;
        Ok((
            Self {
                index,
                tables: dev.tables.clone(),
                fast: None,
                _count: count,
            },
            MrKeys {
                lkey: stag,
                rkey: stag,
            },
        ))
    }
}

impl SiwMr {
    /// A kernel consumer's fast-registration MR in PD `pd` for up to `max_pages` pages:
    /// invalid, with a random key, until a `REG_MR` registers what `map_mr_sg` mapped.
    pub(crate) fn fast(dev: &SiwDev, pd: usize, max_pages: u32) -> Result<(Self, MrKeys)> {
        if max_pages == 0 || max_pages > MAX_SGE_PBL {
            return Err(EINVAL);
        }
        let count = Counted::new(&dev.counts, Kind::Mr, MAX_MR)?;
        let max = max_pages as usize;
        let pages = KVec::with_capacity(max, GFP_KERNEL)?;
        let map = Arc::pin_init(
            pin_init!(FastMap {
                max,
                map <- new_spinlock_irq!(
                    Mapped {
                        pages,
                        page_size: 0,
                        first: 0,
                    },
                    "FastMap::map"
                ),
            }),
            GFP_KERNEL,
        )?;
        let core = UniqueArc::new(
            MrCore {
                stag: u32::from(random_key()),
                pd,
                access: AccessFlags::from_raw(0),
                virt: 0,
                pages: MrMem::Pages(KernelPages::empty()),
                fast: Some(map.clone()),
                valid: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?;
        let stag = dev.tables.publish_mr(core)?;
        Ok((
            Self {
                index: stag >> 8,
                tables: dev.tables.clone(),
                fast: Some(map),
                _count: count,
            },
            MrKeys {
                lkey: stag,
                rkey: stag,
            },
        ))
    }

    /// `map_mr_sg`: a new mapping replaces the last (a registration keeps its own copy).
    pub(crate) fn map_sg(&self, map: MrMap<'_, Siw>) -> Result<usize> {
        let fast = self.fast.as_ref().ok_or(EINVAL)?;
        fast.map.lock().pages.clear();
        let (n, layout) = map.map()?;
        if !layout.page_size.is_power_of_two() {
            return Err(EINVAL);
        }
        let mut m = fast.map.lock();
        m.page_size = layout.page_size;
        m.first = layout.iova & (layout.page_size - 1);
        Ok(n)
    }

    /// The next page of `map_sg`; `ENOMEM` once the MR holds its `max_pages`.
    pub(crate) fn set_page(&self, page: MappedPage) -> Result {
        let fast = self.fast.as_ref().ok_or(EINVAL)?;
        fast.map
            .lock()
            .pages
            .push_within_capacity(page)
            .map_err(|_| ENOMEM)
    }
}

/// For the KUnit tests: publishes an invalid fast-registration MR of PD `pd` with an empty
/// mapping of 4 KiB pages in `tables`; returns its STag (remove it with `remove_mr`).
#[cfg(CONFIG_KUNIT)]
pub(crate) fn publish_fast_for_test(tables: &Tables, pd: usize) -> Result<u32> {
    let map = Arc::pin_init(
        pin_init!(FastMap {
            max: 0,
            map <- new_spinlock_irq!(
                Mapped {
                    pages: KVec::new(),
                    page_size: 4096,
                    first: 0,
                },
                "FastMap::map"
            ),
        }),
        GFP_KERNEL,
    )?;
    let core = UniqueArc::new(
        MrCore {
            stag: 0x42,
            pd,
            access: AccessFlags::from_raw(0),
            virt: 0,
            pages: MrMem::Pages(KernelPages::empty()),
            fast: Some(map),
            valid: AtomicBool::new(false),
        },
        GFP_KERNEL,
    )?;
    tables.publish_mr(core)
}

impl Drop for SiwMr {
    fn drop(&mut self) {
        // Work in flight keeps its own reference; the pages go with the last one.
        drop(self.tables.remove_mr(self.index));
    }
}
