// SPDX-License-Identifier: GPL-2.0

//! Kernel SCTP sockets for DDP over SCTP (RFC 5043): one-to-one style (one association per
//! socket), made with [`Socket::new_stream`] and [`Transport::Sctp`].
//!
//! C headers: [`include/uapi/linux/sctp.h`](srctree/include/uapi/linux/sctp.h),
//! [`include/linux/socket.h`](srctree/include/linux/socket.h).
//!
//! Only the socket API is used (`setsockopt`, `sendmsg`, `recvmsg` with control messages),
//! never a symbol of `sctp.ko`: siw_rs loads without SCTP, and the socket layer loads it
//! when the first SCTP socket is made.
//!
//! SCTP calls `sk_write_space` through `sock_wfree()` whenever acknowledged chunks free
//! send buffer space, and `sk_data_ready` and `sk_state_change` as TCP does, so the
//! callbacks of [`Socket::attach`] serve SCTP sockets unchanged.

use super::tcp::{Socket, Transport};
use crate::glue::{bindings, iov::IoVec};
use core::{ffi::c_void, mem::size_of};
use kernel::{error::to_result, prelude::*};

/// Most pieces one message is gathered from.
pub(crate) const MAX_MSG_IOV: usize = 16;

/// A control message as the socket layer lays it out (`CMSG_SPACE`): the header, then the
/// data at the next `long` boundary, which on every kernel architecture is right after it.
#[repr(C)]
struct Cmsg<T> {
    hdr: bindings::cmsghdr,
    data: T,
}

const _: () = assert!(size_of::<bindings::cmsghdr>() % size_of::<usize>() == 0);

impl<T: Copy> Cmsg<T> {
    fn new(ty: u32, data: T) -> Self {
        Self {
            hdr: bindings::cmsghdr {
                cmsg_len: size_of::<Self>(),
                cmsg_level: bindings::IPPROTO_SCTP as c_int,
                cmsg_type: ty as c_int,
            },
            data,
        }
    }
}

/// A message taken from an SCTP socket by [`Socket::recv_message`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Received {
    /// Bytes placed at the start of the buffer.
    pub(crate) len: usize,
    /// The message ended (`MSG_EOR`): without it, the buffer was full and the rest of the
    /// message comes with the next call.
    pub(crate) end: bool,
    /// An SCTP notification, not user data (`MSG_NOTIFICATION`).
    pub(crate) notification: bool,
    /// The payload protocol identifier, in host order (user data only).
    pub(crate) ppid: u32,
}

/// The notification type of the SCTP Adaptation Layer Indication event, and its value.
pub(crate) fn adaptation_indication(n: &[u8]) -> Option<u32> {
    // struct sctp_adaptation_event: sai_type (u16), sai_flags (u16), sai_length (u32),
    // sai_adaptation_ind (u32, in host order), ...
    let ty = u16::from_ne_bytes(*n.first_chunk::<2>()?);
    if u32::from(ty) != bindings::sctp_sn_type_SCTP_ADAPTATION_INDICATION {
        return None;
    }
    Some(u32::from_ne_bytes(*n.get(8..)?.first_chunk::<4>()?))
}

impl Socket {
    /// `setsockopt(SOL_SCTP, opt, value)`.
    fn sctp_setsockopt<T>(&self, opt: u32, value: &T) -> Result {
        let mut p: bindings::sockptr_t = pin_init::zeroed();
        p.__bindgen_anon_1.kernel = core::ptr::from_ref(value).cast_mut().cast::<c_void>();
        p.set_is_kernel(true);
        let len = c_int::try_from(size_of::<T>()).map_err(|_| EINVAL)?;
        // SAFETY: A live socket; `p` is a kernel pointer to `len` readable bytes, which the
        // call only reads.
        to_result(unsafe {
            bindings::do_sock_setsockopt(
                self.as_ptr(),
                false,
                bindings::SOL_SCTP as c_int,
                opt as c_int,
                p,
                len,
            )
        })
    }

    /// The options of every siw_rs SCTP socket, set before it connects or listens: the DDP
    /// Adaptation Indication in its INIT or INIT-ACK (RFC 5043 sections 5.1, 11.1), one
    /// stream each way (one DDP stream per association; section 8 wants both counts
    /// equal), and the event that reports the peer's indication.
    pub(in crate::glue::net) fn sctp_set_up(&self) -> Result {
        let ai = bindings::sctp_setadaptation {
            ssb_adaptation_ind: crate::proto::sctp::ADAPTATION_DDP,
        };
        self.sctp_setsockopt(bindings::SCTP_ADAPTATION_LAYER, &ai)?;
        let init = bindings::sctp_initmsg {
            sinit_num_ostreams: 1,
            sinit_max_instreams: 1,
            sinit_max_attempts: 0,
            sinit_max_init_timeo: 0,
        };
        self.sctp_setsockopt(bindings::SCTP_INITMSG, &init)?;
        let ev = bindings::sctp_event {
            se_assoc_id: bindings::SCTP_FUTURE_ASSOC as i32,
            se_type: bindings::sctp_sn_type_SCTP_ADAPTATION_INDICATION as u16,
            se_on: 1,
        };
        self.sctp_setsockopt(bindings::SCTP_EVENT, &ev)?;
        self.sctp_set_up_accepted()
    }

