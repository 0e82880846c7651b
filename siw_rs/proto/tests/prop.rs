// SPDX-License-Identifier: GPL-2.0

//! Property tests: encode then parse is the identity, any split of a valid stream
//! gives the same events, arbitrary bytes never panic, and segmentation plus
//! reassembly is lossless.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use common::{run, run_split, run_split_tracked, Ev, Reads, Tx};
use proptest::prelude::*;
use siw_proto::crc::{crc32c, crc32c_update, Crc32c, SoftCrc32c};
use siw_proto::ddp::{DdpHdr, TaggedHdr, UntaggedHdr};
use siw_proto::error::{HeaderCopy, TermError};
use siw_proto::fpdu::mulpdu;
use siw_proto::mpa::*;
use siw_proto::rdmap::*;
use siw_proto::rx::{Receiver, RxConfig};
use siw_proto::segment::{first_wire_len, Message, Segmenter, Target};

fn cfg(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 256,
        ..ProptestConfig::default()
    }
}

/// Any opcode, with an RDMAP header that fits it.
fn arb_op_rdmap() -> impl Strategy<Value = (Opcode, RdmapHdr)> {
    proptest::sample::select(Opcode::ALL.to_vec()).prop_flat_map(|op| (Just(op), arb_rdmap(op)))
}

/// A message length: often tiny (zero-length and single-segment cases), else up to a few
/// segments.
fn arb_message_len() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..16, 0u32..5000]
}

fn arb_rdmap(op: Opcode) -> BoxedStrategy<RdmapHdr> {
    match op {
        Opcode::ReadRequest => (
            any::<u32>(),
            any::<u64>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
        )
            .prop_map(|(a, b, c, d, e)| {
                RdmapHdr::ReadRequest(ReadRequest {
                    sink_stag: a,
                    sink_to: b,
                    size: c,
                    src_stag: d,
                    src_to: e,
                })
            })
            .boxed(),
        Opcode::Terminate => (
            0u8..16,
            0u8..16,
            any::<u8>(),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(layer, etype, ecode, m, d, r)| {
                RdmapHdr::Terminate(TerminateHdr {
                    layer,
                    etype,
                    ecode,
                    m,
                    d,
                    r,
                })
            })
            .boxed(),
        Opcode::ImmediateData | Opcode::ImmediateDataSe => {
            any::<[u8; 8]>().prop_map(RdmapHdr::Immediate).boxed()
        }
        Opcode::AtomicRequest => (
            0u8..16,
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            any::<[u64; 4]>(),
        )
            .prop_map(|(aop, req_id, stag, to, v)| {
                RdmapHdr::AtomicRequest(AtomicRequest {
                    aop,
                    req_id,
                    stag,
                    to,
                    add_swap: v[0],
                    add_swap_mask: v[1],
                    compare: v[2],
                    compare_mask: v[3],
                })
            })
            .boxed(),
        Opcode::AtomicResponse => (any::<u32>(), any::<u64>())
            .prop_map(|(req_id, orig)| RdmapHdr::AtomicResponse(AtomicResponse { req_id, orig }))
            .boxed(),
        _ => Just(RdmapHdr::None).boxed(),
    }
}

/// Any header that passes the stateless checks.
fn arb_header() -> impl Strategy<Value = FpduHeader> {
    proptest::sample::select(Opcode::ALL.to_vec()).prop_flat_map(|op| {
        let hl = op.header_len() - 2;
        let max_pl = (op.max_payload().min(65535 - hl as u32)) as usize;
        (
            arb_rdmap(op),
            0..=max_pl,
            any::<bool>(),
            any::<u32>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
        )
            .prop_map(move |(rdmap, pl, last, a, msn, mo, to)| {
                let header_only = op.max_payload() != u32::MAX;
                let ddp = match op.queue() {
                    None => DdpHdr::Tagged(TaggedHdr {
                        stag: a,
                        to: to.min(u64::MAX - pl as u64),
                    }),
                    Some(qn) => DdpHdr::Untagged(UntaggedHdr {
                        rsvd_ulp: a,
                        qn,
                        msn,
                        mo: if header_only { 0 } else { mo },
                    }),
                };
                FpduHeader {
                    ulpdu_len: (hl + pl) as u16,
                    last: last || header_only,
                    opcode: op,
                    ddp,
                    rdmap,
                }
            })
    })
}

