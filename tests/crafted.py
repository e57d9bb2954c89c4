"""Builders of small test captures: scapy makes the packets, these helpers put them in files.

Packets: `tcp()` builds an IPv4 or IPv6 TCP packet (scapy layers); `link()` wraps it for a
link type (Ethernet with VLAN tags, SLL, SLL2, BSD/OpenBSD loopback, raw IP) and returns
the record bytes. Files: `write_pcap()` uses scapy's RawPcapWriter (µs or ns, either byte
order; it writes records longer than 65,535 bytes whole and takes an explicit wire length);
`write_pcapng()` writes pcapng by hand because scapy's writer knows only one interface and
microsecond timestamps. `gzip_file()` compresses a capture.

Typical use::

    seg = tcp("10.0.0.1", "10.0.0.2", 40000, 9092, seq=1, payload=b"hi")
    write_pcap(path, [Rec(link(1, seg), ts_us=1_700_000_000_000_001)], linktype=1)
"""

from __future__ import annotations

import gzip
import logging
import shutil
import struct
from dataclasses import dataclass, field
from pathlib import Path

logging.getLogger("scapy.runtime").setLevel(logging.ERROR)

from scapy.layers.inet import IP, TCP  # noqa: E402
from scapy.layers.inet6 import IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrHopByHop, IPv6ExtHdrRouting  # noqa: E402
from scapy.layers.l2 import CookedLinux, CookedLinuxV2, Dot1AD, Dot1Q, Ether, Loopback  # noqa: E402
from scapy.packet import Packet, Raw  # noqa: E402
from scapy.utils import RawPcapWriter  # noqa: E402

ETHERNET, NULL, RAW, LOOP, SLL, IPV4, IPV6, SLL2 = 1, 0, 101, 108, 113, 228, 229, 276
EXT_HEADERS = {"hop": IPv6ExtHdrHopByHop, "routing": IPv6ExtHdrRouting, "dest": IPv6ExtHdrDestOpt}


def tcp(
    src: str = "10.0.0.1",
    dst: str = "10.0.0.2",
    sport: int = 40000,
    dport: int = 9092,
    seq: int = 1000,
    ack: int = 1,
    flags: str = "PA",
    payload: bytes = b"",
    ip_options: bytes = b"",
    tcp_options: list | None = None,
    ext: tuple[str, ...] = (),
) -> Packet:
    """An IP/TCP packet; IPv6 when `src` contains a colon (with extension headers `ext`)."""
    t = TCP(sport=sport, dport=dport, seq=seq, ack=ack, flags=flags, options=tcp_options or [])
    if ":" in src:
        ip: Packet = IPv6(src=src, dst=dst)
        for name in ext:
            ip = ip / EXT_HEADERS[name]()
    else:
        ip = IP(src=src, dst=dst, options=ip_options) if ip_options else IP(src=src, dst=dst)
    pkt = ip / t
    if payload:
        pkt = pkt / Raw(payload)
    return pkt


def link(
    linktype: int, ip: Packet, vlans: tuple[int, ...] = (), qinq: bool = False, af: int | None = None
) -> bytes:
    """Record bytes of `ip` under a link-layer header of `linktype`.

    Ethernet: `vlans` adds 802.1Q tags (the outer one 802.1ad when `qinq`). NULL/LOOP: `af`
    overrides the address family (IPv6 values differ by OS: 10, 24, 28, 30).
    """
    v6 = isinstance(ip, IPv6)
    if linktype == ETHERNET:
        frame: Packet = Ether(src="00:00:00:00:00:01", dst="00:00:00:00:00:02")
        for i, vid in enumerate(vlans):
            frame = frame / (Dot1AD(vlan=vid) if qinq and i == 0 else Dot1Q(vlan=vid))
        return bytes(frame / ip)
    if linktype == SLL:
        return bytes(CookedLinux(pkttype=0, lladdrtype=772, lladdrlen=6) / ip)
    if linktype == SLL2:
        return bytes(CookedLinuxV2(pkttype=0, lladdrtype=772, lladdrlen=6) / ip)
    if linktype == NULL:
        return bytes(Loopback(type=af if af is not None else (24 if v6 else 2)) / ip)
    if linktype == LOOP:  # OpenBSD: address family in network byte order
        return struct.pack(">I", af if af is not None else (24 if v6 else 2)) + bytes(ip)
    if linktype in (RAW, IPV4, IPV6, 12, 14):
        return bytes(ip)
    raise ValueError(f"no builder for link type {linktype}")


