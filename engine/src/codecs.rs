//! Decompression with hard output limits, for the codecs every protocol uses (mirrors
//! `wiredump/dissect/codecs.py` and `limits.py`): a bomb becomes a `decompression_limit`
//! problem instead of a memory blow-up, broken data a `decompression_failed` one.
//!
//! The limit messages are the reference's, word for word; a library's own error text differs
//! between the Python and Rust libraries, so only the codec prefix of a failure is shared.

use std::io::Read;

const MIB: u64 = 1024 * 1024;

/// Anomaly kind: a frame's body held more array elements than `Limits::max_elements` (Python's
/// `limits.ELEMENT_LIMIT`, declared in `anomalies.py`); the frame's status does not change.
pub const ELEMENT_LIMIT: &str = "element_limit";

/// Bounds on decompression and kept messages for one run (as `limits.Limits`).
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest output of one decompression.
    pub max_decompressed: u64,
    /// Total decompressed output allowed for one capture.
    pub max_decompressed_total: u64,
    /// Largest output/input ratio once the output passes `ratio_floor` bytes.
    pub max_ratio: u64,
    pub ratio_floor: u64,
    /// Output so far in this run.
    pub decompressed_total: u64,
    /// Messages one frame keeps; past it they are read, checked and counted only.
    pub max_messages: u64,
    /// Batches of messages (TANK bundles) one frame lists in its fields; past it they are read,
    /// checked and counted only (a `batch_limit` anomaly; Python's `Limits.max_batches`).
    pub max_batches: u64,
    /// Array elements one frame's body keeps in its decoded tree; past it they are read and
    /// checked only (an `element_limit` anomaly; Python's `Limits.max_elements`).
    pub max_elements: u64,
    /// Bytes of a frame's structured command (Pulsar's BaseCommand) that are parsed; past it the
    /// frame is named and sized only (`command_limit`; Python's `Limits.max_command_bytes`).
    pub max_command_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_decompressed: 64 * MIB,
            max_decompressed_total: 2048 * MIB,
            max_ratio: 1000,
            ratio_floor: MIB,
            decompressed_total: 0,
            max_messages: 25_000,
            max_batches: 10_000,
            max_elements: 100_000,
            max_command_bytes: 2 * MIB,
        }
    }
}

impl Limits {
    /// The `message_limit` anomaly's detail for a frame that carried `total` messages of which
    /// `kept` were kept as rows, or None when none were left out (the words of Python's
    /// `Limits.over_messages`). The frame's status does not change: the cap is ours.
    pub fn over_messages(&self, kept: u64, total: u64) -> Option<String> {
        (total > kept).then(|| {
            format!(
                "{total} messages in the frame; the first {kept} are kept as rows, {} more were \
                 read and counted only (limit {} per frame)",
                total - kept,
                self.max_messages
            )
        })
    }

    /// The `batch_limit` anomaly's detail for a frame that carried `total` batches of which
    /// `listed` are listed in its fields, or None when none were left out (the words of Python's
    /// `Limits.over_batches`).
    pub fn over_batches(&self, listed: u64, total: u64) -> Option<String> {
        (total > listed).then(|| {
            format!(
                "{total} batches in the frame; the first {listed} are listed in its fields, {} \
                 more were read and counted only (limit {} per frame)",
                total - listed,
                self.max_batches
            )
        })
    }

    /// The `element_limit` anomaly's detail for a body that kept `kept` array elements and read
    /// `dropped` more past the limit, the first of them at path `at`, or None when none was
    /// (the words of Python's `Limits.over_elements`).
    pub fn over_elements(&self, kept: u64, dropped: u64, at: &str) -> Option<String> {
        (dropped > 0).then(|| {
            format!(
                "{} array elements in the body; the first {kept} are kept in its fields, \
                 {dropped} more were read and not listed, from {at} on (limit {} per frame)",
                kept + dropped,
                self.max_elements
            )
        })
    }

    /// Bytes the next decompression of `compressed` bytes may produce.
    pub fn allowance(&self, compressed: usize) -> u64 {
        let by_ratio = self.ratio_floor.max(compressed as u64 * self.max_ratio);
        let left = self
            .max_decompressed_total
            .saturating_sub(self.decompressed_total);
        self.max_decompressed.min(by_ratio).min(left)
    }
}