fn arb_policy() -> impl Strategy<Value = MpaPolicy> {
    (
        1u8..=2,
        any::<[bool; 7]>(),
        any::<[bool; 3]>(),
        (0u16..300, 0u16..300, 0u16..300, 0u16..300),
    )
        .prop_map(
            |(revision, f, rtr, (ird, ord, max_ird, max_ord))| MpaPolicy {
                revision,
                crc: f[0],
                markers_rx: f[1],
                markers_tx: f[2],
                p2p: f[3],
                rtr: RtrSet {
                    send: rtr[0],
                    write: rtr[1],
                    read: rtr[2],
                },
                ird,
                ord,
                max_ird,
                max_ord,
                relaxed: f[4],
                gso_exp: f[5],
                rfc7306: f[6],
                max_private_data: PD_MAX_ULP,
            },
        )
}

#[derive(Clone, Debug)]
struct Msg {
    op: Opcode,
    len: usize,
    seed: u8,
}

fn arb_msgs() -> impl Strategy<Value = Vec<Msg>> {
    proptest::collection::vec(
        (
            proptest::sample::select(vec![
                Opcode::Send,
                Opcode::SendSe,
                Opcode::SendInvalidate,
                Opcode::RdmaWrite,
                Opcode::ReadResponse,
            ]),
            prop_oneof![0usize..16, 0usize..3000],
            any::<u8>(),
        )
            .prop_map(|(op, len, seed)| Msg { op, len, seed }),
        1..8,
    )
}

fn build_stream(
    msgs: &[Msg],
    mulpdu: u16,
    crc: bool,
    markers: bool,
) -> (Vec<u8>, Vec<(Opcode, Vec<u8>)>) {
    let mut tx = Tx::new(crc, markers);
    let mut msn = 1;
    let mut sent = Vec::new();
    for m in msgs {
        let data: Vec<u8> = (0..m.len)
            .map(|i| (i as u8).wrapping_mul(13) ^ m.seed)
            .collect();
        let target = if m.op.is_tagged() {
            Target::Tagged {
                stag: u32::from(m.seed),
                to: u64::from(m.seed) << 20,
            }
        } else {
            msn += 1;
            Target::Untagged {
                qn: 0,
                msn: msn - 1,
                rsvd_ulp: u32::from(m.op.invalidates()) * 0x55,
            }
        };
        tx.message(
            Message {
                opcode: m.op,
                target,
                rdmap: RdmapHdr::None,
                len: m.len as u32,
            },
            &data,
            mulpdu,
        );
        sent.push((m.op, data));
    }
    (tx.out, sent)
}

/// The payload is never copied by the receiver; with the CRC on, the CRC runs over each
/// payload octet once where it lies, and over no other octet more than once.
fn check_reads(reads: &Reads, crc: bool) -> Result<(), TestCaseError> {
    for (i, &payload) in reads.payload.iter().enumerate() {
        prop_assert!(
            !payload || reads.copies[i] == 0,
            "payload octet {} copied",
            i
        );
        let want = if payload && crc { 1 } else { 0 };
        prop_assert!(
            reads.crc[i] == want || (!payload && crc && reads.crc[i] == 1),
            "octet {} under the CRC {} times",
            i,
            reads.crc[i]
        );
    }
    Ok(())
}

