// SPDX-License-Identifier: GPL-2.0

//! Connections made by `modify_qp`, without the connection manager: siw_rs's own (the C
//! siw cannot take part), for programs that exchange QP numbers, PSNs and GIDs out of band
//! and never use rdma_cm (`ibv_rc_pingpong`, `ibv_srq_pingpong`, rdma-core's tests).
//!
//! siw_rs fills its GID table with the addresses of its netdev ([`gid_of_v4`],
//! [`gid_of_v6`]). A QP moved to RTR with an address vector names its own GID (by index),
//! the peer's GID, the peer's QP number and the peer's first PSN (`rq_psn`); RTS adds its
//! own (`sq_psn`). The lower end connects ([`initiator`]) once it is in RTS: a TCP
//! connection from its address to the peer's siw_rs listener, then an MPA request whose
//! private data names both QPs and carries the initiator's `sq_psn` ([`Message::Request`]).
//!
//! The PSNs are what authenticates the ends, as on InfiniBand, where an RC QP takes only
//! packets carrying the PSN it expects: the responder accepts only if the QP named waits,
//! in RTS, for exactly this peer, and the PSN sent equals its `rq_psn` ([`answer`]); its
//! accept carries its own `sq_psn`, which the initiator checks against its `rq_psn`
//! ([`outcome`]). Every other request gets one refusal, the same whatever was wrong
//! ([`Message::Refuse`]), so that a scanner learns nothing of which QPs exist or what they
//! wait for; the initiator tries again until its QP's deadline.
//!
//! Private data layout (20 octets, the same for request, accept and refusal):
//!
//! ```text
//!  0      4     5      6   8           12          16          20
//!  | MAGIC | VER | KIND | 0 | FROM QPN  |  TO QPN   |    PSN    |
//! ```
//!
//! Numbers are big-endian; a refusal has zeros from octet 6 on.

use super::wire::{Reader, Writer};

/// A GID as siw_rs's table holds it: an IPv6 address, or an IPv4 one mapped into IPv6.
pub type Gid = [u8; 16];

/// One end of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct End {
    /// The end's address, as a GID.
    pub gid: Gid,
    /// The end's QP number.
    pub qpn: u32,
}

/// An IP address named by a GID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IpAddr {
    /// An IPv4 address (the GID is `::ffff:a.b.c.d`).
    V4([u8; 4]),
    /// An IPv6 address.
    V6([u8; 16]),
}

/// The GID of an IPv4 address: `::ffff:a.b.c.d` (RFC 4291 section 2.5.5.2).
pub fn gid_of_v4(a: [u8; 4]) -> Gid {
    let [a0, a1, a2, a3] = a;
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a0, a1, a2, a3]
}

/// The GID of an IPv6 address: the address itself.
pub fn gid_of_v6(a: [u8; 16]) -> Gid {
    a
}

/// The address a GID names, if a connection can be made to it: not the unspecified
/// address, not multicast (`ff00::/8`), and for an IPv4-mapped one not `0.0.0.0/8`,
/// multicast or broadcast.
pub fn ip_of_gid(gid: &Gid) -> Option<IpAddr> {
    let (prefix, v4) = gid.split_last_chunk::<4>()?;
    if *prefix == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff] {
        return match v4.first() {
            Some(0 | 224..=255) | None => None,
            Some(_) => Some(IpAddr::V4(*v4)),
        };
    }
    if gid.iter().all(|b| *b == 0) || gid.first() == Some(&0xff) {
        return None;
    }
    Some(IpAddr::V6(*gid))
}

/// Whether `local` connects to `remote` (the lower end does), or `None` when both are the
/// same end: a QP cannot be its own peer.
pub fn initiator(local: &End, remote: &End) -> Option<bool> {
    match local.cmp(remote) {
        core::cmp::Ordering::Less => Some(true),
        core::cmp::Ordering::Greater => Some(false),
        core::cmp::Ordering::Equal => None,
    }
}

