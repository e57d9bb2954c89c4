"""Per-packet header parsing: from a link-layer record to the TCP segment it carries.

Used where Python handles packets itself: `-w` (cli/pcapwrite.py) finds the packets of each
connection to copy. The engine parses packets in engine/src/packet.rs. Only what TCP reassembly needs is extracted (addresses, ports, sequence numbers,
flags, payload), so the common case — Ethernet, IPv4 without options, TCP — is one
precompiled `struct` unpack. Everything else (VLAN tags, Linux cooked headers,
loopback, raw IP, IPv4 options, IPv6 extension headers) takes the general path.

Lengths follow the IP header, not the record: link-layer padding after the datagram
is dropped, and bytes the headers declare but the snap length cut off are counted in
`Segment.missing`. Loopback captures with segmentation offload carry datagrams larger
than the 16-bit IP length field can say (it then holds 0, 65,535 or a wrapped value);
such records are taken at their captured length.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Segment", "parse_tcp", "SUPPORTED_LINKTYPES", "LINKTYPE_NAMES"]

FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


@dataclass(slots=True)
class Segment:
    """One TCP segment as captured, with the payload cut to the IP datagram's own length."""

    src: str
    dst: str
    sport: int
    dport: int
    seq: int
    ack: int
    flags: int  # TCP flags byte (FIN=1, SYN=2, RST=4, PSH=8, ACK=16)
    payload: bytes
    missing: int  # payload bytes the headers declare but the capture does not hold (snap length)


# Link types (LINKTYPE_* values as stored in pcap / pcapng files).
LT_NULL = 0  # BSD loopback: 4-byte address family in the capturing host's byte order
LT_ETHERNET = 1
LT_RAW_12 = 12  # DLT_RAW as some systems wrote it into files
LT_RAW_14 = 14  # DLT_RAW on OpenBSD
LT_RAW = 101
LT_LOOP = 108  # OpenBSD loopback: address family in network byte order
LT_LINUX_SLL = 113
LT_IPV4 = 228
LT_IPV6 = 229
LT_LINUX_SLL2 = 276

LINKTYPE_NAMES: dict[int, str] = {
    LT_NULL: "BSD loopback",
    LT_ETHERNET: "Ethernet",
    LT_RAW_12: "raw IP",
    LT_RAW_14: "raw IP",
    LT_RAW: "raw IP",
    LT_LOOP: "OpenBSD loopback",
    LT_LINUX_SLL: "Linux cooked (SLL)",
    LT_IPV4: "raw IPv4",
    LT_IPV6: "raw IPv6",
    LT_LINUX_SLL2: "Linux cooked v2 (SLL2)",
}
SUPPORTED_LINKTYPES: frozenset[int] = frozenset(LINKTYPE_NAMES)

ETH_IPV4 = 0x0800
ETH_IPV6 = 0x86DD
VLAN_TPIDS = frozenset((0x8100, 0x88A8, 0x9100, 0x9200))
MAX_VLAN_TAGS = 8
# Address-family values meaning IPv4 / IPv6 in BSD loopback headers (they differ by OS).
AF_INET_VALUES = frozenset((2,))
AF_INET6_VALUES = frozenset((10, 24, 28, 30))
# IPv6 extension headers that are skipped to reach TCP: hop-by-hop, routing, destination options, AH.
IPV6_EXT_SKIP = frozenset((0, 43, 60, 51, 135, 139, 140))
IPV6_FRAGMENT = 44
MAX_IPV6_EXT = 16
PROTO_TCP = 6

