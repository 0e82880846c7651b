// SPDX-License-Identifier: GPL-2.0

//! Known-answer tests: byte-exact frames from the RFCs' figures and the C siw's
//! structs.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use common::{run, Ev, Tx};
use siw_proto::crc::{crc_to_wire, SoftCrc32c};
use siw_proto::ddp::{Ctrl, DdpHdr, TaggedHdr, UntaggedHdr};
use siw_proto::error::{HeaderCopy, TermError};
use siw_proto::fpdu::{mulpdu, pad_len, trailer, write_fpdu, MarkerTx};
use siw_proto::mpa::{
    build_request, negotiate_initiator, negotiate_responder, FrameKind, IrdOrd, MpaFrame,
    MpaHeader, MpaPolicy, RtrSet, PD_MAX_SIW, PD_MAX_WIRE,
};
use siw_proto::rdmap::{
    build_terminate, FpduHeader, HeaderOptions, Opcode, RdmapHdr, ReadRequest, TerminateHdr,
    TerminateInfo,
};
use siw_proto::rx::RxConfig;
use siw_proto::segment::{Message, Segmenter, Target};

fn send_hdr(msn: u32, ulpdu_len: u16) -> [u8; 20] {
    let h = FpduHeader {
        ulpdu_len,
        last: true,
        opcode: Opcode::Send,
        ddp: DdpHdr::Untagged(UntaggedHdr {
            rsvd_ulp: 0,
            qn: 0,
            msn,
            mo: 0,
        }),
        rdmap: RdmapHdr::None,
    };
    let mut b = [0u8; 20];
    assert_eq!(h.encode(&mut b), Ok(20));
    b
}

/// RFC 5044 section 4.4 figure 5: the first FPDU of the stream, starting with a
/// marker, a 42-octet ULPDU (a Send of 24 zero octets, MSN 1), CRC 52 23 99 83.
fn rfc5044_figure5() -> Vec<u8> {
    let mut v = vec![0, 0, 0, 0, 0x00, 0x2a, 0x41, 0x43];
    v.extend_from_slice(&[0; 4]); // RsvdULP
    v.extend_from_slice(&[0, 0, 0, 0]); // QN 0
    v.extend_from_slice(&[0, 0, 0, 1]); // MSN 1
    v.extend_from_slice(&[0, 0, 0, 0]); // MO 0
    v.extend_from_slice(&[0; 24]);
    v.extend_from_slice(&[0x52, 0x23, 0x99, 0x83]);
    v
}

#[test]
fn rfc5044_figure5_fpdu_with_leading_marker() {
    let mut tx = MarkerTx::new();
    let mut c = SoftCrc32c::new();
    let mut out = [0u8; 64];
    let n = write_fpdu(
        &mut out,
        &[&send_hdr(1, 42), &[0u8; 24]],
        Some(&mut c),
        Some(&mut tx),
    )
    .unwrap();
    assert_eq!(&out[..n], &rfc5044_figure5()[..]);
    assert_eq!(tx.position(), 0x34);
}

#[test]
fn rfc5044_figure6_fpdu_with_inner_marker() {
    // The second FPDU starts at stream octet 0x1ec; the marker at 0x200 points 0x14
    // octets back; CRC 84 92 58 98 (the MSN is 2: the first FPDU was a Send too).
    let mut tx = MarkerTx::at(0x1ec);
    let mut c = SoftCrc32c::new();
    let mut out = [0u8; 64];
    let n = write_fpdu(
        &mut out,
        &[&send_hdr(2, 42), &[0u8; 24]],
        Some(&mut c),
        Some(&mut tx),
    )
    .unwrap();
    let mut want = send_hdr(2, 42).to_vec();
    want.extend_from_slice(&[0, 0, 0, 0x14]);
    want.extend_from_slice(&[0; 24]);
    want.extend_from_slice(&[0x84, 0x92, 0x58, 0x98]);
    assert_eq!(&out[..n], &want[..]);
}

