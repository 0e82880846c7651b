// SPDX-License-Identifier: GPL-2.0

//! Memory a region names: user memory pinned for it ([`Umem`], [`UserPages`]) or, for a
//! kernel consumer's DMA region, kernel memory by address ([`KernelMem`]).
//!
//! C headers: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h).

use crate::glue::{bindings, iov::IoVec, workqueue};
use core::ptr::NonNull;
use core::sync::atomic::AtomicU64;
use kernel::{
    impl_has_work, new_work,
    prelude::*,
    workqueue::{
        Work,
        WorkItem, //
    },
};

/// User memory pinned for a memory region (`struct ib_umem`).
///
/// Released in process context, whatever context drops it: the last reference to a region
/// may go in the socket read actor (atomic), and `ib_umem_release` may sleep (unpinning
/// dirty pages takes the page lock). Dropping queues the release on
/// [`workqueue::queue`], with a work item allocated together with the umem, so it cannot
/// fail. That is the queue whose draining outlives the code that runs the release: the
/// module's own, destroyed at module exit (in a built-in layer, whose code never goes away,
/// a system queue would do). The umem holds a reference on its device until it is released.
pub(crate) struct Umem(Option<Pin<KBox<UmemRelease>>>);

/// A pinned umem and a reference on its device, both released on drop.
///
/// # Invariants
///
/// `umem` was returned by `ib_umem_get_va` and is not yet released; `dev` is its device,
/// on which this value holds a reference (`ib_device_try_get`).
struct UmemRef {
    umem: NonNull<bindings::ib_umem>,
    dev: NonNull<bindings::ib_device>,
}

// SAFETY: A umem may be released, and a device reference dropped, from any process context.
unsafe impl Send for UmemRef {}
// SAFETY: `&UmemRef` gives access to nothing.
unsafe impl Sync for UmemRef {}

impl Drop for UmemRef {
    fn drop(&mut self) {
        // SAFETY: By the type invariant; released exactly once, then the device reference
        // the umem needed is dropped.
        unsafe {
            bindings::ib_umem_release(self.umem.as_ptr());
            bindings::ib_device_put(self.dev.as_ptr());
        }
    }
}

/// The release of a [`UmemRef`], as work.
#[pin_data]
pub(crate) struct UmemRelease {
    held: UmemRef,
    #[pin]
    work: Work<UmemRelease>,
}

impl_has_work! {
    impl HasWork<Self> for UmemRelease { self.work }
}

impl WorkItem for UmemRelease {
    type Pointer = Pin<KBox<Self>>;

    fn run(this: Pin<KBox<Self>>) {
        drop(this);
    }
}

impl Umem {
    /// Takes ownership of `umem`, pinned on the live device `dev`.
    ///
    /// # Safety
    ///
    /// `umem` was just returned by `ib_umem_get_va` for `dev` and is released by nothing
    /// else.
    pub(super) unsafe fn new(
        umem: NonNull<bindings::ib_umem>,
        dev: *mut bindings::ib_device,
    ) -> Result<Self> {
        let dev = NonNull::new(dev).ok_or(EINVAL)?;
        // SAFETY: `dev` is the PD's device, allocated while the PD lives; `try_get` only
        // reads and raises its registration count, and fails once unregistration began.
        if !unsafe { bindings::ib_device_try_get(dev.as_ptr()) } {
            // SAFETY: By the caller's guarantee; nothing else releases it.
            unsafe { bindings::ib_umem_release(umem.as_ptr()) };
            return Err(ENODEV);
        }
        // INVARIANT: Both held just above. Should the allocation fail, `held` is dropped
        // here, in process context, and releases them.
        let held = UmemRef { umem, dev };
        let r = KBox::pin_init(
            pin_init!(UmemRelease {
                held,
                work <- new_work!("Umem::release"),
            }),
            GFP_KERNEL,
        )?;
        Ok(Self(Some(r)))
    }

    fn as_ptr(&self) -> *mut bindings::ib_umem {
        self.0
            .as_ref()
            .map_or(core::ptr::null_mut(), |r| r.held.umem.as_ptr())
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        let Some(r) = self.0.take() else {
            return;
        };
        match workqueue::queue() {
            Some(q) => q.enqueue(r),
            // Module exit, in process context.
            None => drop(r),
        }
    }
}

