#!/usr/bin/env python3
# hostile_peer.py: a misbehaving iWARP peer over raw TCP, for the hostile-peer selftests.
#
#   hostile_peer.py mpa-reply --addr A --port P --pd-len N [--rev 1|2] [--reject] [--hold S]
#   hostile_peer.py mpa-request --addr A --port P --pd-len N [--rev 1|2]
#   hostile_peer.py quiet-responder --addr A --port P [--hold S]
#   hostile_peer.py strand --addr A --port P --cont PID [--wake]
#   hostile_peer.py rping-read --addr A --port P --size S --answer N
#   hostile_peer.py rping-read --addr A --port P --size S --bad-read-first
#   hostile_peer.py rping-read --addr A --port P --size S --silent T
#   hostile_peer.py rping-read --addr A --port P --size S --answer N --delay D
#   hostile_peer.py atomic-rights --addr A [--port P]
#   hostile_peer.py stag-probe --addr A --port P --port2 Q
#   hostile_peer.py gid-request --addr A --port P --to-qpn N [--from-qpn F] [--psn X]
#                   [--src-port S] [--garbage] [--send B [--hold S]]
#   hostile_peer.py stall --addr A [--port P] [--hold S]
#   hostile_peer.py bad-marker --addr A --port P --ptr N
#   hostile_peer.py rfc7306 --addr A --port P --case C [--offer]
#
# mpa-reply: listen on A:P, take one connection, read the initiator's MPA request (RFC 5044
# section 7.1) and answer with a reply frame carrying N bytes of private data (after the
# RFC 6581 IRD/ORD word when --rev 2), or a reject (R bit) when --reject. The connection
# is then held open for S seconds (default 20), so that only the reply itself can end the
# initiator's connect. Prints what it received and sent, one line each.
#
# quiet-responder: listen on A:P, take one connection, answer the MPA request (revision 2,
# IRD/ORD 1, no private data), then send nothing for S seconds (default 6) while it reads
# and prints every FPDU that comes, with its time after the first one:
# "fpdu op=send len=16 at=+0.000", "fpdu op=write len=0 stag=0x1 at=+0.021". It plays a
# C siw responder that missed the initiator's first FPDUs (siw_rs/proto/src/mpa.rs,
# ResponderWake). Then "held" (or "closed (why)"), and it closes.
#
# strand: leaves an FPDU unread in a C siw responder's socket, as a fast initiator can (see
# quiet-responder), on purpose: the rping server on A:P (process PID) has been stopped
# (SIGSTOP) by the caller. It sends the MPA request, waits 1 s (the C siw reads the request
# and tells rdma_cm, whose server cannot accept yet), sends rping's advert (a Send)
# before the reply, as no initiator may, and continues the server (SIGCONT). The C siw
# ignores data that comes before it accepts and after its reply, so the advert stays
# unread. It prints "reply" when the MPA reply is in, then waits 3 s for an FPDU:
# "stranded" if none came. With --wake it then sends a zero-length RDMA Write (STag 1),
# which is new data, and prints the FPDUs that follow for 5 s ("fpdu op=read-request
# at=+T": rping's server took the advert and reads the buffer), then closes.
#
# mpa-request: connect to A:P, send an MPA request with N bytes of private data and print
# the responder's answer: "reply rev=R reject=0|1 pd_len=L" or "closed without a reply".
#
# rping-read: the initiator of an rping client towards an rping server (rping -s): after
# the MPA exchange (revision 2, no CRC, no markers) it advertises an S-byte buffer in a
# Send, as rping's client does, and answers the server's RDMA Read Request with a last
# Read Response of N bytes (N < S: short; 0: empty). It then prints every FPDU the server
# sends, until the server closes or 10 s pass: "fpdu op=send", "fpdu op=terminate ...".
# With --bad-read-first it first sends a Read Request naming an STag that does not exist,
# in a segment of its own, and the advert right after it in the next: the server must
# Terminate and take nothing after the error (issue 13, defect 7), so rping never sees
# the advert. With --silent it never answers the Read Request but keeps its TCP end alive
# (reading all that comes, so its kernel acks everything, keepalives too) and prints
# "closed after X s" when the server ends the connection (X counted from the Read
# Request), or "still open after T s". With --delay it answers only after D seconds.
#
# atomic-rights: a Fetch-and-Add on fuzz_target's MR over an RFC 7306 connection (run
# against fuzz_target -n, whose MR is not open to remote atomics); prints the FPDUs back.
# stag-probe: an rping server for two rping clients (one on port P, then one on Q), each
# its own process, so its own PD. It reads each client's advert (its buffer's address and
# STag), then Writes into the first client's buffer over the second connection, naming an
# STag of another PD, and prints the FPDUs that come back ("fpdu op=terminate ...").
# gid-request: connect to A:P (siw_rs's listener of connections made by modify_qp), from
# source port S if given, and send an MPA request whose private data asks, in siw_rs's
# layout (siw_rs/proto/src/gidconn.rs), for QP N from QP F (default 4242) with PSN X
# (default 0), or 20 bytes of garbage; print the answer as mpa-request does, with the
# reply's octets in hex ("bytes=..."), or "no connection (...)" when nothing listens. If
# accepted and --send B, print "accepted psn=P" and send one Send of B bytes (byte i is
# (7 * i + 3) & 0xff), hold the connection S seconds (default 2) and close. With
# --fuzz N [--seed K]: N requests, each the one given with its private data changed, or
# random octets for a frame; prints "gid-fuzz: refused R other-reply O accepted A closed C
# refusal=HEX" (a refusal different from the first, or an accept, is printed too).
# stall: a peer that stops reading. Towards selftests/hostile/fuzz_target.c (port 7180):
# with a 4 KiB receive buffer, it completes the MPA exchange, asks for the whole of the
# target's MR with as many Read Requests as the target's IRD allows, prints "stalled" and
# then reads nothing for S seconds (default 30), so the target's TCP sends into a closed
# window. It prints "held" and closes (with a reset).
# bad-marker: the initiator of an rping client towards an rping server whose siw_rs asks
# for MPA markers (mpa_markers=1). Its request asks for markers too (M), so the server
# inserts them; its first FPDU (rping's advert) follows the marker that must lead the Full
# Operation Phase (RFC 5044 section 4.3), but that marker's FPDUPTR is N instead of 0. It
# prints the reply's bits ("reply markers=M reject=R"), then the FPDUs the server sends
# until it closes, markers taken out, as rping-read does, and "lead marker ptr=P" for the
# server's own first marker.
# rfc7306: the initiator of an rping client towards an rping server, bad in RFC 7306's
# ways. Its request offers RFC 7306 with --offer (siw_rs's MPA bit 0x0200); it prints the
# reply's answer ("reply ext_accept=0|1"), then sends, instead of rping's advert, case C:
#   imm          an Immediate Data message (opcode 8) on QN 0
#   atomic-long  an Atomic Request with 8 octets more than its 52-octet header
#   atomic-short an Atomic Request whose ULPDU ends inside its header
#   atomic-stag  a Fetch-and-Add on an STag that does not exist
#   atomic-resp  an Atomic Response that answers no request
#   write-imm    (not bad) a zero-length RDMA Write and its Immediate Data message, which
#                completes the receive rping's server posted for the advert
# and prints the FPDUs the server sends until it closes, as rping-read does.
# changing-pages: towards selftests/hostile/fuzz_target.c (port 7180), sends RDMA Writes
# into the target's MR with sendfile() from a file whose pages a second thread rewrites
# all the while. sendfile() splices the page-cache pages into the skbs, and between two
# network namespaces of one kernel the receiving socket's skbs reference those very pages:
# siw_rs reads bytes that change under it, as it would from any page someone spliced into
# a socket. Most rewrites fall in payload (placed as they are), one in 64 in an FPDU's
# header, changed and put back at once (a Terminate, or a Write elsewhere in the MR, if a
# read falls in between; the lengths are never touched, so the stream stays framed). Each connection sends the file, then reads the whole MR back
# with a Read Request; connections go on for S seconds. It prints one line:
#   changing-pages: connections C bytes B read-backs R closed K header-writes H payload-writes P
# (R: connections whose Read Response came whole; K: connections the target closed).
import argparse
import os
import signal
import socket
import struct
import sys
import threading
import random
import time

