//! The one walker that reads any row of the command table, and Pravega's encodings (the twin
//! of `pravega/codec.py`, same values, same error texts at the same offsets).
//!
//! Everything is big-endian (Java `DataOutput`). Strings are `writeUTF`: a u16 byte length then
//! *modified* UTF-8 (U+0000 as `C0 80`, characters beyond the BMP as two 3-byte surrogates), so
//! they are decoded as CESU-8 rather than plain UTF-8. Counts read from the wire are checked
//! against the bytes left before anything is built, so a hostile count costs nothing. Every
//! value keeps the span of its bytes in the frame.

use std::borrow::Cow;

use super::commands::{attribute_update_type, Absent, FieldKind, F, LONG_MIN};
use crate::model::{Field, Fields, Span, Value};
use crate::printable::is_printable;

/// List items kept in `fields` (all are read and checked; the total is recorded).
pub const MAX_LIST_ITEMS: usize = 1000;

/// What a read was reading, in the words of the Python reference (`name` + `suffix`, joined
/// only when an error is shown, so the hot path allocates nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct What(pub &'static str, pub &'static str);

impl What {
    pub fn text(&self) -> String {
        format!("{}{}", self.0, self.1)
    }
}

/// Why a field walk stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldError {
    /// A field is cut off (Python's `wire.Short`).
    Short {
        what: What,
        offset: usize,
        need: i64,
        left: usize,
    },
    /// A field holds a value its encoding forbids (Python's `BadField`).
    Bad { what: String, offset: usize },
}

impl FieldError {
    pub fn offset(&self) -> usize {
        match self {
            FieldError::Short { offset, .. } | FieldError::Bad { offset, .. } => *offset,
        }
    }

    /// The exception's text, as `str(e)` gives it in Python.
    pub fn message(&self) -> String {
        match self {
            FieldError::Short {
                what,
                offset,
                need,
                left,
            } => format!(
                "{} at byte {offset} needs {need} bytes, {left} left",
                what.text()
            ),
            FieldError::Bad { what, offset } => format!("{what} at byte {offset}"),
        }
    }
}

type Res<T> = Result<T, FieldError>;

fn bad<T>(what: String, offset: usize) -> Res<T> {
    Err(FieldError::Bad { what, offset })
}

/// A bounds-checked cursor over a frame's bytes (the twin of `wire.Cursor`).
pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub end: usize,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], pos: usize, end: usize) -> Cursor<'a> {
        let end = end.min(buf.len());
        Cursor {
            buf,
            pos: pos.min(end),
            end,
        }
    }

    pub fn left(&self) -> usize {
        self.end - self.pos
    }

    fn short<T>(&self, what: What, need: i64) -> Res<T> {
        Err(FieldError::Short {
            what,
            offset: self.pos,
            need,
            left: self.left(),
        })
    }

    fn fixed<const N: usize>(&mut self, what: What) -> Res<[u8; N]> {
        if self.left() < N {
            return self.short(what, N as i64);
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    pub fn u8(&mut self, what: What) -> Res<u8> {
        Ok(self.fixed::<1>(what)?[0])
    }

    pub fn i8(&mut self, what: What) -> Res<i8> {
        Ok(self.fixed::<1>(what)?[0] as i8)
    }

    pub fn u16(&mut self, what: What) -> Res<u16> {
        Ok(u16::from_be_bytes(self.fixed(what)?))
    }

    pub fn i32(&mut self, what: What) -> Res<i32> {
        Ok(i32::from_be_bytes(self.fixed(what)?))
    }

    pub fn i64(&mut self, what: What) -> Res<i64> {
        Ok(i64::from_be_bytes(self.fixed(what)?))
    }

    /// `n` bytes (n is checked against what is left first: a hostile length allocates nothing).
    pub fn take(&mut self, n: i64, what: What) -> Res<&'a [u8]> {
        if n < 0 || n as u64 > self.left() as u64 {
            return self.short(what, n);
        }
        let n = n as usize;
        let v = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(v)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let v = &self.buf[self.pos..self.end];
        self.pos = self.end;
        v
    }
}