/// Pinned user memory, addressed by byte offset from the region's start: the umem and the
/// kernel addresses of its pages.
///
/// # Invariants
///
/// `pages` are the kernel addresses of the umem's pages, in order; the first `first` bytes
/// of the first page precede the region, which is `len` bytes long. The pages stay pinned
/// (and mapped: this layer needs a kernel without highmem) while `umem` lives.
pub(crate) struct UserPages {
    _umem: Umem,
    pages: KVec<usize>,
    first: usize,
    len: usize,
}

impl UserPages {
    /// The pages of `umem`, whose region is `len` bytes long.
    pub(crate) fn new(umem: Umem, len: u64) -> Result<Self> {
        let u = umem.as_ptr();
        if u.is_null() {
            return Err(EINVAL);
        }
        // SAFETY: A live umem.
        let (n, first) = unsafe { (bindings::ib_umem_num_pages(u), bindings::ib_umem_offset(u)) };
        let mut raw: KVec<*mut bindings::page> = KVec::with_capacity(n, GFP_KERNEL)?;
        raw.resize(n, core::ptr::null_mut(), GFP_KERNEL)?;
        // SAFETY: A live umem; `raw` has room for `n` entries.
        let got = unsafe { bindings::umem_pages(u, raw.as_mut_ptr(), n) };
        if got != n {
            return Err(EFAULT);
        }
        let mut pages = KVec::with_capacity(n, GFP_KERNEL)?;
        for p in raw.iter() {
            // SAFETY: A pinned page of the umem.
            let a = unsafe { bindings::page_address(*p) };
            if a.is_null() {
                return Err(EFAULT);
            }
            pages.push(a as usize, GFP_KERNEL)?;
        }
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        if first.checked_add(len).ok_or(EINVAL)? > n.saturating_mul(kernel::page::PAGE_SIZE) {
            return Err(EINVAL);
        }
        // INVARIANT: Checked above.
        Ok(Self {
            _umem: umem,
            pages,
            first,
            len,
        })
    }

    /// The region's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Calls `f` on the page-sized (or smaller) pieces of `len` bytes at `off`.
    fn pieces(&self, off: usize, len: usize, mut f: impl FnMut(usize, usize) -> Result) -> Result {
        let end = off.checked_add(len).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        const PS: usize = kernel::page::PAGE_SIZE;
        let mut pos = off.checked_add(self.first).ok_or(EFAULT)?;
        let mut left = len;
        while left > 0 {
            let page = *self.pages.get(pos / PS).ok_or(EFAULT)?;
            let in_page = pos % PS;
            let n = left.min(PS.wrapping_sub(in_page));
            f(page.wrapping_add(in_page), n)?;
            pos = pos.wrapping_add(n);
            left = left.wrapping_sub(n);
        }
        Ok(())
    }

    /// Copies `src` to offset `off` of the region.
    pub(crate) fn write(&self, off: usize, src: IoVec<'_>) -> Result {
        let mut done = 0usize;
        // SAFETY: `addr..addr + n` lies in a pinned, mapped page of the region (invariant
        // and the bounds check in `pieces`); user space may access it concurrently, which a
        // byte copy tolerates.
        self.pieces(off, src.len(), |addr, n| unsafe {
            copy_piece(src, &mut done, addr, n)
        })
    }

    /// The pieces of `len` bytes at `off`, to send; with `splice` TCP may reference the
    /// pages instead of copying them.
    pub(crate) fn iovecs<'a>(
        &'a self,
        off: usize,
        len: usize,
        splice: bool,
        mut f: impl FnMut(IoVec<'a>) -> Result,
    ) -> Result {
        self.pieces(off, len, |addr, n| {
            if splice {
                // SAFETY: `addr` is a linear-map address (no highmem, invariant), so this
                // only computes its `struct page`.
                let page = unsafe { bindings::virt_to_page(addr as *const c_void) };
                // SAFETY: As in `write`, the bytes lie in the pinned, mapped page `page`
                // (`pieces` never crosses a page), which stays mapped and referenced for
                // `'a` (`self` holds the pin); pinned user pages are never slab memory.
                f(unsafe { IoVec::from_page(addr as *const u8, n, page) })
            } else {
                // SAFETY: As in `write`; the pages stay mapped for `'a` (they belong to `self`).
                f(unsafe { IoVec::from_raw(addr as *const u8, n) })
            }
        })
    }
}

