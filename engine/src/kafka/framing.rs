//! Where Kafka frames start: the header checks framing and resynchronisation rely on (the
//! free functions of `wiredump/dissect/protocols/kafka/session.py`, same verdicts).
//!
//! Kafka frames are `[int32 size][header][body]`; a request names its api key and version, a
//! response only its correlation id. Nothing marks a frame's start, so a start is believed
//! when what follows reads as a frame of the right kind: a known (key, version), a text client
//! id, a frame end that coincides with the bytes' end or with the next frame's start. Every
//! read here is bounds-checked; nothing is allocated on a declared length.

use super::{body, header, schema};
use crate::printable::is_printable;

pub const MIB: i64 = 1024 * 1024;
/// socket.request.max.bytes (100 MiB) plus the 4-byte size prefix.
pub const MAX_FRAME: i64 = 100 * MIB + 4;
pub const MAX_CLIENT_ID: i64 = 4096;
/// RFC 8446 / 5246: a TLS record's plaintext limit plus expansion.
pub const TLS_MAX_RECORD: usize = 16384 + 2048;
/// How far past the newest known version a first request may be and still be taken as Kafka.
pub const NEWER_VERSIONS: i16 = 8;
/// Bounds of the api key and version a request header may carry and still be taken as one
/// when its body does not decode.
pub const MAX_FRAMED_KEY: i16 = 1000;
pub const MAX_FRAMED_VERSION: i16 = 200;
pub const MAX_SCAN_AHEAD: usize = 64 * 1024;

/// A three-way answer: the bytes are (not) a frame start, or it cannot be told yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Yes,
    No,
    Wait,
}

/// The TLS content type's name (20..=24), or None when the byte is not one.
pub fn tls_type(b: u8) -> Option<&'static str> {
    match b {
        20 => Some("ChangeCipherSpec"),
        21 => Some("Alert"),
        22 => Some("Handshake"),
        23 => Some("ApplicationData"),
        24 => Some("Heartbeat"),
        _ => None,
    }
}

pub fn i16_at(b: &[u8], p: usize) -> Option<i16> {
    Some(i16::from_be_bytes(b.get(p..p + 2)?.try_into().ok()?))
}

pub fn i32_at(b: &[u8], p: usize) -> Option<i32> {
    Some(i32::from_be_bytes(b.get(p..p + 4)?.try_into().ok()?))
}

/// CRC-32 (IEEE, zlib's) of a legacy message.
pub fn crc32(data: &[u8]) -> u32 {
    let mut h = flate2::Crc::new();
    h.update(data);
    h.sum()
}

fn u32_at(b: &[u8], p: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(p..p + 4)?.try_into().ok()?))
}

/// UTF-8 text: printable characters and tabs (client ids are free text; some hold a tab).
fn utf8_text(s: &[u8]) -> bool {
    match std::str::from_utf8(s) {
        Ok(t) => t.chars().all(|c| c == '\t' || is_printable(c)),
        Err(_) => false,
    }
}

/// Some(true/false) when the int16-length client id at buf[pos] is (not) plausible, None if cut.
pub fn plausible_client_id(buf: &[u8], pos: usize, end: usize) -> Option<bool> {
    if pos + 2 > end {
        return None;
    }
    let n = i64::from(i16_at(buf, pos)?);
    if n == -1 {
        return Some(true);
    }
    if !(0..=MAX_CLIENT_ID).contains(&n) {
        return Some(false);
    }
    let stop = (pos + 2 + n as usize).min(end).min(buf.len());
    let s = buf.get(pos + 2..stop.max(pos + 2)).unwrap_or(&[]);
    Some(s.iter().all(|b| (32..127).contains(b)) || utf8_text(s))
}

/// Is (key, version) in the Kafka specs?
pub fn known_request(key: i16, version: i16) -> bool {
    schema::known(key, version)
}

/// Does buf[pos..] start like a Kafka request frame? `strict` (sniffing, resynchronising):
/// known key, valid version, correlation id >= 0, a client id that reads as text. Not strict
/// (framing a stream already in sync): a key and version in a sane range.
pub fn plausible_request(buf: &[u8], pos: usize, strict: bool) -> bool {
    let avail = buf.len().saturating_sub(pos);
    if avail < 12 {
        if avail >= 8 {
            let size = i64::from(i32_at(buf, pos).unwrap_or(0));
            let key = i16_at(buf, pos + 4).unwrap_or(-1);
            let version = i16_at(buf, pos + 6).unwrap_or(-1);
            return (8..=MAX_FRAME - 4).contains(&size)
                && if strict {
                    known_request(key, version)
                } else {
                    (0..1000).contains(&key)
                };
        }
        return false;
    }
    let (Some(size), Some(key), Some(version), Some(corr)) = (
        i32_at(buf, pos),
        i16_at(buf, pos + 4),
        i16_at(buf, pos + 6),
        i32_at(buf, pos + 8),
    ) else {
        return false;
    };
    let size = i64::from(size);
    if !(8..=MAX_FRAME - 4).contains(&size) {
        return false;
    }
    if !known_request(key, version)
        && (strict || !((0..1000).contains(&key) && (0..200).contains(&version)))
    {
        return false;
    }
    if strict && corr < 0 {
        return false;
    }
    if schema::request_header_version(key, version) == 0 {
        return true;
    }
    if size < 10 {
        return false;
    }
    let end = buf.len().min(pos + 4 + size as usize);
    plausible_client_id(buf, pos + 12, end) != Some(false)
}

