// SPDX-License-Identifier: GPL-2.0

//! The queue pair state machine (RDMAP, RFC 5040 section 6), as the C siw implements it
//! (`siw_qp_modify()` and its `siw_qp_nextstate_from_*()` helpers in `siw_qp.c`).
//!
//! The verbs layer names states with the IB values; an iWARP QP has fewer states, so
//! RESET and INIT both map to [`State::Idle`], SQD to [`State::Closing`] and SQE to
//! [`State::Terminate`]. [`modify`] is a pure function: it returns the next state and the
//! side effects (flushes, connection drop, Terminate) for the caller to carry out.

/// The iWARP QP states.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// Not connected (verbs RESET or INIT).
    Idle,
    /// Ready to receive (verbs RTR; only during connection setup).
    Rtr,
    /// Connected, moving data.
    Rts,
    /// Graceful close in progress (verbs SQD).
    Closing,
    /// A Terminate was sent or received (verbs SQE).
    Terminate,
    /// Error: work requests complete with flush errors.
    Error,
}

/// The verbs (IB) QP states user space and kernel consumers name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VerbsState {
    /// `IB_QPS_RESET`.
    Reset,
    /// `IB_QPS_INIT`.
    Init,
    /// `IB_QPS_RTR`.
    Rtr,
    /// `IB_QPS_RTS`.
    Rts,
    /// `IB_QPS_SQD`.
    Sqd,
    /// `IB_QPS_SQE`.
    Sqe,
    /// `IB_QPS_ERR`.
    Err,
}

impl State {
    /// The iWARP state a verbs state names (`ib_qp_state_to_siw_qp_state`).
    pub fn from_verbs(s: VerbsState) -> Self {
        match s {
            VerbsState::Reset | VerbsState::Init => Self::Idle,
            VerbsState::Rtr => Self::Rtr,
            VerbsState::Rts => Self::Rts,
            VerbsState::Sqd => Self::Closing,
            VerbsState::Sqe => Self::Terminate,
            VerbsState::Err => Self::Error,
        }
    }

    /// The verbs state reported for this state (`siw_qp_state_to_ib_qp_state`).
    pub fn to_verbs(self) -> VerbsState {
        match self {
            Self::Idle => VerbsState::Init,
            Self::Rtr => VerbsState::Rtr,
            Self::Rts => VerbsState::Rts,
            Self::Closing => VerbsState::Sqd,
            Self::Terminate => VerbsState::Sqe,
            Self::Error => VerbsState::Err,
        }
    }
}

/// What the caller knows when it asks for a transition.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// A connected socket comes with the request (only the connection manager has one).
    pub has_llp: bool,
    /// Negotiated MPA parameters come with the request.
    pub has_mpa: bool,
    /// No send work request is in progress.
    pub tx_idle: bool,
    /// The request carries an address vector naming the peer (a connection made by
    /// `modify_qp`, without the connection manager; see [`crate::gidconn`]).
    pub has_av: bool,
    /// A connection made by `modify_qp` is on its way or up.
    pub av_conn: bool,
}

/// A transition's outcome: the new state and what the caller must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The state after the transition.
    pub next: State,
    /// Complete every posted receive with a flush error.
    pub flush_rq: bool,
    /// Complete every posted send with a flush error.
    pub flush_sq: bool,
    /// Close the connection.
    pub drop_conn: bool,
    /// Send a Terminate (RDMAP layer, catastrophic, unspecified) before closing.
    pub terminate: bool,
    /// Forget the connection endpoint (moving to ERROR from IDLE/RTR).
    pub release_cep: bool,
    /// Start the connection the address vector names (IDLE to RTR with one).
    pub connect: bool,
}

/// Why a transition was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// RTS needs a connected socket and negotiated MPA parameters (`EINVAL`).
    NotConnected,
    /// The transition is undefined from CLOSING (`ECONNABORTED`).
    Undefined,
}

impl Transition {
    fn stay(s: State) -> Self {
        Self {
            next: s,
            flush_rq: false,
            flush_sq: false,
            drop_conn: false,
            terminate: false,
            release_cep: false,
            connect: false,
        }
    }
}

