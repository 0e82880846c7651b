// SPDX-License-Identifier: GPL-2.0

//! The siw user ABI (`include/uapi/rdma/siw-abi.h`), shared with the C siw so that libsiw
//! works unmodified: the driver id and ABI version, the uverbs request and response
//! structures, and the constants and layout facts of the rings a process maps.
//!
//! The ring elements themselves are plain Rust types in the driver (`crate::queue`), checked
//! at compile time against the sizes and offsets named here, which come from the C header.

use super::{
    bindings,
    rdma::{
        device::DriverId,
        object::Abi, //
    },
};
use core::mem::{
    offset_of,
    size_of, //
};

/// `RDMA_DRIVER_SIW`: libsiw matches devices on it.
pub(crate) const DRIVER_ID: DriverId = DriverId::from_raw(bindings::rdma_driver_id_RDMA_DRIVER_SIW);
/// `SIW_ABI_VERSION`, the uverbs ABI version libsiw expects.
pub(crate) const ABI_VERSION: u32 = bindings::SIW_ABI_VERSION;
/// `SIW_INVAL_UOBJ_KEY`: libsiw's "no ring" mmap key, never to be handed out.
pub(crate) const INVAL_UOBJ_KEY: u64 = bindings::SIW_INVAL_UOBJ_KEY as u64;