/// A TLS record header at `at` whose record ends where the bytes end or where another starts.
pub fn tls_chain(buf: &[u8], at: usize) -> bool {
    let end = buf.len();
    if at + 5 > end || buf[at + 2] > 4 {
        return false;
    }
    let length = (usize::from(buf[at + 3]) << 8) | usize::from(buf[at + 4]);
    if length > TLS_MAX_RECORD {
        return false;
    }
    let nxt = at + 5 + length;
    if nxt == end {
        return true;
    }
    nxt + 3 <= end && tls_type(buf[nxt]).is_some() && buf[nxt + 1] == 3 && buf[nxt + 2] <= 4
}

/// Do buf[pos..end] hold exactly a run of record batches / legacy messages (a records field,
/// `[int32 size][batches]`, shaped like a response whose correlation id is the high half of
/// the first base offset)?
pub fn record_set(buf: &[u8], mut pos: usize, end: usize) -> bool {
    if end < pos + 21 || end > buf.len() {
        return false;
    }
    while pos < end {
        if pos + 17 > end {
            return false;
        }
        let length = i64::from(i32_at(buf, pos + 8).unwrap_or(-1));
        if length < 5 || buf[pos + 16] > 2 {
            return false;
        }
        pos += 12 + length as usize;
    }
    pos == end
}

/// Is buf[pos..end] a record batch (v2) or legacy message from its length field on? Its
/// checksum over the rest tells it apart from a frame.
pub fn batch_tail(buf: &[u8], pos: usize, end: usize) -> bool {
    if end < pos + 14 || end > buf.len() {
        return false;
    }
    let magic = buf[pos + 8];
    if magic > 2 {
        return false;
    }
    if magic == 2 {
        let Some(stored) = u32_at(buf, pos + 9) else {
            return false;
        };
        return crc32c::crc32c(&buf[pos + 13..end]) == stored;
    }
    let Some(stored) = u32_at(buf, pos + 4) else {
        return false;
    };
    crc32(&buf[pos + 8..end]) == stored
}

/// A known API at a version newer than the tables (a client from the future), text client id.
pub fn newer_request(buf: &[u8], pos: usize) -> bool {
    if buf.len() < pos + 14 {
        return false;
    }
    let size = i64::from(i32_at(buf, pos).unwrap_or(0));
    let key = i16_at(buf, pos + 4).unwrap_or(-1);
    let version = i16_at(buf, pos + 6).unwrap_or(-1);
    let corr = i32_at(buf, pos + 8).unwrap_or(-1);
    let Some(newest) = schema::newest_version(key) else {
        return false;
    };
    if !(newest < version && i32::from(version) <= i32::from(newest) + i32::from(NEWER_VERSIONS))
        || corr < 0
        || !(10..=MAX_FRAME - 4).contains(&size)
    {
        return false;
    }
    let n = i64::from(i16_at(buf, pos + 12).unwrap_or(0));
    let end = pos as i64 + 14 + n;
    (1..=MAX_CLIENT_ID).contains(&n)
        && end <= buf.len() as i64
        && end <= pos as i64 + 4 + size
        && plausible_client_id(buf, pos + 12, end as usize) == Some(true)
}

/// Length of the plausible request header v1 at buf[pos] (size, key, version, correlation id,
/// text client id), or 0 when it is not one or is not all buffered.
pub fn framed_header(buf: &[u8], pos: usize) -> usize {
    let end = buf.len();
    if end < pos + 14 {
        return 0;
    }
    let size = i64::from(i32_at(buf, pos).unwrap_or(0));
    let key = i16_at(buf, pos + 4).unwrap_or(-1);
    let version = i16_at(buf, pos + 6).unwrap_or(-1);
    let corr = i32_at(buf, pos + 8).unwrap_or(-1);
    if !((10..=MAX_FRAME - 4).contains(&size)
        && (0..MAX_FRAMED_KEY).contains(&key)
        && (0..MAX_FRAMED_VERSION).contains(&version))
    {
        return 0;
    }
    if corr < 0 {
        return 0;
    }
    let n = i64::from(i16_at(buf, pos + 12).unwrap_or(0));
    let head = 14 + n.max(0);
    if !(-1..=MAX_CLIENT_ID).contains(&n) || head > 4 + size || pos as i64 + head > end as i64 {
        return 0;
    }
    let head = head as usize;
    if n > 0 && plausible_client_id(buf, pos + 12, pos + head) != Some(true) {
        return 0;
    }
    head
}

