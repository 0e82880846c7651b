// SPDX-License-Identifier: GPL-2.0

//! MPA frames and negotiation: both roles, revisions 1 and 2, CRC, markers, IRD/ORD,
//! peer-to-peer RTR, and interoperability with the C siw's behaviour.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use siw_proto::error::TermError;
use siw_proto::mpa::*;

fn request(policy: &MpaPolicy) -> MpaFrame<'static> {
    let (header, ird_ord) = build_request(policy);
    MpaFrame {
        header,
        ird_ord,
        private_data: b"",
    }
}

fn roundtrip<'a>(f: &MpaFrame<'_>, buf: &'a mut [u8]) -> MpaFrame<'a> {
    let n = f.encode(buf).unwrap();
    let (g, used) = MpaFrame::parse(&buf[..n], PD_MAX_WIRE).unwrap();
    assert_eq!(used, n);
    g
}

/// Runs both roles over encoded frames and returns (initiator, responder) results.
fn connect(ini: &MpaPolicy, resp: &MpaPolicy) -> (Result<Agreed, Reject>, Result<Agreed, Reject>) {
    let req = request(ini);
    let mut b1 = [0u8; 600];
    let req_rx = roundtrip(&req, &mut b1);
    let acc = match negotiate_responder(resp, &req_rx) {
        Ok(a) => a,
        Err(r) => return (Err(Reject::PeerRejected), Err(r)),
    };
    let mut b2 = [0u8; 600];
    let rep_rx = roundtrip(&acc.reply_frame(b"ok"), &mut b2);
    (negotiate_initiator(ini, &req, &rep_rx), Ok(acc.agreed))
}

#[test]
fn default_to_default_uses_crc_rev2_no_markers() {
    let p = MpaPolicy::default();
    let (i, r) = connect(&p, &p);
    let (i, r) = (i.unwrap(), r.unwrap());
    assert!(i.crc && r.crc);
    assert_eq!((i.revision, r.revision), (2, 2));
    assert!(i.enhanced && r.enhanced);
    assert!(!i.markers_tx && !i.markers_rx && !r.markers_tx && !r.markers_rx);
    assert_eq!((i.ird, i.ord, r.ird, r.ord), (128, 128, 128, 128));
}

#[test]
fn crc_is_on_when_either_side_asks() {
    let no = MpaPolicy {
        crc: false,
        ..MpaPolicy::default()
    };
    let yes = MpaPolicy::default();
    for (a, b, want) in [(&no, &no, false), (&no, &yes, true), (&yes, &no, true)] {
        let (i, r) = connect(a, b);
        assert_eq!(i.unwrap().crc, want);
        assert_eq!(r.unwrap().crc, want);
    }
}

#[test]
fn c_siw_pair_runs_without_crc() {
    let c = MpaPolicy::c_siw();
    let (i, r) = connect(&c, &c);
    assert!(!i.unwrap().crc && !r.unwrap().crc);
}

#[test]
fn markers_are_per_direction() {
    let wants = MpaPolicy {
        markers_rx: true,
        ..MpaPolicy::default()
    };
    let plain = MpaPolicy::default();
    // The initiator wants markers: the responder inserts them.
    let (i, r) = connect(&wants, &plain);
    let (i, r) = (i.unwrap(), r.unwrap());
    assert!(i.markers_rx && !i.markers_tx);
    assert!(r.markers_tx && !r.markers_rx);
    // The responder wants markers: the initiator inserts them.
    let (i, r) = connect(&plain, &wants);
    let (i, r) = (i.unwrap(), r.unwrap());
    assert!(i.markers_tx && !i.markers_rx);
    assert!(r.markers_rx && !r.markers_tx);
}