fn reassemble(evs: &[Ev]) -> Vec<(Opcode, Vec<u8>)> {
    let mut out: Vec<(Opcode, Vec<u8>)> = Vec::new();
    let mut open: Option<usize> = None;
    let mut tagged_open: Option<usize> = None;
    let mut cur: Option<usize> = None;
    for e in evs {
        match e {
            Ev::Header(h, first) => {
                let slot = if h.opcode.is_tagged() {
                    &mut tagged_open
                } else {
                    &mut open
                };
                if *first {
                    out.push((h.opcode, Vec::new()));
                    *slot = Some(out.len() - 1);
                }
                let idx = slot.unwrap();
                // Placement offset = TO minus the message's base, or MO.
                let base = match h.ddp {
                    DdpHdr::Tagged(t) => t.to - (u64::from(t.stag) << 20),
                    DdpHdr::Untagged(u) => u64::from(u.mo),
                };
                assert_eq!(base as usize, out[idx].1.len());
                cur = Some(idx);
                if h.last {
                    *slot = None;
                }
            }
            Ev::Payload(p) => out[cur.unwrap()].1.extend_from_slice(p),
            Ev::End => cur = None,
        }
    }
    out
}

proptest! {
    #![proptest_config(cfg(256))]

    #[test]
    fn header_encode_parse_identity(h in arb_header()) {
        let mut b = [0u8; 72];
        let n = h.encode(&mut b).unwrap();
        prop_assert_eq!(n, h.header_len());
        let opts = HeaderOptions { rfc7306: true };
        prop_assert_eq!(FpduHeader::parse(&b[..n], opts), Ok((h, n)));
        // Every shorter prefix asks for more bytes (or fails the length check on the
        // first four octets, which is impossible for a valid header).
        for cut in 0..n {
            let r = FpduHeader::parse(&b[..cut], opts);
            let truncated = matches!(r, Err(siw_proto::error::ParseError::Truncated { .. }));
            prop_assert!(truncated);
        }
    }

    #[test]
    fn mpa_frame_encode_parse_identity(
        rev in 0u8..=255,
        flags in any::<[bool; 7]>(),
        reserved in 0u16..2,
        v2 in any::<(u16, u16, bool, [bool; 3])>(),
        pd in proptest::collection::vec(any::<u8>(), 0..=508),
        reply in any::<bool>(),
    ) {
        let kind = if reply { FrameKind::Reply } else { FrameKind::Request };
        let mut header = MpaHeader::new(kind, rev);
        header.markers = flags[0];
        header.crc = flags[1];
        header.reject = flags[2];
        header.enhanced = flags[3];
        header.gso_exp = flags[4];
        header.ext_offer = flags[5];
        header.ext_accept = flags[6];
        header.reserved = reserved << 10;
        let ird_ord = header.has_ird_ord().then(|| IrdOrd {
            ird: v2.0 & IRD_ORD_MASK,
            ord: v2.1 & IRD_ORD_MASK,
            p2p: v2.2,
            rtr: RtrSet { send: v2.3[0], write: v2.3[1], read: v2.3[2] },
        });
        let f = MpaFrame { header, ird_ord, private_data: &pd };
        let mut b = [0u8; MAX_FRAME_LEN];
        let n = f.encode(&mut b).unwrap();
        let (g, used) = MpaFrame::parse(&b[..n], PD_MAX_WIRE).unwrap();
        prop_assert_eq!(used, n);
        let mut want = f;
        want.header.pd_len = (n - HEADER_LEN) as u16;
        prop_assert_eq!(g, want);
        // The streaming reader agrees with the one-shot parser.
        let mut r = MpaReader::new(PD_MAX_WIRE);
        let (c, done) = r.feed(&b[..n]).unwrap();
        prop_assert!(done && c == n);
        prop_assert_eq!(r.frame().unwrap(), want);
    }

    #[test]
    fn ird_ord_identity(ird in 0u16..=0x3fff, ord in 0u16..=0x3fff, p2p in any::<bool>(), rtr in any::<[bool; 3]>()) {
        let w = IrdOrd { ird, ord, p2p, rtr: RtrSet { send: rtr[0], write: rtr[1], read: rtr[2] } };
        prop_assert_eq!(IrdOrd::from_bytes(w.to_bytes()), w);
    }

    #[test]
    fn terminate_roundtrip(
        which in 0usize..TermError::ALL.len(),
        copy in 0u8..3,
        msn in any::<u32>(),
        off in proptest::collection::vec(any::<u8>(), 0..60),
    ) {
        let e = TermError::ALL[which];
        let copy = [HeaderCopy::None, HeaderCopy::Ddp, HeaderCopy::DdpRdmap][usize::from(copy)];
        let t = TerminateHdr::new(e, copy);
        let mut b = [0u8; 4];
        t.encode(&mut b).unwrap();
        prop_assert_eq!(TerminateHdr::parse(&b), Some((t, 4)));
        prop_assert_eq!(t.error(), Some(e));
        // build_terminate never panics and always yields a parseable header.
        let mut out = [0u8; 80];
        let n = build_terminate(&mut out, msn, e, Some(&off)).unwrap();
        let (h, hl) = FpduHeader::parse(&out[..n], HeaderOptions::default()).unwrap();
        prop_assert_eq!(hl, 24);
        prop_assert_eq!(h.payload_len(), n - 24);
        let RdmapHdr::Terminate(th) = h.rdmap else { panic!() };
        let info = TerminateInfo::parse(&th, &out[24..n]);
        prop_assert_eq!(info.seg_len.is_some(), th.d);
    }

    #[test]
    fn crc_incremental_and_crate_agree(data in proptest::collection::vec(any::<u8>(), 0..600), cut in any::<proptest::sample::Index>()) {
        let c = cut.index(data.len() + 1);
        let mut s = SoftCrc32c::new();
        s.update(&data[..c]);
        s.update(&data[c..]);
        prop_assert_eq!(s.value(), crc32c(&data));
        prop_assert_eq!(crc32c(&data), ::crc32c::crc32c(&data));
        prop_assert_eq!(!crc32c_update(!0, &data), crc32c(&data));
    }
}

