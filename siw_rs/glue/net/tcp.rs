// SPDX-License-Identifier: GPL-2.0

//! Kernel TCP sockets for iWARP connections, and the takeover of their callbacks.
//!
//! C headers: [`include/linux/net.h`](srctree/include/linux/net.h),
//! [`include/net/sock.h`](srctree/include/net/sock.h). The socket calls themselves are in
//! `siw_rs/helpers.c` (socket creation, bind, listen, connect, `tcp_read_sock`).
//!
//! A socket's `sk_data_ready`, `sk_write_space` and `sk_state_change` callbacks are
//! replaced by ones that call [`SockEvents::sock_event`] on the owner, then the original
//! callback. The owner stays alive while its callbacks are installed: [`Socket::attach`]
//! keeps one reference, [`Socket::detach`] gives it back.

use crate::glue::bindings;
use crate::glue::iov::IoVec;
use core::{
    ffi::c_void,
    ptr::NonNull,
    sync::atomic::{
        AtomicBool,
        Ordering, //
    },
};
use kernel::{
    error::to_result,
    prelude::*,
    sync::{
        Arc,
        ArcBorrow, //
    },
    types::{
        ForeignOwnable,
        Opaque, //
    },
};

/// An owned kernel socket (`struct socket`), released on drop.
///
/// # Invariants
///
/// A live socket this value owns.
pub(crate) struct Socket(NonNull<bindings::socket>);

// SAFETY: Socket calls take the socket's own locks; the value may move between threads.
unsafe impl Send for Socket {}
// SAFETY: Every method is safe to call concurrently (the socket layer locks).
unsafe impl Sync for Socket {}

/// Most pieces one `send` call hands to TCP.
pub(crate) const MAX_IOV: usize = 16;

impl Socket {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is a live socket nothing else releases.
    pub(super) unsafe fn from_raw(raw: *mut bindings::socket) -> Result<Self> {
        // INVARIANT: By the caller's guarantee.
        NonNull::new(raw).map(Self).ok_or(EINVAL)
    }

    pub(in crate::glue) fn as_ptr(&self) -> *mut bindings::socket {
        self.0.as_ptr()
    }

    /// Accepts a pending connection without blocking (`EAGAIN` when there is none).
    pub(crate) fn accept(&self) -> Result<Socket> {
        let mut s = core::ptr::null_mut();
        // SAFETY: A live listening socket; `s` is a valid out pointer.
        to_result(unsafe { bindings::siw_rs_sock_accept(self.as_ptr(), &mut s) })?;
        // SAFETY: `kernel_accept` succeeded: `s` is a new socket we own.
        unsafe { Self::from_raw(s) }
    }

