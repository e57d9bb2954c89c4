//! Turning append blocks and segment reads back into the events a writer sent (the twin of
//! `pravega/events.py`).
//!
//! A writer wraps each event as a record `[int32 0][int32 length][bytes]` (WIRE.md §6.1) and
//! ships records in APPEND_BLOCK / APPEND_BLOCK_END pairs: the block holds whole records, then
//! possibly one PADDING or PARTIAL_EVENT trailer; a PARTIAL_EVENT holds the head of the record
//! that did not fit and the block end's `data` holds its tail. [`BlockAssembler`] does what the
//! segment store's `AppendDecoder` does (§6.4): appended bytes = block[:sizeOfWholeEvents] +
//! partial + blockEnd.data, then splits them into records.
//!
//! SEGMENT_READ data is raw segment bytes: records again, the last one possibly cut and
//! continued by the next read of that segment at the following offset. [`ReadJoiner`] keeps
//! that cut tail per segment (bounded) and joins it. Data that does not parse as records is a
//! byte stream: it yields no events.

use super::commands::MAX_EVENT_SIZE;
use super::ordered::OrderedMap;
use crate::model::{Fields, Value};

pub const PADDING: i32 = -1;
pub const PARTIAL_EVENT: i32 = -2;
/// Writers with an APPEND_BLOCK waiting for its end (the encoder allows one at a time).
pub const MAX_PENDING_BLOCKS: usize = 4;
/// Segments whose cut last record is kept for the next read.
pub const MAX_READ_TAILS: usize = 256;
/// Bytes of cut records kept for all segments of a connection together.
pub const MAX_READ_TAIL_BYTES: usize = 32 * 1024 * 1024;

fn hdr(data: &[u8], pos: usize) -> (i32, i32) {
    let a = i32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]);
    let b = i32::from_be_bytes([data[pos + 4], data[pos + 5], data[pos + 6], data[pos + 7]]);
    (a, b)
}

/// The result of splitting bytes into event records; `events` are (offset in the data, payload
/// range in the data).
#[derive(Debug, Default)]
pub struct Records {
    pub events: Vec<(usize, std::ops::Range<usize>)>,
    /// Bytes covered by whole records.
    pub whole: usize,
    /// False when the bytes are not a record sequence (a byte stream, or garbage).
    pub is_events: bool,
    pub reason: String,
    /// Whole records read; more than `events` holds past `keep`.
    pub count: usize,
}

/// Splits `data` into `[0][len][bytes]` records (see the Python `split_records`).
pub fn split_records(data: &[u8], allow_tail: bool, keep: usize) -> Records {
    let mut out = Records {
        is_events: true,
        ..Records::default()
    };
    let n = data.len();
    let mut pos = 0usize;
    let mut count = 0usize;
    while pos + 8 <= n {
        let (kind, size) = hdr(data, pos);
        if kind != 0 || !(0..=MAX_EVENT_SIZE).contains(&size) {
            out.is_events = false;
            out.reason =
                format!("bytes at {pos} are not an event record (type {kind}, length {size})");
            return out;
        }
        let end = pos + 8 + size as usize;
        if end > n {
            break;
        }
        if count < keep {
            out.events.push((pos, pos + 8..end));
        }
        count += 1;
        pos = end;
    }
    out.count = count;
    out.whole = pos;
    let left = n - pos;
    if left > 0 {
        let cut_header_ok = data[pos..pos + left.min(4)].iter().all(|&b| b == 0);
        if !allow_tail || !cut_header_ok {
            out.is_events = false;
            out.reason = format!("{left} bytes after the last whole record at {pos}");
        }
    }
    out
}

/// What an APPEND_BLOCK_END appends.
#[derive(Debug, Default)]
pub struct Assembled {
    pub data: Vec<u8>,
    pub problems: Vec<String>,
    pub trailer: Option<&'static str>,
    pub from_block: usize,
}

/// Per-connection AppendDecoder: joins APPEND_BLOCK with its APPEND_BLOCK_END.
#[derive(Default)]
pub struct BlockAssembler {
    blocks: OrderedMap<String, Vec<u8>>,
}

impl BlockAssembler {
    pub fn pending(&self) -> usize {
        self.blocks.len()
    }

    pub fn pending_writers(&self) -> Vec<String> {
        self.blocks.keys().cloned().collect()
    }

