// SPDX-License-Identifier: GPL-2.0

//! Queue memory shared with user processes, and the mmap entries that expose it.
//!
//! C headers: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h) (`rdma_user_mmap_*`),
//! [`include/linux/vmalloc.h`](srctree/include/linux/vmalloc.h).
//!
//! The C siw frees a ring right after removing its mmap entry, so an `mmap()` racing with the
//! destroy verb in another thread could map freed memory. Here the entry holds its own
//! reference on the memory, dropped only when the core releases the entry (`mmap_free`).
//!
//! A driver may reserve mmap keys its user library treats as "no mapping" ([`MmapEntry::insert`]'s
//! `min_key`): libsiw treats `0x90000` (`SIW_INVAL_UOBJ_KEY`) so, and the C siw can hand that
//! key out, so that an object whose ring landed there fails to open (defect O3 of the C siw).

use crate::glue::bindings;
use core::mem::{align_of, size_of, MaybeUninit};
use core::ptr::NonNull;
use core::sync::atomic::{
    AtomicU16,
    AtomicU32,
    AtomicU8, //
};
use kernel::{
    error::to_result,
    prelude::*,
    sync::Arc,
    types::ForeignOwnable, //
};

/// Zeroed, virtually contiguous memory (`vmalloc_user` or `vzalloc`), accessed by the kernel
/// only through volatile and atomic operations at checked offsets, because a user process
/// may have it mapped and write to it at any time.
///
/// # Invariants
///
/// `ptr` points to `len` bytes allocated by `vmalloc_user` (if `user`) or `vzalloc`, freed
/// on drop.
pub(crate) struct SharedMem {
    ptr: NonNull<u8>,
    len: usize,
    user: bool,
}

// SAFETY: The memory is owned by the value; all accesses are volatile or atomic.
unsafe impl Send for SharedMem {}
// SAFETY: As above: concurrent accesses go through atomics or volatile copies, which cannot
// cause undefined behaviour in the kernel's memory model (a torn read is checked by callers).
unsafe impl Sync for SharedMem {}

