#!/usr/bin/env python3
# frame_fuzz.py: a hostile iWARP peer that fuzzes a listener over raw TCP (issue 13).
#
#   frame_fuzz.py --addr A [--port P] --seed S --frames N [--seconds T] [--quiet]
#
# The listener is selftests/hostile/fuzz_target.c (user space) or kfuzz/kfuzz_target.c (a
# kernel consumer), whose accept private data names a live MR (its bytes known), a dead
# STag (deregistered, or invalidated by the kernel target), its posted receives, and, from
# the kernel target, flags: 1, a Send "ready" follows the reply (the peer waits for it) and
# the MR is a fast-registration one, which a Send with Invalidate may invalidate; 2, the
# receives are never reposted.
# Connection after connection until N frames were sent (or, with --seconds, T seconds have
# passed: the run then ends after the connection under way, and says so), each with a
# random.Random seeded from S and the connection's number (so a seed repeats a run, and
# --only K one connection of it), the peer plays one of:
#
# fpdu (most): an MPA exchange (revision 1 or 2, CRC asked for or not, random IRD/ORD and
#   private data), then a run of valid traffic: RDMA Writes into the live MR and Sends
#   into posted receives, each cut into one to three DDP segments; Read Requests within
#   the MR, up to the negotiated IRD outstanding, whose Read Responses are checked byte
#   for byte against what this connection wrote (the peer keeps a copy of the MR). A
#   Terminate, or the connection closing, during valid traffic is a failure. Then, mostly,
#   one hostile frame from the list in HOSTILE: every DDP/RDMAP header field out of range
#   (STag, tagged offset near 2^64, QN, MSN, MO, opcode, RDMAP and DDP version), lengths
#   that lie (0, below the header, beyond what is sent), bad CRCs, Read Requests larger
#   than the MR or beyond the IRD, Terminates, Sends beyond the posted receives, Writes to
#   the deregistered STag, Send with Invalidate of an STag that cannot be invalidated,
#   unsolicited Read Responses, bit flips and garbage. For the classes marked fatal the
#   listener must answer with a Terminate or close the connection within 5 s, else this
#   is a failure (and a Terminate for an unknown or deregistered STag, or an offset outside
#   the region, must carry the code RFC 5040/5041 name: EXPECT_TERM); for the others
#   whatever it does is accepted, short of a hang. Against
#   a target whose MR can be invalidated (flag 1), every 50th connection sends a Send with
#   Invalidate of it and then a Write to it, so that every run has one.
# mpa: attacks on the negotiation: a wrong key, a reply sent to the responder, private
#   data beyond the limit (with or without the bytes), an unknown revision, markers asked
#   for, a request cut short (then FIN or RST), bytes after the request: the listener must
#   close (or reject) within 10 s (the C siw's and siw_rs's MPA request deadline is 5 s).
# conn: attacks on the connection: half-open (FIN after some traffic: the listener must
#   close), RST in the middle of an FPDU, a zero window (a tiny receive buffer, Read
#   Requests for the whole MR, nothing read for a while, then RST), a flood of connection
#   attempts (up to 40 at once, some with a request, all reset), and more Read Requests
#   than the IRD the listener announced, behind a zero window (so that they are all
#   outstanding at once): a Terminate must come once the window opens (this one also
#   every 50th connection, so that every run has it).
#
# --workers W (default 6) makes W connections at a time, each worker every W-th
# connection number; a connection's bytes depend on the seed and its number alone.
#
# Prints a summary line:
#   frame_fuzz: seed S frames F connections C terminates T closes X failures E elapsed Ts
#   workers W
# ("budget T s reached" after it when --seconds ended the run) followed by per-class
# counts, and one "FAIL: ..." line per failure (with the connection's number, to repeat
# it: --only K). Exits 1 on any failure.
import argparse
import json
import os
import random
import socket
import struct
import sys
import time

from crc32c import crc32c

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_MARKERS, F_CRC, F_REJECT, F_ENHANCED = 0x8000, 0x4000, 0x2000, 0x1000
OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND, OP_SEND_INV, OP_SEND_SE = 0, 1, 2, 3, 4, 5
OP_TERMINATE = 7
# RFC 7306: Immediate Data (with SE: 9), Atomic Request, Atomic Response; offered with
# siw_rs's MPA bit 0x0200, accepted with 0x0100.
OP_IMM, OP_ATOMIC_REQ, OP_ATOMIC_RESP = 8, 10, 11
F_EXT_OFFER, F_EXT_ACCEPT = 0x0200, 0x0100
M64 = 2**64 - 1
DDP_TAGGED, DDP_LAST = 0x80, 0x40
MR_PATTERN = bytes((i * 31 + 7) & 0xFF for i in range(65536))


def connect(addr, port, timeout):
    """A TCP connection with SO_REUSEADDR. Closed, it waits in TIME_WAIT for a minute, and
    its local port must not refuse a later iWARP connect from this host: rdma_cm picks a
    port without asking TCP, and siw_rs (as the C siw) binds it with SO_REUSEADDR, which
    TCP grants only when every socket holding the port set it too."""
    s = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.settimeout(timeout)
    s.connect((addr, port))
    return s