/// A kernel consumer's DMA region (`get_dma_mr`): memory addressed by kernel virtual
/// address (a device registered without a DMA device does virtual DMA: a consumer's DMA
/// addresses are kernel addresses).
///
/// Every piece accessed must lie in the kernel's linear map (`virt_addr_valid`): an address
/// outside it, even one a peer names through a global rkey the consumer chose to grant
/// (`IB_PD_UNSAFE_GLOBAL_RKEY`), is an access error, never a fault. Inside it, the consumer
/// answers for what it exposed, as with any DMA MR.
///
/// # Invariants
///
/// Made only by the `get_dma_mr` trampoline, where the kernel consumer that owns the region
/// grants access to its memory through it, and for a kernel consumer's inline SGEs, which
/// it hands over for reading by posting them.
pub(crate) struct KernelMem(pub(super) ());

impl KernelMem {
    /// Calls `f` on the page-sized (or smaller) pieces of `len` bytes at address `addr`,
    /// each checked to lie in the linear map.
    pub(super) fn pieces(
        &self,
        addr: usize,
        len: usize,
        mut f: impl FnMut(usize, usize) -> Result,
    ) -> Result {
        const PS: usize = kernel::page::PAGE_SIZE;
        addr.checked_add(len).ok_or(EFAULT)?;
        let mut pos = addr;
        let mut left = len;
        while left > 0 {
            let n = left.min(PS.wrapping_sub(pos % PS));
            // SAFETY: Only computes whether the address has a `struct page` in the linear map.
            if !unsafe { bindings::virt_addr_valid(pos as *const c_void) } {
                return Err(EFAULT);
            }
            f(pos, n)?;
            pos = pos.wrapping_add(n);
            left = left.wrapping_sub(n);
        }
        Ok(())
    }
}

/// A page a kernel consumer mapped onto a fast-registration MR ([`Driver::set_page`]), by
/// its DMA address (the kernel virtual address: the device does virtual DMA).
///
/// # Invariants
///
/// Made only by the `set_page` trampoline: the consumer hands the page to the device, to be
/// accessed once a `REG_MR` registers it (as with a DMA MR, it answers for what it maps).
///
/// [`Driver::set_page`]: super::device::Driver::set_page
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct MappedPage(pub(super) u64);

/// The memory of a registered fast-registration MR: `len` bytes from offset `first` of a
/// list of equally sized pages.
///
/// # Invariants
///
/// `page_size` is a power of two, `first < page_size`, and `first + len` fits in the pages.
pub(crate) struct KernelPages {
    pages: KVec<MappedPage>,
    page_size: usize,
    first: usize,
    len: usize,
}

impl KernelPages {
    /// `len` bytes from `first` in the first of `pages`, each `page_size` bytes. `EINVAL`
    /// for a page size that is not a power of two, or a range the pages do not hold.
    pub(crate) fn new(
        pages: KVec<MappedPage>,
        page_size: u64,
        first: u64,
        len: u64,
    ) -> Result<Self> {
        let page_size = usize::try_from(page_size).map_err(|_| EINVAL)?;
        let first = usize::try_from(first).map_err(|_| EINVAL)?;
        let len = usize::try_from(len).map_err(|_| EINVAL)?;
        if !page_size.is_power_of_two() || first >= page_size {
            return Err(EINVAL);
        }
        let room = pages.len().checked_mul(page_size).ok_or(EINVAL)?;
        if first.checked_add(len).ok_or(EINVAL)? > room {
            return Err(EINVAL);
        }
        // INVARIANT: Checked above.
        Ok(Self {
            pages,
            page_size,
            first,
            len,
        })
    }

    /// No memory at all (an MR not registered yet).
    pub(crate) fn empty() -> Self {
        // INVARIANT: A power of two; nothing to hold.
        Self {
            pages: KVec::new(),
            page_size: 1,
            first: 0,
            len: 0,
        }
    }