/// Brings the address entries of a GID table up to date with `addrs`, the addresses the
/// netdev has now: an entry whose address is gone is emptied, an address not in the table
/// yet takes the first empty entry (one that finds none is left out). Every address that
/// stays keeps its entry, so an index a program read stays valid while its address does.
/// Returns whether any entry changed.
pub fn update_slots(slots: &mut [Option<Gid>], addrs: &[Gid]) -> bool {
    let mut changed = false;
    for s in slots.iter_mut() {
        if s.is_some_and(|g| !addrs.contains(&g)) {
            *s = None;
            changed = true;
        }
    }
    for a in addrs {
        if slots.contains(&Some(*a)) {
            continue;
        }
        if let Some(free) = slots.iter_mut().find(|s| s.is_none()) {
            *free = Some(*a);
            changed = true;
        }
    }
    changed
}

/// The length of the private data of every message here.
pub const PD_LEN: usize = 20;
/// Marks siw_rs's private data (the listener only speaks this protocol, but a stray
/// connection must not be taken for it).
pub const MAGIC: [u8; 4] = *b"siwQ";
/// The version of the layout (1 had no PSN and told why it refused).
pub const VERSION: u8 = 2;
/// PSNs are 24 bits (InfiniBand's, which `modify_qp` takes).
pub const PSN_MASK: u32 = 0x00ff_ffff;

const KIND_REQUEST: u8 = 1;
const KIND_ACCEPT: u8 = 2;
const KIND_REFUSE: u8 = 3;

/// A message's private data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Message {
    /// The initiator's request: from QP `from` to QP `to`.
    Request {
        /// The initiator's QP number.
        from: u32,
        /// The responder's QP number, as the initiator's address vector names it.
        to: u32,
        /// The initiator's `sq_psn`.
        psn: u32,
    },
    /// The responder accepted: its QP `from`, the initiator's `to`.
    Accept {
        /// The responder's QP number.
        from: u32,
        /// The initiator's QP number.
        to: u32,
        /// The responder's `sq_psn`.
        psn: u32,
    },
    /// The responder refused, for whatever reason.
    Refuse,
}

impl Message {
    /// The private data.
    pub fn encode(&self) -> [u8; PD_LEN] {
        let (kind, from, to, psn) = match *self {
            Self::Request { from, to, psn } => (KIND_REQUEST, from, to, psn),
            Self::Accept { from, to, psn } => (KIND_ACCEPT, from, to, psn),
            Self::Refuse => (KIND_REFUSE, 0, 0, 0),
        };
        let mut b = [0u8; PD_LEN];
        let mut w = Writer::new(&mut b);
        // 20 octets fit in 20: the writes cannot fail.
        let _ = w
            .put(&MAGIC)
            .and_then(|()| w.put(&[VERSION, kind, 0, 0]))
            .and_then(|()| w.u32(from))
            .and_then(|()| w.u32(to))
            .and_then(|()| w.u32(psn & PSN_MASK));
        b
    }

    /// Parses private data; `None` for anything that is not exactly a message of this
    /// version (a reserved octet set, or a PSN of more than 24 bits, included).
    pub fn parse(pd: &[u8]) -> Option<Self> {
        if pd.len() != PD_LEN {
            return None;
        }
        let mut r = Reader::new(pd);
        let (magic, [ver, kind, r0, r1]) = (r.array::<4>()?, r.array::<4>()?);
        if magic != MAGIC || ver != VERSION || r0 != 0 || r1 != 0 {
            return None;
        }
        let (from, to, psn) = (r.u32()?, r.u32()?, r.u32()?);
        if psn & !PSN_MASK != 0 {
            return None;
        }
        match kind {
            KIND_REQUEST => Some(Self::Request { from, to, psn }),
            KIND_ACCEPT => Some(Self::Accept { from, to, psn }),
            KIND_REFUSE if from == 0 && to == 0 && psn == 0 => Some(Self::Refuse),
            _ => None,
        }
    }
}