/// Java modified UTF-8 (CESU-8 with `C0 80` for U+0000) to text; None when it is not that.
///
/// Mirrors the Python reference: plain UTF-8 first; else `C0 80` → NUL and UTF-8 with encoded
/// surrogates allowed, then surrogate pairs joined (a lone surrogate is an error).
pub fn java_utf(raw: &[u8]) -> Option<Cow<'_, str>> {
    if let Ok(s) = std::str::from_utf8(raw) {
        return Some(Cow::Borrowed(s));
    }
    // Byte-level replace of C0 80 (left to right, non-overlapping, as bytes.replace).
    let mut bytes = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == 0xC0 && raw.get(i + 1) == Some(&0x80) {
            bytes.push(0);
            i += 2;
        } else {
            bytes.push(raw[i]);
            i += 1;
        }
    }
    // UTF-8 with surrogates passed (ED A0..BF 80..BF), as UTF-16 code units.
    let mut units: Vec<u16> = Vec::with_capacity(bytes.len());
    let mut rest: &[u8] = &bytes;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                units.extend(s.encode_utf16());
                break;
            }
            Err(e) => {
                let good = e.valid_up_to();
                // SAFETY-free: from_utf8 validated these bytes.
                if let Ok(s) = std::str::from_utf8(&rest[..good]) {
                    units.extend(s.encode_utf16());
                }
                let r = &rest[good..];
                if r.len() >= 3
                    && r[0] == 0xED
                    && (0xA0..=0xBF).contains(&r[1])
                    && (0x80..=0xBF).contains(&r[2])
                {
                    let cp = ((r[0] as u16 & 0x0F) << 12)
                        | ((r[1] as u16 & 0x3F) << 6)
                        | (r[2] as u16 & 0x3F);
                    units.push(cp);
                    rest = &r[3..];
                } else {
                    return None;
                }
            }
        }
    }
    String::from_utf16(&units).ok().map(Cow::Owned)
}

/// `writeUTF` string.
pub fn read_str(c: &mut Cursor<'_>, name: &'static str) -> Res<String> {
    let n = c.u16(What(name, " length"))? as i64;
    let raw = c.take(n, What(name, ""))?;
    match java_utf(raw) {
        Some(s) => Ok(s.into_owned()),
        None => bad(format!("{name}: not modified UTF-8"), c.pos - raw.len()),
    }
}

/// `[int32 length][bytes]`.
pub fn read_blob<'a>(c: &mut Cursor<'a>, name: &'static str) -> Res<&'a [u8]> {
    let start = c.pos;
    let n = c.i32(What(name, " length"))?;
    if n < 0 {
        return bad(format!("{name}: negative length {n}"), start);
    }
    c.take(n as i64, What(name, ""))
}

fn count(c: &mut Cursor<'_>, name: &'static str, min_item: i64) -> Res<usize> {
    let start = c.pos;
    let n = c.i32(What(name, " count"))?;
    if n < 0 || n as i64 * min_item > c.left() as i64 {
        return bad(
            format!("{name}: count {n} does not fit the {} bytes left", c.left()),
            start,
        );
    }
    Ok(n as usize)
}

/// Reads `n` items (every item is read, so the frame is fully checked); keeps the first
/// MAX_LIST_ITEMS. Returns (kept, total).
fn collect<'a>(
    c: &mut Cursor<'a>,
    n: usize,
    mut read: impl FnMut(&mut Cursor<'a>) -> Res<Value>,
) -> Res<(Vec<Value>, usize)> {
    let mut out = Vec::with_capacity(n.min(MAX_LIST_ITEMS).min(64));
    for i in 0..n {
        let item = read(c)?;
        if i < MAX_LIST_ITEMS {
            out.push(item);
        }
    }
    Ok((out, n))
}

/// The key as text when it is printable UTF-8 (table keys usually are: names, paths).
fn printable(raw: &[u8]) -> Option<&str> {
    let s = std::str::from_utf8(raw).ok()?;
    s.chars().all(is_printable).then_some(s)
}

fn span(start: usize, c: &Cursor<'_>) -> Option<Span> {
    Some(Span::new(start, c.pos))
}

