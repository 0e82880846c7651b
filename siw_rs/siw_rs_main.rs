// SPDX-License-Identifier: GPL-2.0

//! siw_rs: a Soft-iWARP RDMA driver in Rust.
//!
//! It does what the kernel's C `siw` does (`drivers/infiniband/sw/siw`): `rdma link add NAME
//! type siw_rs netdev DEV` creates an iWARP RDMA device on any Ethernet or loopback netdev,
//! with the C siw's user ABI (libsiw works unmodified) and wire protocol.
//!
//! Layout: [`glue`] binds the C APIs (a generic RDMA layer, kernel sockets and netdevs, the
//! siw user ABI) and is the only place with `unsafe`; the driver logic ([`device`], [`qp`],
//! [`cm`], ...) is safe Rust over it; [`proto`] is the wire protocol, which never calls the
//! kernel.

// `unsafe` belongs in `glue` alone. Every other module forbids it (no `allow` inside can
// lift that), and the crate denies it, so a new module starts without it too.
#![deny(unsafe_code)]

use kernel::prelude::*;

#[forbid(unsafe_code)]
mod cm;
#[forbid(unsafe_code)]
mod cq;
#[forbid(unsafe_code)]
mod device;
#[forbid(unsafe_code)]
mod gid;
#[allow(unsafe_code)]
mod glue;
/// KUnit tests; their only `unsafe` is what `#[kunit_tests]` generates to register them.
#[cfg(CONFIG_KUNIT)]
#[allow(unsafe_code)]
mod kunit;
#[forbid(unsafe_code)]
mod limit;
#[forbid(unsafe_code)]
mod mr;
#[forbid(unsafe_code)]
mod pd;
/// The iWARP wire protocol (MPA, DDP, RDMAP), plain `no_std` Rust shared with the host crate
/// in `proto/` that `cargo test` and the fuzzers build. It forbids `unsafe` itself.
#[path = "proto/src/lib.rs"]
pub mod proto;
#[forbid(unsafe_code)]
mod qp;
#[forbid(unsafe_code)]
mod queue;
#[forbid(unsafe_code)]
mod rx;
/// The receive side of DDP over SCTP (RFC 5043): message order, the Adaptation Indication.
#[forbid(unsafe_code)]
mod sctp;
#[forbid(unsafe_code)]
mod srq;
#[forbid(unsafe_code)]
mod stats;
#[forbid(unsafe_code)]
mod table;
#[forbid(unsafe_code)]
mod tx;
#[forbid(unsafe_code)]
mod verbs;

module! {
    type: SiwRs,
    name: "siw_rs",
    authors: ["siw_rs developers"],
    description: "Software iWARP RDMA driver (Rust)",
    license: "GPL",
    alias: ["rdma-link-siw_rs"],
    params: {
        mpa_crc_required: bool {
            default: false,
            description: "Use the MPA CRC on every connection: ask for it as initiator, insist on it as responder (default: only when the peer asks, as the C siw)",
        },
        mpa_revision: u32 {
            default: 2,
            description: "MPA revision to offer: 2 (RFC 6581, IRD/ORD negotiation; default) or 1",
        },
        peer_to_peer: u32 {
            default: 0,
            description: "As initiator, request RFC 6581 peer-to-peer mode and offer these RTR messages (a mask: 1 zero-length Send, 2 zero-length RDMA Write, 4 zero-length RDMA Read; 6 is what the C siw offers when built with it). 0 (default): do not request it. As responder, siw_rs always honours a peer's request (Write or Read RTR)",
        },
        siw_link: bool {
            default: false,
            description: "Drop-in for the C siw: also create devices for `rdma link add NAME type siw netdev DEV`, so scripts written for the C siw run unedited. Taken only when the C siw is not loaded at siw_rs's load (then siw_rs keeps the type until it unloads: do not load siw meanwhile)",
        },
        gid_connect_port: u32 {
            default: 791,
            description: "TCP port of connections made by modify_qp (RTR with an address vector naming the peer's GID and QP number, as ibv_rc_pingpong does; siw_rs to siw_rs only): a device listens on it at an address only while a QP there waits for its peer, which must know the QP's PSNs. Keep it below 1024, where no unprivileged process can take it. 0: no such connections (RTR with an address vector fails with EOPNOTSUPP), no listeners",
        },
        gid_connect_timeout_ms: u32 {
            default: 10000,
            description: "How long a connection made by modify_qp may take to come up before its QP moves to ERROR with a fatal event (100 to 600000 ms)",
        },
        peer_timeout_ms: u32 {
            default: 60000,
            description: "How long a connection's peer may leave data unacknowledged, or its receive window closed, before the connection fails and its QP moves to ERROR (TCP_USER_TIMEOUT); an idle connection is probed with TCP keepalives after half that, so a peer that vanished is found too; and a connection whose peer leaves an RDMA Read unanswered (acknowledged by its TCP, so received), sending nothing, for between one and two of these periods is ended the same way. 1000 to 3600000 ms; 0: TCP's defaults and no Read watchdog (a peer that stops reading or answering holds the connection for ever, as with the C siw)",
        },
        mpa_markers: bool {
            default: false,
            description: "Ask peers for MPA markers (the M bit, RFC 5044 section 4.3) on every connection; a peer that cannot send them (the C siw) refuses the connection. Markers a peer asks for are inserted whatever this says",
        },
        fpdu_gso: bool {
            default: true,
            description: "Offer the siw-private GSO_EXP flag in MPA frames (default on; 0: FPDUs of one TCP segment, as the C siw). Where the reply carries it too (another siw_rs; the C siw as responder echoes the request's flag, and receives FPDUs of any size), FPDUs are cut at max_fpdu (16384 by default) rather than at one TCP segment",
        },
        rfc7306: bool {
            default: true,
            description: "Offer and accept the RFC 7306 extensions (atomics, RDMA Write with Immediate Data) on every connection, with siw_rs-private MPA bits; a peer that does not answer the offer (the C siw) is never sent one, and a kernel consumer's atomic or Write with Immediate on such a connection fails to post (EOPNOTSUPP)",
        },
        callback_rx_max: u32 {
            default: 1024,
            description: "Receive in the socket's data-ready callback (softirq, as the C siw; no hand-off per message) while at most this many bytes wait in the socket; above it, the connection's work reads them in one batch (fewer reads and window updates for bulk data). 0: always the work",
        },
        fpdu_pack: bool {
            default: true,
            description: "Pack FPDUs that are ready together (a chain of work requests, a message tail and the next message) into one TCP segment, each wholly inside it (RFC 5044 section 5.1); the C siw sends a segment per FPDU. 0: a segment per FPDU",
        },
        max_fpdu: u32 {
            default: 0,
            description: "Largest FPDU in bytes, to cut FPDUs shorter than one TCP segment (MSS, the C siw's size and the default: 0); at most 16384. Where fpdu_gso is agreed, FPDUs are this long (0: 16384) whatever the MSS",
        },
    },
}

