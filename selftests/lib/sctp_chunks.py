#!/usr/bin/env python3
# sctp_chunks.py PCAP: checks a capture of DDP over SCTP (RFC 5043) between two siw_rs_sctp
# devices, decoding every SCTP packet itself (independently of siw_rs's code), and prints a
# summary. Exits non-zero, saying why, on the first rule broken:
# - no TCP at all (no MPA): every IP packet is SCTP;
# - every INIT and INIT-ACK carries the Adaptation Layer Indication parameter (0xC006) with
#   the DDP indication, 1 (sections 5.1, 11.1);
# - every DATA chunk is unordered (U flag, section 10), on stream 0, with payload protocol
#   identifier 16 (DDP segment) or 17 (Session Control) (section 5.2), unfragmented
#   (B and E flags: section 9);
# - per association and direction, the DDP-SSNs of the DATA chunks, in the order they were
#   first sent (SCTP sends in submission order), run 0, 1, 2, ... without a gap (sections
#   5.2.1, 6.1);
# - the first message of the connecting side is a Session Initiate (function 1), of the
#   listening side an Accept (2); each Control message is well formed (at most 512 octets
#   of private data; none on a Terminate); at least one side ends with a Terminate (4);
# - each DDP segment starts with a DDP control field of DDP version 1 and RDMAP version 1.
import struct
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
from pcap import packets  # noqa: E402


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def sctp_packets(data):
    """(src, dst, chunks) per SCTP packet; chunks are (type, flags, value)."""
    for frame in packets(data):
        if len(frame) < 34 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        proto = ip[9]
        src = ".".join(map(str, ip[12:16]))
        dst = ".".join(map(str, ip[16:20]))
        if proto == 6:
            fail(f"a TCP packet {src} > {dst}: DDP over SCTP uses no TCP (no MPA)")
        if proto != 132:
            continue
        sctp = ip[ihl:total]
        sport, dport = struct.unpack(">HH", sctp[:4])
        off, chunks = 12, []
        while off + 4 <= len(sctp):
            ctype, cflags, clen = struct.unpack(">BBH", sctp[off:off + 4])
            if clen < 4:
                fail(f"chunk of length {clen}")
            chunks.append((ctype, cflags, sctp[off + 4:off + clen]))
            off += (clen + 3) & ~3
        yield f"{src}:{sport}", f"{dst}:{dport}", chunks


def adaptation(params):
    off = 0
    while off + 4 <= len(params):
        ptype, plen = struct.unpack(">HH", params[off:off + 4])
        if ptype == 0xC006:
            return struct.unpack(">I", params[off + 4:off + 8])[0]
        off += (max(plen, 4) + 3) & ~3
    return None


def main():
    data = open(sys.argv[1], "rb").read()
    inits = 0
    # (src, dst) -> [(tsn, ssn, ppid, body)]
    flows = {}
    connecting = set()
    for src, dst, chunks in sctp_packets(data):
        for ctype, cflags, v in chunks:
            if ctype in (1, 2):  # INIT, INIT-ACK: 16 octets fixed, then parameters
                ai = adaptation(v[16:])
                name = "INIT" if ctype == 1 else "INIT-ACK"
                if ai != 1:
                    fail(f"{name} {src} > {dst}: adaptation indication {ai}, not DDP (1)")
                inits += 1
                if ctype == 1:
                    connecting.add(src)
            elif ctype == 0:  # DATA
                tsn, sid, _ssn, ppid = struct.unpack(">IHHI", v[:12])
                body = v[12:]
                if not cflags & 0x4:
                    fail(f"DATA {src} > {dst} TSN {tsn}: ordered (U flag clear)")
                if cflags & 0x3 != 0x3:
                    fail(f"DATA {src} > {dst} TSN {tsn}: a fragment (B/E flags {cflags & 3})")
                if sid != 0:
                    fail(f"DATA {src} > {dst} TSN {tsn}: stream {sid}, not 0")
                if ppid not in (16, 17):
                    fail(f"DATA {src} > {dst} TSN {tsn}: PPID {ppid}")
                if len(body) < 4:
                    fail(f"DATA {src} > {dst} TSN {tsn}: {len(body)} octets")
                # First sight of each TSN, in capture order (a retransmit is not a new one).
                flows.setdefault((src, dst), {}).setdefault(
                    tsn, (struct.unpack(">H", body[:2])[0], ppid, body))
    if inits < 2:
        fail(f"{inits} INIT/INIT-ACK chunks seen")
    if not flows:
        fail("no DATA chunks")
    segs = ctl = 0
    ended = set()
    for (src, dst), by_tsn in flows.items():
        msgs = list(by_tsn.values())
        for i, (ssn, ppid, body) in enumerate(msgs):
            if ssn != i & 0xFFFF:
                fail(f"{src} > {dst}: message {i} has DDP-SSN {ssn}")
            if ppid == 17:
                func = struct.unpack(">H", body[2:4])[0]
                pd = body[4:]
                if func not in (1, 2, 3, 4) or len(pd) > 512 or (func == 4 and pd):
                    fail(f"{src} > {dst}: bad Session Control (function {func}, {len(pd)} octets)")
                if i == 0:
                    want = 1 if src in connecting else 2
                    if func != want:
                        fail(f"{src} > {dst}: first message is function {func}, not {want}")
                elif func in (1, 2):
                    fail(f"{src} > {dst}: function {func} as message {i}")
                if func == 4:
                    if i != len(msgs) - 1:
                        fail(f"{src} > {dst}: message {i} after a Terminate")
                    ended.add((src, dst))
                ctl += 1
            else:
                if i == 0:
                    fail(f"{src} > {dst}: a DDP segment before the session's first control message")
                ctrl = body[2]
                # DDP control: T(1) L(1) rsvd(4) DV(2); RDMAP control: RV(2) rsvd(1) op(4).
                if ctrl & 0x3 != 1 or body[3] >> 6 != 1:
                    fail(f"{src} > {dst}: segment {i}: DDP/RDMAP version {ctrl & 3}/{body[3] >> 6}")
                segs += 1
    conns = len({tuple(sorted(k)) for k in flows})
    ends = len(ended)
    if ends < conns:
        fail(f"{conns} sessions, {ends} directions ended with a Terminate")
    print(f"sctp: {conns} associations, {inits} INIT/INIT-ACK with the DDP indication, "
          f"{segs} DDP segments and {ctl} Session Control messages, DDP-SSNs in sequence")


main()
