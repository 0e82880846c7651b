// SPDX-License-Identifier: GPL-2.0

//! The port's GID table, and the listeners of connections made by `modify_qp`.
//!
//! Entry 0 is the C siw's GID (the netdev's MAC in octets 0..6): the connection manager finds
//! an iWARP device by its entry 0 (`cma_validate_port`), so it stays as it was. The entries
//! after it hold the netdev's IP addresses, IPv4 ones mapped into IPv6 (`::ffff:a.b.c.d`),
//! each in the slot it got when it came ([`gidconn::update_slots`]): an address that goes
//! frees its slot, and the others keep their index. The C siw has entry 0 alone; the
//! addresses are what a program that exchanges GIDs out of band (`ibv_rc_pingpong -g N`)
//! needs to name the peer (see [`crate::proto::gidconn`]).
//!
//! The address notifiers keep the table current: [`Gids::changed`] queues a refresh, which
//! reads the addresses again and has the core's GID cache read the table again
//! (`IB_EVENT_GID_CHANGE`).
//!
//! The device listens at port `gid_connect_port` (a privileged port: no unprivileged
//! process can take it) of an address only while a QP waits there, in RTR or RTS, for its
//! peer to connect ([`Waiting`]): no port is open that no application asked for.
//! `gid_connect_port=0` turns this off. The listeners are the kernel's own sockets, opened
//! by the refresh work (whose credentials allow binding that port, whoever moved the QP)
//! and closed when the last QP waiting at their address stops waiting, or before the
//! netdev leaves its namespace.

use crate::{
    cm::{self, Ep},
    device::Siw,
    glue::{
        log,
        net::netdev::NetDev,
        rdma::device::DeviceRef,
        workqueue as work, //
    },
    proto::gidconn,
    table::Tables,
};
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{
    impl_has_work, new_mutex, new_spinlock_irq, new_work,
    prelude::*,
    sync::{
        Arc,
        Mutex,
        SpinLockIrq, //
    },
    workqueue::{
        Work,
        WorkItem, //
    },
};

/// Entries of the table: the MAC GID, then up to 31 addresses.
pub(crate) const GID_TBL_LEN: usize = 32;
/// Address slots (entries 1..).
const SLOTS: usize = GID_TBL_LEN - 1;

/// A GID (16 octets).
pub(crate) type Gid = [u8; 16];

/// The GID table of a device's port, and its listeners.
#[pin_data]
pub(crate) struct Gids {
    /// Entry 0.
    mac_gid: Gid,
    /// The device's tables, where the listeners' connections find their QPs.
    tables: Arc<Tables>,
    #[pin]
    inner: Mutex<Inner>,
    /// QPs waiting for their peer to connect, per address slot ([`Waiting`]). Atomic: a
    /// QP stops waiting under its state lock, where the mutex cannot be taken.
    waiting: [AtomicU32; SLOTS],
    /// The device whose table to refresh, handed over by the address notifier (a reference,
    /// so the device stays registered until the refresh has run). Irq-safe: the IPv6 chain
    /// may call from softirq (duplicate address detection's timer).
    #[pin]
    pending: SpinLockIrq<Option<DeviceRef>>,
    #[pin]
    work: Work<Gids>,
}

struct Inner {
    /// Entries 1.. of the table.
    slots: [Option<Gid>; SLOTS],
    /// A listener per address a QP waits at.
    listeners: KVec<(Gid, Arc<Ep>)>,
    /// The netdev is going away: no more listeners.
    dead: bool,
    /// The device serves connections made by `modify_qp` (not over SCTP: they are
    /// siw_rs-private TCP connections).
    av: bool,
}

impl_has_work! {
    impl HasWork<Self> for Gids { self.work }
}

impl WorkItem for Gids {
    type Pointer = Arc<Gids>;

    fn run(this: Arc<Gids>) {
        // No device handed over: only listeners nobody waits at to close (which needs no
        // netdev).
        let Some(dref) = this.pending.lock().take() else {
            this.prune();
            return;
        };
        let changed = match dref.as_driver::<Siw>() {
            Some(dev) => dev.with_netdev(|nd| this.refresh(nd)).unwrap_or(false),
            None => false,
        };
        if changed {
            dref.dispatch_gid_change();
        }
    }
}

