//! Capture input: pcap and pcapng records, streamed from a file, stdin or any reader.
//!
//! A port of `wiredump/dissect/capture.py`, which stays the reference: the same formats (pcap µs/ns
//! in both byte orders and the "modified" Kuznetsov variant; pcapng with several sections and
//! interfaces, `if_tsresol`/`if_tsoffset`, EPB/SPB/PB), the same compressed inputs recognised by
//! their magic (gzip, zstd, lz4, xz, bzip2), the same packet numbering (every packet record counts,
//! even one skipped for its link type) and the same sentences for a file that cannot be read or
//! ends early. The framing is written here rather than taken from `pcap-parser` because those
//! sentences, and where exactly a damaged file stops, are part of the contract the tests compare.
//!
//! Memory is bounded by the largest record (at most [`MAX_RECORD`]) plus one read chunk: no
//! length read from the file is allocated before it is checked against that bound.

use std::cell::Cell;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::rc::Rc;

use crate::packet::linktype_supported;

/// Bytes read from the input at a time.
pub const CHUNK: usize = 1 << 20;
/// Bytes asked of the input per read call (into the reader's buffer, which grows only when a
/// record needs more: bytes once zeroed are read into again, not zeroed per call).
const READ_STEP: usize = 64 << 10;
/// A record or block claiming more than this is treated as corruption, not buffered.
pub const MAX_RECORD: usize = 16 << 20;
/// Interfaces of one pcapng section kept: a file of tiny interface blocks would otherwise cost
/// memory per block. Real captures describe a handful; the blocks past the bound are counted
/// (`interfaces_not_kept`, one `interface_limit` anomaly) and a packet naming one of them ends the
/// capture as a packet naming an undescribed interface does (Python's `capture.MAX_INTERFACES`).
pub const MAX_INTERFACES: usize = 65_536;

const PCAP_MAGIC_US: u32 = 0xA1B2_C3D4;
const PCAP_MAGIC_NS: u32 = 0xA1B2_3C4D;
const PCAP_MAGIC_KUZNETSOV: u32 = 0xA1B2_CD34;
const PCAPNG_SHB: u32 = 0x0A0D_0D0A;
const BOM_LE: [u8; 4] = [0x4d, 0x3c, 0x2b, 0x1a];
const BOM_BE: [u8; 4] = [0x1a, 0x2b, 0x3c, 0x4d];

const BT_IDB: u32 = 1;
const BT_PB: u32 = 2;
const BT_SPB: u32 = 3;
const BT_EPB: u32 = 6;
const OPT_END: u16 = 0;
const OPT_IF_TSRESOL: u16 = 9;
const OPT_IF_TSOFFSET: u16 = 14;

/// The sentence listing the supported link types (as `capture.py` builds it from `LINKTYPE_NAMES`).
pub const SUPPORTED_TEXT: &str =
    "supported: BSD loopback 0, Ethernet 1, raw IP 12/14/101, OpenBSD loopback 108, \
Linux cooked (SLL) 113, raw IPv4 228, raw IPv6 229, Linux cooked v2 (SLL2) 276";

/// Why a capture cannot be opened: one sentence for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError(pub String);

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One captured packet record, borrowed from the reader's buffer until the next call.
#[derive(Debug, Clone)]
pub struct Record<'a> {
    /// 1-based packet number, as Wireshark counts.
    pub number: u64,
    /// Microseconds since the epoch.
    pub ts_us: i64,
    /// LINKTYPE value of the record's interface.
    pub linktype: u32,
    /// Captured bytes, whole even when longer than 65,535.
    pub data: &'a [u8],
    /// Length on the wire (> `data.len()` when the snap length cut it).
    pub orig_len: u32,
    /// Why the file's time was unusable (`ts_us` is then the capture's last good time).
    pub ts_note: Option<String>,
}

/// 0001-01-01T00:00:00Z in microseconds: the earliest time every sink can represent.
pub const TS_MIN_US: i128 = -62_135_596_800_000_000;
/// 9999-12-31T23:59:59.999999Z in microseconds: the latest time every sink can represent.
pub const TS_MAX_US: i128 = 253_402_300_799_999_999;

fn pcap_fraction_note(sec: i64, frac: i64, nano: bool) -> String {
    let (unit, top) = if nano {
        ("ns", "999999999")
    } else {
        ("µs", "999999")
    };
    format!("timestamp fraction {frac} {unit} is beyond a second (at most {top}): the time is {sec} s plus that fraction")
}

#[derive(Debug, Clone, Copy)]
struct Iface {
    linktype: u32,
    mult: u128,
    /// `None`: a divisor beyond 10^38, which turns every timestamp into 0 (as Python's exact integers do).
    div: Option<u128>,
    shift: u32,
    offset_us: i128,
    snap: u32,
    resol: u8,
    offset_s: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Pcap {
        big: bool,
        nano: bool,
        hsize: usize,
        linktype: u32,
    },
    Pcapng,
}

