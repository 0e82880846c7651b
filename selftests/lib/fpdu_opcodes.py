#!/usr/bin/env python3
# fpdu_opcodes.py PCAP: walk the FPDUs of every TCP stream in a tcpdump capture (Ethernet,
# IPv4) that begins with an MPA request or reply frame (no markers), independently of
# siw_rs's code, and print per stream
#   stream A:P>B:Q fpdus N opcodes OP:COUNT,...
# then one line per RFC 7306 message, decoded from the wire (RFC 7306 figures 4, 6, 7):
#   atomic_req msn=M aop=0|2 req_id=R stag=S to=T add_swap=X add_swap_mask=X compare=X compare_mask=X
#   atomic_resp msn=M req_id=R orig=X
#   imm op=8|9 msn=M data=X after=write-last|OP   (the FPDU right before it in the stream:
#                                                the last segment of an RDMA Write, or
#                                                the opcode of something else)
#   term layer=L etype=E ecode=C          (a Terminate, RFC 5040 figure 11)
# Opcodes are RDMAP's (RFC 5040 figure 4, RFC 7306): 0 Write, 1 Read Request, 2 Read
# Response, 3-6 Sends, 7 Terminate, 8/9 Immediate Data, 10 Atomic Request, 11 Atomic
# Response. A stream cut short at the end of the capture is walked to its last whole FPDU.
import struct
import sys

from pcap import streams

KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")


def walk(key, s):
    if s[:16] not in KEYS or len(s) < 20:
        return
    pd_len = struct.unpack(">H", s[18:20])[0]
    fop = s[20 + pd_len:]
    counts = {}
    lines = []
    prev = None  # the opcode and DDP L bit of the FPDU before
    u = 0
    while u + 4 <= len(fop):
        ulpdu, ctrl = struct.unpack(">HH", fop[u:u + 4])
        flen = 2 + ulpdu + (-(2 + ulpdu) % 4) + 4
        if u + flen > len(fop):
            break
        op = ctrl & 0x0F
        counts[op] = counts.get(op, 0) + 1
        body = fop[u + 4:u + 2 + ulpdu]
        # Untagged DDP header after the control word: QN, MSN, MO (RFC 5041 figure 4,
        # after the 4-byte Invalidate STag / reserved field).
        if op in (7, 8, 9, 10, 11) and len(body) >= 16:
            qn, msn, mo = struct.unpack(">III", body[4:16])
            hdr = body[16:]
            if op in (8, 9) and len(hdr) >= 8:
                after = "write-last" if prev == (0, True) else str(prev and prev[0])
                lines.append(f"imm op={op} qn={qn} msn={msn} data={hdr[:8].hex()} after={after}")
            elif op == 10 and len(hdr) >= 52:
                w0, req_id, stag, to, a, am, c, cm = struct.unpack(">IIIQQQQQ", hdr[:52])
                lines.append(f"atomic_req qn={qn} msn={msn} aop={w0 & 0xF} req_id={req_id} "
                             f"stag={stag:#x} to={to:#x} add_swap={a:#x} add_swap_mask={am:#x} "
                             f"compare={c:#x} compare_mask={cm:#x}")
            elif op == 7 and len(hdr) >= 4:
                w = struct.unpack(">I", hdr[:4])[0]
                lines.append(f"term layer={w >> 28} etype={(w >> 24) & 0xF} "
                             f"ecode={(w >> 16) & 0xFF:#x}")
            elif op == 11 and len(hdr) >= 12:
                req_id, orig = struct.unpack(">IQ", hdr[:12])
                lines.append(f"atomic_resp qn={qn} msn={msn} req_id={req_id} orig={orig:#x}")
        prev = (op, bool(fop[u + 2] & 0x40))  # the DDP control byte's L bit
        u += flen
    ops = ",".join(f"{k}:{v}" for k, v in sorted(counts.items()))
    print(f"stream {key} fpdus {sum(counts.values())} opcodes {ops or '-'}")
    for line in lines:
        print(line)


def main():
    data = open(sys.argv[1], "rb").read()
    for key, s in streams(data):
        walk(key, s)


main()