/// What the QP a request names is doing, as the responder sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waits {
    /// Nothing a request can take: no such QP, not in RTS, no address vector, connected,
    /// or connecting itself.
    Nothing,
    /// The QP is in RTS with an address vector naming `peer`, is the responder for it,
    /// and is not connected yet.
    For {
        /// The peer the address vector names.
        peer: End,
        /// The QP's `rq_psn`: the peer's `sq_psn`, as given out of band.
        rq_psn: u32,
        /// The QP's `sq_psn`, for the accept.
        sq_psn: u32,
    },
}

/// Why a responder refused. On the wire every refusal is the same [`Message::Refuse`]; the
/// reason stays with the responder (for its debug log).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The QP named cannot be connected to now ([`Waits::Nothing`]).
    NotWaiting,
    /// The QP waits for another peer (address or QP number).
    WrongPeer,
    /// The PSN is not the one the QP expects.
    WrongPsn,
}

/// The responder's answer to a request from `from` (its address as the socket shows it,
/// and the QP number it names itself by), carrying `psn`, for a QP that `waits`: the PSN
/// for the accept, or why not.
pub fn answer(from: &End, psn: u32, waits: Waits) -> Result<u32, Refused> {
    match waits {
        Waits::Nothing => Err(Refused::NotWaiting),
        Waits::For { peer, .. } if peer != *from => Err(Refused::WrongPeer),
        Waits::For { rq_psn, .. } if rq_psn & PSN_MASK != psn => Err(Refused::WrongPsn),
        Waits::For { sq_psn, .. } => Ok(sq_psn & PSN_MASK),
    }
}

/// What an initiator does with the responder's reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Connected.
    Connected,
    /// Try again later (until the deadline).
    Retry,
    /// Give up: the QP goes to ERROR.
    Fail,
}

/// The initiator's reading of a reply's private data: accepted by the QP it asked for
/// (`to`, from its own `from`) with the PSN it expects (`rq_psn`), refused (try again), or
/// anything else (give up: garbage, or a responder that does not know the PSN).
pub fn outcome(from: u32, to: u32, rq_psn: u32, rejected: bool, pd: &[u8]) -> Outcome {
    match (rejected, Message::parse(pd)) {
        (
            false,
            Some(Message::Accept {
                from: f,
                to: t,
                psn,
            }),
        ) if f == to && t == from && psn == rq_psn & PSN_MASK => Outcome::Connected,
        (true, Some(Message::Refuse)) => Outcome::Retry,
        _ => Outcome::Fail,
    }
}

