// SPDX-License-Identifier: GPL-2.0

//! Networking glue: kernel TCP sockets whose callbacks a Rust owner takes over ([`tcp`]),
//! SCTP's messages on the same sockets ([`sctp`]), and network devices with the netdev
//! notifier ([`netdev`]).

pub(crate) mod netdev;
pub(crate) mod sctp;
pub(crate) mod tcp;