KEY_REQ = b"MPA ID Req Frame"
KEY_REP = b"MPA ID Rep Frame"
F_MARKERS = 0x8000
F_REJECT = 0x2000
F_ENHANCED = 0x1000



def dial(addr, port, timeout=20, rcvbuf=0):
    """A TCP connection to (addr, port) from an ephemeral port, with SO_REUSEADDR.

    rdma_cm picks an active side's port from the ephemeral range without looking at TCP's
    (cma.c, cma_alloc_any_port), and the iWARP driver binds its TCP socket to it: a port
    this connection leaves in TIME_WAIT would fail that bind (EADDRINUSE) unless both sockets
    allow reuse (inet_csk_bind_conflict), as siw_rs's and the C siw's do.
    """
    conn = socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_STREAM)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if rcvbuf:
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    conn.settimeout(timeout)
    conn.connect((addr, port))
    return conn

def recv_exact(conn, n):
    buf = b""
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError(f"peer closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def read_request(conn):
    hdr = recv_exact(conn, 20)
    if hdr[:16] != KEY_REQ:
        raise ValueError(f"not an MPA request: {hdr[:16]!r}")
    bits, pd_len = struct.unpack(">HH", hdr[16:20])
    pd = recv_exact(conn, pd_len)
    return bits, pd


def reply_frame(rev, pd_len, reject):
    bits = rev
    body = b""
    if rev == 2:
        bits |= F_ENHANCED
        body += struct.pack(">HH", 1, 1)  # IRD 1, ORD 1, no peer-to-peer
    if reject:
        bits |= F_REJECT
    body += bytes((i * 7 + 1) & 0xFF for i in range(pd_len))
    return KEY_REP + struct.pack(">HH", bits, len(body)) + body


def listen(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, port))
    s.listen(4)
    return s