/// TableKey: payloadSize int, dataLength int, then (only if dataLength > 0) data and keyVersion.
fn read_table_key(c: &mut Cursor<'_>) -> Res<Value> {
    let mut key = Fields::new();
    let s = c.pos;
    let payload_size = c.i32(What("table key payload size", ""))?;
    key.set_span("payload_size", Value::Int(payload_size as i64), span(s, c));
    let start = c.pos;
    let n = c.i32(What("table key length", ""))?;
    if n < 0 {
        return bad(format!("table key: negative length {n}"), start);
    }
    key.set_span("key", Value::Bytes(Vec::new()), None);
    if n > 0 {
        let s = c.pos;
        let raw = c.take(n as i64, What("table key", ""))?;
        key.set_span("key", Value::Bytes(raw.to_vec()), span(s, c));
        if let Some(text) = printable(raw) {
            key.set_span("key_text", Value::Str(text.to_owned()), span(s, c));
        }
        let s = c.pos;
        let version = c.i64(What("table key version", ""))?;
        key.set_span("key_version", Value::Int(version), span(s, c));
        if version == LONG_MIN {
            key.set("key_version_meaning", Value::Str("NO_VERSION".into()));
        } else if version == -1 {
            key.set("key_version_meaning", Value::Str("NOT_EXISTS".into()));
        }
    }
    Ok(Value::Map(key))
}

/// TableValue: payloadSize int, dataLength int, data (absent when 0).
fn read_table_value(c: &mut Cursor<'_>) -> Res<Value> {
    let mut v = Fields::new();
    let s = c.pos;
    let payload_size = c.i32(What("table value payload size", ""))?;
    let ps = span(s, c);
    let start = c.pos;
    let n = c.i32(What("table value length", ""))?;
    if n < 0 {
        return bad(format!("table value: negative length {n}"), start);
    }
    v.set_span("payload_size", Value::Int(payload_size as i64), ps);
    let s = c.pos;
    let data = if n > 0 {
        c.take(n as i64, What("table value", ""))?.to_vec()
    } else {
        Vec::new()
    };
    v.set_span(
        "value",
        Value::Bytes(data),
        (n > 0).then(|| Span::new(s, c.pos)),
    );
    Ok(Value::Map(v))
}

fn read_table_entry(c: &mut Cursor<'_>) -> Res<Value> {
    let mut e = Fields::new();
    let s = c.pos;
    let key = read_table_key(c)?;
    e.set_span("key", key, span(s, c));
    let s = c.pos;
    let value = read_table_value(c)?;
    e.set_span("value", value, span(s, c));
    Ok(Value::Map(e))
}

/// Four blobs; the reader treats a missing trailing blob as empty.
fn read_iterator_args(c: &mut Cursor<'_>) -> Res<Value> {
    let mut out = Fields::new();
    for name in ["continuation_token", "prefix_filter", "from_key", "to_key"] {
        if c.left() >= 4 {
            let s = c.pos;
            let b = read_blob(c, name)?;
            out.set_span(name, Value::Bytes(b.to_vec()), span(s, c));
        } else {
            out.set(name, Value::Bytes(Vec::new()));
        }
    }
    Ok(Value::Map(out))
}

/// An embedded event record: `[int type, must be 0][int length][bytes]`.
fn read_event(c: &mut Cursor<'_>) -> Res<Value> {
    let start = c.pos;
    let kind = c.i32(What("event type", ""))?;
    if kind != 0 {
        return bad(
            format!("embedded event has type {kind}, not 0 (EVENT)"),
            start,
        );
    }
    let s = c.pos;
    let data = read_blob(c, "event data")?;
    let mut out = Fields::new();
    out.set_span("data", Value::Bytes(data.to_vec()), span(s, c));
    Ok(Value::Map(out))
}

fn read_chunk_info(c: &mut Cursor<'_>) -> Res<Value> {
    let mut out = Fields::new();
    for (name, what) in [
        ("length_in_metadata", "lengthInMetadata"),
        ("length_in_storage", "lengthInStorage"),
        ("start_offset", "startOffset"),
    ] {
        let s = c.pos;
        let v = c.i64(What(what, ""))?;
        out.set_span(name, Value::Int(v), span(s, c));
    }
    let s = c.pos;
    let name = read_str(c, "chunkName")?;
    out.set_span("chunk_name", Value::Str(name), span(s, c));
    let s = c.pos;
    let exists = c.u8(What("existsInStorage", ""))? != 0;
    out.set_span("exists_in_storage", Value::Bool(exists), span(s, c));
    Ok(Value::Map(out))
}