/// Why a decompression gave nothing usable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// `decompression_failed`: the data is broken.
    Failed(String),
    /// `decompression_limit`: the output would pass the limits.
    Limit(String),
}

impl Problem {
    pub fn kind(&self) -> &'static str {
        match self {
            Problem::Failed(_) => "decompression_failed",
            Problem::Limit(_) => "decompression_limit",
        }
    }

    pub fn detail(&self) -> &str {
        match self {
            Problem::Failed(d) | Problem::Limit(d) => d,
        }
    }
}

type Res = Result<Vec<u8>, Problem>;

/// Reads at most `cap + 1` bytes (one more than allowed shows the cap was passed).
fn read_capped(r: impl Read, cap: u64, out: &mut Vec<u8>) -> std::io::Result<()> {
    r.take(cap + 1).read_to_end(out).map(|_| ())
}

fn limited(limits: &mut Limits, compressed: usize, out: Vec<u8>, cap: u64, codec: &str) -> Res {
    limits.decompressed_total += out.len() as u64;
    if out.len() as u64 > cap {
        return Err(Problem::Limit(format!(
            "{codec}: output exceeds {cap} bytes (from {compressed} compressed bytes)"
        )));
    }
    Ok(out)
}

/// One or more gzip members (Kafka codec 1).
pub fn gzip(data: &[u8], limits: &mut Limits) -> Res {
    let cap = limits.allowance(data.len());
    let mut out = Vec::new();
    if data.is_empty() {
        return Ok(out);
    }
    if let Err(e) = read_capped(flate2::read::MultiGzDecoder::new(data), cap, &mut out) {
        limits.decompressed_total += out.len() as u64;
        return Err(if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Problem::Failed("gzip: stream ends without its final block".into())
        } else {
            Problem::Failed(format!("gzip: {e}"))
        });
    }
    limited(limits, data.len(), out, cap, "gzip")
}

