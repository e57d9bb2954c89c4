"""Make a capture N times larger by replaying its flows with fresh ports, sequence numbers and times.

Each copy shifts every client port (not a broker port) by `k * 7` within 1024..65535, never
onto a broker port (so connections stay distinct), every sequence/acknowledgement number by `k * 0x01000193`, and every
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


def _shift(port: int, k: int) -> int:
    """A client port moved for copy `k`: within 1024..65535 and never onto a broker port (a client
    port equal to the broker's would make both ends look like the server)."""
    if port in BROKER_PORTS or port < 1024:
        return port
    moved = 1024 + (port - 1024 + k * 7) % (65536 - 1024)
    while moved in BROKER_PORTS:
        moved = 1024 + (moved - 1024 + 1) % (65536 - 1024)
    return moved


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("dst", type=Path)
    ap.add_argument("-n", type=int, default=10)
    args = ap.parse_args()
    # The source is read once (a real capture is small next to the copies made of it).
    records = [
        (rec.ts_us, bytes(rec.data), rec.orig_len, rec.linktype) for rec in open_capture(str(args.src))
    ]
    first = records[0][0] if records else 0
    last = records[-1][0] if records else 0
    linktype = records[0][3] if records else 1
    span = last - first + 1_000_000
    pack_hdr = struct.Struct("<IIII").pack
    with open(args.dst, "wb", buffering=1 << 20) as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, linktype))
        for k in range(args.n):
            for ts_us, raw, orig_len, _ in records:
                data = bytearray(raw)
                if linktype == 1 and len(data) >= 54 and data[12:14] == b"\x08\x00" and data[23] == 6:
                    ihl = (data[14] & 0x0F) * 4
                    t = 14 + ihl
                    sport, dport, seq, ack = struct.unpack_from(">HHII", data, t)
                    shift = k * 0x01000193
                    struct.pack_into(
                        ">HHII",
                        data,
                        t,
                        _shift(sport, k),
                        _shift(dport, k),
                        (seq + shift) & 0xFFFFFFFF,
                        (ack + shift) & 0xFFFFFFFF,
                    )
                ts = ts_us + k * span
                out.write(pack_hdr(ts // 1_000_000, ts % 1_000_000, len(data), orig_len))
                out.write(data)


if __name__ == "__main__":
    main()