impl SharedMem {
    /// Allocates `len` zeroed bytes that can be mapped into user space (`vmalloc_user`) if
    /// `user`, or kernel-only memory (`vzalloc`) otherwise.
    pub(crate) fn new(len: usize, user: bool) -> Result<Arc<Self>> {
        if len == 0 {
            return Err(EINVAL);
        }
        // SAFETY: Plain allocations; NULL on failure.
        let raw = unsafe {
            if user {
                bindings::vmalloc_user(len)
            } else {
                bindings::vzalloc(len)
            }
        };
        let ptr = NonNull::new(raw.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: Allocated just above with the matching allocator.
        Ok(Arc::new(Self { ptr, len, user }, GFP_KERNEL)?)
    }

    /// The size in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl SharedMem {
    /// A pointer to `size_of::<T>()` bytes at `off`, if they lie inside and are aligned.
    fn at<T>(&self, off: usize) -> Option<*mut T> {
        let end = off.checked_add(core::mem::size_of::<T>())?;
        if end > self.len || off % core::mem::align_of::<T>() != 0 {
            return None;
        }
        // SAFETY: `off + size_of::<T>() <= len`, so the result is inside the allocation.
        Some(unsafe { self.ptr.as_ptr().add(off) }.cast::<T>())
    }

    /// Copies out the `T` at `off` (a volatile read: user space may be writing it).
    ///
    /// A `T` of whole 8-octet words is read word by word: a volatile read of a struct is one
    /// load and one store per field (a send queue element, 36 of each), of its words one
    /// per word (16).
    #[inline(always)]
    pub(crate) fn read<T: FromBytes + Copy>(&self, off: usize) -> Option<T> {
        let p = self.at::<T>(off)?;
        let words = size_of::<T>() / 8;
        if align_of::<T>() >= 8 && size_of::<T>() % 8 == 0 && words > 1 {
            let mut v = MaybeUninit::<T>::uninit();
            let (src, dst) = (p.cast::<u64>(), v.as_mut_ptr().cast::<u64>());
            for i in 0..words {
                // SAFETY: Word `i` of `words` lies inside both `T`s, and `align_of::<T>()` is a
                // multiple of 8, so both word pointers are aligned; `p` is in bounds
                // (checked by `at`), `v` is ours.
                unsafe { dst.add(i).write(core::ptr::read_volatile(src.add(i))) };
            }
            // SAFETY: Every octet of `v` was written above (`size_of::<T>() == 8 * words`),
            // and `T: FromBytes` is valid for any octets, so a concurrent user write can at
            // worst yield a torn value.
            return Some(unsafe { v.assume_init() });
        }
        // SAFETY: `p` is in bounds and aligned (checked by `at`); `T: FromBytes` is valid for
        // any bytes, so a concurrent user write can at worst yield a torn value.
        Some(unsafe { core::ptr::read_volatile(p) })
    }

    /// Writes `val` at `off` (volatile), word by word for a `T` of whole 8-octet words, as
    /// [`Self::read`] (a completion queue element: 4 stores instead of 7 and their loads).
    #[inline(always)]
    pub(crate) fn write<T: IntoBytes + Copy>(&self, off: usize, val: T) -> Result {
        let p = self.at::<T>(off).ok_or(EINVAL)?;
        let words = size_of::<T>() / 8;
        if align_of::<T>() >= 8 && size_of::<T>() % 8 == 0 && words > 1 {
            let (src, dst) = (core::ptr::from_ref(&val).cast::<u64>(), p.cast::<u64>());
            for i in 0..words {
                // SAFETY: Word `i` of `words` lies inside both `T`s, both aligned to 8 (as in
                // `read`); `p` is in bounds (checked by `at`) and ours to write, and
                // `T: IntoBytes` has no padding, so every word of `val` is initialised.
                unsafe { core::ptr::write_volatile(dst.add(i), src.add(i).read()) };
            }
            return Ok(());
        }
        // SAFETY: `p` is in bounds and aligned; the memory is ours to write.
        unsafe { core::ptr::write_volatile(p, val) };
        Ok(())
    }

    /// The `u8` at `off` as an atomic (ownership flags shared with user space).
    pub(crate) fn atomic_u8(&self, off: usize) -> Option<&AtomicU8> {
        // SAFETY: In bounds; `AtomicU8` has the layout of `u8`; the memory lives as long as
        // `&self`, and every access to it here is atomic or volatile.
        self.at::<u8>(off).map(|p| unsafe { AtomicU8::from_ptr(p) })
    }

    /// The `u16` at `off` as an atomic.
    pub(crate) fn atomic_u16(&self, off: usize) -> Option<&AtomicU16> {
        // SAFETY: As in `atomic_u8`; `at` checked the 2-byte alignment.
        self.at::<u16>(off)
            .map(|p| unsafe { AtomicU16::from_ptr(p) })
    }

    /// The `u32` at `off` as an atomic.
    pub(crate) fn atomic_u32(&self, off: usize) -> Option<&AtomicU32> {
        // SAFETY: As in `atomic_u8`; `at` checked the 4-byte alignment.
        self.at::<u32>(off)
            .map(|p| unsafe { AtomicU32::from_ptr(p) })
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the memory came from `vmalloc_user`/`vzalloc`, both
        // released with `vfree`. Pages still mapped into a process keep their own references.
        unsafe { bindings::vfree(self.ptr.as_ptr().cast()) };
    }
}

/// The C side of an mmap entry: the core's `rdma_user_mmap_entry` plus the memory it maps.
#[repr(C)]
struct RawEntry {
    rdma: bindings::rdma_user_mmap_entry,
    mem: Arc<SharedMem>,
}

/// A region of [`SharedMem`] registered with a user context for `mmap()`; removed on drop.
///
/// # Invariants
///
/// `raw` was inserted with `rdma_user_mmap_entry_insert_range` and not yet removed; the core
/// frees it (through `mmap_free`) once it is removed and no mapping uses it.
pub(crate) struct MmapEntry {
    raw: NonNull<RawEntry>,
    key: u64,
}

// SAFETY: Removing an entry is thread-safe; the entry's memory is `Send + Sync`.
unsafe impl Send for MmapEntry {}
// SAFETY: `&MmapEntry` only reads the key.
unsafe impl Sync for MmapEntry {}

impl MmapEntry {
    /// Registers `mem` for mapping by the user context `uctx`; the returned key, at least
    /// `min_key`, is the mmap offset user space passes to `mmap()`.
    ///
    /// # Safety
    ///
    /// `uctx` is a live user context for as long as the entry exists (the core destroys a
    /// context's objects before the context).
    pub(crate) unsafe fn insert(
        uctx: *mut bindings::ib_ucontext,
        mem: &Arc<SharedMem>,
        min_key: u64,
    ) -> Result<Self> {
        let entry = KBox::new(
            RawEntry {
                rdma: pin_init::zeroed(),
                mem: mem.clone(),
            },
            GFP_KERNEL,
        )?;
        let raw = entry.into_foreign().cast::<RawEntry>();
        let page_shift = kernel::page::PAGE_SHIFT;
        // Keys are byte offsets of whole pages.
        let min_pgoff = u32::try_from(min_key.div_ceil(1 << page_shift)).map_err(|_| EINVAL)?;
        // SAFETY: `uctx` is live (caller); `raw` points to a zeroed `rdma_user_mmap_entry` at
        // offset 0 of a `RawEntry` that stays allocated until `mmap_free`.
        let ret = unsafe {
            bindings::rdma_user_mmap_entry_insert_range(
                uctx,
                core::ptr::addr_of_mut!((*raw).rdma),
                mem.len(),
                min_pgoff,
                u32::MAX,
            )
        };
        if let Err(e) = to_result(ret) {
            // SAFETY: Insertion failed, so the core does not know `raw`; it is still ours.
            drop(unsafe { KBox::<RawEntry>::from_foreign(raw.cast()) });
            return Err(e);
        }
        // SAFETY: `raw` is inserted; reading `start_pgoff` is what `rdma_user_mmap_get_offset`
        // does.
        let key = unsafe { (*raw).rdma.start_pgoff as u64 } << page_shift;
        // INVARIANT: Inserted above.
        Ok(Self {
            // SAFETY: `raw` came from `into_foreign` of a box, so it is non-null.
            raw: unsafe { NonNull::new_unchecked(raw) },
            key,
        })
    }