fn snappy_length(data: &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, b) in data.iter().take(5).enumerate() {
        value |= u64::from(b & 0x7F) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// One raw Snappy block.
pub fn snappy_raw(data: &[u8], limits: &mut Limits) -> Res {
    let cap = limits.allowance(data.len());
    let Some(size) = snappy_length(data) else {
        return Err(Problem::Failed("snappy: bad length preamble".into()));
    };
    if size > cap {
        return Err(Problem::Limit(format!(
            "snappy: declares {size} bytes, over the limit of {cap}"
        )));
    }
    // The declared size is within the cap, so this allocation is bounded by the limits.
    match snap::raw::Decoder::new().decompress_vec(data) {
        Ok(out) => {
            limits.decompressed_total += out.len() as u64;
            Ok(out)
        }
        Err(e) => Err(Problem::Failed(format!("snappy: {e}"))),
    }
}

const XERIAL_MAGIC: &[u8] = b"\x82SNAPPY\x00";

/// Kafka snappy: xerial stream framing (Java producers) or one raw block (librdkafka).
pub fn snappy_kafka(data: &[u8], limits: &mut Limits) -> Res {
    if !data.starts_with(XERIAL_MAGIC) {
        return snappy_raw(data, limits);
    }
    let mut pos = 16;
    let mut out = Vec::new();
    let cap = limits.allowance(data.len());
    while pos < data.len() {
        if pos + 4 > data.len() {
            return Err(Problem::Failed(format!(
                "snappy: xerial block header cut at byte {pos}"
            )));
        }
        let n = i32::from_be_bytes([data[pos], data[pos + 1], data[pos + 2], data[pos + 3]]);
        pos += 4;
        if n < 0 || pos + n as usize > data.len() {
            return Err(Problem::Failed(format!(
                "snappy: xerial block of {n} bytes at byte {} runs past the data",
                pos - 4
            )));
        }
        let block = snappy_raw(&data[pos..pos + n as usize], limits)?;
        out.extend_from_slice(&block);
        if out.len() as u64 > cap {
            return Err(Problem::Limit(format!(
                "snappy: output exceeds {cap} bytes"
            )));
        }
        pos += n as usize;
    }
    Ok(out)
}

const LZ4_FRAME_MAGIC: &[u8] = b"\x04\x22\x4d\x18";

/// Rewrites the header checksum Kafka's magic-0 writer computed over the magic too.
pub fn fix_lz4_legacy_checksum(data: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if data.len() < 7 || !data.starts_with(LZ4_FRAME_MAGIC) {
        return data.into();
    }
    let flg = data[4];
    let end = 6 + if flg & 0x08 != 0 { 8 } else { 0 } + if flg & 0x01 != 0 { 4 } else { 0 };
    if data.len() <= end {
        return data.into();
    }
    let hc = ((twox_hash::XxHash32::oneshot(0, &data[4..end]) >> 8) & 0xFF) as u8;
    if data[end] == hc {
        return data.into();
    }
    let mut v = data.to_vec();
    v[end] = hc;
    v.into()
}

/// liblz4's name for a frame decoding error (as the reference's `lz4.frame` reports it:
/// `LZ4F_decompress failed with code: ERROR_decompressionFailed`).
fn lz4f_error_name(e: &lz4_flex::frame::Error, data: &[u8]) -> Option<&'static str> {
    use lz4_flex::frame::Error as E;
    if let (
        E::UnsupportedVersion(_) | E::ReservedBitsSet | E::UnsupportedBlocksize(_),
        Some(&[flg, bd]),
    ) = (e, data.get(4..6))
    {
        // The header flags in liblz4's order of checking (LZ4F_decodeHeader).
        return Some(if flg & 0b10 != 0 {
            "ERROR_reservedFlag_set"
        } else if flg >> 6 != 1 {
            "ERROR_headerVersion_wrong"
        } else if bd & 0x80 != 0 {
            "ERROR_reservedFlag_set"
        } else if (bd >> 4) & 7 < 4 {
            "ERROR_maxBlockSize_invalid"
        } else {
            "ERROR_reservedFlag_set"
        });
    }
    Some(match e {
        // liblz4 does not refuse a match offset of 0 (it copies from the current position and
        // goes on): no liblz4 wording exists for it; lz4_flex's own is kept (a known leniency,
        // see tests/test_engine_rust_kafka.py `lz4_offset_zero`).
        E::DecompressionError(lz4_flex::block::DecompressError::OffsetZero) => return None,
        E::DecompressionError(_) => "ERROR_decompressionFailed",
        E::UnsupportedBlocksize(_) | E::BlockTooBig => "ERROR_maxBlockSize_invalid",
        E::UnsupportedVersion(_) => "ERROR_headerVersion_wrong",
        E::WrongMagicNumber => "ERROR_frameType_unknown",
        E::ReservedBitsSet => "ERROR_reservedFlag_set",
        E::HeaderChecksumError => "ERROR_headerChecksum_invalid",
        E::BlockChecksumError => "ERROR_blockChecksum_invalid",
        E::ContentChecksumError => "ERROR_contentChecksum_invalid",
        E::ContentLengthError { .. } => "ERROR_frameSize_wrong",
        _ => return None,
    })
}

/// LZ4 frame format (Kafka codec 3); `legacy_checksum` for magic-0 messages.
pub fn lz4_frame(data: &[u8], limits: &mut Limits, legacy_checksum: bool) -> Res {
    let data = if legacy_checksum {
        fix_lz4_legacy_checksum(data)
    } else {
        data.into()
    };
    let cap = limits.allowance(data.len());
    let mut out = Vec::new();
    if data.is_empty() {
        return Ok(out);
    }
    if let Err(e) = read_capped(lz4_flex::frame::FrameDecoder::new(&data[..]), cap, &mut out) {
        limits.decompressed_total += out.len() as u64;
        let named = e
            .get_ref()
            .and_then(|i| i.downcast_ref::<lz4_flex::frame::Error>())
            .and_then(|e| lz4f_error_name(e, &data));
        return Err(if e.kind() == std::io::ErrorKind::UnexpectedEof {
            Problem::Failed("lz4: frame ends without its end mark".into())
        } else if let Some(name) = named {
            Problem::Failed(format!("lz4: LZ4F_decompress failed with code: {name}"))
        } else {
            Problem::Failed(format!("lz4: {e}"))
        });
    }
    limited(limits, data.len(), out, cap, "lz4")
}

