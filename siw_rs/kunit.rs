// SPDX-License-Identifier: GPL-2.0

//! KUnit tests of the driver logic that exists only in the kernel build (the protocol core
//! has its host tests): ring indexing and posting, object limits, the completion mapping,
//! fast registration's STag states and page lists, the Read watchdog's verdict, and the
//! lock a QP's state shares with the socket's callback.
//! They run when the module loads on a kernel with KUnit; `selftests/device` checks their
//! results.
//!
//! `#[kunit_tests]` generates the `unsafe` glue that registers the suite with KUnit; the
//! tests themselves are safe code.

use kernel::prelude::*;

#[kunit_tests(siw_rs_queue)]
mod queue {
    use crate::{
        glue::{
            rdma::mmap::SharedMem,
            siw_abi::{
                wqe,
                SQE_SIZE, //
            },
        },
        queue::{
            post_wqe,
            Ring,
            Sge,
            Sqe,
            WQE_FLAGS, //
        },
    };
    use core::sync::atomic::Ordering;
    use kernel::prelude::*;

    #[test]
    fn ring_size_is_a_power_of_two() -> Result {
        for (want, got) in [(1, 1), (5, 8), (8, 8), (1000, 1024)] {
            let r = Ring::new(want, SQE_SIZE, 0, None)?;
            assert_eq!(r.entries, got);
            assert_eq!(r.mem.len(), got as usize * SQE_SIZE);
        }
        assert!(Ring::new(u32::MAX, SQE_SIZE, 0, None).is_err());
        Ok(())
    }

    #[test]
    fn ring_offsets_wrap_with_free_running_counters() -> Result {
        let r = Ring::new(8, SQE_SIZE, 4, None)?;
        assert_eq!(r.offset(0, SQE_SIZE), 0);
        assert_eq!(r.offset(9, SQE_SIZE), SQE_SIZE);
        assert_eq!(r.offset(u32::MAX, SQE_SIZE), 7 * SQE_SIZE);
        assert_eq!(r.end(SQE_SIZE), 8 * SQE_SIZE);
        // The control word behind the last element is inside the allocation.
        assert!(r.mem.atomic_u32(r.end(SQE_SIZE)).is_some());
        assert!(r.mem.atomic_u32(r.end(SQE_SIZE) + 4).is_none());
        Ok(())
    }

    #[test]
    fn an_element_reads_back_whole_field_for_field() -> Result {
        // `SharedMem::read` copies an element of whole words word by word: every field,
        // the narrow ones between wider ones too, must come back as written.
        let mem = SharedMem::new(SQE_SIZE * 2, false)?;
        let mut sqe = Sqe {
            id: 0x0102_0304_0506_0708,
            flags: 0x0a0b,
            num_sge: 3,
            opcode: 0x0c,
            rkey: 0x1122_3344,
            raddr: 0x5566_7788_99aa_bbcc,
            sge: Default::default(),
        };
        for (i, s) in sqe.sge.iter_mut().enumerate() {
            let i = i as u32;
            *s = Sge {
                laddr: u64::from(i) << 40 | 0xdead,
                length: 0x100 + i,
                lkey: 0x7700 + i,
            };
        }
        mem.write(SQE_SIZE, sqe)?;
        let back: Sqe = mem.read(SQE_SIZE).ok_or(EINVAL)?;
        assert_eq!(
            (
                back.id,
                back.flags,
                back.num_sge,
                back.opcode,
                back.rkey,
                back.raddr
            ),
            (
                sqe.id,
                sqe.flags,
                sqe.num_sge,
                sqe.opcode,
                sqe.rkey,
                sqe.raddr
            )
        );
        for (b, s) in back.sge.iter().zip(sqe.sge.iter()) {
            assert_eq!((b.laddr, b.length, b.lkey), (s.laddr, s.length, s.lkey));
        }
        let sge: Sge = mem.read(SQE_SIZE + SQE_SIZE - 16).ok_or(EINVAL)?;
        assert_eq!(
            (sge.laddr, sge.length, sge.lkey),
            (5 << 40 | 0xdead, 0x105, 0x7705)
        );
        // An element reaching past the end, or misaligned, is not read.
        assert!(mem.read::<Sqe>(SQE_SIZE + 8).is_none());
        assert!(mem.read::<Sqe>(4).is_none());
        Ok(())
    }