    /// Calls `f` on the pieces of `len` bytes at `off`, by kernel address, each inside one
    /// linear-map page (checked).
    fn pieces(&self, off: usize, len: usize, mut f: impl FnMut(usize, usize) -> Result) -> Result {
        let end = off.checked_add(len).ok_or(EFAULT)?;
        if end > self.len {
            return Err(EFAULT);
        }
        let mut pos = off.checked_add(self.first).ok_or(EFAULT)?;
        let mut left = len;
        while left > 0 {
            // `page_size` is a power of two (invariant).
            let page = self
                .pages
                .get(pos >> self.page_size.trailing_zeros())
                .ok_or(EFAULT)?;
            let in_page = pos & self.page_size.wrapping_sub(1);
            let n = left.min(self.page_size.wrapping_sub(in_page));
            let addr = usize::try_from(page.0)
                .ok()
                .and_then(|a| a.checked_add(in_page))
                .ok_or(EFAULT)?;
            // INVARIANT (of `KernelMem`): pages the consumer mapped and registered.
            KernelMem(()).pieces(addr, n, &mut f)?;
            pos = pos.wrapping_add(n);
            left = left.wrapping_sub(n);
        }
        Ok(())
    }
}

/// Copies the `n` bytes of `src` from `*done` on to `addr`, and counts them.
///
/// The two may overlap: received data can lie in the very pages it is placed into. A Read
/// Response of 4 KiB or more is sent from the responder's pages without a copy
/// (`MSG_SPLICE_PAGES`); between two QPs of one host the receiving skb then references
/// those pages, and a Read whose sink overlaps its source (in one region, say) places data
/// from a page onto itself. So a `memmove` where the two overlap, and a `memcpy` (the C
/// siw's copy) only where they do not.
///
/// Not a `memmove` always: the kernel's `memmove` takes `rep movsb` on every CPU with ERMS,
/// its `memcpy` only with FSRM (else a 32-byte loop), and the two differ where ERMS comes
/// without FSRM. Under QEMU's TCG, as in the bench, that made placement cost a fifth of
/// siw_rs's bulk and storage throughput (NVMe-oF 128 KiB reads 160 MiB/s with `memcpy`, 132
/// with `memmove`; `__memmove` 3,440 samples per 1,000 messages of `ib_write_bw -s 1M`).
/// When the source was a `&[u8]`, LLVM, taking it to be unaliased, had turned the same
/// `ptr::copy` into `memcpy` on its own. The test needs no more than the addresses: on the
/// 64-bit architectures Rust builds the kernel for there is no highmem, so skb pages and
/// pinned user pages are read and written at their one linear-map address, and overlapping
/// memory is overlapping addresses. (A kernel consumer that registered a vmalloc buffer and
/// Reads it onto itself could meet its pages under two addresses; `memcpy` then still reads
/// only the source and writes only the destination, in an order RFC 5040 leaves open.)
///
/// That is why the received bytes come down to here as an [`IoVec`] and never as a
/// `&[u8]`, which Rust would take to stay unchanged while it lives: here the copy itself
/// changes them. Any other skb page may change meanwhile too (a C siw peer's spliced
/// Writes, a local process splicing its own pages into a loopback TCP socket); the protocol
/// core reads received bytes only through copies and the CRC.
///
/// # Safety
///
/// `addr..addr + n` is mapped memory the caller may write.
unsafe fn copy_piece(src: IoVec<'_>, done: &mut usize, addr: usize, n: usize) -> Result {
    let s = src.skip(*done);
    if s.len() < n {
        return Err(EFAULT);
    }
    let from = s.ptr() as usize;
    let apart = from.checked_add(n).is_some_and(|e| e <= addr)
        || addr.checked_add(n).is_some_and(|e| e <= from);
    if apart {
        // SAFETY: `s` has at least `n` readable bytes (`IoVec`'s invariant); the
        // destination is `n` writable bytes (the caller's guarantee); the two ranges were
        // just seen not to overlap.
        unsafe { core::ptr::copy_nonoverlapping(s.ptr(), addr as *mut u8, n) };
    } else {
        // SAFETY: As above; `copy` allows the two to overlap.
        unsafe { core::ptr::copy(s.ptr(), addr as *mut u8, n) };
    }
    *done = done.saturating_add(n);
    Ok(())
}

/// The memory a region names.
pub(crate) enum MrMem {
    /// Pinned user pages.
    User(UserPages),
    /// Kernel memory by kernel address (a DMA MR).
    Kernel(KernelMem),
    /// A kernel consumer's pages, registered by a `REG_MR` (a fast-registration MR).
    Pages(KernelPages),
}

