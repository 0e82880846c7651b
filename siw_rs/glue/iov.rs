// SPDX-License-Identifier: GPL-2.0

//! Pieces of kernel-mapped memory ([`IoVec`]) as the socket layer sends them, the receive
//! path reads them out of an skb, and the kernel's CRC32C computes over them.
//!
//! C headers: [`include/linux/crc32c.h`](srctree/include/linux/crc32c.h).

use super::bindings;
use crate::proto::{
    crc::{Crc32c, CrcOf},
    rx::Input,
};
use core::{marker::PhantomData, mem::MaybeUninit};

/// A piece of memory to send, or received.
///
/// Its bytes may change while it is held: a user's page, or a page an skb references that
/// someone else can write (a page spliced into a socket on this host). So nothing makes a
/// `&[u8]` of it, which Rust would take to stay unchanged; it is read by copying it out
/// ([`Self::copy_to`]), by the CRC ([`Self::crc32c`]) or by copying it to where it goes.
///
/// # Invariants
///
/// `ptr..ptr + len` is readable for `'a`. A non-null `page` is a page that holds the whole
/// piece at `ptr` (its kernel address), fit for `MSG_SPLICE_PAGES` (not slab memory, and
/// referenced for `'a`).
#[derive(Clone, Copy)]
pub(crate) struct IoVec<'a> {
    ptr: *const u8,
    len: usize,
    page: *mut bindings::page,
    _p: PhantomData<&'a [u8]>,
}

impl<'a> IoVec<'a> {
    /// The bytes of `s`.
    pub(crate) fn new(s: &'a [u8]) -> Self {
        // INVARIANT: A slice is readable for its lifetime; no page.
        Self {
            ptr: s.as_ptr(),
            len: s.len(),
            page: core::ptr::null_mut(),
            _p: PhantomData,
        }
    }

    /// `len` bytes at `ptr`.
    ///
    /// # Safety
    ///
    /// The bytes stay mapped and readable for `'a` (they may change: user memory).
    pub(in crate::glue) unsafe fn from_raw(ptr: *const u8, len: usize) -> Self {
        // INVARIANT: By the caller's guarantee; no page.
        Self {
            ptr,
            len,
            page: core::ptr::null_mut(),
            _p: PhantomData,
        }
    }

    /// `len` bytes at `ptr` in `page`, which TCP may reference instead of copying them.
    ///
    /// # Safety
    ///
    /// The bytes stay mapped and readable for `'a`; `page` holds all of them at `ptr`, is
    /// not slab memory, and stays referenced for `'a` (TCP takes its own references).
    pub(in crate::glue) unsafe fn from_page(
        ptr: *const u8,
        len: usize,
        page: *mut bindings::page,
    ) -> Self {
        // INVARIANT: By the caller's guarantee.
        Self {
            ptr,
            len,
            page,
            _p: PhantomData,
        }
    }

    /// The length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no bytes.
    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The piece without its first `n` bytes (all of them if `n` is larger).
    pub(crate) fn skip(&self, n: usize) -> Self {
        let n = n.min(self.len);
        // INVARIANT: A suffix of a readable range is readable; it stays in the same page.
        Self {
            ptr: self.ptr.wrapping_add(n),
            len: self.len - n,
            page: self.page,
            _p: PhantomData,
        }
    }

    /// The first `n` bytes and the rest (all and none if `n` is larger).
    pub(crate) fn split_at(self, n: usize) -> (Self, Self) {
        let n = n.min(self.len);
        // INVARIANT: A prefix of a readable range is readable; it stays in the same page.
        (Self { len: n, ..self }, self.skip(n))
    }

    /// The first byte.
    pub(in crate::glue) fn ptr(&self) -> *const u8 {
        self.ptr
    }

    /// The page holding the piece, for splicing; NULL when it must be copied.
    pub(in crate::glue) fn page(&self) -> *mut bindings::page {
        self.page
    }

    /// Copies the bytes to the start of `dst`, as many as fit; returns how many.
    pub(crate) fn copy_to(&self, dst: &mut [u8]) -> usize {
        let n = self.len.min(dst.len());
        // User memory may change meanwhile (as `Page::read_raw` allows): the copy then
        // holds old and new bytes, as a DMA engine would have read them.
        // SAFETY: By the constructors `ptr..ptr + len` is readable for `'a`; `dst` is
        // writable for `n` bytes, and a `&mut` slice overlaps no memory of the piece.
        unsafe { core::ptr::copy_nonoverlapping(self.ptr, dst.as_mut_ptr(), n) };
        n
    }

