//! The plain timeline's text pieces, each the twin of the Python function named in its doc
//! (`wiredump/cli/escape.py`, `wiredump/cli/render.py`), written into a caller's `String` so a
//! line costs no allocation of its own. The Python functions stay the reference (the colour, -V
//! and filtered timelines use them); `tests/test_timeline_native_render.py` compares the two
//! renderers' output byte for byte on every capture.

use std::fmt::Write;

use crate::printable::is_printable;

/// `c.isprintable()`: ranges every line holds answered at once (ASCII; Latin-1 and the rest
/// up to U+0377 but U+00AD, for `µ`; the arrows block, for `→` and `←`), the Unicode table
/// ([`is_printable`]) for the rest. A test checks the ranges against the table.
#[inline]
fn printable(c: char) -> bool {
    match c as u32 {
        0x20..=0x7e => true,
        0..=0x1f | 0x7f..=0xa0 | 0xad => false,
        0xa1..=0x377 | 0x2190..=0x21ff => true,
        _ => is_printable(c),
    }
}

/// `s` as Python's `str.isprintable()` sees it, and without a backslash: the text `escape`
/// returns unchanged.
pub fn is_plain(s: &str) -> bool {
    all_printable(s, b'\\')
}

/// Every character of `s` printable and none the ASCII `but`. Lines and wire strings are mostly
/// ASCII: every byte is tested at once for a control character or `but` (a loop without an
/// early exit, which the compiler vectorizes), and only the non-ASCII characters are decoded,
/// where they start.
#[inline]
fn all_printable(s: &str, but: u8) -> bool {
    let b = s.as_bytes();
    // Short pieces (an address, a time, a type name) are printable ASCII nearly always: one
    // byte loop says so without the vector loop's set-up; anything else takes the whole check.
    if b.len() <= 24 && b.iter().all(|&c| c.wrapping_sub(0x20) < 0x5f && c != but) {
        return true;
    }
    all_printable_checked(b, s, but)
}

/// [`all_printable`] past its short-piece shortcut.
fn all_printable_checked(b: &[u8], s: &str, but: u8) -> bool {
    let (mut bad, mut wide) = (false, false);
    for &c in b {
        // A UTF-8 byte of a wider character is >= 0x80: never a control, 0x7f or `but`.
        bad |= c < 0x20 || c == 0x7f || c == but;
        wide |= c >= 0x80;
    }
    if bad {
        return false;
    }
    if !wide {
        return true;
    }
    let mut i = 0;
    while let Some(off) = b[i..].iter().position(|&c| c >= 0x80) {
        // `i + off` starts a character: every byte before it from `i` is ASCII.
        let Some(ch) = s[i + off..].chars().next() else {
            break;
        };
        if !printable(ch) {
            return false;
        }
        i += off + ch.len_utf8();
    }
    true
}

/// `s.isprintable()` in Python.
pub fn is_printable_str(s: &str) -> bool {
    // 0x7f is not printable: as `but`, it excludes nothing more.
    all_printable(s, 0x7f)
}

/// `escape(s)` (`wiredump/cli/escape.py`, without a quote): every character a terminal would act
/// on written as a visible escape, a backslash doubled; printable text unchanged.
pub fn escape_into(out: &mut String, s: &str) {
    if is_plain(s) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            c if printable(c) => out.push(c),
            c => crate::printable::push_code_escape(out, c),
        }
    }
}

/// `escape(s)` as a new string.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

/// `format_latency(us)` (render.py): µs below a millisecond, then ms and s with three decimals.
///
/// Python formats the float quotient. In milliseconds that is `us / 1000` with its three
/// decimals exactly (the nearest double to a 6-digit decimal prints back as it). In seconds the
/// three decimals round µs away; the double is within 1e-7 s of the exact quotient for any
/// latency below ~30 years, far closer than 1 µs, so it rounds as the integers do, except on a
/// tie (`…500` µs), where the double's own side of the tie decides: that case keeps `{:.3}`
/// (Rust rounds the exact binary value, as Python does).
pub fn push_latency(out: &mut String, us: i64) {
    if us < 1000 {
        push_int(out, us);
        out.push_str("µs");
    } else if us < 1_000_000 {
        push_int(out, us / 1000);
        out.push('.');
        push_int_zeros(out, us % 1000, 3);
        out.push_str("ms");
    } else if us % 1000 == 500 || us >= 1 << 50 {
        let _ = write!(out, "{:.3}s", us as f64 / 1_000_000.0);
    } else {
        let ms = us / 1000 + i64::from(us % 1000 > 500);
        push_int(out, ms / 1000);
        out.push('.');
        push_int_zeros(out, ms % 1000, 3);
        out.push('s');
    }
}