def mpa_reply(args):
    srv = listen(args.addr, args.port)
    print("listening", flush=True)
    srv.settimeout(args.accept_timeout)
    conn, peer = srv.accept()
    bits, pd = read_request(conn)
    print(f"request from {peer[0]}: bits={bits:#06x} pd_len={len(pd)}", flush=True)
    frame = reply_frame(args.rev, args.pd_len, args.reject)
    conn.sendall(frame)
    print(f"sent reply: rev={args.rev} reject={int(args.reject)} ulp_pd={args.pd_len} "
          f"PD_Length={len(frame) - 20}", flush=True)
    conn.settimeout(args.hold)
    try:
        while conn.recv(65536):
            pass
        print("initiator closed", flush=True)
    except socket.timeout:
        print("held the connection", flush=True)
    except OSError as e:
        print(f"connection ended: {e}", flush=True)
    conn.close()
    srv.close()


def print_fpdus(conn, secs, since=None, detail=False):
    """Prints every FPDU that comes within SECS: "fpdu op=NAME at=+T", T in seconds after
    SINCE (after the first FPDU when None), with "len=L" and a tagged one's "stag=S" when
    DETAIL. Returns how it ended: "held" (time up) or "closed (why)"."""
    end = time.monotonic() + secs
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return "held"
            conn.settimeout(left)
            f = recv_fpdu(conn)
            now = time.monotonic()
            since = now if since is None else since
            line = f"fpdu op={OP_NAMES.get(f['op'], f['op'])}"
            if detail:
                line += f" len={len(f['payload'])}"
                if f["tagged"]:
                    line += f" stag={f['stag']:#x}"
            print(f"{line} at=+{now - since:.3f}", flush=True)
    except socket.timeout:
        return "held"
    except (EOFError, OSError) as e:
        return f"closed ({e})"


def quiet_responder(args):
    srv = listen(args.addr, args.port)
    print("listening", flush=True)
    srv.settimeout(60)
    conn, _ = srv.accept()
    bits, _ = read_request(conn)
    conn.sendall(reply_frame(2, 0, False))
    print(f"request bits={bits:#06x}; reply sent", flush=True)
    print(print_fpdus(conn, args.hold, detail=True), flush=True)
    conn.close()
    srv.close()
    return 0


def strand(args):
    conn = dial(args.addr, args.port)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = struct.pack(">HH", 1, 1)  # IRD 1, ORD 1
    conn.sendall(KEY_REQ + struct.pack(">HH", 2 | F_ENHANCED, len(body)) + body)
    time.sleep(1)
    conn.sendall(untagged(OP_SEND, 0, 1, 0, struct.pack(">QII", 0x10000, 0xABCD, 64)))
    os.kill(args.cont, signal.SIGCONT)
    print("advert sent before the reply; server continued", flush=True)
    hdr = recv_exact(conn, 20)
    bits, pd_len = struct.unpack(">HH", hdr[16:20])
    recv_exact(conn, pd_len)
    if hdr[:16] != KEY_REP or bits & F_REJECT:
        print(f"unexpected MPA reply bits={bits:#06x}", flush=True)
        return 1
    print("reply", flush=True)
    conn.settimeout(3)
    try:
        f = recv_fpdu(conn)
        print(f"not stranded: fpdu op={OP_NAMES.get(f['op'], f['op'])}", flush=True)
        return 0
    except socket.timeout:
        print("stranded", flush=True)
    if not args.wake:
        conn.close()
        return 0
    conn.sendall(tagged(OP_WRITE, 1, 0, b""))
    print("wake sent", flush=True)
    print(print_fpdus(conn, 5, since=time.monotonic()), flush=True)
    conn.close()
    return 0


def mpa_request(args):
    bits = args.rev
    body = b""
    if args.rev == 2:
        bits |= F_ENHANCED
        body += struct.pack(">HH", 1, 1)
    body += bytes((i * 5 + 3) & 0xFF for i in range(args.pd_len))
    conn = dial(args.addr, args.port, args.timeout)
    conn.sendall(KEY_REQ + struct.pack(">HH", bits, len(body)) + body)
    print(f"sent request: rev={args.rev} ulp_pd={args.pd_len} PD_Length={len(body)}", flush=True)
    try:
        hdr = recv_exact(conn, 20)
    except (EOFError, OSError) as e:
        print(f"closed without a reply ({e})", flush=True)
        return
    if hdr[:16] != KEY_REP:
        print(f"not a reply: {hdr!r}", flush=True)
        return
    rbits, pd_len = struct.unpack(">HH", hdr[16:20])
    print(f"reply rev={rbits & 0xFF} reject={int(bool(rbits & F_REJECT))} pd_len={pd_len}",
          flush=True)
    conn.close()


