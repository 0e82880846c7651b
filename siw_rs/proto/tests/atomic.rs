// SPDX-License-Identifier: GPL-2.0

//! RFC 7306 atomics: the responder's arithmetic against the RFC's own bit-by-bit
//! definition, the request checks, and the header layouts byte by byte.
#![allow(
    missing_docs,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects
)]

use proptest::prelude::*;
use siw_proto::error::TermError;
use siw_proto::rdmap::*;

/// RFC 7306 section 5.1.1, the masked FetchAdd pseudocode, transcribed bit by bit.
fn fetch_add_rfc(orig: u64, add: u64, mask: u64) -> u64 {
    let mut carry = 0u64;
    let mut out = 0u64;
    for bit in 0..64 {
        let loc = 1u64 << bit;
        let val1 = (orig >> bit) & 1;
        let val2 = (add >> bit) & 1;
        let sum = carry + val1 + val2;
        carry = (sum & 2) >> 1;
        out |= (sum & 1) << bit;
        carry = u64::from(carry != 0 && mask & loc == 0);
    }
    out
}

fn req(
    aop: u8,
    to: u64,
    add_swap: u64,
    add_swap_mask: u64,
    compare: u64,
    compare_mask: u64,
) -> AtomicRequest {
    AtomicRequest {
        aop,
        req_id: 7,
        stag: 0x1234_5600,
        to,
        add_swap,
        add_swap_mask,
        compare,
        compare_mask,
    }
}

#[test]
fn fetch_add_plain_and_masked() {
    // No mask: one 64-bit add, wrapping.
    assert_eq!(req(AOP_FETCH_ADD, 0, 5, 0, 0, !0).apply(10), 15);
    assert_eq!(req(AOP_FETCH_ADD, 0, 1, 0, 0, !0).apply(u64::MAX), 0);
    // Two 32-bit fields: bit 31 marks the top of the low field; its carry is dropped.
    let r = req(AOP_FETCH_ADD, 0, 0x0000_0001_0000_0001, 1 << 31, 0, 0);
    assert_eq!(r.apply(0x0000_0005_ffff_ffff), 0x0000_0006_0000_0000);
    // Eight 8-bit fields.
    let r = req(
        AOP_FETCH_ADD,
        0,
        0x0101_0101_0101_0101,
        0x8080_8080_8080_8080,
        0,
        0,
    );
    assert_eq!(r.apply(0xff00_ff00_ff00_ff00), 0x0001_0001_0001_0001);
}

#[test]
fn cmp_swap_plain_and_masked() {
    // Plain: compare all 64 bits, swap all 64 bits.
    let r = req(AOP_CMP_SWAP, 8, 99, !0, 42, !0);
    assert_eq!(r.apply(42), 99);
    assert_eq!(r.apply(43), 43);
    // Compare only the low byte, swap only the high 32 bits.
    let r = req(
        AOP_CMP_SWAP,
        8,
        0xaaaa_aaaa_0000_0000,
        0xffff_ffff_0000_0000,
        0x11,
        0xff,
    );
    assert_eq!(r.apply(0x1234_5678_9abc_de11), 0xaaaa_aaaa_9abc_de11);
    assert_eq!(r.apply(0x1234_5678_9abc_de12), 0x1234_5678_9abc_de12);
}

#[test]
fn check_opcode_and_alignment() {
    assert_eq!(req(AOP_FETCH_ADD, 16, 1, 0, 0, 0).check(), Ok(()));
    assert_eq!(req(AOP_CMP_SWAP, 0, 1, 0, 0, 0).check(), Ok(()));
    // 1 is reserved, 3..15 unassigned.
    for aop in [1u8, 3, 4, 15] {
        assert_eq!(
            req(aop, 0, 0, 0, 0, 0).check(),
            Err(TermError::RdmapUnexpectedOpcode)
        );
    }
    for to in [1u64, 4, 7, 0x1003] {
        assert_eq!(
            req(AOP_FETCH_ADD, to, 1, 0, 0, 0).check(),
            Err(TermError::RdmapCatastrophicStream)
        );
    }
    assert_eq!(TermError::RdmapCatastrophicStream.triple(), (0, 2, 7));
}

/// Figure 4: reserved(28) AOpCode(4) | Request Identifier | Remote STag | Remote TO (64) |
/// Add or Swap Data | Add or Swap Mask | Compare Data | Compare Mask, all big-endian.
#[test]
fn atomic_request_layout() {
    let r = AtomicRequest {
        aop: AOP_CMP_SWAP,
        req_id: 0x0102_0304,
        stag: 0x0506_0708,
        to: 0x1011_1213_1415_1617,
        add_swap: 0x2021_2223_2425_2627,
        add_swap_mask: 0x3031_3233_3435_3637,
        compare: 0x4041_4243_4445_4647,
        compare_mask: 0x5051_5253_5455_5657,
    };
    let mut b = [0u8; 52];
    assert_eq!(r.encode(&mut b), Ok(52));
    let mut want = vec![0, 0, 0, 2, 1, 2, 3, 4, 5, 6, 7, 8];
    for hi in [0x10u8, 0x20, 0x30, 0x40, 0x50] {
        want.extend((0..8).map(|i| hi + i));
    }
    assert_eq!(&b[..], &want[..]);
    assert_eq!(AtomicRequest::parse(&b), Some((r, 52)));
    // The reserved bits above the operation code are ignored on receipt.
    b[0] = 0xff;
    b[3] = 0xf0;
    assert_eq!(AtomicRequest::parse(&b).unwrap().0.aop, AOP_FETCH_ADD);
}

