// SPDX-License-Identifier: GPL-2.0

//! DDP over SCTP (RFC 5043): Session Control layouts byte by byte, the legal session
//! sequences of section 6 and what breaks them, the DDP-SSN window, and the receiver fed
//! whole SCTP messages.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use proptest::prelude::*;
use siw_proto::crc::SoftCrc32c;
use siw_proto::ddp::{DdpHdr, TaggedHdr, UntaggedHdr};
use siw_proto::error::TermError;
use siw_proto::rdmap::{FpduHeader, HeaderOptions, Opcode, RdmapHdr};
use siw_proto::rx::{Event, Receiver, RxConfig};
use siw_proto::sctp::*;

#[test]
fn code_points_are_the_rfcs() {
    // Sections 5.1, 5.2 and 12.
    assert_eq!(ADAPTATION_DDP, 1);
    assert_eq!(PPID_DDP_SEGMENT, 16);
    assert_eq!(PPID_SESSION_CONTROL, 17);
    assert_eq!(
        [
            Function::Initiate,
            Function::Accept,
            Function::Reject,
            Function::Terminate
        ]
        .map(Function::code),
        [1, 2, 3, 4]
    );
    assert_eq!(MIN_MAX_SEGMENT, 516);
}

#[test]
fn control_layout_byte_by_byte() {
    let mut b = [0u8; 600];
    let c = Control {
        ssn: 0x0102,
        function: Function::Accept,
        private_data: b"ab",
    };
    let n = c.encode(&mut b).unwrap();
    assert_eq!(&b[..n], &[0x01, 0x02, 0x00, 0x02, b'a', b'b']);
    assert_eq!(Control::parse(&b[..n]).unwrap(), c);
    let t = Control {
        ssn: 7,
        function: Function::Terminate,
        private_data: &[],
    };
    let n = t.encode(&mut b).unwrap();
    assert_eq!(&b[..n], &[0, 7, 0, 4]);
    assert_eq!(ssn_of(&b[..n]), Some(7));
}

#[test]
fn control_errors() {
    assert_eq!(Control::parse(&[0, 0, 0]), Err(SctpError::Truncated));
    assert_eq!(
        Control::parse(&[0, 0, 0, 5]),
        Err(SctpError::UnknownFunction(5))
    );
    assert_eq!(
        Control::parse(&[0, 0, 0, 4, 1]),
        Err(SctpError::BadPrivateData)
    );
    let mut m = vec![0, 0, 0, 1];
    m.extend(std::iter::repeat_n(9u8, PD_MAX));
    assert!(Control::parse(&m).is_ok());
    m.push(9);
    assert_eq!(Control::parse(&m), Err(SctpError::BadPrivateData));
    let big = [0u8; PD_MAX + 1];
    let c = Control {
        ssn: 0,
        function: Function::Initiate,
        private_data: &big,
    };
    assert_eq!(c.encode(&mut [0u8; 1024]), Err(SctpError::BadPrivateData));
    let c = Control {
        private_data: b"x",
        ..c
    };
    assert_eq!(c.encode(&mut [0u8; 4]), Err(SctpError::NoRoom));
}

fn ctl(ssn: u16, f: Function, pd: &[u8]) -> Vec<u8> {
    let mut b = [0u8; 600];
    let n = Control {
        ssn,
        function: f,
        private_data: pd,
    }
    .encode(&mut b)
    .unwrap();
    b[..n].to_vec()
}

