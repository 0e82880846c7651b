// SPDX-License-Identifier: GPL-2.0

//! Helpers shared by the integration tests: run the receiver over a stream cut into
//! chunks and collect owned events, and build streams of whole messages.
#![allow(dead_code, unreachable_pub)]

use std::cell::RefCell;

use siw_proto::crc::{Crc32c, CrcOf, SoftCrc32c};
use siw_proto::error::TermError;
use siw_proto::fpdu::{write_fpdu, MarkerTx};
use siw_proto::rdmap::FpduHeader;
use siw_proto::rx::{Event, Input, Receiver, RxConfig};
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

/// The stream cut at the given (sorted) positions.
pub fn cut<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut chunks = Vec::new();
    let mut prev = 0;
    for &c in cuts {
        let c = c.clamp(prev, stream.len());
        chunks.push(&stream[prev..c]);
        prev = c;
    }
    chunks.push(&stream[prev..]);
    chunks
}

/// Feeds the stream cut at the given (sorted, in-range) positions.
pub fn run_split(cfg: RxConfig, stream: &[u8], cuts: &[usize]) -> (Vec<Ev>, Option<TermError>) {
    run_chunks(cfg, &cut(stream, cuts))
}

/// How often the receiver read each octet of a stream fed as [`Tracked`] pieces.
#[derive(Clone, Debug, Default)]
pub struct Reads {
    /// Per stream octet: how often it was copied out ([`Input::copy_to`]).
    pub copies: Vec<u32>,
    /// Per stream octet: how often the CRC ran over it where it lies ([`CrcOf`]).
    pub crc: Vec<u32>,
    /// Per stream octet: whether it was handed out as payload.
    pub payload: Vec<bool>,
    /// Reads (copies and the CRC alike) see each octet changed by the number of reads
    /// before (memory that someone writes meanwhile): only the first sees what was sent.
    pub changing: bool,
}

/// Received octets as the kernel's pieces of an skb are to the receiver: read only through
/// [`Input`] (and [`CrcOf`]), every read counted in `reads`, by stream position.
#[derive(Clone, Copy)]
pub struct Tracked<'a> {
    bytes: &'a [u8],
    at: usize,
    reads: &'a RefCell<Reads>,
}

impl<'a> Tracked<'a> {
    /// The octets, unseen by the counts (for the test's own comparisons).
    pub fn peek(&self) -> &'a [u8] {
        self.bytes
    }
}

impl Input for Tracked<'_> {
    fn len(&self) -> usize {
        self.bytes.len()
    }

    fn split_at(self, n: usize) -> (Self, Self) {
        let (a, b) = self.bytes.split_at(n.min(self.bytes.len()));
        (
            Self { bytes: a, ..self },
            Self {
                bytes: b,
                at: self.at + a.len(),
                ..self
            },
        )
    }

    fn copy_to(&self, dst: &mut [u8]) -> usize {
        let n = self.bytes.len().min(dst.len());
        dst[..n].copy_from_slice(&self.split_at(n).0.read(false));
        n
    }
}

impl Tracked<'_> {
    /// The octets as a read now sees them, the read counted (as a copy, or by the CRC).
    fn read(&self, crc: bool) -> Vec<u8> {
        let mut r = self.reads.borrow_mut();
        let changing = r.changing;
        let mut out = Vec::with_capacity(self.bytes.len());
        for (i, &b) in self.bytes.iter().enumerate() {
            let k = self.at + i;
            let before = r.copies[k] + r.crc[k];
            out.push(if changing {
                b ^ (before as u8).wrapping_mul(0x5b)
            } else {
                b
            });
            if crc {
                r.crc[k] += 1;
            } else {
                r.copies[k] += 1;
            }
        }
        out
    }
}

impl<'a> CrcOf<Tracked<'a>> for SoftCrc32c {
    fn update_from(&mut self, data: Tracked<'a>) {
        self.update(&data.read(true));
    }
}

/// [`run_chunks`] with the chunks fed as [`Tracked`] pieces: the events, the error and how
/// each octet was read. With `changing`, an octet read again reads differently.
pub fn run_chunks_tracked(
    cfg: RxConfig,
    chunks: &[&[u8]],
    changing: bool,
) -> ((Vec<Ev>, Option<TermError>), Reads) {
    let total: usize = chunks.iter().map(|c| c.len()).sum();
    let reads = RefCell::new(Reads {
        copies: vec![0; total],
        crc: vec![0; total],
        payload: vec![false; total],
        changing,
    });
    let mut rx = Receiver::new(cfg, SoftCrc32c::new());
    let mut evs = Vec::new();
    let mut at = 0usize;
    let mut open: Option<usize> = None;
    let mark = |p: &Tracked<'_>| {
        let mut r = reads.borrow_mut();
        for o in &mut r.payload[p.at..p.at + p.bytes.len()] {
            *o = true;
        }
    };
    let mut err = None;
    'chunks: for chunk in chunks {
        let mut rest = Tracked {
            bytes: chunk,
            at,
            reads: &reads,
        };
        at += chunk.len();
        while !rest.is_empty() {
            match rx.feed_from(rest) {
                Ok(step) => {
                    assert!(step.consumed > 0 && step.consumed <= rest.len());
                    rest = rest.split_at(step.consumed).1;
                    let payload_len = rx.current_header().map(|h| h.payload_len());
                    match step.event {
                        Some(Event::Header { first }) => {
                            let header = *rx.current_header().expect("header event");
                            evs.push(Ev::Header(header, first));
                            open = Some(0);
                        }
                        Some(Event::Payload(p)) => {
                            mark(&p);
                            // Never more than the header announced, whatever was read.
                            let got = open.as_mut().expect("payload after a header");
                            *got += p.len();
                            assert!(Some(*got) <= payload_len);
                            match evs.last_mut() {
                                Some(Ev::Payload(v)) => v.extend_from_slice(p.peek()),
                                _ => evs.push(Ev::Payload(p.peek().to_vec())),
                            }
                        }
                        Some(Event::End) => {
                            assert_eq!(open.take().unwrap_or(0), payload_len.unwrap_or(0));
                            evs.push(Ev::End);
                        }
                        Some(Event::Fpdu { first, payload }) => {
                            mark(&payload);
                            let header = *rx.current_header().expect("fpdu event");
                            assert_eq!(payload.len(), header.payload_len());
                            evs.push(Ev::Header(header, first));
                            if !payload.is_empty() {
                                evs.push(Ev::Payload(payload.peek().to_vec()));
                            }
                            evs.push(Ev::End);
                        }
                        None => assert!(rest.is_empty()),
                    }
                }
                Err(e) => {
                    err = Some(e);
                    break 'chunks;
                }
            }
        }
    }
    ((evs, err), reads.into_inner())
}

/// [`run_split`] with [`Tracked`] pieces.
pub fn run_split_tracked(
    cfg: RxConfig,
    stream: &[u8],
    cuts: &[usize],
    changing: bool,
) -> ((Vec<Ev>, Option<TermError>), Reads) {
    run_chunks_tracked(cfg, &cut(stream, cuts), changing)
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
