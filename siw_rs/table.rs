// SPDX-License-Identifier: GPL-2.0

//! Per-device lookup tables: QP numbers to QPs (`iw_get_qp`, the connection manager) and
//! STag indices to memory regions (every local SGE and inbound tagged access).

use crate::{mr::MrCore, qp::QpCore};
use kernel::{
    prelude::*,
    sync::Arc,
    xarray::{
        AllocKind,
        XArray, //
    },
};

/// The tables of one device.
#[pin_data]
pub(crate) struct Tables {
    #[pin]
    qps: XArray<Arc<QpCore>>,
    #[pin]
    mrs: XArray<Arc<MrCore>>,
}

impl Tables {
    /// Empty tables.
    pub(crate) fn new() -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                qps <- XArray::new(AllocKind::Alloc1),
                mrs <- XArray::new(AllocKind::Alloc1),
            }),
            GFP_KERNEL,
        )
    }

    /// Records `qp` under its number.
    pub(crate) fn insert_qp(&self, qpn: u32, qp: Arc<QpCore>) -> Result {
        let mut g = self.qps.lock();
        match g.store(qpn as usize, qp, GFP_ATOMIC) {
            Ok(None) => Ok(()),
            Ok(Some(old)) => {
                // Never happens (numbers are unique); keep the older QP.
                drop(g.store(qpn as usize, old, GFP_ATOMIC));
                Err(EEXIST)
            }
            Err(e) => Err(e.error),
        }
    }

    /// Forgets QP `qpn`.
    pub(crate) fn remove_qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.lock().remove(qpn as usize)
    }

    /// QP `qpn`.
    pub(crate) fn qp(&self, qpn: u32) -> Option<Arc<QpCore>> {
        self.qps.lock().get(qpn as usize).map(Arc::from)
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
