"""Damaged and re-encoded variants of the real captures, made by record surgery.

A capture is read as raw pcap records; each Ethernet/IPv4/TCP record is parsed here
(independently of wiredump's own parser) just far enough to know its connection,
direction, sequence number and payload. Variants copy records, reorder, duplicate,
drop or cut them, and write a new pcap with the original file header. New packets
(a re-segmented piece, a partial retransmission) copy the headers of the packet they
come from, with a new sequence number, payload and IPv4 total length (and IPv4
header checksum); TCP checksums are left as they are — they are already invalid on
loopback captures and wiredump never checks them.

Every record keeps `orig`, the packet number it came from in the original capture,
so that packet numbers reported on a variant can be mapped back.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, replace
from pathlib import Path

ETH = 14
FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10


@dataclass(frozen=True)
class Rec:
    """One record: timestamp fields as stored, captured bytes, wire length, origin packet number."""

    ts: bytes  # the 8 timestamp bytes of the record header, as stored
    data: bytes
    orig_len: int
    orig: int  # 1-based packet number in the original capture

    # -- TCP view (None for anything that is not Ethernet/IPv4/TCP) -------------------------------
    def tcp(self) -> Tcp | None:
        return parse(self.data)


@dataclass(frozen=True)
class Tcp:
    src: tuple[bytes, int]
    dst: tuple[bytes, int]
    seq: int
    ack: int
    flags: int
    hdr_len: int  # Ethernet + IPv4 + TCP header bytes
    payload: bytes

    @property
    def conn(self) -> frozenset[tuple[bytes, int]]:
        """The connection, whichever the direction."""
        return frozenset((self.src, self.dst))


@dataclass
class Capture:
    head: bytes  # pcap file header
    endian: str
    recs: list[Rec]


def read(path: Path) -> Capture:
    """Every record of a pcap file (µs or ns, either byte order), whole."""
    raw = path.read_bytes()
    magic = raw[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        raise ValueError(f"{path}: not a pcap file")
    (linktype,) = struct.unpack_from(endian + "I", raw, 20)
    if linktype & 0xFFFF != 1:
        raise ValueError(f"{path}: link type {linktype}, only Ethernet is rewritten")
    recs, pos, n = [], 24, 0
    while pos + 16 <= len(raw):
        incl, orig_len = struct.unpack_from(endian + "II", raw, pos + 8)
        n += 1
        recs.append(Rec(raw[pos : pos + 8], raw[pos + 16 : pos + 16 + incl], orig_len, n))
        pos += 16 + incl
    return Capture(raw[:24], endian, recs)


def write(cap: Capture, recs: list[Rec], path: Path) -> Path:
    out = [cap.head]
    for r in recs:
        out.append(r.ts + struct.pack(cap.endian + "II", len(r.data), r.orig_len) + r.data)
    path.write_bytes(b"".join(out))
    return path


def parse(data: bytes) -> Tcp | None:
    """The TCP segment of an Ethernet/IPv4 record; payload up to the IPv4 length (GSO: to the end)."""
    if len(data) < ETH + 20 or data[12:14] != b"\x08\x00" or data[ETH] >> 4 != 4:
        return None
    ihl = (data[ETH] & 0x0F) * 4
    if data[ETH + 9] != 6:
        return None
    t = ETH + ihl
    if len(data) < t + 20:
        return None
    (ip_len,) = struct.unpack_from(">H", data, ETH + 2)
    sport, dport, seq, ack, off, flags = struct.unpack_from(">HHIIBB", data, t)
    hdr = t + (off >> 4) * 4
    end = ETH + ip_len if ip_len and ETH + ip_len <= len(data) and len(data) - ETH <= 65535 else len(data)
    src_ip, dst_ip = data[ETH + 12 : ETH + 16], data[ETH + 16 : ETH + 20]
    return Tcp((src_ip, sport), (dst_ip, dport), seq, ack, flags, hdr, data[hdr:end])


def rebuild(rec: Rec, seq: int, payload: bytes, flags: int | None = None) -> Rec:
    """A copy of `rec` carrying `payload` at `seq` (same headers, new IPv4 length and header checksum)."""
    t = parse(rec.data)
    assert t is not None
    head = bytearray(rec.data[: t.hdr_len])
    ihl = (head[ETH] & 0x0F) * 4
    tcp_at = ETH + ihl
    ip_len = t.hdr_len - ETH + len(payload)
    struct.pack_into(">H", head, ETH + 2, ip_len if ip_len <= 0xFFFF else 0)
    struct.pack_into(">I", head, tcp_at + 4, seq & 0xFFFFFFFF)
    if flags is not None:
        head[tcp_at + 13] = flags
    struct.pack_into(">H", head, ETH + 10, 0)
    struct.pack_into(">H", head, ETH + 10, _ip_checksum(bytes(head[ETH : ETH + ihl])))
    data = bytes(head) + payload
    return replace(rec, data=data, orig_len=len(data))


def _ip_checksum(h: bytes) -> int:
    s = sum(struct.unpack(f">{len(h) // 2}H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


# -- choosing places --------------------------------------------------------------------------------
def data_indexes(recs: list[Rec]) -> list[int]:
    """Indexes of the records that carry TCP payload."""
    return [i for i, r in enumerate(recs) if (t := r.tcp()) is not None and t.payload]


def next_same_direction(recs: list[Rec], i: int) -> int | None:
    """Index of the next data record after `i` sent the same way on the same connection."""
    t = recs[i].tcp()
    assert t is not None
    for j in range(i + 1, len(recs)):
        u = recs[j].tcp()
        if u is not None and u.payload and u.src == t.src and u.dst == t.dst:
            return j
    return None


def _acks_beyond(recs: list[Rec], lo: int, hi: int, t: Tcp) -> bool:
    """Does a packet in recs[lo:hi] from the receiver acknowledge bytes at or past `t`'s start?"""
    for k in range(lo, hi):
        u = recs[k].tcp()
        if u is not None and u.src == t.dst and u.dst == t.src and u.flags & ACK:
            if (u.ack - t.seq) & 0xFFFFFFFF < 0x80000000 and u.ack != t.seq:
                return True
    return False