def gid_request(args):
    if args.garbage:
        pd = bytes(range(20))
    else:
        pd = b"siwQ" + bytes((2, 1, 0, 0)) + struct.pack(">III", args.from_qpn, args.to_qpn,
                                                          args.psn)
    body = struct.pack(">HH", 1, 1) + pd
    conn = socket.socket(socket.AF_INET6 if ":" in args.addr else socket.AF_INET)
    conn.settimeout(args.timeout)
    # Reuse for the reason dial() gives, and to bind a port just used.
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.src_port:
        conn.bind(("", args.src_port))
    try:
        conn.connect((args.addr, args.port))
    except OSError as e:
        print(f"no connection ({e})", flush=True)
        return
    conn.sendall(KEY_REQ + struct.pack(">HH", 2 | F_ENHANCED, len(body)) + body)
    print(f"sent request for QP {args.to_qpn} from port {conn.getsockname()[1]}", flush=True)
    try:
        hdr = recv_exact(conn, 20)
        bits, pd_len = struct.unpack(">HH", hdr[16:20])
        rpd = recv_exact(conn, pd_len)
    except (EOFError, OSError) as e:
        print(f"closed without a reply ({e})", flush=True)
        return
    # The whole reply, so that callers can compare refusals octet for octet.
    print(f"reply rev={bits & 0xFF} reject={int(bool(bits & F_REJECT))} pd_len={pd_len} "
          f"bytes={(hdr + rpd).hex()}", flush=True)
    if bits & F_REJECT or not args.send:
        conn.close()
        return
    # Accepted: the IRD/ORD word, then siw_rs's 20 octets with the responder's PSN.
    (psn,) = struct.unpack(">I", rpd[20:24])
    print(f"accepted psn={psn:#x}", flush=True)
    data = bytes((i * 7 + 3) & 0xFF for i in range(args.send))
    conn.sendall(untagged(OP_SEND, 0, 1, 0, data))
    print(f"sent {args.send} bytes", flush=True)
    # Hold the connection until the receiver has taken the Send.
    time.sleep(args.hold)
    conn.close()


def gid_fuzz(args):
    """--fuzz N requests, each the good one with its private data changed (one to four
    random octets, or a random 20), or random octets in place of the whole frame; prints
    how each was answered. None may be accepted; every answer must be the one refusal."""
    rnd = random.Random(args.seed)
    good = b"siwQ" + bytes((2, 1, 0, 0)) + struct.pack(">III", args.from_qpn, args.to_qpn,
                                                        args.psn)
    counts = {"refused": 0, "other-reply": 0, "accepted": 0, "closed": 0}
    refusal = None
    for i in range(args.fuzz):
        raw = rnd.random() < 0.1
        if raw:
            frame = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 60)))
        else:
            pd = bytearray(good)
            while bytes(pd) == good:
                if rnd.random() < 0.2:
                    pd = bytearray(rnd.randrange(256) for _ in range(20))
                else:
                    for _ in range(rnd.randrange(1, 5)):
                        pd[rnd.randrange(20)] = rnd.randrange(256)
            body = struct.pack(">HH", 1, 1) + bytes(pd)
            frame = KEY_REQ + struct.pack(">HH", 2 | F_ENHANCED, len(body)) + body
        try:
            conn = socket.create_connection((args.addr, args.port), timeout=args.timeout)
        except OSError as e:
            print(f"FAIL: fuzz request {i}: no connection ({e})", flush=True)
            return 1
        try:
            conn.sendall(frame)
            if raw:
                conn.shutdown(socket.SHUT_WR)
            hdr = recv_exact(conn, 20)
            bits, pd_len = struct.unpack(">HH", hdr[16:20])
            reply = hdr + recv_exact(conn, pd_len)
        except (EOFError, OSError):
            counts["closed"] += 1
            conn.close()
            continue
        conn.close()
        if not bits & F_REJECT:
            counts["accepted"] += 1
            print(f"accepted: {frame.hex()}", flush=True)
        elif refusal is None or reply == refusal:
            refusal = reply
            counts["refused"] += 1
        else:
            counts["other-reply"] += 1
            print(f"other reply {reply.hex()} to {frame.hex()}", flush=True)
    print("gid-fuzz: " + " ".join(f"{k} {v}" for k, v in counts.items())
          + f" refusal={refusal.hex() if refusal else '-'}", flush=True)
    return 0


# RDMAP opcodes (RFC 5040 section 4.3) and DDP/RDMAP control bits (RFC 5041, 5040).
OP_WRITE, OP_READ_REQ, OP_READ_RESP, OP_SEND, OP_TERMINATE = 0, 1, 2, 3, 7
OP_NAMES = {0: "write", 1: "read-request", 2: "read-response", 3: "send", 4: "send-inv",
            5: "send-se", 6: "send-se-inv", 7: "terminate"}
DDP_TAGGED, DDP_LAST, DDP_V1 = 0x80, 0x40, 0x01
RDMAP_V1 = 0x40


def fpdu(ulpdu):
    # MPA FPDU (RFC 5044 section 4): ULPDU_Length, ULPDU, pad to 4, CRC (0: not in use).
    body = struct.pack(">H", len(ulpdu)) + ulpdu
    body += b"\0" * (-len(body) % 4)
    return body + b"\0\0\0\0"


def untagged(op, qn, msn, mo, payload, last=True, ulp=0):
    hdr = struct.pack(">BBIIII", (DDP_LAST if last else 0) | DDP_V1, RDMAP_V1 | op, ulp,
                      qn, msn, mo)
    return fpdu(hdr + payload)


