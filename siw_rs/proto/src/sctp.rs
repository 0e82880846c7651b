// SPDX-License-Identifier: GPL-2.0

//! DDP over SCTP (RFC 5043): the adaptation layer's messages, its DDP Stream Session, and
//! the DDP Source Sequence Number (DDP-SSN) that puts unordered SCTP messages back in order.
//!
//! Every SCTP user message of a DDP stream starts with a 16-bit DDP-SSN (section 5.2.1),
//! then either a DDP segment (payload protocol identifier [`PPID_DDP_SEGMENT`], section
//! 5.2.2) or a DDP Stream Session Control message ([`PPID_SESSION_CONTROL`], section
//! 5.2.3): a 16-bit function code and, for Initiate, Accept and Reject, the ULP's private
//! data. The DDP-SSN counts every message a side sends in one session from 0, with no gap;
//! SCTP delivers them unordered (section 10), so the receiver puts them back in DDP-SSN
//! order ([`SsnWindow`]) before it looks at them ([`Session::receive`]).
//!
//! A session (section 6) runs Initiate (active side) and Accept or Reject (passive side),
//! then DDP segments from both sides, and ends with a Terminate from at least one side.
//! Anything else in DDP-SSN order ends it (section 6.1).
//!
//! What this module does not do: SCTP itself (association setup with the Adaptation
//! Indication [`ADAPTATION_DDP`], section 5.1, is the socket's), and buffering messages
//! that came early (the caller holds them, within its bound, until [`SsnWindow`] says
//! they are next).

use super::wire::{Reader, Writer};

/// The SCTP Adaptation Indication of DDP (section 5.1): both INIT and INIT-ACK must carry
/// it; an association without it carries no DDP (section 11.1).
pub const ADAPTATION_DDP: u32 = 0x0000_0001;
/// Payload protocol identifier of a DDP Segment Chunk (section 5.2).
pub const PPID_DDP_SEGMENT: u32 = 16;
/// Payload protocol identifier of a DDP Stream Session Control message (section 5.2).
pub const PPID_SESSION_CONTROL: u32 = 17;
/// The DDP-SSN in front of every message.
pub const SSN_LEN: usize = 2;
/// Function code and DDP-SSN: a Session Control message without private data.
pub const CONTROL_HDR_LEN: usize = 4;
/// Most private data a Session Control message carries (section 5.2.3).
pub const PD_MAX: usize = 512;
/// The smallest maximum DDP segment an adaptation layer may announce (section 9): room for
/// a Session Control message with [`PD_MAX`] octets of private data.
pub const MIN_MAX_SEGMENT: usize = CONTROL_HDR_LEN + PD_MAX;
/// How far ahead of the next expected DDP-SSN a message may be (section 10: a sender has
/// fewer than 32768 messages of a stream in flight).
pub const SSN_WINDOW: u16 = 32767;

/// A DDP Stream Session Control function code (section 5.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Function {
    /// DDP Stream Session Initiate (0x001), from the active side.
    Initiate,
    /// DDP Stream Session Accept (0x002), from the passive side.
    Accept,
    /// DDP Stream Session Reject (0x003), from the passive side, at its ULP's word.
    Reject,
    /// DDP Stream Session Terminate (0x004): the last message of a side.
    Terminate,
}

impl Function {
    /// The function code on the wire.
    pub const fn code(self) -> u16 {
        match self {
            Self::Initiate => 1,
            Self::Accept => 2,
            Self::Reject => 3,
            Self::Terminate => 4,
        }
    }

    /// The function of a wire code.
    pub const fn from_code(code: u16) -> Option<Self> {
        match code {
            1 => Some(Self::Initiate),
            2 => Some(Self::Accept),
            3 => Some(Self::Reject),
            4 => Some(Self::Terminate),
            _ => None,
        }
    }

    /// Whether the message carries the ULP's private data (all but Terminate).
    pub const fn has_private_data(self) -> bool {
        !matches!(self, Self::Terminate)
    }
}

/// Why a message breaks the adaptation layer's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SctpError {
    /// Shorter than its fixed part.
    Truncated,
    /// A payload protocol identifier this adaptation does not define.
    UnknownPpid(u32),
    /// A function code that section 5.2.3 does not define.
    UnknownFunction(u16),
    /// More than [`PD_MAX`] octets of private data, or private data on a Terminate.
    BadPrivateData,
    /// Not the next message of the session in any legal sequence (section 6.1).
    OutOfSequence,
    /// A DDP-SSN that no message in flight can have (section 10).
    SsnOutOfWindow,
    /// An output buffer too small.
    NoRoom,
}