/// The addresses of `nd`, and how many.
fn read_addrs(nd: &NetDev) -> ([Gid; SLOTS], usize) {
    let mut a = [[0u8; 16]; SLOTS];
    let n = nd.ip_addrs(&mut a);
    (a, n)
}

/// Whether a QP waits at slot `i`.
fn waited_at(waiting: &[AtomicU32; SLOTS], i: usize) -> bool {
    waiting
        .get(i)
        .is_some_and(|c| c.load(Ordering::Acquire) > 0)
}

impl Inner {
    /// Whether a listener at `a` is still wanted: the address is in the table and a QP
    /// waits there.
    fn wanted(&self, waiting: &[AtomicU32; SLOTS], a: &Gid) -> bool {
        !self.dead && self.slot_of(a).is_some_and(|i| waited_at(waiting, i))
    }

    /// The slot holding address `a`.
    fn slot_of(&self, a: &Gid) -> Option<usize> {
        self.slots.iter().position(|s| *s == Some(*a))
    }

    /// Takes out the listeners no longer wanted, for the caller to close outside the lock.
    fn take_unwanted(&mut self, waiting: &[AtomicU32; SLOTS]) -> KVec<(Gid, Arc<Ep>)> {
        let mut stale = KVec::new();
        // Best effort: without the room, a stale listener is closed under the lock below.
        let _ = stale.reserve(self.listeners.len(), GFP_KERNEL);
        let mut i = 0;
        while let Some((a, _)) = self.listeners.get(i) {
            if self.wanted(waiting, a) {
                i += 1;
                continue;
            }
            let Ok(l) = self.listeners.remove(i) else {
                break;
            };
            if let Err(e) = stale.push_within_capacity(l) {
                cm::destroy_listen(e.0 .1);
            }
        }
        stale
    }

    /// Opens a listener on each address a QP waits at that has none (skipping one that
    /// cannot be opened), and returns those no longer wanted, for the caller to close
    /// outside the lock.
    fn sync_listeners(
        &mut self,
        nd: &NetDev,
        tables: &Arc<Tables>,
        waiting: &[AtomicU32; SLOTS],
    ) -> KVec<(Gid, Arc<Ep>)> {
        let stale = self.take_unwanted(waiting);
        if self.dead || !self.av || !cm::av_enabled() {
            return stale;
        }
        for (i, a) in self.slots.into_iter().enumerate() {
            let Some(a) = a.filter(|_| waited_at(waiting, i)) else {
                continue;
            };
            if !self.listeners.iter().any(|(l, _)| *l == a) {
                // Best effort: an address that cannot be listened on (its port taken) is
                // skipped, and tried again at the next change or QP; the QPs waiting there
                // are not connected to, and fail at their deadline.
                if let Err(e) = self.open(nd, tables, &a) {
                    log::debug!(tables.name(), "no listener on a GID address: {:?}\n", e);
                }
            }
        }
        stale
    }

    /// Opens a listener on `a`.
    fn open(&mut self, nd: &NetDev, tables: &Arc<Tables>, a: &Gid) -> Result {
        // Room first: a listener made and then dropped unrecorded would stay open.
        self.listeners.reserve(1, GFP_KERNEL)?;
        let ep = cm::av_listen(nd, tables.clone(), a)?;
        if let Err(e) = self.listeners.push_within_capacity((*a, ep)) {
            cm::destroy_listen(e.0 .1);
            return Err(ENOMEM);
        }
        Ok(())
    }
}

/// Closes listeners taken out of the table.
fn close_all(listeners: KVec<(Gid, Arc<Ep>)>) {
    for (_, ep) in listeners {
        cm::destroy_listen(ep);
    }
}

