// SPDX-License-Identifier: GPL-2.0

//! Kernel TCP sockets (and SCTP ones, [`super::sctp`]), and the takeover of their
//! callbacks by a Rust owner.
//!
//! C headers: [`include/linux/net.h`](srctree/include/linux/net.h),
//! [`include/net/sock.h`](srctree/include/net/sock.h),
//! [`include/net/tcp.h`](srctree/include/net/tcp.h).
//!
//! A socket's `sk_data_ready`, `sk_write_space` and `sk_state_change` callbacks are
//! replaced by ones that call the original callback, then [`SockEvents::sock_event`] on the
//! owner. SCTP never calls `sk_write_space` (its sockets keep `SOCK_USE_WRITE_QUEUE`): it
//! wakes the socket's wait queue when send space frees up, so an SCTP socket's owner also
//! waits there, with a wake function of ours ([`SockEvent::WriteSpace`]). The owner stays alive while its callbacks are installed: [`Socket::attach`] keeps
//! one reference, [`Socket::detach`] gives it back.

use super::netdev::NetDev;
use crate::glue::{
    bindings,
    iov::{IoVec, MAX_IOV},
};
use core::{
    ffi::c_void,
    mem::{size_of, MaybeUninit},
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

/// An address family of TCP.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Family {
    /// IPv4 (`AF_INET`).
    Inet,
    /// IPv6 (`AF_INET6`).
    Inet6,
}

impl Family {
    fn raw(self) -> u32 {
        match self {
            Self::Inet => bindings::AF_INET,
            Self::Inet6 => bindings::AF_INET6,
        }
    }
}

/// An IPv4 or IPv6 socket address (a `struct sockaddr_storage` holding a `sockaddr_in` or
/// `sockaddr_in6`), or an empty one (family 0).
#[derive(Clone, Copy)]
pub(crate) struct SockAddr(bindings::__kernel_sockaddr_storage);

// SAFETY: Plain bytes: the union's pointer member only gives the storage its alignment and is
// never read as a pointer.
unsafe impl Send for SockAddr {}
// SAFETY: As above; `&SockAddr` only reads the bytes.
unsafe impl Sync for SockAddr {}

impl SockAddr {
    /// The address in `raw`.
    pub(in crate::glue) fn from_raw(raw: bindings::__kernel_sockaddr_storage) -> Self {
        Self(raw)
    }

    /// The C value.
    pub(in crate::glue) fn raw(&self) -> bindings::__kernel_sockaddr_storage {
        self.0
    }

    /// No address (family 0).
    pub(crate) fn none() -> Self {
        Self(pin_init::zeroed())
    }

    /// The address family, if IPv4 or IPv6.
    pub(crate) fn family(&self) -> Option<Family> {
        // SAFETY: Every variant of the union starts with the family; any bits are a `u16`.
        let f = u32::from(unsafe { self.0.__bindgen_anon_1.__bindgen_anon_1.ss_family });
        match f {
            bindings::AF_INET => Some(Family::Inet),
            bindings::AF_INET6 => Some(Family::Inet6),
            _ => None,
        }
    }

    /// Whether the address is a wildcard: `0.0.0.0/8` (`ipv4_is_zeronet`) or `::`
    /// (`ipv6_addr_any`).
    pub(crate) fn is_any(&self) -> bool {
        let p = core::ptr::from_ref(&self.0);
        match self.family() {
            Some(Family::Inet) => {
                // SAFETY: A `sockaddr_storage` is large and aligned enough for a
                // `sockaddr_in`, and any bits are valid for it.
                let a = unsafe { &*p.cast::<bindings::sockaddr_in>() };
                a.sin_addr.s_addr.to_ne_bytes()[0] == 0
            }
            Some(Family::Inet6) => {
                // SAFETY: As above, for a `sockaddr_in6`; any bits are valid `u8`s.
                let a = unsafe { &*p.cast::<bindings::sockaddr_in6>() };
                // SAFETY: The union's byte view covers the whole address.
                unsafe { a.sin6_addr.in6_u.u6_addr8 }
                    .iter()
                    .all(|b| *b == 0)
            }
            None => false,
        }
    }

    /// An IPv4 address and port.
    pub(crate) fn inet(addr: [u8; 4], port: u16) -> Self {
        let mut ss = Self::none();
        let p = core::ptr::from_mut(&mut ss.0).cast::<bindings::sockaddr_in>();
        let mut sin: bindings::sockaddr_in = pin_init::zeroed();
        sin.sin_family = bindings::AF_INET as bindings::__kernel_sa_family_t;
        sin.sin_port = port.to_be();
        sin.sin_addr.s_addr = u32::from_ne_bytes(addr);
        // SAFETY: A `sockaddr_storage` is large and aligned enough for a `sockaddr_in`.
        unsafe { p.write(sin) };
        ss
    }

    /// An IPv6 address, port and scope (the interface index of a link-local address, else 0).
    pub(crate) fn inet6(addr: [u8; 16], port: u16, scope_id: u32) -> Self {
        let mut ss = Self::none();
        let p = core::ptr::from_mut(&mut ss.0).cast::<bindings::sockaddr_in6>();
        let mut sin6: bindings::sockaddr_in6 = pin_init::zeroed();
        sin6.sin6_family = bindings::AF_INET6 as bindings::__kernel_sa_family_t;
        sin6.sin6_port = port.to_be();
        sin6.sin6_addr.in6_u.u6_addr8 = addr;
        sin6.sin6_scope_id = scope_id;
        // SAFETY: A `sockaddr_storage` is large and aligned enough for a `sockaddr_in6`.
        unsafe { p.write(sin6) };
        ss
    }

    /// The IP address as 16 octets, an IPv4 one mapped into IPv6 (`::ffff:a.b.c.d`); `None`
    /// for an address of another family.
    pub(crate) fn ip16(&self) -> Option<[u8; 16]> {
        let p = core::ptr::from_ref(&self.0);
        match self.family()? {
            Family::Inet => {
                // SAFETY: As in `is_any`.
                let a = unsafe { &*p.cast::<bindings::sockaddr_in>() };
                let [a0, a1, a2, a3] = a.sin_addr.s_addr.to_ne_bytes();
                Some([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a0, a1, a2, a3])
            }
            Family::Inet6 => {
                // SAFETY: As in `is_any`.
                let a = unsafe { &*p.cast::<bindings::sockaddr_in6>() };
                // SAFETY: The union's byte view covers the whole address.
                Some(unsafe { a.sin6_addr.in6_u.u6_addr8 })
            }
        }
    }