    #[test]
    fn posting_publishes_the_valid_bit_last_and_refuses_a_full_slot() -> Result {
        let mem = SharedMem::new(SQE_SIZE * 2, false)?;
        let flags = mem.atomic_u16(WQE_FLAGS).ok_or(EINVAL)?;
        let mut seen = 0;
        post_wqe(&mem, 0, wqe::SIGNALLED, || {
            // Filled while the slot still reads as free.
            seen = flags.load(Ordering::Acquire);
            mem.write(0, 0x1234_u64)
        })?;
        assert_eq!(seen, 0);
        assert_eq!(flags.load(Ordering::Acquire), wqe::SIGNALLED | wqe::VALID);
        assert_eq!(mem.read::<u64>(0), Some(0x1234));
        let mut filled = false;
        let r = post_wqe(&mem, 0, 0, || {
            filled = true;
            Ok(())
        });
        assert_eq!(r, Err(ENOMEM));
        assert!(!filled);
        // Out of bounds is an error, never a write.
        assert!(post_wqe(&mem, SQE_SIZE * 2, 0, || Ok(())).is_err());
        Ok(())
    }
}

#[kunit_tests(siw_rs_limit)]
mod limit {
    use crate::limit::{
        Counted,
        Counts,
        Kind, //
    };
    use kernel::{
        prelude::*,
        sync::Arc, //
    };

    #[test]
    fn counted_slots_stop_at_the_limit_and_come_back() -> Result {
        let counts = Arc::new(Counts::default(), GFP_KERNEL)?;
        let a = Counted::new(&counts, Kind::Qp, 2)?;
        let b = Counted::new(&counts, Kind::Qp, 2)?;
        assert!(Counted::new(&counts, Kind::Qp, 2).is_err());
        // Another kind has its own count.
        let _pd = Counted::new(&counts, Kind::Pd, 2)?;
        drop(a);
        let c = Counted::new(&counts, Kind::Qp, 2)?;
        drop((b, c));
        Ok(())
    }
}

#[kunit_tests(siw_rs_cq)]
mod cq {
    use crate::{
        cq::{
            wc_opcode,
            wc_status, //
        },
        glue::{
            rdma::verbs::{
                WcOpcode,
                WcStatus, //
            },
            siw_abi::{
                op,
                wc, //
            },
        },
    };

    #[test]
    fn completion_status_maps_as_the_c_siw() {
        assert_eq!(wc_status(wc::SUCCESS), WcStatus::Success);
        assert_eq!(wc_status(wc::LOC_LEN_ERR), WcStatus::LocLenErr);
        assert_eq!(wc_status(wc::LOC_PROT_ERR), WcStatus::LocProtErr);
        assert_eq!(wc_status(wc::LOC_QP_OP_ERR), WcStatus::LocQpOpErr);
        assert_eq!(wc_status(wc::WR_FLUSH_ERR), WcStatus::WrFlushErr);
        assert_eq!(wc_status(wc::BAD_RESP_ERR), WcStatus::BadRespErr);
        assert_eq!(wc_status(wc::LOC_ACCESS_ERR), WcStatus::LocAccessErr);
        assert_eq!(wc_status(wc::REM_ACCESS_ERR), WcStatus::RemAccessErr);
        assert_eq!(wc_status(wc::REM_INV_REQ_ERR), WcStatus::RemInvReqErr);
        assert_eq!(wc_status(wc::GENERAL_ERR), WcStatus::GeneralErr);
        // Anything a process wrote that siw does not know is a general error.
        assert_eq!(wc_status(0xffff), WcStatus::GeneralErr);
    }

    #[test]
    fn completion_opcode_maps_as_the_c_siw() {
        assert_eq!(wc_opcode(op::WRITE), WcOpcode::RdmaWrite);
        assert_eq!(wc_opcode(op::SEND), WcOpcode::Send);
        assert_eq!(wc_opcode(op::SEND_WITH_IMM), WcOpcode::Send);
        assert_eq!(wc_opcode(op::SEND_REMOTE_INV), WcOpcode::Send);
        assert_eq!(wc_opcode(op::READ), WcOpcode::RdmaRead);
        assert_eq!(wc_opcode(op::READ_LOCAL_INV), WcOpcode::RdmaRead);
        assert_eq!(wc_opcode(op::INVAL_STAG), WcOpcode::LocalInv);
        assert_eq!(wc_opcode(op::REG_MR), WcOpcode::RegMr);
        assert_eq!(wc_opcode(op::RECEIVE), WcOpcode::Recv);
    }