/// One or more zstd frames (Kafka codec 4).
pub fn zstd(data: &[u8], limits: &mut Limits) -> Res {
    let cap = limits.allowance(data.len());
    let mut out = Vec::new();
    if data.is_empty() {
        return Ok(out);
    }
    let dec = match zstd::stream::read::Decoder::with_buffer(data) {
        Ok(d) => d,
        Err(e) => return Err(Problem::Failed(format!("zstd: {e}"))),
    };
    if let Err(e) = read_capped(dec, cap, &mut out) {
        limits.decompressed_total += out.len() as u64;
        // As the reference's zstandard library words it: "zstd decompress error: <ZSTD error>".
        return Err(Problem::Failed(format!("zstd: zstd decompress error: {e}")));
    }
    limited(limits, data.len(), out, cap, "zstd")
}

/// What a codec that may keep a part of its output gives: the output (None when nothing usable
/// came out) and the problem, if any (Python's `(output, problem)` pair, both possibly set).
pub type Partial = (Option<Vec<u8>>, Option<Problem>);

/// A raw LZ4 block whose decompressed size is known from elsewhere (Pulsar LZ4).
///
/// The declared size is checked against the limits before anything is allocated; a block that
/// decodes to fewer bytes gives those bytes (as python-lz4 does), the caller compares sizes.
pub fn lz4_block(data: &[u8], size: i64, limits: &mut Limits) -> Res {
    let cap = limits.allowance(data.len());
    if size < 0 || size as u64 > cap {
        return Err(Problem::Limit(format!(
            "lz4: declared size {size} over the limit of {cap}"
        )));
    }
    match lz4_block_decode(data, size as usize) {
        Ok(out) => {
            limits.decompressed_total += out.len() as u64;
            Ok(out)
        }
        // The reference's words (liblz4's own error text says where it stopped, which no other
        // decoder reproduces): see `codecs.lz4_block`.
        Err(_) => Err(Problem::Failed(format!(
            "lz4: corrupt block (or more than {size} bytes out)"
        ))),
    }
}

/// A raw LZ4 block decoded with liblz4's rules for `LZ4_decompress_safe` (the reference's
/// decoder), so that both engines accept and refuse the same blocks: the last five bytes of the
/// output room are literals, the last sequence ends the input exactly, a match may not reach
/// before the output's start; a match offset of 0 (which liblz4 lets through) copies zeros.
/// `room` is the declared size, already checked against the limits.
fn lz4_block_decode(src: &[u8], room: usize) -> Result<Vec<u8>, ()> {
    const LASTLITERALS: usize = 5;
    const MFLIMIT: usize = 12;
    if room == 0 {
        return if src == [0] { Ok(Vec::new()) } else { Err(()) };
    }
    if src.is_empty() {
        return Err(());
    }
    let iend = src.len();
    let mut out: Vec<u8> = Vec::with_capacity(room);
    let mut ip = 0usize;
    // liblz4's read_variable_length: fails when the input pointer reaches `check`.
    let var_len = |ip: &mut usize, check: isize, initial: bool| -> Result<usize, ()> {
        let mut n = 0usize;
        if initial && (*ip as isize) >= check {
            return Err(());
        }
        loop {
            let s = *src.get(*ip).ok_or(())?;
            *ip += 1;
            n = n.checked_add(usize::from(s)).ok_or(())?;
            if (*ip as isize) >= check {
                return Err(());
            }
            if s != 255 {
                return Ok(n);
            }
        }
    };
    loop {
        let token = *src.get(ip).ok_or(())?;
        ip += 1;
        let mut length = usize::from(token >> 4);
        if length == 15 {
            length += var_len(&mut ip, iend as isize - 15, true)?;
        }
        let op = out.len();
        let cpy = op.checked_add(length).ok_or(())?;
        let lit_end = ip.checked_add(length).ok_or(())?;
        if cpy as isize > room as isize - MFLIMIT as isize
            || lit_end as isize > iend as isize - (2 + 1 + LASTLITERALS) as isize
        {
            // The last literals: they end the input exactly, within the room.
            if lit_end != iend || cpy > room {
                return Err(());
            }
            out.extend_from_slice(&src[ip..lit_end]);
            return Ok(out);
        }
        out.extend_from_slice(&src[ip..lit_end]);
        ip = lit_end;
        let offset = usize::from(u16::from_le_bytes([src[ip], src[ip + 1]]));
        ip += 2;
        let op = out.len();
        if offset > op {
            return Err(());
        }
        let mut mlen = usize::from(token & 15);
        if mlen == 15 {
            mlen += var_len(&mut ip, iend as isize - LASTLITERALS as isize + 1, false)?;
        }
        mlen += 4;
        let end = op.checked_add(mlen).ok_or(())?;
        if end > room - LASTLITERALS.min(room) {
            return Err(());
        }
        if offset == 0 {
            out.resize(end, 0);
        } else {
            let from = op - offset;
            for k in 0..mlen {
                let b = out[from + k];
                out.push(b);
            }
        }
    }
}