    /// The port (0 for an address of another family).
    pub(crate) fn port(&self) -> u16 {
        let p = core::ptr::from_ref(&self.0);
        let be = match self.family() {
            Some(Family::Inet) => {
                // SAFETY: As in `is_any`.
                let a = unsafe { &*p.cast::<bindings::sockaddr_in>() };
                a.sin_port
            }
            Some(Family::Inet6) => {
                // SAFETY: As in `is_any`.
                let a = unsafe { &*p.cast::<bindings::sockaddr_in6>() };
                a.sin6_port
            }
            None => 0,
        };
        u16::from_be(be)
    }

    /// The length of the address proper, for `bind` and `connect`.
    fn len(&self) -> c_int {
        let n = match self.family() {
            Some(Family::Inet6) => size_of::<bindings::sockaddr_in6>(),
            _ => size_of::<bindings::sockaddr_in>(),
        };
        c_int::try_from(n).unwrap_or(c_int::MAX)
    }

    fn as_ptr(&self) -> *mut bindings::sockaddr_unsized {
        core::ptr::from_ref(&self.0).cast_mut().cast()
    }
}

/// The transport protocol of a stream socket.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Transport {
    /// TCP (`IPPROTO_TCP`): MPA framing.
    Tcp,
    /// SCTP (`IPPROTO_SCTP`), one-to-one style: one association per socket (RFC 5043).
    Sctp,
}

impl Transport {
    fn raw(self) -> c_int {
        match self {
            Self::Tcp => bindings::IPPROTO_TCP as c_int,
            Self::Sctp => bindings::IPPROTO_SCTP as c_int,
        }
    }
}

/// An owned kernel socket (`struct socket`), released on drop.
///
/// # Invariants
///
/// A live socket this value owns, with its `struct sock` (`sk`), of transport `transport`.
pub(crate) struct Socket {
    raw: NonNull<bindings::socket>,
    transport: Transport,
    /// SCTP: the association was seen established (a closed socket is then a lost one,
    /// not one still connecting).
    up: AtomicBool,
}

// SAFETY: Socket calls take the socket's own locks; the value may move between threads.
unsafe impl Send for Socket {}
// SAFETY: Every method is safe to call concurrently (the socket layer locks).
unsafe impl Sync for Socket {}

/// What a socket callback reports.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum SockEvent {
    /// Data arrived (`sk_data_ready`).
    Data,
    /// Send buffer space became free (`sk_write_space`).
    WriteSpace,
    /// The connection state changed (`sk_state_change`).
    StateChange,
}

impl Socket {
    /// Takes ownership of `raw`.
    ///
    /// # Safety
    ///
    /// `raw` is a live socket nothing else releases.
    unsafe fn from_raw(raw: *mut bindings::socket) -> Result<Self> {
        // SAFETY: By the caller's guarantee.
        unsafe { Self::from_raw_of(raw, Transport::Tcp) }
    }

    /// Takes ownership of `raw`, a socket of `transport`.
    ///
    /// # Safety
    ///
    /// `raw` is a live socket of `transport` nothing else releases.
    pub(in crate::glue::net) unsafe fn from_raw_of(
        raw: *mut bindings::socket,
        transport: Transport,
    ) -> Result<Self> {
        // INVARIANT: By the caller's guarantee.
        NonNull::new(raw)
            .map(|raw| Self {
                raw,
                transport,
                up: AtomicBool::new(false),
            })
            .ok_or(EINVAL)
    }

    pub(in crate::glue) fn as_ptr(&self) -> *mut bindings::socket {
        self.raw.as_ptr()
    }

    /// Its transport protocol.
    pub(crate) fn transport(&self) -> Transport {
        self.transport
    }

    pub(in crate::glue::net) fn sk(&self) -> *mut bindings::sock {
        // SAFETY: A live socket has its `sk` for its whole life (invariant).
        unsafe { (*self.as_ptr()).sk }
    }

    /// A new socket of transport `t` and `family` in the caller's network namespace, with
    /// `SO_REUSEADDR`; for IPv6 with `v6only`, it does not take IPv4 connections.
    pub(crate) fn new_stream(t: Transport, family: Family, v6only: bool) -> Result<Self> {
        // SAFETY: The calling task's namespace, which it holds while it runs.
        let net = unsafe { bindings::current_net() };
        // SAFETY: As above, for the call.
        unsafe { Self::create(net, t, family, v6only) }
    }

    /// A new socket in the network namespace of `netdev`, whatever the caller's: the one a
    /// connection over `netdev` must be made in. A connect may come from a kernel
    /// consumer's worker, which runs in the initial namespace (xprtrdma connects so), while
    /// the device's netdev, and the source address, live in another.
    pub(crate) fn new_stream_in(
        t: Transport,
        netdev: &NetDev,
        family: Family,
        v6only: bool,
    ) -> Result<Self> {
        // SAFETY: The live netdev's namespace, whose memory stays while the netdev is in it
        // (for the call: the socket then holds the namespace, or is not made).
        unsafe { Self::create(bindings::dev_net(netdev.as_ptr()), t, family, v6only) }
    }

    /// A new socket of `other`'s transport in `other`'s network namespace (for a connection
    /// that tries again from where the last try was made).
    pub(crate) fn new_stream_beside(other: &Socket, family: Family, v6only: bool) -> Result<Self> {
        // SAFETY: `other` is live and holds a reference on its namespace for the call.
        unsafe {
            Self::create(
                bindings::sock_net(other.sk()),
                other.transport,
                family,
                v6only,
            )
        }
    }

