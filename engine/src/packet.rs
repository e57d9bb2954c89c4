//! Per-packet header parsing: from a link-layer record to the TCP segment it carries.
//!
//! A port of `wiredump/dissect/packet.py` (the reference). Lengths follow the IP header, not the
//! record: link-layer padding after the datagram is dropped, and bytes the headers declare but
//! the snap length cut off are counted in [`Segment::missing`]. Loopback captures with
//! segmentation offload carry datagrams larger than the 16-bit IP length field can say (it then
//! holds 0, 65,535 or a wrapped value); such records are taken at their captured length.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

pub const FIN: u8 = 0x01;
pub const SYN: u8 = 0x02;
pub const RST: u8 = 0x04;
pub const ACK: u8 = 0x10;

const LT_NULL: u32 = 0;
const LT_ETHERNET: u32 = 1;
const LT_RAW_12: u32 = 12;
const LT_RAW_14: u32 = 14;
const LT_RAW: u32 = 101;
const LT_LOOP: u32 = 108;
const LT_LINUX_SLL: u32 = 113;
const LT_IPV4: u32 = 228;
const LT_IPV6: u32 = 229;
const LT_LINUX_SLL2: u32 = 276;

const ETH_IPV4: u16 = 0x0800;
const ETH_IPV6: u16 = 0x86DD;
const MAX_VLAN_TAGS: usize = 8;
const MAX_IPV6_EXT: usize = 16;
const PROTO_TCP: u8 = 6;
const IPV6_FRAGMENT: u8 = 44;

/// Whether records of this link type are read (others are counted and skipped).
pub fn linktype_supported(lt: u32) -> bool {
    matches!(
        lt,
        LT_NULL
            | LT_ETHERNET
            | LT_RAW_12
            | LT_RAW_14
            | LT_RAW
            | LT_LOOP
            | LT_LINUX_SLL
            | LT_IPV4
            | LT_IPV6
            | LT_LINUX_SLL2
    )
}

/// An IP address as captured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    V4([u8; 4]),
    V6([u8; 16]),
}

impl fmt::Display for Addr {
    /// The text `socket.inet_ntop` (glibc) gives, which the reference shows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::V4(a) => write!(f, "{}", Ipv4Addr::from(*a)),
            Addr::V6(a) => {
                // glibc keeps the deprecated IPv4-compatible form (::a.b.c.d) that Rust drops.
                if a[..12].iter().all(|&b| b == 0) && (a[12] != 0 || a[13] != 0) {
                    return write!(f, "::{}.{}.{}.{}", a[12], a[13], a[14], a[15]);
                }
                write!(f, "{}", Ipv6Addr::from(*a))
            }
        }
    }
}

/// One TCP segment as captured, the payload cut to the IP datagram's own length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment<'a> {
    pub src: Addr,
    pub dst: Addr,
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub payload: &'a [u8],
    /// Payload bytes the headers declare but the capture does not hold (snap length).
    pub missing: usize,
}

fn be16(d: &[u8], p: usize) -> u16 {
    u16::from_be_bytes([d[p], d[p + 1]])
}

fn be32(d: &[u8], p: usize) -> u32 {
    u32::from_be_bytes([d[p], d[p + 1], d[p + 2], d[p + 3]])
}

/// The TCP segment a link-layer record carries, or None for anything else (or unreadable).
pub fn parse_tcp(linktype: u32, data: &[u8]) -> Option<Segment<'_>> {
    let (pos, version) = network_offset(linktype, data)?;
    parse_ip(data, pos, version)
}