#[test]
fn c_siw_responder_rejects_markers_with_r() {
    let wants = MpaPolicy {
        markers_rx: true,
        ..MpaPolicy::default()
    };
    let req = request(&wants);
    let err = negotiate_responder(&MpaPolicy::c_siw(), &req).unwrap_err();
    assert_eq!(err, Reject::Markers);
    assert!(err.reply_with_reject());
    let rep = reject_reply(&MpaPolicy::c_siw(), &req.header);
    assert!(rep.reject && !rep.markers);
    assert_eq!(rep.revision, 2);
    assert_eq!(rep.kind, FrameKind::Reply);
}

#[test]
fn c_siw_initiator_refuses_reply_with_markers() {
    let c = MpaPolicy::c_siw();
    let wants = MpaPolicy {
        markers_rx: true,
        ..MpaPolicy::default()
    };
    let (i, _) = connect(&c, &wants);
    assert_eq!(i, Err(Reject::Markers));
}

#[test]
fn responder_mirrors_revision_1() {
    let v1 = MpaPolicy {
        revision: 1,
        ..MpaPolicy::default()
    };
    let req = request(&v1);
    assert_eq!(req.header.revision, 1);
    assert!(req.ird_ord.is_none() && !req.header.enhanced);
    let acc = negotiate_responder(&MpaPolicy::default(), &req).unwrap();
    assert_eq!(acc.reply.revision, 1);
    assert!(acc.ird_ord.is_none());
    assert!(!acc.agreed.enhanced);
    let (i, r) = connect(&v1, &MpaPolicy::default());
    assert_eq!(i.unwrap().revision, 1);
    assert_eq!(r.unwrap().revision, 1);
}

#[test]
fn revision_1_responder_answers_revision_2_request_with_revision_1() {
    let v1 = MpaPolicy {
        revision: 1,
        ..MpaPolicy::default()
    };
    let req = request(&MpaPolicy::default());
    let acc = negotiate_responder(&v1, &req).unwrap();
    assert_eq!(acc.reply.revision, 1);
    assert!(!acc.reply.enhanced && acc.ird_ord.is_none());
}

/// Defect O5 of the C siw: it cannot initiate to an MPA revision 1 responder. We can.
#[test]
fn initiator_accepts_revision_1_reply_o5() {
    let p = MpaPolicy::default();
    let (i, r) = connect(
        &p,
        &MpaPolicy {
            revision: 1,
            ..MpaPolicy::default()
        },
    );
    let i = i.unwrap();
    assert_eq!(i.revision, 1);
    assert!(!i.enhanced && i.rtr.is_none());
    assert_eq!(r.unwrap().revision, 1);
}

#[test]
fn initiator_refuses_revision_2_reply_without_enhanced_data() {
    let p = MpaPolicy::default();
    let req = request(&p);
    let mut rep = MpaHeader::new(FrameKind::Reply, 2);
    rep.crc = true;
    let reply = MpaFrame {
        header: rep,
        ird_ord: None,
        private_data: b"",
    };
    assert_eq!(
        negotiate_initiator(&p, &req, &reply),
        Err(Reject::EnhancedDataMissing)
    );
}

#[test]
fn bad_revisions_are_rejected_without_reply() {
    for rev in [0u8, 3, 255] {
        let mut h = MpaHeader::new(FrameKind::Request, rev);
        h.crc = true;
        let req = MpaFrame {
            header: h,
            ird_ord: None,
            private_data: b"",
        };
        let e = negotiate_responder(&MpaPolicy::default(), &req).unwrap_err();
        assert_eq!(e, Reject::Revision(rev));
        assert!(!e.reply_with_reject());
    }
    // A reply above the request's revision.
    let v1 = MpaPolicy {
        revision: 1,
        ..MpaPolicy::default()
    };
    let req = request(&v1);
    let reply = MpaFrame {
        header: MpaHeader::new(FrameKind::Reply, 2),
        ird_ord: Some(IrdOrd::default()),
        private_data: b"",
    };
    assert_eq!(
        negotiate_initiator(&v1, &req, &reply),
        Err(Reject::Revision(2))
    );
}