/// A zlib stream, possibly never finished (Java's Deflater with SYNC_FLUSH: Pulsar ZLIB).
///
/// An unterminated stream gives what it inflated; a broken one gives nothing (Python's
/// `decompress` call raises before handing over any output); bytes after the stream's end are
/// ignored.
pub fn zlib_stream(data: &[u8], limits: &mut Limits) -> Partial {
    let cap = limits.allowance(data.len());
    let mut out: Vec<u8> = Vec::new();
    if data.is_empty() {
        return (Some(out), None);
    }
    // One call with room for one byte over the cap, as zlib's own `decompress(data, cap + 1)`:
    // the room is reserved, not touched, so only what is inflated costs memory; and an error
    // keeps zlib's message (a second call would only say "repeated call with bad state").
    let mut d = flate2::Decompress::new(true);
    out.reserve_exact((cap + 1) as usize);
    if let Err(e) = d.decompress_vec(data, &mut out, flate2::FlushDecompress::None) {
        let detail = if e.needs_dictionary().is_some() {
            "zlib: Error 2 while decompressing data".to_string()
        } else {
            let mut msg = e.message().map(str::to_string);
            if msg.as_deref() == Some(MASKED) {
                msg = zlib_slow_error(data, cap);
            }
            // As CPython's zlib words it: the status and zlib's own message.
            match msg {
                Some(m) => format!("zlib: Error -3 while decompressing data: {m}"),
                None => "zlib: Error -3 while decompressing data".to_string(),
            }
        };
        return (None, Some(Problem::Failed(detail)));
    }
    out.truncate((cap + 1).min(out.len() as u64) as usize);
    out.shrink_to_fit(); // the room reserved was only an upper bound
    let n = data.len();
    match limited(limits, n, out, cap, "zlib") {
        Ok(out) => (Some(out), None),
        Err(p) => (None, Some(p)),
    }
}

/// What zlib-rs says when its fast inflate loop found the error: the loop leaves the stream in
/// its bad state and the state machine then overwrites the message zlib would give.
const MASKED: &str = "repeated call with bad state";

/// The message zlib gives for a stream the fast loop found broken: the same stream inflated a
/// byte of input at a time (the fast loop needs six), whose slow path keeps the message. Only
/// on broken data.
fn zlib_slow_error(data: &[u8], cap: u64) -> Option<String> {
    let mut d = flate2::Decompress::new(true);
    let mut out: Vec<u8> = Vec::with_capacity((cap + 1) as usize);
    for i in 0..data.len() {
        if let Err(e) = d.decompress_vec(&data[i..=i], &mut out, flate2::FlushDecompress::None) {
            return e.message().map(str::to_string);
        }
        if out.len() == out.capacity() {
            return None;
        }
    }
    None
}

