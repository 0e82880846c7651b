// SPDX-License-Identifier: GPL-2.0

//! Completion queues: a ring of `struct siw_cqe` followed by a `struct siw_cq_ctrl`
//! notification word, mapped into the owning process (libsiw polls it without system calls).

use crate::device::{
    Siw,
    MAX_CQ, //
};
use crate::{
    device::{
        SiwDev,
        MAX_CQE, //
    },
    ib::object::{
        UrespCreateCq,
        User,
        CQE_SIZE,
        CQ_CTRL_SIZE, //
    },
    limit::{
        Counted,
        Kind, //
    },
    queue::Ring,
};
use core::sync::atomic::{
    AtomicU32,
    Ordering, //
};
use kernel::prelude::*;

/// CQ ids are reported to user space for debugging only.
static NEXT_CQ_ID: AtomicU32 = AtomicU32::new(1);

/// A completion queue.
pub(crate) struct SiwCq {
    /// CQEs, then the control word.
    #[expect(
        dead_code,
        reason = "read by the data path (TX/RX), which arrives with the connection manager"
    )]
    pub(crate) ring: Ring,
    _count: Counted,
}

impl SiwCq {
    /// A CQ of at least `cqe` entries; returns it and its real size.
    pub(crate) fn new(
        dev: &SiwDev,
        cqe: i32,
        mut user: Option<&mut User<'_, Siw>>,
    ) -> Result<(Self, i32)> {
        let count = Counted::new(&dev.counts, Kind::Cq, MAX_CQ)?;
        let n = u32::try_from(cqe).map_err(|_| EINVAL)?;
        if !(1..=MAX_CQE).contains(&n) {
            return Err(EINVAL);
        }
        let ring = Ring::new(n, CQE_SIZE, CQ_CTRL_SIZE, user.as_deref_mut())?;
        let size = i32::try_from(ring.entries).map_err(|_| EINVAL)?;
        if let Some(u) = user {
            let resp = UrespCreateCq {
                cq_id: NEXT_CQ_ID.fetch_add(1, Ordering::Relaxed),
                num_cqe: ring.entries,
                cq_key: ring.key(),
            };
            u.udata.respond(&resp)?;
        }
        Ok((
            Self {
                ring,
                _count: count,
            },
            size,
        ))
    }
}
