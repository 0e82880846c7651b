// SPDX-License-Identifier: GPL-2.0

//! Protection domains. A PD is only a name for the core's bookkeeping (memory regions and
//! QPs record theirs); siw_rs counts them against `max_pd`.

use crate::{
    device::{
        SiwDev,
        MAX_PD, //
    },
    limit::{
        Counted,
        Kind, //
    },
};
use kernel::prelude::*;

/// A protection domain.
pub(crate) struct SiwPd {
    _count: Counted,
}

impl SiwPd {
    /// A new PD on `dev`.
    pub(crate) fn new(dev: &SiwDev) -> Result<Self> {
        Ok(Self {
            _count: Counted::new(&dev.counts, Kind::Pd, MAX_PD)?,
        })
    }
}
