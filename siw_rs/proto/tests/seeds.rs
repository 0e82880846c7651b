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

#[test]
fn mpa_frame_seeds_parse() {
    for (name, data) in seeds("mpa_frame") {
        let (_, len) =
            MpaFrame::parse(&data[1..], PD_MAX_WIRE).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        assert_eq!(len, data.len() - 1, "{name}");
    }
}