def gso_record(payload: bytes, src: str = "127.0.0.1", dst: str = "127.0.0.1") -> bytes:
    """Ethernet + IPv4 + TCP datagram too big for the 16-bit IPv4 length (loopback GSO): length field 0."""
    hdr = Ether(src="00:00:00:00:00:00", dst="00:00:00:00:00:00") / IP(src=src, dst=dst, len=0)
    return bytes(hdr / TCP(sport=40000, dport=9092, seq=1000, ack=1, flags="PA")) + payload


@dataclass
class Rec:
    """A record to write: bytes, time in µs since the epoch, wire length (defaults to len(data))."""

    data: bytes
    ts_us: int = 1_700_000_000_000_000
    orig_len: int | None = None
    iface: int = 0  # pcapng only
    ts_units: int | None = (
        None  # raw timestamp in the file's units (pcap ns: ns since the epoch), overrides ts_us
    )


def write_pcap(
    path: str | Path, recs: list[Rec], linktype: int = ETHERNET, nano: bool = False, endian: str = "<"
) -> Path:
    """A pcap file written by scapy (`endian` "<" or ">"; `nano` for nanosecond timestamps)."""
    w = RawPcapWriter(str(path), linktype=linktype, nano=nano, endianness=endian, snaplen=262144)
    w.linktype = linktype  # scapy would take 0 (BSD loopback) for "unset"
    w.write_header(None)  # write_packet() alone would leave the file header for close()
    for r in recs:
        units = r.ts_units if r.ts_units is not None else r.ts_us * 1000 if nano else r.ts_us
        sec, frac = divmod(units, 1_000_000_000 if nano else 1_000_000)
        w.write_packet(r.data, sec=sec, usec=frac, wirelen=r.orig_len or len(r.data))
    w.close()
    return Path(path)


@dataclass
class Iface:
    """A pcapng interface: link type, if_tsresol byte (6 = µs, 9 = ns, 0x80|n = 2^-n s)."""

    linktype: int
    tsresol: int | None = None
    snaplen: int = 262144
    tsoffset_s: int | None = None
    options: list[tuple[int, bytes]] = field(default_factory=list)


def _opts(endian: str, opts: list[tuple[int, bytes]]) -> bytes:
    out = b""
    for code, val in opts:
        out += struct.pack(endian + "HH", code, len(val)) + val + b"\0" * (-len(val) % 4)
    return out + struct.pack(endian + "HH", 0, 0) if opts else b""


def _block(endian: str, btype: int, body: bytes) -> bytes:
    body += b"\0" * (-len(body) % 4)
    n = 12 + len(body)
    return struct.pack(endian + "II", btype, n) + body + struct.pack(endian + "I", n)


def pcapng_shb(endian: str = "<") -> bytes:
    return _block(endian, 0x0A0D0D0A, struct.pack(endian + "IHHq", 0x1A2B3C4D, 1, 0, -1))


def pcapng_idb(endian: str, iface: Iface) -> bytes:
    opts = list(iface.options)
    if iface.tsresol is not None:
        opts.append((9, bytes([iface.tsresol])))
    if iface.tsoffset_s is not None:
        opts.append((14, struct.pack(endian + "q", iface.tsoffset_s)))
    return _block(
        endian, 1, struct.pack(endian + "HHI", iface.linktype, 0, iface.snaplen) + _opts(endian, opts)
    )