fn read_attribute_update(c: &mut Cursor<'_>) -> Res<Value> {
    let mut out = Fields::new();
    let s = c.pos;
    let id = uuid_text(c.take(16, What("attributeId", ""))?);
    out.set_span("attribute_id", Value::Str(id), span(s, c));
    let s = c.pos;
    let t = c.i8(What("attributeUpdateType", ""))? as i64;
    let v = match attribute_update_type(t) {
        Some(name) => Value::Str(name.into()),
        None => Value::Int(t),
    };
    out.set_span("update_type", v, span(s, c));
    for (name, what) in [("new_value", "newValue"), ("old_value", "oldValue")] {
        let s = c.pos;
        let v = c.i64(What(what, ""))?;
        out.set_span(name, Value::Int(v), span(s, c));
    }
    Ok(Value::Map(out))
}

fn read_merged_source(c: &mut Cursor<'_>) -> Res<Value> {
    let mut out = Fields::new();
    let s = c.pos;
    let source = read_str(c, "source")?;
    out.set_span("source", Value::Str(source), span(s, c));
    let s = c.pos;
    let off = c.i64(What("offset", ""))?;
    out.set_span("new_target_write_offset", Value::Int(off), span(s, c));
    Ok(Value::Map(out))
}

/// 16 bytes as `8-4-4-4-12` lowercase hex (Python's `str(uuid.UUID(bytes=…))`).
pub fn uuid_text(b: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push(HEX[(byte >> 4) as usize] as char);
        s.push(HEX[(byte & 15) as usize] as char);
    }
    s
}

/// One field's value; lists come back with their total item count.
fn read(c: &mut Cursor<'_>, f: &F) -> Res<(Value, Option<usize>)> {
    let name = f.name;
    let w = What(name, "");
    let v = match f.kind {
        FieldKind::Long => Value::Int(c.i64(w)?),
        FieldKind::Int => Value::Int(c.i32(w)? as i64),
        FieldKind::Str => Value::Str(read_str(c, name)?),
        FieldKind::Uuid => Value::Str(uuid_text(c.take(16, w)?)),
        FieldKind::Bool => Value::Bool(c.u8(w)? != 0),
        FieldKind::Byte => Value::Int(c.i8(w)? as i64),
        FieldKind::Blob => Value::Bytes(read_blob(c, name)?.to_vec()),
        FieldKind::Rest => Value::Bytes(c.rest().to_vec()),
        FieldKind::Zeros => {
            let start = c.pos;
            let data = c.rest();
            if data.iter().any(|&b| b != 0) {
                return bad("padding holds non-zero bytes".into(), start);
            }
            Value::Int(data.len() as i64)
        }
        FieldKind::Event => read_event(c)?,
        FieldKind::TableIteratorArgs => read_iterator_args(c)?,
        FieldKind::TableEntries => {
            let n = count(c, "table entries", 16)?;
            return list(collect(c, n, read_table_entry)?);
        }
        FieldKind::TableKeys => {
            let n = count(c, "table keys", 8)?;
            return list(collect(c, n, read_table_key)?);
        }
        FieldKind::Longs => {
            let n = count(c, name, 8)?;
            return list(collect(c, n, |c| Ok(Value::Int(c.i64(w)?)))?);
        }
        FieldKind::Strs => {
            let n = count(c, name, 2)?;
            return list(collect(c, n, |c| Ok(Value::Str(read_str(c, name)?)))?);
        }
        FieldKind::MergedSources => {
            let n = count(c, name, 10)?;
            return list(collect(c, n, read_merged_source)?);
        }
        FieldKind::ChunkInfos => {
            let n = count(c, name, 27)?;
            return list(collect(c, n, read_chunk_info)?);
        }
        FieldKind::AttributeUpdates => {
            let n = count(c, name, 33)?;
            return list(collect(c, n, read_attribute_update)?);
        }
    };
    Ok((v, None))
}