# Fast path: link header + IPv4 without options + TCP in one unpack per link type (network
# type, version/IHL, total length, flags/fragment offset, protocol, src, dst, sport, dport, seq,
# ack, data offset, flags).
_IP4_TCP_FMT = "BxH2xHxB2x4s4sHHIIBB"
_FAST_PATHS: dict[int, tuple[Callable[[bytes], tuple], int, frozenset[int]]] = {
    # link type: (unpacker, link header length, network-type values meaning IPv4)
    1: (struct.Struct("!12xH" + _IP4_TCP_FMT).unpack_from, 14, frozenset((0x0800,))),  # Ethernet
    113: (struct.Struct("!14xH" + _IP4_TCP_FMT).unpack_from, 16, frozenset((0x0800,))),  # SLL
    276: (struct.Struct("!H18x" + _IP4_TCP_FMT).unpack_from, 20, frozenset((0x0800,))),  # SLL2
    0: (struct.Struct("!I" + _IP4_TCP_FMT).unpack_from, 4, frozenset((2, 0x02000000))),  # NULL, either order
    108: (struct.Struct("!I" + _IP4_TCP_FMT).unpack_from, 4, frozenset((2,))),  # OpenBSD loopback
}
_fast_get = _FAST_PATHS.get
_MAX_PLAIN_IP = 0xFFFF
"""Longer datagrams are offloaded ones whose IPv4 length field cannot be trusted."""

_IP4 = struct.Struct("!BxH2xHxB2x4s4s")
_TCP = struct.Struct("!HHIIBB")
_U16 = struct.Struct("!H")
_IP6_FIXED = struct.Struct("!4xHBx16s16s")


_addr_cache: dict[bytes, str] = {}
_cache_get = _addr_cache.get
_ADDR_CACHE_MAX = 4096


def _addr(raw: bytes) -> str:
    """Textual address, cached: captures hold few distinct endpoints and formatting is costly."""
    s = _addr_cache.get(raw)
    if s is None:
        if len(_addr_cache) >= _ADDR_CACHE_MAX:
            _addr_cache.clear()
        s = socket.inet_ntop(socket.AF_INET if len(raw) == 4 else socket.AF_INET6, raw)
        _addr_cache[raw] = s
    return s


def parse_tcp(linktype: int, data: bytes) -> Segment | None:
    """The TCP segment a link-layer record carries, or None for anything else (or unreadable)."""
    n = len(data)
    fast = _fast_get(linktype)
    if fast is not None:
        unpack, l2, ipv4_types = fast
        if n >= l2 + 34:
            ntype, vihl, tot, frag, proto, s, d, sport, dport, seq, ack, off, flags = unpack(data)
            if vihl == 0x45 and proto == PROTO_TCP and ntype in ipv4_types and not frag & 0x3FFF:
                start = l2 + 20 + ((off >> 4) << 2)
                end = l2 + tot
                # Common case: a whole datagram with a sane TCP header, of a size the length field can say.
                if off >= 0x50 and start <= end <= n and tot and n - l2 <= _MAX_PLAIN_IP:
                    src = _cache_get(s) or _addr(s)
                    dst = _cache_get(d) or _addr(d)
                    return Segment(src, dst, sport, dport, seq, ack, flags, data[start:end], 0)
                return _parse_ip(data, l2, 4)
    off = _network_offset(linktype, data)
    if off is None:
        return None
    return _parse_ip(data, off[0], off[1])


def _network_offset(linktype: int, data: bytes) -> tuple[int, int] | None:
    """(offset of the IP header, IP version) inside a record of this link type, or None."""
    n = len(data)
    if linktype == LT_ETHERNET:
        if n < 14:
            return None
        return _after_ethertype(data, 12)
    if linktype == LT_LINUX_SLL:
        if n < 16:
            return None
        return _after_ethertype(data, 14)
    if linktype == LT_LINUX_SLL2:
        if n < 20:
            return None
        etype = _U16.unpack_from(data, 0)[0]
        return _by_ethertype(etype, 20, data)
    if linktype in (LT_RAW, LT_RAW_12, LT_RAW_14):
        return _by_version(data, 0)
    if linktype == LT_IPV4:
        return (0, 4)
    if linktype == LT_IPV6:
        return (0, 6)
    if linktype in (LT_NULL, LT_LOOP):
        if n < 4:
            return None
        if linktype == LT_LOOP:
            af = int.from_bytes(data[:4], "big")
        else:
            # Host byte order of the capturing machine: a small value has its nonzero byte at one end.
            af = int.from_bytes(data[:4], "little")
            if af > 0xFFFF:
                af = int.from_bytes(data[:4], "big")
        if af in AF_INET_VALUES:
            return (4, 4)
        if af in AF_INET6_VALUES:
            return (4, 6)
        return None
    return None


