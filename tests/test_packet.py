"""parse_tcp on scapy-built records of every supported link type, IPv4 and IPv6."""

from __future__ import annotations

import struct

import pytest
from crafted import ETHERNET, IPV4, IPV6, LOOP, NULL, RAW, SLL, SLL2, link, tcp
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.inet6 import IPv6, IPv6ExtHdrFragment
from scapy.layers.l2 import ARP, Ether

from wiredump.dissect.packet import SUPPORTED_LINKTYPES, Segment, parse_tcp

PAYLOAD = b"\x00\x00\x00\x10kafka-request!!"


def _check(
    seg: Segment | None, src: str = "10.0.0.1", dst: str = "10.0.0.2", payload: bytes = PAYLOAD
) -> None:
    assert seg is not None
    assert (seg.src, seg.dst, seg.sport, seg.dport) == (src, dst, 40000, 9092)
    assert (seg.seq, seg.ack, seg.flags) == (1000, 1, 0x18)  # PSH|ACK
    assert seg.payload == payload
    assert seg.missing == 0


@pytest.mark.parametrize("linktype", [ETHERNET, SLL, SLL2, NULL, LOOP, RAW, 12, 14, IPV4])
def test_ipv4_on_every_link_type(linktype: int) -> None:
    _check(parse_tcp(linktype, link(linktype, tcp(payload=PAYLOAD))))


@pytest.mark.parametrize("linktype", [ETHERNET, SLL, SLL2, NULL, LOOP, RAW, IPV6])
def test_ipv6_on_every_link_type(linktype: int) -> None:
    _check(
        parse_tcp(linktype, link(linktype, tcp("fd00::1", "fd00::2", payload=PAYLOAD))), "fd00::1", "fd00::2"
    )


@pytest.mark.parametrize("af", [10, 24, 28, 30])
def test_loopback_ipv6_address_families(af: int) -> None:
    ip6 = tcp("::1", "::1", payload=PAYLOAD)
    _check(parse_tcp(NULL, link(NULL, ip6, af=af)), "::1", "::1")
    _check(parse_tcp(LOOP, link(LOOP, ip6, af=af)), "::1", "::1")


def test_null_loopback_written_big_endian() -> None:
    # A big-endian host writes the address family as 00 00 00 02.
    rec = struct.pack(">I", 2) + bytes(tcp(payload=PAYLOAD))
    _check(parse_tcp(NULL, rec))


def test_null_unknown_family_is_not_tcp() -> None:
    assert parse_tcp(NULL, struct.pack("<I", 7) + bytes(tcp(payload=PAYLOAD))) is None


@pytest.mark.parametrize(
    ("vlans", "qinq"), [((100,), False), ((5, 7), True), ((5, 7), False), ((1, 2, 3), False)]
)
def test_vlan_tags(vlans: tuple[int, ...], qinq: bool) -> None:
    rec = link(ETHERNET, tcp(payload=PAYLOAD), vlans=vlans, qinq=qinq)
    assert len(rec) == 14 + 4 * len(vlans) + 20 + 20 + len(PAYLOAD)
    _check(parse_tcp(ETHERNET, rec))


def test_vlan_ipv6() -> None:
    _check(parse_tcp(ETHERNET, link(ETHERNET, tcp("::1", "::2", payload=PAYLOAD), vlans=(9,))), "::1", "::2")


def test_vlan_tpid_0x9100() -> None:
    inner = bytes(tcp(payload=PAYLOAD))
    rec = b"\0" * 12 + struct.pack(">HHH", 0x9100, 3, 0x0800) + inner
    _check(parse_tcp(ETHERNET, rec))


@pytest.mark.parametrize("ext", [("hop",), ("routing",), ("dest",), ("hop", "routing", "dest")])
def test_ipv6_extension_headers(ext: tuple[str, ...]) -> None:
    _check(
        parse_tcp(ETHERNET, link(ETHERNET, tcp("fd00::1", "fd00::2", payload=PAYLOAD, ext=ext))),
        "fd00::1",
        "fd00::2",
    )


def test_ipv6_fragment_is_skipped_but_atomic_fragment_is_read() -> None:
    t = TCP(sport=40000, dport=9092, seq=1000, ack=1, flags="PA") / PAYLOAD
    frag = IPv6(src="::1", dst="::2") / IPv6ExtHdrFragment(offset=0, m=1, id=5) / t
    assert parse_tcp(RAW, bytes(frag)) is None
    atomic = IPv6(src="::1", dst="::2") / IPv6ExtHdrFragment(offset=0, m=0, id=5) / t
    _check(parse_tcp(RAW, bytes(atomic)), "::1", "::2")


def test_ipv4_fragments_are_not_tcp_segments() -> None:
    t = TCP(sport=40000, dport=9092, seq=1000, ack=1, flags="PA") / PAYLOAD
    first = IP(src="10.0.0.1", dst="10.0.0.2", flags="MF") / t
    later = IP(src="10.0.0.1", dst="10.0.0.2", frag=3, proto=6) / PAYLOAD
    assert parse_tcp(RAW, bytes(first)) is None
    assert parse_tcp(RAW, bytes(later)) is None
    dont_fragment = IP(src="10.0.0.1", dst="10.0.0.2", flags="DF") / t
    _check(parse_tcp(RAW, bytes(dont_fragment)))


