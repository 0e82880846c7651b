#!/usr/bin/env python3
# mpa_frames.py PCAP: print the MPA request and reply frames (RFC 5044 section 7.1) found
# in a tcpdump capture (Ethernet, IPv4, TCP), one per line:
#   req rev=2 crc=1 markers=0 reject=0 enhanced=1 ext_offer=1 ext_accept=0 ird=128 ord=128 p2p=0 rtr=-
# (ext_offer, ext_accept: siw_rs's RFC 7306 bits 0x0200 and 0x0100; the IRD/ORD word, RFC
# 6581, only in enhanced frames).
import struct
import sys

from pcap import packets

KEYS = {b"MPA ID Req Frame": "req", b"MPA ID Rep Frame": "rep"}


def tcp_payload(frame):
    if len(frame) < 14 or frame[12:14] != b"\x08\x00":
        return b""
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[9] != 6:
        return b""
    tcp = ip[ihl:]
    doff = (tcp[12] >> 4) * 4
    total = struct.unpack(">H", ip[2:4])[0]
    return tcp[doff:total - ihl]


def main():
    data = open(sys.argv[1], "rb").read()
    for frame in packets(data):
        p = tcp_payload(frame)
        for key, kind in KEYS.items():
            i = p.find(key)
            if i < 0 or len(p) < i + 20:
                continue
            bits, pd_len = struct.unpack(">HH", p[i + 16:i + 20])
            line = (f"{kind} rev={bits & 0xFF} crc={int(bool(bits & 0x4000))} "
                    f"markers={int(bool(bits & 0x8000))} reject={int(bool(bits & 0x2000))} "
                    f"enhanced={int(bool(bits & 0x1000))} "
                    f"ext_offer={int(bool(bits & 0x0200))} ext_accept={int(bool(bits & 0x0100))}")
            # RFC 6581: the IRD/ORD word leads the private data of an enhanced frame.
            if bits & 0x1000 and pd_len >= 4 and len(p) >= i + 24:
                ird, ord_ = struct.unpack(">HH", p[i + 20:i + 24])
                rtr = [n for n, on in (("send", ird & 0x4000), ("write", ord_ & 0x8000),
                                       ("read", ord_ & 0x4000)) if on]
                line += (f" ird={ird & 0x3FFF} ord={ord_ & 0x3FFF} p2p={int(bool(ird & 0x8000))}"
                         f" rtr={','.join(rtr) or '-'}")
            print(line)


main()