/// Figure 6: Original Request Identifier | Original Remote Data Value (64).
#[test]
fn atomic_response_layout() {
    let r = AtomicResponse {
        req_id: 0x0a0b_0c0d,
        orig: 0x0102_0304_0506_0708,
    };
    let mut b = [0u8; 12];
    assert_eq!(r.encode(&mut b), Ok(12));
    assert_eq!(b, [0x0a, 0x0b, 0x0c, 0x0d, 1, 2, 3, 4, 5, 6, 7, 8]);
    assert_eq!(AtomicResponse::parse(&b), Some((r, 12)));
}

/// Section 4.1: Immediate Data 1000b, with SE 1001b, Atomic Request 1010b on QN 1,
/// Atomic Response 1011b on QN 3; none of them carries ULP payload (figure 3).
#[test]
fn opcodes_queues_and_lengths() {
    use siw_proto::ddp::{QN_ATOMIC_RESPONSE, QN_READ_REQUEST, QN_SEND};
    let t = [
        (Opcode::ImmediateData, 8u8, QN_SEND, 28usize),
        (Opcode::ImmediateDataSe, 9, QN_SEND, 28),
        (Opcode::AtomicRequest, 10, QN_READ_REQUEST, 72),
        (Opcode::AtomicResponse, 11, QN_ATOMIC_RESPONSE, 32),
    ];
    for (op, raw, qn, hlen) in t {
        assert_eq!(op.raw(), raw);
        assert_eq!(op.queue(), Some(qn));
        assert_eq!(op.header_len(), hlen);
        assert_eq!(op.max_payload(), 0);
        assert!(op.is_rfc7306() && !op.is_tagged());
    }
    assert_eq!(QN_ATOMIC_RESPONSE, 3);
}

/// `execute` on a word gives what `apply` computes, and returns the original value.
#[test]
fn execute_matches_apply_on_a_word() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let cases = [
        req(AOP_FETCH_ADD, 0, 5, 0, 0, !0),
        req(AOP_FETCH_ADD, 0, 0x0000_0001_0000_0001, 1 << 31, 0, 0),
        req(AOP_CMP_SWAP, 0, 99, !0, 42, !0),
        req(AOP_CMP_SWAP, 0, 99, !0, 43, !0),
        req(AOP_CMP_SWAP, 0, 0xaaaa_aaaa_0000_0000, 0xffff_ffff_0000_0000, 0x2a, 0xff),
    ];
    for r in cases {
        for orig in [42u64, 0x0000_0005_ffff_ffff, u64::MAX] {
            let w = AtomicU64::new(orig);
            assert_eq!(r.execute(&w), Some(orig), "{r:?} on {orig:#x}");
            assert_eq!(w.load(Ordering::SeqCst), r.apply(orig), "{r:?} on {orig:#x}");
        }
    }
}

/// Two threads adding to one word with plain and masked Fetch-and-Add lose no update. A
/// masked one may give up (`None`, the word unchanged) when the other thread changes the
/// word [`ATOMIC_RETRIES`] times in a row: that is its bound, not a lost update, so each
/// thread counts only the adds that took and goes on until it has its 100000.
#[test]
fn execute_is_atomic_under_contention() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let w = Arc::new(AtomicU64::new(0));
    let plain = req(AOP_FETCH_ADD, 0, 1, 0, 0, 0);
    // Two 32-bit fields: 1 to the low one only, no carry possible below 2^32 adds.
    let masked = req(AOP_FETCH_ADD, 0, 1, 1 << 31, 0, 0);
    let t: Vec<_> = [plain, masked]
        .into_iter()
        .map(|r| {
            let w = w.clone();
            std::thread::spawn(move || {
                let (mut done, mut gave_up) = (0u32, 0u64);
                while done < 100_000 {
                    match r.execute(&w) {
                        Some(_) => done += 1,
                        None => gave_up += 1,
                    }
                }
                gave_up
            })
        })
        .collect();
    let gave_up: Vec<u64> = t.into_iter().map(|h| h.join().unwrap()).collect();
    // The plain form is one `fetch_add`: it never gives up.
    assert_eq!(gave_up[0], 0);
    assert_eq!(w.load(Ordering::SeqCst), 200_000);
}

proptest! {
    #[test]
    fn fetch_add_matches_the_rfc(orig in any::<u64>(), add in any::<u64>(), mask in any::<u64>()) {
        let r = req(AOP_FETCH_ADD, 0, add, mask, 0, 0);
        prop_assert_eq!(r.apply(orig), fetch_add_rfc(orig, add, mask));
    }

    #[test]
    fn cmp_swap_matches_the_rfc(
        orig in any::<u64>(), swap in any::<u64>(), smask in any::<u64>(),
        cmp in any::<u64>(), cmask in any::<u64>(), equal in any::<bool>(),
    ) {
        // Half the cases compare equal under the mask.
        let cmp = if equal { (orig & cmask) | (cmp & !cmask) } else { cmp };
        let r = req(AOP_CMP_SWAP, 0, swap, smask, cmp, cmask);
        let want = if (cmp ^ orig) & cmask == 0 { (orig & !smask) | (swap & smask) } else { orig };
        prop_assert_eq!(r.apply(orig), want);
    }
}
