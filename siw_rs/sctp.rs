// SPDX-License-Identifier: GPL-2.0

//! The receive side of the SCTP adaptation of DDP (RFC 5043) on one connection: whole
//! messages from the socket, the Adaptation Indication check, and DDP-SSN order.
//!
//! SCTP delivers a DDP stream's messages unordered (section 10), so one may come before
//! an earlier one that SCTP is still retransmitting. [`SctpLink::next`] hands the caller
//! messages strictly in DDP-SSN order: one that is next comes straight from the receive
//! buffer; one that came early is copied aside until its turn. What is held aside is
//! bounded ([`EARLY_MAX_BYTES`], [`EARLY_MAX_MSGS`]): a peer that keeps a gap open longer
//! than that loses the connection rather than pinning kernel memory.
//!
//! The session's rules ([`Session`]) and the segments' contents are the caller's.

use crate::{
    glue::net::{
        sctp::adaptation_indication,
        tcp::Socket, //
    },
    proto::sctp::{
        Arrival, Role, SctpError, Session, SsnCounter, SsnWindow, ADAPTATION_DDP, SSN_LEN,
    },
    stats::Counter,
    table::Tables,
};
use kernel::prelude::*;

/// The largest DDP segment siw_rs sends over SCTP, and so the largest it takes (RFC 5043
/// section 9: larger segments are refused).
pub(crate) const MAX_SEGMENT: usize = 16 * 1024;
/// What a connection holds of messages that came before their turn.
pub(crate) const EARLY_MAX_BYTES: usize = 4 * 1024 * 1024;
/// ... and how many.
pub(crate) const EARLY_MAX_MSGS: usize = 4096;
/// Messages one pass of the data path takes before others get a turn.
pub(crate) const RX_BURST: u32 = 256;

/// Why the adaptation layer gives up on a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SctpFail {
    /// The association is not a DDP one (no DDP Adaptation Indication from the peer, RFC
    /// 5043 section 11.1): abort it, sending nothing.
    NotDdp,
    /// The session broke a rule of sections 5, 6, 9 or 10: end it.
    Session(SctpError),
    /// More came early than [`EARLY_MAX_BYTES`] or [`EARLY_MAX_MSGS`] allow.
    TooMuchEarly,
    /// The socket failed.
    Socket(Error),
}

/// Where the next message in order is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum At {
    /// In the receive buffer.
    Buf,
    /// Held aside, at this index.
    Early(usize),
}

/// A message held aside until its turn.
struct Early {
    ssn: u16,
    ppid: u32,
    msg: KVec<u8>,
}

/// One connection's adaptation layer state.
pub(crate) struct SctpLink {
    /// The session's rules.
    pub(crate) session: Session,
    /// The DDP-SSNs of what we send: Session Control messages and DDP segments alike.
    pub(crate) tx_ssn: SsnCounter,
    window: SsnWindow,
    /// The peer's INIT or INIT-ACK carried the DDP Adaptation Indication.
    adaptation: bool,
    /// The message coming in; `have` octets of it so far (SCTP may hand one over in parts).
    buf: KVec<u8>,
    have: usize,
    /// The message in the buffer is whole.
    whole: bool,
    ppid: u32,
    notification: bool,
    early: KVec<Early>,
    early_bytes: usize,
    /// The private data of our Initiate (active side), kept until it is sent.
    pub(crate) pd: KVec<u8>,
    /// Active side: the ULP's ORD; both sides: the largest DDP segment to send.
    pub(crate) ord: u16,
    pub(crate) max_segment: u16,
    /// Give up without a word: the association is aborted on release.
    pub(crate) abort: bool,
}

impl SctpLink {
    /// The state of a new connection of `role`.
    pub(crate) fn new(role: Role) -> Result<KBox<Self>> {
        let buf = KVec::from_elem(0u8, SSN_LEN + MAX_SEGMENT, GFP_KERNEL)?;
        Ok(KBox::new(
            Self {
                session: Session::new(role),
                tx_ssn: SsnCounter::new(),
                window: SsnWindow::new(),
                adaptation: false,
                buf,
                have: 0,
                whole: false,
                ppid: 0,
                notification: false,
                early: KVec::new(),
                early_bytes: 0,
                pd: KVec::new(),
                ord: 0,
                max_segment: 0,
                abort: false,
            },
            GFP_KERNEL,
        )?)
    }