    /// The options an accepted socket needs of its own: no Nagle (RFC 5043 section 11.2:
    /// untagged messages are not delayed), and the receive information of each message
    /// (its payload protocol identifier).
    pub(in crate::glue::net) fn sctp_set_up_accepted(&self) -> Result {
        let on: c_int = 1;
        self.sctp_setsockopt(bindings::SCTP_NODELAY, &on)?;
        self.sctp_setsockopt(bindings::SCTP_RECVRCVINFO, &on)
    }

    /// Sends one whole message, gathered from `iov`, on stream 0, unordered (RFC 5043
    /// section 10), with payload protocol identifier `ppid`. Never blocks: a full send
    /// buffer is `EAGAIN` (the write-space callback tells when to try again); SCTP takes a
    /// message whole or not at all.
    pub(crate) fn send_message(&self, iov: &[IoVec<'_>], ppid: u32) -> Result<usize> {
        if self.transport() != Transport::Sctp || iov.len() > MAX_MSG_IOV {
            return Err(EINVAL);
        }
        let mut kv: [bindings::kvec; MAX_MSG_IOV] = pin_init::zeroed();
        let mut len = 0usize;
        for (k, v) in kv.iter_mut().zip(iov) {
            k.iov_base = v.ptr().cast_mut().cast();
            k.iov_len = v.len();
            len = len.checked_add(v.len()).ok_or(EINVAL)?;
        }
        let mut cmsg = Cmsg::new(
            bindings::sctp_cmsg_type_SCTP_SNDINFO,
            bindings::sctp_sndinfo {
                snd_sid: 0,
                snd_flags: bindings::sctp_sinfo_flags_SCTP_UNORDERED as u16,
                // Opaque to SCTP: on the wire as given, so in network order.
                snd_ppid: ppid.to_be(),
                snd_context: 0,
                snd_assoc_id: 0,
            },
        );
        let mut msg: bindings::msghdr = pin_init::zeroed();
        msg.__bindgen_anon_1.msg_control = core::ptr::from_mut(&mut cmsg).cast();
        msg.msg_controllen = size_of::<Cmsg<bindings::sctp_sndinfo>>();
        msg.msg_flags = bindings::MSG_DONTWAIT | bindings::MSG_NOSIGNAL;
        // SAFETY: A live socket; the first `iov.len()` entries of `kv` describe readable
        // memory (`IoVec`'s invariant) that outlives the call; the control message is a
        // kernel buffer (`msg_control_is_user` is zero) of `msg_controllen` bytes.
        let r = unsafe {
            bindings::kernel_sendmsg(self.as_ptr(), &mut msg, kv.as_mut_ptr(), iov.len(), len)
        };
        let sent = usize::try_from(r).map_err(|_| Error::from_errno(r))?;
        if sent != len {
            // SCTP takes messages whole; anything else is a stack we do not understand.
            return Err(EIO);
        }
        Ok(sent)
    }

    /// Takes the next message (or the next part of one) into `buf`, without blocking
    /// (`EAGAIN`: nothing queued).
    pub(crate) fn recv_message(&self, buf: &mut [u8]) -> Result<Received> {
        if self.transport() != Transport::Sctp {
            return Err(EINVAL);
        }
        let mut kv = bindings::kvec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        let mut cmsg = Cmsg::new(0, bindings::sctp_rcvinfo::default());
        let room = size_of::<Cmsg<bindings::sctp_rcvinfo>>();
        let mut msg: bindings::msghdr = pin_init::zeroed();
        msg.__bindgen_anon_1.msg_control = core::ptr::from_mut(&mut cmsg).cast();
        msg.msg_controllen = room;
        // SAFETY: A live socket; `kv` describes `buf`, writable for the call; the control
        // buffer is a kernel one (`msg_control_is_user` is zero) of `room` bytes, which
        // `put_cmsg()` fills only as far as it fits.
        let r = unsafe {
            bindings::kernel_recvmsg(
                self.as_ptr(),
                &mut msg,
                &mut kv,
                1,
                buf.len(),
                bindings::MSG_DONTWAIT as c_int,
            )
        };
        let len = usize::try_from(r).map_err(|_| Error::from_errno(r))?;
        let notification = msg.msg_flags & bindings::sctp_msg_flags_MSG_NOTIFICATION != 0;
        // The receive information, if it came: `put_cmsg()` advanced the control buffer
        // past what it wrote.
        let wrote = room.saturating_sub(msg.msg_controllen);
        let ppid = if wrote >= room
            && cmsg.hdr.cmsg_level == bindings::IPPROTO_SCTP as c_int
            && cmsg.hdr.cmsg_type == bindings::sctp_cmsg_type_SCTP_RCVINFO as c_int
        {
            // As on the wire: network order.
            u32::from_be(cmsg.data.rcv_ppid)
        } else {
            0
        };
        Ok(Received {
            len,
            end: msg.msg_flags & bindings::MSG_EOR != 0,
            notification,
            ppid,
        })
    }

    /// Makes the coming release abort the association (SCTP ABORT, `SO_LINGER` 0) instead
    /// of shutting it down gracefully: for an association that must carry nothing more.
    pub(crate) fn abort_on_release(&self) {
        // SAFETY: A live sock.
        unsafe { bindings::sock_no_linger(self.sk()) };
    }
}