def spread(items: list[int], n: int) -> list[int]:
    """Up to `n` items taken evenly through `items`."""
    if len(items) <= n:
        return list(items)
    return [items[(k * len(items)) // n + len(items) // (2 * n)] for k in range(n)]


# -- the variants -----------------------------------------------------------------------------------
def _swappable(recs: list[Rec], i: int, j: int, across_acks: bool) -> bool:
    """May data segments i and j (the next one sent the same way) trade places?

    Without `across_acks`, nothing in between may acknowledge i (a receiver cannot
    acknowledge bytes it has not received). With it, the receiver's ACK of i may come in
    between (a capture can list packets out of their order on the wire: several capture
    queues, merged files) but j must not acknowledge anything the receiver sent in
    between: j would answer bytes the capture shows only after it.
    """
    t, u = recs[i].tcp(), recs[j].tcp()
    if t is None or u is None or u.seq != (t.seq + len(t.payload)) & 0xFFFFFFFF:
        return False
    if t.flags & (SYN | FIN | RST) or u.flags & (SYN | FIN | RST):
        return False
    acked = _acks_beyond(recs, i + 1, j + 1, t)
    if not across_acks:
        return not acked
    if not acked:
        return False
    for k in range(i + 1, j):
        m = recs[k].tcp()
        if m is not None and m.src == t.dst and m.payload and u.flags & ACK:
            if (u.ack - m.seq) & 0xFFFFFFFF < 0x80000000 and u.ack != m.seq:
                return False  # j acknowledges the receiver's data in between
    return True


def out_of_order(recs: list[Rec], places: int = 6, across_acks: bool = False) -> tuple[list[Rec], int]:
    """Segments of one direction that arrive in the wrong order, in `places` places.

    Consecutive data segments of one direction are swapped (see `_swappable`; with
    `across_acks` only pairs that straddle the receiver's ACK of the first). Without
    `across_acks`, request/response traffic has few such pairs, so the rest of the places
    are made by cutting a data segment in two and sending its second half first.
    Returns the records and the number of reorderings (each one holds one segment back).
    """
    recs = list(recs)
    pairs = []
    for i in data_indexes(recs):
        j = next_same_direction(recs, i)
        if j is not None and _swappable(recs, i, j, across_acks):
            pairs.append((i, j))
    used: set[int] = set()
    done = 0
    for i, j in spread(pairs, places * 2):
        if done == (places if across_acks else places // 2):
            break
        if used & set(range(i - 1, j + 2)):
            continue
        recs[i], recs[j] = recs[j], recs[i]
        used |= set(range(i, j + 1))
        done += 1
    if across_acks:
        return recs, done
    singles = [i for i in data_indexes(recs) if i not in used and len(recs[i].tcp().payload) >= 2]  # type: ignore[union-attr]
    for i in sorted(spread(singles, places - done), reverse=True):
        r = recs[i]
        t = r.tcp()
        assert t is not None
        k = len(t.payload) // 2
        first = rebuild(r, t.seq, t.payload[:k], t.flags & ~FIN)
        second = rebuild(r, t.seq + k, t.payload[k:])
        recs[i : i + 1] = [second, first]
        done += 1
    return recs, done


def retransmitted(recs: list[Rec], dups: int = 4) -> tuple[list[Rec], int, int]:
    """Exact copies of `dups` data segments, each re-sent just after the next segment sent the
    same way (never past the end of the connection), plus one partial retransmission.

    The partial one: a data segment A followed (same direction) by B is re-sent as one
    segment holding A's bytes and the first bytes of B, just before B. Returns the
    records, the number of exact copies and of partial retransmissions made.
    """
    out = list(recs)
    idx = data_indexes(out)

    def followed(i: int) -> bool:
        j = next_same_direction(out, i)
        u = out[j].tcp() if j is not None else None
        return u is not None and not u.flags & (FIN | RST)

    picks = spread([i for i in idx if followed(i)], dups)
    # Insert from the back so earlier indexes stay valid.
    for i in sorted(picks, reverse=True):
        j = next_same_direction(out, i)
        out.insert(j + 1 if j is not None else len(out), out[i])
    partial = 0
    for i in data_indexes(out)[len(idx) // 3 :]:
        j = next_same_direction(out, i)
        if j is None:
            continue
        a, b = out[i].tcp(), out[j].tcp()
        assert a is not None and b is not None
        if a.payload == b.payload or b.seq != (a.seq + len(a.payload)) & 0xFFFFFFFF or len(b.payload) < 2:
            continue
        extra = b.payload[: max(1, len(b.payload) // 2)]
        out.insert(j, rebuild(out[i], a.seq, a.payload + extra))
        partial = 1
        break
    return out, len(picks), partial


def tiny_segments(recs: list[Rec], sizes: tuple[int, ...] = (1, 7, 3, 5, 2, 6, 4)) -> list[Rec]:
    """Every data segment cut into pieces of 1–7 bytes with consecutive sequence numbers.

    FIN (if any) stays on the last piece; each piece keeps the origin packet number.
    """
    out: list[Rec] = []
    k = 0
    for r in recs:
        t = r.tcp()
        if t is None or not t.payload or t.flags & SYN:
            out.append(r)
            continue
        pos = 0
        while pos < len(t.payload):
            n = sizes[k % len(sizes)]
            k += 1
            piece = t.payload[pos : pos + n]
            last = pos + n >= len(t.payload)
            flags = t.flags if last else t.flags & ~FIN
            out.append(rebuild(r, t.seq + pos, piece, flags))
            pos += n
    return out


def losable(recs: list[Rec]) -> list[int]:
    """Origin numbers of data packets whose loss the capture would show: the connection goes on
    in that direction afterwards and the receiver later acknowledges the packet's bytes."""
    out = []
    for i in data_indexes(recs):
        t = recs[i].tcp()
        assert t is not None
        if t.flags & (SYN | FIN | RST) or next_same_direction(recs, i) is None:
            continue
        if _acks_beyond(recs, i + 1, len(recs), t):
            out.append(recs[i].orig)
    return out


def drop(recs: list[Rec], origs: set[int]) -> list[Rec]:
    """The records without those of the given origin numbers."""
    return [r for r in recs if r.orig not in origs]