#[test]
fn rfc5044_figures_5_and_6_received_as_one_stream() {
    // First FPDU: marker + Send MSN 1 ending at 0x1ec; second: figure 6.
    let mut tx = Tx::new(true, true);
    tx.fpdu(&send_hdr(1, 18 + 464), &[7u8; 464]);
    assert_eq!(tx.out.len(), 0x1ec);
    tx.fpdu(&send_hdr(2, 42), &[0u8; 24]);
    assert_eq!(&tx.out[0x200..0x204], &[0, 0, 0, 0x14]);
    assert_eq!(&tx.out[tx.out.len() - 4..], &[0x84, 0x92, 0x58, 0x98]);
    let cfg = RxConfig {
        crc: true,
        markers: true,
        header: HeaderOptions::default(),
        sctp: false,
    };
    let (evs, err) = run(cfg, &tx.out);
    assert_eq!(err, None);
    assert_eq!(evs.len(), 6);
    assert_eq!(evs[1], Ev::Payload(vec![7u8; 464]));
    assert_eq!(evs[4], Ev::Payload(vec![0u8; 24]));
    assert_eq!(evs[5], Ev::End);

    // Figure 5 alone, as received bytes.
    let (evs, err) = run(cfg, &rfc5044_figure5());
    assert_eq!(err, None);
    assert!(matches!(evs[0], Ev::Header(h, true) if h.ulpdu_len == 42));
}

#[test]
fn c_siw_header_sizes() {
    // iwarp.h: iwarp_rdma_write/rresp 16, iwarp_send 20, iwarp_rdma_rreq 48,
    // iwarp_terminate 24 (all including the 2-byte mpa_len).
    assert_eq!(Opcode::RdmaWrite.header_len(), 16);
    assert_eq!(Opcode::ReadResponse.header_len(), 16);
    assert_eq!(Opcode::Send.header_len(), 20);
    assert_eq!(Opcode::SendSeInvalidate.header_len(), 20);
    assert_eq!(Opcode::ReadRequest.header_len(), 48);
    assert_eq!(Opcode::Terminate.header_len(), 24);
}

#[test]
fn rdma_write_header_bytes() {
    let h = FpduHeader {
        ulpdu_len: 14 + 100,
        last: false,
        opcode: Opcode::RdmaWrite,
        ddp: DdpHdr::Tagged(TaggedHdr {
            stag: 0x0000_1a2b,
            to: 0x7f00_0000_1000,
        }),
        rdmap: RdmapHdr::None,
    };
    let mut b = [0u8; 16];
    assert_eq!(h.encode(&mut b), Ok(16));
    assert_eq!(
        b,
        [
            0x00, 0x72, 0x81, 0x40, 0x00, 0x00, 0x1a, 0x2b, 0x00, 0x00, 0x7f, 0x00, 0x00, 0x00,
            0x10, 0x00
        ]
    );
    assert_eq!(FpduHeader::parse(&b, HeaderOptions::default()), Ok((h, 16)));
}

#[test]
fn read_request_header_bytes() {
    let rr = ReadRequest {
        sink_stag: 0x11,
        sink_to: 0x22,
        size: 0x33,
        src_stag: 0x44,
        src_to: 0x55,
    };
    let h = FpduHeader {
        ulpdu_len: 46,
        last: true,
        opcode: Opcode::ReadRequest,
        ddp: DdpHdr::Untagged(UntaggedHdr {
            rsvd_ulp: 0,
            qn: 1,
            msn: 1,
            mo: 0,
        }),
        rdmap: RdmapHdr::ReadRequest(rr),
    };
    let mut b = [0u8; 48];
    assert_eq!(h.encode(&mut b), Ok(48));
    let want: [u8; 48] = [
        0x00, 0x2e, 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, // untagged
        0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0x22, 0, 0, 0, 0x33, // sink, size
        0, 0, 0, 0x44, 0, 0, 0, 0, 0, 0, 0, 0x55, // source
    ];
    assert_eq!(b, want);
    assert_eq!(
        FpduHeader::parse(&want, HeaderOptions::default()),
        Ok((h, 48))
    );
}

#[test]
fn terminate_control_word_bits() {
    // iwarp.h TERM_MASK_LAYER 0xf0000000, ETYPE 0x0f000000, ECODE 0x00ff0000,
    // TERM_FLAG_M 0x8000, D 0x4000, R 0x2000.
    let mut b = [0u8; 4];
    TerminateHdr::new(TermError::LlpCrc, HeaderCopy::None)
        .encode(&mut b)
        .unwrap();
    assert_eq!(u32::from_be_bytes(b), 0x2002_0000);
    TerminateHdr::new(TermError::DdpUntaggedMsnRange, HeaderCopy::Ddp)
        .encode(&mut b)
        .unwrap();
    assert_eq!(u32::from_be_bytes(b), 0x1203_c000);
    TerminateHdr::new(TermError::RdmapAccessRights, HeaderCopy::DdpRdmap)
        .encode(&mut b)
        .unwrap();
    assert_eq!(u32::from_be_bytes(b), 0x0102_e000);
    let (t, _) = TerminateHdr::parse(&[0x12, 0x03, 0xc0, 0x00]).unwrap();
    assert_eq!(t.error(), Some(TermError::DdpUntaggedMsnRange));
    assert!(t.m && t.d && !t.r);
}