#[test]
fn active_accepted_then_terminated() {
    let mut s = Session::new(Role::Active);
    // Nothing is legal before the Initiate went out.
    assert_eq!(
        s.clone().receive(PPID_SESSION_CONTROL, &ctl(0, Function::Accept, b"")),
        Err(SctpError::OutOfSequence)
    );
    s.initiate_sent().unwrap();
    assert_eq!(s.initiate_sent(), Err(SctpError::OutOfSequence));
    // A segment before the Accept: no legal sequence has one.
    assert_eq!(
        s.clone().receive(PPID_DDP_SEGMENT, &[0, 0, 1, 2]),
        Err(SctpError::OutOfSequence)
    );
    assert_eq!(
        s.receive(PPID_SESSION_CONTROL, &ctl(0, Function::Accept, b"pd")),
        Ok(Received::Accepted(b"pd"))
    );
    assert_eq!(s.phase(), Phase::Open);
    assert_eq!(
        s.receive(PPID_DDP_SEGMENT, &[0, 1, 0x41, 0x43]),
        Ok(Received::Segment(&[0x41, 0x43]))
    );
    // A second Accept is out of sequence, and ends the session.
    let mut s2 = s;
    assert_eq!(
        s2.receive(PPID_SESSION_CONTROL, &ctl(2, Function::Accept, b"")),
        Err(SctpError::OutOfSequence)
    );
    assert_eq!(s2.phase(), Phase::Failed);
    assert!(s2.owes_terminate());
    assert_eq!(
        s.receive(PPID_SESSION_CONTROL, &ctl(2, Function::Terminate, b"")),
        Ok(Received::Terminated)
    );
    // Nothing after the peer's Terminate.
    assert_eq!(
        s.receive(PPID_DDP_SEGMENT, &[0, 3, 0, 0]),
        Err(SctpError::OutOfSequence)
    );
}

#[test]
fn active_rejected() {
    let mut s = Session::new(Role::Active);
    s.initiate_sent().unwrap();
    assert_eq!(
        s.receive(PPID_SESSION_CONTROL, &ctl(0, Function::Reject, b"no")),
        Ok(Received::Rejected(b"no"))
    );
    assert_eq!(s.phase(), Phase::Rejected);
    assert!(!s.owes_terminate());
    assert!(s.receive(PPID_DDP_SEGMENT, &[0, 1, 0, 0]).is_err());
}

#[test]
fn passive_sequences() {
    let mut s = Session::new(Role::Passive);
    // Section 6.6: no segment may come before the Initiate.
    assert_eq!(
        s.clone().receive(PPID_DDP_SEGMENT, &[0, 0, 0, 0]),
        Err(SctpError::OutOfSequence)
    );
    assert_eq!(s.answered(true), Err(SctpError::OutOfSequence));
    assert_eq!(
        s.receive(PPID_SESSION_CONTROL, &ctl(0, Function::Initiate, b"hi")),
        Ok(Received::Initiate(b"hi"))
    );
    // A segment before this end accepted: refused (see `Session::receive`).
    assert_eq!(
        s.clone().receive(PPID_DDP_SEGMENT, &[0, 1, 0, 0]),
        Err(SctpError::OutOfSequence)
    );
    // A second Initiate in the same session.
    assert_eq!(
        s.clone()
            .receive(PPID_SESSION_CONTROL, &ctl(1, Function::Initiate, b"")),
        Err(SctpError::OutOfSequence)
    );
    let mut rejected = s;
    rejected.answered(false).unwrap();
    assert_eq!(rejected.phase(), Phase::Rejected);
    s.answered(true).unwrap();
    assert_eq!(s.answered(true), Err(SctpError::OutOfSequence));
    assert_eq!(
        s.receive(PPID_DDP_SEGMENT, &[0, 1, 9]),
        Ok(Received::Segment(&[9]))
    );
    // A message too short for its DDP-SSN, and an unknown PPID.
    assert_eq!(
        s.clone().receive(PPID_DDP_SEGMENT, &[0]),
        Err(SctpError::Truncated)
    );
    assert_eq!(s.receive(0, &[0, 2]), Err(SctpError::UnknownPpid(0)));
    assert_eq!(s.phase(), Phase::Failed);
}

#[test]
fn ssn_window() {
    let mut w = SsnWindow::new();
    assert_eq!(w.classify(0), Arrival::Next);
    assert_eq!(w.classify(1), Arrival::Early(1));
    assert_eq!(w.classify(32766), Arrival::Early(32766));
    assert_eq!(w.classify(32767), Arrival::Invalid);
    assert_eq!(w.classify(65535), Arrival::Invalid);
    for _ in 0..65535 {
        w.advance();
    }
    assert_eq!(w.next(), 65535);
    // Across the wrap.
    assert_eq!(w.classify(65535), Arrival::Next);
    assert_eq!(w.classify(0), Arrival::Early(1));
    assert_eq!(w.classify(65534), Arrival::Invalid);
    let mut c = SsnCounter::new();
    assert_eq!((c.take(), c.take()), (0, 1));
    let mut c = SsnCounter::starting_at(65535);
    assert_eq!((c.take(), c.take()), (65535, 0));
}