def tagged(op, stag, to, payload, last=True):
    hdr = struct.pack(">BBIQ", DDP_TAGGED | (DDP_LAST if last else 0) | DDP_V1,
                      RDMAP_V1 | op, stag, to)
    return fpdu(hdr + payload)


def recv_fpdu(conn):
    (n,) = struct.unpack(">H", recv_exact(conn, 2))
    rest = recv_exact(conn, n + (-(n + 2) % 4) + 4)
    ulpdu = rest[:n]
    ctl, rctl = ulpdu[0], ulpdu[1]
    f = {"tagged": bool(ctl & DDP_TAGGED), "last": bool(ctl & DDP_LAST), "op": rctl & 0x0F}
    if f["tagged"]:
        f["stag"], f["to"] = struct.unpack(">IQ", ulpdu[2:14])
        f["payload"] = ulpdu[14:]
    else:
        f["qn"], f["msn"], f["mo"] = struct.unpack(">III", ulpdu[6:18])
        f["payload"] = ulpdu[18:]
    return f


def mpa_connect(addr, port):
    conn = dial(addr, port)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = struct.pack(">HH", 1, 1)  # IRD 1, ORD 1
    conn.sendall(KEY_REQ + struct.pack(">HH", 2 | F_ENHANCED, len(body)) + body)
    hdr = recv_exact(conn, 20)
    bits, pd_len = struct.unpack(">HH", hdr[16:20])
    recv_exact(conn, pd_len)
    if hdr[:16] != KEY_REP or bits & F_REJECT or bits & 0x4000:
        raise ValueError(f"unexpected MPA reply bits={bits:#06x}")
    return conn


def rping_read(args):
    conn = mpa_connect(args.addr, args.port)
    # rping's struct rping_rdma_info: be64 buf, be32 rkey, be32 size.
    info = struct.pack(">QII", 0x10000, 0xABCD, args.size)
    if args.bad_read_first:
        # Sink STag/TO, size, source STag/TO: the source STag names nothing.
        rr = struct.pack(">IQIIQ", 0x1234, 0, 64, 0xDEAD0000, 0)
        conn.sendall(untagged(OP_READ_REQ, 1, 1, 0, rr))
        conn.sendall(untagged(OP_SEND, 0, 1, 0, info))
        print("sent a read request for a bad stag, then the advert", flush=True)
        return collect(conn)
    conn.sendall(untagged(OP_SEND, 0, 1, 0, info))
    f = recv_fpdu(conn)
    if f["op"] != OP_READ_REQ:
        print(f"expected a read request, got {OP_NAMES.get(f['op'], f['op'])}", flush=True)
        return 1
    sink_stag, sink_to, size, src_stag, src_to = struct.unpack(">IQIIQ", f["payload"][:28])
    print(f"read request: size={size} src_stag={src_stag:#x} src_to={src_to:#x}", flush=True)
    if args.silent:
        t0 = time.monotonic()
        conn.settimeout(1.0)
        while time.monotonic() - t0 < args.silent:
            try:
                if not conn.recv(65536):
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        else:
            print(f"still open after {args.silent:.0f} s", flush=True)
            return 0
        print(f"closed after {time.monotonic() - t0:.1f} s", flush=True)
        return 0
    data = bytes((i * 3 + 7) & 0xFF for i in range(args.answer))
    time.sleep(args.delay)
    conn.sendall(tagged(OP_READ_RESP, sink_stag, sink_to, data))
    print(f"sent read response: {args.answer} of {size} bytes, last", flush=True)
    return collect(conn)


def collect(conn):
    conn.settimeout(10)
    try:
        while True:
            f = recv_fpdu(conn)
            line = f"fpdu op={OP_NAMES.get(f['op'], f['op'])}"
            if f["op"] == OP_TERMINATE and len(f["payload"]) >= 4:
                (t,) = struct.unpack(">I", f["payload"][:4])
                line += f" layer={t >> 28} etype={(t >> 24) & 0xF} ecode={(t >> 16) & 0xFF:#04x}"
            print(line, flush=True)
    except (EOFError, OSError) as e:
        print(f"closed ({e})", flush=True)
    return 0