def test_ipv4_options_and_tcp_options() -> None:
    pkt = tcp(
        payload=PAYLOAD,
        ip_options=b"\x01\x01\x01\x00",
        tcp_options=[("MSS", 1460), ("NOP", None), ("WScale", 7)],
    )
    rec = link(ETHERNET, pkt)
    assert rec[14] == 0x46  # IHL 6
    assert rec[14 + 24 + 12] >> 4 == 7  # TCP data offset 28 bytes (MSS 4 + NOP 1 + WScale 3)
    _check(parse_tcp(ETHERNET, rec))
    _check(parse_tcp(RAW, bytes(pkt)))


def test_trailing_link_padding_is_ignored() -> None:
    # As in go-sniffer-kafka.pcap: the record holds 16 zero bytes after the IP datagram.
    for lt in (ETHERNET, SLL):
        _check(parse_tcp(lt, link(lt, tcp(payload=PAYLOAD)) + b"\0" * 16))
    # Ethernet minimum-size padding on an empty ACK.
    seg = parse_tcp(ETHERNET, link(ETHERNET, tcp(flags="A")) + b"\0" * 6)
    assert seg is not None and seg.payload == b"" and seg.flags == 0x10
    seg6 = parse_tcp(ETHERNET, link(ETHERNET, tcp("::1", "::2", payload=b"abc")) + b"\xff" * 8)
    assert seg6 is not None and seg6.payload == b"abc"


def test_snap_length_cut_counts_missing_bytes() -> None:
    body = bytes(range(256)) * 4
    for lt, src, dst in (
        (ETHERNET, "10.0.0.1", "10.0.0.2"),
        (SLL, "10.0.0.1", "10.0.0.2"),
        (ETHERNET, "::1", "::2"),
    ):
        rec = link(lt, tcp(src, dst, payload=body))
        seg = parse_tcp(lt, rec[:-700])
        assert seg is not None
        assert seg.payload == body[:-700]
        assert seg.missing == 700


def test_snap_cut_inside_tcp_header_is_not_a_segment() -> None:
    rec = link(ETHERNET, tcp(payload=PAYLOAD))
    assert parse_tcp(ETHERNET, rec[: 14 + 20 + 10]) is None
    assert parse_tcp(ETHERNET, rec[:20]) is None
    assert parse_tcp(ETHERNET, b"") is None


def _gso_record(total_len_field: int, payload_len: int) -> bytes:
    """Ethernet + IPv4 + TCP carrying more than an IPv4 length can say (loopback GSO)."""
    pkt = IP(src="127.0.0.1", dst="127.0.0.1", len=total_len_field) / TCP(sport=1, dport=2, seq=7, flags="PA")
    return bytes(Ether() / pkt) + (b"0123456789" * (payload_len // 10 + 1))[:payload_len]


@pytest.mark.parametrize("field", [0, 65535, (20 + 20 + 70000) & 0xFFFF])
def test_gso_record_larger_than_ip_length_uses_captured_length(field: int) -> None:
    rec = _gso_record(field, 70000)
    assert len(rec) > 65535
    seg = parse_tcp(ETHERNET, rec)
    assert seg is not None
    assert len(seg.payload) == 70000 and seg.missing == 0
    assert seg.payload[:3] == b"012"


def test_ipv4_total_length_zero_takes_captured_length() -> None:
    rec = _gso_record(0, 100)
    seg = parse_tcp(ETHERNET, rec)
    assert seg is not None and len(seg.payload) == 100


def test_ipv6_payload_length_zero_takes_captured_length() -> None:
    raw = bytes(IPv6(src="::1", dst="::1", plen=0) / TCP(sport=1, dport=2)) + b"z" * 70000
    seg = parse_tcp(RAW, raw)
    assert seg is not None and seg.payload == b"z" * 70000


@pytest.mark.parametrize(
    ("linktype", "rec"),
    [
        (ETHERNET, bytes(Ether() / ARP())),
        (ETHERNET, bytes(Ether() / IP() / UDP(sport=1, dport=2) / b"x")),
        (RAW, bytes(IPv6() / UDP() / b"x")),
        (RAW, b"\x50" + b"\0" * 39),
        (SLL2, b"\x08\x06" + b"\0" * 30),
        (147, bytes(tcp(payload=b"x"))),  # a user link type: not supported
    ],
)
def test_not_tcp(linktype: int, rec: bytes) -> None:
    assert parse_tcp(linktype, rec) is None


def test_bad_header_lengths_are_not_segments() -> None:
    rec = bytearray(link(ETHERNET, tcp(payload=PAYLOAD)))
    rec[14] = 0x44  # IHL 16 bytes < 20
    assert parse_tcp(ETHERNET, bytes(rec)) is None
    rec = bytearray(link(ETHERNET, tcp(payload=PAYLOAD)))
    rec[14 + 20 + 12] = 0x40  # TCP data offset 16 bytes < 20
    assert parse_tcp(ETHERNET, bytes(rec)) is None
    rec = bytearray(link(ETHERNET, tcp(payload=PAYLOAD)))
    rec[14 + 20 + 12] = 0xF0  # TCP data offset 60 bytes, beyond the datagram
    assert parse_tcp(ETHERNET, bytes(rec)) is None


def test_flags_and_sequence_numbers_full_range() -> None:
    pkt = tcp(seq=0xFFFFFFFF, ack=0xFFFFFFFE, flags="FSRPAU")
    seg = parse_tcp(ETHERNET, link(ETHERNET, pkt))
    assert seg is not None
    assert (seg.seq, seg.ack, seg.flags) == (0xFFFFFFFF, 0xFFFFFFFE, 0x3F)


def test_supported_linktypes() -> None:
    assert {0, 1, 12, 14, 101, 108, 113, 228, 229, 276} <= SUPPORTED_LINKTYPES
    assert 147 not in SUPPORTED_LINKTYPES
