//! TANK bundles and the chunks of bundles Consume responses carry (the twin of
//! `protocols/tank/bundles.py`).
//!
//! A bundle is TANK's unit of storage and transfer: a flags byte (codec, message count, SPARSE),
//! optional count and sequence numbers, then a message set that may be one raw Snappy block.
//! Non-sparse bundles carry no sequence numbers at all: the caller supplies the first one (the
//! Consume partition entry's base, or the ProduceWithSeqnum base) and numbering runs on across
//! the bundles of a chunk. Everything is bounds-checked; problems are collected as
//! [`Problem`]s the caller turns into anomalies, so one bad bundle never costs the rest of a
//! frame. Sequence numbers are TANK's `uint64_t`: arithmetic on them wraps at 2^64, as in the
//! broker, the client and the reference.

use std::borrow::Cow;

use super::constants as C;
use super::cursor::{Cursor, Short};
use crate::codecs::{self, Limits};
use crate::model::{Fields, Span, Value};

/// `(kind, detail, offset in the frame)`: what went wrong, for the frame's anomalies.
pub type Problem = (Cow<'static, str>, String, Option<u64>);

pub fn malformed(detail: String, offset: Option<usize>) -> Problem {
    (Cow::Borrowed("malformed"), detail, offset.map(|o| o as u64))
}

/// A sequence number as a field value.
pub fn seq_value(v: u64) -> Value {
    Value::UInt(v)
}

/// One message of a bundle's message set; spans are frame offsets (None inside a compressed set).
#[derive(Clone, Debug)]
pub struct BundleMessage {
    pub seq: Option<u64>,
    pub flags: u8,
    pub timestamp_ms: Option<u64>,
    pub key: Option<Vec<u8>>,
    pub value: Vec<u8>,
    pub flags_span: Option<Span>,
    pub ts_span: Option<Span>,
    pub key_span: Option<Span>,
    pub value_span: Option<Span>,
}

#[derive(Debug)]
pub struct Bundle {
    pub fields: Fields,
    pub messages: Vec<BundleMessage>,
    /// Sequence number of the message that would follow this bundle.
    pub next_seq: Option<u64>,
    pub codec: Cow<'static, str>,
    pub problems: Vec<Problem>,
    /// Messages read from the set; more than `messages` holds once the frame's cap
    /// (`Limits::max_messages`) was reached: those were checked and counted, not kept.
    pub parsed: u64,
    /// Sequence numbers of the first and last message read (kept or not).
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
}

fn span(start: usize, end: usize) -> Option<Span> {
    Some(Span::new(start, end))
}

/// Decodes the bundle in `buf[start..end]`; `first_seq` numbers a non-sparse bundle. At most
/// `keep` messages are kept in `messages`; the rest are read and checked the same way and only
/// counted. Offsets in problems are offsets in `buf` (the frame).
pub fn decode_bundle(
    buf: &[u8],
    start: usize,
    end: usize,
    first_seq: Option<u64>,
    limits: &mut Limits,
    keep: u64,
) -> Bundle {
    let end = end.min(buf.len());
    let mut b = Bundle {
        fields: Fields::new(),
        messages: Vec::new(),
        next_seq: None,
        codec: Cow::Borrowed("none"),
        problems: Vec::new(),
        parsed: 0,
        first_seq: None,
        last_seq: None,
    };
    b.fields
        .set("length", Value::Int(end.saturating_sub(start) as i64));
    let mut c = Cursor::new(buf, start, end);
    let header = read_header(&mut c, &mut b, first_seq);
    let (codec, count, sparse, first_seq, last_seq) = match header {
        Ok(h) => h,
        Err(e) => {
            b.problems
                .push(malformed(format!("bundle header: {e}"), Some(e.offset)));
            return b;
        }
    };
    let msgset_at = c.pos;
    b.fields.set_span(
        "message_set_size",
        Value::Int(end.saturating_sub(msgset_at) as i64),
        None,
    );
    let next = next_after(first_seq, last_seq, count, sparse);
    match codec {
        0 => {
            decode_message_set(
                &mut b, buf, msgset_at, end, count, sparse, first_seq, last_seq, None, keep,
            );
        }
        1 => {
            let out = match codecs::snappy_raw(&buf[msgset_at.min(end)..end], limits) {
                Ok(out) => out,
                Err(p) => {
                    b.problems.push((
                        Cow::Borrowed(p.kind()),
                        format!("bundle at byte {start}: {}", p.detail()),
                        Some(msgset_at as u64),
                    ));
                    b.next_seq = next;
                    return b;
                }
            };
            b.fields
                .set("uncompressed_size", Value::Int(out.len() as i64));
            let n = out.len();
            decode_message_set(
                &mut b,
                &out,
                0,
                n,
                count,
                sparse,
                first_seq,
                last_seq,
                Some(msgset_at),
                keep,
            );
        }
        _ => {
            b.problems.push(malformed(
                format!("bundle at byte {start}: unknown codec {codec}"),
                Some(start),
            ));
        }
    }
    b.next_seq = next;
    b
}

/// The bundle header: (codec, message count, sparse, first seq, last seq).
#[allow(clippy::type_complexity)]
fn read_header(
    c: &mut Cursor<'_>,
    b: &mut Bundle,
    first_seq: Option<u64>,
) -> Result<(u8, u64, bool, Option<u64>, Option<u64>), Short> {
    let at = c.pos;
    let flags = c.u8("bundle flags")?;
    let codec = flags & C::CODEC_MASK;
    let mut count = u64::from((flags >> C::COUNT_SHIFT) & C::COUNT_MASK);
    let sparse = flags & C::SPARSE != 0;
    b.codec = match codec {
        0 => Cow::Borrowed("none"),
        1 => Cow::Borrowed("snappy"),
        n => Cow::Owned(format!("codec{n}")),
    };
    let f = &mut b.fields;
    f.set_span("flags", Value::Int(i64::from(flags)), c.span(at));
    f.set_span("codec", Value::Str(b.codec.to_string()), c.span(at));
    f.set_span("sparse", Value::Bool(sparse), c.span(at));
    if flags & C::EXTRA_FLAGS != 0 {
        // Layout from tank_encoding.md; TANK master neither writes nor reads it.
        let p = c.pos;
        let extra = c.u8("bundle extra flags")?;
        f.set_span("extra_flags", Value::Int(i64::from(extra)), c.span(p));
        if extra & C::EXTRA_RICH_PRODUCER != 0 {
            let p = c.pos;
            let v = c.u32le("partition leader epoch")?;
            f.set_span(
                "partition_leader_epoch",
                Value::Int(i64::from(v)),
                c.span(p),
            );
            let p = c.pos;
            let v = c.u64le("producer id")?;
            f.set_span("producer_id", Value::UInt(v), c.span(p));
            let p = c.pos;
            let v = c.u16le("producer epoch")?;
            f.set_span("producer_epoch", Value::Int(i64::from(v)), c.span(p));
        }
    }
    let mut count_span = c.span(at);
    if count == 0 {
        let p = c.pos;
        count = c.uvarint("bundle message count", 5)?;
        count_span = c.span(p);
    }
    f.set_span("message_count", Value::Int(count as i64), count_span);
    let mut first = first_seq;
    let mut last = None;
    if sparse {
        let p = c.pos;
        let s = c.u64le("sparse bundle first seqnum")?;
        let first_span = c.span(p);
        let p = c.pos;
        let l = if count != 1 {
            s.wrapping_add(c.uvarint("sparse bundle last seqnum delta", 5)?)
                .wrapping_add(1)
        } else {
            s
        };
        let last_span = if count != 1 { c.span(p) } else { None };
        f.set_span("first_seqnum", seq_value(s), first_span);
        f.set_span("last_seqnum", seq_value(l), last_span);
        first = Some(s);
        last = Some(l);
    }
    Ok((codec, count, sparse, first, last))
}

fn next_after(
    first_seq: Option<u64>,
    last_seq: Option<u64>,
    count: u64,
    sparse: bool,
) -> Option<u64> {
    if sparse {
        if let Some(l) = last_seq {
            return Some(l.wrapping_add(1));
        }
    }
    first_seq.map(|f| f.wrapping_add(count))
}

/// TANK's varint (unsigned LEB128, at most 5 bytes) at `p`: (value, next).
fn varint(
    data: &[u8],
    mut p: usize,
    end: usize,
    what: &'static str,
) -> Result<(u64, usize), Short> {
    let start = p;
    let mut value = 0u64;
    let mut shift = 0u32;
    while p < end && p - start < 5 {
        let byte = data[p];
        p += 1;
        value |= u64::from(byte & 0x7F) << shift;
        if byte & 0x80 == 0 {
            return Ok((value, p));
        }
        shift += 7;
    }
    Err(Short::new(
        what,
        start,
        (p - start + 1) as i64,
        end as i64 - start as i64,
    ))
}

/// Messages one after the other until the set ends (TANK iterates by bytes, as here). The
/// hottest loop of the decoder: reads `data` directly, every read checked against `end` first.
#[allow(clippy::too_many_arguments)]
fn decode_message_set(
    b: &mut Bundle,
    data: &[u8],
    pos: usize,
    end: usize,
    count: u64,
    sparse: bool,
    first_seq: Option<u64>,
    last_seq: Option<u64>,
    compressed_at: Option<usize>,
    keep: u64,
) {
    let end = end.min(data.len());
    let plain = compressed_at.is_none();
    let sp = |s: usize, e: usize| if plain { span(s, e) } else { None };
    let mut seq = first_seq;
    let mut ts: Option<u64> = None;
    let mut ts_span: Option<Span> = None;
    let mut idx: u64 = 0;
    let mut p = pos;
    let mut at = pos;
    let mut first_read: Option<u64> = None;
    let result: Result<(), Short> = (|| {
        while p < end {
            at = p;
            let flags = data[p];
            p += 1;
            if sparse {
                if idx == 0 {
                    seq = first_seq;
                } else if idx == count.wrapping_sub(1) {
                    seq = last_seq;
                } else if flags & C::MSG_SEQ_PREV_PLUS_ONE != 0 {
                    seq = seq.map(|s| s.wrapping_add(1));
                } else {
                    let (delta, np) = varint(data, p, end, "message seqnum delta")?;
                    p = np;
                    seq = seq.map(|s| s.wrapping_add(1).wrapping_add(delta));
                }
            } else if idx != 0 {
                seq = seq.map(|s| s.wrapping_add(1));
            }
            if flags & C::MSG_USE_LAST_TS == 0 {
                if p + 8 > end {
                    return Err(Short::new("message timestamp", p, 8, end as i64 - p as i64));
                }
                let mut t = [0u8; 8];
                t.copy_from_slice(&data[p..p + 8]);
                ts = Some(u64::from_le_bytes(t));
                ts_span = sp(p, p + 8);
                p += 8;
            }
            let mut key = None;
            let mut key_span = None;
            if flags & C::MSG_HAVE_KEY != 0 {
                if p >= end {
                    return Err(Short::new("key length", p, 1, 0));
                }
                let klen = usize::from(data[p]);
                if p + 1 + klen > end {
                    return Err(Short::new(
                        "key",
                        p + 1,
                        klen as i64,
                        end as i64 - p as i64 - 1,
                    ));
                }
                if idx < keep {
                    key = Some(data[p + 1..p + 1 + klen].to_vec());
                }
                key_span = sp(p, p + 1 + klen);
                p += 1 + klen;
            }
            let vstart = p;
            let (vlen, np) = varint(data, p, end, "content length")?;
            p = np;
            if vlen > (end - p) as u64 {
                return Err(Short::new("content", p, vlen as i64, (end - p) as i64));
            }
            let vlen = vlen as usize;
            if idx < keep {
                b.messages.push(BundleMessage {
                    seq,
                    flags,
                    timestamp_ms: ts,
                    key,
                    value: data[p..p + vlen].to_vec(),
                    flags_span: sp(at, at + 1),
                    ts_span,
                    key_span,
                    value_span: sp(vstart, p + vlen),
                });
            }
            if idx == 0 {
                first_read = seq;
            }
            p += vlen;
            idx += 1;
            b.last_seq = seq;
        }
        Ok(())
    })();
    if let Err(e) = result {
        let (where_, inside) = match compressed_at {
            None => (e.offset, String::new()),
            Some(c) => (c, format!(" (byte {} of the uncompressed set)", e.offset)),
        };
        b.problems.push(malformed(
            format!("message {idx} of bundle (at byte {at}): {e}{inside}"),
            Some(where_),
        ));
    }
    b.parsed = idx;
    b.first_seq = first_read;
    if idx != count && b.problems.is_empty() {
        b.problems.push(malformed(
            format!("bundle declares {count} messages, its message set holds {idx}"),
            Some(compressed_at.unwrap_or(pos)),
        ));
    }
}

/// A run of `[length varint][bundle]` records from a Consume response.
#[derive(Debug, Default)]
pub struct Chunk {
    /// Bundles read (each given to the caller as it was read).
    pub count: u64,
    /// Messages read in all its bundles (kept or not).
    pub messages: u64,
    /// Whether a bundle held messages; then `first_seq`/`last_seq` are the first one's first and
    /// the last one's last sequence number (what the summary shows).
    pub read_any: bool,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// The cut-off last bundle (normal: the fetch size is in bytes), if any.
    pub partial: Option<Fields>,
    pub next_seq: Option<u64>,
    /// Where the chunk stopped making sense (a bundle length of 0), and the bytes left unread.
    pub unread: Option<Fields>,
    /// Problems of the chunk itself (not of one of its bundles).
    pub problems: Vec<Problem>,
}

/// Decodes the chunk in `buf[start..end]`, whose last bundle may be cut short; at most `keep`
/// messages of them all are kept (see [`decode_bundle`]).
///
/// `each(bundle, index)` gets every bundle as it is read (to take its fields, messages and
/// problems); the chunk keeps none of them, so a chunk of a million tiny bundles costs what the
/// caller keeps of them (`Limits::max_batches`).
pub fn decode_chunk(
    buf: &[u8],
    start: usize,
    end: usize,
    base_seq: Option<u64>,
    limits: &mut Limits,
    keep: u64,
    mut each: impl FnMut(&mut Bundle, usize),
) -> Chunk {
    let mut left = keep;
    let mut ch = Chunk {
        next_seq: base_seq,
        ..Chunk::default()
    };
    let mut c = Cursor::new(buf, start, end);
    let mut seq = base_seq;
    while c.left() > 0 {
        let at = c.pos;
        let blen = match c.uvarint("bundle length", 5) {
            Ok(n) => n,
            Err(_) => {
                let mut p = Fields::new();
                p.set("offset", Value::Int(at as i64));
                p.set("declared_length", Value::Null);
                p.set("available", Value::Int(c.end.saturating_sub(at) as i64));
                ch.partial = Some(p);
                break;
            }
        };
        if blen > c.left() as u64 {
            let mut p = Fields::new();
            p.set_span("offset", Value::Int(at as i64), None);
            p.set_span("declared_length", Value::Int(blen as i64), c.span(at));
            p.set("available", Value::Int(c.left() as i64));
            ch.partial = Some(p);
            break;
        }
        if blen == 0 {
            // Not a bundle: every bundle holds at least its flags byte (and one message), and
            // TANK's own log verifier rejects a zero length (`TANK_EXPECT(bundleLen)`). The
            // length is the only framing a chunk has, so nothing after it can be trusted: the
            // rest of the chunk is one malformed stretch, reported once with its size (a chunk
            // of zero bytes would otherwise be one empty bundle and one problem per byte).
            let left_bytes = end - at;
            let mut u = Fields::new();
            u.set("offset", Value::Int(at as i64));
            u.set("length", Value::Int(left_bytes as i64));
            ch.unread = Some(u);
            ch.problems.push(malformed(
                format!(
                    "bundle length 0 at byte {at} (a bundle holds at least its flags byte): \
                     the last {left_bytes} bytes of the chunk are not read as bundles"
                ),
                Some(at),
            ));
            break;
        }
        let blen = blen as usize;
        let mut bundle = decode_bundle(buf, c.pos, c.pos + blen, seq, limits, left);
        left = left.saturating_sub(bundle.messages.len() as u64);
        bundle.fields.set("offset", Value::Int(at as i64));
        seq = bundle.next_seq;
        let (parsed, first, last) = (bundle.parsed, bundle.first_seq, bundle.last_seq);
        each(&mut bundle, ch.count as usize);
        ch.count += 1;
        if parsed != 0 {
            if !ch.read_any {
                ch.read_any = true;
                ch.first_seq = first;
            }
            ch.last_seq = last;
            ch.messages += parsed;
        }
        c.pos += blen;
    }
    ch.next_seq = seq;
    ch
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sparse bundle of three messages, seqs 100, 101 (flag 0x04), 105, written by hand from
    /// tank_encoding.md: flags 0x40 | 3<<2, first 100 u64, last delta 105-100-1 = 4.
    #[test]
    fn sparse_bundle_by_hand() {
        let mut b = vec![0x40 | (3 << 2)];
        b.extend_from_slice(&100u64.to_le_bytes());
        b.push(4);
        // msg 0: no key, ts 7, value "a"
        b.push(0);
        b.extend_from_slice(&7u64.to_le_bytes());
        b.extend_from_slice(&[1, b'a']);
        // msg 1: prev+1, same ts, key "k", value "bc"
        b.push(0x04 | 0x02 | 0x01);
        b.extend_from_slice(&[1, b'k', 2, b'b', b'c']);
        // msg 2: the last (seq from the header), same ts
        b.push(0x02);
        b.extend_from_slice(&[0]);
        let n = b.len();
        let got = decode_bundle(&b, 0, n, None, &mut Limits::default(), 10);
        assert!(got.problems.is_empty(), "{:?}", got.problems);
        let seqs: Vec<_> = got.messages.iter().map(|m| m.seq).collect();
        assert_eq!(seqs, vec![Some(100), Some(101), Some(105)]);
        assert_eq!(got.messages[1].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(got.messages[1].value, b"bc");
        assert_eq!(got.messages[2].timestamp_ms, Some(7));
        assert_eq!(got.next_seq, Some(106));
        assert_eq!(got.fields.get("last_seqnum"), Some(&Value::UInt(105)));
        // Cut inside the last message's content length: a problem, two messages read.
        let got = decode_bundle(&b, 0, n - 1, None, &mut Limits::default(), 10);
        assert_eq!(got.parsed, 2);
        assert_eq!(
            got.problems[0].1,
            format!(
                "message 2 of bundle (at byte {}): content length at byte {} needs 1 bytes, 0 left",
                n - 2,
                n - 1
            )
        );
    }

    #[test]
    fn chunk_with_partial_last_bundle() {
        // One bundle of one message (seq from the base 10), then a length 9 with 2 bytes.
        let mut one = vec![1 << 2, 0];
        one.extend_from_slice(&5u64.to_le_bytes());
        one.extend_from_slice(&[0]);
        let mut ch = vec![one.len() as u8];
        ch.extend_from_slice(&one);
        ch.extend_from_slice(&[9, 1, 2]);
        let n = ch.len();
        let mut seqs = Vec::new();
        let got = decode_chunk(&ch, 0, n, Some(10), &mut Limits::default(), 100, |b, _| {
            seqs.extend(b.messages.iter().map(|m| m.seq))
        });
        assert_eq!(got.count, 1);
        assert_eq!(seqs, vec![Some(10)]);
        assert_eq!(got.next_seq, Some(11));
        let p = got.partial.unwrap();
        assert_eq!(p.get("offset"), Some(&Value::Int(12)));
        assert_eq!(p.get("declared_length"), Some(&Value::Int(9)));
        assert_eq!(p.get("available"), Some(&Value::Int(2)));
    }
}
