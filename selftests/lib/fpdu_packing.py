#!/usr/bin/env python3
# fpdu_packing.py PCAP [MIN]: check how the FPDUs of every TCP stream in a tcpdump capture
# (Ethernet, IPv4) that begins with an MPA request or reply frame lie in TCP segments,
# against RFC 5044 section 5.1: "Multiple FPDUs MAY be packed into a single TCP segment ...
# as long as they are entirely contained in the TCP segment". Independently of siw_rs's
# code:
# - each captured packet is cut into segments of the stream's MSS (the peer's SYN option,
#   less 12 octets with timestamps) from its first octet: on a veth a packet is an skb as
#   TCP built it, which a NIC's TSO (or GSO before a driver) would cut just so;
# - an FPDU that begins inside a segment, not at its start, must end inside it (one that
#   begins a segment may be longer: an FPDU of more than one MSS, agreed with GSO_EXP);
# - a segment that begins inside an FPDU continues it.
# Prints per stream "stream A:P>B:Q fpdus F segments S packed P max M" (P: segments holding
# more than one FPDU start, M: the most FPDU starts in one segment) and "FAIL: ..." lines.
# MIN (default 0): the stream with the most packing must have a segment of at least MIN
# FPDUs, else FAIL (MIN 0 checks the rule only; a negative MIN, -1, asks that no segment
# hold more than one FPDU). Exits 1 on any FAIL.
import bisect
import struct
import sys

from pcap import packets, segments, syn_mss

KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")


def main():
    data = open(sys.argv[1], "rb").read()
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    fails = []
    mss, ts, segs = {}, {}, {}
    for frame in packets(data):
        s = syn_mss(frame)
        if s is not None:
            key, m, t = s
            # A SYN from X announces what X receives: the MSS of the stream towards X.
            src, dst = key.split(">")
            if m:
                mss[f"{dst}>{src}"] = m
            ts[key] = t
            continue
        s = segments(frame)
        if s is not None and s[2]:
            segs.setdefault(s[0], []).append((s[1], s[2]))
    best = 0
    for key, parts in segs.items():
        base = parts[0][0]
        buf, cuts, seen = bytearray(), [], set()
        src, dst = key.split(">")
        m = mss.get(key)
        if m is None:
            continue
        if ts.get(key) and ts.get(f"{dst}>{src}"):
            m -= 12
        for seq, p in parts:
            off = (seq - base) & 0xFFFFFFFF
            if off > 1 << 30 or off in seen:
                continue  # before the first segment seen, or a retransmit
            if off > len(buf):
                break  # a hole (not captured): stop there
            seen.add(off)
            buf[off:off + len(p)] = p
            cuts.extend(range(off, off + len(p), m))
        s = bytes(buf)
        if s[:16] not in KEYS or len(s) < 20:
            continue
        pd_len = struct.unpack(">H", s[18:20])[0]
        u = 20 + pd_len
        cuts = sorted(set(cuts))
        starts = {}
        nfpdu = 0
        while u + 2 <= len(s):
            ulpdu = struct.unpack(">H", s[u:u + 2])[0]
            end = u + 2 + ulpdu + (-(2 + ulpdu) % 4) + 4
            if end > len(s):
                break
            i = bisect.bisect_right(cuts, u) - 1
            seg_start = cuts[i]
            seg_end = cuts[i + 1] if i + 1 < len(cuts) else len(s)
            seg_end = min(seg_end, seg_start + m)
            if u > seg_start and end > seg_end:
                fails.append(f"{key}: FPDU at {u} ({end - u} octets) begins {u - seg_start} "
                             f"octets into the segment at {seg_start} and ends past it "
                             f"({seg_end})")
            starts[seg_start] = starts.get(seg_start, 0) + 1
            nfpdu += 1
            u = end
        packed = sum(1 for n in starts.values() if n > 1)
        top = max(starts.values(), default=0)
        best = max(best, top)
        print(f"stream {key} fpdus {nfpdu} segments {len(starts)} packed {packed} max {top} "
              f"(mss {m})")
    if want > 0 and best < want:
        fails.append(f"no segment holds {want} FPDUs (the most: {best})")
    if want < 0 and best > 1:
        fails.append(f"a segment holds {best} FPDUs: packing was to be off")
    for f in fails[:20]:
        print("FAIL: " + f)
    sys.exit(1 if fails else 0)


main()