    #[test]
    fn rfc7306_completions_map_to_their_verbs_opcodes() {
        assert_eq!(wc_opcode(op::FETCH_AND_ADD), WcOpcode::FetchAdd);
        assert_eq!(wc_opcode(op::COMP_AND_SWAP), WcOpcode::CompSwap);
        // A flushed Write with Immediate Data reports as a Write.
        assert_eq!(wc_opcode(op::WRITE_WITH_IMM), WcOpcode::RdmaWrite);
    }
}

#[kunit_tests(siw_rs_rfc7306)]
mod rfc7306 {
    use crate::{
        proto::rdmap::{
            AtomicRequest,
            AOP_CMP_SWAP,
            AOP_FETCH_ADD, //
        },
        queue::{
            AtomicWqe,
            Sge,
            Sqe, //
        },
    };
    use core::sync::atomic::{
        AtomicU64,
        Ordering, //
    };

    #[test]
    fn atomic_element_round_trips_and_keeps_its_sink() {
        let w = AtomicWqe {
            add_swap: 0x0102_0304_0506_0708,
            add_swap_mask: 0xffff_0000_ffff_0000,
            compare: 0x1112_1314_1516_1718,
            compare_mask: 0x8000_0000_0000_0001,
        };
        let sink = Sge {
            laddr: 0xdead_0000,
            length: 8,
            lkey: 0x42,
        };
        let mut sqe = Sqe {
            num_sge: 1,
            ..Default::default()
        };
        sqe.sge[0] = sink;
        w.encode(&mut sqe);
        assert_eq!(AtomicWqe::decode(&sqe), w);
        assert_eq!(
            (sqe.sge[0].laddr, sqe.sge[0].length, sqe.sge[0].lkey),
            (sink.laddr, sink.length, sink.lkey)
        );
    }

    #[test]
    fn atomics_execute_on_a_kernel_word() {
        let req = |aop, add_swap, add_swap_mask, compare, compare_mask| AtomicRequest {
            aop,
            req_id: 1,
            stag: 0,
            to: 0,
            add_swap,
            add_swap_mask,
            compare,
            compare_mask,
        };
        let w = AtomicU64::new(0x1000);
        assert_eq!(req(AOP_FETCH_ADD, 5, 0, 0, !0).execute(&w), Some(0x1000));
        assert_eq!(w.load(Ordering::SeqCst), 0x1005);
        // A Compare-and-Swap that matches, then one that misses.
        assert_eq!(
            req(AOP_CMP_SWAP, 7, !0, 0x1005, !0).execute(&w),
            Some(0x1005)
        );
        assert_eq!(req(AOP_CMP_SWAP, 9, !0, 0x1005, !0).execute(&w), Some(7));
        assert_eq!(w.load(Ordering::SeqCst), 7);
        // Two 32-bit fields: the low one wraps, its carry is dropped.
        let w = AtomicU64::new(0x0000_0000_ffff_ffff);
        let masked = req(AOP_FETCH_ADD, 0x0000_0001_0000_0001, 1 << 31, 0, !0);
        assert_eq!(masked.execute(&w), Some(0xffff_ffff));
        assert_eq!(w.load(Ordering::SeqCst), 0x0000_0001_0000_0000);
    }
}

#[kunit_tests(siw_rs_fastreg)]
mod fastreg {
    use crate::{
        glue::rdma::umem::KernelPages,
        mr::{
            invalidate,
            publish_fast_for_test,
            register,
            FastRegError,
            REMOTE_WRITE, //
        },
        queue::{
            RegMrWqe,
            Sqe, //
        },
        table::Tables,
    };
    use kernel::prelude::*;