impl Gids {
    /// The table of a new device on `nd`, whose entry 0 is `mac_gid`, with its listeners (if
    /// `av`: connections made by `modify_qp` are served).
    pub(crate) fn new(
        mac_gid: Gid,
        nd: &NetDev,
        tables: Arc<Tables>,
        av: bool,
    ) -> Result<Arc<Self>> {
        // No listener yet: one opens when a QP waits at its address.
        let mut inner = Inner {
            slots: [None; SLOTS],
            listeners: KVec::new(),
            dead: false,
            av,
        };
        let (addrs, n) = read_addrs(nd);
        gidconn::update_slots(&mut inner.slots, addrs.get(..n).unwrap_or(&[]));
        Arc::pin_init(
            pin_init!(Self {
                mac_gid,
                tables,
                inner <- new_mutex!(inner, "Gids::inner"),
                waiting: [const { AtomicU32::new(0) }; SLOTS],
                pending <- new_spinlock_irq!(None, "Gids::pending"),
                work <- new_work!("Gids::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Entry `index` of the table (all zero for an empty one, which the core leaves out).
    pub(crate) fn gid(&self, index: usize) -> Gid {
        let Some(slot) = index.checked_sub(1) else {
            return self.mac_gid;
        };
        self.inner
            .lock()
            .slots
            .get(slot)
            .copied()
            .flatten()
            .unwrap_or([0; 16])
    }

    /// An address of the device `dev` came or went: refresh the table soon. Any context (the
    /// IPv6 address chain is atomic): `this` goes to the work, so it is never the last
    /// reference dropped here.
    pub(crate) fn changed(this: Arc<Self>, dev: DeviceRef) {
        let Some(q) = work::queue() else {
            return;
        };
        // A refresh already pending reads the addresses anew too: one reference is enough.
        let old = this.pending.lock().replace(dev);
        drop(old);
        // Already queued: that run takes what is pending now (and holds `this` meanwhile).
        let _ = q.enqueue::<_, 0>(this);
    }

    /// Reads the addresses of `nd` again; whether the table changed.
    fn refresh(&self, nd: &NetDev) -> bool {
        let (addrs, n) = read_addrs(nd);
        let (changed, stale) = {
            let mut g = self.inner.lock();
            if g.dead {
                return false;
            }
            let changed = gidconn::update_slots(&mut g.slots, addrs.get(..n).unwrap_or(&[]));
            // Also retries an address that could not be listened on before.
            let stale = g.sync_listeners(nd, &self.tables, &self.waiting);
            (changed, stale)
        };
        close_all(stale);
        changed
    }

    /// Closes the listeners nobody waits at any more.
    fn prune(&self) {
        let stale = self.inner.lock().take_unwanted(&self.waiting);
        close_all(stale);
    }

    /// A QP of the device `dev` waits at `sgid` for its peer to connect: the device listens
    /// there until the returned [`Waiting`] is dropped (from a moment after this returns:
    /// the peer's tries meanwhile are refused by TCP, and it tries again). `EADDRNOTAVAIL`
    /// if no entry has `sgid`.
    pub(crate) fn wait_at(this: &Arc<Self>, dev: DeviceRef, sgid: &Gid) -> Result<Waiting> {
        let slot = {
            let g = this.inner.lock();
            if g.dead {
                return Err(EADDRNOTAVAIL);
            }
            g.slot_of(sgid).ok_or(EADDRNOTAVAIL)?
        };
        let count = this.waiting.get(slot).ok_or(EADDRNOTAVAIL)?;
        if count.fetch_add(1, Ordering::AcqRel) == 0 {
            Self::changed(this.clone(), dev);
        }
        Ok(Waiting {
            gids: this.clone(),
            slot,
        })
    }

    /// The netdev goes away: close every listener, and open no more (called from the netdev
    /// notifier, before the netdev's namespace can go).
    pub(crate) fn shutdown(&self) {
        let stale = {
            let mut g = self.inner.lock();
            g.dead = true;
            core::mem::take(&mut g.listeners)
        };
        close_all(stale);
    }
}

/// A QP waiting at one of the device's addresses ([`Gids::wait_at`]). Dropped in any context
/// (under a QP's state lock, from softirq): the listener, once nobody waits, is closed by
/// the work.
pub(crate) struct Waiting {
    gids: Arc<Gids>,
    slot: usize,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        let last = self
            .gids
            .waiting
            .get(self.slot)
            .is_some_and(|c| c.fetch_sub(1, Ordering::AcqRel) == 1);
        if let (true, Some(q)) = (last, work::queue()) {
            // Already queued: that run looks at the counts as they are then. The clone is
            // not the last reference (this one is dropped after it).
            let _ = q.enqueue::<_, 0>(self.gids.clone());
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        // The table goes with its device (the device's last reference, or the refresh
        // work's, went): so do the listeners. Process context: the address notifier hands its
        // reference to the work and never drops the last one.
        close_all(core::mem::take(&mut self.listeners));
    }
}