proptest! {
    #![proptest_config(cfg(96))]

    #[test]
    fn any_split_gives_the_same_events(
        msgs in arb_msgs(),
        mulpdu_emss in 200u32..2000,
        crc in any::<bool>(),
        markers in any::<bool>(),
        cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
    ) {
        let mul = mulpdu(mulpdu_emss, markers);
        let (s, sent) = build_stream(&msgs, mul, crc, markers);
        let rx = RxConfig { crc, markers, header: HeaderOptions::default(), sctp: false };
        let whole = run(rx, &s);
        prop_assert_eq!(whole.1, None);
        prop_assert_eq!(reassemble(&whole.0), sent);
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(s.len() + 1)).collect();
        cuts.sort_unstable();
        prop_assert_eq!(run_split(rx, &s, &cuts), whole);
    }

    /// Fed as the kernel feeds it (pieces read only by copying or by the CRC), a valid
    /// stream gives the same events. The payload is never copied by the receiver, the CRC
    /// runs over each octet where it lies at most once, and no octet is copied twice but
    /// the four of an FPDU's first header word when the FPDU is cut (the one-step path
    /// looks at them, finds the FPDU partial and leaves it to the other).
    #[test]
    fn read_once_input_gives_the_same_events(
        msgs in arb_msgs(),
        mulpdu_emss in 200u32..2000,
        crc in any::<bool>(),
        markers in any::<bool>(),
        cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
    ) {
        let mul = mulpdu(mulpdu_emss, markers);
        let (s, _) = build_stream(&msgs, mul, crc, markers);
        let rx = RxConfig { crc, markers, header: HeaderOptions::default(), sctp: false };
        let whole = run(rx, &s);
        let (evs, reads) = run_split_tracked(rx, &s, &[], false);
        prop_assert_eq!(&evs, &whole);
        prop_assert!(reads.copies.iter().all(|&c| c <= 1), "copied twice: {:?}", reads.copies);
        check_reads(&reads, crc)?;
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(s.len() + 1)).collect();
        cuts.sort_unstable();
        let (evs, reads) = run_split_tracked(rx, &s, &cuts, false);
        prop_assert_eq!(&evs, &whole);
        prop_assert!(reads.copies.iter().all(|&c| c <= 2));
        check_reads(&reads, crc)?;
        // Memory that changes once read: whole, nothing is read twice, so nothing changes.
        let (evs, _) = run_split_tracked(rx, &s, &[], true);
        prop_assert_eq!(&evs, &whole);
    }

    /// Bad input too: whether an FPDU comes whole in one input (one step) or in pieces, the
    /// receiver finds the same error after the same events. And in memory that changes
    /// under the receiver (an octet read again reads differently), whatever it reads, what
    /// it reports holds together: no panic, no payload longer than its header says, an FPDU
    /// ending with as much as it announced (the checks inside `run_chunks_tracked`).
    #[test]
    fn any_split_of_a_corrupted_stream_gives_the_same_events_and_error(
        msgs in arb_msgs(),
        crc in any::<bool>(),
        markers in any::<bool>(),
        at in any::<proptest::sample::Index>(),
        flip in 1u8..=255,
        cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..12),
    ) {
        let (mut s, _) = build_stream(&msgs, 700, crc, markers);
        let i = at.index(s.len());
        s[i] ^= flip;
        let rx = RxConfig { crc, markers, header: HeaderOptions::default(), sctp: false };
        let whole = run(rx, &s);
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(s.len() + 1)).collect();
        cuts.sort_unstable();
        prop_assert_eq!(run_split(rx, &s, &cuts), whole.clone());
        let octets: Vec<usize> = (1..s.len()).collect();
        prop_assert_eq!(run_split(rx, &s, &octets), whole);
        let _ = run_split_tracked(rx, &s, &cuts, true);
        let _ = run_split_tracked(rx, &s, &octets, true);
    }

    #[test]
    fn segmentation_reassembly_is_lossless(
        msgs in arb_msgs(),
        mul in 40u16..3000,
        crc in any::<bool>(),
        markers in any::<bool>(),
    ) {
        let (s, sent) = build_stream(&msgs, mul, crc, markers);
        let (evs, err) = run(RxConfig { crc, markers, header: HeaderOptions::default(), sctp: false }, &s);
        prop_assert_eq!(err, None);
        for e in &evs {
            if let Ev::Header(h, _) = e {
                prop_assert!(h.ulpdu_len <= mul);
            }
        }
        prop_assert_eq!(reassemble(&evs), sent);
    }

    #[test]
    fn one_corrupted_octet_is_caught_by_the_crc(
        msgs in arb_msgs(),
        at in any::<proptest::sample::Index>(),
        flip in 1u8..=255,
        markers in any::<bool>(),
    ) {
        let (mut s, sent) = build_stream(&msgs, 1000, true, markers);
        let i = at.index(s.len());
        s[i] ^= flip;
        let (evs, err) = run(RxConfig { crc: true, markers, header: HeaderOptions::default(), sctp: false }, &s);
        // Either an error, or the corruption landed in a marker's reserved half
        // (still CRC-covered, so never): the stream must not pass unchanged.
        prop_assert!(err.is_some() || reassemble(&evs) != sent, "corruption at {} undetected", i);
    }
}