    /// Reads until a whole message is in the buffer (`Ok(true)`) or nothing more is queued.
    fn read_message(&mut self, sock: &Socket) -> Result<bool, SctpFail> {
        loop {
            let Some(room) = self.buf.get_mut(self.have..).filter(|r| !r.is_empty()) else {
                // Full, and the message goes on: longer than any segment we take.
                return Err(SctpFail::Session(SctpError::NoRoom));
            };
            let r = match sock.recv_message(room) {
                Ok(r) => r,
                Err(e) if e == EAGAIN => return Ok(false),
                Err(e) => return Err(SctpFail::Socket(e)),
            };
            if r.len == 0 && !r.end {
                // The peer shut down and all is read: the socket's state says so.
                return Ok(false);
            }
            if self.have == 0 {
                self.ppid = r.ppid;
                self.notification = r.notification;
            }
            self.have = self.have.saturating_add(r.len);
            if r.end {
                self.whole = true;
                return Ok(true);
            }
        }
    }

    /// Finds the next message in DDP-SSN order: `Ok(None)` when it has not come yet. Reads
    /// what the socket holds meanwhile, setting aside what came early. Once the caller
    /// took the message ([`SctpLink::message`]), it calls [`SctpLink::consume`].
    ///
    /// Each message held aside counts in `tables`' [`Counter::SctpHeld`].
    pub(crate) fn next(&mut self, sock: &Socket, tables: &Tables) -> Result<Option<At>, SctpFail> {
        let want = self.window.next();
        if let Some(i) = self.early.iter().position(|e| e.ssn == want) {
            return Ok(Some(At::Early(i)));
        }
        loop {
            if !self.whole && !self.read_message(sock)? {
                return Ok(None);
            }
            let msg = self.buf.get(..self.have).unwrap_or(&[]);
            if self.notification {
                if adaptation_indication(msg) == Some(ADAPTATION_DDP) {
                    self.adaptation = true;
                }
                self.drop_message();
                continue;
            }
            // RFC 5043 section 11.1: without the DDP indication, no DDP on this association.
            if !self.adaptation {
                return Err(SctpFail::NotDdp);
            }
            let ssn =
                crate::proto::sctp::ssn_of(msg).ok_or(SctpFail::Session(SctpError::Truncated))?;
            match self.window.classify(ssn) {
                Arrival::Next => return Ok(Some(At::Buf)),
                Arrival::Invalid => return Err(SctpFail::Session(SctpError::SsnOutOfWindow)),
                Arrival::Early(_) => {
                    if self.early.iter().any(|e| e.ssn == ssn) {
                        return Err(SctpFail::Session(SctpError::SsnOutOfWindow));
                    }
                    let bytes = self.early_bytes.saturating_add(msg.len());
                    if bytes > EARLY_MAX_BYTES || self.early.len() >= EARLY_MAX_MSGS {
                        return Err(SctpFail::TooMuchEarly);
                    }
                    let mut copy = KVec::new();
                    copy.extend_from_slice(msg, GFP_KERNEL)
                        .map_err(|_| SctpFail::TooMuchEarly)?;
                    self.early
                        .push(
                            Early {
                                ssn,
                                ppid: self.ppid,
                                msg: copy,
                            },
                            GFP_KERNEL,
                        )
                        .map_err(|_| SctpFail::TooMuchEarly)?;
                    self.early_bytes = bytes;
                    self.drop_message();
                    tables.count(Counter::SctpHeld);
                }
            }
        }
    }

    /// The session and the message at `at` (DDP-SSN first) with its payload protocol
    /// identifier, to hand the one to the other.
    pub(crate) fn message(&mut self, at: At) -> (&mut Session, u32, &[u8]) {
        match at {
            At::Buf => (
                &mut self.session,
                self.ppid,
                self.buf.get(..self.have).unwrap_or(&[]),
            ),
            At::Early(i) => match self.early.get(i) {
                Some(e) => (&mut self.session, e.ppid, &e.msg),
                None => (&mut self.session, 0, &[]),
            },
        }
    }

    /// Empties the receive buffer.
    fn drop_message(&mut self) {
        self.have = 0;
        self.whole = false;
    }

    /// The message at `at` was taken: the next DDP-SSN is due.
    pub(crate) fn consume(&mut self, at: At) {
        match at {
            At::Buf => self.drop_message(),
            At::Early(i) => {
                if let Ok(e) = self.early.remove(i) {
                    self.early_bytes = self.early_bytes.saturating_sub(e.msg.len());
                }
            }
        }
        self.window.advance();
    }
}
