// SPDX-License-Identifier: GPL-2.0

//! Bounds-checked big-endian readers and writers over byte slices.
//!
//! Every access is checked and reports failure as `None`; nothing here can panic.

/// A cursor that reads big-endian fields from the front of a slice.
pub(super) struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    pub(super) const fn new(buf: &'a [u8]) -> Self {
        Self { buf }
    }

    /// Takes the next `N` bytes.
    pub(super) fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, tail) = self.buf.split_first_chunk::<N>()?;
        self.buf = tail;
        Some(*head)
    }

    /// Takes a big-endian `u16`.
    pub(super) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_be_bytes)
    }

    /// Takes a big-endian `u32`.
    pub(super) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_be_bytes)
    }

    /// Takes a big-endian `u64`.
    pub(super) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_be_bytes)
    }

    /// Takes the next `len` bytes as a slice.
    pub(super) fn bytes(&mut self, len: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.buf.split_at_checked(len)?;
        self.buf = tail;
        Some(head)
    }

    /// Returns what has not been read yet.
    pub(super) const fn rest(&self) -> &'a [u8] {
        self.buf
    }
}

/// A cursor that writes big-endian fields into a slice.
pub(super) struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> Writer<'a> {
    /// Starts writing at the beginning of `buf`.
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Appends `data`.
    pub(super) fn put(&mut self, data: &[u8]) -> Option<()> {
        let (head, tail) = core::mem::take(&mut self.buf).split_at_mut_checked(data.len())?;
        head.copy_from_slice(data);
        self.buf = tail;
        self.len = self.len.checked_add(data.len())?;
        Some(())
    }

    /// Appends a fixed-size field with an array store: `put`'s `copy_from_slice` is, in
    /// the kernel, a call into `core` and on to `memcpy`, even for two octets (per field of
    /// every header sent).
    fn array<const N: usize>(&mut self, v: [u8; N]) -> Option<()> {
        let (head, tail) = core::mem::take(&mut self.buf).split_first_chunk_mut::<N>()?;
        *head = v;
        self.buf = tail;
        self.len = self.len.checked_add(N)?;
        Some(())
    }

    /// Appends a big-endian `u16`.
    pub(super) fn u16(&mut self, v: u16) -> Option<()> {
        self.array(v.to_be_bytes())
    }

    /// Appends a big-endian `u32`.
    pub(super) fn u32(&mut self, v: u32) -> Option<()> {
        self.array(v.to_be_bytes())
    }

    /// Appends a big-endian `u64`.
    pub(super) fn u64(&mut self, v: u64) -> Option<()> {
        self.array(v.to_be_bytes())
    }

    /// Returns the number of bytes written so far.
    pub(super) const fn len(&self) -> usize {
        self.len
    }
}
