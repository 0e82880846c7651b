// SPDX-License-Identifier: GPL-2.0

//! The port counters `rdma statistic show` lists.
//!
//! Cheap enough to stay on: per connection, the QP counts its FPDUs, payload bytes and the
//! Read Requests it serves in a [`QpStats`]. Only the QP's own connection work writes
//! those, under the QP's state lock, so a count is a plain load and store (no
//! read-modify-write, and nothing shared between connections, per FPDU). When the
//! connection ends its counts move into the device's [`DevStats`]; a reader adds the counts
//! of the connections still up. Rare events (connections, Terminates, CRC errors) go to the
//! device directly.

use core::sync::atomic::{
    AtomicU64,
    Ordering, //
};
use kernel::{
    new_mutex,
    prelude::*,
    sync::Mutex, //
};

/// A counter.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Counter {
    /// FPDUs sent (Terminates included).
    TxFpdus,
    /// DDP payload bytes sent.
    TxBytes,
    /// FPDUs received.
    RxFpdus,
    /// DDP payload bytes received.
    RxBytes,
    /// Inbound RDMA Read Requests accepted for serving.
    ReadRequestsServed,
    /// FPDUs whose MPA CRC did not match (each ends its connection).
    CrcErrors,
    /// Terminate messages sent.
    TerminatesSent,
    /// Terminate messages received.
    TerminatesReceived,
    /// Connections that reached RTS (either role, rdma_cm or `modify_qp`).
    ConnectionsEstablished,
    /// Connection requests refused: an MPA Reject sent (by us or the ULP) or received.
    ConnectionsRefused,
    /// DDP over SCTP: messages that came before their DDP-SSN's turn and were held until it.
    SctpHeld,
    /// FPDUs handed to TCP with their segment held open for the next FPDU, which then
    /// shared it (RFC 5044 section 5.1 packing; `fpdu_pack`).
    TxPacked,
    /// DDP over SCTP: an initiator's associations aborted for not coming up in time, each
    /// followed by a fresh one (see `cm.rs`, `SCTP_TRY_TIMEOUT_MS`).
    SctpStalledAssocs,
}

/// How many counters there are.
pub(crate) const COUNT: usize = 13;

/// The counters' names, in [`Counter`]'s order (`rdma statistic show`).
pub(crate) const NAMES: &[&CStr] = &[
    c"tx_fpdus",
    c"tx_bytes",
    c"rx_fpdus",
    c"rx_bytes",
    c"read_requests_served",
    c"crc_errors",
    c"terminates_sent",
    c"terminates_received",
    c"connections_established",
    c"connections_refused",
    c"sctp_held",
    c"tx_fpdus_packed",
    c"sctp_stalled_assocs",
];

const _: () = assert!(NAMES.len() == COUNT);

impl Counter {
    fn index(self) -> usize {
        self as usize
    }
}

/// A connection's counts, kept by its QP.
pub(crate) struct QpStats([AtomicU64; COUNT]);

impl QpStats {
    /// All zero.
    pub(crate) fn new() -> Self {
        Self([const { AtomicU64::new(0) }; COUNT])
    }

    /// The count of `c` so far.
    pub(crate) fn get(&self, c: Counter) -> u64 {
        self.0
            .get(c.index())
            .map_or(0, |a| a.load(Ordering::Relaxed))
    }

    /// Adds `n` to `c`. The caller holds the QP's state lock, so it is the only writer.
    pub(crate) fn add(&self, c: Counter, n: u64) {
        if let Some(a) = self.0.get(c.index()) {
            a.store(a.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
        }
    }
}

/// A device's counters: those of connections that ended, and rare events.
#[pin_data]
pub(crate) struct DevStats {
    /// Serialises moving a connection's counts here against readers, so that a reader
    /// sees them either at the QP or here, never in both or neither.
    #[pin]
    fold: Mutex<()>,
    totals: [AtomicU64; COUNT],
}

impl DevStats {
    /// All zero.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            fold <- new_mutex!((), "DevStats::fold"),
            totals: [const { AtomicU64::new(0) }; COUNT],
        })
    }

    /// Counts one `c` (a rare event: any context).
    pub(crate) fn event(&self, c: Counter) {
        if let Some(a) = self.totals.get(c.index()) {
            a.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Moves `qp`'s counts here (its connection ended; the caller holds the QP's state
    /// lock, so nothing adds to them meanwhile).
    pub(crate) fn retire(&self, qp: &QpStats) {
        let _g = self.fold.lock();
        for (t, q) in self.totals.iter().zip(qp.0.iter()) {
            t.fetch_add(q.swap(0, Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// The current values into `out` (in [`Counter`]'s order): these totals plus what
    /// `live` adds, the counts of the connections still up, each through [`add_live`].
    pub(crate) fn read(&self, out: &mut [u64], live: impl FnOnce(&mut [u64])) {
        let _g = self.fold.lock();
        for (o, t) in out.iter_mut().zip(self.totals.iter()) {
            *o = t.load(Ordering::Relaxed);
        }
        live(out);
    }
}

/// Adds a live connection's counts to `out` (inside [`DevStats::read`]).
pub(crate) fn add_live(out: &mut [u64], qp: &QpStats) {
    for (o, q) in out.iter_mut().zip(qp.0.iter()) {
        *o = o.wrapping_add(q.load(Ordering::Relaxed));
    }
}
