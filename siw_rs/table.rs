// SPDX-License-Identifier: GPL-2.0

//! Per-device lookup tables: QP numbers to QPs (`iw_get_qp`, the connection manager),
//! STag indices to memory regions (every local SGE and inbound tagged access), and the
//! connection requests waiting for the ULP's accept or reject.

use crate::{
    cm::Ep,
    glue::{
        log::DevName,
        random_u32,
        rdma::cm::{QpHandle, RequestCookie},
        sync::bh_off_if_on,
        SipKey,
    },
    mr::{MrCore, STAG_INDEX_MASK},
    proto::qpn,
    qp::QpCore,
    stats::{self, Counter, DevStats},
};
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::{
    new_mutex, new_spinlock_irq,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNode, //
    },
    sync::{
        Arc,
        Mutex,
        SpinLockIrq,
        UniqueArc, //
    },
    xarray::{
        self,
        AllocKind,
        XArray, //
    },
};

/// The tables of one device.
#[pin_data]
pub(crate) struct Tables {
    /// QPs by number. An irq-safe lock: the connection manager looks QPs up under its own
    /// `cm_id_priv->lock`, which other iWARP drivers take in softirq context.
    #[pin]
    qps: SpinLockIrq<RBTree<u32, Arc<QpCore>>>,
    /// The key and counter of the device's QP numbers ([`crate::proto::qpn`]).
    qpn_key: SipKey,
    qpn_next: AtomicU32,
    /// MRs by STag index. The receive path looks them up in softirq (the socket's
    /// callback), so the XArray's plain spinlock is taken with bottom halves off.
    #[pin]
    mrs: XArray<Arc<MrCore>>,
    /// Connection requests reported to the connection manager and not yet accepted or
    /// rejected. The core names them by cookie only and may drop one silently, so they
    /// live here; each leaves on accept, reject, or its deadline.
    #[pin]
    requests: Mutex<KVec<(RequestCookie, Arc<Ep>)>>,
    /// The port counters.
    #[pin]
    stats: DevStats,
    /// The device's name, which its messages begin with.
    name: DevName,
}

