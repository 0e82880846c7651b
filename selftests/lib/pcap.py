# pcap.py: the frames of a classic pcap file (tcpdump -w), and the TCP streams in them, for
# the selftests' checkers.
import struct


def packets(data):
    # Classic pcap: 24-byte global header, then 16-byte record headers.
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    off = 24
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        yield data[off + 16:off + 16 + incl]
        off += 16 + incl


def segments(frame):
    """(stream key, sequence number, payload) of an Ethernet/IPv4/TCP frame, or None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[9] != 6:
        return None
    total = struct.unpack(">H", ip[2:4])[0]
    tcp = ip[ihl:total]
    sport, dport, seq = struct.unpack(">HHI", tcp[:8])
    doff = (tcp[12] >> 4) * 4
    src = ".".join(map(str, ip[12:16]))
    dst = ".".join(map(str, ip[16:20]))
    return f"{src}:{sport}>{dst}:{dport}", seq, tcp[doff:]


def streams(data):
    """Each direction's bytes in order, from its first data segment (retransmits merged)."""
    parts = {}
    for frame in packets(data):
        s = segments(frame)
        if s is None or not s[2]:
            continue
        parts.setdefault(s[0], []).append((s[1], s[2]))
    for key, segs in parts.items():
        base = segs[0][0]
        buf = bytearray()
        for seq, p in segs:
            off = (seq - base) & 0xFFFFFFFF
            if off > 1 << 30:
                continue  # before the first segment seen
            if off > len(buf):
                break  # a hole (not captured): stop there
            buf[off:off + len(p)] = p
        yield key, bytes(buf)


def syn_mss(frame):
    """(stream key, MSS the sender of a SYN announces, timestamps offered) of an
    Ethernet/IPv4/TCP SYN frame, or None."""
    if len(frame) < 34 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[9] != 6:
        return None
    tcp = ip[ihl:]
    if len(tcp) < 20 or not tcp[13] & 0x02:
        return None
    sport, dport = struct.unpack(">HH", tcp[:4])
    doff = (tcp[12] >> 4) * 4
    opts, i, mss, ts = tcp[20:doff], 0, None, False
    while i < len(opts):
        kind = opts[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= len(opts) or opts[i + 1] < 2:
            break
        n = opts[i + 1]
        if kind == 2 and n == 4:
            mss = struct.unpack(">H", opts[i + 2:i + 4])[0]
        elif kind == 8:
            ts = True
        i += n
    src = ".".join(map(str, ip[12:16]))
    dst = ".".join(map(str, ip[16:20]))
    return f"{src}:{sport}>{dst}:{dport}", mss, ts
