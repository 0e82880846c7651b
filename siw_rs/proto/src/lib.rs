// SPDX-License-Identifier: GPL-2.0

//! The iWARP wire protocol of siw_rs: MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and
//! RDMAP (RFC 5040, RFC 7306), and the SCTP adaptation of DDP (RFC 5043).
//!
//! This crate is plain `no_std` Rust with no dependencies, no allocation and no
//! `unsafe`. The same sources are compiled on the host (unit tests, property tests and
//! fuzzing) and into `siw_rs.ko`, where `lib.rs` is loaded as a submodule of the
//! kernel crate. The module calls this code; this code never calls the kernel.
//!
//! Layout:
//! - [`cq`]: completion notification (when a new CQE wakes the consumer).
//! - [`crc`]: the CRC32C trait and a table-driven software implementation.
//! - [`error`]: Terminate error codes (layer, error type, error code).
//! - [`mpa`]: MPA request/reply frames and connection parameter negotiation.
//! - [`ddp`]: DDP control word, tagged and untagged headers, placement checks.
//! - [`rdmap`]: RDMAP opcodes, RDMAP headers and the full FPDU header.
//! - [`fpdu`]: FPDU framing: padding, CRC trailer, MULPDU and MPA markers.
//! - [`gidconn`]: connections made by `modify_qp` (siw_rs to siw_rs, no rdma_cm).
//! - [`segment`]: segmentation of a message into DDP segments.
//! - [`qp`]: the queue pair state machine.
//! - [`rx`]: the streaming receiver that turns a TCP byte stream (or SCTP messages) into
//!   events.
//! - [`sctp`]: DDP over SCTP (RFC 5043): session control, DDP-SSN ordering.
#![cfg_attr(not(MODULE), no_std)]
#![forbid(unsafe_code)]

pub mod cq;
pub mod crc;
pub mod ddp;
pub mod error;
pub mod fpdu;
pub mod gidconn;
pub mod mpa;
pub mod qp;
pub mod qpn;
pub mod rdmap;
pub mod rx;
pub mod sctp;
pub mod segment;
mod wire;