impl Tables {
    /// Empty tables of device `name`.
    pub(crate) fn new(name: &CStr) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                qps <- new_spinlock_irq!(RBTree::new(), "Tables::qps"),
                qpn_key: SipKey::random(),
                qpn_next: AtomicU32::new(0),
                mrs <- XArray::new(AllocKind::Alloc1),
                requests <- new_mutex!(KVec::new(), "Tables::requests"),
                stats <- DevStats::new(),
                name: DevName::new(name.to_bytes()),
            }),
            GFP_KERNEL,
        )
    }

    /// The device's name, for its messages (as it was registered).
    pub(crate) fn name(&self) -> &DevName {
        &self.name
    }

    /// A number for a new QP: the next of the device's unpredictable sequence that is
    /// neither 0 nor a live QP's (a QP older than 2^24 creations may still hold one).
    ///
    /// # Errors
    ///
    /// `EAGAIN` if 32 numbers in a row are taken, which the QP limit makes all but
    /// impossible.
    pub(crate) fn new_qpn(&self) -> Result<u32> {
        let qps = self.qps.lock();
        for _ in 0..32 {
            let n = self.qpn_next.fetch_add(1, Ordering::Relaxed);
            let qpn = qpn::permute(n, |round, half| {
                self.qpn_key.hash(u64::from(round) << 32 | u64::from(half))
            });
            if qpn != 0 && qps.get(&qpn).is_none() {
                return Ok(qpn);
            }
        }
        Err(EAGAIN)
    }

    /// Records `qp` under its number.
    pub(crate) fn insert_qp(&self, qpn: u32, qp: Arc<QpCore>) -> Result {
        let node = RBTreeNode::new(qpn, qp, GFP_KERNEL)?;
        let refused = {
            let mut g = self.qps.lock();
            if g.get(&qpn).is_some() {
                // Never happens (numbers are unique); keep the older QP.
                Some(node)
            } else {
                g.insert(node);
                None
            }
        };
        // Dropped here, outside the irq-safe lock.
        match refused {
            Some(_) => Err(EEXIST),
            None => Ok(()),
        }
    }

    /// Counts one `c` (a rare event).
    pub(crate) fn count(&self, c: Counter) {
        self.stats.event(c);
    }

    /// The device's counters: the totals, and what its connections still up have counted.
    pub(crate) fn counters(&self, out: &mut [u64]) {
        self.stats.read(out, |out| {
            for (_, qp) in self.qps.lock().iter() {
                stats::add_live(out, qp.stats());
            }
        });
    }

    /// Moves a QP's counts into the device's totals (its connection ended).
    pub(crate) fn retire(&self, qp: &QpCore) {
        self.stats.retire(qp.stats());
    }

    /// Forgets QP `qpn`.
    pub(crate) fn remove_qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        let node = self.qps.lock().remove_node(&qpn)?;
        Some(node.to_key_value().1)
    }

    /// QP `qpn`.
    pub(crate) fn qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.lock().get(&qpn).cloned()
    }

    /// The `ib_qp` of QP `qpn`, for the connection manager (`iw_get_qp`), with the
    /// reference its `iw_add_ref` takes over ([`QpCore::cm_hand_out`]); no `Arc` one, so
    /// nothing can be freed in the caller's atomic context.
    pub(crate) fn cm_handle(&self, qpn: u32) -> Option<QpHandle> {
        let g = self.qps.lock();
        let q = g.get(&qpn)?;
        let h = q.cm_handle().copied()?;
        q.cm_hand_out();
        Some(h)
    }

    /// Records a connection request reported to the connection manager.
    pub(crate) fn insert_request(&self, req: RequestCookie, ep: Arc<Ep>) -> Result {
        self.requests.lock().push((req, ep), GFP_KERNEL)?;
        Ok(())
    }

    /// Takes the connection request named `req`, if it is still waiting.
    pub(crate) fn take_request(&self, req: RequestCookie) -> Option<Arc<Ep>> {
        let mut g = self.requests.lock();
        let i = g.iter().position(|(c, _)| *c == req)?;
        let last = g.len().checked_sub(1)?;
        g.swap(i, last);
        g.pop().map(|(_, ep)| ep)
    }

    /// Publishes `mr` under a fresh random STag index, keeping the key (the low 8 bits of
    /// its STag), and returns the STag.
    ///
    /// RFC 5040 section 8.1.1 item 8 asks for STags a peer cannot easily guess: the index
    /// is 24 random bits (never 0), drawn again in the rare case it is in use.
    pub(crate) fn publish_mr(&self, mr: UniqueArc<MrCore>) -> Result<u32> {
        /// With at most `MAX_MR` of 2^24 indices in use, 16 draws all failing is
        /// practically impossible.
        const TRIES: usize = 16;
        let mut mr = mr;
        for _ in 0..TRIES {
            let index = random_u32() & STAG_INDEX_MASK;
            if index == 0 {
                continue;
            }
            let stag = (index << 8) | (mr.stag & 0xff);
            mr.stag = stag;
            let arc = Arc::from(mr);
            let taken = self.with_mrs(|g| {
                if g.get(index as usize).is_some() {
                    return Err(arc);
                }
                Ok(g.store(index as usize, arc, GFP_ATOMIC)
                    .map(|_| stag)
                    .map_err(|e| e.error))
            });
            let arc = match taken {
                Ok(r) => return r,
                Err(arc) => arc,
            };
            // Nobody else has seen it: still unique.
            mr = Pin::into_inner(Arc::into_unique_or_drop(arc).ok_or(EBUSY)?);
        }
        Err(EBUSY)
    }

    /// Forgets the MR with STag index `index` (deregistration); its registration is
    /// invalid from now on, also to work still holding it.
    pub(crate) fn remove_mr(&self, index: u32) -> Option<Arc<MrCore>> {
        let mr = self.with_mrs(|g| g.remove(index as usize))?;
        mr.set_invalid();
        Some(mr)
    }

    /// The MR named by `stag` (index and key must match), if the STag is valid.
    pub(crate) fn mr(&self, stag: u32) -> Option<Arc<MrCore>> {
        let mr = self.with_mrs(|g| g.get((stag >> 8) as usize).map(Arc::from))?;
        (mr.stag == stag && mr.is_valid()).then_some(mr)
    }

    /// The MR named by `stag`, as [`Self::mr`], without the lookup when `held` (found by an
    /// earlier lookup) is it: a held registration that is still valid and has that STag is
    /// the one the STag names, since a registration goes invalid once and for all
    /// (invalidation, deregistration) and a fast-registration index gets a new
    /// registration only while its current one is invalid (`mr::register`). So work that
    /// keeps the region of its first lookup (a Read's sink and source, the segments of one
    /// message) places exactly as a lookup each time would, without the table's lock,
    /// bottom halves off and on, the XArray walk and a reference taken and dropped.
    pub(crate) fn mr_held(&self, held: Option<Arc<MrCore>>, stag: u32) -> Option<Arc<MrCore>> {
        match held {
            Some(mr) if mr.stag == stag && mr.is_valid() => Some(mr),
            _ => self.mr(stag),
        }
    }

    /// The MR (the current registration) at STag index `index`, valid or not.
    pub(crate) fn mr_at(&self, index: u32) -> Option<Arc<MrCore>> {
        self.with_mrs(|g| g.get(index as usize).map(Arc::from))
    }

    /// Runs `f` on the MR table, locked with bottom halves off (the receive path looks MRs
    /// up in softirq, where they are off already). The lock goes before bottom halves come
    /// back on.
    fn with_mrs<R>(&self, f: impl FnOnce(&mut xarray::Guard<'_, Arc<MrCore>>) -> R) -> R {
        let bh = bh_off_if_on();
        let mut g = self.mrs.lock();
        let r = f(&mut g);
        drop(g);
        drop(bh);
        r
    }

    /// Puts the registration `mr` in place of `old` at index `index` (a fast-registration
    /// MR's `REG_MR`), checked and replaced under one lock: `EBUSY` if the index holds
    /// another registration by now (a concurrent `REG_MR` came first), `ENOENT` if none.
    /// `old` was seen invalid, and a registration never becomes valid again.
    pub(crate) fn replace_mr(&self, index: u32, old: &Arc<MrCore>, mr: Arc<MrCore>) -> Result {
        let old = self.with_mrs(|g| {
            match g.get(index as usize) {
                None => return Err(ENOENT),
                Some(cur) if !core::ptr::eq(&*cur, &**old) => return Err(EBUSY),
                Some(_) => {}
            }
            g.store(index as usize, mr, GFP_ATOMIC).map_err(|e| e.error)
        })?;
        // Dropped outside the lock.
        drop(old);
        Ok(())
    }
}