#[test]
fn terminate_message_copies_the_offending_read_request() {
    let mut rr = [0u8; 48];
    FpduHeader {
        ulpdu_len: 46,
        last: true,
        opcode: Opcode::ReadRequest,
        ddp: DdpHdr::Untagged(UntaggedHdr {
            rsvd_ulp: 0,
            qn: 1,
            msn: 7,
            mo: 0,
        }),
        rdmap: RdmapHdr::ReadRequest(ReadRequest {
            sink_stag: 1,
            sink_to: 2,
            size: 3,
            src_stag: 4,
            src_to: 5,
        }),
    }
    .encode(&mut rr)
    .unwrap();
    let mut out = [0u8; 80];
    let n = build_terminate(&mut out, 1, TermError::RdmapInvalidStag, Some(&rr)).unwrap();
    // 24-byte Terminate header, 20 bytes of DDP copy, 28 bytes of RDMA copy.
    assert_eq!(n, 24 + 20 + 28);
    assert_eq!(&out[..4], &[0x00, (n - 2) as u8, 0x41, 0x47]);
    assert_eq!(
        &out[4..20],
        &[0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0]
    );
    assert_eq!(&out[20..24], &[0x01, 0x00, 0xe0, 0x00]);
    assert_eq!(&out[24..44], &rr[..20]);
    assert_eq!(&out[44..72], &rr[20..48]);
    let (h, hl) = FpduHeader::parse(&out[..n], HeaderOptions::default()).unwrap();
    assert_eq!(hl, 24);
    let RdmapHdr::Terminate(t) = h.rdmap else {
        panic!()
    };
    let info = TerminateInfo::parse(&t, &out[24..n]);
    assert_eq!(info.seg_len, Some(46));
    assert!(matches!(info.ddp, Some((c, DdpHdr::Untagged(u))) if c.opcode() == 1 && u.msn == 7));
    assert_eq!(info.rdma.map(|r| r.src_to), Some(5));
}

#[test]
fn terminate_message_for_llp_error_has_no_copy() {
    let mut out = [0u8; 80];
    let n = build_terminate(&mut out, 1, TermError::LlpCrc, Some(&send_hdr(1, 18))).unwrap();
    assert_eq!(n, 24);
    let mut out2 = [0u8; 80];
    let n2 = build_terminate(
        &mut out2,
        1,
        TermError::DdpUntaggedNoBuffer,
        Some(&send_hdr(1, 18)),
    )
    .unwrap();
    assert_eq!(n2, 44);
    assert_eq!(&out2[20..24], &[0x12, 0x02, 0xc0, 0x00]);
    assert!(build_terminate(
        &mut [0u8; 30],
        1,
        TermError::DdpUntaggedNoBuffer,
        Some(&send_hdr(1, 18))
    )
    .is_err());
}

#[test]
fn pad_and_trailer() {
    assert_eq!(pad_len(42), 0);
    assert_eq!(pad_len(16), 2);
    assert_eq!(pad_len(17), 1);
    assert_eq!(pad_len(18), 0);
    assert_eq!(pad_len(19), 3);
    assert_eq!(pad_len(u16::MAX), 3);
    let (t, n) = trailer(2, 0x8399_2352);
    assert_eq!(&t[..n], &[0, 0, 0x52, 0x23, 0x99, 0x83]);
    assert_eq!(crc_to_wire(0x8399_2352), [0x52, 0x23, 0x99, 0x83]);
}

#[test]
fn mulpdu_formulas_rfc5044_section_4_5() {
    assert_eq!(mulpdu(1460, false), 1454);
    assert_eq!(mulpdu(1460, true), 1460 - (6 + 4 * 3));
    assert_eq!(mulpdu(1448, false), 1442);
    assert_eq!(mulpdu(1447, false), 1447 - (6 + 3));
    assert_eq!(mulpdu(9000, true), 9000 - (6 + 4 * 18));
    assert_eq!(mulpdu(100, false), 128);
    assert_eq!(mulpdu(u32::MAX, false), u16::MAX);
}