macro_rules! abi_types {
    ($($(#[$m:meta])* $name:ident = $c:ident;)*) => {$(
        $(#[$m])*
        pub(crate) type $name = bindings::$c;
        // SAFETY: A uapi struct of `__u8`/`__u32`/`__aligned_u64` fields laid out without
        // implicit padding (explicit `pad`/`reserved` fields fill the gaps).
        unsafe impl Abi for $name {}
    )*};
}

abi_types! {
    /// `struct siw_uresp_alloc_ctx`, the response to GET_CONTEXT.
    UrespAllocCtx = siw_uresp_alloc_ctx;
    /// `struct siw_uresp_create_cq`.
    UrespCreateCq = siw_uresp_create_cq;
    /// `struct siw_uresp_create_qp`.
    UrespCreateQp = siw_uresp_create_qp;
    /// `struct siw_uresp_create_srq`.
    UrespCreateSrq = siw_uresp_create_srq;
    /// `struct siw_ureq_reg_mr`.
    UreqRegMr = siw_ureq_reg_mr;
    /// `struct siw_uresp_reg_mr`.
    UrespRegMr = siw_uresp_reg_mr;
}

/// `SIW_MAX_SGE`: scatter/gather elements in a queue element.
pub(crate) const MAX_SGE: usize = bindings::SIW_MAX_SGE as usize;
/// Size of a scatter/gather element (`struct siw_sge`).
pub(crate) const SGE_SIZE: usize = size_of::<bindings::siw_sge>();
/// Size of a send queue element (`struct siw_sqe`).
pub(crate) const SQE_SIZE: usize = size_of::<bindings::siw_sqe>();
/// Offset of the SGEs in an SQE (inline data is written over them from the second on): the
/// second anonymous union, `sge` or `access`.
pub(crate) const SQE_SGE: usize = offset_of!(bindings::siw_sqe, __bindgen_anon_2);
/// Size of a receive queue element (`struct siw_rqe`).
pub(crate) const RQE_SIZE: usize = size_of::<bindings::siw_rqe>();
/// Offset of the SGEs in an RQE.
pub(crate) const RQE_SGE: usize = offset_of!(bindings::siw_rqe, sge);
/// Offset of `flags` in an SQE and an RQE (the same place in both).
pub(crate) const WQE_FLAGS: usize = offset_of!(bindings::siw_sqe, flags);
const _: () = assert!(WQE_FLAGS == offset_of!(bindings::siw_rqe, flags));
/// Size of a completion queue element (`struct siw_cqe`).
pub(crate) const CQE_SIZE: usize = size_of::<bindings::siw_cqe>();
/// Offset of `flags` in a CQE.
pub(crate) const CQE_FLAGS: usize = offset_of!(bindings::siw_cqe, flags);
/// Size of the CQ control word behind the last CQE (`struct siw_cq_ctrl`).
pub(crate) const CQ_CTRL_SIZE: usize = size_of::<bindings::siw_cq_ctrl>();
/// Inline data capacity of an SQE (`SIW_MAX_INLINE`: the room of all SGEs but the first).
pub(crate) const MAX_INLINE: usize = SGE_SIZE * (MAX_SGE - 1);

/// `SIW_WQE_VALID` as the CQE's one-byte flags hold it: the slot belongs to its consumer.
pub(crate) const CQE_VALID: u8 = bindings::siw_wqe_flags_SIW_WQE_VALID as u8;

/// `enum siw_opcode`.
pub(crate) mod op {
    use super::bindings;
    pub(crate) const WRITE: u8 = bindings::siw_opcode_SIW_OP_WRITE as u8;
    pub(crate) const READ: u8 = bindings::siw_opcode_SIW_OP_READ as u8;
    pub(crate) const READ_LOCAL_INV: u8 = bindings::siw_opcode_SIW_OP_READ_LOCAL_INV as u8;
    pub(crate) const SEND: u8 = bindings::siw_opcode_SIW_OP_SEND as u8;
    pub(crate) const SEND_WITH_IMM: u8 = bindings::siw_opcode_SIW_OP_SEND_WITH_IMM as u8;
    pub(crate) const SEND_REMOTE_INV: u8 = bindings::siw_opcode_SIW_OP_SEND_REMOTE_INV as u8;
    pub(crate) const INVAL_STAG: u8 = bindings::siw_opcode_SIW_OP_INVAL_STAG as u8;
    pub(crate) const REG_MR: u8 = bindings::siw_opcode_SIW_OP_REG_MR as u8;
    pub(crate) const RECEIVE: u8 = bindings::siw_opcode_SIW_OP_RECEIVE as u8;
    /// RFC 7306 Atomic Fetch-and-Add (kernel consumers only: libsiw refuses it).
    pub(crate) const FETCH_AND_ADD: u8 = bindings::siw_opcode_SIW_OP_FETCH_AND_ADD as u8;
    /// RFC 7306 Atomic Compare-and-Swap (kernel consumers only: libsiw refuses it).
    pub(crate) const COMP_AND_SWAP: u8 = bindings::siw_opcode_SIW_OP_COMP_AND_SWAP as u8;
    /// siw_rs-internal, in a kernel QP's send queue only (never in a process's ring or in
    /// a CQE): an RDMA Write followed by an RFC 7306 Immediate Data message
    /// (`IB_WR_RDMA_WRITE_WITH_IMM`). The first value past the ABI's opcodes.
    pub(crate) const WRITE_WITH_IMM: u8 = bindings::siw_opcode_SIW_NUM_OPCODES as u8;
}

/// `enum siw_wqe_flags`.
pub(crate) mod wqe {
    use super::bindings;
    pub(crate) const VALID: u16 = bindings::siw_wqe_flags_SIW_WQE_VALID as u16;
    pub(crate) const INLINE: u16 = bindings::siw_wqe_flags_SIW_WQE_INLINE as u16;
    pub(crate) const SIGNALLED: u16 = bindings::siw_wqe_flags_SIW_WQE_SIGNALLED as u16;
    pub(crate) const SOLICITED: u16 = bindings::siw_wqe_flags_SIW_WQE_SOLICITED as u16;
    pub(crate) const READ_FENCE: u16 = bindings::siw_wqe_flags_SIW_WQE_READ_FENCE as u16;
    /// In a CQE's (8-bit) flags: the receive invalidated the STag in `inval_stag`.
    pub(crate) const REM_INVAL: u8 = bindings::siw_wqe_flags_SIW_WQE_REM_INVAL as u8;
    /// siw_rs-private, in a CQE's flags: the receive was an RFC 7306 Immediate Data message,
    /// its immediate data in `imm_data`. No `enum siw_wqe_flags` value has this bit; libsiw
    /// ignores it (it reports no immediate data at all).
    pub(crate) const WITH_IMM: u8 = 0x80;
}
const _: () =
    assert!(wqe::WITH_IMM as u32 & (bindings::siw_wqe_flags_SIW_WQE_COMPLETED * 2 - 1) == 0);

/// `enum siw_wc_status`.
pub(crate) mod wc {
    use super::bindings;
    pub(crate) const SUCCESS: u16 = bindings::siw_wc_status_SIW_WC_SUCCESS as u16;
    pub(crate) const LOC_LEN_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_LEN_ERR as u16;
    pub(crate) const LOC_PROT_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_PROT_ERR as u16;
    pub(crate) const LOC_QP_OP_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_QP_OP_ERR as u16;
    pub(crate) const WR_FLUSH_ERR: u16 = bindings::siw_wc_status_SIW_WC_WR_FLUSH_ERR as u16;
    pub(crate) const BAD_RESP_ERR: u16 = bindings::siw_wc_status_SIW_WC_BAD_RESP_ERR as u16;
    pub(crate) const LOC_ACCESS_ERR: u16 = bindings::siw_wc_status_SIW_WC_LOC_ACCESS_ERR as u16;
    pub(crate) const REM_ACCESS_ERR: u16 = bindings::siw_wc_status_SIW_WC_REM_ACCESS_ERR as u16;
    pub(crate) const REM_INV_REQ_ERR: u16 = bindings::siw_wc_status_SIW_WC_REM_INV_REQ_ERR as u16;
    pub(crate) const GENERAL_ERR: u16 = bindings::siw_wc_status_SIW_WC_GENERAL_ERR as u16;
}