    #[test]
    fn reg_mr_element_round_trips() {
        let w = RegMrWqe {
            mr: 0x1234_5601,
            key: 0x1234_5602,
            access: 0x7,
            iova: 0xdead_beef_0000_1000,
            length: 1 << 33,
        };
        let mut sqe = Sqe::default();
        w.encode(&mut sqe);
        assert_eq!(sqe.num_sge, 0);
        assert_eq!(RegMrWqe::decode(&sqe), w);
    }

    #[test]
    fn page_lists_hold_only_what_fits() -> Result {
        let none = || KVec::new();
        // The page size must be a power of two, the first byte inside the first page.
        assert!(KernelPages::new(none(), 3000, 0, 0).is_err());
        assert!(KernelPages::new(none(), 4096, 4096, 0).is_err());
        // No pages hold no bytes.
        assert!(KernelPages::new(none(), 4096, 0, 1).is_err());
        assert!(KernelPages::new(none(), 4096, 0, 0).is_ok());
        // Nor can a length wrap.
        assert!(KernelPages::new(none(), 4096, 1, u64::MAX).is_err());
        Ok(())
    }

    #[test]
    fn stag_states_follow_rfc_5040() -> Result {
        let t = Tables::new(c"kunit")?;
        let (pd, other) = (1usize, 2usize);
        let stag = publish_fast_for_test(&t, pd)?;
        let key = (stag & !0xff) | 0x17;
        let rights = REMOTE_WRITE;
        // Invalid until registered: no lookup finds it.
        assert!(t.mr(stag).is_none());
        // Only the MR's PD may register it, and only under its own index.
        assert_eq!(
            register(&t, other, stag, key, rights, 0, 0),
            Err(FastRegError::Stag)
        );
        assert_eq!(
            register(&t, pd, stag, key ^ 0x100, rights, 0, 0),
            Err(FastRegError::Stag)
        );
        // Nor beyond what is mapped (nothing here).
        assert_eq!(
            register(&t, pd, stag, key, rights, 0, 1),
            Err(FastRegError::Mapping)
        );
        assert_eq!(register(&t, pd, stag, key, rights, 0x1000, 0), Ok(()));
        assert!(t.mr(key).is_some());
        assert!(t.mr(stag).is_none());
        // A valid MR is not registered again.
        assert_eq!(
            register(&t, pd, key, key, rights, 0, 0),
            Err(FastRegError::NotAllowed)
        );
        // Another PD, or a stale key, cannot invalidate it.
        assert_eq!(invalidate(&t, other, key), Err(FastRegError::Stag));
        assert_eq!(invalidate(&t, pd, stag), Err(FastRegError::Stag));
        assert!(t.mr(key).is_some());
        assert_eq!(invalidate(&t, pd, key), Ok(()));
        assert!(t.mr(key).is_none());
        // Invalidating an invalid STag is no error; it registers again under a new key.
        assert_eq!(invalidate(&t, pd, key), Ok(()));
        let key2 = (stag & !0xff) | 0x18;
        assert_eq!(register(&t, pd, key, key2, rights, 0, 0), Ok(()));
        assert!(t.mr(key2).is_some());
        assert!(t.mr(key).is_none());
        // Work holding the registration (an FPDU half placed, a Read Response half sent)
        // sees it go invalid with the invalidation, and with the deregistration.
        let held = t.mr(key2).ok_or(EINVAL)?;
        assert_eq!(invalidate(&t, pd, key2), Ok(()));
        assert!(!held.is_valid());
        let key3 = (stag & !0xff) | 0x19;
        assert_eq!(register(&t, pd, key2, key3, rights, 0, 0), Ok(()));
        let held = t.mr(key3).ok_or(EINVAL)?;
        assert!(held.is_valid());
        drop(t.remove_mr(stag >> 8));
        assert!(!held.is_valid());
        assert!(t.mr(key3).is_none());
        Ok(())
    }