/// The module: its registrations, torn down in field order on unload.
#[pin_data]
struct SiwRs {
    /// `rdma link add ... type siw_rs`; unregistered first, so no new device appears.
    #[pin]
    link: glue::rdma::link::Registration<device::Siw>,
    /// `rdma link add ... type siw` too, with `siw_link=1` (see [`siw_link_type`]).
    #[pin]
    siw_link: glue::rdma::link::Registration<device::Siw>,
    /// `rdma link add ... type siw_rs_sctp`: devices whose connections run over SCTP
    /// (RFC 5043) instead of TCP and MPA.
    #[pin]
    sctp_link: glue::rdma::link::Registration<device::Siw>,
    /// The netdev notifier, which unregisters a device when its netdev goes away.
    #[pin]
    notifier: glue::net::netdev::NotifierRegistration<device::Siw>,
    /// The address notifiers, which keep each device's GID table current.
    #[pin]
    addrs: glue::net::netdev::AddrNotifierRegistration<device::Siw>,
    /// siw_rs's devices; dropped last, unregistering every device still present.
    devices: glue::rdma::device::Registry<device::Siw>,
    /// The connections' workqueue; destroyed after the devices, waiting for their work.
    wq: glue::workqueue::Guard,
    /// The bindings agree with the C layouts (checked first: nothing else may run before).
    layout: glue::layout::Checked,
}

impl kernel::InPlaceModule for SiwRs {
    fn init(_module: &'static ThisModule) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            layout: glue::layout::check()?,
            wq: glue::workqueue::Guard::new(c"siw_rs_wq")?,
            devices: glue::rdma::device::Registry::new(),
            notifier <- glue::net::netdev::NotifierRegistration::new(),
            addrs <- glue::net::netdev::AddrNotifierRegistration::new(),
            link <- glue::rdma::link::Registration::new(),
            siw_link <- glue::rdma::link::Registration::with_type::<{ device::LINK_TCP }>(
                c"siw",
                siw_link_type(),
            ),
            sctp_link <- glue::rdma::link::Registration::with_type::<{ device::LINK_SCTP }>(
                device::SCTP_LINK_TYPE,
                true,
            ),
        })
    }
}

/// Whether to answer `rdma link add ... type siw` (module parameter `siw_link`): only when
/// asked, and only while the C siw, which owns that type, is not loaded.
fn siw_link_type() -> bool {
    if !module_parameters::siw_link.value() {
        return false;
    }
    if glue::rdma::link::module_present(c"siw") {
        pr_warn!("siw_link=1 ignored: the C siw is loaded and serves `type siw`\n");
        return false;
    }
    pr_info!("serving `rdma link add ... type siw` (siw_link=1)\n");
    true
}