/// The retry time of an RC QP (`modify_qp`'s `timeout` and `retry_cnt`), in milliseconds,
/// or `None` for a `timeout` of 0, which waits for ever. A QP whose peer has left fails the
/// send work it can no longer deliver after this long, as an InfiniBand RC QP does once it
/// has waited `4.096 us * 2^timeout` for an acknowledgement `retry_cnt + 1` times
/// (the InfiniBand specification's Local ACK Timeout and Retry Count). An application
/// that finished meanwhile (its peer had everything it needed) never sees the failure.
pub fn retry_time_ms(timeout: u8, retry_cnt: u8) -> Option<u32> {
    if timeout == 0 {
        return None;
    }
    // At most 8 tries of 4096 << 31 ns: far below u64::MAX.
    let tries = u64::from(retry_cnt.min(7)).saturating_add(1);
    let ns = (4096u64 << timeout.min(31)).saturating_mul(tries);
    Some(u32::try_from(ns.div_ceil(1_000_000)).unwrap_or(u32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_time_is_the_local_ack_timeout_per_try() {
        // ibv_rc_pingpong's and ibv_srq_pingpong's timeout 14, retry_cnt 7: 8 tries of 67 ms.
        assert_eq!(retry_time_ms(14, 7), Some(537));
        assert_eq!(retry_time_ms(1, 0), Some(1));
        assert_eq!(retry_time_ms(0, 7), None);
        // The largest the fields hold: 8 tries of 8796 s, and nothing wraps past them.
        assert_eq!(retry_time_ms(31, 7), Some(70_368_745));
        assert_eq!(retry_time_ms(255, 255), retry_time_ms(31, 7));
    }

    const A: [u8; 4] = [192, 168, 77, 1];
    const B: [u8; 4] = [192, 168, 77, 2];

    #[test]
    fn ipv4_gids_are_mapped_and_round_trip() {
        let g = gid_of_v4(A);
        assert_eq!(
            g,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 168, 77, 1]
        );
        assert_eq!(ip_of_gid(&g), Some(IpAddr::V4(A)));
        let v6 = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        assert_eq!(ip_of_gid(&gid_of_v6(v6)), Some(IpAddr::V6(v6)));
        let mut lo6 = [0u8; 16];
        lo6[15] = 1;
        assert_eq!(ip_of_gid(&lo6), Some(IpAddr::V6(lo6)));
    }

    #[test]
    fn gids_that_name_no_peer_are_refused() {
        assert_eq!(ip_of_gid(&[0; 16]), None);
        let mut mc = [0u8; 16];
        mc[0] = 0xff;
        mc[1] = 0x02;
        mc[15] = 1;
        assert_eq!(ip_of_gid(&mc), None);
        for bad in [
            [0, 0, 0, 0],
            [0, 1, 2, 3],
            [224, 0, 0, 1],
            [255, 255, 255, 255],
        ] {
            assert_eq!(ip_of_gid(&gid_of_v4(bad)), None, "{bad:?}");
        }
    }

    #[test]
    fn addresses_keep_their_entries_while_they_stay() {
        let (a, b, c, d) = (
            gid_of_v4([10, 0, 0, 1]),
            gid_of_v4([10, 0, 0, 2]),
            gid_of_v4([10, 0, 0, 3]),
            gid_of_v4([10, 0, 0, 4]),
        );
        let mut slots = [None; 3];
        assert!(update_slots(&mut slots, &[a, b]));
        assert_eq!(slots, [Some(a), Some(b), None]);
        assert!(!update_slots(&mut slots, &[b, a]));
        // a goes, c comes: b keeps entry 1, c takes the entry a left.
        assert!(update_slots(&mut slots, &[b, c]));
        assert_eq!(slots, [Some(c), Some(b), None]);
        // More addresses than entries: the ones without room are left out, and take an
        // entry once one is free.
        assert!(update_slots(&mut slots, &[b, c, d, a]));
        assert_eq!(slots, [Some(c), Some(b), Some(d)]);
        assert!(update_slots(&mut slots, &[a, c, d]));
        assert_eq!(slots, [Some(c), Some(a), Some(d)]);
        assert!(update_slots(&mut slots, &[]));
        assert_eq!(slots, [None; 3]);
    }

    #[test]
    fn the_lower_end_connects_and_a_qp_is_not_its_own_peer() {
        let a = End {
            gid: gid_of_v4(A),
            qpn: 9,
        };
        let b = End {
            gid: gid_of_v4(B),
            qpn: 3,
        };
        assert_eq!(initiator(&a, &b), Some(true));
        assert_eq!(initiator(&b, &a), Some(false));
        // One device: the QP number decides.
        let a2 = End { qpn: 10, ..a };
        assert_eq!(initiator(&a, &a2), Some(true));
        assert_eq!(initiator(&a2, &a), Some(false));
        assert_eq!(initiator(&a, &a), None);
    }

    #[test]
    fn messages_round_trip_and_garbage_is_refused() {
        let msgs = [
            Message::Request {
                from: 1,
                to: 2,
                psn: 3,
            },
            Message::Accept {
                from: u32::MAX,
                to: 0,
                psn: PSN_MASK,
            },
            Message::Refuse,
        ];
        for m in msgs {
            let b = m.encode();
            assert_eq!(Message::parse(&b), Some(m));
            // Every single-octet change of the header is refused or changes the message.
            for i in 0..8 {
                let mut c = b;
                if let Some(o) = c.get_mut(i) {
                    *o ^= 0x40;
                }
                assert_ne!(Message::parse(&c), Some(m), "octet {i}");
            }
            assert_eq!(Message::parse(&b[..PD_LEN - 1]), None);
            let mut long = [0u8; PD_LEN + 1];
            long[..PD_LEN].copy_from_slice(&b);
            assert_eq!(Message::parse(&long), None);
        }
        // A refusal says nothing: any number in it makes it garbage.
        for i in 6..PD_LEN {
            let mut r = Message::Refuse.encode();
            if let Some(o) = r.get_mut(i) {
                *o = 1;
            }
            assert_eq!(Message::parse(&r), None, "octet {i}");
        }
        // Version 1 (16 octets, a reason) is not this protocol.
        let mut v1 = [0u8; 16];
        v1[..8].copy_from_slice(b"siwQ\x01\x03\x01\x00");
        assert_eq!(Message::parse(&v1), None);
        let req = Message::Request {
            from: 0x01020304,
            to: 5,
            psn: 0x00abcdef,
        }
        .encode();
        assert_eq!(&req[8..], &[1, 2, 3, 4, 0, 0, 0, 5, 0, 0xab, 0xcd, 0xef]);
        let mut wide = req;
        wide[16] = 1;
        assert_eq!(Message::parse(&wide), None);
    }

    #[test]
    fn the_responder_accepts_only_the_peer_it_waits_for_with_its_psn() {
        let from = End {
            gid: gid_of_v4(A),
            qpn: 7,
        };
        let waits = |peer| Waits::For {
            peer,
            rq_psn: 0x123456,
            sq_psn: 0x654321,
        };
        assert_eq!(answer(&from, 0x123456, waits(from)), Ok(0x654321));
        assert_eq!(
            answer(&from, 0x123456, Waits::Nothing),
            Err(Refused::NotWaiting)
        );
        assert_eq!(answer(&from, 0x123457, waits(from)), Err(Refused::WrongPsn));
        assert_eq!(answer(&from, 0, waits(from)), Err(Refused::WrongPsn));
        let other_qp = End { qpn: 8, ..from };
        assert_eq!(
            answer(&from, 0x123456, waits(other_qp)),
            Err(Refused::WrongPeer)
        );
        let other_host = End {
            gid: gid_of_v4(B),
            ..from
        };
        assert_eq!(
            answer(&from, 0x123456, waits(other_host)),
            Err(Refused::WrongPeer)
        );
        // modify_qp's PSNs are 24 bits; the bits above are not compared.
        let wide = Waits::For {
            peer: from,
            rq_psn: 0xff12_3456,
            sq_psn: 0xff65_4321,
        };
        assert_eq!(answer(&from, 0x123456, wide), Ok(0x654321));
    }

    #[test]
    fn the_initiator_takes_only_the_accept_of_the_qp_and_psn_it_expects() {
        let acc = Message::Accept {
            from: 2,
            to: 1,
            psn: 9,
        }
        .encode();
        assert_eq!(outcome(1, 2, 9, false, &acc), Outcome::Connected);
        // Accepted by another QP than asked for, for another, or with another PSN: give up.
        assert_eq!(outcome(1, 3, 9, false, &acc), Outcome::Fail);
        assert_eq!(outcome(4, 2, 9, false, &acc), Outcome::Fail);
        assert_eq!(outcome(1, 2, 8, false, &acc), Outcome::Fail);
        // An accept with the reject bit, or a refusal without it, is garbage.
        assert_eq!(outcome(1, 2, 9, true, &acc), Outcome::Fail);
        let refuse = Message::Refuse.encode();
        assert_eq!(outcome(1, 2, 9, true, &refuse), Outcome::Retry);
        assert_eq!(outcome(1, 2, 9, false, &refuse), Outcome::Fail);
        assert_eq!(outcome(1, 2, 9, true, &[]), Outcome::Fail);
        assert_eq!(
            outcome(1, 2, 9, false, b"not ours at all, no"),
            Outcome::Fail
        );
    }
}