    /// Makes a socket in `net` as every siw_rs connection and listener socket is: as
    /// `sock_create` makes one (the LSM and cgroup hooks see it made, it holds a reference
    /// on its namespace), with the socket layer's own lock classes. Classes of this
    /// module's would pin it under lock debugging as long as any socket lives, so that
    /// `rmmod` would be refused while a kernel consumer's connection is up. The namespace
    /// may be going away already: then none is made (`ENETDOWN`).
    ///
    /// # Safety
    ///
    /// `net` stays valid for the call.
    unsafe fn create(
        net: *mut bindings::net,
        t: Transport,
        family: Family,
        v6only: bool,
    ) -> Result<Self> {
        // SAFETY: `net` is valid (the caller's guarantee). The reference keeps it for the
        // creation, which takes one of its own (`kern` = 0).
        if !unsafe { bindings::maybe_get_net(net) } {
            return Err(ENETDOWN);
        }
        let mut raw = core::ptr::null_mut();
        // SAFETY: `raw` is a valid out pointer; `net` is held.
        let r = to_result(unsafe {
            bindings::__sock_create(
                net,
                family.raw() as c_int,
                bindings::sock_type_SOCK_STREAM as c_int,
                t.raw(),
                &mut raw,
                0,
            )
        });
        // SAFETY: The reference taken above.
        unsafe { bindings::put_net(net) };
        r?;
        // SAFETY: Just created, ours, of `t`; dropping `s` releases it on the error paths.
        let s = unsafe { Self::from_raw_of(raw, t) }?;
        // SAFETY: A new socket, not yet bound or in use by anyone else.
        unsafe { bindings::sock_set_reuseaddr(s.sk()) };
        if family == Family::Inet6 && v6only {
            // SAFETY: A new IPv6 socket.
            to_result(unsafe { bindings::ip6_sock_set_v6only(s.sk()) })?;
        }
        if t == Transport::Sctp {
            s.sctp_set_up()?;
        }
        Ok(s)
    }