#[test]
fn wrong_keys_are_rejected() {
    let p = MpaPolicy::default();
    let req = request(&p);
    // A request where a reply is expected and vice versa.
    assert_eq!(negotiate_initiator(&p, &req, &req), Err(Reject::BadKey));
    let acc = negotiate_responder(&p, &req).unwrap();
    assert_eq!(
        negotiate_responder(&p, &acc.reply_frame(b"")),
        Err(Reject::BadKey)
    );
    assert_eq!(
        Reject::BadKey.term_error(),
        Some(TermError::LlpInvalidReqResp)
    );
    let mut bytes = [0u8; 20];
    bytes[..16].copy_from_slice(b"MPA ID Req Fram_");
    assert_eq!(MpaFrame::parse(&bytes, PD_MAX_WIRE), Err(MpaError::BadKey));
}

#[test]
fn peer_reject_is_reported_with_private_data() {
    let p = MpaPolicy::default();
    let req = request(&p);
    let rep = reject_reply(&p, &req.header);
    let frame = MpaFrame {
        header: rep,
        ird_ord: None,
        private_data: b"go away",
    };
    let mut b = [0u8; 64];
    let n = frame.encode(&mut b).unwrap();
    let (parsed, _) = MpaFrame::parse(&b[..n], PD_MAX_SIW).unwrap();
    assert_eq!(parsed.private_data, b"go away");
    assert_eq!(
        negotiate_initiator(&p, &req, &parsed),
        Err(Reject::PeerRejected)
    );
}

#[test]
fn ird_ord_mapping_and_clamping() {
    // The initiator asks for IRD 4, ORD 300 (clamped to the device's 128 in the request).
    let ini = MpaPolicy {
        ird: 4,
        ord: 300,
        ..MpaPolicy::default()
    };
    let req = request(&ini);
    assert_eq!(req.ird_ord.map(|v| (v.ird, v.ord)), Some((4, 128)));
    // Responder wants IRD 16, ORD 16: ORD is lowered to the peer's IRD 4, IRD raised to
    // the peer's ORD 128 (relaxed negotiation, C siw siw_accept()).
    let resp = MpaPolicy {
        ird: 16,
        ord: 16,
        ..MpaPolicy::default()
    };
    let acc = negotiate_responder(&resp, &req).unwrap();
    assert_eq!((acc.agreed.ird, acc.agreed.ord), (128, 4));
    assert_eq!(acc.ird_ord.map(|v| (v.ird, v.ord)), Some((128, 4)));
    let agreed = negotiate_initiator(&ini, &req, &acc.reply_frame(b"")).unwrap();
    assert_eq!((agreed.ird, agreed.ord), (4, 128));
}

#[test]
fn peer_values_above_the_device_limit_are_clamped() {
    let mut h = MpaHeader::new(FrameKind::Request, 2);
    h.enhanced = true;
    let req = MpaFrame {
        header: h,
        ird_ord: Some(IrdOrd {
            ird: 0x3fff,
            ord: 0x3fff,
            p2p: false,
            rtr: RtrSet::NONE,
        }),
        private_data: b"",
    };
    let acc = negotiate_responder(&MpaPolicy::default(), &req).unwrap();
    assert_eq!((acc.agreed.ird, acc.agreed.ord), (128, 128));
}