/// Counts the raw bytes taken from the input, for progress reports.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// A gzip stream of one or more members, read as `capture.py`'s `_gunzip` reads it: zlib itself
/// parses each member (so damage is worded as Python's zlib words it), trailing bytes that do not
/// start another member are ignored (as gzip itself does), and a stream cut short simply ends
/// (the records then report where the capture was cut).
struct Gunzip<R: BufRead> {
    inner: R,
    dec: flate2::Decompress,
    done: bool,
}

impl<R: BufRead> Gunzip<R> {
    fn new(inner: R) -> Self {
        Gunzip {
            inner,
            dec: flate2::Decompress::new_gzip(15),
            done: false,
        }
    }
}

impl<R: BufRead> Read for Gunzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while !self.done && !buf.is_empty() {
            let input = self.inner.fill_buf()?;
            if input.is_empty() {
                self.done = true;
                break;
            }
            let (in0, out0) = (self.dec.total_in(), self.dec.total_out());
            let status = self
                .dec
                .decompress(input, buf, flate2::FlushDecompress::None)
                .map_err(|e| {
                    let msg = e.message().unwrap_or("invalid data");
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("Error -3 while decompressing data: {msg}"),
                    )
                })?;
            let used = (self.dec.total_in() - in0) as usize;
            let produced = (self.dec.total_out() - out0) as usize;
            self.inner.consume(used);
            if status == flate2::Status::StreamEnd {
                self.dec = flate2::Decompress::new_gzip(15);
                let next = self.inner.fill_buf()?;
                if next.len() < 2 || next[..2] != [0x1f, 0x8b] {
                    self.done = true; // trailing garbage after the last member, as gzip ignores it
                }
            }
            if produced > 0 {
                return Ok(produced);
            }
            if used == 0 && status != flate2::Status::StreamEnd {
                // No progress with input at hand: zlib wants more than this buffer holds.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "Error -5 while decompressing data",
                ));
            }
        }
        Ok(0)
    }
}

/// A zstd stream cut short simply ends, as Python's `zstandard` stream reader treats it (the
/// records then report where the capture was cut).
struct ZstdCutIsEnd<R> {
    inner: R,
    ended: bool,
}

impl<R: Read> Read for ZstdCutIsEnd<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ended {
            return Ok(0);
        }
        match self.inner.read(buf) {
            Err(e)
                if e.kind() == io::ErrorKind::UnexpectedEof
                    || e.to_string().contains("incomplete frame") =>
            {
                self.ended = true;
                Ok(0)
            }
            other => other,
        }
    }
}

/// A decompressor's "stream ended early" turned into the sentence Python's readers use for it.
struct EofIsDamage<R> {
    inner: R,
}

impl<R: Read> Read for EofIsDamage<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "Compressed file ended before the end-of-stream marker was reached",
                )
            } else {
                e
            }
        })
    }
}

/// Where the capture comes from.
pub enum Input {
    /// A file path ("-" means stdin).
    Path(String),
    /// Any reader (a Python file object, bytes in memory), with the name to report.
    Reader(String, Box<dyn Read>),
}

/// One packet record owned by whoever hands it over (see [`RecordSource`]).
#[derive(Debug, Clone, Default)]
pub struct OwnedRecord {
    pub number: u64,
    pub ts_us: i64,
    pub linktype: u32,
    pub data: Vec<u8>,
    pub orig_len: u32,
    pub ts_note: Option<String>,
}

/// Records of one capture read elsewhere, in packet order with the file's own numbers: a
/// distributed job reads a capture range by range in several tasks and brings the records
/// together in one task, which dissects them as the local reader's records would be.
pub trait RecordSource {
    /// The next record, None once they are exhausted.
    fn next_record(&mut self) -> Option<OwnedRecord>;
    /// What the reader that read them knew at its end: (why the file ended early, records of
    /// unsupported link types skipped); asked once, after the last record.
    fn end(&mut self) -> (Option<String>, u64);
}

/// Iterates the packet records of one pcap or pcapng capture (optionally compressed).
pub struct CaptureReader {
    /// The capture's name in messages ("stdin" for "-").
    pub name: String,
    /// "gzip", "zstd", "lz4", "xz" or "bzip2".
    pub compression: Option<&'static str>,
    /// Why the file ended early, once iteration stopped there.
    pub truncated: Option<String>,
    /// pcapng records of interfaces with an unsupported link type.
    pub skipped_unknown_link: u64,
    /// Interfaces kept per pcapng section ([`MAX_INTERFACES`] unless set before reading).
    pub max_interfaces: usize,
    /// pcapng interface blocks past `max_interfaces` in their section: counted, not kept.
    pub interfaces_not_kept: u64,
    /// Packet records counted so far (skipped ones included).
    pub records: u64,
    format: Format,
    input: Box<dyn Read>,
    consumed: Rc<Cell<u64>>,
    /// Read bytes are `buf[pos..end]`. The vector only grows, and bytes past `end` are kept
    /// (they were read or zeroed once): a read goes into them without zeroing them again.
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    done: bool,
    big: bool,
    ifaces: Vec<Iface>,
    started: bool,
    /// The last representable pcapng time, given to a packet whose own time is not.
    last_ts: i64,
    /// Records handed over instead of read from `input` ([`CaptureReader::from_records`]).
    external: Option<Box<dyn RecordSource>>,
}