fn list((items, total): (Vec<Value>, usize)) -> Res<(Value, Option<usize>)> {
    Ok((Value::List(items), Some(total)))
}

/// Reads `fields` in wire order into `out`; returns the names of optional fields that were
/// absent. On error what was read before stays in `out`.
pub fn decode_fields(
    c: &mut Cursor<'_>,
    fields: &'static [F],
    out: &mut Fields,
) -> Result<Vec<&'static str>, FieldError> {
    let mut absent = Vec::new();
    for f in fields {
        if f.optional() && c.left() == 0 {
            let v = match f.default {
                Absent::Int(n) => Value::Int(n),
                Absent::Str(s) => Value::Str(s.into()),
                Absent::Bool(b) => Value::Bool(b),
                Absent::EmptyList => Value::List(Vec::new()),
                Absent::Required => Value::Null,
            };
            out.0.push(Field {
                name: Cow::Borrowed(f.name),
                value: v,
                span: None,
            });
            absent.push(f.name);
            continue;
        }
        let start = c.pos;
        let (value, total) = read(c, f)?;
        if let (Value::List(items), Some(total)) = (&value, total) {
            if total > items.len() {
                out.set(format!("{}_total", f.name), Value::Int(total as i64));
            }
        }
        // A row's field names are unique (checked by a test) and `out` starts empty: no
        // search for an existing name is needed.
        out.0.push(Field {
            name: Cow::Borrowed(f.name),
            value,
            span: Some(Span::new(start, c.pos)),
        });
    }
    Ok(absent)
}

/// Do `payload`'s bytes decode as `fields`, exactly (nothing left over)?
pub fn decodes_exactly(payload: &[u8], fields: &'static [F]) -> bool {
    let mut c = Cursor::new(payload, 0, payload.len());
    let mut scratch = Fields::new();
    decode_fields(&mut c, fields, &mut scratch).is_ok() && c.left() == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modified_utf8() {
        assert_eq!(java_utf(b"abc").as_deref(), Some("abc"));
        // U+0000 as C0 80.
        assert_eq!(java_utf(b"a\xc0\x80b").as_deref(), Some("a\0b"));
        // U+1F600 as a CESU-8 surrogate pair: D83D DE00.
        assert_eq!(
            java_utf(b"\xed\xa0\xbd\xed\xb8\x80").as_deref(),
            Some("\u{1F600}")
        );
        // A lone surrogate is not text.
        assert_eq!(java_utf(b"\xed\xa0\xbd"), None);
        assert_eq!(java_utf(b"\xff"), None);
    }

    #[test]
    fn uuid_format() {
        let b: Vec<u8> = (0u8..16).collect();
        assert_eq!(uuid_text(&b), "00010203-0405-0607-0809-0a0b0c0d0e0f");
    }

    #[test]
    fn short_and_bad_texts() {
        // A str whose length says 5 with 2 bytes left: Short at byte 2 (after the length).
        let buf = [0u8, 5, b'a', b'b'];
        let mut c = Cursor::new(&buf, 0, buf.len());
        let e = read_str(&mut c, "segment").unwrap_err();
        assert_eq!(e.message(), "segment at byte 2 needs 5 bytes, 2 left");
        // A negative blob length is a BadField at the length.
        let buf = [0xffu8, 0xff, 0xff, 0xfe];
        let mut c = Cursor::new(&buf, 0, buf.len());
        let e = read_blob(&mut c, "data").unwrap_err();
        assert_eq!(e.message(), "data: negative length -2 at byte 0");
        // A count that cannot fit: 2 longs need 16 bytes.
        let buf = [0u8, 0, 0, 2, 1, 2, 3];
        let mut c = Cursor::new(&buf, 0, buf.len());
        let e = count(&mut c, "updated_versions", 8).unwrap_err();
        assert_eq!(
            e.message(),
            "updated_versions: count 2 does not fit the 3 bytes left at byte 0"
        );
    }

    #[test]
    fn printable_keys() {
        assert_eq!(printable(b"scope/stream"), Some("scope/stream"));
        assert_eq!(printable(b"a\nb"), None);
        assert_eq!(printable(b"\xff"), None);
    }
}
