// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the streaming receiver with hostile bytes.
//!
//! Input: byte 0 selects CRC, markers and RFC 7306; byte 1 seeds the chunk sizes; the
//! rest is the TCP stream. The stream is received whole and cut into chunks; both
//! runs must give the same events (payloads merged per FPDU) and the same error, every
//! call must make progress, and nothing may panic.
//!
//! The TCP stream is received twice more as memory that changes under the receiver (the
//! host tests' `Tracked` input, `tests/common`: an octet read again reads differently, as
//! a page someone writes meanwhile would), whole and in chunks: nothing may panic, and
//! what the receiver reports must hold together (no payload longer than its header says,
//! an FPDU ending with as much as it announced). (That a valid stream, whole, gives the same events, every octet read once,
//! is a property test: `read_once_input_gives_the_same_events`.)
//!
//! With bit 3 of byte 0, DDP over SCTP (RFC 5043) instead: the rest is SCTP messages, each
//! a 2-byte length, a PPID byte (its value, or 16/17 for its low bit) and the message;
//! bit 4 makes this end the session's passive side. Messages go through the session's
//! rules ([`Session`]) and, as DDP segments, through the receiver in SCTP mode, whole or
//! in chunks, with the same outcome.
#![no_main]

use libfuzzer_sys::fuzz_target;
use siw_proto::crc::SoftCrc32c;
use siw_proto::error::TermError;
use siw_proto::rdmap::{FpduHeader, HeaderOptions};
use siw_proto::rx::{Event, Receiver, RxConfig};

#[path = "../../tests/common/mod.rs"]
mod common;
use siw_proto::sctp::{Received, Role, Session, SSN_LEN};

#[derive(Debug, PartialEq)]
enum Ev {
    Header(FpduHeader, bool),
    Payload(Vec<u8>),
    End,
}

/// DDP over SCTP: the messages of `data` (see the module documentation) through a session
/// and a receiver; returns the events and where it stopped.
fn run_sctp(cfg: RxConfig, role: Role, data: &[u8], seed: u8) -> (Vec<Ev>, Option<TermError>) {
    let mut rx = Receiver::new(cfg, SoftCrc32c::new());
    let mut session = Session::new(role);
    if role == Role::Active {
        session.initiate_sent().unwrap();
    }
    let mut evs = Vec::new();
    let mut rest = data;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let ppid = match rest[2] {
            p @ (0..=15 | 18..) => 16 + u32::from(p & 1),
            p => u32::from(p),
        };
        rest = &rest[3..];
        let msg = &rest[..len.min(rest.len())];
        rest = &rest[msg.len()..];
        match session.receive(ppid, msg) {
            Ok(Received::Initiate(_)) => {
                let _ = session.answered(true);
            }
            Ok(Received::Segment(_)) => {
                if let Err(e) = rx.start_segment(msg.len() - SSN_LEN) {
                    return (evs, Some(e));
                }
                let (mut e, err) = run_on(&mut rx, msg, seed, true);
                evs.append(&mut e);
                if err.is_some() {
                    return (evs, err);
                }
                assert!(rx.at_fpdu_boundary());
            }
            Ok(_) => {}
            Err(_) => return (evs, None),
        }
    }
    (evs, None)
}

/// The stream as memory that changes once read (the host tests' `Tracked` input), in
/// chunks from `seed` (0: whole); `run_chunks_tracked` checks that the events hold together.
fn run_changing(cfg: RxConfig, data: &[u8], mut seed: u8) {
    let mut chunks = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        let n = if seed == 0 {
            rest.len()
        } else {
            seed = seed.wrapping_mul(37).wrapping_add(11);
            (usize::from(seed) % 23 + 1).min(rest.len())
        };
        chunks.push(&rest[..n]);
        rest = &rest[n..];
    }
    let _ = common::run_chunks_tracked(cfg, &chunks, true);
}

fn run(cfg: RxConfig, data: &[u8], seed: u8) -> (Vec<Ev>, Option<TermError>) {
    let mut rx = Receiver::new(cfg, SoftCrc32c::new());
    run_on(&mut rx, data, seed, false)
}

fn run_on(
    rx: &mut Receiver<SoftCrc32c>,
    data: &[u8],
    mut seed: u8,
    segment: bool,
) -> (Vec<Ev>, Option<TermError>) {
    let mut evs = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        // Chunk sizes from a small LCG; seed 0 means "all at once".
        let n = if seed == 0 {
            rest.len()
        } else {
            seed = seed.wrapping_mul(37).wrapping_add(11);
            (usize::from(seed) % 23 + 1).min(rest.len())
        };
        let mut chunk = &rest[..n];
        rest = &rest[n..];
        while !chunk.is_empty() {
            match rx.feed(chunk) {
                Ok(step) => {
                    assert!(step.consumed > 0 && step.consumed <= chunk.len());
                    chunk = &chunk[step.consumed..];
                    match step.event {
                        Some(Event::Header { first }) => {
                            let header = *rx.current_header().expect("header event");
                            assert_eq!(rx.raw_header().len(), header.header_len());
                            evs.push(Ev::Header(header, first))
                        }
                        Some(Event::Payload(p)) => match evs.last_mut() {
                            Some(Ev::Payload(v)) => v.extend_from_slice(p),
                            _ => evs.push(Ev::Payload(p.to_vec())),
                        },
                        Some(Event::End) => evs.push(Ev::End),
                        Some(Event::Fpdu { first, payload }) => {
                            assert!(!segment, "SCTP segments are streamed");
                            let header = *rx.current_header().expect("fpdu event");
                            assert_eq!(rx.raw_header().len(), header.header_len());
                            assert!(rx.at_fpdu_boundary());
                            evs.push(Ev::Header(header, first));
                            if !payload.is_empty() {
                                evs.push(Ev::Payload(payload.to_vec()));
                            }
                            evs.push(Ev::End);
                        }
                        None => assert!(chunk.is_empty()),
                    }
                }
                Err(e) => {
                    assert_eq!(rx.feed(b"more"), Err(e));
                    return (evs, Some(e));
                }
            }
        }
    }
    // An SCTP message's segment ends with its last octet: the end comes without input.
    if segment {
        match rx.feed(&[]) {
            Ok(step) => {
                assert_eq!(step.consumed, 0);
                if step.event == Some(Event::End) {
                    evs.push(Ev::End);
                }
            }
            Err(e) => return (evs, Some(e)),
        }
    }
    (evs, None)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let sctp = data[0] & 8 != 0;
    let cfg = RxConfig {
        crc: !sctp && data[0] & 1 != 0,
        markers: !sctp && data[0] & 2 != 0,
        header: HeaderOptions { rfc7306: data[0] & 4 != 0 },
        sctp,
    };
    let stream = &data[2..];
    if sctp {
        let role = if data[0] & 16 != 0 {
            Role::Passive
        } else {
            Role::Active
        };
        let whole = run_sctp(cfg, role, stream, 0);
        let split = run_sctp(cfg, role, stream, data[1] | 1);
        assert_eq!(whole, split);
        return;
    }
    let whole = run(cfg, stream, 0);
    let split = run(cfg, stream, data[1] | 1);
    assert_eq!(whole, split);
    run_changing(cfg, stream, 0);
    run_changing(cfg, stream, data[1] | 1);
});