/// `plural(n, word)` (render.py): `1 packet`, `2 packets`.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The `-t` formats (`render.TIME_FORMATS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeMode {
    Relative,
    Delta,
    Absolute,
    AbsoluteDate,
    Epoch,
}

impl TimeMode {
    /// The mode `-t` names (`r`, `d`, `a`, `ad`, `e`); None for another word (Python checks it
    /// first: `timeline.check_time`).
    pub fn parse(s: &str) -> Option<TimeMode> {
        Some(match s {
            "r" => TimeMode::Relative,
            "d" => TimeMode::Delta,
            "a" => TimeMode::Absolute,
            "ad" => TimeMode::AbsoluteDate,
            "e" => TimeMode::Epoch,
            _ => return None,
        })
    }
}

/// `Clock` (render.py): frame times the way `-t` asks.
#[derive(Debug)]
pub struct Clock {
    mode: TimeMode,
    base: Option<i64>,
    prev: Option<i64>,
}

/// `{d // 1_000_000}.{d % 1_000_000:06d}` for d ≥ 0, else `-{-d / 1e6:.6f}` (render.py).
fn push_seconds(out: &mut String, d: i64) {
    if d >= 0 {
        push_int(out, d / 1_000_000);
        out.push('.');
        push_int_zeros(out, d % 1_000_000, 6);
    } else {
        let _ = write!(out, "-{:.6}", -(d as f64) / 1e6);
    }
}