    /// Holds a block; returns problems (a block replaced before its end, or evicted).
    pub fn add_block(&mut self, writer_id: &str, data: Vec<u8>) -> Vec<String> {
        let mut problems = Vec::new();
        if let Some(old) = self.blocks.remove(&writer_id.to_owned()) {
            problems.push(format!(
                "APPEND_BLOCK for writer {writer_id} replaces one of {} bytes never ended",
                old.len()
            ));
        }
        self.blocks.insert(writer_id.to_owned(), data);
        while self.blocks.len() > MAX_PENDING_BLOCKS {
            if let Some((w, old)) = self.blocks.pop_first() {
                problems.push(format!(
                    "dropped the unended APPEND_BLOCK of writer {w} ({} bytes)",
                    old.len()
                ));
            }
        }
        problems
    }

    pub fn drop_block(&mut self, writer_id: &str) {
        self.blocks.remove(&writer_id.to_owned());
    }

    /// The bytes the segment store appends for this APPEND_BLOCK_END (AppendDecoder's rules).
    pub fn end_block(
        &mut self,
        writer_id: &str,
        size_of_whole_events: i64,
        end_data: &[u8],
    ) -> Assembled {
        let Some(data) = self.blocks.remove(&writer_id.to_owned()) else {
            return Assembled {
                data: end_data.to_vec(),
                ..Assembled::default()
            };
        };
        let mut problems = Vec::new();
        let mut sow = size_of_whole_events;
        if sow < 0 || sow > data.len() as i64 {
            problems.push(format!(
                "sizeOfWholeEvents {sow} outside the block's {} bytes",
                data.len()
            ));
            sow = sow.clamp(0, data.len() as i64);
        }
        let sow = sow as usize;
        let (whole, rest) = data.split_at(sow);
        let mut trailer = None;
        let mut appended: Vec<u8>;
        let mut partial: &[u8] = &[];
        if !rest.is_empty() {
            if rest.len() < 8 {
                problems.push(format!(
                    "{} bytes after the whole events are not a PADDING/PARTIAL_EVENT",
                    rest.len()
                ));
            } else {
                let (kind, size) = hdr(rest, 0);
                if size as i64 != rest.len() as i64 - 8 {
                    problems.push(format!(
                        "block trailer (type {kind}) declares {size} bytes but {} follow",
                        rest.len() - 8
                    ));
                } else if kind == PARTIAL_EVENT {
                    trailer = Some("PartialEvent");
                    partial = &rest[8..];
                } else if kind == PADDING {
                    trailer = Some("Padding");
                    if !end_data.is_empty() {
                        problems
                            .push("APPEND_BLOCK_END carries data after a PADDING trailer".into());
                    }
                } else {
                    problems.push(format!(
                        "block trailer has type {kind}, not PADDING (-1) or PARTIAL_EVENT (-2)"
                    ));
                }
            }
        }
        appended = Vec::with_capacity(whole.len() + partial.len() + end_data.len());
        appended.extend_from_slice(whole);
        appended.extend_from_slice(partial);
        appended.extend_from_slice(end_data);
        Assembled {
            data: appended,
            problems,
            trailer,
            from_block: data.len(),
        }
    }
}

/// What an APPEND_BLOCK's data holds: whole records, then a trailer (when it parses that way).
pub fn describe_block(data: &[u8], out: &mut Fields) {
    let n = data.len();
    let (mut pos, mut count) = (0usize, 0i64);
    while pos + 8 <= n {
        let (kind, size) = hdr(data, pos);
        if kind == 0 && size >= 0 && size as usize <= n - pos - 8 {
            count += 1;
            pos += 8 + size as usize;
            continue;
        }
        if (kind == PADDING || kind == PARTIAL_EVENT) && size >= 0 && size as usize == n - pos - 8 {
            out.set("whole_events", Value::Int(count));
            out.set("whole_event_bytes", Value::Int(pos as i64));
            let t = if kind == PADDING {
                "Padding"
            } else {
                "PartialEvent"
            };
            out.set("trailer", Value::Str(t.into()));
            out.set("trailer_length", Value::Int(size as i64));
            return;
        }
        break;
    }
    out.set("whole_events", Value::Int(count));
    out.set("whole_event_bytes", Value::Int(pos as i64));
    out.set("trailer", Value::Null);
    if pos != n {
        out.set("unparsed_bytes", Value::Int((n - pos) as i64));
    }
}

struct Tail {
    /// i128: the wire's offset plus a length may pass i64 (Python's ints do not overflow).
    next_offset: i128,
    data: Vec<u8>,
}

/// Joins a record cut at the end of one SEGMENT_READ with the next read of that segment.
#[derive(Default)]
pub struct ReadJoiner {
    tails: OrderedMap<String, Tail>,
    bytes: usize,
}

