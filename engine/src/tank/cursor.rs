//! A bounds-checked cursor over a TANK frame (the twin of `wiredump/dissect/wire.py`'s `Cursor`
//! for what TANK reads): every read checks the bytes left first, so no declared length or count
//! can make a decoder read past its frame or allocate more than the frame holds; a short read is
//! a [`Short`] worded as the reference words it, with the frame offset where it happened.

use std::borrow::Cow;
use std::fmt;

use crate::model::Span;

/// A read that needs more bytes than remain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Short {
    pub what: Cow<'static, str>,
    pub offset: usize,
    pub need: i64,
    pub left: i64,
}

impl Short {
    pub fn new(what: impl Into<Cow<'static, str>>, offset: usize, need: i64, left: i64) -> Short {
        Short {
            what: what.into(),
            offset,
            need,
            left,
        }
    }
}

impl fmt::Display for Short {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} at byte {} needs {} bytes, {} left",
            self.what, self.offset, self.need, self.left
        )
    }
}

pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub end: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf[pos..end]` (`end` is clamped to the buffer).
    pub fn new(buf: &'a [u8], pos: usize, end: usize) -> Cursor<'a> {
        Cursor {
            buf,
            pos,
            end: end.min(buf.len()),
        }
    }

    /// Bytes left, negative when the cursor was moved past its end (a Consume header length
    /// pointing beyond the frame), as the reference's `Cursor.left` reports it.
    pub fn left_signed(&self) -> i64 {
        self.end as i64 - self.pos as i64
    }

    /// Fails unless `n` more bytes are there (`n` may be negative: always a failure).
    pub fn need_i(&self, n: i64, what: impl Into<Cow<'static, str>>) -> Result<(), Short> {
        if n < 0 || self.pos as i64 + n > self.end as i64 {
            return Err(Short::new(what, self.pos, n, self.left_signed()));
        }
        Ok(())
    }

    pub fn left(&self) -> usize {
        self.end.saturating_sub(self.pos)
    }

    fn short(&self, what: &'static str, need: usize) -> Short {
        Short::new(
            what,
            self.pos,
            need as i64,
            self.end as i64 - self.pos as i64,
        )
    }

    /// Fails unless `n` more bytes are there.
    pub fn need(&self, n: u64, what: impl Into<Cow<'static, str>>) -> Result<(), Short> {
        if n > self.left() as u64 {
            return Err(Short::new(
                what,
                self.pos,
                n as i64,
                self.end as i64 - self.pos as i64,
            ));
        }
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Short> {
        match self.buf.get(self.pos..self.pos + N) {
            Some(b) if self.pos + N <= self.end => {
                self.pos += N;
                let mut out = [0u8; N];
                out.copy_from_slice(b);
                Ok(out)
            }
            _ => Err(self.short(what, N)),
        }
    }

    pub fn u8(&mut self, what: &'static str) -> Result<u8, Short> {
        Ok(self.array::<1>(what)?[0])
    }

    pub fn u16le(&mut self, what: &'static str) -> Result<u16, Short> {
        Ok(u16::from_le_bytes(self.array(what)?))
    }

    pub fn u32le(&mut self, what: &'static str) -> Result<u32, Short> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    pub fn u64le(&mut self, what: &'static str) -> Result<u64, Short> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    /// `n` bytes, borrowed from the frame.
    pub fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Short> {
        if n > self.left() {
            return Err(self.short(what, n));
        }
        let v = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(v)
    }

    /// Everything left.
    pub fn rest(&mut self) -> &'a [u8] {
        let v = self.buf.get(self.pos..self.end).unwrap_or(&[]);
        self.pos = self.pos.max(self.end);
        v
    }

    /// Unsigned LEB128 of at most `max_bytes` bytes (wire.Cursor.uvarint, same wording).
    pub fn uvarint(&mut self, what: &'static str, max_bytes: usize) -> Result<u64, Short> {
        let start = self.pos;
        let mut value = 0u64;
        let mut shift = 0u32;
        for _ in 0..max_bytes {
            if self.pos >= self.end {
                return Err(Short::new(
                    what,
                    start,
                    (self.pos - start + 1) as i64,
                    self.end as i64 - start as i64,
                ));
            }
            let b = self.buf[self.pos];
            self.pos += 1;
            if shift < 64 {
                value |= u64::from(b & 0x7F) << shift;
            }
            if b & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
        }
        Err(Short::new(
            format!("{what} (longer than {max_bytes} bytes)"),
            start,
            max_bytes as i64 + 1,
            self.end as i64 - start as i64,
        ))
    }

    /// The span from `start` to the cursor (a field just read).
    pub fn span(&self, start: usize) -> Option<Span> {
        Some(Span::new(start, self.pos))
    }
}

/// `str8`: a u8 length and that many bytes of UTF-8 (invalid bytes replaced, as Python's
/// `decode("utf-8", "replace")`), with the span of the whole encoding.
pub fn str8(
    c: &mut Cursor<'_>,
    what_len: &'static str,
    what: &'static str,
) -> Result<(String, Option<Span>), Short> {
    let start = c.pos;
    let n = c.u8(what_len)?;
    let b = c.take(usize::from(n), what)?;
    Ok((String::from_utf8_lossy(b).into_owned(), c.span(start)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_reads_are_worded_as_the_reference() {
        let b = [1u8, 2, 3];
        let mut c = Cursor::new(&b, 1, 3);
        assert_eq!(
            c.u32le("request id").unwrap_err().to_string(),
            "request id at byte 1 needs 4 bytes, 2 left"
        );
        assert_eq!(c.u16le("x").unwrap(), 0x0302);
        let v = [0x80u8, 0x80, 0x80, 0x80, 0x80, 0x01];
        let mut c = Cursor::new(&v, 0, 6);
        assert_eq!(
            c.uvarint("bundle length", 5).unwrap_err().to_string(),
            "bundle length (longer than 5 bytes) at byte 0 needs 6 bytes, 6 left"
        );
        let mut c = Cursor::new(&v, 0, 2);
        assert_eq!(
            c.uvarint("bundle length", 5).unwrap_err().to_string(),
            "bundle length at byte 0 needs 3 bytes, 2 left"
        );
        let w = [0xACu8, 0x02];
        assert_eq!(Cursor::new(&w, 0, 2).uvarint("v", 5).unwrap(), 300);
    }
}