class Conn:
    """One MPA connection: framing (CRC as negotiated), the peer's advert, our MR copy."""

    def __init__(self, sock, crc, ird, adv, flags):
        self.s = sock
        self.crc = crc
        self.ird = ird
        self.addr, self.rkey, self.mrlen, self.dead, self.rsize, self.rcount = adv
        self.invalidatable = bool(flags & 1)  # the MR, by a Send with Invalidate
        self.no_repost = bool(flags & 2)
        self.mr = bytearray(MR_PATTERN[: self.mrlen])
        self.msn = {0: 1, 1: 1}  # next MSN of queue 0 (Sends) and 1 (Read Requests)
        self.ext = False  # RFC 7306 agreed
        self.sends = 0
        self.reads = []  # outstanding: (sink_stag, sink_to, offset, size, received)
        self.rxbuf = b""
        self.term = None  # the first Terminate's (layer, error type, error code)

    def fpdu(self, ulpdu, length=None, bad_crc=False):
        ln = len(ulpdu) if length is None else length
        body = struct.pack(">H", ln) + ulpdu
        body += b"\0" * (-len(body) % 4)
        c = crc32c(body) if self.crc else 0
        if bad_crc:
            c ^= 0x5A5A5A5A  # without the CRC in use, a field the receiver ignores
        return body + struct.pack("<I", c)  # CRC32C, little endian as iSCSI and the C siw

    def recv_frames(self, timeout):
        """Reads what arrives within timeout; returns the FPDUs (ctl, rctl, ulpdu) and
        whether the connection closed."""
        self.s.settimeout(timeout)
        frames, closed = [], False
        try:
            chunk = self.s.recv(262144)
            if not chunk:
                closed = True
            self.rxbuf += chunk
        except socket.timeout:
            pass
        except OSError:
            closed = True
        while len(self.rxbuf) >= 2:
            (n,) = struct.unpack(">H", self.rxbuf[:2])
            total = 2 + n + (-(n + 2) % 4) + 4
            if len(self.rxbuf) < total:
                break
            u = self.rxbuf[2 : 2 + n]
            self.rxbuf = self.rxbuf[total:]
            if len(u) >= 2:
                frames.append((u[0], u[1], u))
        return frames, closed


# The Terminate (layer, error type, error code) that a hostile class must get, where RFC
# 5040 and 5041 name one: an STag that is no region's (or a deregistered one), a tagged
# offset outside the region, a Read Request naming such an STag.
EXPECT_TERM = {
    "stag-unknown": (1, 1, 0x00),       # DDP tagged buffer error, invalid STag
    "stag-deregistered": (1, 1, 0x00),
    "to-beyond-mr": (1, 1, 0x01),       # DDP tagged buffer error, base or bounds violation
    "to-below-mr": (1, 1, 0x01),
    "read-bad-source": (0, 1, 0x00),    # RDMAP remote protection error, invalid STag
}


def fetch_add(orig, add, mask):
    """RFC 7306 section 5.1.1's masked Fetch-and-Add, bit by bit as the RFC writes it."""
    carry, out = 0, 0
    for bit in range(64):
        s = carry + ((orig >> bit) & 1) + ((add >> bit) & 1)
        out |= (s & 1) << bit
        carry = (s >> 1) if not mask & (1 << bit) else 0
    return out


def cmp_swap(orig, swap, swap_mask, cmp_, cmp_mask):
    """RFC 7306 section 5.1.2's masked Compare-and-Swap."""
    if (cmp_ ^ orig) & cmp_mask:
        return orig
    return (orig & ~swap_mask & M64) | (swap & swap_mask)


def atomic_hdr(aop, req_id, stag, to, add_swap, add_swap_mask, cmp_, cmp_mask):
    """RFC 7306 figure 4: reserved + AOpCode, Request Identifier, Remote STag, Remote
    TO, Add or Swap Data, Add or Swap Mask, Compare Data, Compare Mask."""
    return struct.pack(">IIIQQQQQ", aop, req_id, stag, to & M64, add_swap, add_swap_mask,
                       cmp_, cmp_mask)


