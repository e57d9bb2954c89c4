//! Decompression with hard output limits, for the codecs every protocol uses (mirrors
//! `wiredump/dissect/codecs.py` and `limits.py`): a bomb becomes a `decompression_limit`
//! problem instead of a memory blow-up, broken data a `decompression_failed` one.
//!
//! The limit messages are the reference's, word for word; a library's own error text differs
//! between the Python and Rust libraries, so only the codec prefix of a failure is shared.

use std::io::Read;

const MIB: u64 = 1024 * 1024;

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
        }
    }
}

impl Limits {
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
}