fn network_offset(linktype: u32, data: &[u8]) -> Option<(usize, u8)> {
    let n = data.len();
    match linktype {
        LT_ETHERNET => {
            if n < 14 {
                return None;
            }
            after_ethertype(data, 12)
        }
        LT_LINUX_SLL => {
            if n < 16 {
                return None;
            }
            after_ethertype(data, 14)
        }
        LT_LINUX_SLL2 => {
            if n < 20 {
                return None;
            }
            by_ethertype(be16(data, 0), 20)
        }
        LT_RAW | LT_RAW_12 | LT_RAW_14 => {
            let v = *data.first()? >> 4;
            (v == 4 || v == 6).then_some((0, v))
        }
        LT_IPV4 => Some((0, 4)),
        LT_IPV6 => Some((0, 6)),
        LT_NULL | LT_LOOP => {
            if n < 4 {
                return None;
            }
            let raw = [data[0], data[1], data[2], data[3]];
            let af = if linktype == LT_LOOP {
                u32::from_be_bytes(raw)
            } else {
                // Host byte order of the capturing machine: a small value has its nonzero byte at one end.
                let le = u32::from_le_bytes(raw);
                if le > 0xFFFF {
                    u32::from_be_bytes(raw)
                } else {
                    le
                }
            };
            match af {
                2 => Some((4, 4)),
                10 | 24 | 28 | 30 => Some((4, 6)),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Follow VLAN tags (802.1Q, QinQ) from the ethertype at `pos` to the network header.
fn after_ethertype(data: &[u8], mut pos: usize) -> Option<(usize, u8)> {
    let mut etype = be16(data, pos);
    pos += 2;
    let mut tags = 0;
    while matches!(etype, 0x8100 | 0x88A8 | 0x9100 | 0x9200) {
        tags += 1;
        if tags > MAX_VLAN_TAGS || pos + 4 > data.len() {
            return None;
        }
        etype = be16(data, pos + 2);
        pos += 4;
    }
    by_ethertype(etype, pos)
}

fn by_ethertype(etype: u16, pos: usize) -> Option<(usize, u8)> {
    match etype {
        ETH_IPV4 => Some((pos, 4)),
        ETH_IPV6 => Some((pos, 6)),
        _ => None,
    }
}

fn parse_ip(data: &[u8], pos: usize, version: u8) -> Option<Segment<'_>> {
    let n = data.len();
    if version == 4 {
        if pos + 20 > n {
            return None;
        }
        let vihl = data[pos];
        let mut tot = be16(data, pos + 2) as usize;
        let frag = be16(data, pos + 6);
        let proto = data[pos + 9];
        let ihl = ((vihl & 0x0F) as usize) << 2;
        if vihl >> 4 != 4 || ihl < 20 || proto != PROTO_TCP || frag & 0x3FFF != 0 {
            return None; // not TCP, or a fragment (no IP reassembly)
        }
        let cap = n - pos;
        if tot == 0 || (cap > 0xFFFF && tot < cap) {
            tot = cap; // segmentation offload
        }
        if tot < ihl {
            return None;
        }
        let mut s = [0u8; 4];
        let mut d = [0u8; 4];
        s.copy_from_slice(&data[pos + 12..pos + 16]);
        d.copy_from_slice(&data[pos + 16..pos + 20]);
        return tcp_header(data, pos + ihl, pos + tot, Addr::V4(s), Addr::V4(d));
    }
    if version == 6 {
        if pos + 40 > n {
            return None;
        }
        let mut plen = be16(data, pos + 4) as usize;
        let mut nxt = data[pos + 6];
        if data[pos] >> 4 != 6 {
            return None;
        }
        let mut s = [0u8; 16];
        let mut d = [0u8; 16];
        s.copy_from_slice(&data[pos + 8..pos + 24]);
        d.copy_from_slice(&data[pos + 24..pos + 40]);
        let cap = n - pos - 40;
        if plen == 0 || (cap > 0xFFFF && plen < cap) {
            plen = cap; // jumbogram or segmentation offload: take what was captured
        }
        let end = pos + 40 + plen;
        let mut p = pos + 40;
        for _ in 0..MAX_IPV6_EXT {
            if nxt == PROTO_TCP {
                return tcp_header(data, p, end, Addr::V6(s), Addr::V6(d));
            }
            if p + 8 > n {
                return None;
            }
            let hlen = match nxt {
                51 => (data[p + 1] as usize + 2) << 2,
                0 | 43 | 60 | 135 | 139 | 140 => (data[p + 1] as usize + 1) << 3,
                IPV6_FRAGMENT => {
                    if be16(data, p + 2) != 0 {
                        return None; // a fragment: no IP reassembly
                    }
                    8 // an atomic fragment holds the whole datagram
                }
                _ => return None,
            };
            nxt = data[p];
            p += hlen;
        }
        return None;
    }
    None
}

/// TCP header at `pos`; the IP datagram declares it ends at `end` (may lie beyond the capture).
fn tcp_header(data: &[u8], pos: usize, end: usize, src: Addr, dst: Addr) -> Option<Segment<'_>> {
    let n = data.len();
    if pos + 20 > n {
        return None;
    }
    let thl = ((data[pos + 12] >> 4) as usize) << 2;
    let start = pos + thl;
    if thl < 20 || start > n || end < start {
        return None;
    }
    let (end, missing) = if end > n { (n, end - n) } else { (end, 0) };
    Some(Segment {
        src,
        dst,
        sport: be16(data, pos),
        dport: be16(data, pos + 2),
        seq: be32(data, pos + 4),
        ack: be32(data, pos + 8),
        flags: data[pos + 13],
        payload: &data[start..end],
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ethernet + IPv4 (20 bytes) + TCP (20 bytes) + payload, built by hand.
    fn eth_ipv4_tcp(payload: &[u8], tot_extra: i32, pad: usize) -> Vec<u8> {
        let mut v = vec![0u8; 12];
        v.extend_from_slice(&[0x08, 0x00]);
        let tot = (40 + payload.len()) as i32 + tot_extra;
        v.extend_from_slice(&[
            0x45,
            0,
            (tot >> 8) as u8,
            tot as u8,
            0,
            0,
            0x40,
            0,
            64,
            6,
            0,
            0,
        ]);
        v.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2]);
        v.extend_from_slice(&[0x30, 0x39, 0x23, 0x84]); // 12345 -> 9092
        v.extend_from_slice(&1000u32.to_be_bytes());
        v.extend_from_slice(&2000u32.to_be_bytes());
        v.extend_from_slice(&[0x50, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
        v.extend_from_slice(payload);
        v.extend(std::iter::repeat_n(0xEE, pad));
        v
    }

    #[test]
    fn ethernet_ipv4_fields_and_padding_cut() {
        let rec = eth_ipv4_tcp(b"hello", 0, 6);
        let s = parse_tcp(1, &rec).expect("a segment");
        assert_eq!(s.src.to_string(), "10.0.0.1");
        assert_eq!(s.dst.to_string(), "10.0.0.2");
        assert_eq!(
            (s.sport, s.dport, s.seq, s.ack, s.flags),
            (12345, 9092, 1000, 2000, 0x18)
        );
        assert_eq!(s.payload, b"hello"); // the 6 padding bytes are not payload
        assert_eq!(s.missing, 0);
    }

    #[test]
    fn snap_cut_counts_missing_bytes() {
        let mut rec = eth_ipv4_tcp(b"0123456789", 0, 0);
        rec.truncate(rec.len() - 4);
        let s = parse_tcp(1, &rec).expect("a segment");
        assert_eq!((s.payload, s.missing), (&b"012345"[..], 4));
    }

    #[test]
    fn vlan_tags_and_fragments() {
        let plain = eth_ipv4_tcp(b"x", 0, 0);
        let mut tagged = plain[..12].to_vec();
        tagged.extend_from_slice(&[0x88, 0xa8, 0, 5, 0x81, 0x00, 0, 7]);
        tagged.extend_from_slice(&plain[12..]);
        assert_eq!(parse_tcp(1, &tagged).expect("QinQ").payload, b"x");
        let mut frag = plain.clone();
        frag[14 + 6] = 0x20; // more fragments
        assert!(parse_tcp(1, &frag).is_none());
        assert!(parse_tcp(1, &plain[..30]).is_none());
        assert!(parse_tcp(1, &[]).is_none());
    }

    #[test]
    fn ipv6_text_is_glibc_text() {
        let mut a = [0u8; 16];
        a[15] = 1;
        assert_eq!(Addr::V6(a).to_string(), "::1");
        a[10] = 0xff;
        a[11] = 0xff;
        a[12] = 10;
        assert_eq!(Addr::V6(a).to_string(), "::ffff:10.0.0.1");
        let mut c = [0u8; 16];
        c[12..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(Addr::V6(c).to_string(), "::1.2.3.4");
        let mut d = [0u8; 16];
        d[0] = 0xfd;
        d[15] = 2;
        assert_eq!(Addr::V6(d).to_string(), "fd00::2");
    }
}