    /// The key (mmap offset) for user space.
    pub(crate) fn key(&self) -> u64 {
        self.key
    }
}

impl Drop for MmapEntry {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the entry is inserted; after this, lookups fail and
        // the core calls `mmap_free` when the last reference goes.
        unsafe {
            bindings::rdma_user_mmap_entry_remove(core::ptr::addr_of_mut!(
                (*self.raw.as_ptr()).rdma
            ))
        };
    }
}

/// `mmap_free`: the core's last reference to an entry is gone.
///
/// # Safety
///
/// `entry` is the `rdma` field of a `RawEntry` made by [`MmapEntry::insert`].
pub(super) unsafe extern "C" fn mmap_free(entry: *mut bindings::rdma_user_mmap_entry) {
    // SAFETY: `rdma` is at offset 0 of the `repr(C)` `RawEntry` that `insert` leaked with
    // `into_foreign`; the core calls this once per entry.
    drop(unsafe { KBox::<RawEntry>::from_foreign(entry.cast()) });
}

/// `mmap`: maps the entry that `vma->vm_pgoff` names.
///
/// # Safety
///
/// Called by the core with a live context and VMA.
pub(super) unsafe extern "C" fn mmap(
    uctx: *mut bindings::ib_ucontext,
    vma: *mut bindings::vm_area_struct,
) -> c_int {
    // SAFETY: As above; `rdma_user_mmap_entry_get` checks the VMA's flags, offset and length
    // against the entry and returns a held reference or NULL.
    let entry = unsafe { bindings::rdma_user_mmap_entry_get(uctx, vma) };
    if entry.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: Every entry of our contexts is a `RawEntry`; the reference we hold keeps it,
    // and so its memory, alive.
    let mem = unsafe { &(*entry.cast::<RawEntry>()).mem };
    let ret = if mem.user {
        // SAFETY: `mem` is `vmalloc_user` memory of the entry's exact length (the core checked
        // the VMA size against it).
        unsafe { bindings::remap_vmalloc_range(vma, mem.ptr.as_ptr().cast(), 0) }
    } else {
        EINVAL.to_errno()
    };
    // SAFETY: Drops the reference `rdma_user_mmap_entry_get` took.
    unsafe { bindings::rdma_user_mmap_entry_put(entry) };
    ret
}
