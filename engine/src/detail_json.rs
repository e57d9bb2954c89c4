//! The `detail` columns: a decode ([`Fields`]) as compact JSON text, byte for byte as the Python
//! reference writes it (`tables.to_json`: orjson, with `json.dumps` as its fallback).
//!
//! What that text is, measured on orjson 3.x and `json.dumps(ensure_ascii=False,
//! separators=(",", ":"))`: keys in insertion (wire) order, no spaces; strings keep non-ASCII
//! as UTF-8 and escape `"`, `\`, `\b \t \n \f \r` and the other control characters below 0x20
//! as `\u00XX` (lower-case hex); bytes are lower-case hex, cut after [`MAX_DETAIL_BYTES`] with
//! `…(+N bytes)`; integers in full; floats as the shortest text that reads back the same, laid
//! out as orjson does (decimal for exponents -5..=15, else `1.5e+16`, `1e-7`), non-finite
//! floats as `null`. orjson refuses nesting deeper than [`ORJSON_MAX_DEPTH`]; Python then falls
//! back to `json.dumps`, whose floats follow `repr` (`1e-05`, `NaN`, `Infinity`), and so does
//! this writer. (Python's fallback also covers integers beyond 64 bits, which [`Value`] cannot
//! hold.)

use std::fmt::Write as _;

use crate::model::{Fields, Value};

/// Bytes values longer than this are cut in `detail` (the values themselves are in `messages`).
pub const MAX_DETAIL_BYTES: usize = 4096;

/// The deepest nesting of objects and arrays orjson writes (the fields object counts as one).
pub const ORJSON_MAX_DEPTH: usize = 254;

/// Which of the reference's two writers the text must match.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Orjson,
    /// `json.dumps`: Python's fallback when orjson refuses the value.
    Json,
}

/// The text would nest deeper than orjson writes ([`ORJSON_MAX_DEPTH`]).
#[derive(Debug)]
pub struct TooDeep;

/// The JSON text of a decode, as the reference's `to_json` gives it.
pub fn fields_json(fields: &Fields) -> String {
    let mut out = String::new();
    write_fields_json(&mut out, fields);
    out
}

/// As [`fields_json`], into `out` (cleared first): the table builders reuse one buffer.
pub fn write_fields_json(out: &mut String, fields: &Fields) {
    write_frame_json(out, fields, None);
}

/// A frame's `detail`: as [`write_fields_json`], with the top-level `body` field's value given
/// as its text (`body`, see [`crate::model::Frame::body_text`]) where the frame has one.
///
/// The body's text was written as orjson writes it, at the depth it has here (2), and only when
/// it fits orjson's depth limit there; the frame's other fields are shallow, so the frame as a
/// whole never falls back to `json.dumps` with a body text (which would then be orjson's).
pub fn write_frame_json(out: &mut String, fields: &Fields, body: Option<&str>) {
    out.clear();
    if write_fields(out, fields, Style::Orjson, 1, body).is_err() {
        out.clear();
        // json.dumps has no depth limit of its own below Python's recursion limit.
        let _ = write_fields(out, fields, Style::Json, 1, body);
    }
}

fn write_fields(
    out: &mut String,
    fields: &Fields,
    style: Style,
    depth: usize,
    body: Option<&str>,
) -> Result<(), TooDeep> {
    if style == Style::Orjson && depth > ORJSON_MAX_DEPTH {
        return Err(TooDeep);
    }
    out.push('{');
    for (i, f) in fields.0.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_str(out, &f.name);
        out.push(':');
        match body {
            Some(text) if f.name == "body" => out.push_str(text),
            _ => write_value(out, &f.value, style, depth)?,
        }
    }
    out.push('}');
    Ok(())
}

/// An integer in decimal.
pub fn write_int(out: &mut String, i: i64) {
    out.push_str(itoa::Buffer::new().format(i));
}

/// A float as orjson writes it.
pub fn write_float_orjson(out: &mut String, x: f64) {
    write_float(out, x, Style::Orjson);
}

/// A value as orjson writes it at `depth` (that of the object or array holding it).
pub fn write_value_orjson(out: &mut String, v: &Value, depth: usize) -> Result<(), TooDeep> {
    write_value(out, v, Style::Orjson, depth)
}

fn write_value(out: &mut String, v: &Value, style: Style, depth: usize) -> Result<(), TooDeep> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(i) => {
            if *i < 0 {
                out.push('-');
            }
            write_u64(out, i.unsigned_abs());
        }
        Value::UInt(u) => write_u64(out, *u),
        Value::Float(x) => write_float(out, *x, style),
        Value::Str(s) => write_str(out, s),
        Value::Bytes(b) => write_hex(out, b),
        Value::List(items) => {
            if style == Style::Orjson && depth + 1 > ORJSON_MAX_DEPTH {
                return Err(TooDeep);
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, style, depth + 1)?;
            }
            out.push(']');
        }
        Value::Map(m) => write_fields(out, m, style, depth + 1, None)?,
    }
    Ok(())
}