#[test]
fn strict_negotiation_fails_with_insufficient_ird() {
    let strict = MpaPolicy {
        relaxed: false,
        ird: 2,
        ord: 2,
        ..MpaPolicy::default()
    };
    let ini = MpaPolicy {
        ird: 8,
        ord: 8,
        ..MpaPolicy::default()
    };
    let req = request(&ini);
    assert_eq!(
        negotiate_responder(&strict, &req),
        Err(Reject::InsufficientIrd)
    );
    assert_eq!(
        Reject::InsufficientIrd.term_error(),
        Some(TermError::LlpInsufficientIrd)
    );
    // Initiator side: the responder's ORD exceeds our device IRD.
    let small = MpaPolicy {
        max_ird: 4,
        ird: 4,
        ..MpaPolicy::default()
    };
    let req = request(&small);
    let mut rep = MpaHeader::new(FrameKind::Reply, 2);
    rep.enhanced = true;
    let reply = MpaFrame {
        header: rep,
        ird_ord: Some(IrdOrd {
            ird: 4,
            ord: 9,
            p2p: false,
            rtr: RtrSet::NONE,
        }),
        private_data: b"",
    };
    assert_eq!(
        negotiate_initiator(&small, &req, &reply),
        Err(Reject::InsufficientIrd)
    );
}

#[test]
fn p2p_prefers_write_then_read() {
    let ini = MpaPolicy {
        p2p: true,
        rtr: RtrSet {
            send: true,
            write: true,
            read: true,
        },
        ..MpaPolicy::default()
    };
    let resp = MpaPolicy {
        p2p: true,
        rtr: RtrSet {
            send: true,
            write: true,
            read: true,
        },
        ..MpaPolicy::default()
    };
    let (i, r) = connect(&ini, &resp);
    assert_eq!(i.unwrap().rtr, Some(Rtr::Write));
    assert_eq!(r.unwrap().rtr, Some(Rtr::Write));
    let ini_read = MpaPolicy {
        rtr: RtrSet {
            send: true,
            write: false,
            read: true,
        },
        ..ini
    };
    let (i, r) = connect(&ini_read, &resp);
    assert_eq!(i.unwrap().rtr, Some(Rtr::Read));
    assert_eq!(r.unwrap().rtr, Some(Rtr::Read));
    let ini_send = MpaPolicy {
        rtr: RtrSet::only(Rtr::Send),
        ..ini
    };
    let (i, _) = connect(&ini_send, &resp);
    assert_eq!(i.unwrap().rtr, Some(Rtr::Send));
}

#[test]
fn p2p_read_rtr_forces_ord_one() {
    let ini = MpaPolicy {
        p2p: true,
        ord: 0,
        rtr: RtrSet::only(Rtr::Read),
        ..MpaPolicy::default()
    };
    let req = request(&ini);
    let v2 = req.ird_ord.unwrap();
    assert!(v2.p2p && v2.rtr.read);
    assert_eq!(v2.ord, 1);
}

#[test]
fn p2p_send_only_offer_is_refused_by_a_c_siw_like_responder() {
    // The C siw does not support a Send RTR; with our policy restricted the same way
    // the offer has no match.
    let ini = MpaPolicy {
        p2p: true,
        rtr: RtrSet::only(Rtr::Send),
        ..MpaPolicy::default()
    };
    let resp = MpaPolicy {
        p2p: true,
        rtr: RtrSet::WRITE_READ,
        ..MpaPolicy::default()
    };
    let req = request(&ini);
    assert_eq!(negotiate_responder(&resp, &req), Err(Reject::NoMatchingRtr));
    assert_eq!(
        Reject::NoMatchingRtr.term_error(),
        Some(TermError::LlpNoMatchingRtr)
    );
}

#[test]
fn p2p_without_rtr_bits_gets_write_proposed() {
    let mut h = MpaHeader::new(FrameKind::Request, 2);
    h.enhanced = true;
    let req = MpaFrame {
        header: h,
        ird_ord: Some(IrdOrd {
            ird: 1,
            ord: 1,
            p2p: true,
            rtr: RtrSet::NONE,
        }),
        private_data: b"",
    };
    let resp = MpaPolicy {
        p2p: true,
        ..MpaPolicy::default()
    };
    let acc = negotiate_responder(&resp, &req).unwrap();
    assert_eq!(acc.agreed.rtr, Some(Rtr::Write));
    assert_eq!(acc.ird_ord.unwrap().rtr, RtrSet::only(Rtr::Write));
}

