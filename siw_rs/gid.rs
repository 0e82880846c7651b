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
//! The device listens on each of its addresses at port `gid_connect_port` (a privileged
//! port: no unprivileged process can take it, see [`crate::cm`]), for peers that connect to
//! its QPs; `gid_connect_port=0` turns this off. The listeners are the kernel's own sockets,
//! opened where the credentials allow binding that port (the `rdma link add` that makes the
//! device, and the refresh work) and closed before the netdev leaves its namespace.

use crate::{
    cm::{self, Ep},
    device::Siw,
    glue::{
        net::netdev::NetDev,
        rdma::device::DeviceRef,
        workqueue as work, //
    },
    proto::gidconn,
    table::Tables,
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
    /// A listener per address.
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
        let Some(dref) = this.pending.lock().take() else {
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

impl Inner {
    /// Opens a listener on each address that has none (skipping one that cannot be opened),
    /// and returns those whose address is gone, for the caller to close outside the lock.
    fn sync_listeners(&mut self, nd: &NetDev, tables: &Arc<Tables>) -> KVec<(Gid, Arc<Ep>)> {
        let mut stale = KVec::new();
        // Best effort: without the room, a stale listener is closed under the lock below.
        let _ = stale.reserve(self.listeners.len(), GFP_KERNEL);
        let mut i = 0;
        while let Some((a, _)) = self.listeners.get(i) {
            if !self.dead && self.slots.contains(&Some(*a)) {
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
        if self.dead || !self.av || !cm::av_enabled() {
            return stale;
        }
        for a in self.slots {
            let Some(a) = a else {
                continue;
            };
            if !self.listeners.iter().any(|(l, _)| *l == a) {
                // Best effort: an address that cannot be listened on is skipped (tried again
                // at the next change); its QPs cannot be connected to.
                if let Err(e) = self.open(nd, tables, &a) {
                    pr_debug!("no listener on a GID address: {:?}\n", e);
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
        let mut inner = Inner {
            slots: [None; SLOTS],
            listeners: KVec::new(),
            dead: false,
            av,
        };
        let (addrs, n) = read_addrs(nd);
        gidconn::update_slots(&mut inner.slots, addrs.get(..n).unwrap_or(&[]));
        let stale = inner.sync_listeners(nd, &tables);
        close_all(stale);
        Arc::pin_init(
            pin_init!(Self {
                mac_gid,
                tables,
                inner <- new_mutex!(inner, "Gids::inner"),
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
            let stale = g.sync_listeners(nd, &self.tables);
            (changed, stale)
        };
        close_all(stale);
        changed
    }

    /// Whether a peer can connect to a QP of this device at `sgid`: `EADDRNOTAVAIL` if no
    /// entry has it, `EADDRINUSE` if nothing listens there (the port was taken).
    pub(crate) fn listening(&self, sgid: &Gid) -> Result {
        let g = self.inner.lock();
        if g.dead || !g.slots.contains(&Some(*sgid)) {
            return Err(EADDRNOTAVAIL);
        }
        if !g.listeners.iter().any(|(a, _)| a == sgid) {
            return Err(EADDRINUSE);
        }
        Ok(())
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

impl Drop for Inner {
    fn drop(&mut self) {
        // The table goes with its device (the device's last reference, or the refresh
        // work's, went): so do the listeners. Process context: the address notifier hands its
        // reference to the work and never drops the last one.
        close_all(core::mem::take(&mut self.listeners));
    }
}