    #[test]
    fn a_registration_is_replaced_only_as_checked_and_held_ones_stay_invalid() -> Result {
        let t = Tables::new(c"kunit")?;
        let pd = 1usize;
        let stag = publish_fast_for_test(&t, pd)?;
        let index = stag >> 8;
        let seen = t.mr_at(index).ok_or(EINVAL)?;
        // Another REG_MR came first: one that checked `seen` replaces nothing.
        let key = (stag & !0xff) | 0x21;
        assert_eq!(register(&t, pd, stag, key, REMOTE_WRITE, 0, 0), Ok(()));
        let first = t.mr(key).ok_or(EINVAL)?;
        assert_eq!(t.replace_mr(index, &seen, seen.clone()), Err(EBUSY));
        assert!(t.mr(key).is_some_and(|m| core::ptr::eq(&*m, &*first)));
        // The key comes round again (8 bits): the STag names the newer registration,
        // while work holding the first (a queued Read) sees it invalid, and must not look
        // the STag up again.
        assert_eq!(invalidate(&t, pd, key), Ok(()));
        assert_eq!(register(&t, pd, key, key, REMOTE_WRITE, 0, 0), Ok(()));
        assert!(!first.is_valid());
        assert!(t.mr(key).is_some_and(|m| !core::ptr::eq(&*m, &*first)));
        Ok(())
    }
}

#[kunit_tests(siw_rs_watchdog)]
mod watchdog {
    use crate::qp::ReadWatch;
    use kernel::prelude::*;

    #[test]
    fn an_acknowledged_read_unanswered_for_a_whole_period_is_a_stall() -> Result {
        let mut w = ReadWatch::default();
        // Connected, no Read yet; then a Read goes out, acknowledged: not a whole period.
        assert!(!w.look(0, false, true));
        assert!(!w.look(0, true, true));
        // Still outstanding at the next look, nothing received: stalled.
        assert!(w.look(0, true, true));
        Ok(())
    }

    #[test]
    fn any_byte_no_read_or_a_read_not_yet_acknowledged_is_not_a_stall() -> Result {
        let mut w = ReadWatch::default();
        assert!(!w.look(100, true, true));
        // Bytes came in (a long Read Response, or anything else): alive.
        assert!(!w.look(101, true, true));
        // No Read outstanding now, however quiet.
        assert!(!w.look(101, false, true));
        assert!(!w.look(101, false, true));
        // A Read still queued behind unacknowledged bytes (a slow peer) is not stalled,
        // however long; once acknowledged it has a whole period from then.
        assert!(!w.look(101, true, false));
        assert!(!w.look(101, true, false));
        assert!(!w.look(101, true, true));
        assert!(w.look(101, true, true));
        // The byte counter wraps: a change is a change.
        let mut w = ReadWatch::default();
        assert!(!w.look(u64::MAX, true, true));
        assert!(!w.look(0, true, true));
        Ok(())
    }
}

#[kunit_tests(siw_rs_sync)]
mod sync {
    use crate::glue::sync::new_owner_lock;
    use kernel::prelude::*;

    #[test]
    fn softirq_gets_the_state_only_while_no_process_owns_it() -> Result {
        let l = KBox::pin_init(new_owner_lock!(0u32, "kunit::owner_lock"), GFP_KERNEL)?;
        {
            let mut owner = l.lock();
            *owner = 1;
            // A process owns it: the callback must leave the work to it.
            assert!(l.try_lock_bh().is_none());
        }
        {
            let mut bh = l.try_lock_bh().ok_or(EBUSY)?;
            assert_eq!(*bh, 1);
            *bh = 2;
        }
        // What softirq wrote, the next owner sees; and the owner lock is free again.
        assert_eq!(*l.lock(), 2);
        assert!(l.try_lock_bh().is_some());
        Ok(())
    }

    #[test]
    fn the_bh_guard_keeps_bottom_halves_off() -> Result {
        let l = KBox::pin_init(new_owner_lock!(0u32, "kunit::owner_lock_bh"), GFP_KERNEL)?;
        let bh = l.try_lock_bh().ok_or(EBUSY)?;
        assert!(crate::glue::sync::bh_disabled());
        drop(bh);
        Ok(())
    }

    #[test]
    fn bh_off_if_on_turns_them_off_once() -> Result {
        use crate::glue::sync::{bh_disabled, bh_off_if_on};
        assert!(!bh_disabled());
        let outer = bh_off_if_on();
        assert!(outer.is_some());
        assert!(bh_disabled());
        // Already off: nothing to turn off, and nothing turned back on when it goes.
        let inner = bh_off_if_on();
        assert!(inner.is_none());
        drop(inner);
        assert!(bh_disabled());
        drop(outer);
        assert!(!bh_disabled());
        Ok(())
    }
}
