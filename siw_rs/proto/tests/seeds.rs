// SPDX-License-Identifier: GPL-2.0

//! The committed fuzz seed corpus is valid input: every stream seed decodes without
//! error (so fuzzing starts deep in the receiver) and every MPA seed parses.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

mod common;

use std::fs;
use std::path::PathBuf;

use common::{run_split, Ev};
use siw_proto::mpa::{MpaFrame, PD_MAX_WIRE};
use siw_proto::rdmap::HeaderOptions;
use siw_proto::rx::RxConfig;

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut v: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-")
        })
        .map(|p| (p.display().to_string(), fs::read(&p).unwrap()))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no seeds in {}", dir.display());
    v
}

#[test]
fn rx_stream_seeds_are_valid_streams() {
    for (name, data) in seeds("rx_stream") {
        if data[0] & 8 != 0 {
            sctp_seed_is_valid(&name, &data);
            continue;
        }
        let cfg = RxConfig {
            crc: data[0] & 1 != 0,
            markers: data[0] & 2 != 0,
            header: HeaderOptions {
                rfc7306: data[0] & 4 != 0,
            },
            sctp: false,
        };
        let (evs, err) = run_split(cfg, &data[2..], &[1, 7, 100]);
        assert_eq!(err, None, "{name}");
        assert!(evs.iter().filter(|e| **e == Ev::End).count() >= 2, "{name}");
    }
}

/// A seed in the fuzzer's SCTP mode (`fuzz_targets/rx_stream.rs`): messages of a 2-byte
/// length, a PPID byte and the message, for this end's session (passive with bit 4): every
/// message is legal, and every DDP segment is taken whole without error.
fn sctp_seed_is_valid(name: &str, data: &[u8]) {
    use siw_proto::sctp::{Received, Role, Session, SSN_LEN};
    let cfg = RxConfig {
        crc: false,
        markers: false,
        header: HeaderOptions {
            rfc7306: data[0] & 4 != 0,
        },
        sctp: true,
    };
    let role = if data[0] & 16 != 0 {
        Role::Passive
    } else {
        Role::Active
    };
    let mut session = Session::new(role);
    if role == Role::Active {
        session.initiate_sent().unwrap();
    }
    let mut rx = siw_proto::rx::Receiver::new(cfg, siw_proto::crc::SoftCrc32c::new());
    let mut rest = &data[2..];
    let mut ends = 0;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_be_bytes([rest[0], rest[1]]));
        let ppid = u32::from(rest[2]);
        let msg = &rest[3..3 + len];
        rest = &rest[3 + len..];
        match session.receive(ppid, msg).unwrap_or_else(|e| panic!("{name}: {e:?}")) {
            Received::Initiate(_) => session.answered(true).unwrap(),
            Received::Segment(_) => {
                rx.start_segment(msg.len() - SSN_LEN).unwrap();
                let mut m = msg;
                loop {
                    let step = rx.feed(m).unwrap_or_else(|e| panic!("{name}: {e:?}"));
                    m = &m[step.consumed..];
                    if step.event == Some(siw_proto::rx::Event::End) {
                        ends += 1;
                        break;
                    }
                }
                assert!(m.is_empty(), "{name}");
            }
            _ => {}
        }
    }
    assert!(rest.is_empty(), "{name}");
    assert!(ends >= 2, "{name}");
}

#[test]
fn mpa_frame_seeds_parse() {
    for (name, data) in seeds("mpa_frame") {
        let (_, len) =
            MpaFrame::parse(&data[1..], PD_MAX_WIRE).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(len, data.len() - 1, "{name}");
    }
}