/// A DDP Stream Session Control message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Control<'a> {
    /// Its DDP-SSN.
    pub ssn: u16,
    /// Its function.
    pub function: Function,
    /// The ULP's private data (empty for Terminate).
    pub private_data: &'a [u8],
}

impl<'a> Control<'a> {
    /// Parses a whole Session Control message (the SCTP message, DDP-SSN first).
    pub fn parse(msg: &'a [u8]) -> Result<Self, SctpError> {
        let mut r = Reader::new(msg);
        let ssn = r.u16().ok_or(SctpError::Truncated)?;
        let code = r.u16().ok_or(SctpError::Truncated)?;
        let function = Function::from_code(code).ok_or(SctpError::UnknownFunction(code))?;
        let private_data = r.rest();
        if private_data.len() > PD_MAX || (!function.has_private_data() && !private_data.is_empty())
        {
            return Err(SctpError::BadPrivateData);
        }
        Ok(Self {
            ssn,
            function,
            private_data,
        })
    }

    /// Writes the message to the start of `out`; returns its length.
    pub fn encode(&self, out: &mut [u8]) -> Result<usize, SctpError> {
        let pd = self.private_data;
        if pd.len() > PD_MAX || (!self.function.has_private_data() && !pd.is_empty()) {
            return Err(SctpError::BadPrivateData);
        }
        let mut w = Writer::new(out);
        w.u16(self.ssn).ok_or(SctpError::NoRoom)?;
        w.u16(self.function.code()).ok_or(SctpError::NoRoom)?;
        w.put(pd).ok_or(SctpError::NoRoom)?;
        Ok(w.len())
    }
}

/// The DDP-SSN of a message (its first two octets).
pub fn ssn_of(msg: &[u8]) -> Option<u16> {
    Reader::new(msg).u16()
}

/// Where a received DDP-SSN stands against the next one expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// The next one: hand it to the session now.
    Next,
    /// `n` messages early (1 ..= [`SSN_WINDOW`] - 1): hold it until the gap fills.
    Early(u16),
    /// Behind the next one, or further ahead than any message in flight can be: a
    /// duplicate or a lie (section 10 allows ending the stream).
    Invalid,
}

/// The receive side's DDP-SSN: the next expected (section 6.1, from 0 each session).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SsnWindow {
    next: u16,
}

impl SsnWindow {
    /// A window at the start of a session (DDP-SSN 0 expected).
    pub const fn new() -> Self {
        Self { next: 0 }
    }

    /// The DDP-SSN expected next.
    pub const fn next(&self) -> u16 {
        self.next
    }

    /// Classifies a received DDP-SSN; see [`Arrival`].
    pub const fn classify(&self, ssn: u16) -> Arrival {
        let ahead = ssn.wrapping_sub(self.next);
        if ahead == 0 {
            Arrival::Next
        } else if ahead < SSN_WINDOW {
            Arrival::Early(ahead)
        } else {
            Arrival::Invalid
        }
    }

    /// The expected message was taken.
    pub fn advance(&mut self) {
        self.next = self.next.wrapping_add(1);
    }
}

/// The DDP-SSNs a side hands out, from 0 each session, one per message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SsnCounter {
    next: u16,
}

impl SsnCounter {
    /// A counter at the start of a session.
    pub const fn new() -> Self {
        Self { next: 0 }
    }

    /// A counter whose next DDP-SSN is `next` (a session whose first messages were sent).
    pub const fn starting_at(next: u16) -> Self {
        Self { next }
    }

    /// The DDP-SSN the next message gets, not taken yet (a message that could not be sent
    /// must leave no gap).
    pub const fn peek(&self) -> u16 {
        self.next
    }

    /// The DDP-SSN of the next message, now taken.
    pub fn take(&mut self) -> u16 {
        let s = self.next;
        self.next = self.next.wrapping_add(1);
        s
    }
}

/// Which side of the session this end is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Sends the Initiate (the connecting side).
    Active,
    /// Answers it (the listening side).
    Passive,
}

/// Where a session is, as this end has seen it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Active: Initiate not sent yet. Passive: Initiate not received yet.
    Idle,
    /// Active: Initiate sent, waiting for the answer.
    InitiateSent,
    /// Passive: Initiate received; the ULP decides.
    InitiateReceived,
    /// Accepted: DDP segments flow.
    Open,
    /// Rejected (by the passive side's ULP): nothing more.
    Rejected,
    /// A Terminate came in: the peer sends nothing more.
    PeerTerminated,
    /// A message broke the rules (or this end gave up on the peer): the session must end,
    /// with this end's Terminate (section 6.1).
    Failed,
}