impl MrMem {
    /// The region's length in bytes (a DMA MR spans all addresses).
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::User(u) => u.len(),
            Self::Kernel(_) => usize::MAX,
            Self::Pages(p) => p.len,
        }
    }

    /// Copies `src` to offset `off` of the region (for a DMA MR, to address `off`).
    pub(crate) fn write(&self, off: usize, src: IoVec<'_>) -> Result {
        match self {
            Self::User(u) => u.write(off, src),
            Self::Kernel(k) => {
                let mut done = 0usize;
                // SAFETY: `pieces` checked that the bytes lie in linear-map pages, which are
                // mapped; the consumer granted writing them (invariant).
                k.pieces(off, src.len(), |addr, n| unsafe {
                    copy_piece(src, &mut done, addr, n)
                })
            }
            Self::Pages(p) => {
                let mut done = 0usize;
                // SAFETY: As for `Kernel`: mapped linear-map pages the consumer registered
                // for writing.
                p.pieces(off, src.len(), |addr, n| unsafe {
                    copy_piece(src, &mut done, addr, n)
                })
            }
        }
    }

    /// The 64-bit word at offset `off` of the region (for a DMA MR, at address `off`), for
    /// an RFC 7306 atomic operation. The word is the CPU's, in its byte order (RFC 7306
    /// section 5.1: "in the endian format of the target memory").
    ///
    /// It must be 8-byte aligned in memory, so it never spans two pages: `EINVAL` otherwise
    /// (a region whose addresses the peer sees shifted from the memory's could make an
    /// aligned tagged offset a misaligned address). `EFAULT` outside the region.
    pub(crate) fn atomic_word(&self, off: usize) -> Result<&AtomicU64> {
        const WORD: usize = core::mem::size_of::<u64>();
        let mut at = None;
        let mut whole = |addr: usize, n: usize| {
            if n == WORD {
                at = Some(addr);
            }
            Ok(())
        };
        match self {
            Self::User(u) => u.pieces(off, WORD, &mut whole)?,
            Self::Kernel(k) => k.pieces(off, WORD, &mut whole)?,
            Self::Pages(p) => p.pieces(off, WORD, &mut whole)?,
        }
        let addr = at.ok_or(EINVAL)?;
        if addr & (WORD - 1) != 0 {
            return Err(EINVAL);
        }
        // Pinned user pages stay pinned and mapped while `self` lives. A kernel consumer's
        // memory (a DMA MR, a registered fast-registration MR) stays its own while
        // registered, as for any remote access it grants (Write placement relies on the
        // same); the caller checks the registration is valid first. The owner's plain
        // accesses may race with the peer's atomic as with its Writes: the value may surprise
        // the owner, but this access cannot fault or reach other memory.
        // SAFETY: `pieces` found the 8 bytes at `addr`, 8-byte aligned (checked), inside one
        // mapped page of the region, which stays mapped for the borrow of `self` (above).
        Ok(unsafe { AtomicU64::from_ptr(addr as *mut u64) })
    }

    /// The pieces of `len` bytes at `off`, to send. With `splice`, TCP may reference pinned
    /// user pages instead of copying them (kernel memory is always copied: it may be slab).
    pub(crate) fn iovecs<'a>(
        &'a self,
        off: usize,
        len: usize,
        splice: bool,
        mut f: impl FnMut(IoVec<'a>) -> Result,
    ) -> Result {
        match self {
            Self::User(u) => u.iovecs(off, len, splice, f),
            Self::Kernel(k) => k.pieces(off, len, |addr, n| {
                // SAFETY: `pieces` checked that the bytes lie in mapped linear-map pages,
                // which stay mapped; the consumer keeps the buffer while its work request
                // is outstanding (the verbs contract), and granted reading it (invariant).
                f(unsafe { IoVec::from_raw(addr as *const u8, n) })
            }),
            Self::Pages(p) => p.pieces(off, len, |addr, n| {
                // SAFETY: As for `Kernel`: mapped linear-map pages the consumer registered
                // and keeps while its work is outstanding.
                f(unsafe { IoVec::from_raw(addr as *const u8, n) })
            }),
        }
    }
}