    /// Sends `iov` minus its first `skip` bytes; returns how many bytes TCP took. Without
    /// `block`, a full send buffer gives `EAGAIN` (or a short count); `more` says more data
    /// follows at once (`MSG_MORE`). Pieces made with [`IoVec::from_page`] are spliced:
    /// TCP keeps references to their pages, and may send the pages' contents as they are
    /// when it (re)transmits.
    pub(crate) fn send(
        &self,
        iov: &[IoVec<'_>],
        skip: usize,
        block: bool,
        more: bool,
    ) -> Result<usize> {
        let mut pc: [bindings::siw_rs_piece; MAX_IOV] = pin_init::zeroed();
        let mut n = 0usize;
        let mut total = 0usize;
        let mut skip = skip;
        for v in iov {
            if skip >= v.len() {
                skip -= v.len();
                continue;
            }
            let slot = pc.get_mut(n).ok_or(EINVAL)?;
            // `skip < v.len()`, so the pointer stays inside the piece (and its page).
            slot.base = v.ptr().wrapping_add(skip).cast();
            slot.page = v.page();
            slot.len = v.len() - skip;
            total = total.checked_add(slot.len).ok_or(EINVAL)?;
            skip = 0;
            n += 1;
        }
        if total == 0 {
            return Ok(0);
        }
        // SAFETY: A live socket; the first `n` pieces name readable memory, and their pages
        // are fit for splicing (`IoVec`'s invariant); TCP only reads them, and takes its
        // own references to the pages it keeps.
        let r = unsafe { bindings::siw_rs_sock_send(self.as_ptr(), pc.as_ptr(), n, block, more) };
        to_result(r)?;
        usize::try_from(r).map_err(|_| EINVAL)
    }

    /// Reads what the socket holds, passing each piece to `f`, which returns how much of it
    /// it consumed; consuming less stops the read (the rest stays queued). Returns the bytes
    /// consumed.
    ///
    /// `f` runs in atomic context (`skb_seq_read()` maps paged data with `kmap_atomic()`):
    /// it may take spinlocks, never a mutex, and must not sleep.
    pub(crate) fn read(&self, f: &mut dyn FnMut(&[u8]) -> usize) -> Result<usize> {
        /// # Safety
        ///
        /// `ctx` is the pointer to `f` passed below; `p` points to `len` readable bytes.
        unsafe extern "C" fn feed(ctx: *mut c_void, p: *const u8, len: usize) -> usize {
            // SAFETY: `ctx` is the `&mut &mut dyn FnMut` below, live for the whole read.
            let f = unsafe { &mut *ctx.cast::<&mut dyn FnMut(&[u8]) -> usize>() };
            // SAFETY: `tcp_read_sock`'s actor hands us `len` readable bytes of an skb, which
            // stays queued and unchanged while we look at it.
            let s = unsafe { core::slice::from_raw_parts(p, len) };
            f(s).min(len)
        }
        let mut f = f;
        // SAFETY: A live socket; `feed` gets back the pointer to `f`, which outlives the call.
        let r =
            unsafe { bindings::siw_rs_sock_read(self.as_ptr(), (&raw mut f).cast(), Some(feed)) };
        let r = i32::try_from(r).map_err(|_| EINVAL)?;
        to_result(r)?;
        usize::try_from(r).map_err(|_| EINVAL)
    }

    /// `Ok(true)` when established, `Ok(false)` while connecting or listening, an error once
    /// the connection is gone (the socket error, or `ECONNRESET` after a close).
    pub(crate) fn alive(&self) -> Result<bool> {
        // SAFETY: A live socket.
        let r = unsafe { bindings::siw_rs_sock_alive(self.as_ptr()) };
        to_result(r)?;
        Ok(r == 1)
    }

    /// The current MSS.
    pub(crate) fn mss(&self) -> u32 {
        // SAFETY: A live TCP socket.
        unsafe { bindings::siw_rs_sock_mss(self.as_ptr()) }
    }

    /// Shuts both directions down (the peer sees FIN).
    pub(crate) fn shutdown(&self) {
        // SAFETY: A live socket.
        unsafe { bindings::siw_rs_sock_shutdown(self.as_ptr()) };
    }

    /// Installs `owner`'s callbacks, keeping a reference to it until [`Socket::detach`].
    pub(crate) fn attach<E: SockEvents>(&self, owner: Arc<E>) {
        let ctx = owner.sk_ctx();
        if ctx.attached.swap(true, Ordering::AcqRel) {
            return;
        }
        let c = ctx.raw.get();
        let data = owner.into_foreign();
        // SAFETY: `c` lives inside the owner, which the reference `into_foreign` keeps alive
        // until `detach` restores the callbacks and gives it back.
        unsafe {
            (*c).event = Some(event::<E>);
            (*c).data = data;
            bindings::siw_rs_sock_attach(self.as_ptr(), c);
        }
    }

    /// Restores the original callbacks and drops the reference [`Socket::attach`] took.
    /// When this returns, no callback of ours runs on this socket any more.
    pub(crate) fn detach<E: SockEvents>(&self, owner: &E) {
        let ctx = owner.sk_ctx();
        if !ctx.attached.swap(false, Ordering::AcqRel) {
            return;
        }
        let c = ctx.raw.get();
        // SAFETY: A live socket; the C side takes `sk_callback_lock` for writing, so
        // callbacks in flight finish first.
        unsafe { bindings::siw_rs_sock_detach(self.as_ptr()) };
        // SAFETY: `attach` stored the `into_foreign` of an `Arc<E>` there; no callback uses
        // it any more, so it is ours again.
        drop(unsafe { Arc::<E>::from_foreign((*c).data) });
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the socket.
        unsafe { bindings::siw_rs_sock_release(self.as_ptr()) };
    }
}

/// The place in the owner that the socket's callbacks find it through.
pub(crate) struct SkCtx {
    raw: Opaque<bindings::siw_rs_sk_ctx>,
    attached: AtomicBool,
}

// SAFETY: The C part is only written under `sk_callback_lock` or before attaching.
unsafe impl Send for SkCtx {}
// SAFETY: As above.
unsafe impl Sync for SkCtx {}

impl SkCtx {
    /// An unattached context.
    pub(crate) fn new() -> Self {
        Self {
            raw: Opaque::new(pin_init::zeroed()),
            attached: AtomicBool::new(false),
        }
    }
}

/// An owner of socket callbacks.
pub(crate) trait SockEvents: Send + Sync + Sized + 'static {
    /// The context inside `self` the callbacks use.
    fn sk_ctx(&self) -> &SkCtx;
    /// A callback fired (data, write space or state change). Runs in softirq or process context, under
    /// `sk_callback_lock`: it must not sleep or call into the socket.
    fn sock_event(this: ArcBorrow<'_, Self>, what: u32);
}

/// A socket callback's call into the owner.
///
/// # Safety
///
/// `data` is the pointer [`Socket::attach`] stored, while the callbacks are installed.
unsafe extern "C" fn event<E: SockEvents>(data: *mut c_void, what: i32) {
    // SAFETY: `data` is the `into_foreign` pointer `attach` stored; that reference lives
    // until `detach`, which waits for this callback to return.
    let owner: ArcBorrow<'_, E> = unsafe { Arc::<E>::borrow(data) };
    E::sock_event(owner, u32::try_from(what).unwrap_or(0));
}

/// Opens a socket listening on the address of `id`; `None` when the address is a wildcard
/// and the device's netdev is in another network namespace (nothing to listen on).
pub(crate) fn listen(id: &crate::glue::rdma::cm::CmId, backlog: i32) -> Result<Option<Socket>> {
    let mut s = core::ptr::null_mut();
    // SAFETY: `id` is a live cm_id; `s` is a valid out pointer.
    let r = unsafe { bindings::siw_rs_sock_listen(id.as_ptr(), backlog, &mut s) };
    to_result(r)?;
    if r == 1 {
        return Ok(None);
    }
    // SAFETY: Success: `s` is a new socket we own.
    unsafe { Socket::from_raw(s) }.map(Some)
}

/// Connects (blocking) from `id`'s local to its remote address.
pub(crate) fn connect(id: &crate::glue::rdma::cm::CmId) -> Result<Socket> {
    let mut s = core::ptr::null_mut();
    // SAFETY: `id` is a live cm_id; `s` is a valid out pointer.
    to_result(unsafe { bindings::siw_rs_sock_connect(id.as_ptr(), &mut s) })?;
    // SAFETY: Success: `s` is a new socket we own.
    unsafe { Socket::from_raw(s) }
}