def bad_marker(args):
    conn = dial(args.addr, args.port)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = struct.pack(">HH", 1, 1)  # IRD 1, ORD 1
    conn.sendall(KEY_REQ + struct.pack(">HH", F_MARKERS | 2 | F_ENHANCED, len(body)) + body)
    hdr = recv_exact(conn, 20)
    bits, pd_len = struct.unpack(">HH", hdr[16:20])
    recv_exact(conn, pd_len)
    print(f"reply markers={int(bool(bits & F_MARKERS))} reject={int(bool(bits & F_REJECT))}",
          flush=True)
    info = struct.pack(">QII", 0x10000, 0xABCD, 64)
    conn.sendall(struct.pack(">HH", 0, args.ptr) + untagged(OP_SEND, 0, 1, 0, info))
    print(f"sent the advert behind a marker with FPDUPTR {args.ptr}", flush=True)
    # All the server sends until it closes; a marker every 512 octets from the start.
    conn.settimeout(10)
    stream = b""
    try:
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            stream += chunk
    except OSError as e:
        print(f"read ended ({e})", flush=True)
    plain = b"".join(stream[i + 4:i + 512] for i in range(0, len(stream), 512))
    if len(stream) >= 4:
        print(f"lead marker ptr={struct.unpack('>H', stream[2:4])[0]}", flush=True)
    u = 0
    while u + 2 <= len(plain):
        (n,) = struct.unpack(">H", plain[u:u + 2])
        ulpdu = plain[u + 2:u + 2 + n]
        if len(ulpdu) < 2:
            break
        op = ulpdu[1] & 0x0F
        line = f"fpdu op={OP_NAMES.get(op, op)}"
        if op == OP_TERMINATE and len(ulpdu) >= 22:
            (t,) = struct.unpack(">I", ulpdu[18:22])
            line += f" layer={t >> 28} etype={(t >> 24) & 0xF} ecode={(t >> 16) & 0xFF:#04x}"
        print(line, flush=True)
        u += 2 + n + (-(n + 2) % 4) + 4
    print("closed", flush=True)
    return 0


F_EXT_OFFER = 0x0200
F_EXT_ACCEPT = 0x0100
OP_IMM, OP_ATOMIC_REQ, OP_ATOMIC_RESP = 8, 10, 11


def atomic_req(msn, stag, to, aop=0, add=1, extra=b""):
    # RFC 7306 figure 4: reserved + AOpCode, Request Identifier, Remote STag, Remote TO,
    # Add or Swap Data, Add or Swap Mask, Compare Data, Compare Mask.
    hdr = struct.pack(">IIIQQQQQ", aop, msn, stag, to, add, 0, 0, ~0 & (2**64 - 1))
    return untagged(OP_ATOMIC_REQ, 1, msn, 0, hdr + extra)


def rfc7306(args):
    conn = dial(args.addr, args.port)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = struct.pack(">HH", 1, 1)  # IRD 1, ORD 1
    bits = 2 | F_ENHANCED | (F_EXT_OFFER if args.offer else 0)
    conn.sendall(KEY_REQ + struct.pack(">HH", bits, len(body)) + body)
    hdr = recv_exact(conn, 20)
    rbits, pd_len = struct.unpack(">HH", hdr[16:20])
    recv_exact(conn, pd_len)
    print(f"reply ext_accept={int(bool(rbits & F_EXT_ACCEPT))} "
          f"ext_offer={int(bool(rbits & F_EXT_OFFER))} reject={int(bool(rbits & F_REJECT))}",
          flush=True)
    c = args.case
    if c == "imm":
        conn.sendall(untagged(OP_IMM, 0, 1, 0, b"\0\0\0\0\x12\x34\x56\x78"))
    elif c == "atomic-long":
        conn.sendall(atomic_req(1, 0x1234, 0, extra=b"\xee" * 8))
    elif c == "atomic-short":
        full = atomic_req(1, 0x1234, 0)
        # ULPDU_Length claims 20 octets: the DDP header and 2 of the atomic header's 52.
        conn.sendall(struct.pack(">H", 20) + full[2:22] + b"\0" * 2 + b"\0\0\0\0")
    elif c == "atomic-stag":
        conn.sendall(atomic_req(1, 0xDEAD0000, 0))
    elif c == "atomic-resp":
        conn.sendall(untagged(OP_ATOMIC_RESP, 3, 1, 0, struct.pack(">IQ", 1, 42)))
    elif c == "write-imm":
        conn.sendall(tagged(OP_WRITE, 1, 0, b"") +
                     untagged(OP_IMM, 0, 1, 0, b"\0\0\0\0\x12\x34\x56\x78"))
    print(f"sent {c}", flush=True)
    return collect(conn)


def mpa_accept(srv):
    conn, _ = srv.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    read_request(conn)
    body = struct.pack(">HH", 1, 1)  # IRD 1, ORD 1
    conn.sendall(KEY_REP + struct.pack(">HH", 2 | F_ENHANCED, len(body)) + body)
    return conn


def rping_advert(conn):
    f = recv_fpdu(conn)
    if f["op"] != OP_SEND or len(f["payload"]) < 16:
        raise ValueError(f"expected rping's advert, got {OP_NAMES.get(f['op'], f['op'])}")
    return struct.unpack(">QII", f["payload"][:16])


def stag_probe(args):
    s1 = listen(args.addr, args.port)
    s2 = listen(args.addr, args.port2)
    print("listening", flush=True)
    for s in (s1, s2):
        s.settimeout(60)
    c1 = mpa_accept(s1)
    buf1, stag1, size1 = rping_advert(c1)
    print(f"client 1: stag={stag1:#x} len={size1}", flush=True)
    c2 = mpa_accept(s2)
    buf2, stag2, size2 = rping_advert(c2)
    print(f"client 2: stag={stag2:#x} len={size2}", flush=True)
    # With --burst, more Writes follow in the same send: still unread when the Terminate
    # is decided, they must not turn siw_rs's close into a reset.
    more = tagged(OP_WRITE, stag2, buf2, b"\xa5" * 16) * args.burst
    c2.sendall(tagged(OP_WRITE, stag1, buf1, b"\x5a" * 16) + more)
    print(f"wrote to client 1's stag over connection 2, then {args.burst} Writes", flush=True)
    r = collect(c2)
    c1.close()
    return r