    /// A new TCP socket of the kernel's own in the network namespace of `netdev`: unlike
    /// [`Socket::new_stream_in`] it holds no reference on the namespace, so whoever makes one
    /// must release it before the namespace goes (at the latest when `netdev` is unregistered
    /// from it, which comes first).
    pub(crate) fn new_kernel_tcp_in(netdev: &NetDev, family: Family) -> Result<Self> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: `raw` is a valid out pointer; the namespace is the live netdev's (`kern` = 1:
        // no reference is taken, see above).
        to_result(unsafe {
            bindings::__sock_create(
                bindings::dev_net(netdev.as_ptr()),
                family.raw() as c_int,
                bindings::sock_type_SOCK_STREAM as c_int,
                bindings::IPPROTO_TCP as c_int,
                &mut raw,
                1,
            )
        })?;
        // SAFETY: Just created, ours.
        let s = unsafe { Self::from_raw(raw) }?;
        // SAFETY: A new socket, not yet bound or in use by anyone else.
        unsafe { bindings::sock_set_reuseaddr(s.sk()) };
        if family == Family::Inet6 {
            // SAFETY: A new IPv6 socket.
            to_result(unsafe { bindings::ip6_sock_set_v6only(s.sk()) })?;
        }
        Ok(s)
    }

    /// Binds the socket to `addr`.
    pub(crate) fn bind(&self, addr: &SockAddr) -> Result {
        // SAFETY: A live socket; `addr` is readable for its length.
        to_result(unsafe { bindings::kernel_bind(self.as_ptr(), addr.as_ptr(), addr.len()) })
    }

    /// Restricts the socket to the interface `ifindex` (`SO_BINDTODEVICE`), before `bind`.
    pub(crate) fn bind_to_ifindex(&self, ifindex: i32) {
        // SAFETY: A live socket not yet bound: nothing reads the field concurrently.
        unsafe { bindings::sk_set_bound_dev_if(self.sk(), ifindex) };
    }

    /// Whether the socket lives in the network namespace of `netdev`.
    pub(crate) fn in_netns_of(&self, netdev: &NetDev) -> bool {
        // SAFETY: A live socket and a live netdev; both only read their namespace.
        unsafe {
            core::ptr::eq(
                bindings::sock_net(self.sk()),
                bindings::dev_net(netdev.as_ptr()),
            )
        }
    }

    /// Listens, with a queue of `backlog` connections.
    pub(crate) fn listen(&self, backlog: i32) -> Result {
        // SAFETY: A live, bound socket.
        to_result(unsafe { bindings::kernel_listen(self.as_ptr(), backlog) })
    }

    /// Starts connecting to `addr` without waiting (Nagle off): `Ok(true)` if connected at
    /// once, `Ok(false)` while the handshake runs (the socket's state change callback tells
    /// when it ends; [`Socket::alive`] how).
    pub(crate) fn connect_nonblock(&self, addr: &SockAddr) -> Result<bool> {
        if self.transport == Transport::Tcp {
            // SAFETY: A live TCP socket.
            unsafe { bindings::tcp_sock_set_nodelay(self.sk()) };
        }
        // SAFETY: A live socket; `addr` is readable for its length.
        let r = to_result(unsafe {
            bindings::kernel_connect(
                self.as_ptr(),
                addr.as_ptr(),
                addr.len(),
                bindings::O_NONBLOCK as c_int,
            )
        });
        match r {
            Ok(()) => Ok(true),
            Err(e) if e == EINPROGRESS => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Gives up on the peer (the connection fails with `ETIMEDOUT`) once data sent to it
    /// stays unacknowledged, or its receive window stays closed, for `ms`
    /// (`TCP_USER_TIMEOUT`), and probes the connection with keepalives after `ms / 2` of
    /// silence, every `ms / 6`, so that a peer that vanished while nothing was being sent
    /// is found as well. `0` leaves TCP's defaults (no keepalives, retransmissions for
    /// about 15 minutes, zero-window probes for ever). May sleep (takes the socket's lock).
    /// SCTP keeps its own defaults: its heartbeats find a peer that vanished, and its
    /// retransmission limit one that stopped answering.
    pub(crate) fn set_liveness(&self, ms: u32) {
        if ms == 0 || self.transport != Transport::Tcp {
            return;
        }
        let secs = |div: u32| c_int::try_from((ms / div / 1000).clamp(1, 32767)).unwrap_or(1);
        let ms = c_int::try_from(ms).unwrap_or(c_int::MAX);
        // SAFETY: A live TCP socket, in process context; each call takes the socket's lock
        // itself. The values are in the ranges the calls accept (1 to 32767 s for the
        // keepalive times, a positive count and timeout), so none can fail.
        unsafe {
            bindings::sock_set_keepalive(self.sk());
            bindings::tcp_sock_set_keepidle(self.sk(), secs(2));
            bindings::tcp_sock_set_keepintvl(self.sk(), secs(6));
            bindings::tcp_sock_set_keepcnt(self.sk(), 3);
            bindings::tcp_sock_set_user_timeout(self.sk(), ms);
        }
    }

    /// Lets the socket bind to an address the host does not have (yet): an IPv6 address
    /// still in duplicate address detection (`IP_FREEBIND`). Before `bind`.
    pub(crate) fn set_freebind(&self) {
        // SAFETY: A live socket, not yet bound.
        unsafe { bindings::ip_sock_set_freebind(self.sk()) };
    }

    /// The local and the peer address (an empty one, family 0, for one the socket cannot
    /// tell).
    pub(crate) fn addrs(&self) -> (SockAddr, SockAddr) {
        let (mut local, mut peer) = (SockAddr::none(), SockAddr::none());
        // SAFETY: A live socket; each call writes at most a `sockaddr_storage`.
        let (l, p) = unsafe {
            (
                bindings::kernel_getsockname(
                    self.as_ptr(),
                    core::ptr::from_mut(&mut local.0).cast(),
                ),
                bindings::kernel_getpeername(
                    self.as_ptr(),
                    core::ptr::from_mut(&mut peer.0).cast(),
                ),
            )
        };
        // A failed call may still have written the family (an unconnected socket's peer is
        // then 0.0.0.0:0): no address at all instead.
        if l < 0 {
            local = SockAddr::none();
        }
        if p < 0 {
            peer = SockAddr::none();
        }
        (local, peer)
    }

    /// Accepts a pending connection without blocking (`EAGAIN` when there is none). The new
    /// socket has no owner, TCP's own callbacks, and Nagle off.
    pub(crate) fn accept(&self) -> Result<Socket> {
        let mut raw = core::ptr::null_mut();
        // SAFETY: A live listening socket; `raw` is a valid out pointer.
        to_result(unsafe {
            bindings::kernel_accept(self.as_ptr(), &mut raw, bindings::O_NONBLOCK as c_int)
        })?;
        // SAFETY: `kernel_accept` succeeded: `raw` is a new socket we own, of the
        // listener's transport.
        let new = unsafe { Self::from_raw_of(raw, self.transport) }?;
        let (lsk, nsk) = (self.sk(), new.sk());
        // A connection holds its namespace, as every siw_rs connection socket does, even when
        // its listener is one of the kernel's own (`new_kernel_tcp_in`), which does not; the
        // namespace may be on its way out already (its listeners close only when its netdevs
        // go): then the connection is dropped.
        // SAFETY: `nsk` is live and ours; its namespace's memory stays while the socket does.
        if !unsafe { bindings::sk_hold_net(nsk) } {
            return Err(ENETDOWN);
        }
        // The new socket is a clone of the listener, our callbacks and `sk_user_data`
        // included. Give it the listener's original callbacks and no owner, until an
        // `attach` makes it a connection's.
        // SAFETY: Both socks are live; `sk_user_data` of the listener is null or its
        // owner's `RawCtx` while the callback lock is held (`attach`/`detach` change it under
        // the write lock).
        let saved = unsafe {
            let lock = bindings::sk_callback_lock(lsk);
            bindings::read_lock_bh(lock);
            let ctx = bindings::sk_user_data(lsk).cast::<RawCtx>();
            let saved = if ctx.is_null() {
                None
            } else {
                Some((*ctx).saved)
            };
            bindings::read_unlock_bh(lock);
            saved
        };
        // SAFETY: `nsk` is live and not yet visible to anyone but TCP, whose callbacks take
        // the read side of the lock we take for writing.
        unsafe {
            let lock = bindings::sk_callback_lock(nsk);
            bindings::write_lock_bh(lock);
            if let Some(saved) = saved {
                // Each one separately: SCTP's accept copies some of the listener's callbacks
                // (ours) and sets others of its own.
                Callbacks::of(nsk).without_ours(&saved).install(nsk);
            }
            bindings::sk_set_user_data(nsk, core::ptr::null_mut());
            bindings::write_unlock_bh(lock);
        }
        match self.transport {
            // SAFETY: A live TCP socket, ours.
            Transport::Tcp => unsafe { bindings::tcp_sock_set_nodelay(nsk) },
            Transport::Sctp => new.sctp_set_up_accepted()?,
        }
        Ok(new)
    }

    /// Sends `iov` minus its first `skip` bytes; returns how many bytes TCP took. Without
    /// `block`, a full send buffer gives `EAGAIN` (or a short count); `more` says more data
    /// follows at once (`MSG_MORE`). Pieces made with [`IoVec::from_page`] are spliced
    /// (`MSG_SPLICE_PAGES`): TCP keeps references to their pages instead of copying, and
    /// may send the pages' contents as they are when it (re)transmits. Runs of spliced and
    /// copied pieces go to TCP in turn, all under one socket lock.
    pub(crate) fn send(
        &self,
        iov: &[IoVec<'_>],
        skip: usize,
        block: bool,
        more: bool,
    ) -> Result<usize> {
        // Index loops rather than a chain of iterator adapters (`filter_map`, `map`,
        // `peekable`, whose peeked element went back and forth through the stack): this
        // runs for every FPDU (measured: 230 instructions per call with the chain, 204
        // without). Empty pieces are passed over.
        let mut i = 0usize;
        let mut skip = skip;
        // The first piece with a byte after `skip`.
        let mut cur = loop {
            let Some(v) = iov.get(i) else {
                return Ok(0);
            };
            if skip < v.len() {
                break v.skip(skip);
            }
            skip -= v.len();
            i += 1;
        };
        let mut splice = splice_ok(&cur);
        // Each run fills the entries it hands to TCP, and TCP reads only those.
        let mut bv = [const { MaybeUninit::<bindings::bio_vec>::uninit() }; MAX_IOV];
        let mut kv = [const { MaybeUninit::<bindings::kvec>::uninit() }; MAX_IOV];
        // Never SIGPIPE: a process's doorbell sends from its own system call (`Ep::send_now`),
        // and on a connection the peer has reset TCP would signal that process, killing an
        // unmodified verbs application (seen: ibv_srq_pingpong and our ring fuzzer, exit 141).
        let base = bindings::MSG_NOSIGNAL | if block { 0 } else { bindings::MSG_DONTWAIT };
        let sk = self.sk();
        // SAFETY: A live socket; released below.
        unsafe { bindings::lock_sock(sk) };
        let mut done = 0usize;
        let mut rv: c_int;
        // Runs of pieces alike in splicing, each at most `MAX_IOV` long, one call each.
        loop {
            let mut run = 0usize;
            let mut len = 0usize;
            // Writes `cur` to the run's next entry, until a piece unlike it (returned, with
            // whether it splices) or the end. An entry is counted in `run` only once written.
            let next = loop {
                let (Some(b), Some(k)) = (bv.get_mut(run), kv.get_mut(run)) else {
                    // A full run (never reached: the run ends below before it fills).
                    break Some((cur, splice));
                };
                if splice {
                    b.write(bindings::bio_vec {
                        bv_page: cur.page(),
                        bv_len: cur.len() as u32,
                        bv_offset: (cur.ptr() as usize % kernel::page::PAGE_SIZE) as u32,
                    });
                } else {
                    k.write(bindings::kvec {
                        iov_base: cur.ptr().cast_mut().cast(),
                        iov_len: cur.len(),
                    });
                }
                run += 1;
                len += cur.len();
                i += 1;
                let Some(v) = next_piece(iov, &mut i) else {
                    break None;
                };
                let s = splice_ok(&v);
                if s != splice || run == MAX_IOV {
                    break Some((v, s));
                }
                cur = v;
            };
            let mut msg: bindings::msghdr = pin_init::zeroed();
            let end = if next.is_some() || more {
                bindings::MSG_MORE
            } else {
                bindings::MSG_EOR
            };
            msg.msg_flags = base | end;
            // SAFETY: The first `run` entries of `bv`/`kv`, all that the `iov_iter` reads,
            // were written above with readable memory (pages fit for splicing) outliving the
            // call (`IoVec`'s invariant); the arrays it borrows outlive `msg`.
            unsafe {
                if splice {
                    bindings::iov_iter_bvec(
                        &mut msg.msg_iter,
                        bindings::ITER_SOURCE,
                        bv.as_ptr().cast(),
                        run as c_ulong,
                        len,
                    );
                    msg.msg_flags |= bindings::MSG_SPLICE_PAGES;
                } else {
                    bindings::iov_iter_kvec(
                        &mut msg.msg_iter,
                        bindings::ITER_SOURCE,
                        kv.as_ptr().cast(),
                        run as c_ulong,
                        len,
                    );
                }
            }
            // SAFETY: The socket lock is held; `msg` is set up above.
            rv = unsafe { bindings::tcp_sendmsg_locked(sk, &mut msg, len) };
            let Ok(sent) = usize::try_from(rv) else {
                break;
            };
            if sent == 0 {
                break;
            }
            done += sent;
            let Some((v, s)) = next else {
                break;
            };
            if sent < len {
                break;
            }
            (cur, splice) = (v, s);
        }
        // SAFETY: Taken above.
        unsafe { bindings::release_sock(sk) };
        if done > 0 {
            return Ok(done);
        }
        to_result(rv)?;
        Ok(0)
    }

    /// Ends a TCP segment that [`Self::send`] held open with `more`: TCP sends what it
    /// holds now (as far as its windows allow; it sends the rest when acknowledgements
    /// come). TCP only: the socket has Nagle off, and setting that again is the one
    /// exported call that pushes pending frames (`tcp_push_pending_frames()` is not
    /// exported).
    pub(crate) fn push(&self) {
        if self.transport == Transport::Tcp {
            // SAFETY: A live TCP socket; the call takes the socket lock itself.
            unsafe { bindings::tcp_sock_set_nodelay(self.sk()) };
        }
    }

    /// Reads what the socket holds, passing each piece to `f`, which returns how much of it
    /// it consumed; consuming less stops the read (the rest stays queued). Returns the bytes
    /// consumed. A piece is an [`IoVec`], not a `&[u8]`: an skb may reference pages others
    /// can write meanwhile (spliced into a socket on this host).
    ///
    /// `f` runs in atomic context (`skb_seq_read()` maps paged data with `kmap_atomic()`):
    /// it may take spinlocks, never a mutex, and must not sleep.
    pub(crate) fn read(&self, f: &mut dyn FnMut(IoVec<'_>) -> usize) -> Result<usize> {
        let sk = self.sk();
        // SAFETY: A live socket; `lock_sock` gives the read the lock `tcp_read_sock` needs.
        unsafe {
            bindings::lock_sock(sk);
            let r = read_sock(sk, f);
            bindings::release_sock(sk);
            r
        }
    }

    /// `Ok(true)` when established, `Ok(false)` while connecting or listening, an error once
    /// the connection is gone (the socket error, or `ECONNRESET` after a close).
    pub(crate) fn alive(&self) -> Result<bool> {
        let (err, state) = self.err_state();
        if err != 0 {
            // `sk_err` holds a positive errno; saturate rather than overflow on nonsense.
            return Err(Error::from_errno(err.saturating_abs().saturating_neg()));
        }
        // SCTP's one-to-one sockets use the TCP state numbers, but stay CLOSED while the
        // association is set up: closed means lost only once it was up.
        match state {
            bindings::TCP_ESTABLISHED => {
                self.up.store(true, Ordering::Relaxed);
                Ok(true)
            }
            bindings::TCP_LISTEN | bindings::TCP_SYN_SENT | bindings::TCP_SYN_RECV => Ok(false),
            bindings::TCP_CLOSE
                if self.transport == Transport::Sctp && !self.up.load(Ordering::Relaxed) =>
            {
                Ok(false)
            }
            _ => Err(ECONNRESET),
        }
    }

    /// A TCP connection the peer closed: its FIN came, or its reset (the answer of a closed
    /// socket to our data), but no other error (a timeout).
    pub(crate) fn peer_gone(&self) -> bool {
        // A failed send has taken the reset's `sk_err` already (`sock_error()`).
        self.transport == Transport::Tcp
            && match self.err_state() {
                (0, bindings::TCP_CLOSE_WAIT | bindings::TCP_CLOSE) => true,
                (e, bindings::TCP_CLOSE) => {
                    [ECONNRESET, EPIPE].contains(&Error::from_errno(e.saturating_neg()))
                }
                _ => false,
            }
    }

    /// The socket's pending error (`sk_err`, a positive errno or 0) and its state (0 for
    /// a value out of range, which no TCP state is).
    fn err_state(&self) -> (c_int, u32) {
        let sk = self.sk();
        // SAFETY: A live sock; both fields change under the socket's locks, and the helpers
        // read each once (`READ_ONCE`).
        let (err, state) = unsafe { (bindings::sk_err(sk), bindings::sk_state(sk)) };
        (err, u32::try_from(state).unwrap_or(0))
    }

    /// The current MSS.
    pub(crate) fn mss(&self) -> u32 {
        // SAFETY: A live TCP socket.
        unsafe { bindings::tcp_mss(self.sk()) }
    }

    /// Bytes written but not acknowledged by the peer yet (`SIOCOUTQ`; for SCTP, what its
    /// send queue still holds, chunks being freed once acknowledged).
    pub(crate) fn unacked(&self) -> u32 {
        if self.transport == Transport::Sctp {
            // SAFETY: A live sock; the helper reads the field once (`READ_ONCE`).
            let q = unsafe { bindings::sk_wmem_queued(self.sk()) };
            return u32::try_from(q).unwrap_or(1);
        }
        // SAFETY: A live TCP socket; the helper reads the two sequence numbers once each
        // (`READ_ONCE`), as `tcp_ioctl()` does without the socket lock.
        unsafe { bindings::tcp_unacked(self.sk()) }
    }

    /// Shuts both directions down (the peer sees FIN).
    pub(crate) fn shutdown(&self) {
        // SAFETY: A live socket.
        unsafe {
            bindings::kernel_sock_shutdown(self.as_ptr(), bindings::sock_shutdown_cmd_SHUT_RDWR)
        };
    }

    /// Installs `owner`'s callbacks, keeping a reference to it until [`Socket::detach`].
    pub(crate) fn attach<E: SockEvents>(&self, owner: Arc<E>) {
        let ctx = owner.sk_ctx();
        if ctx.attached.swap(true, Ordering::AcqRel) {
            return;
        }
        let c = ctx.raw.get();
        let w = ctx.wait.get();
        let sctp = self.transport == Transport::Sctp;
        if sctp {
            // Read by `detach` only, which comes after this call.
            ctx.waiting.store(true, Ordering::Release);
        }
        let data = owner.into_foreign();
        let sk = self.sk();
        // SAFETY: `c` lives inside the owner, which the reference `into_foreign` keeps alive
        // until `detach` restores the callbacks and gives it back. Nothing reads `c` before
        // it is published in `sk_user_data`, under the write lock.
        unsafe {
            (*c).event = Some(event::<E>);
            (*c).data = data;
            let lock = bindings::sk_callback_lock(sk);
            bindings::write_lock_bh(lock);
            (*c).saved = Callbacks::of(sk);
            bindings::sk_set_user_data(sk, c.cast());
            Callbacks::OURS.install(sk);
            bindings::write_unlock_bh(lock);
        }
        if sctp {
            // SAFETY: `w` lives inside the owner, kept alive until `detach` takes it off the
            // queue; the socket's wait queue lives as long as the socket, which `detach`
            // (before the release) finds alive. `c` is set up above and outlives the entry.
            unsafe {
                (*w).flags = 0;
                (*w).private = c.cast();
                (*w).func = Some(wait_wake);
                bindings::add_wait_queue(bindings::sk_sleep(sk), w);
            }
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
        let sk = self.sk();
        if ctx.waiting.swap(false, Ordering::AcqRel) {
            // SAFETY: Added by `attach` to this live socket's queue; taking it off takes the
            // queue's lock, which wake functions run under: none of ours runs after this.
            unsafe { bindings::remove_wait_queue(bindings::sk_sleep(sk), ctx.wait.get()) };
        }
        // SAFETY: A live sock; taking the callback lock for writing waits for callbacks in
        // flight, which hold it for reading.
        unsafe {
            let lock = bindings::sk_callback_lock(sk);
            bindings::write_lock_bh(lock);
            if !bindings::sk_user_data(sk).is_null() {
                (*c).saved.install(sk);
                bindings::sk_set_user_data(sk, core::ptr::null_mut());
            }
            bindings::write_unlock_bh(lock);
        }
        // SAFETY: `attach` stored the `into_foreign` of an `Arc<E>` there; no callback uses
        // it any more, so it is ours again.
        drop(unsafe { Arc::<E>::from_foreign((*c).data) });
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we own the socket.
        unsafe { bindings::sock_release(self.as_ptr()) };
    }
}

/// A sock callback.
type SkCallback = Option<unsafe extern "C" fn(sk: *mut bindings::sock)>;

/// The three callbacks of a sock that an owner takes over.
#[derive(Clone, Copy)]
struct Callbacks {
    data_ready: SkCallback,
    write_space: SkCallback,
    state_change: SkCallback,
}

impl Callbacks {
    /// Ours.
    const OURS: Self = Self {
        data_ready: Some(sk_data_ready),
        write_space: Some(sk_write_space),
        state_change: Some(sk_state_change),
    };

    /// The callbacks `sk` has now.
    ///
    /// # Safety
    ///
    /// `sk` is live and its callback lock held.
    unsafe fn of(sk: *mut bindings::sock) -> Self {
        let mut cb: bindings::rust_sk_callbacks = pin_init::zeroed();
        // SAFETY: By the caller's guarantee; `cb` is ours to fill.
        unsafe { bindings::sk_callbacks(sk, &mut cb) };
        Self {
            data_ready: cb.data_ready,
            write_space: cb.write_space,
            state_change: cb.state_change,
        }
    }

    /// These, with each of ours replaced by its counterpart in `saved` (compared by address:
    /// the functions are this module's).
    fn without_ours(self, saved: &Self) -> Self {
        let same = |a: SkCallback, b: SkCallback| a.map(|f| f as usize) == b.map(|f| f as usize);
        let pick = |cur: SkCallback, ours: SkCallback, orig: SkCallback| {
            if same(cur, ours) {
                orig
            } else {
                cur
            }
        };
        Self {
            data_ready: pick(self.data_ready, Self::OURS.data_ready, saved.data_ready),
            write_space: pick(self.write_space, Self::OURS.write_space, saved.write_space),
            state_change: pick(
                self.state_change,
                Self::OURS.state_change,
                saved.state_change,
            ),
        }
    }

    /// Installs these on `sk`.
    ///
    /// # Safety
    ///
    /// `sk` is live and its callback lock held for writing.
    unsafe fn install(self, sk: *mut bindings::sock) {
        let cb = bindings::rust_sk_callbacks {
            data_ready: self.data_ready,
            write_space: self.write_space,
            state_change: self.state_change,
        };
        // SAFETY: By the caller's guarantee.
        unsafe { bindings::sk_set_callbacks(sk, &cb) };
    }
}

/// What a sock's `sk_user_data` points to while an owner is attached.
struct RawCtx {
    /// Calls the owner (with the sock, for [`SockEvent::Data`] from `sk_data_ready`).
    event: Option<unsafe fn(data: *mut c_void, ev: SockEvent, sk: *mut bindings::sock)>,
    /// The owner, from `ForeignOwnable::into_foreign`.
    data: *mut c_void,
    /// The callbacks ours replaced.
    saved: Callbacks,
}

/// The place in the owner that the socket's callbacks find it through.
pub(crate) struct SkCtx {
    raw: Opaque<RawCtx>,
    attached: AtomicBool,
    /// An SCTP socket's entry on its wait queue, and whether it is on it.
    wait: Opaque<bindings::wait_queue_entry>,
    waiting: AtomicBool,
}

// SAFETY: The raw part is only written under `sk_callback_lock` or before attaching.
unsafe impl Send for SkCtx {}
// SAFETY: As above.
unsafe impl Sync for SkCtx {}

impl SkCtx {
    /// An unattached context.
    pub(crate) fn new() -> Self {
        Self {
            raw: Opaque::new(RawCtx {
                event: None,
                data: core::ptr::null_mut(),
                saved: Callbacks {
                    data_ready: None,
                    write_space: None,
                    state_change: None,
                },
            }),
            attached: AtomicBool::new(false),
            wait: Opaque::zeroed(),
            waiting: AtomicBool::new(false),
        }
    }
}

/// An owner of socket callbacks.
pub(crate) trait SockEvents: Send + Sync + Sized + 'static {
    /// The context inside `self` the callbacks use.
    fn sk_ctx(&self) -> &SkCtx;
    /// A callback fired. Runs in softirq or process context, under `sk_callback_lock`: it
    /// must not sleep or call into the socket.
    fn sock_event(this: ArcBorrow<'_, Self>, ev: SockEvent);

    /// Data arrived on a TCP socket, which `sk` may read in place (as the C siw receives in
    /// its `sk_data_ready`). Runs as [`SockEvents::sock_event`] does; by default it is
    /// [`SockEvent::Data`] to that.
    fn data_ready(this: ArcBorrow<'_, Self>, sk: &CallbackSock<'_>) {
        let _ = sk;
        Self::sock_event(this, SockEvent::Data)
    }
}

/// The TCP socket an `sk_data_ready` callback is for, inside that callback: TCP calls it with
/// the socket locked (`bh_lock_sock()` in softirq, or owned by the process whose
/// `release_sock()` runs the backlog), so it can be read without taking the lock.
pub(crate) struct CallbackSock<'a> {
    sk: *mut bindings::sock,
    _cb: core::marker::PhantomData<&'a bindings::sock>,
}

impl CallbackSock<'_> {
    /// Bytes waiting to be read (`tcp_inq()`).
    pub(crate) fn queued(&self) -> usize {
        // SAFETY: A live TCP sock, locked for this callback (type invariant).
        usize::try_from(unsafe { bindings::tcp_inq(self.sk) }).unwrap_or(0)
    }

    /// Reads as [`Socket::read`] does, under the lock the callback's caller holds.
    pub(crate) fn read(&self, f: &mut dyn FnMut(IoVec<'_>) -> usize) -> Result<usize> {
        // SAFETY: A live TCP sock, locked by the socket layer for the callback this value
        // lives in (type invariant, see `event`).
        unsafe { read_sock(self.sk, f) }
    }
}

/// Whether TCP may take `v` by reference (`MSG_SPLICE_PAGES`) rather than copy it.
fn splice_ok(v: &IoVec<'_>) -> bool {
    // SAFETY: `IoVec`'s invariant: a non-null page is one TCP may be handed.
    !v.page().is_null() && unsafe { bindings::sendpage_ok(v.page()) }
}

/// The first piece of `iov` from index `*i` on that is not empty; `*i` is left at it.
fn next_piece<'a>(iov: &[IoVec<'a>], i: &mut usize) -> Option<IoVec<'a>> {
    while let Some(v) = iov.get(*i) {
        if !v.is_empty() {
            return Some(*v);
        }
        *i += 1;
    }
    None
}

