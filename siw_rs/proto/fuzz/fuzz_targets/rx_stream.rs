// SPDX-License-Identifier: GPL-2.0

//! Fuzzes the streaming receiver with hostile bytes.
//!
//! Input: byte 0 selects CRC, markers and RFC 7306; byte 1 seeds the chunk sizes; the
//! rest is the TCP stream. The stream is received whole and cut into chunks; both
//! runs must give the same events (payloads merged per FPDU) and the same error, every
//! call must make progress, and nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use siw_proto::crc::SoftCrc32c;
use siw_proto::error::TermError;
use siw_proto::rdmap::{FpduHeader, HeaderOptions};
use siw_proto::rx::{Event, Receiver, RxConfig};

#[derive(Debug, PartialEq)]
enum Ev {
    Header(FpduHeader, bool),
    Payload(Vec<u8>),
    End,
}

fn run(cfg: RxConfig, data: &[u8], mut seed: u8) -> (Vec<Ev>, Option<TermError>) {
    let mut rx = Receiver::new(cfg, SoftCrc32c::new());
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
                        Some(Event::Header { header, first }) => {
                            assert_eq!(rx.raw_header().len(), header.header_len());
                            evs.push(Ev::Header(header, first))
                        }
                        Some(Event::Payload(p)) => match evs.last_mut() {
                            Some(Ev::Payload(v)) => v.extend_from_slice(p),
                            _ => evs.push(Ev::Payload(p.to_vec())),
                        },
                        Some(Event::End) => evs.push(Ev::End),
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
    (evs, None)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let cfg = RxConfig {
        crc: data[0] & 1 != 0,
        markers: data[0] & 2 != 0,
        header: HeaderOptions { rfc7306: data[0] & 4 != 0 },
        sctp: false,
    };
    let stream = &data[2..];
    let whole = run(cfg, stream, 0);
    let split = run(cfg, stream, data[1] | 1);
    assert_eq!(whole, split);
});