/// Appends `n` in decimal (`f"{n}"`), without `core::fmt`'s machinery: a line has several.
#[inline]
pub fn push_int(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Appends `n` right-aligned in `width` characters (`f"{n:>width}"`).
#[inline]
pub fn push_int_right(out: &mut String, n: impl itoa::Integer, width: usize) {
    push_right(out, itoa::Buffer::new().format(n), width);
}

/// Appends `n` ≥ 0 zero-padded to `width` digits (`f"{n:0width}"`).
#[inline]
fn push_int_zeros(out: &mut String, n: i64, width: usize) {
    let mut buf = itoa::Buffer::new();
    let s = buf.format(n);
    for _ in s.len()..width {
        out.push('0');
    }
    out.push_str(s);
}

/// Days since 1970-01-01 as (year, month, day) in the proleptic Gregorian calendar (Howard
/// Hinnant's `civil_from_days`), as Python's `datetime.fromtimestamp(…, tz=utc)` counts them.
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

impl Clock {
    pub fn new(mode: TimeMode) -> Clock {
        Clock {
            mode,
            base: None,
            prev: None,
        }
    }

    /// A new capture: relative times count from its first packet.
    pub fn start(&mut self, first_ts_us: Option<i64>) {
        self.base = first_ts_us;
        self.prev = None;
    }

    /// `Clock.format(ts_us, advance)` into `out`.
    pub fn format(&mut self, out: &mut String, ts_us: Option<i64>, advance: bool) {
        let ts = match ts_us {
            None | Some(0) => {
                out.push('-');
                return;
            }
            Some(ts) => ts,
        };
        match self.mode {
            TimeMode::Relative => push_seconds(out, ts - self.base.unwrap_or(ts)),
            TimeMode::Delta => {
                let prev = self.prev.unwrap_or(ts);
                if advance {
                    self.prev = Some(ts);
                }
                push_seconds(out, ts - prev);
            }
            TimeMode::Epoch => {
                let _ = write!(
                    out,
                    "{}.{:06}",
                    ts.div_euclid(1_000_000),
                    ts.rem_euclid(1_000_000)
                );
            }
            TimeMode::Absolute | TimeMode::AbsoluteDate => {
                let secs = ts.div_euclid(1_000_000);
                let us = ts.rem_euclid(1_000_000);
                let (days, tod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
                if self.mode == TimeMode::AbsoluteDate {
                    let (y, m, d) = civil(days);
                    let _ = write!(out, "{y:04}-{m:02}-{d:02} ");
                }
                let _ = write!(
                    out,
                    "{:02}:{:02}:{:02}.{us:06}",
                    tod / 3600,
                    tod / 60 % 60,
                    tod % 60
                );
            }
        }
    }
}

/// Appends `s` right-aligned in `width` characters (Python's `f"{s:>width}"`).
pub fn push_right(out: &mut String, s: &str, width: usize) {
    let n = s.chars().count();
    for _ in n..width {
        out.push(' ');
    }
    out.push_str(s);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_padded_digits_are_formats() {
        for width in [3usize, 6] {
            for n in (0..2_000_000i64)
                .step_by(997)
                .chain([0, 9, 10, 999, 1000, 999_999, 1_000_000])
            {
                let mut out = String::from("x");
                push_int_zeros(&mut out, n, width);
                assert_eq!(out, format!("x{n:0width$}"), "{n} in {width}");
            }
        }
    }

    #[test]
    fn escape_as_python_writes_it() {
        // Each expected text worked out by hand from escape.py's table.
        let cases = [
            ("plain text", "plain text"),
            ("a\\b", "a\\\\b"),
            ("\0\u{7}\u{8}\t\n\u{b}\u{c}\r", "\\0\\a\\b\\t\\n\\v\\f\\r"),
            ("\u{1b}[2J", "\\x1b[2J"),
            ("é€中", "é€中"),
            ("\u{85}\u{a0}", "\\x85\\xa0"),
            ("\u{202e}x", "\\u202ex"),
            ("\u{e0001}", "\\U000e0001"),
        ];
        for (s, want) in cases {
            assert_eq!(escape(s), want, "{s:?}");
        }
        assert!(is_printable_str("→ µ é"));
        // The fast ranges of `printable` say what the table says.
        for n in (0..0x378).chain(0x2190..0x2200) {
            let c = char::from_u32(n).expect("a char");
            assert_eq!(printable(c), is_printable(c), "U+{n:04X}");
        }
        assert!(!is_printable_str("a\u{1b}"));
    }

    #[test]
    fn byte_scan_answers_as_the_characters() {
        // `all_printable` reads ASCII by the byte: every ASCII byte, and non-ASCII characters
        // around and between them, against `printable` on each character.
        // Each ASCII byte also in short ASCII pieces (the shortcut: up to 24 bytes) and in one
        // just past it (the vector loop).
        let mut cases: Vec<String> = (0u8..0x80).map(|b| format!("ab{}é→", b as char)).collect();
        for b in 0u8..0x80 {
            let c = b as char;
            cases.push(format!("{c}"));
            cases.push(format!("10.0.0.1{c}"));
            cases.push(format!("{}{c}", "x".repeat(23)));
            cases.push(format!("{}{c}", "x".repeat(24)));
        }
        cases.extend(
            [
                "",
                "→",
                "é\u{85}",
                "\u{a0}x",
                "中\u{202e}",
                "x\u{e0001}",
                "\u{7f}",
                "a\\b",
                "µs",
            ]
            .map(str::to_owned),
        );
        for s in &cases {
            let want = s.chars().all(printable);
            assert_eq!(is_printable_str(s), want, "{s:?}");
            assert_eq!(is_plain(s), want && !s.contains('\\'), "{s:?}");
        }
    }

    #[test]
    fn latency_as_format_latency() {
        let mut s = String::new();
        for us in [0, 999, 1000, 1_062_500, 999_999, 12_345_678] {
            push_latency(&mut s, us);
            s.push('|');
        }
        // 1_062_500 µs is 1.0625 s, a tie kept even as Python's float format keeps it.
        assert_eq!(s, "0µs|999µs|1.000ms|1.062s|999.999ms|12.346s|");
        // Python 3.11's f"{us / 1e6:.3f}s" / f"{us / 1000:.3f}ms", each printed by hand: ties
        // go the double's way (2.0005 is stored above it, 1.0005 below), the rest round half up.
        let mut s = String::new();
        for us in [
            1_000_501,
            1_000_499,
            2_000_500,
            1_000_500,
            59_999_999,
            59_999_500,
            1_999_999,
            123_456_789_012,
            1001,
            12_345,
            -5,
        ] {
            push_latency(&mut s, us);
            s.push('|');
        }
        assert_eq!(
            s,
            "1.001s|1.000s|2.001s|1.000s|60.000s|59.999s|2.000s|123456.789s|1.001ms|12.345ms|-5µs|"
        );
    }

    #[test]
    fn latency_digits_are_the_float_formats_digits() {
        // The integer paths against the float formatting they stand for, over every µs up to
        // 2.1 s in steps that visit every remainder modulo 1000.
        for us in (1000..2_100_000).step_by(997) {
            let mut s = String::new();
            push_latency(&mut s, us);
            let f = if us < 1_000_000 {
                format!("{:.3}ms", us as f64 / 1000.0)
            } else {
                format!("{:.3}s", us as f64 / 1_000_000.0)
            };
            assert_eq!(s, f, "{us}");
        }
    }

    #[test]
    fn integers_as_python_formats_them() {
        let mut s = String::new();
        push_int_right(&mut s, 42u64, 6); // f"{42:>6}"
        push_int_right(&mut s, 1234567u64, 6); // wider than the field: as is
        push_int(&mut s, -3i64);
        push_int_right(&mut s, 7u64, 3);
        assert_eq!(s, "    421234567-3  7");
    }

    #[test]
    fn clock_text_is_always_printable() {
        // The frame line's guard does not look at the time (`FrameLine::printable`): every mode
        // over extreme and ordinary times, both signs, writes only printable ASCII (±2^61 µs,
        // 73,000 years either way, keeps the differences of two times within an i64).
        let times = [
            -(1i64 << 61),
            -86_400_000_000_123,
            -1,
            1,
            999_999,
            1_700_000_000_123_456,
            253_402_300_799_999_999,
            1i64 << 61,
        ];
        for mode in [
            TimeMode::Relative,
            TimeMode::Delta,
            TimeMode::Absolute,
            TimeMode::AbsoluteDate,
            TimeMode::Epoch,
        ] {
            for &base in &times {
                for &t in &times {
                    let mut c = Clock::new(mode);
                    c.start(Some(base));
                    let mut s = String::new();
                    c.format(&mut s, Some(t), true);
                    c.format(&mut s, Some(base), true);
                    assert!(
                        s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'\\'),
                        "{mode:?} {base} {t}: {s:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn clock_formats() {
        let ts = 1_700_000_000_123_456; // 2023-11-14 22:13:20.123456 UTC
        let fmt = |mode, ts, base: Option<i64>| {
            let mut c = Clock::new(mode);
            c.start(base);
            let mut s = String::new();
            c.format(&mut s, ts, true);
            s
        };
        assert_eq!(
            fmt(TimeMode::Relative, Some(ts), Some(ts - 1_500_000)),
            "1.500000"
        );
        assert_eq!(
            fmt(TimeMode::Relative, Some(ts), Some(ts + 1_500_000)),
            "-1.500000"
        );
        assert_eq!(fmt(TimeMode::Relative, Some(ts), None), "0.000000");
        // Microseconds zero-padded to six digits, seconds as they are.
        assert_eq!(fmt(TimeMode::Relative, Some(ts), Some(ts - 7)), "0.000007");
        assert_eq!(
            fmt(TimeMode::Relative, Some(ts), Some(ts - 123_040_500)),
            "123.040500"
        );
        assert_eq!(fmt(TimeMode::Epoch, Some(ts), None), "1700000000.123456");
        assert_eq!(fmt(TimeMode::Absolute, Some(ts), None), "22:13:20.123456");
        assert_eq!(
            fmt(TimeMode::AbsoluteDate, Some(ts), None),
            "2023-11-14 22:13:20.123456"
        );
        assert_eq!(
            fmt(TimeMode::AbsoluteDate, Some(-1), None),
            "1969-12-31 23:59:59.999999"
        );
        assert_eq!(fmt(TimeMode::Epoch, Some(0), None), "-");
        assert_eq!(fmt(TimeMode::Epoch, None, None), "-");
        let mut c = Clock::new(TimeMode::Delta);
        c.start(Some(5));
        let mut s = String::new();
        for (t, adv) in [
            (10, true),
            (2_000_010, false),
            (3_000_010, true),
            (1_000_010, true),
        ] {
            c.format(&mut s, Some(t), adv);
            s.push('|');
        }
        assert_eq!(s, "0.000000|2.000000|3.000000|-2.000000|");
    }
}