/// Whether any byte is a control character, `"` or `\\`; eight bytes at a time (the scan is the
/// hot path of `detail`: decodes hold long strings, and short names by the dozen).
fn needs_escape(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Exact as a yes/no test (Hacker's Delight / "Bit Twiddling Hacks": haszero, hasless).
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH != 0;
    let bad = |w: u64| {
        w.wrapping_sub(ONES * 0x20) & !w & HIGH != 0
            || has_zero(w ^ (ONES * u64::from(b'"')))
            || has_zero(w ^ (ONES * u64::from(b'\\')))
    };
    let word = |c: &[u8]| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
    let n = bytes.len();
    if n < 8 {
        // Padded with spaces, which need no escape: one word, no byte-by-byte tail.
        let mut w = [b' '; 8];
        w[..n].copy_from_slice(bytes);
        return bad(u64::from_le_bytes(w));
    }
    let mut chunks = bytes.chunks_exact(8);
    if chunks.by_ref().any(|c| bad(word(c))) {
        return true;
    }
    // The tail as the last eight bytes (some read twice: the answer is the same).
    !chunks.remainder().is_empty() && bad(word(&bytes[n - 8..]))
}

/// A string, quoted and escaped as orjson and `json.dumps(ensure_ascii=False)` both do.
pub fn write_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    // Most names and values need no escape: one scan, one copy, room made once.
    if !needs_escape(bytes) {
        out.reserve(bytes.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
        return;
    }
    out.push('"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &str = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0c => "\\f",
            0..=0x1f => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if esc.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(esc);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// An unsigned integer in decimal (itoa: two digits per step, no formatting machinery; a
/// frame's detail holds dozens of integers).
fn write_u64(out: &mut String, v: u64) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Bytes as lower-case hex, cut after [`MAX_DETAIL_BYTES`].
pub fn write_hex(out: &mut String, b: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let shown = &b[..b.len().min(MAX_DETAIL_BYTES)];
    out.reserve(shown.len() * 2 + 24);
    out.push('"');
    // Hex digits are ASCII: each chunk of pairs is pushed as one str.
    let mut pairs = [0u8; 128];
    for chunk in shown.chunks(64) {
        for (j, &x) in chunk.iter().enumerate() {
            pairs[2 * j] = HEX[(x >> 4) as usize];
            pairs[2 * j + 1] = HEX[(x & 15) as usize];
        }
        out.push_str(std::str::from_utf8(&pairs[..2 * chunk.len()]).unwrap_or_default());
    }
    if b.len() > MAX_DETAIL_BYTES {
        let _ = write!(out, "…(+{} bytes)", b.len() - MAX_DETAIL_BYTES);
    }
    out.push('"');
}

/// A float as orjson writes it (also how it names a float dict key).
pub fn orjson_float(x: f64) -> String {
    let mut s = String::new();
    write_float(&mut s, x, Style::Orjson);
    s
}

/// A float as orjson writes it (`Style::Orjson`) or as Python's `repr` does (`Style::Json`).
///
/// Both print the shortest digits that read back as the same double (Rust's `{:e}` gives the
/// same digits); they differ only in where they switch to an exponent and how they write it.
fn write_float(out: &mut String, x: f64, style: Style) {
    if !x.is_finite() {
        out.push_str(match style {
            Style::Orjson => "null",
            Style::Json if x.is_nan() => "NaN",
            Style::Json if x > 0.0 => "Infinity",
            Style::Json => "-Infinity",
        });
        return;
    }
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if x.is_sign_negative() {
        out.push('-');
    }
    let decimal = match style {
        Style::Orjson => (-5..16).contains(&exp),
        Style::Json => (-4..16).contains(&exp),
    };
    let n = digits.len() as i32;
    if decimal {
        if exp >= 0 {
            if n <= exp + 1 {
                out.push_str(&digits);
                out.extend(std::iter::repeat_n('0', (exp + 1 - n) as usize));
                out.push_str(".0");
            } else {
                let (int, frac) = digits.split_at(exp as usize + 1);
                out.push_str(int);
                out.push('.');
                out.push_str(frac);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(&digits);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        match style {
            Style::Orjson => {
                let _ = write!(out, "{}", exp.unsigned_abs());
            }
            Style::Json => {
                let _ = write!(out, "{:02}", exp.unsigned_abs());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr_float(x: f64) -> String {
        let mut s = String::new();
        write_float(&mut s, x, Style::Json);
        s
    }

    #[test]
    fn floats_as_orjson_writes_them() {
        // Expected texts printed by orjson 3.13 (`orjson.dumps(x)`), by hand from a Python shell.
        let cases = [
            (1.0, "1.0"),
            (0.1, "0.1"),
            (1e20, "1e+20"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123456789012345680000.0, "1.2345678901234568e+20"),
            (1e-7, "1e-7"),
            (1e-5, "0.00001"),
            (1.5e-5, "0.000015"),
            (1e-6, "1e-6"),
            (-0.0, "-0.0"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (99.99000000000001, "99.99000000000001"),
            (-2.5, "-2.5"),
        ];
        for (x, want) in cases {
            assert_eq!(orjson_float(x), want, "{x:e}");
        }
    }

    #[test]
    fn floats_as_python_repr_writes_them() {
        let cases = [
            (1e-5, "1e-05"),
            (1e-4, "0.0001"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (f64::NAN, "NaN"),
            (f64::NEG_INFINITY, "-Infinity"),
            (100.0, "100.0"),
        ];
        for (x, want) in cases {
            assert_eq!(repr_float(x), want, "{x:e}");
        }
    }

    #[test]
    fn strings_bytes_and_order() {
        let mut f = Fields::new();
        f.set("z", Value::Str("a\"b\\c\n\u{1}\u{7f}é€\u{2028}".into()));
        f.set("a", Value::Bytes(vec![0, 0xab, 0xff]));
        f.set(
            "n",
            Value::List(vec![Value::Int(-1), Value::UInt(u64::MAX), Value::Null]),
        );
        let mut inner = Fields::new();
        inner.set("t", Value::Bool(true));
        f.set("m", Value::Map(inner));
        assert_eq!(
            fields_json(&f),
            "{\"z\":\"a\\\"b\\\\c\\n\\u0001\u{7f}é€\u{2028}\",\"a\":\"00abff\",\
             \"n\":[-1,18446744073709551615,null],\"m\":{\"t\":true}}"
        );
    }

    #[test]
    fn the_escape_scan_finds_every_byte_that_needs_one() {
        for len in 0..20 {
            for at in 0..len {
                for b in 0u8..=255 {
                    let mut v = vec![b'a'; len];
                    v[at] = b;
                    let want = b < 0x20 || b == b'"' || b == b'\\';
                    assert_eq!(needs_escape(&v), want, "len {len} at {at} byte {b}");
                    // Non-ASCII neighbours (UTF-8 lead and continuation bytes) do not confuse it.
                    v.iter_mut().filter(|x| **x == b'a').for_each(|x| *x = 0xc3);
                    assert_eq!(
                        needs_escape(&v),
                        want,
                        "len {len} at {at} byte {b} amid 0xc3"
                    );
                }
            }
        }
    }

    #[test]
    fn integers_in_full() {
        let mut f = Fields::new();
        let ints = [0, 7, -1, 10, -10, 1234567890, i64::MIN, i64::MAX];
        f.set(
            "i",
            Value::List(ints.iter().map(|&i| Value::Int(i)).collect()),
        );
        f.set(
            "u",
            Value::List(vec![Value::UInt(0), Value::UInt(u64::MAX)]),
        );
        let want = format!(
            "{{\"i\":[{}],\"u\":[0,18446744073709551615]}}",
            ints.map(|i| i.to_string()).join(",")
        );
        assert_eq!(fields_json(&f), want);
    }

    #[test]
    fn long_bytes_are_cut() {
        let mut f = Fields::new();
        f.set("b", Value::Bytes(vec![0x5a; MAX_DETAIL_BYTES + 3]));
        let s = fields_json(&f);
        assert!(s.ends_with("5a…(+3 bytes)\"}"));
        assert_eq!(s.matches("5a").count(), MAX_DETAIL_BYTES);
    }

    #[test]
    fn too_deep_for_orjson_is_written_as_json_dumps() {
        fn nested(depth: usize, leaf: Value) -> Fields {
            // `depth` containers in all, the outer fields object included.
            let mut v = leaf;
            for _ in 1..depth {
                v = Value::List(vec![v]);
            }
            let mut f = Fields::new();
            f.set("a", v);
            f
        }
        let ok = fields_json(&nested(ORJSON_MAX_DEPTH, Value::Float(1e-5)));
        assert!(ok.contains("0.00001"));
        let deep = fields_json(&nested(ORJSON_MAX_DEPTH + 1, Value::Float(1e-5)));
        assert!(deep.contains("1e-05") && deep.starts_with("{\"a\":[["));
    }
}
