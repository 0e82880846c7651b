// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the MPA request/reply parser, the streaming frame reader and both
//! negotiation roles.
//!
//! Input: byte 0 selects the private data limit and the policy, the rest is the
//! frame. A frame that parses must re-encode to the same bytes, the streaming reader
//! must agree with the one-shot parser, and negotiation must not panic; an accepted
//! connection's reply must parse back and be accepted by the initiator side with
//! consistent parameters. The private data also goes through the parser of connections
//! made by `modify_qp` (`gidconn`): what parses must re-encode to the same octets, and the
//! initiator's reading of it must not panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use siw_proto::gidconn::{self, Message};
use siw_proto::mpa::{
    build_request, negotiate_initiator, negotiate_responder, MpaFrame, MpaPolicy, MpaReader,
    RtrSet, MAX_FRAME_LEN, PD_MAX_SIW, PD_MAX_WIRE,
};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, frame)) = data.split_first() else {
        return;
    };
    let max_pd = if sel & 1 != 0 { PD_MAX_WIRE } else { PD_MAX_SIW };
    let policy = MpaPolicy {
        revision: 1 + (sel >> 1 & 1),
        crc: sel & 4 != 0,
        markers_rx: sel & 8 != 0,
        markers_tx: sel & 16 != 0,
        p2p: sel & 32 != 0,
        rtr: if sel & 64 != 0 { RtrSet::WRITE_READ } else { RtrSet { send: true, ..RtrSet::NONE } },
        relaxed: sel & 128 != 0,
        ..MpaPolicy::default()
    };

    let parsed = MpaFrame::parse(frame, max_pd);
    // The streaming reader, fed in two pieces, agrees.
    let mut reader = MpaReader::new(max_pd);
    let cut = usize::from(sel) % (frame.len() + 1);
    let r1 = reader.feed(&frame[..cut]);
    let streamed = match r1 {
        Ok((n, true)) => Some((n, reader.frame())),
        Ok((n, false)) => {
            assert_eq!(n, cut);
            match reader.feed(&frame[cut..]) {
                Ok((m, true)) => Some((n + m, reader.frame())),
                Ok((_, false)) => None,
                Err(_) => None,
            }
        }
        Err(_) => None,
    };
    let Ok((f, len)) = parsed else {
        if let Some((_, Ok(_))) = streamed {
            panic!("reader accepted what the parser refused");
        }
        return;
    };
    let (n, g) = streamed.expect("reader must accept what the parser accepts");
    assert_eq!(n, len);
    assert_eq!(g.expect("frame"), f);
    let mut out = [0u8; MAX_FRAME_LEN];
    let m = f.encode(&mut out).expect("re-encode");
    assert_eq!(&out[..m], &frame[..len]);

    // The private data as a message of a connection made by `modify_qp`.
    if let Some(msg) = Message::parse(f.private_data) {
        assert_eq!(&msg.encode()[..], f.private_data);
    }
    let _ = gidconn::outcome(u32::from(sel), 7, 9, f.header.reject, f.private_data);

    // The responder role on this frame.
    if let Ok(acc) = negotiate_responder(&policy, &f) {
        let mut rbuf = [0u8; MAX_FRAME_LEN];
        let rn = acc.reply_frame(f.private_data).encode(&mut rbuf).expect("reply");
        let (reply, _) = MpaFrame::parse(&rbuf[..rn], PD_MAX_WIRE).expect("reply parses");
        // An initiator that sent this frame accepts the reply consistently.
        if let Ok(agreed) = negotiate_initiator(&policy, &f, &reply) {
            assert_eq!(agreed.crc, acc.agreed.crc);
            assert_eq!(agreed.revision, acc.agreed.revision);
            assert_eq!(agreed.markers_tx, acc.agreed.markers_rx);
        }
    }
    // The initiator role, treating this frame as the reply to our request.
    let (h, v2) = build_request(&policy);
    let req = MpaFrame { header: h, ird_ord: v2, private_data: b"" };
    let _ = negotiate_initiator(&policy, &req, &f);
});