#[test]
fn initiator_refuses_rtr_it_did_not_offer() {
    let ini = MpaPolicy {
        p2p: true,
        rtr: RtrSet::only(Rtr::Read),
        ..MpaPolicy::default()
    };
    let req = request(&ini);
    let mut rep = MpaHeader::new(FrameKind::Reply, 2);
    rep.enhanced = true;
    let reply = MpaFrame {
        header: rep,
        ird_ord: Some(IrdOrd {
            ird: 1,
            ord: 1,
            p2p: true,
            rtr: RtrSet::only(Rtr::Write),
        }),
        private_data: b"",
    };
    assert_eq!(
        negotiate_initiator(&ini, &req, &reply),
        Err(Reject::NoMatchingRtr)
    );
}

#[test]
fn responder_without_p2p_ignores_the_request() {
    let ini = MpaPolicy {
        p2p: true,
        ..MpaPolicy::default()
    };
    let (i, r) = connect(&ini, &MpaPolicy::default());
    // The initiator offered RTR types but the reply picked none.
    assert_eq!(i, Err(Reject::NoMatchingRtr));
    assert_eq!(r.unwrap().rtr, None);
}

#[test]
fn gso_exp_needs_both_sides_and_policy() {
    let g = MpaPolicy {
        gso_exp: true,
        ..MpaPolicy::default()
    };
    let (i, r) = connect(&g, &g);
    assert!(i.unwrap().gso_exp && r.unwrap().gso_exp);
    let (i, r) = connect(&g, &MpaPolicy::default());
    assert!(!i.unwrap().gso_exp && !r.unwrap().gso_exp);
}

#[test]
fn rfc7306_needs_both_sides_and_policy() {
    let x = MpaPolicy {
        rfc7306: true,
        ..MpaPolicy::default()
    };
    let (i, r) = connect(&x, &x);
    assert!(i.unwrap().rfc7306 && r.unwrap().rfc7306);
    let (i, r) = connect(&x, &MpaPolicy::default());
    assert!(!i.unwrap().rfc7306 && !r.unwrap().rfc7306);
    let (i, r) = connect(&MpaPolicy::default(), &x);
    assert!(!i.unwrap().rfc7306 && !r.unwrap().rfc7306);
}

#[test]
fn rfc7306_offer_and_answer_are_different_bits() {
    let x = MpaPolicy {
        rfc7306: true,
        ..MpaPolicy::default()
    };
    let req = request(&x);
    assert!(req.header.ext_offer && !req.header.ext_accept);
    assert_eq!(req.header.bits() & FLAG_EXT_OFFER, FLAG_EXT_OFFER);
    let acc = negotiate_responder(&x, &req).unwrap();
    assert!(acc.reply.ext_accept && !acc.reply.ext_offer);
    assert_eq!(
        acc.reply.bits() & (FLAG_EXT_OFFER | FLAG_EXT_ACCEPT),
        FLAG_EXT_ACCEPT
    );
}

/// The C siw answers with the request's own header, key rewritten (`siw_proc_mpareq()`,
/// `siw_accept()`): every bit it does not know comes back. Our offer, echoed, must not
/// read as an acceptance.
#[test]
fn rfc7306_echoed_offer_is_no_acceptance() {
    let x = MpaPolicy {
        rfc7306: true,
        ..MpaPolicy::default()
    };
    let req = request(&x);
    let mut b = [0u8; 600];
    let mut echo = req;
    echo.header.kind = FrameKind::Reply;
    let echo_rx = roundtrip(&echo, &mut b);
    assert!(echo_rx.header.ext_offer);
    let agreed = negotiate_initiator(&x, &req, &echo_rx).unwrap();
    assert!(!agreed.rfc7306);
    // And a request that carries the answer bit (nobody's) is not taken up.
    let mut odd = req;
    odd.header.ext_accept = true;
    assert!(!negotiate_responder(&x, &odd).unwrap().agreed.rfc7306);
}

