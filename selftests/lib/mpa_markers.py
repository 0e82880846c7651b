#!/usr/bin/env python3
# mpa_markers.py PCAP CRC: check the MPA markers (RFC 5044 section 4.3) of every TCP stream
# in a tcpdump capture (Ethernet, IPv4) that begins with an MPA request or reply frame,
# independently of siw_rs's own code. In each stream's Full Operation Phase (after the
# frame and its private data):
# - a marker sits at every 512th octet, the first one right at the start;
# - its reserved half is zero, and its FPDUPTR counts the octets from the ULPDU Length field
#   of the FPDU it lies in to the marker (0 when the next FPDU follows it right away);
# - with CRC=1, each FPDU's CRC32C covers what section 4.4 says: from a marker right before
#   the length field (or the length field) through the pad, markers inside included.
# Prints per stream "stream A:P>B:Q markers M fpdus F bytes N" (A, B: addresses, P, Q:
# ports) and "FAIL: ..." lines; exits 1 if anything failed, or if no stream had a marker.
# A stream cut short at the end of the capture is checked up to the last whole FPDU.
import struct
import sys

from crc32c import crc32c
from pcap import streams

KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")
INTERVAL = 512


def check(key, s, crc_on, fail):
    if s[:16] not in KEYS or len(s) < 20:
        return 0
    pd_len = struct.unpack(">H", s[18:20])[0]
    fop = s[20 + pd_len:]
    # Markers out, remembering where each remaining octet was in the stream.
    markers, plain, where = [], bytearray(), []
    i = 0
    while i < len(fop):
        if i % INTERVAL == 0:
            if i + 4 > len(fop):
                break
            markers.append((i, fop[i:i + 4]))
            i += 4
            continue
        n = min(INTERVAL - i % INTERVAL, len(fop) - i)
        where.extend(range(i, i + n))
        plain += fop[i:i + n]
        i += n
    # FPDUs: (stream position of the length field, of the CRC field, end).
    fpdus = []
    u = 0
    while u + 2 <= len(plain):
        ulpdu = struct.unpack(">H", plain[u:u + 2])[0]
        flen = 2 + ulpdu + (-(2 + ulpdu) % 4) + 4
        if u + flen > len(plain):
            break
        start, crc_at = where[u], where[u + flen - 4]
        fpdus.append((start, crc_at, where[u + flen - 1] + 1))
        if crc_on:
            lead = start - 4 if any(m == start - 4 for m, _ in markers) else start
            want = struct.unpack("<I", fop[crc_at:crc_at + 4])[0]
            got = crc32c(fop[lead:crc_at])
            if got != want:
                fail(f"{key}: FPDU at {start}: CRC {want:#010x}, computed {got:#010x}")
        u += flen
    starts = {f[0] for f in fpdus}
    last = fpdus[-1][2] if fpdus else 0
    for m, raw in markers:
        if m >= last:
            break
        if raw[:2] != b"\0\0":
            fail(f"{key}: marker at {m}: reserved half {raw[:2].hex()}")
        ptr = struct.unpack(">H", raw[2:])[0] & 0xFFFC
        inside = [f for f in fpdus if f[0] <= m < f[1]]
        if inside:
            want = m - inside[0][0]
        elif m + 4 in starts:
            want = 0
        else:
            fail(f"{key}: marker at {m} lies in no FPDU and before none")
            continue
        if ptr != want:
            fail(f"{key}: marker at {m}: FPDUPTR {ptr}, expected {want}")
    print(f"stream {key} markers {len(markers)} fpdus {len(fpdus)} bytes {len(fop)}")
    return len(markers)


def main():
    data = open(sys.argv[1], "rb").read()
    crc_on = sys.argv[2] == "1"
    failed = []

    def fail(msg):
        failed.append(msg)
        print("FAIL: " + msg)

    seen = sum(check(k, s, crc_on, fail) for k, s in streams(data))
    if not seen:
        fail("no stream with markers")
    return 1 if failed else 0


sys.exit(main())
