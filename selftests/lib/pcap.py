# pcap.py: the frames of a classic pcap file (tcpdump -w), for the selftests' checkers.
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
