"""Make a capture N times larger by replaying its flows with fresh ports, sequence numbers and times.

Each copy shifts every port that is not a broker port by `k * 7` (so connections stay
distinct), every sequence/acknowledgement number by `k * 0x01000193`, and every
timestamp by `k` times the capture's duration, so the result reads like N
consecutive runs of the same traffic. Works on Ethernet + IPv4 + TCP records
(the benchmark captures); other records are copied unchanged.

    python benchmarks/scale_capture.py in.pcap out.pcap -n 10
"""

from __future__ import annotations

import argparse
import struct
from pathlib import Path

from wiredump.dissect.capture import open_capture

BROKER_PORTS = {9092, 6650, 12345, 11011}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("-n", type=int, default=10)
    args = ap.parse_args()
    first = last = None
    linktype = 1
    for rec in open_capture(str(args.src)):
        first = rec.ts_us if first is None else first
        last = rec.ts_us
        linktype = rec.linktype
    span = (last or 0) - (first or 0) + 1_000_000
    with open(args.dst, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for k in range(args.n):
            for rec in open_capture(str(args.src)):
                data = bytearray(rec.data)
                if linktype == 1 and len(data) >= 54 and data[12:14] == b"\x08\x00" and data[23] == 6:
                    ihl = (data[14] & 0x0F) * 4
                    t = 14 + ihl
                    sport, dport, seq, ack = struct.unpack_from(">HHII", data, t)
                    if sport not in BROKER_PORTS:
                        sport = (sport + k * 7) & 0xFFFF
                    if dport not in BROKER_PORTS:
                        dport = (dport + k * 7) & 0xFFFF
                    shift = k * 0x01000193
                    struct.pack_into(
                        ">HHII", data, t, sport, dport, (seq + shift) & 0xFFFFFFFF, (ack + shift) & 0xFFFFFFFF
                    )
                ts = rec.ts_us + k * span
                out.write(struct.pack("<IIII", ts // 1_000_000, ts % 1_000_000, len(data), rec.orig_len))
                out.write(data)


if __name__ == "__main__":
    main()