#[test]
fn rfc5041_section_5_2_segmentation_examples() {
    // Untagged 2048-octet message, MULPDU 1500: MO 0 with 1482 octets, MO 1482 with 566.
    let msg = Message {
        opcode: Opcode::Send,
        target: Target::Untagged {
            qn: 0,
            msn: 1,
            rsvd_ulp: 0,
        },
        rdmap: RdmapHdr::None,
        len: 2048,
    };
    let segs: Vec<_> = Segmenter::new(msg, 1500).unwrap().collect();
    assert_eq!(segs.len(), 2);
    assert_eq!(
        (segs[0].payload_offset, segs[0].payload_len, segs[0].last),
        (0, 1482, false)
    );
    assert_eq!(
        (segs[1].payload_offset, segs[1].payload_len, segs[1].last),
        (1482, 566, true)
    );
    assert!(matches!(segs[1].fpdu.ddp, DdpHdr::Untagged(u) if u.mo == 1482));
    // Tagged 2048-octet message at TO 16384: TO 16384 with 1486, TO 17870 with 562.
    let msg = Message {
        opcode: Opcode::RdmaWrite,
        target: Target::Tagged { stag: 9, to: 16384 },
        rdmap: RdmapHdr::None,
        len: 2048,
    };
    let segs: Vec<_> = Segmenter::new(msg, 1500).unwrap().collect();
    assert_eq!(segs.len(), 2);
    assert_eq!(segs[0].payload_len, 1486);
    assert!(matches!(segs[1].fpdu.ddp, DdpHdr::Tagged(t) if t.to == 17870));
    assert_eq!(segs[1].payload_len, 562);
    assert!(Ctrl(u16::from_be_bytes([
        segs[1].header()[2],
        segs[1].header()[3]
    ]))
    .last());
}

/// A full MPA request/reply exchange as bytes, as a C siw initiator with its
/// defaults and this crate as the responder would perform it.
#[test]
fn mpa_exchange_as_bytes() {
    let c_siw = MpaPolicy::c_siw();
    let (hdr, v2) = build_request(&c_siw);
    let pd = b"hello";
    let req = MpaFrame {
        header: hdr,
        ird_ord: v2,
        private_data: pd,
    };
    let mut buf = [0u8; 64];
    let n = req.encode(&mut buf).unwrap();
    let mut want = b"MPA ID Req Frame".to_vec();
    want.extend_from_slice(&[0x10, 0x02, 0x00, 0x09, 0x00, 0x80, 0x00, 0x80]);
    want.extend_from_slice(pd);
    assert_eq!(&buf[..n], &want[..]);

    // Our responder, default policy (CRC on, per RFC 5044 section 4.4).
    let ours = MpaPolicy::default();
    let (parsed, used) = MpaFrame::parse(&buf[..n], PD_MAX_SIW).unwrap();
    assert_eq!(used, n);
    let acc = negotiate_responder(&ours, &parsed).unwrap();
    let mut rbuf = [0u8; 64];
    let rn = acc.reply_frame(b"").encode(&mut rbuf).unwrap();
    let mut want = b"MPA ID Rep Frame".to_vec();
    want.extend_from_slice(&[0x50, 0x02, 0x00, 0x04, 0x00, 0x80, 0x00, 0x80]);
    assert_eq!(&rbuf[..rn], &want[..]);
    assert!(acc.agreed.crc && acc.agreed.enhanced && acc.agreed.rtr.is_none());

    // The initiator accepts the reply.
    let (reply, _) = MpaFrame::parse(&rbuf[..rn], PD_MAX_SIW).unwrap();
    let agreed = negotiate_initiator(&c_siw, &req, &reply).unwrap();
    assert!(agreed.crc);
    assert_eq!((agreed.ird, agreed.ord), (128, 128));
    assert_eq!(agreed.revision, 2);
}

#[test]
fn mpa_header_parse_limits() {
    let mut h = MpaHeader::new(FrameKind::Request, 1);
    h.pd_len = 257;
    let mut b = [0u8; 20];
    h.encode(&mut b).unwrap();
    assert!(MpaHeader::parse(&b, PD_MAX_SIW).is_err());
    assert!(MpaHeader::parse(&b, PD_MAX_WIRE).is_ok());
    h.pd_len = 513;
    h.encode(&mut b).unwrap();
    assert!(MpaHeader::parse(&b, 100_000).is_err());
}

#[test]
fn ird_ord_word_bits() {
    let w = IrdOrd {
        ird: 0x10,
        ord: 0x20,
        p2p: true,
        rtr: RtrSet {
            send: true,
            write: true,
            read: false,
        },
    };
    assert_eq!(w.to_bytes(), [0xc0, 0x10, 0x80, 0x20]);
    let w = IrdOrd {
        ird: 0x3fff,
        ord: 1,
        p2p: false,
        rtr: RtrSet {
            send: false,
            write: false,
            read: true,
        },
    };
    assert_eq!(w.to_bytes(), [0x3f, 0xff, 0x40, 0x01]);
    assert_eq!(IrdOrd::from_bytes([0x3f, 0xff, 0x40, 0x01]), w);
}
