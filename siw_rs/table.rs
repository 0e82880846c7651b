// SPDX-License-Identifier: GPL-2.0

//! Per-device lookup tables: QP numbers to QPs (`iw_get_qp`, the connection manager) and
//! STag indices to memory regions (every local SGE and inbound tagged access).

use crate::{ib::cm::QpHandle, mr::MrCore, qp::QpCore};
use kernel::{
    new_spinlock_irq,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNode, //
    },
    sync::{
        Arc,
        SpinLockIrq, //
    },
    xarray::{
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
    #[pin]
    mrs: XArray<Arc<MrCore>>,
}

impl Tables {
    /// Empty tables.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                qps <- new_spinlock_irq!(RBTree::new(), "Tables::qps"),
                mrs <- XArray::new(AllocKind::Alloc1),
            }),
            GFP_KERNEL,
        )
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

    /// Forgets QP `qpn`.
    pub(crate) fn remove_qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        let node = self.qps.lock().remove_node(&qpn)?;
        Some(node.to_key_value().1)
    }

    /// QP `qpn`.
    pub(crate) fn qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.lock().get(&qpn).cloned()
    }

    /// The `ib_qp` of QP `qpn`, for the connection manager: takes no reference, so
    /// nothing can be freed in the caller's atomic context.
    pub(crate) fn cm_handle(&self, qpn: u32) -> Option<QpHandle> {
        self.qps
            .lock()
            .get(&qpn)
            .and_then(|q| q.cm_handle.as_ref().copied())
    }

    /// Records `mr` under its STag index.
    pub(crate) fn insert_mr(&self, index: u32, mr: Arc<MrCore>) -> Result {
        let mut g = self.mrs.lock();
        if g.get(index as usize).is_some() {
            return Err(EBUSY);
        }
        g.store(index as usize, mr, GFP_ATOMIC)
            .map(drop)
            .map_err(|e| e.error)
    }

    /// Forgets the MR with STag index `index`.
    pub(crate) fn remove_mr(&self, index: u32) -> Option<Arc<MrCore>> {
        self.mrs.lock().remove(index as usize)
    }

    /// The MR named by `stag` (index and key must match).
    pub(crate) fn mr(&self, stag: u32) -> Option<Arc<MrCore>> {
        let mr = self.mrs.lock().get((stag >> 8) as usize).map(Arc::from)?;
        (mr.stag == stag).then_some(mr)
    }
}