/// The transition from `cur` towards `target`, given `ctx`.
///
/// Requests the C siw ignores leave the state unchanged (e.g. IDLE to CLOSING); those it
/// refuses return [`Refused`].
///
/// One path is siw_rs's own: IDLE to RTR with an address vector starts a connection to the
/// peer it names, and from RTR such a QP may move to RTS before that connection is up (its
/// send work waits for it). Without an address vector, RTR is ignored as by the C siw, and
/// RTS needs the connection manager's socket and MPA parameters.
pub fn modify(cur: State, target: State, ctx: Context) -> Result<Transition, Refused> {
    let mut t = Transition::stay(cur);
    match cur {
        State::Idle | State::Rtr => match target {
            State::Rtr if cur == State::Idle && ctx.has_av => {
                t.next = State::Rtr;
                t.connect = true;
            }
            State::Rts => {
                let by_cm = ctx.has_llp && ctx.has_mpa;
                let by_av = cur == State::Rtr && ctx.av_conn;
                if !by_cm && !by_av {
                    return Err(Refused::NotConnected);
                }
                t.next = State::Rts;
            }
            State::Error => {
                t.next = State::Error;
                t.flush_rq = true;
                t.release_cep = true;
            }
            _ => {}
        },
        State::Rts => match target {
            State::Closing => {
                if ctx.tx_idle {
                    t.next = State::Closing;
                } else {
                    t.next = State::Error;
                    t.flush_sq = true;
                }
                t.flush_rq = true;
                t.drop_conn = true;
            }
            State::Terminate => {
                t.next = State::Terminate;
                t.terminate = true;
                t.drop_conn = true;
            }
            State::Error => {
                t.next = State::Error;
                t.flush_sq = true;
                t.flush_rq = true;
                t.drop_conn = true;
            }
            _ => {}
        },
        State::Terminate => {
            if target == State::Error {
                t.next = State::Error;
                t.flush_rq = true;
                t.flush_sq = !ctx.tx_idle;
            }
        }
        State::Closing => match target {
            State::Idle => t.next = State::Idle,
            State::Closing => {}
            State::Error => {
                t.next = State::Error;
                t.flush_sq = !ctx.tx_idle;
                t.flush_rq = true;
            }
            _ => return Err(Refused::Undefined),
        },
        State::Error => {}
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [State; 6] = [
        State::Idle,
        State::Rtr,
        State::Rts,
        State::Closing,
        State::Terminate,
        State::Error,
    ];

    #[test]
    fn verbs_mapping_round_trips_through_iwarp_states() {
        for s in ALL {
            assert_eq!(State::from_verbs(s.to_verbs()), s);
        }
        assert_eq!(State::from_verbs(VerbsState::Reset), State::Idle);
        assert_eq!(State::Idle.to_verbs(), VerbsState::Init);
    }

    #[test]
    fn rts_needs_a_connection() {
        let none = Context::default();
        assert_eq!(
            modify(State::Idle, State::Rts, none),
            Err(Refused::NotConnected)
        );
        let llp_only = Context {
            has_llp: true,
            ..none
        };
        assert_eq!(
            modify(State::Idle, State::Rts, llp_only),
            Err(Refused::NotConnected)
        );
        let both = Context {
            has_llp: true,
            has_mpa: true,
            ..none
        };
        assert_eq!(
            modify(State::Rtr, State::Rts, both).map(|t| t.next),
            Ok(State::Rts)
        );
    }

    #[test]
    fn idle_to_error_flushes_receives_only() {
        let t = modify(State::Idle, State::Error, Context::default());
        assert_eq!(
            t,
            Ok(Transition {
                next: State::Error,
                flush_rq: true,
                flush_sq: false,
                drop_conn: false,
                terminate: false,
                release_cep: true,
                connect: false,
            })
        );
    }

    #[test]
    fn an_address_vector_starts_a_connection_and_allows_rts_before_it_is_up() {
        let av = Context {
            has_av: true,
            ..Context::default()
        };
        let t = modify(State::Idle, State::Rtr, av).ok();
        assert_eq!(t.map(|t| (t.next, t.connect)), Some((State::Rtr, true)));
        // Without one, RTR is ignored (the C siw) and RTS refused.
        let t = modify(State::Idle, State::Rtr, Context::default()).ok();
        assert_eq!(t.map(|t| (t.next, t.connect)), Some((State::Idle, false)));
        let pending = Context {
            av_conn: true,
            ..Context::default()
        };
        assert_eq!(
            modify(State::Rtr, State::Rts, pending).map(|t| t.next),
            Ok(State::Rts)
        );
        // RTS straight from IDLE is not a shortcut around RTR.
        assert_eq!(
            modify(State::Idle, State::Rts, pending),
            Err(Refused::NotConnected)
        );
        // A second RTR with an address vector does not start a second connection.
        assert_eq!(
            modify(State::Rtr, State::Rtr, av).map(|t| t.connect),
            Ok(false)
        );
        // ERROR from RTR ends the connection attempt.
        assert_eq!(
            modify(State::Rtr, State::Error, pending).map(|t| t.release_cep),
            Ok(true)
        );
    }

    #[test]
    fn graceful_close_depends_on_tx() {
        let idle = Context {
            tx_idle: true,
            ..Context::default()
        };
        let t = modify(State::Rts, State::Closing, idle).ok();
        assert_eq!(
            t.map(|t| (t.next, t.flush_sq, t.drop_conn)),
            Some((State::Closing, false, true))
        );
        let busy = Context::default();
        let t = modify(State::Rts, State::Closing, busy).ok();
        assert_eq!(t.map(|t| (t.next, t.flush_sq)), Some((State::Error, true)));
    }

    #[test]
    fn terminate_from_rts_sends_terminate_and_drops() {
        let t = modify(State::Rts, State::Terminate, Context::default()).ok();
        assert_eq!(
            t.map(|t| (t.next, t.terminate, t.drop_conn)),
            Some((State::Terminate, true, true))
        );
    }

    #[test]
    fn undefined_from_closing_is_refused() {
        for target in [State::Rtr, State::Rts, State::Terminate] {
            assert_eq!(
                modify(State::Closing, target, Context::default()),
                Err(Refused::Undefined)
            );
        }
    }

    #[test]
    fn error_is_final_and_ignored_requests_keep_state() {
        for target in ALL {
            assert_eq!(
                modify(State::Error, target, Context::default()).map(|t| t.next),
                Ok(State::Error)
            );
        }
        assert_eq!(
            modify(State::Idle, State::Closing, Context::default()).map(|t| t.next),
            Ok(State::Idle)
        );
        assert_eq!(
            modify(State::Rts, State::Idle, Context::default()).map(|t| t.next),
            Ok(State::Rts)
        );
    }

    #[test]
    fn every_pair_is_total() {
        // No combination panics; each yields a state or a refusal.
        for cur in ALL {
            for target in ALL {
                for bits in 0..32u8 {
                    let ctx = Context {
                        has_llp: bits & 1 != 0,
                        has_mpa: bits & 2 != 0,
                        tx_idle: bits & 4 != 0,
                        has_av: bits & 8 != 0,
                        av_conn: bits & 16 != 0,
                    };
                    let _ = modify(cur, target, ctx);
                }
            }
        }
    }
}