#[test]
fn enhanced_request_without_word_is_malformed() {
    let mut b = [0u8; 24];
    let mut h = MpaHeader::new(FrameKind::Request, 2);
    h.enhanced = true;
    h.pd_len = 2;
    h.encode(&mut b).unwrap();
    assert_eq!(
        MpaFrame::parse(&b[..22], PD_MAX_WIRE),
        Err(MpaError::EnhancedDataMissing)
    );
    // Revision 1 with the ENHANCED bit: no IRD/ORD word is expected.
    let mut h1 = h;
    h1.revision = 1;
    h1.encode(&mut b).unwrap();
    let (f, _) = MpaFrame::parse(&b[..22], PD_MAX_WIRE).unwrap();
    assert!(f.ird_ord.is_none() && f.private_data.len() == 2);
}

#[test]
fn frame_parse_truncation_and_private_data_limits() {
    let req = MpaFrame {
        header: MpaHeader::new(FrameKind::Request, 1),
        ird_ord: None,
        private_data: &[9u8; 300],
    };
    let mut b = [0u8; 400];
    let n = req.encode(&mut b).unwrap();
    assert_eq!(n, 320);
    assert_eq!(
        MpaFrame::parse(&b[..10], PD_MAX_WIRE),
        Err(MpaError::Truncated { needed: 20 })
    );
    assert_eq!(
        MpaFrame::parse(&b[..319], PD_MAX_WIRE),
        Err(MpaError::Truncated { needed: 320 })
    );
    assert_eq!(
        MpaFrame::parse(&b[..n], PD_MAX_SIW),
        Err(MpaError::PrivateDataTooLong { len: 300 })
    );
    let big = MpaFrame {
        private_data: &[0u8; 513],
        ..req
    };
    assert!(matches!(
        big.encode(&mut [0u8; 600]),
        Err(MpaError::PrivateDataTooLong { .. })
    ));
    assert_eq!(req.encode(&mut [0u8; 100]), Err(MpaError::BufferTooSmall));
}

#[test]
fn reader_collects_a_frame_split_anywhere_and_stops_at_its_end() {
    let (header, ird_ord) = build_request(&MpaPolicy::default());
    let f = MpaFrame {
        header,
        ird_ord,
        private_data: b"0123456789",
    };
    let mut b = [0u8; 64];
    let n = f.encode(&mut b).unwrap();
    // Trailing FPDU bytes must not be consumed.
    b[n..n + 4].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    for cut in 0..=n {
        let mut r = MpaReader::new(PD_MAX_SIW);
        let (c1, done1) = r.feed(&b[..cut]).unwrap();
        assert_eq!(c1, cut);
        assert_eq!(done1, cut == n);
        let (c2, done2) = r.feed(&b[cut..n + 4]).unwrap();
        assert_eq!(c1 + c2, n);
        assert!(done2);
        let g = r.frame().unwrap();
        assert_eq!(g, f.clone_with(&b[24..n]));
    }
    let mut r = MpaReader::new(PD_MAX_SIW);
    let mut bad = b;
    bad[0] = b'X';
    assert_eq!(r.feed(&bad[..n]), Err(MpaError::BadKey));
}

trait CloneWith<'a> {
    fn clone_with(&self, pd: &'a [u8]) -> MpaFrame<'a>;
}

impl<'a> CloneWith<'a> for MpaFrame<'_> {
    fn clone_with(&self, pd: &'a [u8]) -> MpaFrame<'a> {
        let mut h = self.header;
        h.pd_len = (pd.len() + 4) as u16;
        MpaFrame {
            header: h,
            ird_ord: self.ird_ord,
            private_data: pd,
        }
    }
}