def _after_ethertype(data: bytes, pos: int) -> tuple[int, int] | None:
    """Follow VLAN tags (802.1Q, QinQ) from the ethertype at `pos` to the network header."""
    etype = _U16.unpack_from(data, pos)[0]
    pos += 2
    tags = 0
    while etype in VLAN_TPIDS:
        tags += 1
        if tags > MAX_VLAN_TAGS or pos + 4 > len(data):
            return None
        etype = _U16.unpack_from(data, pos + 2)[0]
        pos += 4
    return _by_ethertype(etype, pos, data)


def _by_ethertype(etype: int, pos: int, data: bytes) -> tuple[int, int] | None:
    if etype == ETH_IPV4:
        return (pos, 4)
    if etype == ETH_IPV6:
        return (pos, 6)
    return None


def _by_version(data: bytes, pos: int) -> tuple[int, int] | None:
    if pos >= len(data):
        return None
    v = data[pos] >> 4
    return (pos, v) if v in (4, 6) else None


def _parse_ip(data: bytes, pos: int, version: int) -> Segment | None:
    """IPv4 or IPv6 header at `pos`, then TCP."""
    n = len(data)
    if version == 4:
        if pos + 20 > n:
            return None
        vihl, tot, frag, proto, s, d = _IP4.unpack_from(data, pos)
        ihl = (vihl & 0x0F) << 2
        if vihl >> 4 != 4 or ihl < 20 or proto != PROTO_TCP or frag & 0x3FFF:
            return None  # not TCP, or a fragment (no IP reassembly)
        cap = n - pos
        if tot == 0 or (cap > 0xFFFF and tot < cap):
            tot = cap  # segmentation offload
        if tot < ihl:
            return None
        return _parse_tcp_header(data, pos + ihl, pos + tot, _addr(s), _addr(d))
    if version == 6:
        if pos + 40 > n:
            return None
        plen, nxt, s, d = _IP6_FIXED.unpack_from(data, pos)
        if data[pos] >> 4 != 6:
            return None
        cap = n - pos - 40
        if plen == 0 or (cap > 0xFFFF and plen < cap):
            plen = cap  # jumbogram or segmentation offload: take what was captured
        end = pos + 40 + plen
        p = pos + 40
        for _ in range(MAX_IPV6_EXT):
            if nxt == PROTO_TCP:
                return _parse_tcp_header(data, p, end, _addr(s), _addr(d))
            if p + 8 > n:
                return None
            if nxt in IPV6_EXT_SKIP:
                hlen = (data[p + 1] + 2) << 2 if nxt == 51 else (data[p + 1] + 1) << 3
            elif nxt == IPV6_FRAGMENT:
                if _U16.unpack_from(data, p + 2)[0] != 0:
                    return None  # a fragment (offset or more-fragments set): no IP reassembly
                hlen = 8  # an atomic fragment holds the whole datagram
            else:
                return None
            nxt = data[p]
            p += hlen
        return None
    return None


def _parse_tcp_header(data: bytes, pos: int, end: int, src: str, dst: str) -> Segment | None:
    """TCP header at `pos`; the IP datagram declares it ends at `end` (may lie beyond the capture)."""
    n = len(data)
    if pos + 20 > n:
        return None
    sport, dport, seq, ack, off, flags = _TCP.unpack_from(data, pos)
    thl = (off >> 4) << 2
    start = pos + thl
    if thl < 20 or start > n or end < start:
        return None
    if end > n:
        missing = end - n
        end = n
    else:
        missing = 0
    return Segment(src, dst, sport, dport, seq, ack, flags, data[start:end], missing)
