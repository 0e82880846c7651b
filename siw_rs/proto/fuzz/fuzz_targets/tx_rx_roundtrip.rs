// SPDX-License-Identifier: GPL-2.0

//! Differential fuzzing of the transmit side against the receiver: messages described
//! by the input are segmented, framed (pad, CRC, markers) and received back; the
//! reassembled messages must equal what was sent. Segmented through the iterator, or
//! (input bit 2) through `Segmenter::next_into`, the header encoded in place as the
//! driver's transmit path does it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use siw_proto::crc::SoftCrc32c;
use siw_proto::fpdu::{mulpdu, write_fpdu, MarkerTx};
use siw_proto::rdmap::{HeaderOptions, Opcode, RdmapHdr, MAX_HDR_LEN};
use siw_proto::rx::{Event, Receiver, RxConfig};
use siw_proto::segment::{Message, Segmenter, Target};

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let crc = data[0] & 1 != 0;
    let markers = data[0] & 2 != 0;
    let in_place = data[0] & 4 != 0;
    let emss = 64 + u32::from(u16::from_be_bytes([data[1], data[2]]) % 9000);
    let mul = mulpdu(emss, markers);
    let mut tx_markers = markers.then(MarkerTx::new);
    let mut stream = Vec::new();
    let mut sent: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut msn = 1u32;
    for (i, desc) in data[3..].chunks(3).enumerate() {
        let len = usize::from(desc[0]) * (usize::from(*desc.get(1).unwrap_or(&0)) % 32 + 1);
        let tagged = desc.get(2).is_some_and(|b| b & 1 != 0);
        let payload: Vec<u8> = (0..len).map(|k| (k as u8) ^ (i as u8)).collect();
        let (opcode, target) = if tagged {
            (Opcode::RdmaWrite, Target::Tagged { stag: i as u32, to: (i as u64) << 32 })
        } else {
            msn += 1;
            (Opcode::Send, Target::Untagged { qn: 0, msn: msn - 1, rsvd_ulp: 0 })
        };
        let msg = Message { opcode, target, rdmap: RdmapHdr::None, len: len as u32 };
        let mut segs = Segmenter::new(msg, mul).expect("segmenter");
        loop {
            let mut hdr = [0u8; MAX_HDR_LEN];
            let (hlen, off, plen) = if in_place {
                let Some(info) = segs.next_into(&mut hdr) else { break };
                (info.header_len, info.payload_offset, info.payload_len)
            } else {
                let Some(seg) = segs.next() else { break };
                assert!(seg.fpdu.ulpdu_len <= mul);
                let h = seg.header();
                hdr[..h.len()].copy_from_slice(h);
                (h.len(), seg.payload_offset, seg.payload_len)
            };
            let off = off as usize;
            let body = &payload[off..off + plen as usize];
            let mut buf = vec![0u8; 2 * (hlen + body.len()) + 64];
            let mut c = SoftCrc32c::new();
            let n = write_fpdu(&mut buf, &[&hdr[..hlen], body], crc.then_some(&mut c), tx_markers.as_mut())
                .expect("frame");
            stream.extend_from_slice(&buf[..n]);
        }
        sent.push((tagged, payload));
    }
    let cfg = RxConfig { crc, markers, header: HeaderOptions::default(), sctp: false };
    let mut rx = Receiver::new(cfg, SoftCrc32c::new());
    let mut got: Vec<(bool, Vec<u8>)> = Vec::new();
    let mut cur = 0usize;
    let mut rest: &[u8] = &stream;
    while !rest.is_empty() {
        let step = rx.feed(rest).expect("valid stream");
        rest = &rest[step.consumed..];
        match step.event {
            Some(Event::Header { first }) => {
                let tagged = rx.current_header().expect("header event").opcode.is_tagged();
                if first {
                    got.push((tagged, Vec::new()));
                }
                cur = got.iter().rposition(|(t, _)| *t == tagged).expect("message");
            }
            Some(Event::Payload(p)) => got[cur].1.extend_from_slice(p),
            Some(Event::Fpdu { first, payload }) => {
                let tagged = rx.current_header().expect("fpdu event").opcode.is_tagged();
                if first {
                    got.push((tagged, Vec::new()));
                }
                cur = got.iter().rposition(|(t, _)| *t == tagged).expect("message");
                got[cur].1.extend_from_slice(payload);
            }
            Some(Event::End) | None => {}
        }
    }
    assert!(rx.at_fpdu_boundary());
    assert_eq!(got, sent);
});