fn read_some(r: &mut dyn Read, out: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(out) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

fn os_error_text(e: &io::Error) -> String {
    // Python shows strerror ("Is a directory"); Rust's Display appends " (os error N)".
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

fn u32_at(b: &[u8], p: usize, big: bool) -> u32 {
    let a = [b[p], b[p + 1], b[p + 2], b[p + 3]];
    if big {
        u32::from_be_bytes(a)
    } else {
        u32::from_le_bytes(a)
    }
}

fn u16_at(b: &[u8], p: usize, big: bool) -> u16 {
    let a = [b[p], b[p + 1]];
    if big {
        u16::from_be_bytes(a)
    } else {
        u16::from_le_bytes(a)
    }
}

/// (multiplier, divisor, right shift) turning pcapng timestamp units into microseconds exactly.
fn ts_scale(resol: u8) -> (u128, Option<u128>, u32) {
    let n = (resol & 0x7F) as u32;
    if resol & 0x80 != 0 {
        return (1_000_000, Some(1), n);
    }
    if n <= 6 {
        return (10u128.pow(6 - n), Some(1), 0);
    }
    (1, 10u128.checked_pow(n - 6), 0)
}

impl CaptureReader {
    /// Opens a capture and checks its header; the error is one sentence for the user.
    pub fn open(input: Input) -> Result<CaptureReader, CaptureError> {
        let consumed = Rc::new(Cell::new(0u64));
        let (name, raw): (String, Box<dyn Read>) = match input {
            Input::Path(p) if p == "-" => ("stdin".to_string(), Box::new(io::stdin())),
            Input::Path(p) => {
                let meta = std::fs::metadata(&p);
                if let Ok(m) = &meta {
                    if m.is_dir() {
                        return Err(CaptureError(format!(
                            "{p}: is a directory, not a capture file"
                        )));
                    }
                }
                match File::open(&p) {
                    Ok(f) => (p, Box::new(f)),
                    Err(e) => {
                        let msg = match e.kind() {
                            io::ErrorKind::NotFound => "no such file".to_string(),
                            io::ErrorKind::PermissionDenied => "permission denied".to_string(),
                            _ => format!("cannot be read ({})", os_error_text(&e)),
                        };
                        return Err(CaptureError(format!("{p}: {msg}")));
                    }
                }
            }
            Input::Reader(name, r) => (name, r),
        };
        let mut raw = Counting {
            inner: raw,
            count: consumed.clone(),
        };
        // Sniff the magic (a pipe may deliver fewer bytes than it needs).
        let mut first = vec![0u8; 8];
        let mut have = 0;
        while have < 6 {
            match read_some(&mut raw, &mut first[have..]) {
                Ok(0) => break,
                Ok(n) => have += n,
                Err(e) => {
                    return Err(CaptureError(format!(
                        "{name}: cannot be read ({})",
                        os_error_text(&e)
                    )))
                }
            }
        }
        first.truncate(have);
        if first.is_empty() {
            return Err(CaptureError(format!("{name}: is empty, not a capture")));
        }
        let chained = io::Cursor::new(first.clone()).chain(raw);
        let (compression, input): (Option<&'static str>, Box<dyn Read>) =
            if first.starts_with(&[0x1f, 0x8b]) {
                let br = BufReader::with_capacity(CHUNK, chained);
                (Some("gzip"), Box::new(Gunzip::new(br)))
            } else if first.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
                match zstd::stream::read::Decoder::new(chained) {
                    Ok(d) => (
                        Some("zstd"),
                        Box::new(ZstdCutIsEnd {
                            inner: d,
                            ended: false,
                        }),
                    ),
                    Err(e) => return Err(CaptureError(format!("{name}: damaged zstd data ({e})"))),
                }
            } else if first.starts_with(&[0x04, 0x22, 0x4d, 0x18]) {
                (
                    Some("lz4"),
                    Box::new(EofIsDamage {
                        inner: lz4_flex::frame::FrameDecoder::new(chained),
                    }),
                )
            } else if first.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
                (
                    Some("xz"),
                    Box::new(EofIsDamage {
                        inner: xz2::read::XzDecoder::new_multi_decoder(chained),
                    }),
                )
            } else if first.starts_with(b"BZh") {
                (
                    Some("bzip2"),
                    Box::new(EofIsDamage {
                        inner: bzip2::read::MultiBzDecoder::new(chained),
                    }),
                )
            } else {
                (None, Box::new(chained))
            };
        let mut r = CaptureReader {
            name,
            compression,
            truncated: None,
            skipped_unknown_link: 0,
            max_interfaces: MAX_INTERFACES,
            interfaces_not_kept: 0,
            records: 0,
            format: Format::Pcapng,
            input,
            consumed,
            buf: Vec::with_capacity(CHUNK),
            pos: 0,
            end: 0,
            eof: false,
            done: false,
            big: false,
            ifaces: Vec::new(),
            started: false,
            last_ts: 0,
            external: None,
        };
        if let Err(e) = r.fill(28) {
            let c = r.compression.unwrap_or("read");
            return Err(CaptureError(match r.compression {
                Some(_) => format!("{}: damaged {c} data ({e})", r.name),
                None => format!("{}: cannot be read ({})", r.name, os_error_text(&e)),
            }));
        }
        r.check_header()?;
        Ok(r)
    }

    fn check_header(&mut self) -> Result<(), CaptureError> {
        let head = &self.buf[..self.end];
        let name = &self.name;
        let what = match self.compression {
            Some(c) => format!("{c}-compressed file"),
            None => "file".to_string(),
        };
        if head.len() < 4 {
            if let (Some(c), true) = (self.compression, head.is_empty()) {
                return Err(CaptureError(format!(
                    "{name}: {c} data holds nothing (empty or cut short)"
                )));
            }
            return Err(CaptureError(format!(
                "{name}: not a pcap or pcapng capture ({what} of only {} bytes)",
                head.len()
            )));
        }
        let le = u32_at(head, 0, false);
        let be = u32_at(head, 0, true);
        if le == PCAPNG_SHB {
            if head.len() < 12 {
                return Err(CaptureError(format!(
                    "{name}: pcapng file cut short inside its section header"
                )));
            }
            if head[8..12] != BOM_LE && head[8..12] != BOM_BE {
                return Err(CaptureError(format!(
                    "{name}: not a capture (pcapng section header with a bad byte-order mark)"
                )));
            }
            self.format = Format::Pcapng;
            return Ok(());
        }
        for (magic, big) in [(le, false), (be, true)] {
            if magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS || magic == PCAP_MAGIC_KUZNETSOV {
                if head.len() < 24 {
                    return Err(CaptureError(format!(
                        "{name}: pcap file cut short inside its 24-byte header"
                    )));
                }
                let lt = u32_at(head, 20, big) & 0x03FF_FFFF;
                if !linktype_supported(lt) {
                    return Err(CaptureError(format!(
                        "{name}: link type {lt} is not supported ({SUPPORTED_TEXT})"
                    )));
                }
                self.format = Format::Pcap {
                    big,
                    nano: magic == PCAP_MAGIC_NS,
                    hsize: if magic == PCAP_MAGIC_KUZNETSOV {
                        24
                    } else {
                        16
                    },
                    linktype: lt,
                };
                return Ok(());
            }
        }
        Err(CaptureError(format!(
            "{name}: not a pcap or pcapng capture"
        )))
    }

    /// "pcap" or "pcapng".
    pub fn format_name(&self) -> &'static str {
        match self.format {
            Format::Pcap { .. } => "pcap",
            Format::Pcapng => "pcapng",
        }
    }

    /// Raw bytes taken from the file or stdin so far (compressed bytes when compressed).
    pub fn bytes_read(&self) -> u64 {
        self.consumed.get()
    }

    /// Makes `need` bytes available from `pos` (fewer only at the end of the input).
    fn fill(&mut self, need: usize) -> io::Result<usize> {
        let have = self.end - self.pos;
        if have >= need || self.eof {
            return Ok(have);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end = have;
            self.pos = 0;
        }
        while self.end < need {
            let want = READ_STEP.max(need - self.end);
            if self.buf.len() < self.end + want {
                self.buf.resize(self.end + want, 0);
            }
            match read_some(&mut *self.input, &mut self.buf[self.end..self.end + want]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) => return Err(e),
            }
        }
        Ok(self.end)
    }

    fn stop(&mut self, why: String) {
        self.truncated = Some(why);
        self.done = true;
    }

    fn read_failed(&mut self, e: io::Error) {
        let why = match self.compression {
            Some(c) => format!("damaged {c} data after packet {} ({})", self.records, e),
            None => format!(
                "read error after packet {} ({})",
                self.records,
                os_error_text(&e)
            ),
        };
        self.stop(why);
    }

    /// A reader over records read elsewhere (`name`: the capture's name in messages); its
    /// `truncated` and `skipped_unknown_link` are the source's end facts once it is exhausted.
    pub fn from_records(name: String, source: Box<dyn RecordSource>) -> CaptureReader {
        CaptureReader {
            name,
            compression: None,
            truncated: None,
            skipped_unknown_link: 0,
            max_interfaces: MAX_INTERFACES,
            interfaces_not_kept: 0,
            records: 0,
            format: Format::Pcapng,
            input: Box::new(io::empty()),
            consumed: Rc::new(Cell::new(0)),
            buf: Vec::new(),
            pos: 0,
            end: 0,
            eof: true,
            done: false,
            big: false,
            ifaces: Vec::new(),
            started: true,
            last_ts: 0,
            external: Some(source),
        }
    }

    /// The next handed-over record (its bytes kept in `buf` until the next call).
    fn next_external(&mut self) -> Option<Record<'_>> {
        let src = self.external.as_mut()?;
        match src.next_record() {
            Some(r) => {
                self.records = r.number;
                self.buf = r.data;
                self.end = self.buf.len();
                Some(Record {
                    number: r.number,
                    ts_us: r.ts_us,
                    linktype: r.linktype,
                    data: &self.buf,
                    orig_len: r.orig_len,
                    ts_note: r.ts_note,
                })
            }
            None => {
                let (truncated, skipped) = src.end();
                self.truncated = truncated;
                self.skipped_unknown_link = skipped;
                self.done = true;
                None
            }
        }
    }

    /// The next record, or None at the end (then `truncated` says whether the file ended early).
    pub fn next_record(&mut self) -> Option<Record<'_>> {
        if self.done {
            return None;
        }
        if self.external.is_some() {
            return self.next_external();
        }
        if !self.started {
            self.started = true;
            if let Format::Pcap { .. } = self.format {
                self.pos = 24;
            }
        }
        match self.format {
            Format::Pcap {
                big,
                nano,
                hsize,
                linktype,
            } => self.next_pcap(big, nano, hsize, linktype),
            Format::Pcapng => self.next_pcapng(),
        }
    }

    fn next_pcap(
        &mut self,
        big: bool,
        nano: bool,
        hsize: usize,
        linktype: u32,
    ) -> Option<Record<'_>> {
        let number = self.records;
        let have = match self.fill(hsize) {
            Ok(h) => h,
            Err(e) => {
                self.read_failed(e);
                return None;
            }
        };
        if have < hsize {
            if have > 0 {
                self.stop(format!(
                    "capture cut short in the middle of the header of record {}",
                    number + 1
                ));
            }
            self.done = true;
            return None;
        }
        let p = self.pos;
        let sec = u32_at(&self.buf[..self.end], p, big) as i64;
        let frac = u32_at(&self.buf[..self.end], p + 4, big) as i64;
        let incl = u32_at(&self.buf[..self.end], p + 8, big) as usize;
        let orig = u32_at(&self.buf[..self.end], p + 12, big);
        if incl > MAX_RECORD {
            self.stop(format!(
                "record {} declares {incl} bytes, beyond any real packet: the file is corrupt",
                number + 1
            ));
            return None;
        }
        let have = match self.fill(hsize + incl) {
            Ok(h) => h,
            Err(e) => {
                self.read_failed(e);
                return None;
            }
        };
        if have < hsize + incl {
            self.stop(format!(
                "capture cut short in the middle of record {} ({} of {incl} bytes present)",
                number + 1,
                have - hsize
            ));
            return None;
        }
        let start = self.pos + hsize;
        self.pos = start + incl;
        self.records = number + 1;
        let ts_us = sec * 1_000_000 + if nano { frac / 1000 } else { frac };
        let ts_note = if frac >= if nano { 1_000_000_000 } else { 1_000_000 } {
            Some(pcap_fraction_note(sec, frac, nano))
        } else {
            None
        };
        Some(Record {
            ts_note,
            number: number + 1,
            ts_us,
            linktype,
            data: &self.buf[..self.end][start..start + incl],
            orig_len: orig,
        })
    }

    fn next_pcapng(&mut self) -> Option<Record<'_>> {
        loop {
            let number = self.records;
            let have = match self.fill(12) {
                Ok(h) => h,
                Err(e) => {
                    self.read_failed(e);
                    return None;
                }
            };
            if have < 12 {
                if have > 0 {
                    self.stop(format!(
                        "capture cut short in the middle of a block header after packet {number}"
                    ));
                }
                self.done = true;
                return None;
            }
            let p = self.pos;
            let btype = u32_at(&self.buf[..self.end], p, self.big);
            let mut blen = u32_at(&self.buf[..self.end], p + 4, self.big) as usize;
            if btype == PCAPNG_SHB {
                let bom = &self.buf[..self.end][p + 8..p + 12];
                if bom == BOM_LE {
                    self.big = false;
                } else if bom == BOM_BE {
                    self.big = true;
                } else {
                    self.stop(format!(
                        "corrupt pcapng section header after packet {number}"
                    ));
                    return None;
                }
                blen = u32_at(&self.buf[..self.end], p + 4, self.big) as usize;
            }
            if !(12..=MAX_RECORD).contains(&blen) {
                self.stop(format!(
                    "corrupt pcapng block (length {blen}) after packet {number}"
                ));
                return None;
            }
            let have = match self.fill(blen) {
                Ok(h) => h,
                Err(e) => {
                    self.read_failed(e);
                    return None;
                }
            };
            if have < blen {
                self.stop(format!(
                    "capture cut short in the middle of a block after packet {number} ({have} of {blen} bytes present)"
                ));
                return None;
            }
            if blen & 3 != 0 {
                self.stop(format!(
                    "corrupt pcapng block (length {blen}) after packet {number}"
                ));
                return None;
            }
            let p = self.pos;
            self.pos = p + blen;
            let big = self.big;
            let b = &self.buf[..self.end];
            match btype {
                BT_EPB | BT_PB => {
                    let epb = btype == BT_EPB;
                    if blen < 32 {
                        if epb {
                            self.stop(format!("corrupt pcapng packet block after packet {number}"));
                        } else {
                            self.stop(format!(
                                "corrupt pcapng packet block (packet {})",
                                number + 1
                            ));
                        }
                        return None;
                    }
                    let (ifid, hi, lo, caplen, origlen) = if epb {
                        (
                            u32_at(b, p + 8, big) as usize,
                            u32_at(b, p + 12, big),
                            u32_at(b, p + 16, big),
                            u32_at(b, p + 20, big) as usize,
                            u32_at(b, p + 24, big),
                        )
                    } else {
                        (
                            u16_at(b, p + 8, big) as usize,
                            u32_at(b, p + 12, big),
                            u32_at(b, p + 16, big),
                            u32_at(b, p + 20, big) as usize,
                            u32_at(b, p + 24, big),
                        )
                    };
                    let number = number + 1;
                    self.records = number;
                    let Some(iface) = self.ifaces.get(ifid).copied() else {
                        self.records = number - 1;
                        let why =
                            unknown_iface(number, ifid, self.ifaces.len(), self.max_interfaces);
                        self.stop(why);
                        return None;
                    };
                    if !linktype_supported(iface.linktype) {
                        self.skipped_unknown_link += 1;
                        continue;
                    }
                    if caplen > blen - 32 {
                        self.records = number - 1;
                        self.stop(format!("corrupt pcapng packet block (packet {number})"));
                        return None;
                    }
                    let ts = ((hi as u128) << 32) | lo as u128;
                    let scaled = match iface.div {
                        Some(div) => ((ts * iface.mult) >> iface.shift) / div,
                        None => 0,
                    };
                    let t = scaled as i128 + iface.offset_us;
                    let (ts_us, ts_note) = if (TS_MIN_US..=TS_MAX_US).contains(&t) {
                        self.last_ts = t as i64;
                        (t as i64, None)
                    } else {
                        (self.last_ts, Some(time_note(t, ifid, &iface)))
                    };
                    let data = &self.buf[..self.end][p + 28..p + 28 + caplen];
                    return Some(Record {
                        number,
                        ts_us,
                        ts_note,
                        linktype: iface.linktype,
                        data,
                        orig_len: origlen,
                    });
                }
                BT_SPB => {
                    let number = number + 1;
                    self.records = number;
                    if blen < 16 {
                        self.records = number - 1;
                        self.stop(format!("corrupt pcapng packet block (packet {number})"));
                        return None;
                    }
                    let Some(iface) = self.ifaces.first().copied() else {
                        self.records = number - 1;
                        self.stop(format!(
                            "packet {number} names interface 0, which was never described"
                        ));
                        return None;
                    };
                    if !linktype_supported(iface.linktype) {
                        self.skipped_unknown_link += 1;
                        continue;
                    }
                    let origlen = u32_at(b, p + 8, big);
                    let mut caplen = (origlen as usize).min(blen - 16);
                    if iface.snap != 0 {
                        caplen = caplen.min(iface.snap as usize);
                    }
                    let data = &self.buf[..self.end][p + 12..p + 12 + caplen];
                    return Some(Record {
                        number,
                        ts_us: 0, // no time in a Simple Packet Block
                        ts_note: None,
                        linktype: iface.linktype,
                        data,
                        orig_len: origlen,
                    });
                }
                BT_IDB => {
                    if blen < 20 {
                        self.stop(format!(
                            "corrupt pcapng interface block after packet {number}"
                        ));
                        return None;
                    }
                    if self.ifaces.len() < self.max_interfaces {
                        let iface = parse_idb(&b[p..p + blen], big);
                        self.ifaces.push(iface);
                    } else {
                        self.interfaces_not_kept += 1;
                    }
                }
                PCAPNG_SHB => self.ifaces.clear(),
                _ => {}
            }
        }
    }
}