/// `tcp_read_sock` with [`read_actor`] calling `f`.
///
/// # Safety
///
/// `sk` is a live TCP sock whose lock the caller holds (owned, or `bh_lock_sock`).
unsafe fn read_sock(
    sk: *mut bindings::sock,
    f: &mut dyn FnMut(IoVec<'_>) -> usize,
) -> Result<usize> {
    let mut f = f;
    let mut desc: bindings::read_descriptor_t = pin_init::zeroed();
    desc.arg.data = (&raw mut f).cast();
    desc.count = 1;
    // SAFETY: By the caller's guarantee; the actor gets back the pointer to `f`, which
    // outlives the call.
    let r = unsafe { bindings::tcp_read_sock(sk, &mut desc, Some(read_actor)) };
    to_result(r)?;
    usize::try_from(r).map_err(|_| EINVAL)
}

/// A socket callback's call into the owner.
///
/// # Safety
///
/// `data` is the pointer [`Socket::attach`] stored, while the callbacks are installed.
/// `sk`, when not null, is the live sock of the callback that calls this, inside that
/// callback.
unsafe fn event<E: SockEvents>(data: *mut c_void, ev: SockEvent, sk: *mut bindings::sock) {
    // SAFETY: `data` is the `into_foreign` pointer `attach` stored; that reference lives
    // until `detach`, which waits for this callback to return.
    let owner: ArcBorrow<'_, E> = unsafe { Arc::<E>::borrow(data) };
    // SAFETY: A live sock, by the caller's guarantee.
    if ev == SockEvent::Data && !sk.is_null() && unsafe { bindings::sk_is_tcp(sk) } {
        // INVARIANT: `sk_data_ready` of a TCP sock: TCP holds the sock's lock around it.
        let cb = CallbackSock {
            sk,
            _cb: core::marker::PhantomData,
        };
        E::data_ready(owner, &cb);
    } else {
        E::sock_event(owner, ev);
    }
}

/// Runs TCP's own callback for `ev`, then the owner's.
///
/// # Safety
///
/// `sk` is a live sock, and this is its callback.
#[inline(always)]
unsafe fn sk_call(sk: *mut bindings::sock, ev: SockEvent) {
    // In softirq (where TCP calls us but for a socket's backlog, which a process runs in
    // `release_sock()` with bottom halves on) the callback lock is read as it is, as the C
    // siw reads it: turning bottom halves off and on again would only cost a
    // `local_bh_enable()` per callback. A process turns them off, as the kernel's other
    // readers of the lock do: the lock's class is every INET socket's, `sock_orphan()`
    // takes it for writing in softirq, and lockdep would see a softirq-unsafe read.
    let in_bh = crate::glue::sync::bh_disabled();
    // SAFETY: A live sock; `sk_user_data` is null or an attached owner's `RawCtx`, which
    // stays valid while the read lock is held (`detach` takes the write lock).
    unsafe {
        let lock = bindings::sk_callback_lock(sk);
        if in_bh {
            bindings::read_lock(lock);
        } else {
            bindings::read_lock_bh(lock);
        }
        let ctx = bindings::sk_user_data(sk).cast::<RawCtx>();
        if !ctx.is_null() {
            // TCP's callback first: `sk_stream_write_space()` clears SOCK_NOSPACE. Run after
            // ours, it could clear the bit that our (already woken) sender has just set on a
            // new EAGAIN, and TCP would never call us again.
            let saved = (*ctx).saved;
            let tcp = match ev {
                SockEvent::Data => saved.data_ready,
                SockEvent::WriteSpace => saved.write_space,
                SockEvent::StateChange => saved.state_change,
            };
            if let Some(f) = tcp {
                f(sk);
            }
            if let Some(e) = (*ctx).event {
                e((*ctx).data, ev, sk);
            }
        }
        if in_bh {
            bindings::read_unlock(lock);
        } else {
            bindings::read_unlock_bh(lock);
        }
    }
}

/// `sk_data_ready` of an attached socket.
///
/// # Safety
///
/// Called by the socket layer with a live sock.
unsafe extern "C" fn sk_data_ready(sk: *mut bindings::sock) {
    // SAFETY: By the function's contract.
    unsafe { sk_call(sk, SockEvent::Data) }
}

/// `sk_write_space` of an attached socket.
///
/// # Safety
///
/// Called by the socket layer with a live sock.
unsafe extern "C" fn sk_write_space(sk: *mut bindings::sock) {
    // SAFETY: By the function's contract.
    unsafe { sk_call(sk, SockEvent::WriteSpace) }
}

/// `sk_state_change` of an attached socket.
///
/// # Safety
///
/// Called by the socket layer with a live sock.
unsafe extern "C" fn sk_state_change(sk: *mut bindings::sock) {
    // SAFETY: By the function's contract.
    unsafe { sk_call(sk, SockEvent::StateChange) }
}

/// `EPOLLOUT`, a wake-up's key when send space frees up (a cast macro bindgen cannot read).
const EPOLLOUT: usize = 0x4;

/// The wake function of an SCTP socket's owner on the socket's wait queue: send space
/// ([`SockEvent::WriteSpace`]). Other wake-ups (data, state) come through the callbacks.
///
/// # Safety
///
/// Called by the wait queue code, under the queue's lock, for the entry [`Socket::attach`]
/// added, whose `private` is the owner's `RawCtx`.
unsafe extern "C" fn wait_wake(
    entry: *mut bindings::wait_queue_entry,
    _mode: c_uint,
    _flags: c_int,
    key: *mut c_void,
) -> c_int {
    // A wake-up without a key may be for anything: take it as write space too.
    let mask = key as usize;
    if mask != 0 && mask & EPOLLOUT == 0 {
        return 0;
    }
    // SAFETY: The entry is on the queue (we are called for it), so `detach` has not taken
    // it off yet: its `private` is the live owner's `RawCtx`, set before it was added.
    unsafe {
        let ctx = (*entry).private.cast::<RawCtx>();
        if let Some(e) = (*ctx).event {
            e((*ctx).data, SockEvent::WriteSpace, core::ptr::null_mut());
        }
    }
    0
}

/// The `tcp_read_sock` actor: hands the skb's data, piece by piece, to the reader.
///
/// # Safety
///
/// Called by `tcp_read_sock` from [`read_sock`], with `desc.arg.data` pointing to the
/// reader and `len` bytes of `skb` at `off`.
unsafe extern "C" fn read_actor(
    desc: *mut bindings::read_descriptor_t,
    skb: *mut bindings::sk_buff,
    off: c_uint,
    len: usize,
) -> c_int {
    // SAFETY: `read_sock` stored a pointer to its `&mut dyn FnMut`, live for the read.
    let f = unsafe {
        &mut *(*desc)
            .arg
            .data
            .cast::<&mut dyn FnMut(IoVec<'_>) -> usize>()
    };
    let len32 = u32::try_from(len).unwrap_or(u32::MAX);
    // What is together in one piece (a small message's FPDUs, in one fragment) goes to the
    // reader without a sequential read's state, mapping and calls.
    let p = if len32 as usize == len {
        // SAFETY: A live skb with `len` bytes at `off` (the caller's guarantee).
        unsafe { bindings::skb_contiguous(skb, off, len32) }
    } else {
        core::ptr::null()
    };
    if !p.is_null() {
        // SAFETY: `skb_contiguous` found the `len` bytes at `p` in the direct map, readable
        // while the skb lives (this call); they may change meanwhile (a spliced page), which
        // `IoVec` allows, and `f` keeps none of them.
        let s = unsafe { IoVec::from_raw(p, len) };
        let used = f(s).min(len);
        if used < len {
            // The reader stops here; the rest stays in the socket.
            // SAFETY: `desc` is the caller's, live for the call.
            unsafe { (*desc).count = 0 };
        }
        return c_int::try_from(used).unwrap_or(c_int::MAX);
    }
    let mut st: bindings::skb_seq_state = pin_init::zeroed();
    let end = off.saturating_add(len32);
    // SAFETY: A live skb with data at `off..end`; `st` is ours.
    unsafe { bindings::skb_prepare_seq_read(skb, off, end, &mut st) };
    let mut done: u32 = 0;
    loop {
        let mut p: *const u8 = core::ptr::null();
        // SAFETY: `st` was prepared above; the call maps the next piece (or ends the read,
        // releasing what it mapped, when it returns 0).
        let n = unsafe { bindings::skb_seq_read(done, &mut p, &mut st) };
        if n == 0 || p.is_null() {
            break;
        }
        // The bytes may change meanwhile (a spliced page), which `IoVec` allows.
        // SAFETY: `skb_seq_read` mapped `n` readable bytes at `p` until its next call or
        // `skb_abort_seq_read`; `f` takes the piece for any lifetime, so keeps none.
        let s = unsafe { IoVec::from_raw(p, n as usize) };
        let used = u32::try_from(f(s).min(s.len())).unwrap_or(n);
        done = done.saturating_add(used);
        if used < n {
            // The reader stops here; the rest stays in the socket.
            // SAFETY: A read in progress (the last call returned data).
            unsafe {
                bindings::skb_abort_seq_read(&mut st);
                (*desc).count = 0;
            }
            break;
        }
    }
    c_int::try_from(done).unwrap_or(c_int::MAX)
}
