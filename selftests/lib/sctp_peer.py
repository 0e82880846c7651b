#!/usr/bin/env python3
# sctp_peer.py: a misbehaving peer of DDP over SCTP (RFC 5043), for selftests/sctp/03-hostile.
# It speaks the adaptation layer itself over a plain SCTP socket (one-to-one style), never
# through siw_rs's code.
#
#   sctp_peer.py client --addr A --port P --case C
#   sctp_peer.py reject-server --addr A --port P
#
# client: connect to a siw_rs_sctp listener (an rping server) and misbehave per case C:
#   no-adaptation  no DDP Adaptation Indication in the INIT, then a good Initiate
#   early-segment  a DDP segment (PPID 16) before any Initiate
#   big-pd         an Initiate with 600 octets of private data (RFC 5043 allows 512)
#   ssn-jump       an Initiate with DDP-SSN 40000 (no message in flight can have it)
#   too-long       a 20000-octet message (siw_rs takes DDP segments of 16 KiB at most)
#   flood-early    5 MiB of DDP segments with DDP-SSNs 1, 2, ... and never 0: held for
#                  their turn until the bound (4 MiB) is reached
#   bad-segment    a good Initiate; once the Accept is in, a Send whose MSN is 5, not 1
# and print what comes back, one line each: "accept pd=..", "segment ssn=N op=O
# [layer=.. etype=.. ecode=..]", "control ssn=N function=F", then "closed" (the peer shut
# down), "aborted" (an SCTP ABORT, seen by a receive or by flood-early's send) or "open
# after 15 s".
#
# reject-server: listen on A:P with the DDP indication, take one association, read its
# Initiate ("initiate pd=.."), answer with a Session Reject carrying "nope", and wait for
# the peer to close.
import argparse
import socket
import struct
import sys
import time

IPPROTO_SCTP = 132
SCTP_ADAPTATION_LAYER = 7
SCTP_RECVRCVINFO = 32
SCTP_SNDINFO = 2
SCTP_RCVINFO = 3
SCTP_UNORDERED = 1
PPID_SEGMENT, PPID_CONTROL = 16, 17
INITIATE, ACCEPT, REJECT, TERMINATE = 1, 2, 3, 4


def sock(adaptation=True):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_SCTP)
    if adaptation:
        s.setsockopt(IPPROTO_SCTP, SCTP_ADAPTATION_LAYER, struct.pack("I", 1))
    s.setsockopt(IPPROTO_SCTP, SCTP_RECVRCVINFO, struct.pack("i", 1))
    return s


def send(s, ppid, data):
    info = struct.pack("=HHIIi", 0, SCTP_UNORDERED, socket.htonl(ppid), 0, 0)
    s.sendmsg([data], [(IPPROTO_SCTP, SCTP_SNDINFO, info)])


def control(ssn, func, pd=b""):
    return struct.pack(">HH", ssn, func) + pd


def recv(s, timeout):
    """(ppid, message), or "closed" / "aborted" / "timeout"."""
    s.settimeout(timeout)
    try:
        data, anc, flags, _ = s.recvmsg(70000, 256)
    except socket.timeout:
        return "timeout"
    except ConnectionResetError:
        return "aborted"
    except OSError as e:
        return f"aborted ({e.errno})"
    if not data and not anc:
        return "closed"
    ppid = 0
    for level, ty, val in anc:
        if level == IPPROTO_SCTP and ty == SCTP_RCVINFO and len(val) >= 12:
            ppid = socket.ntohl(struct.unpack("=I", val[8:12])[0])
    if flags & 0x8000:  # MSG_NOTIFICATION
        return recv(s, timeout)
    return ppid, data


def describe(ppid, m):
    ssn = struct.unpack(">H", m[:2])[0]
    if ppid == PPID_CONTROL:
        func = struct.unpack(">H", m[2:4])[0]
        if func == ACCEPT:
            return f"accept ssn={ssn} pd={m[4:].decode(errors='replace')}"
        return f"control ssn={ssn} function={func}"
    seg = m[2:]
    op = seg[1] & 0x0F
    line = f"segment ssn={ssn} op={op}"
    if op == 7 and len(seg) >= 18:  # Terminate: after the 18-octet untagged header
        t = seg[18]
        line += f" layer={t >> 4} etype={t & 15} ecode=0x{seg[19]:02x}"
    return line


def send_segment_msn(s, ssn, msn):
    # An RDMAP Send, last segment, untagged QN 0, the given MSN, MO 0, 4 bytes of payload.
    ddp = struct.pack(">BB", 0x41, 0x43)  # DDP: L, DV=1; RDMAP: RV=1, opcode 3 (Send)
    hdr = ddp + struct.pack(">IIII", 0, 0, msn, 0)  # reserved, QN, MSN, MO
    send(s, PPID_SEGMENT, struct.pack(">H", ssn) + hdr + b"abcd")


def client(a):
    s = sock(adaptation=a.case != "no-adaptation")
    s.connect((a.addr, a.port))
    c = a.case
    if c in ("no-adaptation", "bad-segment"):
        send(s, PPID_CONTROL, control(0, INITIATE, b"hello"))
    elif c == "early-segment":
        send_segment_msn(s, 0, 1)
    elif c == "big-pd":
        send(s, PPID_CONTROL, control(0, INITIATE, b"x" * 600))
    elif c == "ssn-jump":
        send(s, PPID_CONTROL, control(40000, INITIATE, b"hello"))
    elif c == "too-long":
        send(s, PPID_SEGMENT, struct.pack(">H", 0) + b"\0" * 19998)
    reset = False
    if c == "flood-early":
        body = b"\x41\x43" + b"\0" * 16382
        try:
            for ssn in range(1, 321):
                send(s, PPID_SEGMENT, struct.pack(">H", ssn) + body)
        except ConnectionResetError:
            # siw_rs ended the association while the flood was still going: the send,
            # not a later receive, reports the ABORT (and clears the socket's error).
            # What it sent before (its Terminate) is still to be read.
            reset = True
        except OSError as e:
            print(f"send failed at the flood ({e.errno})")
    deadline = time.time() + 15
    while time.time() < deadline:
        r = recv(s, 2 if reset else max(0.1, deadline - time.time()))
        if r == "timeout":
            if reset:
                print("aborted (seen by the flood's send)")
                return
            break
        if isinstance(r, str):
            print(r)
            return
        print(describe(*r))
        if c == "bad-segment" and r[0] == PPID_CONTROL and r[1][2:4] == b"\0\x02":
            send_segment_msn(s, 1, 5)
    print("open after 15 s")


def reject_server(a):
    ls = sock()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.addr, a.port))
    ls.listen(1)
    ls.settimeout(30)
    s, _ = ls.accept()
    r = recv(s, 10)
    if isinstance(r, str):
        print(r)
        return
    ppid, m = r
    func = struct.unpack(">H", m[2:4])[0] if ppid == PPID_CONTROL else None
    print(f"initiate ppid={ppid} function={func} pd={m[4:].decode(errors='replace')}")
    send(s, PPID_CONTROL, control(0, REJECT, b"nope"))
    print(recv(s, 15))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["client", "reject-server"])
    p.add_argument("--addr", required=True)
    p.add_argument("--port", type=int, default=7174)
    p.add_argument("--case", default="")
    a = p.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    client(a) if a.mode == "client" else reject_server(a)


main()