/// Why the capture ends at a packet naming interface `ifid` when `kept` are known: never
/// described, or described past the interfaces kept per section (Python's `_unknown_iface`).
fn unknown_iface(number: u64, ifid: usize, kept: usize, bound: usize) -> String {
    if kept >= bound {
        format!(
            "packet {number} names interface {ifid}, which was never described or is past \
             the {bound} interfaces kept per section"
        )
    } else {
        format!("packet {number} names interface {ifid}, which was never described")
    }
}

/// Link type, timestamp scale and snap length of an Interface Description Block (`block` whole).
/// The anomaly text for a pcapng packet whose time falls outside years 1–9999.
fn time_note(t_us: i128, ifid: usize, iface: &Iface) -> String {
    let resol = iface.resol;
    let unit = if resol & 0x80 != 0 {
        format!("2^-{}", resol & 0x7F)
    } else {
        format!("10^-{resol}")
    };
    format!(
        "packet time is not representable: interface {ifid} (if_tsresol {resol}: units of {unit} s, if_tsoffset {} s) \
puts it at {} s from 1970, outside years 1-9999; the capture's last good time is used",
        iface.offset_s,
        t_us.div_euclid(1_000_000)
    )
}

fn parse_idb(block: &[u8], big: bool) -> Iface {
    let lt = u16_at(block, 8, big) as u32;
    let snap = u32_at(block, 12, big);
    let mut resol = 6u8;
    let mut offset_s: i64 = 0;
    let mut p = 16;
    let end = block.len() - 4;
    while p + 4 <= end {
        let code = u16_at(block, p, big);
        let olen = u16_at(block, p + 2, big) as usize;
        p += 4;
        if code == OPT_END || p + olen > end {
            break;
        }
        if code == OPT_IF_TSRESOL && olen >= 1 {
            resol = block[p];
        } else if code == OPT_IF_TSOFFSET && olen >= 8 {
            let mut a = [0u8; 8];
            a.copy_from_slice(&block[p..p + 8]);
            offset_s = if big {
                i64::from_be_bytes(a)
            } else {
                i64::from_le_bytes(a)
            };
        }
        p += (olen + 3) & !3;
    }
    let (mult, div, shift) = ts_scale(resol);
    Iface {
        linktype: lt,
        mult,
        div,
        shift,
        offset_us: offset_s as i128 * 1_000_000,
        snap,
        resol,
        offset_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn open(bytes: Vec<u8>) -> Result<CaptureReader, CaptureError> {
        CaptureReader::open(Input::Reader("t".into(), Box::new(io::Cursor::new(bytes))))
    }

    fn all(r: &mut CaptureReader) -> Vec<(u64, i64, u32, Vec<u8>, u32)> {
        let mut out = Vec::new();
        while let Some(rec) = r.next_record() {
            out.push((
                rec.number,
                rec.ts_us,
                rec.linktype,
                rec.data.to_vec(),
                rec.orig_len,
            ));
        }
        out
    }

    fn pcap(magic: u32, big: bool, lt: u32, recs: &[(u32, u32, &[u8], u32)]) -> Vec<u8> {
        let w = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut out = Vec::new();
        out.extend(w(magic));
        out.extend(if big { [0, 2, 0, 4] } else { [2, 0, 4, 0] });
        out.extend(w(0));
        out.extend(w(0));
        out.extend(w(65535));
        out.extend(w(lt));
        for (sec, frac, data, orig) in recs {
            out.extend(w(*sec));
            out.extend(w(*frac));
            out.extend(w(data.len() as u32));
            out.extend(w(*orig));
            out.extend_from_slice(data);
        }
        out
    }

    #[test]
    fn pcap_both_orders_and_resolutions() {
        let recs: &[(u32, u32, &[u8], u32)] = &[(10, 999_999_999, b"abc", 3), (11, 5, b"de", 9)];
        let mut r = open(pcap(PCAP_MAGIC_NS, true, 1, recs)).unwrap();
        let got = all(&mut r);
        // 10 s + 999,999,999 ns = 10,999,999 µs (ns cut to µs); the second record lost 7 bytes.
        assert_eq!(got[0], (1, 10_999_999, 1, b"abc".to_vec(), 3));
        assert_eq!(got[1], (2, 11_000_000, 1, b"de".to_vec(), 9));
        assert_eq!(r.truncated, None);
        let mut r = open(pcap(PCAP_MAGIC_US, false, 113 | 0x1000_0000, recs)).unwrap();
        let got = all(&mut r);
        assert_eq!((got[0].1, got[0].2), (10 * 1_000_000 + 999_999_999, 113)); // FCS bits masked
    }

    #[test]
    fn pcap_cut_short_and_corrupt() {
        let full = pcap(
            PCAP_MAGIC_US,
            false,
            1,
            &[(1, 0, b"0123456789", 10), (2, 0, b"abcdef", 6)],
        );
        let mut r = open(full[..full.len() - 3].to_vec()).unwrap();
        assert_eq!(all(&mut r).len(), 1);
        assert_eq!(
            r.truncated.as_deref(),
            Some("capture cut short in the middle of record 2 (3 of 6 bytes present)")
        );
        let mut r = open(full[..24 + 26 + 5].to_vec()).unwrap();
        assert_eq!(all(&mut r).len(), 1);
        assert_eq!(
            r.truncated.as_deref(),
            Some("capture cut short in the middle of the header of record 2")
        );
        let mut huge = pcap(PCAP_MAGIC_US, false, 1, &[]);
        huge.extend([0u8; 8]);
        huge.extend(0x0200_0000u32.to_le_bytes());
        huge.extend([0u8; 4]);
        let mut r = open(huge).unwrap();
        assert!(all(&mut r).is_empty());
        assert_eq!(
            r.truncated.as_deref(),
            Some("record 1 declares 33554432 bytes, beyond any real packet: the file is corrupt")
        );
    }

    #[test]
    fn open_errors_are_sentences() {
        assert_eq!(open(vec![]).err().unwrap().0, "t: is empty, not a capture");
        assert_eq!(
            open(b"hello world".to_vec()).err().unwrap().0,
            "t: not a pcap or pcapng capture"
        );
        assert_eq!(
            open(vec![0xd4, 0xc3]).err().unwrap().0,
            "t: not a pcap or pcapng capture (file of only 2 bytes)"
        );
        let e = open(pcap(PCAP_MAGIC_US, false, 147, &[])).err().unwrap().0;
        assert!(
            e.starts_with(
                "t: link type 147 is not supported (supported: BSD loopback 0, Ethernet 1"
            ),
            "{e}"
        );
        assert_eq!(
            open(pcap(PCAP_MAGIC_US, false, 1, &[])[..20].to_vec())
                .err()
                .unwrap()
                .0,
            "t: pcap file cut short inside its 24-byte header"
        );
    }

    #[test]
    fn gzip_members_and_trailing_garbage() {
        let file = pcap(
            PCAP_MAGIC_US,
            false,
            1,
            &[(1, 2, b"xyz", 3), (3, 4, b"uvw", 3)],
        );
        let gz = |b: &[u8]| {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(b).unwrap();
            e.finish().unwrap()
        };
        let mut two = gz(&file[..30]);
        two.extend(gz(&file[30..]));
        two.extend(b"trailing junk");
        let mut r = open(two).unwrap();
        assert_eq!(r.compression, Some("gzip"));
        let got = all(&mut r);
        assert_eq!(got.len(), 2);
        assert_eq!(got[1].3, b"uvw");
        assert_eq!(r.truncated, None);
    }

    fn block(btype: u32, body: &[u8]) -> Vec<u8> {
        let len = 12 + body.len().div_ceil(4) * 4;
        let mut out = Vec::new();
        out.extend(btype.to_le_bytes());
        out.extend((len as u32).to_le_bytes());
        out.extend_from_slice(body);
        out.resize(len - 4, 0);
        out.extend((len as u32).to_le_bytes());
        out
    }

    fn shb() -> Vec<u8> {
        let mut body = BOM_LE.to_vec();
        body.extend([1, 0, 0, 0]);
        body.extend((-1i64).to_le_bytes());
        block(PCAPNG_SHB, &body)
    }

    fn idb(lt: u16, opts: &[(u16, &[u8])]) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend(lt.to_le_bytes());
        body.extend([0, 0]);
        body.extend(0u32.to_le_bytes());
        for (code, v) in opts {
            body.extend(code.to_le_bytes());
            body.extend((v.len() as u16).to_le_bytes());
            body.extend_from_slice(v);
            body.resize(body.len().div_ceil(4) * 4, 0);
        }
        body.extend([0, 0, 0, 0]);
        block(BT_IDB, &body)
    }

    fn epb(ifid: u32, ts: u64, data: &[u8], orig: u32) -> Vec<u8> {
        let mut body = Vec::new();
        body.extend(ifid.to_le_bytes());
        body.extend(((ts >> 32) as u32).to_le_bytes());
        body.extend((ts as u32).to_le_bytes());
        body.extend((data.len() as u32).to_le_bytes());
        body.extend(orig.to_le_bytes());
        body.extend_from_slice(data);
        block(BT_EPB, &body)
    }

    #[test]
    fn pcapng_interfaces_resolutions_and_skips() {
        let mut f = shb();
        f.extend(idb(
            1,
            &[
                (OPT_IF_TSRESOL, &[9]),
                (OPT_IF_TSOFFSET, &100i64.to_le_bytes()),
            ],
        ));
        f.extend(idb(147, &[]));
        f.extend(idb(101, &[(OPT_IF_TSRESOL, &[0x80 | 10])]));
        f.extend(epb(0, 1_500_000_999, b"ns", 2)); // 1.500000999 s + 100 s offset
        f.extend(epb(1, 7, b"skipped", 7)); // link type 147: counted, skipped
        f.extend(epb(2, 3 << 10, b"bin", 3)); // 3 s in 2^-10 units
        let mut spb = 5u32.to_le_bytes().to_vec();
        spb.extend(b"12345");
        f.extend(block(BT_SPB, &spb));
        f.extend(epb(9, 0, b"x", 1));
        let mut r = open(f).unwrap();
        let got = all(&mut r);
        assert_eq!(got[0], (1, 101_500_000, 1, b"ns".to_vec(), 2));
        assert_eq!(got[1], (3, 3_000_000, 101, b"bin".to_vec(), 3));
        assert_eq!(got[2], (4, 0, 1, b"12345".to_vec(), 5));
        assert_eq!(got.len(), 3);
        assert_eq!(r.skipped_unknown_link, 1);
        assert_eq!(
            r.truncated.as_deref(),
            Some("packet 5 names interface 9, which was never described")
        );
    }

    /// Interfaces past `max_interfaces` in a section are counted, not kept (hand-computed: a
    /// bound of 2, sections of 3 and 4 interfaces: 1 + 2 not kept; interface 1 of the second
    /// section is kept, interface 3 is not and ends the capture at packet 3).
    #[test]
    fn pcapng_interfaces_past_the_bound() {
        let mut f = shb();
        for _ in 0..3 {
            f.extend(idb(1, &[]));
        }
        f.extend(epb(1, 1, b"a", 1));
        f.extend(shb());
        for _ in 0..4 {
            f.extend(idb(1, &[]));
        }
        f.extend(epb(1, 2, b"b", 1));
        f.extend(epb(3, 3, b"c", 1));
        f.extend(epb(0, 4, b"d", 1));
        let mut r = open(f.clone()).unwrap();
        r.max_interfaces = 2;
        let got = all(&mut r);
        assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(r.interfaces_not_kept, 3);
        assert_eq!(
            r.truncated.as_deref(),
            Some(
                "packet 3 names interface 3, which was never described or is past the 2 \
                 interfaces kept per section"
            )
        );
        let mut r = open(f).unwrap();
        assert_eq!(all(&mut r).len(), 4);
        assert_eq!((r.interfaces_not_kept, r.truncated), (0, None));
    }
}