proptest! {
    /// Messages delivered in any order come out in DDP-SSN order once the caller holds
    /// the early ones: what the driver's reorder buffer does with [`SsnWindow`].
    #[test]
    fn window_restores_order(start in any::<u16>(), perm in Just((0u16..64).collect::<Vec<_>>()).prop_shuffle()) {
        let mut w = SsnWindow::new();
        for _ in 0..start { w.advance(); }
        let mut held: Vec<u16> = Vec::new();
        let mut out = Vec::new();
        for p in perm {
            let ssn = start.wrapping_add(p);
            match w.classify(ssn) {
                Arrival::Next => {
                    out.push(ssn);
                    w.advance();
                    while let Some(i) = held.iter().position(|&h| h == w.next()) {
                        out.push(held.swap_remove(i));
                        w.advance();
                    }
                }
                Arrival::Early(d) => { prop_assert_eq!(d, p - (w.next().wrapping_sub(start))); held.push(ssn) }
                Arrival::Invalid => prop_assert!(false, "in-window SSN refused"),
            }
        }
        prop_assert!(held.is_empty());
        let want: Vec<u16> = (0..64).map(|i| start.wrapping_add(i)).collect();
        prop_assert_eq!(out, want);
    }
}

const SCTP: RxConfig = RxConfig {
    crc: false,
    markers: false,
    header: HeaderOptions { rfc7306: false },
    sctp: true,
};

/// A DDP segment as an SCTP message: DDP-SSN, then the header after MPA's length field,
/// then the payload.
fn message(ssn: u16, h: &FpduHeader, payload: &[u8]) -> Vec<u8> {
    let mut b = [0u8; 72];
    let n = h.encode(&mut b).unwrap();
    let mut m = ssn.to_be_bytes().to_vec();
    m.extend_from_slice(&b[2..n]);
    m.extend_from_slice(payload);
    m
}

fn send_hdr(msn: u32, mo: u32, last: bool, payload: usize) -> FpduHeader {
    FpduHeader {
        ulpdu_len: (Opcode::Send.header_len() - 2 + payload) as u16,
        last,
        opcode: Opcode::Send,
        ddp: DdpHdr::Untagged(UntaggedHdr {
            rsvd_ulp: 0,
            qn: 0,
            msn,
            mo,
        }),
        rdmap: RdmapHdr::None,
    }
}

/// Feeds whole messages; returns (header, payload) per segment and the first error.
fn feed_messages(
    rx: &mut Receiver<SoftCrc32c>,
    msgs: &[Vec<u8>],
) -> (Vec<(FpduHeader, Vec<u8>)>, Option<TermError>) {
    let mut out = Vec::new();
    for m in msgs {
        if let Err(e) = rx.start_segment(m.len() - SSN_LEN) {
            return (out, Some(e));
        }
        let mut rest: &[u8] = m;
        let mut ended = false;
        loop {
            match rx.feed(rest) {
                Err(e) => return (out, Some(e)),
                Ok(step) => {
                    rest = &rest[step.consumed..];
                    match step.event {
                        Some(Event::Header { .. }) => {
                            out.push((*rx.current_header().unwrap(), Vec::new()))
                        }
                        Some(Event::Payload(p)) => out.last_mut().unwrap().1.extend_from_slice(p),
                        Some(Event::End) => {
                            ended = true;
                            break;
                        }
                        Some(Event::Fpdu { .. }) => panic!("SCTP segments are streamed"),
                        None => break,
                    }
                }
            }
        }
        assert!(ended, "a whole message ends its segment");
        assert!(rest.is_empty(), "a whole message is consumed");
        assert!(rx.at_fpdu_boundary());
    }
    (out, None)
}