def reset(sock):
    """Makes the socket's close send a reset (SO_LINGER with a zero timeout)."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def hdr_untagged(op, qn, msn, mo, last=True, ctl_extra=0, rdmap_ver=1, ddp_ver=1, inv=0):
    ctl = (DDP_LAST if last else 0) | (ddp_ver & 3) | ctl_extra
    return struct.pack(">BBIIII", ctl, (rdmap_ver & 3) << 6 | op, inv, qn, msn, mo)


def hdr_tagged(op, stag, to, last=True, ctl_extra=0, rdmap_ver=1, ddp_ver=1):
    ctl = DDP_TAGGED | (DDP_LAST if last else 0) | (ddp_ver & 3) | ctl_extra
    return struct.pack(">BBIQ", ctl, (rdmap_ver & 3) << 6 | op, stag, to & (2**64 - 1))


def cuts(rng, n, pieces):
    """n split into `pieces` lengths (some may be 0 only when n is)."""
    if pieces <= 1 or n < pieces:
        return [n]
    points = sorted(rng.sample(range(1, n), pieces - 1))
    return [b - a for a, b in zip([0] + points, points + [n])]


class Fuzz:
    def __init__(self, args):
        self.a = args
        self.frames = 0
        self.conns = 0
        self.terminates = 0
        self.closes = 0
        self.failures = []
        self.classes = {}
        self.rng = None
        self.k = 0

    def fail(self, what):
        self.failures.append(f"FAIL: connection {self.k} (--seed {self.a.seed} --only {self.k}): {what}")

    def trace(self, what):
        if self.a.trace:
            print(f"{self.k}: {what}", flush=True)

    def count(self, name):
        self.classes[name] = self.classes.get(name, 0) + 1

    def send(self, c, data, frames=1):
        c.s.sendall(data)
        self.frames += frames

    # The MPA exchange as initiator; returns a Conn, or None if the listener refused.
    def mpa(self, rev, crc, ird, ord_, pd_len, offer=False):
        rng = self.rng
        s = connect(self.a.addr, self.a.port, 20)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        bits = rev | (F_CRC if crc else 0) | (F_EXT_OFFER if offer else 0)
        body = b""
        if rev == 2:
            bits |= F_ENHANCED
            body = struct.pack(">HH", ird, ord_)
        body += rng.randbytes(pd_len)
        s.sendall(KEY_REQ + struct.pack(">HH", bits, len(body)) + body)
        s.settimeout(20)
        hdr = b""
        while len(hdr) < 20:
            chunk = s.recv(20 - len(hdr))
            if not chunk:
                s.close()
                return None
            hdr += chunk
        rbits, rlen = struct.unpack(">HH", hdr[16:20])
        pd = b""
        while len(pd) < rlen:
            chunk = s.recv(rlen - len(pd))
            if not chunk:
                break
            pd += chunk
        if hdr[:16] != KEY_REP or rbits & F_REJECT or len(pd) < rlen:
            s.close()
            return None
        if rbits & F_MARKERS:
            self.fail(f"the reply asks for markers: bits={rbits:#06x}")
        if rbits & F_EXT_OFFER or (rbits & F_EXT_ACCEPT and not offer):
            self.fail(f"the reply's RFC 7306 bits answer no offer: bits={rbits:#06x}")
        peer_ird = 1
        if rev == 2:
            if not rbits & F_ENHANCED or len(pd) < 4:
                self.fail(f"a revision 2 reply without the IRD/ORD word: bits={rbits:#06x}")
                s.close()
                return None
            peer_ird = struct.unpack(">H", pd[:2])[0] & 0x3FFF
            pd = pd[4:]
        if len(pd) < 28:
            self.fail(f"the reply's private data is not fuzz_target's advert ({len(pd)} bytes)")
            s.close()
            return None
        adv = struct.unpack(">QIIIII", pd[:28])
        flags = struct.unpack(">I", pd[28:32])[0] if len(pd) >= 32 else 0
        # RFC 5044: the CRC is in use when either end asks for it.
        c = Conn(s, crc or bool(rbits & F_CRC), max(1, min(peer_ird, ird if rev == 2 else 1)),
                 adv, flags)
        c.peer_ird = peer_ird
        c.ext = bool(rbits & F_EXT_ACCEPT)
        if flags & 1 and not self.ready(c):
            s.close()
            return None
        return c

    def ready(self, c):
        """The kernel target's Send "ready": its MRs are registered (and the dead one
        invalidated); nothing else may come before it."""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frames, closed = c.recv_frames(1.0)
            for i, (ctl, rctl, u) in enumerate(frames):
                op = rctl & 0x0F
                if i > 0 or ctl & DDP_TAGGED or op not in (OP_SEND, OP_SEND_SE) or u[18:] != b"ready":
                    self.fail(f"expected the Send 'ready', got ctl={ctl:#04x} op={op} {u[18:34].hex()}")
                    return False
                return True
            if closed:
                self.fail("the listener closed before its Send 'ready'")
                return False
        self.fail("no Send 'ready' within 10 s")
        return False

    # Valid traffic.
    def write(self, c):
        rng = self.rng
        ln = rng.choice((0, 1, rng.randrange(1, 64), rng.randrange(1, 256 if c.crc else 2048)))
        off = rng.randrange(0, c.mrlen - ln + 1)
        # A Write into the source of a Read still outstanding may or may not be seen by
        # its response (a requester orders them with a fence): let such Reads end first.
        if any(off < o + n and o < off + ln for _, _, o, n, _ in c.reads):
            if not self.drain_reads(c, 0):
                return False
        data = rng.randbytes(ln)
        out, n, pos = b"", 0, 0
        parts = cuts(rng, ln, rng.choice((1, 1, 2, 3)))
        for i, p in enumerate(parts):
            last = i == len(parts) - 1
            out += c.fpdu(hdr_tagged(OP_WRITE, c.rkey, c.addr + off + pos, last) + data[pos : pos + p])
            pos += p
            n += 1
        c.mr[off : off + ln] = data
        self.trace(f"write {ln} at {off} in {parts}")
        self.send(c, out, n)
        return True

    def send_msg(self, c):
        rng = self.rng
        ln = rng.randrange(0, min(c.rsize, 128 if c.crc else c.rsize) + 1)
        data = rng.randbytes(ln)
        op = rng.choice((OP_SEND, OP_SEND, OP_SEND_SE))
        out, n, pos = b"", 0, 0
        parts = cuts(rng, ln, rng.choice((1, 1, 2, 3)))
        for i, p in enumerate(parts):
            last = i == len(parts) - 1
            out += c.fpdu(hdr_untagged(op, 0, c.msn[0], pos, last) + data[pos : pos + p])
            pos += p
            n += 1
        c.msn[0] += 1
        c.sends += 1
        self.send(c, out, n)

    def atomic(self, c):
        """An Atomic Request on an aligned word of the MR (RFC 7306), plain or masked; the
        expected original value and the new one come from our copy of the MR. Like a Read
        it takes one of the IRD's places, and its word must not be written meanwhile."""
        rng = self.rng
        off = rng.randrange(0, c.mrlen // 8) * 8
        if any(off < o + n and o < off + 8 for _, _, o, n, _ in c.reads):
            if not self.drain_reads(c, 0):
                return False
        if len(c.reads) >= c.ird and not self.drain_reads(c, c.ird - 1):
            return False
        orig = int.from_bytes(c.mr[off:off + 8], "little")
        if rng.random() < 0.5:
            aop, cmp_, cmask = 0, 0, M64
            add = rng.choice((1, rng.randrange(2**64)))
            amask = rng.choice((0, 0, 1 << 31, rng.randrange(2**64)))
            new = fetch_add(orig, add, amask)
        else:
            aop = 2
            cmask = rng.choice((M64, M64, rng.randrange(2**64)))
            cmp_ = orig if rng.random() < 0.6 else rng.randrange(2**64)
            add = rng.randrange(2**64)
            amask = rng.choice((M64, rng.randrange(2**64)))
            new = cmp_swap(orig, add, amask, cmp_, cmask)
        req_id = c.msn[1]
        self.count("valid-atomic")
        # In the list of outstanding Reads, marked by its first field.
        c.reads.append([("atomic", req_id), orig, off, 8, 0])
        c.mr[off:off + 8] = new.to_bytes(8, "little")
        self.trace(f"atomic aop {aop} at {off}: {orig:#x} -> {new:#x}")
        self.send(c, c.fpdu(hdr_untagged(OP_ATOMIC_REQ, 1, c.msn[1], 0) +
                            atomic_hdr(aop, req_id, c.rkey, c.addr + off, add, amask, cmp_, cmask)))
        c.msn[1] += 1
        return True

    def imm(self, c):
        """An Immediate Data message (RFC 7306 section 6): it takes a posted receive."""
        op = self.rng.choice((OP_IMM, OP_IMM + 1))
        self.count("valid-imm")
        self.send(c, c.fpdu(hdr_untagged(op, 0, c.msn[0], 0) + self.rng.randbytes(8)))
        c.msn[0] += 1
        c.sends += 1

    def read_req(self, c, off=None, size=None):
        rng = self.rng
        if size is None:
            size = rng.randrange(1, (256 if c.crc else 4096) + 1)
            off = rng.randrange(0, c.mrlen - size + 1)
        sink = 0x5100 + len(c.reads)
        sink_to = rng.randrange(0, 2**48)
        rr = struct.pack(">IQIIQ", sink, sink_to, size, c.rkey, c.addr + off)
        c.reads.append([sink, sink_to, off, size, 0])
        self.trace(f"read {size} at {off}")
        self.send(c, c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1], 0) + rr))
        c.msn[1] += 1

    def take_frames(self, c, frames, valid):
        """Checks what came back: Read Responses against our copy; returns False on a
        Terminate."""
        ok = True
        for ctl, rctl, u in frames:
            op = rctl & 0x0F
            if op == OP_TERMINATE:
                self.terminates += 1
                t = struct.unpack(">I", u[18:22])[0] if len(u) >= 22 else 0
                if c.term is None:
                    c.term = (t >> 28, (t >> 24) & 0xF, (t >> 16) & 0xFF)
                if valid:
                    self.fail(f"a Terminate during valid traffic: layer={t >> 28} "
                              f"etype={(t >> 24) & 0xF} ecode={(t >> 16) & 0xFF:#04x}")
                ok = False
                continue
            if op == OP_ATOMIC_RESP and c.ext and not ctl & DDP_TAGGED:
                head = c.reads[0] if c.reads else None
                if head is None or not isinstance(head[0], tuple) or len(u) < 30:
                    if valid:
                        self.fail("an Atomic Response with no Atomic Request first in line")
                    continue
                c.reads.pop(0)
                qn, msn = struct.unpack(">II", u[6:14])
                req_id, orig = struct.unpack(">IQ", u[18:30])
                if valid and (qn != 3 or req_id != head[0][1] or orig != head[1]):
                    self.fail(f"Atomic Response qn={qn} req_id={req_id} orig={orig:#x}, "
                              f"expected qn=3 req_id={head[0][1]} orig={head[1]:#x}")
                continue
            if op != OP_READ_RESP or not ctl & DDP_TAGGED:
                if valid:
                    self.fail(f"an unexpected FPDU, opcode {op}")
                continue
            stag, to = struct.unpack(">IQ", u[2:14])
            data = u[14:]
            if not c.reads:
                if valid:
                    self.fail("a Read Response with no Read Request outstanding")
                continue
            r = c.reads[0]
            sink, sink_to, off, size, got = r
            if isinstance(sink, tuple):
                if valid:
                    self.fail("a Read Response while an Atomic Request is first in line")
                continue
            if stag != sink or to != sink_to + got or got + len(data) > size:
                if valid:
                    self.fail(f"a Read Response at stag={stag:#x} to={to:#x}, expected "
                              f"stag={sink:#x} to={sink_to + got:#x} ({got} of {size} bytes)")
                continue
            want = bytes(c.mr[off + got : off + got + len(data)])
            if valid and data != want:
                i = next(i for i in range(len(data)) if data[i] != want[i])
                at = off + got + i
                self.fail(f"Read Response data differ from the MR at offset {at} (read of "
                          f"{size} at {off}, {got} bytes in; {len(data)} in this FPDU): got "
                          f"{data[i:i + 8].hex()}, want {want[i:i + 8].hex()}, first set "
                          f"{MR_PATTERN[at:at + 8].hex()}")
            r[4] += len(data)
            if ctl & DDP_LAST:
                if r[4] != size and valid:
                    self.fail(f"a Read Response ended after {r[4]} of {size} bytes")
                c.reads.pop(0)
        return ok

    def drain_reads(self, c, keep):
        """Reads until at most `keep` Read Requests are outstanding."""
        deadline = time.monotonic() + 10
        while len(c.reads) > keep:
            if time.monotonic() > deadline:
                self.fail(f"{len(c.reads)} Read Requests unanswered after 10 s")
                return False
            frames, closed = c.recv_frames(1.0)
            if not self.take_frames(c, frames, True):
                return False
            if closed:
                self.fail("the listener closed during valid traffic")
                return False
        return True

    def valid_run(self, c, count):
        rng = self.rng
        for _ in range(count):
            x = rng.random()
            if x < 0.55:
                if not self.write(c):
                    return False
            elif x < 0.75 and c.sends < c.rcount - 4:
                self.send_msg(c)
            elif c.ext and x < 0.85:
                if not self.atomic(c):
                    return False
            elif c.ext and x < 0.88 and c.sends < c.rcount - 4:
                self.imm(c)
            else:
                if len(c.reads) >= c.ird and not self.drain_reads(c, c.ird - 1):
                    return False
                self.read_req(c)
        return self.drain_reads(c, 0)

    # Hostile frames: (name, fatal, builder(c) -> (bytes, frames)).
    def hostile(self, c, want=None):
        rng = self.rng
        payload = rng.randbytes(rng.randrange(1, 64))
        bad_stag = rng.choice((0, 1, 0xFFFFFFFF, rng.randrange(2**32)))
        while bad_stag in (c.rkey,):
            bad_stag = rng.randrange(2**32)
        wto = c.addr + rng.randrange(0, c.mrlen - 64)
        h = [
            ("stag-unknown", True, lambda: c.fpdu(hdr_tagged(OP_WRITE, bad_stag, wto) + payload)),
            ("stag-deregistered", True, lambda: c.fpdu(hdr_tagged(OP_WRITE, c.dead, wto) + payload)),
            ("to-near-2^64", True, lambda: c.fpdu(
                hdr_tagged(OP_WRITE, c.rkey, 2**64 - rng.randrange(1, 4096)) + payload + bytes(4096))),
            ("to-beyond-mr", True, lambda: c.fpdu(
                hdr_tagged(OP_WRITE, c.rkey, c.addr + c.mrlen - rng.randrange(0, 8)) + bytes(64))),
            ("to-below-mr", True, lambda: c.fpdu(
                hdr_tagged(OP_WRITE, c.rkey, c.addr - rng.randrange(1, 2**20)) + payload)),
            ("qn", True, lambda: c.fpdu(
                hdr_untagged(OP_SEND, rng.randrange(3, 2**32), c.msn[0], 0) + payload)),
            ("msn", True, lambda: c.fpdu(hdr_untagged(
                OP_SEND, 0, rng.choice((0, c.msn[0] + rng.randrange(1, 2**31))), 0) + payload)),
            ("mo", False, lambda: c.fpdu(
                hdr_untagged(OP_SEND, 0, c.msn[0], rng.randrange(1, 2**32)) + payload)),
            ("mo-beyond-recv", True, lambda: c.fpdu(
                hdr_untagged(OP_SEND, 0, c.msn[0], c.rsize - 8) + bytes(64))),
            ("send-beyond-recv", True, lambda: c.fpdu(
                hdr_untagged(OP_SEND, 0, c.msn[0], 0) + bytes(c.rsize + 1))),
            ("opcode", True, lambda: self.bad_opcode(c, payload)),
            ("opcode-tagged", True, lambda: c.fpdu(
                hdr_tagged(rng.choice((OP_READ_REQ, OP_SEND, OP_SEND_INV, 6, OP_TERMINATE,
                                       rng.randrange(8, 16))), c.rkey, wto) + payload)),
            ("write-untagged", True, lambda: c.fpdu(
                hdr_untagged(OP_WRITE, 0, c.msn[0], 0) + payload)),
            ("rdmap-version", True, lambda: c.fpdu(hdr_tagged(
                OP_WRITE, c.rkey, wto, rdmap_ver=rng.choice((0, 2, 3))) + payload)),
            ("ddp-version", True, lambda: c.fpdu(hdr_untagged(
                OP_SEND, 0, c.msn[0], 0, ddp_ver=rng.choice((0, 2, 3))) + payload)),
            ("ulpdu-length-0", True, lambda: c.fpdu(b"", 0)),
            ("ulpdu-below-header", True, lambda: c.fpdu(
                hdr_untagged(OP_SEND, 0, c.msn[0], 0)[: rng.randrange(1, 18)])),
            ("tagged-below-header", True, lambda: c.fpdu(
                hdr_tagged(OP_WRITE, c.rkey, wto)[: rng.randrange(1, 14)])),
            ("crc", c.crc, lambda: c.fpdu(hdr_tagged(OP_WRITE, c.rkey, wto) + payload, bad_crc=True)),
            ("read-larger-than-mr", True, lambda: c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1], 0) +
                struct.pack(">IQIIQ", 0x77, 0, rng.choice((c.mrlen + 1, 2**31, 2**32 - 1)),
                            c.rkey, c.addr))),
            ("read-bad-source", True, lambda: c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1], 0) +
                struct.pack(">IQIIQ", 0x77, 0, 16, rng.choice((bad_stag, c.dead)), c.addr))),
            ("read-short-request", True, lambda: c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1], 0) +
                rng.randbytes(rng.randrange(0, 28)))),
            ("read-msn", True, lambda: c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1] + rng.randrange(1, 1000), 0) +
                struct.pack(">IQIIQ", 0x77, 0, 16, c.rkey, c.addr))),
            ("reads-beyond-ird", False, lambda: list(
                c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1] + i, 0) +
                       struct.pack(">IQIIQ", 0x77, 0, c.mrlen, c.rkey, c.addr))
                for i in range(c.ird + rng.randrange(1, 8)))),
            ("read-response-unsolicited", True, lambda: c.fpdu(
                hdr_tagged(OP_READ_RESP, rng.randrange(2**32), rng.randrange(2**64)) + payload)),
            ("terminate", True, lambda: c.fpdu(hdr_untagged(OP_TERMINATE, 2, 1, 0) + rng.randbytes(
                rng.choice((0, 4, 28, rng.randrange(0, 80)))))),
            ("sends-beyond-posted", c.no_repost, lambda: list(
                c.fpdu(hdr_untagged(OP_SEND, 0, c.msn[0] + i, 0) + payload)
                for i in range(c.rcount + 8))),
            ("send-invalidate", True, lambda: c.fpdu(hdr_untagged(
                OP_SEND_INV + rng.choice((0, 2)), 0, c.msn[0], 0,
                inv=rng.choice((bad_stag,) if c.invalidatable else (c.rkey, bad_stag, c.dead)))
                + payload)),
            ("segment-then-other", False, lambda: [c.fpdu(
                hdr_untagged(OP_SEND, 0, c.msn[0], 0, last=False) + payload), c.fpdu(
                hdr_untagged(OP_SEND, 0, c.msn[0] + 1, 0) + payload)]),
            ("ddp-reserved-bits", False, lambda: c.fpdu(hdr_tagged(
                OP_WRITE, c.rkey, wto, ctl_extra=rng.choice((0x20, 0x10, 0x3C))) + payload)),
            ("bit-flips", False, lambda: self.flipped(c)),
            ("garbage", False, lambda: rng.randbytes(rng.randrange(1, 300))),
            ("length-beyond-stream", False, lambda: c.fpdu(
                hdr_tagged(OP_WRITE, c.rkey, wto) + payload, rng.randrange(200, 65536))),
        ]
        if c.ext:
            # RFC 7306, agreed: bad Atomic Requests and Responses, bad Immediate Data.
            aw = c.addr + rng.randrange(0, c.mrlen // 8) * 8
            h += [
                ("atomic-misaligned", True, lambda: c.fpdu(hdr_untagged(
                    OP_ATOMIC_REQ, 1, c.msn[1], 0) + atomic_hdr(
                    0, 1, c.rkey, aw + rng.randrange(1, 8), 1, 0, 0, M64))),
                ("atomic-bad-stag", True, lambda: c.fpdu(hdr_untagged(
                    OP_ATOMIC_REQ, 1, c.msn[1], 0) + atomic_hdr(
                    0, 1, rng.choice((bad_stag, c.dead)), aw, 1, 0, 0, M64))),
                ("atomic-beyond-mr", True, lambda: c.fpdu(hdr_untagged(
                    OP_ATOMIC_REQ, 1, c.msn[1], 0) + atomic_hdr(
                    2, 1, c.rkey, rng.choice((c.addr + c.mrlen, c.addr - 8, 2**64 - 8)),
                    1, M64, 0, M64))),
                ("atomic-bad-aop", True, lambda: c.fpdu(hdr_untagged(
                    OP_ATOMIC_REQ, 1, c.msn[1], 0) + atomic_hdr(
                    rng.choice((1, 3, 7, 15)), 1, c.rkey, aw, 1, 0, 0, M64))),
                ("atomic-length", True, lambda: c.fpdu(hdr_untagged(
                    OP_ATOMIC_REQ, 1, c.msn[1], 0) + atomic_hdr(
                    0, 1, c.rkey, aw, 1, 0, 0, M64)[: rng.randrange(0, 52)] +
                    (rng.randbytes(rng.randrange(53, 80)) if rng.random() < 0.5 else b""))),
                ("atomic-response-unsolicited", True, lambda: c.fpdu(hdr_untagged(
                    OP_ATOMIC_RESP, 3, 1, 0) + struct.pack(">IQ", rng.randrange(2**32),
                                                           rng.randrange(2**64)))),
                ("imm-payload", True, lambda: c.fpdu(hdr_untagged(
                    OP_IMM, 0, c.msn[0], 0) + rng.randbytes(8 + rng.randrange(1, 64)))),
            ]
        if c.invalidatable:
            # A fast-registration MR of this stream's PD may be invalidated by the peer
            # (RFC 5040 section 5.3), the dead one again too; a Write to it after that
            # must be refused.
            h += [
                ("send-invalidate-dead", False, lambda: c.fpdu(hdr_untagged(
                    OP_SEND_INV, 0, c.msn[0], 0, inv=c.dead) + payload)),
                ("send-invalidate-then-write", True, lambda: [c.fpdu(hdr_untagged(
                    OP_SEND_INV + rng.choice((0, 2)), 0, c.msn[0], 0, inv=c.rkey) + payload),
                    c.fpdu(hdr_tagged(OP_WRITE, c.rkey, wto) + payload)]),
            ]
        pick = h[rng.randrange(len(h))]
        return next((x for x in h if x[0] == want), pick)

    def bad_opcode(self, c, payload):
        """An untagged message on QN 0 with an opcode of 8 to 15. With RFC 7306 agreed,
        8 and 9 with 8 octets are valid Immediate Data (seed 4149578294, connection 705,
        drew exactly that and found it answered as valid): one octet more makes them not."""
        op = self.rng.randrange(8, 16)
        if c.ext and op in (OP_IMM, OP_IMM + 1) and len(payload) == 8:
            payload += b"\0"
        return c.fpdu(hdr_untagged(op, 0, c.msn[0], 0) + payload)

    def flipped(self, c):
        rng = self.rng
        f = bytearray(c.fpdu(hdr_tagged(OP_WRITE, c.rkey, c.addr + 64) + bytes(32)))
        for _ in range(rng.randrange(1, 5)):
            i = rng.randrange(0, 16)
            f[i] ^= 1 << rng.randrange(8)
        return bytes(f)

    def answer(self, c, fatal, name):
        """After a hostile frame: waits (5 s at most) for the listener to Terminate or
        close; a fatal class must see one of them."""
        deadline = time.monotonic() + (5 if fatal else 0.5)
        ended = False
        while not ended and time.monotonic() < deadline:
            frames, closed = c.recv_frames(0.5)
            if not self.take_frames(c, frames, False):
                ended = True
            if closed:
                self.closes += 1
                ended = True
        if fatal and not ended:
            self.fail(f"hostile frame '{name}' was neither terminated nor closed in 5 s")
        want = EXPECT_TERM.get(name)
        if want and c.term is not None and c.term != want:
            self.fail(f"hostile frame '{name}': Terminate {c.term}, expected {want}")

    def run_fpdu(self, want=None):
        rng = self.rng
        rev = rng.choice((1, 2, 2, 2))
        crc = rng.random() < 0.2
        ird, ord_ = rng.choice((0, 1, 4, 16, 0x3FFF)), rng.choice((0, 1, 4, 0x3FFF))
        offer = rng.random() < 0.5
        c = self.mpa(rev, crc, ird, ord_, rng.choice((0, 0, rng.randrange(0, 200))), offer)
        self.count(f"fpdu-rev{rev}{'-crc' if crc else ''}{'-7306' if offer else ''}")
        self.trace(f"fpdu rev {rev} crc {crc} ird {ird} ord {ord_}: {c and (c.crc, c.ird)}")
        if c is None:
            self.fail("fuzz_target refused a valid MPA request")
            return
        try:
            if not self.valid_run(c, rng.randrange(1, 80)):
                return
            if want or rng.random() < 0.75:
                name, fatal, build = self.hostile(c, want)
                self.count(name)
                data = build()
                frames = data if isinstance(data, list) else [data]
                self.trace(f"hostile {name} (RFC 7306 {'agreed' if c.ext else 'off'}): "
                           f"{b''.join(frames).hex()}")
                self.send(c, b"".join(frames), len(frames))
                self.answer(c, fatal, name)
            elif rng.random() < 0.5:
                reset(c.s)
        except (BrokenPipeError, ConnectionResetError):
            self.closes += 1
        finally:
            c.s.close()

    def run_mpa(self):
        rng = self.rng
        kind = rng.choice(("key", "reply-to-responder", "pd-beyond-limit", "pd-lies",
                           "revision", "markers", "cut-short", "cut-short-rst", "after-request"))
        self.count(f"mpa-{kind}")
        s = connect(self.a.addr, self.a.port, 20)
        bits, body, key = 2 | F_ENHANCED, struct.pack(">HH", 4, 4), KEY_REQ
        extra, declared = b"", None
        if kind == "key":
            key = bytearray(KEY_REQ)
            key[rng.randrange(16)] ^= 1 << rng.randrange(8)
            key = bytes(key)
        elif kind == "reply-to-responder":
            key = KEY_REP
        elif kind == "pd-beyond-limit":
            body += rng.randbytes(rng.randrange(513, 2000))
        elif kind == "pd-lies":
            declared = rng.randrange(600, 65536)
        elif kind == "revision":
            bits = rng.choice((0, 3, 4, 0xFF)) | F_ENHANCED
        elif kind == "markers":
            bits |= F_MARKERS
        elif kind == "after-request":
            extra = rng.randbytes(rng.randrange(1, 100))
        frame = key + struct.pack(">HH", bits, len(body) if declared is None else declared) + body
        if kind.startswith("cut-short"):
            frame = frame[: rng.randrange(1, len(frame))]
        try:
            s.sendall(frame + extra)
            self.frames += 1
            if kind == "cut-short-rst":
                time.sleep(rng.random() * 0.2)
                reset(s)
                return
            if kind == "cut-short":
                time.sleep(rng.random() * 0.2)
                s.shutdown(socket.SHUT_WR)
            # Whatever the answer (a reject, a reply to a request it took), the listener
            # must end the connection within 10 s; an accepted one is ended by us.
            s.settimeout(10)
            t0 = time.monotonic()
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    self.closes += 1
                    break
                got += chunk
                if len(got) >= 20 and got[:16] == KEY_REP:
                    rbits = struct.unpack(">H", got[16:18])[0]
                    if not rbits & F_REJECT and kind in ("key", "reply-to-responder", "revision"):
                        self.fail(f"MPA attack '{kind}' was accepted: bits={rbits:#06x}")
                        break
                    if not rbits & F_REJECT:
                        break  # taken (e.g. bytes after a request): we close
                if time.monotonic() - t0 > 10:
                    raise socket.timeout()
        except socket.timeout:
            self.fail(f"MPA attack '{kind}' left the connection open for 10 s")
        except (ConnectionResetError, BrokenPipeError):
            self.closes += 1
        finally:
            s.close()

    def run_conn(self, kind=None):
        rng = self.rng
        kind = kind or rng.choice(("half-open", "rst-mid-fpdu", "zero-window", "flood", "ird-overflow"))
        self.count(f"conn-{kind}")
        if kind == "flood":
            socks = []
            for i in range(rng.randrange(5, 41)):
                try:
                    s = connect(self.a.addr, self.a.port, 5)
                except OSError:
                    break
                if rng.random() < 0.5:
                    s.sendall(KEY_REQ + struct.pack(">HH", 2 | F_ENHANCED, 4) + struct.pack(">HH", 1, 1))
                    self.frames += 1
                socks.append(s)
            time.sleep(rng.random() * 0.3)
            for s in socks:
                reset(s)
                s.close()
            return
        c = self.mpa(2, False, 4, 4, 0)
        if c is None:
            self.fail("fuzz_target refused a valid MPA request")
            return
        try:
            if kind == "ird-overflow":
                self.ird_overflow(c)
                return
            if kind == "zero-window":
                c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                for i in range(c.ird):
                    self.read_req(c, 0, c.mrlen)
                time.sleep(0.5 + rng.random())
                reset(c.s)
                return
            if not self.valid_run(c, rng.randrange(0, 20)):
                return
            if kind == "half-open":
                c.s.shutdown(socket.SHUT_WR)
                self.answer(c, True, "half-open")
            else:
                f = c.fpdu(hdr_tagged(OP_WRITE, c.rkey, c.addr) + rng.randbytes(1000))
                self.send(c, f[: rng.randrange(1, len(f))])
                reset(c.s)
        except (BrokenPipeError, ConnectionResetError):
            self.closes += 1
        finally:
            c.s.close()

    def ird_overflow(self, c):
        """More Read Requests for the whole MR than the IRD the listener announced, all
        at once behind a zero window, so that they are all outstanding: once the window
        opens, a Terminate must come (the Read Responses before it are not checked)."""
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        n = c.peer_ird + self.rng.randrange(2, 6)
        out = b""
        for i in range(n):
            sink = 0x5100 + i
            c.reads.append([sink, 0, 0, c.mrlen, 0])
            out += c.fpdu(hdr_untagged(OP_READ_REQ, 1, c.msn[1], 0) +
                          struct.pack(">IQIIQ", sink, 0, c.mrlen, c.rkey, c.addr))
            c.msn[1] += 1
        self.trace(f"ird-overflow: {n} Read Requests of {c.mrlen}, IRD {c.peer_ird}")
        self.send(c, out, n)
        time.sleep(0.5)
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            frames, closed = c.recv_frames(0.5)
            if not self.take_frames(c, frames, False):
                return
            if closed:
                self.fail(f"{n} Read Requests beyond the IRD {c.peer_ird}: closed without a Terminate")
                return
        self.fail(f"{n} Read Requests beyond the IRD {c.peer_ird}: no Terminate in 10 s")

    def shard(self, w, workers, frames):
        """Connections k = w, w + workers, w + 2 workers, ... until `frames` frames (or
        the time budget, or 20 failures). Each k seeds its own generator, so a connection
        is the same whichever worker makes it, and --only k replays it alone."""
        t0 = time.monotonic()
        k = w
        budget = False
        while self.frames < frames and len(self.failures) < 20:
            if self.a.seconds and time.monotonic() - t0 >= self.a.seconds:
                budget = True
                break
            if self.a.only is None or self.a.only == k:
                self.k = k
                self.rng = random.Random(self.a.seed * 1000003 + k)
                x = self.rng.random()
                try:
                    # In every run, however short: the IRD overflow, and (where the
                    # target's MR can be invalidated) a Send with Invalidate of it.
                    if k % 50 == 25:
                        self.run_conn("ird-overflow")
                    elif k % 50 == 10:
                        self.run_fpdu("send-invalidate-then-write")
                    elif x < 0.85:
                        self.run_fpdu()
                    elif x < 0.93:
                        self.run_mpa()
                    else:
                        self.run_conn()
                except OSError as e:
                    self.fail(f"{type(e).__name__}: {e}")
                self.conns += 1
                if not self.a.quiet and self.conns % 200 == 0:
                    print(f"# worker {w}: {self.conns} connections, {self.frames} frames, "
                          f"{time.monotonic() - t0:.0f} s", flush=True)
            if self.a.only is not None and k >= self.a.only:
                break
            k += workers
        return budget

    def stats(self):
        return {"frames": self.frames, "conns": self.conns, "terminates": self.terminates,
                "closes": self.closes, "failures": self.failures, "classes": self.classes}

    def add(self, st):
        for n in ("frames", "conns", "terminates", "closes"):
            setattr(self, n, getattr(self, n) + st[n])
        self.failures += st["failures"]
        for n, v in st["classes"].items():
            self.classes[n] = self.classes.get(n, 0) + v

    def run(self):
        """The shards in parallel, one process each (the target and siw_rs wait on round
        trips more than they compute: one connection at a time left the VM's CPUs idle
        most of the run), their counts added up."""
        t0 = time.monotonic()
        workers = 1 if self.a.only is not None else max(1, self.a.workers)
        per = -(-self.a.frames // workers)
        pipes = []
        for w in range(workers):
            r, wr = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                code = 0
                try:
                    me = Fuzz(self.a)
                    budget = me.shard(w, workers, per)
                    st = me.stats()
                    st["budget"] = budget
                    os.write(wr, json.dumps(st).encode())
                except BaseException as e:  # a worker that dies says so
                    os.write(wr, json.dumps({"died": f"{type(e).__name__}: {e}"}).encode())
                    code = 1
                os._exit(code)
            os.close(wr)
            pipes.append((pid, r))
        budget = False
        for w, (pid, r) in enumerate(pipes):
            data = b""
            while chunk := os.read(r, 1 << 16):
                data += chunk
            os.close(r)
            os.waitpid(pid, 0)
            try:
                st = json.loads(data)
            except ValueError:
                st = {"died": "no result"}
            if "died" in st:
                self.failures.append(f"FAIL: worker {w} died: {st['died']}")
                continue
            budget |= st.pop("budget")
            self.add(st)
        took = time.monotonic() - t0
        print(f"frame_fuzz: seed {self.a.seed} frames {self.frames} connections {self.conns} "
              f"terminates {self.terminates} closes {self.closes} failures {len(self.failures)} "
              f"elapsed {took:.0f}s workers {workers}"
              + (f" budget {self.a.seconds:g} s reached" if budget else ""), flush=True)
        print("classes: " + " ".join(f"{n}={v}" for n, v in sorted(self.classes.items())))
        for f in self.failures:
            print(f, flush=True)
        return 1 if self.failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--addr", required=True)
    ap.add_argument("--port", type=int, default=7180)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--frames", type=int, default=100000)
    ap.add_argument("--seconds", type=float, default=0, help="time budget (0: none)")
    ap.add_argument("--only", type=int)
    ap.add_argument("--workers", type=int, default=6, help="connections made in parallel")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--trace", action="store_true", help="print every valid operation")
    return Fuzz(ap.parse_args()).run()


sys.exit(main())