proptest! {
    #![proptest_config(cfg(512))]

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..2000),
        crc in any::<bool>(),
        markers in any::<bool>(),
        rfc7306 in any::<bool>(),
        cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 0..8),
    ) {
        let rx = RxConfig { crc, markers, header: HeaderOptions { rfc7306 }, sctp: false };
        let mut cuts: Vec<usize> = cuts.iter().map(|i| i.index(bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let (_, err) = run_split(rx, &bytes, &cuts);
        if let Some(e) = err {
            let (l, t, c) = e.triple();
            prop_assert_eq!(TermError::from_wire(l, t, c), Some(e));
        }
        let _ = FpduHeader::parse(&bytes, HeaderOptions { rfc7306 });
        let _ = MpaFrame::parse(&bytes, PD_MAX_WIRE);
        let mut r = MpaReader::new(PD_MAX_SIW);
        if let Ok((n, done)) = r.feed(&bytes) {
            prop_assert!(n <= bytes.len());
            if done {
                prop_assert!(r.frame().is_ok());
            }
        }
        if let Some((t, _)) = TerminateHdr::parse(&bytes) {
            let _ = TerminateInfo::parse(&t, bytes.get(4..).unwrap_or(&[]));
        }
    }

    #[test]
    fn arbitrary_valid_prefix_then_garbage_never_panics(
        msgs in arb_msgs(),
        garbage in proptest::collection::vec(any::<u8>(), 0..300),
        markers in any::<bool>(),
    ) {
        let (mut s, _) = build_stream(&msgs, 700, false, markers);
        s.extend_from_slice(&garbage);
        let mut rx = Receiver::new(RxConfig { crc: false, markers, header: HeaderOptions::default(), sctp: false }, SoftCrc32c::new());
        let mut rest: &[u8] = &s;
        while !rest.is_empty() {
            match rx.feed(rest) {
                Ok(st) => { prop_assert!(st.consumed > 0); rest = &rest[st.consumed..]; }
                Err(_) => break,
            }
        }
    }

    #[test]
    fn negotiation_never_panics_and_both_sides_agree(ini in arb_policy(), resp in arb_policy(), pd in proptest::collection::vec(any::<u8>(), 0..40)) {
        let (header, ird_ord) = build_request(&ini);
        let req = MpaFrame { header, ird_ord, private_data: &pd };
        let mut b = [0u8; 600];
        let n = req.encode(&mut b).unwrap();
        let (req_rx, _) = MpaFrame::parse(&b[..n], PD_MAX_SIW).unwrap();
        match negotiate_responder(&resp, &req_rx) {
            Err(r) => {
                if r.reply_with_reject() {
                    let rep = reject_reply(&resp, &req_rx.header);
                    let f = MpaFrame { header: rep, ird_ord: None, private_data: b"" };
                    prop_assert_eq!(negotiate_initiator(&ini, &req, &f), Err(Reject::PeerRejected));
                }
            }
            Ok(acc) => {
                let mut b2 = [0u8; 600];
                let n2 = acc.reply_frame(&pd).encode(&mut b2).unwrap();
                let (rep_rx, _) = MpaFrame::parse(&b2[..n2], PD_MAX_SIW).unwrap();
                if let Ok(i) = negotiate_initiator(&ini, &req, &rep_rx) {
                    let r = acc.agreed;
                    prop_assert_eq!(i.revision, r.revision);
                    prop_assert_eq!(i.crc, r.crc);
                    prop_assert_eq!(i.markers_tx, r.markers_rx);
                    prop_assert_eq!(i.markers_rx, r.markers_tx);
                    prop_assert_eq!(i.enhanced, r.enhanced);
                    prop_assert_eq!(i.gso_exp, r.gso_exp);
                    prop_assert_eq!(i.rfc7306, r.rfc7306);
                    prop_assert_eq!(i.rfc7306, ini.rfc7306 && resp.rfc7306);
                    if i.enhanced {
                        prop_assert_eq!(i.ird, r.ord);
                        prop_assert!(i.ord <= r.ird);
                        prop_assert_eq!(i.rtr, r.rtr);
                    }
                }
            }
        }
    }
}

/// A message of `op` for the segmenter: tagged to (`stag`, `to`), or untagged on the
/// opcode's queue with `msn` and `rsvd_ulp`.
fn message(
    op: Opcode,
    rdmap: RdmapHdr,
    len: u32,
    stag: u32,
    to: u64,
    msn: u32,
    rsvd_ulp: u32,
) -> Message {
    let target = if op.is_tagged() {
        Target::Tagged { stag, to }
    } else {
        Target::Untagged { qn: op.queue().unwrap_or(0), msn, rsvd_ulp }
    };
    Message { opcode: op, target, rdmap, len }
}

proptest! {
    #![proptest_config(cfg(256))]

    /// `Segmenter::next_into` (the driver's transmit path) yields the iterator's segments,
    /// header octets and payload ranges alike.
    #[test]
    fn next_into_gives_the_iterators_segments(
        (op, rdmap) in arb_op_rdmap(),
        len in arb_message_len(),
        stag in any::<u32>(),
        to in any::<u64>(),
        msn in any::<u32>(),
        mul in 20u16..3000,
    ) {
        let msg = message(op, rdmap, len, stag, to, msn, stag);
        let Ok(seg) = Segmenter::new(msg, mul) else { return Ok(()) };
        let mut into = seg;
        for s in seg {
            let mut hdr = [0u8; MAX_HDR_LEN];
            let info = into.next_into(&mut hdr).expect("as many segments as the iterator");
            prop_assert_eq!(&hdr[..info.header_len], s.header());
            prop_assert_eq!(
                (info.payload_offset, info.payload_len, info.pad, info.last),
                (s.payload_offset, s.payload_len, s.pad, s.last)
            );
        }
        prop_assert_eq!(into.next_into(&mut [0u8; MAX_HDR_LEN]), None);
    }

    /// `Segmenter::start` (in place, the driver's transmit path) takes the messages `new`
    /// takes and then yields the same segments, whatever the segmenter held before; a
    /// message `new` refuses leaves it as it was.
    #[test]
    fn start_in_place_is_new(
        (op, rdmap) in arb_op_rdmap(),
        len in arb_message_len(),
        to in any::<u64>(),
        mul in 0u16..3000,
        used in 0usize..4,
    ) {
        let msg = message(op, rdmap, len, 7, to, 3, 0);
        // A segmenter part way through another message.
        let other = Message {
            opcode: Opcode::Send,
            target: Target::Untagged { qn: 0, msn: 9, rsvd_ulp: 0 },
            rdmap: RdmapHdr::None,
            len: 9000,
        };
        let mut seg = Segmenter::new(other, 1000).expect("a plain Send segments");
        for _ in 0..used {
            seg.next();
        }
        let before = seg;
        match Segmenter::new(msg, mul) {
            Ok(fresh) => {
                prop_assert_eq!(seg.start(msg, mul), Ok(()));
                prop_assert_eq!(seg, fresh);
                prop_assert!(Iterator::eq(seg, fresh));
            }
            Err(e) => {
                prop_assert_eq!(seg.start(msg, mul), Err(e));
                prop_assert_eq!(seg, before);
            }
        }
    }

    /// The lengths a packing sender plans with are those of the FPDUs it then sends:
    /// `next_wire_len` before each segment, and `first_wire_len` from the opcode and length
    /// alone, for every message the segmenter takes.
    #[test]
    fn wire_lengths_are_predicted(
        (op, rdmap) in arb_op_rdmap(),
        len in arb_message_len(),
        to in 0u64..1 << 40,
        mul in 20u16..3000,
    ) {
        let msg = message(op, rdmap, len, 1, to, 1, 0);
        let Ok(mut seg) = Segmenter::new(msg, mul) else { return Ok(()) };
        let mut first = true;
        loop {
            let predicted = seg.next_wire_len();
            let Some(s) = seg.next() else {
                prop_assert_eq!(predicted, None);
                break;
            };
            let wire = s.header().len() + s.payload_len as usize + s.pad + 4;
            prop_assert_eq!(predicted, Some(wire));
            if first {
                prop_assert_eq!(first_wire_len(op, len, mul), Some(wire));
                first = false;
            }
        }
    }
}