#[test]
fn receiver_takes_whole_messages() {
    let mut rx = Receiver::new(SCTP, SoftCrc32c::new());
    let a: Vec<u8> = (0..100u8).collect();
    let b: Vec<u8> = (100..103u8).collect();
    let w = FpduHeader {
        ulpdu_len: 14 + 5,
        last: true,
        opcode: Opcode::RdmaWrite,
        ddp: DdpHdr::Tagged(TaggedHdr { stag: 0x1234, to: 77 }),
        rdmap: RdmapHdr::None,
    };
    // Two segments of one Send (sizes not multiples of 4: no pad), a Write, a
    // zero-length Send.
    let msgs = vec![
        message(1, &send_hdr(1, 0, false, 100), &a),
        message(2, &send_hdr(1, 100, true, 3), &b),
        message(3, &w, b"hello"),
        message(4, &send_hdr(2, 0, true, 0), &[]),
    ];
    let (segs, err) = feed_messages(&mut rx, &msgs);
    assert_eq!(err, None);
    assert_eq!(segs.len(), 4);
    assert_eq!(segs[0].1, a);
    assert_eq!(segs[1].1, b);
    assert_eq!(segs[2].0.opcode, Opcode::RdmaWrite);
    assert_eq!(segs[2].1, b"hello");
    assert!(segs[3].1.is_empty());
    assert_eq!(rx.expected_msn(0), Some(3));
    // The raw header a Terminate copies carries the segment's length, not its DDP-SSN.
    let len = (Opcode::Send.header_len() - 2) as u16;
    assert_eq!(&rx.raw_header()[..2], &len.to_be_bytes());
}

#[test]
fn receiver_sctp_errors() {
    // Fed without announcing the message.
    let mut rx = Receiver::new(SCTP, SoftCrc32c::new());
    assert_eq!(
        rx.feed(&message(1, &send_hdr(1, 0, true, 0), &[])).err(),
        Some(TermError::LlpLocalCatastrophic)
    );
    // Announced in MPA mode.
    let mut rx = Receiver::new(RxConfig { sctp: false, ..SCTP }, SoftCrc32c::new());
    assert_eq!(rx.start_segment(16), Err(TermError::LlpLocalCatastrophic));
    // A message shorter than its header: the header's own length rule.
    let mut rx = Receiver::new(SCTP, SoftCrc32c::new());
    let m = message(1, &send_hdr(1, 0, true, 0), &[]);
    let (_, err) = feed_messages(&mut rx, &[m[..10].to_vec()]);
    assert!(err.is_some());
    // A segment longer than the field can say.
    let mut rx = Receiver::new(SCTP, SoftCrc32c::new());
    assert_eq!(rx.start_segment(70_000), Err(TermError::DdpUntaggedTooLong));
    // Stream rules hold as over MPA: a wrong MSN.
    let mut rx = Receiver::new(SCTP, SoftCrc32c::new());
    let (_, err) = feed_messages(&mut rx, &[message(1, &send_hdr(2, 0, true, 0), &[])]);
    assert_eq!(err, Some(TermError::DdpUntaggedMsnRange));
}

proptest! {
    /// Any message: the receiver either takes it whole, ending at a boundary, or fails;
    /// it never panics and never asks for more input than the message.
    #[test]
    fn receiver_never_overruns(msgs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..80), 1..8)) {
        let mut rx = Receiver::new(SCTP, SoftCrc32c::new());
        for m in &msgs {
            if m.len() < SSN_LEN || rx.start_segment(m.len() - SSN_LEN).is_err() { break; }
            let mut rest: &[u8] = m;
            let mut failed = false;
            loop {
                match rx.feed(rest) {
                    Err(_) => { failed = true; break; }
                    Ok(step) => {
                        rest = &rest[step.consumed..];
                        if step.event == Some(Event::End) || step.event.is_none() { break; }
                    }
                }
            }
            if failed { break; }
            prop_assert!(rest.is_empty());
            prop_assert!(rx.at_fpdu_boundary());
        }
    }
}