def _units(rec: Rec, iface: Iface) -> int:
    if rec.ts_units is not None:
        return rec.ts_units
    r = 6 if iface.tsresol is None else iface.tsresol
    us = rec.ts_us - (iface.tsoffset_s or 0) * 1_000_000
    if r & 0x80:
        return (us << (r & 0x7F)) // 1_000_000
    return us * 10 ** (r - 6) if r >= 6 else us // 10 ** (6 - r)


def pcapng_epb(endian: str, rec: Rec, iface: Iface) -> bytes:
    ts = _units(rec, iface)
    head = struct.pack(
        endian + "IIIII", rec.iface, ts >> 32, ts & 0xFFFFFFFF, len(rec.data), rec.orig_len or len(rec.data)
    )
    return _block(endian, 6, head + rec.data)


def pcapng_spb(endian: str, rec: Rec) -> bytes:
    return _block(endian, 3, struct.pack(endian + "I", rec.orig_len or len(rec.data)) + rec.data)


def pcapng_pb(endian: str, rec: Rec, iface: Iface) -> bytes:
    """Obsolete Packet Block (still written by old tools)."""
    ts = _units(rec, iface)
    head = struct.pack(
        endian + "HHIIII",
        rec.iface,
        0,
        ts >> 32,
        ts & 0xFFFFFFFF,
        len(rec.data),
        rec.orig_len or len(rec.data),
    )
    return _block(endian, 2, head + rec.data)


def write_pcapng(
    path: str | Path,
    ifaces: list[Iface],
    recs: list[Rec],
    endian: str = "<",
    block: str = "epb",
    extra_blocks: list[tuple[int, bytes]] | None = None,
) -> Path:
    """A pcapng file: one section, the interfaces, then each record as an EPB (or "spb"/"pb").

    `extra_blocks` (type, body) are written after the interfaces (e.g. unknown block types
    a reader must skip).
    """
    out = pcapng_shb(endian) + b"".join(pcapng_idb(endian, i) for i in ifaces)
    for btype, body in extra_blocks or []:
        out += _block(endian, btype, body)
    for r in recs:
        if block == "spb":
            out += pcapng_spb(endian, r)
        elif block == "pb":
            out += pcapng_pb(endian, r, ifaces[r.iface])
        else:
            out += pcapng_epb(endian, r, ifaces[r.iface])
    Path(path).write_bytes(out)
    return Path(path)


def gzip_file(src: str | Path, dst: str | Path | None = None) -> Path:
    """`src` gzip-compressed (to `dst`, default src + ".gz")."""
    dst = Path(dst) if dst else Path(str(src) + ".gz")
    with open(src, "rb") as fi, gzip.open(dst, "wb") as fo:
        shutil.copyfileobj(fi, fo)
    return dst


class Conn:
    """Packets of one loopback TCP connection, handshake first so roles come from the SYN.

    `client(data)` / `server(data)` append a data packet (1 ms apart from `t0`) to `recs`
    and return its 1-based packet number.
    """

    def __init__(
        self,
        recs: list[Rec],
        sport: int,
        dport: int,
        host: str = "127.0.0.1",
        t0: int = 1_700_000_000_000_000,
    ) -> None:
        self.recs, self.sport, self.dport, self.host, self.t0 = recs, sport, dport, host, t0
        self.cseq, self.sseq = 1000, 5000
        self._add("S", client=True)
        self.cseq += 1
        self._add("SA", client=False)
        self.sseq += 1
        self._add("A", client=True)

    def _add(self, flags: str, client: bool, payload: bytes = b"") -> None:
        ts = self.t0 + len(self.recs) * 1000
        h = self.host
        if client:
            pkt = tcp(h, h, self.sport, self.dport, self.cseq, self.sseq, flags, payload)
        else:
            pkt = tcp(h, h, self.dport, self.sport, self.sseq, self.cseq, flags, payload)
        self.recs.append(Rec(link(ETHERNET, pkt), ts_us=ts))

    def client(self, data: bytes) -> int:
        self._add("PA", True, data)
        self.cseq += len(data)
        return len(self.recs)

    def server(self, data: bytes) -> int:
        self._add("PA", False, data)
        self.sseq += len(data)
        return len(self.recs)