/// What an in-order received message is, once [`Session::receive`] found it legal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Received<'a> {
    /// The active side's Initiate, with its private data (passive side).
    Initiate(&'a [u8]),
    /// The passive side's Accept, with its private data (active side).
    Accepted(&'a [u8]),
    /// The passive side's Reject, with its private data (active side).
    Rejected(&'a [u8]),
    /// A DDP segment: the message after its DDP-SSN.
    Segment(&'a [u8]),
    /// The peer's Terminate: its last message.
    Terminated,
}

/// The legal sequences of section 6, for one end. Feed it the peer's messages in DDP-SSN
/// order; tell it of this end's Initiate, Accept and Reject.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    role: Role,
    phase: Phase,
}

impl Session {
    /// A session of `role` that has not begun.
    pub const fn new(role: Role) -> Self {
        Self {
            role,
            phase: Phase::Idle,
        }
    }

    /// Where it is.
    pub const fn phase(&self) -> Phase {
        self.phase
    }

    /// This end's role.
    pub const fn role(&self) -> Role {
        self.role
    }

    /// The active side sent its Initiate (DDP-SSN 0).
    pub fn initiate_sent(&mut self) -> Result<(), SctpError> {
        match (self.role, self.phase) {
            (Role::Active, Phase::Idle) => {
                self.phase = Phase::InitiateSent;
                Ok(())
            }
            _ => Err(SctpError::OutOfSequence),
        }
    }

    /// The passive side answered the Initiate: accepted (`true`) or rejected.
    pub fn answered(&mut self, accept: bool) -> Result<(), SctpError> {
        match (self.role, self.phase) {
            (Role::Passive, Phase::InitiateReceived) => {
                self.phase = if accept { Phase::Open } else { Phase::Rejected };
                Ok(())
            }
            _ => Err(SctpError::OutOfSequence),
        }
    }

    /// Takes the peer's next message in DDP-SSN order (`msg` whole, DDP-SSN first, with its
    /// payload protocol identifier). Anything no legal sequence allows is an error, after
    /// which the session must end.
    ///
    /// A DDP segment is legal only once the session is open: on the passive side, after it
    /// accepted. Section 6.6 lets an active side send segments as soon as SCTP acknowledged
    /// its Initiate; siw_rs's active side waits for the Accept, and its passive side holds
    /// no segment for a session its ULP has not accepted (it has nowhere to place one).
    pub fn receive<'a>(&mut self, ppid: u32, msg: &'a [u8]) -> Result<Received<'a>, SctpError> {
        let r = self.classify(ppid, msg);
        if r.is_err() {
            self.fail();
        }
        r
    }

    /// This end gives up on the session (a rule broken outside [`Session::receive`]: a
    /// DDP-SSN out of the window, a message too long, too many early ones).
    pub fn fail(&mut self) {
        self.phase = Phase::Failed;
    }

    /// Whether this end should end the session with its Terminate now: it is or was open,
    /// or it failed (an Initiate that is never answered, or one refused, needs none).
    pub const fn owes_terminate(&self) -> bool {
        matches!(
            self.phase,
            Phase::Open | Phase::PeerTerminated | Phase::Failed
        )
    }

    fn classify<'a>(&mut self, ppid: u32, msg: &'a [u8]) -> Result<Received<'a>, SctpError> {
        match ppid {
            PPID_DDP_SEGMENT => {
                let seg = msg.get(SSN_LEN..).ok_or(SctpError::Truncated)?;
                if self.phase != Phase::Open {
                    return Err(SctpError::OutOfSequence);
                }
                Ok(Received::Segment(seg))
            }
            PPID_SESSION_CONTROL => {
                let c = Control::parse(msg)?;
                let pd = c.private_data;
                match (self.role, self.phase, c.function) {
                    (_, Phase::Open, Function::Terminate)
                    | (Role::Active, Phase::InitiateSent, Function::Terminate) => {
                        self.phase = Phase::PeerTerminated;
                        Ok(Received::Terminated)
                    }
                    (Role::Passive, Phase::Idle, Function::Initiate) => {
                        self.phase = Phase::InitiateReceived;
                        Ok(Received::Initiate(pd))
                    }
                    (Role::Active, Phase::InitiateSent, Function::Accept) => {
                        self.phase = Phase::Open;
                        Ok(Received::Accepted(pd))
                    }
                    (Role::Active, Phase::InitiateSent, Function::Reject) => {
                        self.phase = Phase::Rejected;
                        Ok(Received::Rejected(pd))
                    }
                    _ => Err(SctpError::OutOfSequence),
                }
            }
            other => Err(SctpError::UnknownPpid(other)),
        }
    }
}