/// A read split into records: the bytes they index (the read, or a kept tail + the read).
pub struct ReadSplit {
    pub recs: Records,
    pub buf: Option<Vec<u8>>,
    /// Segment offset of `buf[0]` (or of the read's first byte when `buf` is None).
    pub base: i128,
    pub joined: usize,
}

impl ReadJoiner {
    /// Records in this read (joined with a kept tail when the offsets meet).
    pub fn split(&mut self, segment: &str, offset: i64, data: &[u8], keep: usize) -> ReadSplit {
        let key = segment.to_owned();
        let tail = self.tails.remove(&key);
        if let Some(t) = &tail {
            self.bytes -= t.data.len();
        }
        let next = offset as i128 + data.len() as i128;
        if let Some(t) = tail {
            if t.next_offset == offset as i128 && !t.data.is_empty() {
                let mut buf = t.data;
                let joined = buf.len();
                buf.extend_from_slice(data);
                let recs = split_records(&buf, true, keep);
                if recs.is_events {
                    self.keep(key, next, &buf, recs.whole);
                    return ReadSplit {
                        recs,
                        buf: Some(buf),
                        base: offset as i128 - joined as i128,
                        joined,
                    };
                }
            }
        }
        let recs = split_records(data, true, keep);
        if recs.is_events {
            self.keep(key, next, data, recs.whole);
        }
        ReadSplit {
            recs,
            buf: None,
            base: offset as i128,
            joined: 0,
        }
    }

    fn keep(&mut self, segment: String, next_offset: i128, buf: &[u8], whole: usize) {
        let left = buf.len() - whole;
        if left == 0 || left > MAX_EVENT_SIZE as usize + 8 {
            return;
        }
        self.tails.insert(
            segment,
            Tail {
                next_offset,
                data: buf[whole..].to_vec(),
            },
        );
        self.bytes += left;
        while self.tails.len() > MAX_READ_TAILS || self.bytes > MAX_READ_TAIL_BYTES {
            match self.tails.pop_first() {
                Some((_, old)) => self.bytes -= old.data.len(),
                None => break,
            }
        }
    }

    pub fn pending(&self, segment: &str) -> usize {
        self.tails
            .get(&segment.to_owned())
            .map_or(0, |t| t.data.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(payload: &[u8]) -> Vec<u8> {
        let mut v = vec![0, 0, 0, 0];
        v.extend_from_slice(&(payload.len() as i32).to_be_bytes());
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn splits_whole_records_and_cut_tails() {
        let mut data = rec(b"abc");
        data.extend(rec(b"xy"));
        let r = split_records(&data, false, 10);
        assert!(r.is_events);
        assert_eq!(r.count, 2);
        assert_eq!(&data[r.events[1].1.clone()], b"xy");
        assert_eq!(r.events[1].0, 11);
        // A cut third record: allowed as a tail only.
        data.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 9, 1]);
        assert!(!split_records(&data, false, 10).is_events);
        let r = split_records(&data, true, 1);
        assert!(r.is_events);
        assert_eq!((r.count, r.events.len(), r.whole), (2, 1, 21));
    }

    #[test]
    fn block_with_partial_event_joins_its_end() {
        let mut block = rec(b"one");
        let whole = block.len();
        // PARTIAL_EVENT trailer with the head of `rec(b"two")` (its first 9 bytes).
        let two = rec(b"two");
        block.extend_from_slice(&(-2i32).to_be_bytes());
        block.extend_from_slice(&9i32.to_be_bytes());
        block.extend_from_slice(&two[..9]);
        let mut asm = BlockAssembler::default();
        assert!(asm.add_block("w", block.clone()).is_empty());
        let a = asm.end_block("w", whole as i64, &two[9..]);
        assert!(a.problems.is_empty());
        assert_eq!(a.trailer, Some("PartialEvent"));
        let mut expect = rec(b"one");
        expect.extend(two);
        assert_eq!(a.data, expect);
        let mut f = Fields::new();
        describe_block(&block, &mut f);
        assert_eq!(f.get("whole_events"), Some(&Value::Int(1)));
        assert_eq!(f.get("trailer_length"), Some(&Value::Int(9)));
    }

    #[test]
    fn reads_join_across_offsets() {
        let mut j = ReadJoiner::default();
        let data = rec(b"hello");
        let s = j.split("s", 100, &data[..10], 10);
        assert_eq!(s.recs.count, 0);
        assert_eq!(j.pending("s"), 10);
        let s = j.split("s", 110, &data[10..], 10);
        assert_eq!((s.recs.count, s.joined, s.base), (1, 10, 100));
        assert_eq!(j.pending("s"), 0);
    }
}
