// SPDX-License-Identifier: GPL-2.0

//! Completion notification: whether a new completion queue entry wakes the consumer.
//!
//! The consumer arms the CQ by writing a notification word (`struct siw_cq_ctrl`, shared with
//! user space for user CQs): [`NOTIFY_NEXT_COMPLETION`] for any completion,
//! [`NOTIFY_SOLICITED`] for solicited ones only. Notification is one-shot: the CQ is disarmed
//! when it fires. This is the C siw's `siw_cq_notify_now()` with one difference: the C siw
//! passes "signalled" rather than the WQE's solicited flag for receive completions, so a CQ
//! armed for solicited events never wakes for a received solicited Send (defect O4). Here the
//! caller passes whether the completion is solicited, for sends and receives alike.

/// Not armed (`SIW_NOTIFY_NOT`).
pub const NOTIFY_NOT: u32 = 0;
/// Armed for solicited completions (`SIW_NOTIFY_SOLICITED`).
pub const NOTIFY_SOLICITED: u32 = 1;
/// Armed for the next completion (`SIW_NOTIFY_NEXT_COMPLETION`).
pub const NOTIFY_NEXT_COMPLETION: u32 = 2;

/// Whether a completion fires the notification armed as `armed`. When it does, the caller
/// writes [`NOTIFY_NOT`] back (one-shot) and calls the completion handler.
pub fn notify_now(armed: u32, solicited: bool) -> bool {
    armed & NOTIFY_NEXT_COMPLETION != 0 || (armed & NOTIFY_SOLICITED != 0 && solicited)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_completion_fires_for_anything() {
        assert!(notify_now(NOTIFY_NEXT_COMPLETION, false));
        assert!(notify_now(NOTIFY_NEXT_COMPLETION, true));
        // libsiw arms "any" as SOLICITED | NEXT_COMPLETION.
        assert!(notify_now(NOTIFY_SOLICITED | NOTIFY_NEXT_COMPLETION, false));
    }

    #[test]
    fn solicited_fires_only_for_solicited() {
        assert!(!notify_now(NOTIFY_SOLICITED, false));
        assert!(notify_now(NOTIFY_SOLICITED, true));
    }

    #[test]
    fn disarmed_never_fires() {
        assert!(!notify_now(NOTIFY_NOT, true));
        assert!(!notify_now(NOTIFY_NOT, false));
    }
}
