// SPDX-License-Identifier: GPL-2.0

//! Helpers shared by the integration tests: run the receiver over a stream cut into
//! chunks and collect owned events, and build streams of whole messages.
#![allow(dead_code, unreachable_pub)]

use siw_proto::crc::{Crc32c, SoftCrc32c};
use siw_proto::error::TermError;
use siw_proto::fpdu::{write_fpdu, MarkerTx};
use siw_proto::rdmap::FpduHeader;
use siw_proto::rx::{Event, Receiver, RxConfig};
use siw_proto::segment::{Message, Segmenter};

/// An owned receiver event; payload slices of one FPDU are merged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ev {
    Header(FpduHeader, bool),
    Payload(Vec<u8>),
    End,
}

/// Feeds `chunks` in order and returns the events and the error, if any.
pub fn run_chunks(cfg: RxConfig, chunks: &[&[u8]]) -> (Vec<Ev>, Option<TermError>) {
    let mut rx = Receiver::new(cfg, SoftCrc32c::new());
    let mut evs = Vec::new();
    for chunk in chunks {
        let mut rest: &[u8] = chunk;
        let mut guard = 0usize;
        while !rest.is_empty() {
            guard += 1;
            assert!(guard <= chunk.len() + 1, "receiver made no progress");
            match rx.feed(rest) {
                Ok(step) => {
                    assert!(step.consumed <= rest.len());
                    assert!(
                        step.consumed > 0,
                        "non-empty input must be consumed (event {:?})",
                        step.event
                    );
                    rest = &rest[step.consumed..];
                    match step.event {
                        Some(Event::Header { first }) => {
                            let header = *rx.current_header().expect("header event");
                            evs.push(Ev::Header(header, first))
                        }
                        Some(Event::Payload(p)) => match evs.last_mut() {
                            Some(Ev::Payload(v)) => v.extend_from_slice(p),
                            _ => evs.push(Ev::Payload(p.to_vec())),
                        },
                        Some(Event::End) => evs.push(Ev::End),
                        Some(Event::Fpdu { first, payload }) => {
                            // The events it stands for.
                            let header = *rx.current_header().expect("fpdu event");
                            assert_eq!(rx.raw_header().len(), header.header_len());
                            assert!(rx.at_fpdu_boundary());
                            evs.push(Ev::Header(header, first));
                            if !payload.is_empty() {
                                evs.push(Ev::Payload(payload.to_vec()));
                            }
                            evs.push(Ev::End);
                        }
                        None => assert!(rest.is_empty()),
                    }
                }
                Err(e) => {
                    assert_eq!(rx.feed(b"x"), Err(e), "errors are final");
                    return (evs, Some(e));
                }
            }
        }
    }
    (evs, None)
}

/// Feeds the whole stream at once.
pub fn run(cfg: RxConfig, stream: &[u8]) -> (Vec<Ev>, Option<TermError>) {
    run_chunks(cfg, &[stream])
}

/// Feeds the stream cut at the given (sorted, in-range) positions.
pub fn run_split(cfg: RxConfig, stream: &[u8], cuts: &[usize]) -> (Vec<Ev>, Option<TermError>) {
    let mut chunks = Vec::new();
    let mut prev = 0;
    for &c in cuts {
        let c = c.clamp(prev, stream.len());
        chunks.push(&stream[prev..c]);
        prev = c;
    }
    chunks.push(&stream[prev..]);
    run_chunks(cfg, &chunks)
}

/// Transmit-side framing state for building test streams.
pub struct Tx {
    pub crc: bool,
    pub markers: Option<MarkerTx>,
    pub out: Vec<u8>,
}

impl Tx {
    pub fn new(crc: bool, markers: bool) -> Self {
        Self {
            crc,
            markers: markers.then(MarkerTx::new),
            out: Vec::new(),
        }
    }

    /// Frames one FPDU from its header and payload.
    pub fn fpdu(&mut self, header: &[u8], payload: &[u8]) {
        let mut buf =
            vec![
                0u8;
                header.len() + payload.len() + 8 + 4 * ((header.len() + payload.len()) / 400 + 3)
            ];
        let mut c = SoftCrc32c::new();
        let n = write_fpdu(
            &mut buf,
            &[header, payload],
            self.crc.then_some(&mut c),
            self.markers.as_mut(),
        )
        .expect("frame");
        self.out.extend_from_slice(&buf[..n]);
    }

    /// Segments and frames a whole message whose payload is `data`.
    pub fn message(&mut self, msg: Message, data: &[u8], mulpdu: u16) {
        assert_eq!(msg.len as usize, data.len());
        for seg in Segmenter::new(msg, mulpdu).expect("segmenter") {
            let off = seg.payload_offset as usize;
            let len = seg.payload_len as usize;
            self.fpdu(seg.header(), &data[off..off + len]);
        }
    }
}

/// The CRC32C of `data`, for tests.
pub fn crc(data: &[u8]) -> u32 {
    let mut c = SoftCrc32c::new();
    c.update(data);
    c.value()
}