/// A frame with `pd_len` bytes of ULP private data, through the wire and the C siw's
/// reader limit plus the IRD/ORD word (what siw_rs reads with).
fn with_private_data(
    header: MpaHeader,
    ird_ord: Option<IrdOrd>,
    pd_len: usize,
    f: impl FnOnce(&MpaFrame<'_>),
) {
    let pd = [0x5au8; PD_MAX_WIRE];
    let frame = MpaFrame {
        header,
        ird_ord,
        private_data: &pd[..pd_len],
    };
    let mut b = [0u8; MAX_FRAME_LEN];
    let n = frame.encode(&mut b).unwrap();
    let (parsed, _) = MpaFrame::parse(&b[..n], PD_MAX_SIW + IRD_ORD_LEN).unwrap();
    assert_eq!(parsed.private_data.len(), pd_len);
    f(&parsed);
}

#[test]
fn responder_refuses_private_data_the_cm_cannot_carry() {
    for rev in [1u8, 2] {
        let ini = MpaPolicy {
            revision: rev,
            ..MpaPolicy::c_siw()
        };
        let resp = MpaPolicy::c_siw();
        let (h, io) = build_request(&ini);
        with_private_data(h, io, PD_MAX_ULP, |req| {
            assert!(
                negotiate_responder(&resp, req).is_ok(),
                "rev {rev}: 255 bytes fit"
            );
        });
        let most = if rev == 2 {
            PD_MAX_SIW
        } else {
            PD_MAX_SIW + IRD_ORD_LEN
        };
        for len in PD_MAX_ULP + 1..=most {
            with_private_data(h, io, len, |req| {
                let r = negotiate_responder(&resp, req);
                assert_eq!(r, Err(Reject::PrivateDataTooLong), "rev {rev} len {len}");
                // Answered with a reject frame, not a silent close.
                assert!(Reject::PrivateDataTooLong.reply_with_reject());
            });
        }
    }
}

#[test]
fn initiator_fails_a_reply_or_reject_with_too_much_private_data() {
    let p = MpaPolicy::c_siw();
    let req = request(&p);
    let acc = negotiate_responder(&p, &req).unwrap();
    let rej = reject_reply(&p, &req.header);
    // 256..=260 bytes: what the reader limit lets through (the hostile replies of
    // issue 13, defect 1).
    for len in PD_MAX_ULP + 1..=PD_MAX_SIW + IRD_ORD_LEN - 4 {
        with_private_data(acc.reply, acc.ird_ord, len, |rep| {
            assert_eq!(
                negotiate_initiator(&p, &req, rep),
                Err(Reject::PrivateDataTooLong)
            );
        });
    }
    for len in PD_MAX_ULP + 1..=PD_MAX_SIW + IRD_ORD_LEN {
        with_private_data(rej, None, len, |rep| {
            assert_eq!(
                negotiate_initiator(&p, &req, rep),
                Err(Reject::PrivateDataTooLong)
            );
        });
    }
    with_private_data(acc.reply, acc.ird_ord, PD_MAX_ULP, |rep| {
        assert!(negotiate_initiator(&p, &req, rep).is_ok());
    });
    with_private_data(rej, None, PD_MAX_ULP, |rep| {
        assert_eq!(
            negotiate_initiator(&p, &req, rep),
            Err(Reject::PeerRejected)
        );
    });
}

#[test]
fn a_reset_reader_takes_a_new_frame() {
    let pol = MpaPolicy::c_siw();
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = request(&pol).encode(&mut buf).expect("encode");
    let mut r = MpaReader::new(PD_MAX_SIW);
    // Half a frame from a connection that broke, then the whole frame on the next one.
    assert_eq!(r.feed(&buf[..n / 2]), Ok((n / 2, false)));
    r.reset();
    assert_eq!(r.feed(&buf[..n]), Ok((n, true)));
    let want = MpaFrame::parse(&buf[..n], PD_MAX_SIW).map(|(f, _)| f);
    assert_eq!(r.frame(), want);
}