/// One or more zstd frames, as python-zstandard's stream reader gives them: read in 1 MiB
/// pieces, a piece that fails gives nothing (earlier pieces are kept, with the problem), and
/// input that ends inside a frame ends the output without a problem.
pub fn zstd_partial(data: &[u8], limits: &mut Limits) -> Partial {
    let cap = limits.allowance(data.len());
    let mut out = Vec::new();
    if data.is_empty() {
        return (Some(out), None);
    }
    let failed = |e: std::io::Error| Problem::Failed(format!("zstd: zstd decompress error: {e}"));
    let mut dec = match zstd::stream::read::Decoder::with_buffer(data) {
        Ok(d) => d,
        Err(e) => return (None, Some(failed(e))),
    };
    let mut piece = vec![0u8; 1 << 20];
    while out.len() as u64 <= cap {
        let want = ((cap + 1 - out.len() as u64) as usize).min(piece.len());
        match read_full(&mut dec, &mut piece[..want]) {
            Ok(0) => break,
            Ok(k) => out.extend_from_slice(&piece[..k]),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => {
                limits.decompressed_total += out.len() as u64;
                let out = if out.is_empty() { None } else { Some(out) };
                return (out, Some(failed(e)));
            }
        }
    }
    match limited(limits, data.len(), out, cap, "zstd") {
        Ok(out) => (Some(out), None),
        Err(p) => (None, Some(p)),
    }
}

/// Fills `buf` as far as the reader goes; an error after some bytes is an error.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            // Input that ends inside a frame: what came out so far is the output.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && n > 0 => break,
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snappy_raw_by_hand() {
        // Preamble 5, then a literal tag (len-1)<<2 = 0x10 and "hello".
        let d = [5, 0x10, b'h', b'e', b'l', b'l', b'o'];
        assert_eq!(snappy_raw(&d, &mut Limits::default()).unwrap(), b"hello");
        // A declared size over the cap is refused before anything is allocated.
        let mut l = Limits {
            max_decompressed: 4,
            ..Limits::default()
        };
        assert_eq!(
            snappy_raw(&d, &mut l).unwrap_err(),
            Problem::Limit("snappy: declares 5 bytes, over the limit of 4".into())
        );
    }

    #[test]
    fn gzip_bomb_hits_the_ratio_cap() {
        use std::io::Write;
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(&vec![0u8; 3 * 1024 * 1024]).unwrap();
        let z = e.finish().unwrap();
        let mut l = Limits::default();
        let p = gzip(&z, &mut l).unwrap_err();
        assert_eq!(p.kind(), "decompression_limit");
        // 3 MiB of zeros deflate to ~3 KB: the cap is 1000 times that, under the 3 MiB produced.
        let cap = z.len() * 1000;
        assert!(cap > 1024 * 1024 && cap < 3 * 1024 * 1024);
        assert_eq!(
            p.detail(),
            format!(
                "gzip: output exceeds {cap} bytes (from {} compressed bytes)",
                z.len()
            )
        );
        // A cut stream fails.
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        e.write_all(b"hello hello hello").unwrap();
        let z = e.finish().unwrap();
        assert_eq!(
            gzip(&z, &mut Limits::default()).unwrap(),
            b"hello hello hello"
        );
        let p = gzip(&z[..z.len() - 3], &mut Limits::default()).unwrap_err();
        assert_eq!(p.kind(), "decompression_failed");
    }

    #[test]
    fn lz4_blocks_as_liblz4_decodes_them() {
        let text = b"hello hello hello hello hello hello, lz4 block of Pulsar".repeat(20);
        let block = lz4_flex::block::compress(&text);
        let mut l = Limits::default();
        assert_eq!(lz4_block(&block, text.len() as i64, &mut l).unwrap(), text);
        // A larger declared size gives what the block holds (python-lz4 does the same).
        assert_eq!(
            lz4_block(&block, text.len() as i64 + 9, &mut l).unwrap(),
            text
        );
        // Too small a room: refused.
        assert_eq!(
            lz4_block(&block, 10, &mut l).unwrap_err(),
            Problem::Failed("lz4: corrupt block (or more than 10 bytes out)".into())
        );
        // Hand-made: 5 literals "abcde", then (as the last sequence must be) literals only.
        assert_eq!(
            lz4_block_decode(&[0x50, b'a', b'b', b'c', b'd', b'e'], 5).unwrap(),
            b"abcde"
        );
        // A match reaching before the start of the output is refused.
        let bad = [0x14, b'a', 0x09, 0x00, 0x50, b'v', b'w', b'x', b'y', b'z'];
        assert!(lz4_block_decode(&bad, 64).is_err());
        let good = [0x14, b'a', 0x01, 0x00, 0x50, b'v', b'w', b'x', b'y', b'z'];
        assert_eq!(lz4_block_decode(&good, 64).unwrap(), b"aaaaaaaaavwxyz");
    }
}