def connect_target(addr, port, rcvbuf=0, offer=False):
    # Connects to fuzz_target (MPA revision 2, IRD/ORD 8; with offer, RFC 7306 offered and
    # its acceptance required) and returns the connection, the IRD granted and its MR
    # (address, STag, length); None after printing an unexpected reply.
    conn = dial(addr, port, rcvbuf=rcvbuf)
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    body = struct.pack(">HH", 8, 8)
    bits = 2 | F_ENHANCED | (F_EXT_OFFER if offer else 0)
    conn.sendall(KEY_REQ + struct.pack(">HH", bits, len(body)) + body)
    hdr = recv_exact(conn, 20)
    bits, pd_len = struct.unpack(">HH", hdr[16:20])
    pd = recv_exact(conn, pd_len)
    if (hdr[:16] != KEY_REP or bits & F_REJECT or pd_len < 32
            or (offer and not bits & F_EXT_ACCEPT)):
        print(f"unexpected MPA reply bits={bits:#06x} pd_len={pd_len}", flush=True)
        return None
    ird = struct.unpack(">H", pd[:2])[0] & 0x3FFF
    return (conn, ird) + struct.unpack(">QII", pd[4:20])


def atomic_rights(args):
    """A Fetch-and-Add on fuzz_target's MR, over a connection that agreed on RFC 7306; run
    against fuzz_target -n, whose MR has no remote atomic rights, it must be refused."""
    target = connect_target(args.addr, args.port, offer=True)
    if target is None:
        return 1
    conn, _, addr, rkey, _ = target
    conn.sendall(atomic_req(1, rkey, addr))
    print(f"sent a Fetch-and-Add to the MR (STag {rkey:#x})", flush=True)
    return collect(conn)


def stall(args):
    target = connect_target(args.addr, args.port, rcvbuf=4096)
    if target is None:
        return 1
    conn, ird, addr, rkey, mrlen = target
    for i in range(max(1, min(ird, 8))):
        rr = struct.pack(">IQIIQ", 0x5100 + i, 0, mrlen, rkey, addr)
        conn.sendall(untagged(OP_READ_REQ, 1, 1 + i, 0, rr))
    print(f"stalled with {max(1, min(ird, 8))} Read Requests of {mrlen} bytes", flush=True)
    time.sleep(args.hold)
    print("held", flush=True)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()
    return 0