/// A request whose framing is valid although its body is not what the tables expect: a
/// plausible header, and the frame ends where the bytes end or where another plausible request
/// header starts. Wait while that cannot be told, unless a request that decodes whole starts
/// inside the bytes this one would cover (then this one is a chance match inside another).
pub fn framed_request(buf: &[u8], pos: usize) -> Verdict {
    if framed_header(buf, pos) == 0 {
        return if buf.len() < pos + 14 {
            Verdict::Wait
        } else {
            Verdict::No
        };
    }
    let size = i32_at(buf, pos).unwrap_or(0) as usize;
    let nxt = pos + 4 + size;
    let end = buf.len();
    if nxt <= end && (record_set(buf, pos + 4, nxt) || batch_tail(buf, pos, nxt)) {
        return Verdict::No; // the records field ending a Produce request
    }
    if nxt == end {
        return Verdict::Yes;
    }
    if nxt > end {
        let stop = end.min(pos + 1 + MAX_SCAN_AHEAD);
        return if whole_request_within(buf, pos + 1, stop) {
            Verdict::No
        } else {
            Verdict::Wait
        };
    }
    if end - nxt < 14 {
        return Verdict::Wait;
    }
    if framed_header(buf, nxt) > 0 {
        Verdict::Yes
    } else {
        Verdict::No
    }
}

/// Does a request that decodes whole (known key and version) start in buf[start..stop]?
pub fn whole_request_within(buf: &[u8], start: usize, stop: usize) -> bool {
    let mut at = start;
    while at + 13 < stop {
        if plausible_request(buf, at, true) {
            let size = i32_at(buf, at).unwrap_or(0) as usize;
            let key = i16_at(buf, at + 4).unwrap_or(-1);
            let version = i16_at(buf, at + 6).unwrap_or(-1);
            if at + 4 + size <= buf.len() && request_fits(&buf[at..at + 4 + size], key, version) {
                return true;
            }
        }
        at += 1;
    }
    false
}

/// Does `data` (a whole frame) decode exactly as a request of (key, version)? Record sets are
/// not looked into.
pub fn request_fits(data: &[u8], key: i16, version: i16) -> bool {
    let Some(plan) = schema::plan(key, version, false) else {
        return false;
    };
    let Ok(h) = header::request_header(data, schema::request_header_version(key, version)) else {
        return false;
    };
    let c = body::check_body(data, h.body_start, plan, body::MAX_ELEMENTS);
    c.error.is_none() && c.end == data.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Metadata v1 request for topic "t", client id "cli", correlation id 7 (by hand).
    fn metadata_v1() -> Vec<u8> {
        let mut b = vec![0, 3, 0, 1, 0, 0, 0, 7, 0, 3, b'c', b'l', b'i'];
        b.extend([0, 0, 0, 1, 0, 1, b't']);
        let mut f = (b.len() as i32).to_be_bytes().to_vec();
        f.extend(b);
        f
    }

    #[test]
    fn a_request_by_hand() {
        let f = metadata_v1();
        assert!(plausible_request(&f, 0, true));
        assert!(request_fits(&f, 3, 1));
        assert!(!request_fits(&f[..f.len() - 1], 3, 1));
        assert_eq!(framed_header(&f, 0), 17);
        assert_eq!(framed_request(&f, 0), Verdict::Yes);
        // An unknown key is not strict-plausible, but frames once in sync.
        let mut g = f.clone();
        g[5] = 200;
        assert!(!plausible_request(&g, 0, true));
        assert!(plausible_request(&g, 0, false));
        // A client id with a control byte is not text.
        let mut h = f.clone();
        h[15] = 1;
        assert!(!plausible_request(&h, 0, true));
    }

    #[test]
    fn tls_and_record_tails() {
        // Handshake record of 2 bytes, then an Alert header.
        let b = [22, 3, 3, 0, 2, 1, 1, 21, 3, 3];
        assert!(tls_chain(&b, 0));
        assert!(!tls_chain(&b[..9], 0));
        // A legacy message: offset, length 14, crc over magic..end, magic 0, attrs, key -1, value -1.
        let body = [0u8, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        let mut m = vec![0u8; 8];
        m.extend(14i32.to_be_bytes());
        m.extend(crc32(&body).to_be_bytes());
        m.extend(body);
        assert!(record_set(&m, 0, m.len()));
        assert!(batch_tail(&m, 8, m.len()));
        m[20] ^= 1;
        assert!(!batch_tail(&m, 8, m.len()));
    }
}
