//! The payload part of SEND and MESSAGE frames: metadata blocks, checksum, batches, codecs (the
//! twin of `payload.py`).
//!
//! After the command of a payload frame come, in this order: the optional broker-entry metadata
//! block (magic 0x0e02, size, BrokerEntryMetadata), the optional checksum block (magic 0x0e01,
//! CRC32C over everything after it), the MessageMetadata with its size, and the payload. The
//! payload may be compressed (raw LZ4 block, Java's unterminated zlib stream, zstd, raw snappy),
//! and once decompressed may be a batch of SingleMessageMetadata entries. All of it is
//! untrusted: sizes are checked against the bytes left, decompression goes through the limited
//! codecs.

use crate::codecs::{self, Limits, Problem};

use super::proto::{self, msg, Msg};

const MAGIC_BROKER_ENTRY_METADATA: u16 = 0x0E02;
const MAGIC_CRC32C: u16 = 0x0E01;

/// A read past the bytes there are (Python's `wire.Short`), with its text.
#[derive(Debug)]
pub struct Short {
    pub what: &'static str,
    pub offset: usize,
    pub need: i64,
    pub left: usize,
}

impl std::fmt::Display for Short {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at byte {} needs {} bytes, {} left",
            self.what, self.offset, self.need, self.left
        )
    }
}

/// A bounds-checked reader over `buf[pos..end]`.
pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

impl<'a> Cursor<'a> {
    pub fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn u32(&mut self, what: &'static str) -> Result<u32, Short> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Short> {
        if n > self.left() {
            return Err(Short {
                what,
                offset: self.pos,
                need: n as i64,
                left: self.left(),
            });
        }
        let v = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(v)
    }
}