def changing_pages(args):
    rng = random.Random(args.seed)
    path = f"/tmp/changing-pages.{os.getpid()}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.unlink(path)
    stats = {"connections": 0, "bytes": 0, "read-backs": 0, "closed": 0,
             "header-writes": 0, "payload-writes": 0}
    running = threading.Event()
    layout = {}

    def rewrite():
        # Rewrites the file's pages while sendfile() has them in flight.
        wr = random.Random(args.seed + 1)
        while running.is_set():
            headers = layout["headers"]
            if wr.randrange(64) == 0:
                # An FPDU's header, past its length field (its STag, TO or control bits),
                # changed and at once put back: only a read in between sees it.
                at = wr.choice(headers) + 2 + wr.randrange(14)
                was = layout["orig"][at]
                os.pwrite(fd, bytes([was ^ (1 + wr.randrange(255))]), at)
                os.pwrite(fd, bytes([was]), at)
                stats["header-writes"] += 1
            else:
                at = wr.choice(headers) + 16 + wr.randrange(layout["chunk"] - 64)
                os.pwrite(fd, wr.randbytes(64), at)
                stats["payload-writes"] += 1

    end = time.monotonic() + args.seconds
    writer = None
    while time.monotonic() < end:
        target = connect_target(args.addr, args.port)
        if target is None:
            return 1
        conn, _, addr, rkey, mrlen = target
        stats["connections"] += 1
        # Each connection has an MR of its own: the file names it.
        chunk = 1024
        frames, headers, at = [], [], 0
        for rep in range(16):
            for off in range(0, mrlen, chunk):
                f = tagged(OP_WRITE, rkey, addr + off, rng.randbytes(chunk))
                headers.append(at)
                frames.append(f)
                at += len(f)
        data = b"".join(frames)
        os.pwrite(fd, data, 0)
        layout.update(size=at, headers=headers, chunk=chunk, orig=data)
        if writer is None:
            running.set()
            writer = threading.Thread(target=rewrite, daemon=True)
            writer.start()
        # The whole file, spliced page by page into the socket.
        sent, closed = 0, False
        try:
            while sent < layout["size"]:
                n = os.sendfile(conn.fileno(), fd, sent, layout["size"] - sent)
                if n == 0:
                    break
                sent += n
            rr = struct.pack(">IQIIQ", 0x5100, 0, mrlen, rkey, addr)
            conn.sendall(untagged(OP_READ_REQ, 1, 1, 0, rr))
            got = 0
            conn.settimeout(20)
            while got < mrlen:
                f = recv_fpdu(conn)
                if f["op"] != OP_READ_RESP:
                    closed = True
                    break
                got += len(f["payload"])
                if f["last"]:
                    break
            if got == mrlen:
                stats["read-backs"] += 1
        except (EOFError, OSError):
            closed = True
        stats["bytes"] += sent
        if closed:
            stats["closed"] += 1
        conn.close()
    running.clear()
    if writer is not None:
        writer.join()
    print("changing-pages: " + " ".join(f"{k} {v}" for k, v in stats.items()), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("mpa-reply")
    r.add_argument("--addr", required=True)
    r.add_argument("--port", type=int, default=7174)
    r.add_argument("--pd-len", type=int, required=True)
    r.add_argument("--rev", type=int, choices=(1, 2), default=2)
    r.add_argument("--reject", action="store_true")
    r.add_argument("--hold", type=float, default=20.0)
    r.add_argument("--accept-timeout", type=float, default=60.0)
    w = sub.add_parser("quiet-responder")
    w.add_argument("--addr", required=True)
    w.add_argument("--port", type=int, default=7174)
    w.add_argument("--hold", type=float, default=6.0)
    n = sub.add_parser("strand")
    n.add_argument("--addr", required=True)
    n.add_argument("--port", type=int, default=7174)
    n.add_argument("--cont", type=int, required=True)
    n.add_argument("--wake", action="store_true")
    q = sub.add_parser("mpa-request")
    q.add_argument("--addr", required=True)
    q.add_argument("--port", type=int, default=7174)
    q.add_argument("--pd-len", type=int, required=True)
    q.add_argument("--rev", type=int, choices=(1, 2), default=2)
    q.add_argument("--timeout", type=float, default=20.0)
    d = sub.add_parser("rping-read")
    d.add_argument("--addr", required=True)
    d.add_argument("--port", type=int, default=7174)
    d.add_argument("--size", type=int, default=64)
    d.add_argument("--answer", type=int, default=0)
    d.add_argument("--bad-read-first", action="store_true")
    d.add_argument("--silent", type=float, default=0.0)
    d.add_argument("--delay", type=float, default=0.0)
    t = sub.add_parser("atomic-rights")
    t.add_argument("--addr", required=True)
    t.add_argument("--port", type=int, default=7180)
    t = sub.add_parser("stag-probe")
    t.add_argument("--addr", required=True)
    t.add_argument("--port", type=int, default=7174)
    t.add_argument("--port2", type=int, default=7175)
    t.add_argument("--burst", type=int, default=0)
    g = sub.add_parser("gid-request")
    g.add_argument("--from-qpn", type=int, default=4242)
    g.add_argument("--psn", type=lambda v: int(v, 0), default=0)
    g.add_argument("--send", type=int, default=0)
    g.add_argument("--hold", type=float, default=2.0)
    g.add_argument("--fuzz", type=int, default=0)
    g.add_argument("--seed", type=int, default=1)
    g.add_argument("--addr", required=True)
    g.add_argument("--port", type=int, default=791)
    g.add_argument("--to-qpn", type=int, default=1)
    g.add_argument("--src-port", type=int, default=0)
    g.add_argument("--garbage", action="store_true")
    g.add_argument("--timeout", type=float, default=20.0)
    st = sub.add_parser("stall")
    st.add_argument("--addr", required=True)
    st.add_argument("--port", type=int, default=7180)
    st.add_argument("--hold", type=float, default=30.0)
    b = sub.add_parser("bad-marker")
    b.add_argument("--addr", required=True)
    b.add_argument("--port", type=int, default=7174)
    b.add_argument("--ptr", type=int, default=256)
    x = sub.add_parser("rfc7306")
    x.add_argument("--addr", required=True)
    x.add_argument("--port", type=int, default=7174)
    x.add_argument("--case", required=True,
                   choices=("imm", "atomic-long", "atomic-short", "atomic-stag", "atomic-resp",
                            "write-imm"))
    x.add_argument("--offer", action="store_true")
    c = sub.add_parser("changing-pages")
    c.add_argument("--addr", required=True)
    c.add_argument("--port", type=int, default=7180)
    c.add_argument("--seconds", type=float, default=20.0)
    c.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.cmd == "changing-pages":
        return changing_pages(args)
    if args.cmd == "rfc7306":
        return rfc7306(args)
    if args.cmd == "bad-marker":
        return bad_marker(args)
    if args.cmd == "stall":
        return stall(args)
    if args.cmd == "gid-request":
        return gid_fuzz(args) if args.fuzz else gid_request(args)
    if args.cmd == "atomic-rights":
        return atomic_rights(args)
    if args.cmd == "stag-probe":
        return stag_probe(args)
    if args.cmd == "strand":
        return strand(args)
    if args.cmd == "quiet-responder":
        return quiet_responder(args)
    if args.cmd == "rping-read":
        return rping_read(args)
    if args.cmd == "mpa-reply":
        mpa_reply(args)
    elif args.cmd == "mpa-request":
        mpa_request(args)
    return 0


sys.exit(main())