    /// The CRC32C state `crc` updated with these bytes (the kernel's `crc32c()`).
    pub(crate) fn crc32c(&self, crc: u32) -> u32 {
        // SAFETY: By the constructors the range is readable for `'a`.
        unsafe { bindings::crc32c(crc, self.ptr.cast(), self.len) }
    }
}

/// Most pieces one call of the socket layer hands to the kernel, and one [`IoVecs`] holds.
pub(crate) const MAX_IOV: usize = 16;

/// Up to [`MAX_IOV`] pieces to send, gathered without initialising the slots left unused.
///
/// # Invariants
///
/// The first `n` entries of `v` are initialised; `n <= MAX_IOV`.
pub(crate) struct IoVecs<'a> {
    v: [MaybeUninit<IoVec<'a>>; MAX_IOV],
    n: usize,
}

/// [`IoVecs::push`] found no free slot.
#[derive(Debug)]
pub(crate) struct IoVecsFull;

impl<'a> IoVecs<'a> {
    /// No pieces.
    pub(crate) const fn new() -> Self {
        // INVARIANT: No entry is claimed to be initialised.
        Self {
            v: [const { MaybeUninit::uninit() }; MAX_IOV],
            n: 0,
        }
    }

    /// Appends `piece`; an empty one is left out.
    pub(crate) fn push(&mut self, piece: IoVec<'a>) -> Result<(), IoVecsFull> {
        if piece.is_empty() {
            return Ok(());
        }
        let slot = self.v.get_mut(self.n).ok_or(IoVecsFull)?;
        slot.write(piece);
        // INVARIANT: Entry `n` was just written, and `n < MAX_IOV` (`get_mut` found it).
        self.n += 1;
        Ok(())
    }

    /// The pieces, in order.
    pub(crate) fn as_slice(&self) -> &[IoVec<'a>] {
        // SAFETY: By the type invariant the first `n` entries are initialised;
        // `MaybeUninit<T>` has `T`'s layout.
        unsafe { core::slice::from_raw_parts(self.v.as_ptr().cast(), self.n) }
    }
}

/// The kernel's CRC32C (`crc32c()`), for the protocol core's [`crate::proto::crc::Crc32c`].
#[derive(Clone, Copy)]
pub(crate) struct KernelCrc(u32);

impl KernelCrc {
    /// A fresh computation.
    pub(crate) const fn new() -> Self {
        Self(!0)
    }

    /// The running state (not the final value).
    pub(crate) const fn state(&self) -> u32 {
        self.0
    }

    /// A computation continued from `state`.
    pub(crate) const fn from_state(state: u32) -> Self {
        Self(state)
    }
}

impl KernelCrc {
    /// Starts over.
    pub(crate) fn reset(&mut self) {
        self.0 = !0;
    }

    /// Adds `data`.
    pub(crate) fn update(&mut self, data: &[u8]) {
        self.0 = IoVec::new(data).crc32c(self.0);
    }

    /// The CRC of everything added since the start.
    pub(crate) fn value(&self) -> u32 {
        !self.0
    }
}

/// The protocol core's CRC32C, computed by the kernel's `crc32c()`.
impl Crc32c for KernelCrc {
    fn reset(&mut self) {
        KernelCrc::reset(self)
    }
    fn update(&mut self, data: &[u8]) {
        KernelCrc::update(self, data)
    }
    fn value(&self) -> u32 {
        KernelCrc::value(self)
    }
}

/// Over received bytes where they lie in the skb.
impl<'a> CrcOf<IoVec<'a>> for KernelCrc {
    fn update_from(&mut self, data: IoVec<'a>) {
        self.0 = data.crc32c(self.0);
    }
}

/// Received bytes as the protocol core's receiver reads them.
impl Input for IoVec<'_> {
    fn len(&self) -> usize {
        self.len
    }
    fn split_at(self, n: usize) -> (Self, Self) {
        IoVec::split_at(self, n)
    }
    fn copy_to(&self, dst: &mut [u8]) -> usize {
        IoVec::copy_to(self, dst)
    }
    fn head<const N: usize>(&self) -> Option<[u8; N]> {
        if self.len < N {
            return None;
        }
        // As in `copy_to`, the bytes may change meanwhile; this reads each once.
        // SAFETY: `ptr..ptr + len` is readable (invariant) and holds at least `N` bytes;
        // `[u8; N]` has no alignment or validity to keep.
        Some(unsafe { core::ptr::read_unaligned(self.ptr.cast::<[u8; N]>()) })
    }
}