/// What follows the command of a SEND/MESSAGE frame, parsed and checked.
#[derive(Default)]
pub struct Section {
    pub broker_entry_metadata: Option<Msg>,
    pub checksum: Option<u32>,
    pub checksum_computed: Option<u32>,
    pub metadata: Option<Msg>,
    pub metadata_offset: usize,
    pub payload_offset: usize,
    pub payload: (usize, usize),
    /// (kind, detail, offset in frame) for everything that went wrong.
    pub problems: Vec<(&'static str, String, usize)>,
}

impl Section {
    pub fn checksum_ok(&self) -> Option<bool> {
        Some(self.checksum? == self.checksum_computed?)
    }
}

/// Parses the bytes of `frame` from `start` (just after the command).
pub fn parse_section(frame: &[u8], start: usize) -> Section {
    let mut s = Section::default();
    let mut c = Cursor {
        buf: frame,
        pos: start,
    };
    let magic =
        |c: &Cursor| (c.left() >= 2).then(|| u16::from_be_bytes([frame[c.pos], frame[c.pos + 1]]));
    let r: Result<(), Short> = (|| {
        if magic(&c) == Some(MAGIC_BROKER_ENTRY_METADATA) {
            let at = c.pos;
            c.pos += 2;
            let n = c.u32("brokerEntryMetadataSize")? as usize;
            let base = c.pos;
            let raw = c.take(n, "BrokerEntryMetadata")?;
            s.broker_entry_metadata = proto::parse(msg::BrokerEntryMetadata, raw, base);
            if s.broker_entry_metadata.is_none() {
                s.problems.push((
                    "malformed",
                    proto::parse_error(msg::BrokerEntryMetadata),
                    at,
                ));
            }
        }
        if magic(&c) == Some(MAGIC_CRC32C) {
            c.pos += 2;
            s.checksum = Some(c.u32("checksum")?);
            // CRC32C over metadataSize + metadata + payload: every byte after the checksum.
            s.checksum_computed = Some(crc32c::crc32c(&frame[c.pos..]));
        }
        s.metadata_offset = c.pos;
        let n = c.u32("metadataSize")? as usize;
        let base = c.pos;
        let raw = c.take(n, "MessageMetadata")?;
        s.metadata = proto::parse(msg::MessageMetadata, raw, base);
        if s.metadata.is_none() {
            s.problems.push((
                "malformed",
                proto::parse_error(msg::MessageMetadata),
                s.metadata_offset + 4,
            ));
        }
        s.payload_offset = c.pos;
        s.payload = (c.pos, frame.len());
        Ok(())
    })();
    if let Err(e) = r {
        s.problems
            .push(("malformed", format!("payload section: {e}"), e.offset));
    }
    s
}

/// One logical message out of a payload (the whole payload, or one batch entry).
pub struct Entry {
    pub value: Option<Vec<u8>>,
    pub value_size: usize,
    pub batch_index: Option<i64>,
    /// SingleMessageMetadata when from a batch.
    pub single: Option<Msg>,
}

pub struct Unpacked {
    pub entries: Vec<Entry>,
    pub compression: Option<&'static str>,
    pub encrypted: bool,
    pub decompressed: bool,
    /// (anomaly kind, detail).
    pub problems: Vec<(&'static str, String)>,
    /// Bytes after decompression (None when it failed or the payload is encrypted).
    pub size: Option<usize>,
    /// Logical messages read, kept in `entries` or not.
    pub read: usize,
    /// Payload bytes of every message read.
    pub value_bytes: usize,
}

impl Unpacked {
    fn whole(entries: Vec<Entry>, compression: Option<&'static str>) -> Unpacked {
        let read = entries.len();
        let value_bytes = entries.iter().map(|e| e.value_size).sum();
        Unpacked {
            entries,
            compression,
            encrypted: false,
            decompressed: true,
            problems: Vec::new(),
            size: None,
            read,
            value_bytes,
        }
    }
}

fn problem(p: Problem) -> (&'static str, String) {
    (p.kind(), p.detail().to_string())
}

/// The payload as Pulsar clients really compress it: (output or None, problem).
pub fn decompress(
    meta: &Msg,
    payload: &[u8],
    limits: &mut Limits,
) -> (Option<Vec<u8>>, Option<(&'static str, String)>) {
    let codec = meta.int("compression");
    if codec == 0 {
        return (Some(payload.to_vec()), None);
    }
    let size = meta.int("uncompressed_size");
    let has_size = meta.has("uncompressed_size");
    let name = super::schema::compression_name(codec)
        .map(str::to_string)
        .unwrap_or_else(|| codec.to_string());
    let (out, prob) = match codec {
        // LZ4: raw block, size from the metadata.
        1 => match codecs::lz4_block(payload, size, limits) {
            Ok(o) => (Some(o), None),
            Err(p) => (None, Some(problem(p))),
        },
        // ZLIB: Java leaves the stream unterminated (sync flush, no trailer).
        2 => {
            let (out, p) = codecs::zlib_stream(payload, limits);
            if let (Some(o), None) = (&out, &p) {
                if has_size && o.len() as i64 > size {
                    return (
                        None,
                        Some((
                            "decompression_limit",
                            format!(
                                "zlib: output {} bytes exceeds uncompressed_size {size}",
                                o.len()
                            ),
                        )),
                    );
                }
            }
            (out, p.map(problem))
        }
        3 => {
            let (out, p) = codecs::zstd_partial(payload, limits);
            (out, p.map(problem))
        }
        // SNAPPY: one raw block.
        4 => match codecs::snappy_raw(payload, limits) {
            Ok(o) => (Some(o), None),
            Err(p) => (None, Some(problem(p))),
        },
        _ => {
            return (
                None,
                Some((
                    "decompression_failed",
                    format!("unknown compression type {codec}"),
                )),
            )
        }
    };
    if let (Some(o), None) = (&out, &prob) {
        if has_size && o.len() as i64 != size {
            let p = (
                "decompression_failed",
                format!("{name}: {} bytes out, metadata says {size}", o.len()),
            );
            return (out, Some(p));
        }
    }
    (out, prob)
}

/// Splits a (whole, joined) payload into its logical messages.
pub fn unpack(meta: &Msg, payload: &[u8], limits: &mut Limits, keep: usize) -> Unpacked {
    let codec = meta.int("compression");
    let compression = if codec != 0 {
        super::schema::compression_name(codec)
    } else {
        None
    };
    let whole = |v: &[u8]| Entry {
        value: Some(v.to_vec()),
        value_size: v.len(),
        batch_index: None,
        single: None,
    };
    if meta.has("encryption_keys") {
        // Ciphertext: neither decompressible nor splittable by a passive observer.
        let mut u = Unpacked::whole(vec![whole(payload)], compression);
        u.encrypted = true;
        u.decompressed = false;
        return u;
    }
    let (data, prob) = decompress(meta, payload, limits);
    let Some(data) = data else {
        let mut u = Unpacked::whole(vec![whole(payload)], compression);
        u.decompressed = false;
        u.problems
            .push(prob.unwrap_or(("decompression_failed", "no output".into())));
        return u;
    };
    let problems: Vec<_> = prob.into_iter().collect();
    if !meta.has("num_messages_in_batch") {
        let n = data.len();
        let mut u = Unpacked::whole(
            vec![Entry {
                value: Some(data),
                value_size: n,
                batch_index: None,
                single: None,
            }],
            compression,
        );
        u.problems = problems;
        u.size = Some(n);
        return u;
    }
    let (entries, batch_problems, read, value_bytes) = split_batch(meta, &data, keep);
    let mut u = Unpacked::whole(entries, compression);
    u.problems = problems;
    u.problems.extend(batch_problems);
    u.size = Some(data.len());
    u.read = read;
    u.value_bytes = value_bytes;
    u
}

type Split = (Vec<Entry>, Vec<(&'static str, String)>, usize, usize);

/// num_messages_in_batch × [u32 size][SingleMessageMetadata][payload].
///
/// Returns the entries (at most `keep`), the problems, how many entries were read and their
/// payload bytes: entries past `keep` are parsed and checked the same way, only not kept.
pub fn split_batch(meta: &Msg, data: &[u8], keep: usize) -> Split {
    let mut count = meta.int("num_messages_in_batch");
    let indexes: Vec<i64> = meta
        .list("compacted_batch_indexes")
        .iter()
        .map(|it| match it.val {
            proto::PV::Int(i) => i,
            proto::PV::UInt(u) => u as i64,
            _ => 0,
        })
        .collect();
    if !indexes.is_empty() {
        count = indexes.len() as i64;
    }
    let mut entries = Vec::new();
    let mut problems = Vec::new();
    let mut c = Cursor { buf: data, pos: 0 };
    let (mut read, mut value_bytes) = (0usize, 0usize);
    let mut i: i64 = 0;
    let r: Result<(), Short> = (|| {
        while i < count.max(0) {
            if c.left() == 0 {
                break;
            }
            let n = c.u32("singleMetaSize")? as usize;
            let raw = c.take(n, "SingleMessageMetadata")?;
            let Some(single) = proto::parse(msg::SingleMessageMetadata, raw, 0) else {
                problems.push((
                    "malformed",
                    format!(
                        "batch entry {i}: {}",
                        proto::parse_error(msg::SingleMessageMetadata)
                    ),
                ));
                break;
            };
            let size = single.int("payload_size");
            if size < 0 {
                return Err(Short {
                    what: "batch entry payload",
                    offset: c.pos,
                    need: size,
                    left: c.left(),
                });
            }
            let value = c.take(size as usize, "batch entry payload")?;
            read += 1;
            value_bytes += value.len();
            if (i as usize) < keep {
                let null = single.boolean("null_value");
                entries.push(Entry {
                    value: if null { None } else { Some(value.to_vec()) },
                    value_size: value.len(),
                    batch_index: Some(if indexes.is_empty() {
                        i
                    } else {
                        indexes[i as usize]
                    }),
                    single: Some(single),
                });
            }
            i += 1;
        }
        Ok(())
    })();
    if let Err(e) = r {
        problems.push(("malformed", format!("batch entry {read}: {e}")));
    }
    if read as i64 != count && problems.is_empty() {
        problems.push((
            "malformed",
            format!("batch holds {read} entries, metadata says {count}"),
        ));
    } else if c.left() > 0 && problems.is_empty() {
        problems.push((
            "malformed",
            format!("{} bytes after the last of {count} batch entries", c.left()),
        ));
    }
    (entries, problems, read, value_bytes)
}

/// The message key as bytes (Pulsar base64-encodes binary keys and says so).
pub fn key_of(partition_key: &[u8], b64: bool) -> Option<Vec<u8>> {
    if partition_key.is_empty() {
        return None;
    }
    if b64 {
        if let Ok(s) = std::str::from_utf8(partition_key) {
            if let Some(v) = b64_decode(s) {
                return Some(v);
            }
        }
    }
    Some(partition_key.to_vec())
}

/// Python's `base64.b64decode(s, validate=True)`: the standard alphabet, padding required.
fn b64_decode(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    if b.len() % 4 != 0 {
        return None;
    }
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        })
    };
    let mut out = Vec::with_capacity(b.len() / 4 * 3);
    for (k, q) in b.chunks(4).enumerate() {
        let last = k == b.len() / 4 - 1;
        let pad = q.iter().rev().take_while(|&&c| c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for &c in &q[..4 - pad] {
            n = (n << 6) | val(c)?;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_as_python_validates_it() {
        assert_eq!(b64_decode("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(b64_decode("aGVsbA=="), Some(b"hell".to_vec()));
        assert_eq!(b64_decode("aGVs"), Some(b"hel".to_vec()));
        assert_eq!(b64_decode("aGVsbG8"), None);
        assert_eq!(b64_decode("a=Vs"), None);
        assert_eq!(b64_decode(""), Some(vec![]));
    }
}
