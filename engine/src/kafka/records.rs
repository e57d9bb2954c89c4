//! Kafka record sets: v2 record batches and legacy (magic 0/1) message sets.
//!
//! A RECORDS field holds a concatenation of entries whose magic byte sits at offset 16 in every
//! format, so one loop reads both. Checksums are verified (CRC-32C over a v2 batch from its
//! attributes on, CRC-32 over a legacy message from its magic on), compressed payloads go
//! through [`codecs`](super::codecs) (which enforces the limits), and every record becomes a
//! [`Message`]. Mirrors `wiredump/dissect/protocols/kafka/records.py` (its `messages=True`,
//! `emit=True` path): the same entries, messages, problems at the same offsets, the same stats.
//!
//! Varint values are read into `i128` because the reference reads them as unbounded integers
//! (a ten-byte varint holds 70 bits) and prints them in its messages.

use std::borrow::Cow;

use super::body::{decode_body, Field};
use super::codecs::{self, Limits};
use super::schema::DATA_PLANS;
use crate::model::MAX_ANOMALIES_PER_KIND;

const V2_OVERHEAD: i64 = 61;
const LEGACY_MIN: i64 = 14;
const CODEC_NAMES: [Option<&str>; 8] = [
    None,
    Some("gzip"),
    Some("snappy"),
    Some("lz4"),
    Some("zstd"),
    Some("5"),
    Some("6"),
    Some("7"),
];

/// A problem found in a record set; `offset` is relative to the record set's first byte.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The frame status it sets (`malformed`, `bad_checksum`), or `None` for a note only.
    pub status: Option<&'static str>,
    pub kind: &'static str,
    pub detail: String,
    pub offset: Option<i128>,
    /// 0 for a problem; else this entry stands for `more` problems of its kind past the frame's
    /// per-kind cap ([`MAX_ANOMALIES_PER_KIND`]), `offset` the first one's, their details not
    /// kept (a record set of a million bad batches holds 64 problems of a kind and one of these).
    pub more: u64,
}

/// Producer state of the v2 batch a record came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchDetail {
    pub batch_base_offset: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub transactional: bool,
}

/// A record header: its key (UTF-8, damaged bytes replaced) and value (or null).
pub type Header<'a> = (String, Option<Cow<'a, [u8]>>);

/// A legacy message's key, value and value length.
type KeyValue<'a> = (Option<&'a [u8]>, Option<&'a [u8]>, i32);

/// One record (v2) or message (legacy).
#[derive(Clone, Debug, PartialEq)]
pub struct Message<'a> {
    pub value_size: i128,
    pub offset: i128,
    pub key: Option<Cow<'a, [u8]>>,
    pub value: Option<Cow<'a, [u8]>>,
    pub timestamp_ms: Option<i128>,
    pub headers: Option<Vec<Header<'a>>>,
    pub compression: Option<&'static str>,
    pub checksum_ok: bool,
    pub detail: Option<BatchDetail>,
}

/// A control record (transaction marker, KRaft record).
#[derive(Clone, Debug, PartialEq)]
pub enum Control<'a> {
    /// A key too short for (version, type).
    Key(Option<Cow<'a, [u8]>>),
    Typed {
        version: i16,
        ctype: i16,
        /// (marker version, coordinator epoch) of a COMMIT/ABORT marker.
        marker: Option<(i16, i32)>,
        /// The KRaft value decoded with its data structure.
        decoded: Option<Vec<Field<'static>>>,
        /// The value when it is neither.
        value: Option<Cow<'a, [u8]>>,
    },
}

/// The name of a control record type.
pub fn control_type_name(ctype: i16) -> Cow<'static, str> {
    match ctype {
        0 => "ABORT".into(),
        1 => "COMMIT".into(),
        2 => "LEADER_CHANGE".into(),
        3 => "SNAPSHOT_HEADER".into(),
        4 => "SNAPSHOT_FOOTER".into(),
        5 => "KRAFT_VERSION".into(),
        6 => "KRAFT_VOTERS".into(),
        _ => format!("UNKNOWN_{ctype}").into(),
    }
}

/// A v2 batch's header and what its records gave.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch<'a> {
    pub base_offset: i64,
    pub batch_length: i32,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub crc_ok: bool,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records_count: i32,
    pub record_count: i64,
    pub control_records: Option<Vec<Control<'a>>>,
}

impl Batch<'_> {
    pub fn compression(&self) -> Option<&'static str> {
        CODEC_NAMES[(self.attributes & 7) as usize]
    }
}

/// A legacy message (a compressed wrapper counts its inner messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Legacy {
    pub offset: i64,
    pub message_size: i64,
    pub crc: u32,
    pub crc_ok: bool,
    pub magic: u8,
    pub attributes: i8,
    pub record_count: i64,
    /// (timestamp, log-append time?) of a magic-1 message.
    pub timestamp: Option<(i64, bool)>,
    /// (inner messages, all their CRCs ok) of a compressed wrapper.
    pub inner: Option<(usize, bool)>,
}

impl Legacy {
    pub fn compression(&self) -> Option<&'static str> {
        CODEC_NAMES[(self.attributes & 7) as usize]
    }
}

/// One entry of a record set.
#[derive(Clone, Debug, PartialEq)]
pub enum Entry<'a> {
    V2(Batch<'a>),
    Legacy(Legacy),
}

/// Counters the stats sink reads (keys as the reference's `stats` dict; only those touched).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Inline: a record set counts a few kinds (batches, records, a codec).
    pub counts: smallvec::SmallVec<[(&'static str, u64); 4]>,
}

impl Stats {
    fn add(&mut self, key: &'static str, n: u64) {
        match self.counts.iter_mut().find(|(k, _)| *k == key) {
            Some(e) => e.1 += n,
            None => self.counts.push((key, n)),
        }
    }
}

/// The decode of one record set.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordSet<'a> {
    pub size: usize,
    /// Inline for one (most record sets hold one batch).
    pub entries: smallvec::SmallVec<[Entry<'a>; 1]>,
    pub record_count: i64,
    pub partial_trailing_bytes: Option<usize>,
    pub undecoded_bytes: Option<usize>,
    pub messages: Vec<Message<'a>>,
    pub problems: Vec<Problem>,
    pub stats: Stats,
    /// Records read past the frame's cap (`Limits::max_messages`): counted, not kept as
    /// messages (the frame's `messages_counted`, as the reference's `_counted_only`).
    pub counted: u64,
    /// Entries read past the frame's `Limits::max_batches`: checked, not in `entries`.
    pub unlisted: u64,
}

struct Ctx<'l, 'a> {
    limits: &'l mut Limits,
    partial_ok: bool,
    /// Added to every problem offset (a wrapper's inner set reports at the wrapper).
    base: i128,
    problems: Vec<Problem>,
    stats: Stats,
    messages: Vec<Message<'a>>,
    /// Records the frame counted before this record set (the frame's message cap spans them).
    prior_records: i64,
    /// Control records the frame counted before this record set (their dicts are capped too).
    prior_controls: i64,
    /// Records read past the frame's cap (see `RecordSet::counted`).
    counted: u64,
    /// Batches and legacy messages the frame read before this record set (`Limits::max_batches`).
    prior_entries: i64,
    /// Per problem kind: problems found, and the index in `problems` of its entry past the cap.
    kinds: Vec<(&'static str, u64, Option<usize>)>,
    /// Make v2 records into `messages` (see [`decode_record_set_listing`]).
    keep_messages: bool,
}

impl Ctx<'_, '_> {
    /// Counts the records of a batch read past the frame's cap (`room` left when the batch
    /// began), so that totals include the messages not kept as rows (`_counted_only`).
    fn counted_only(&mut self, read: i64, room: i64) {
        if read > room.max(0) {
            self.counted += (read - room.max(0)) as u64;
        }
    }

    /// Records this frame has counted so far (the reference's `stats["records"]`).
    fn records_so_far(&self) -> i64 {
        let here = self
            .stats
            .counts
            .iter()
            .find(|(k, _)| *k == "records")
            .map_or(0, |e| e.1 as i64);
        self.prior_records + here
    }

    /// Control records this frame has counted so far (the reference's
    /// `stats["control_records"]`).
    fn controls_so_far(&self) -> i64 {
        let here = self
            .stats
            .counts
            .iter()
            .find(|(k, _)| *k == "control_records")
            .map_or(0, |e| e.1 as i64);
        self.prior_controls + here
    }

    fn problem(
        &mut self,
        status: Option<&'static str>,
        kind: &'static str,
        detail: String,
        at: Option<i128>,
    ) {
        self.push_problem(Problem {
            status,
            kind,
            detail,
            offset: at.map(|o| o + self.base),
            more: 0,
        });
    }

    /// Keeps the first [`MAX_ANOMALIES_PER_KIND`] problems of a kind; counts the rest in one
    /// entry where the first of them was found (the frame would count them so: see
    /// `model::PendingAnomalies`, whose rule this is).
    fn push_problem(&mut self, p: Problem) {
        let i = match self.kinds.iter().position(|k| k.0 == p.kind) {
            Some(i) => i,
            None => {
                self.kinds.push((p.kind, 0, None));
                self.kinds.len() - 1
            }
        };
        let n = p.more.max(1);
        let entry = &mut self.kinds[i];
        if p.more == 0 && entry.1 < MAX_ANOMALIES_PER_KIND {
            entry.1 += 1;
            self.problems.push(p);
            return;
        }
        entry.1 += n;
        match entry.2 {
            Some(at) => self.problems[at].more += n,
            None => {
                entry.2 = Some(self.problems.len());
                self.problems.push(Problem {
                    detail: String::new(),
                    more: n,
                    ..p
                });
            }
        }
    }

    /// Batches and legacy messages the frame has read so far (the reference's
    /// `_entries_so_far`).
    fn entries_so_far(&self) -> i64 {
        let here: u64 = self
            .stats
            .counts
            .iter()
            .filter(|(k, _)| *k == "batches" || *k == "messages")
            .map(|e| e.1)
            .sum();
        self.prior_entries + here as i64
    }

    fn malformed(&mut self, detail: String, at: i128) {
        self.problem(Some("malformed"), "malformed", detail, Some(at));
    }

    fn decompress(
        &mut self,
        codec: i16,
        payload: &[u8],
        legacy_lz4: bool,
        at: i128,
    ) -> Option<Vec<u8>> {
        let res = match codec {
            1 => codecs::gzip(payload, self.limits),
            2 => codecs::snappy_kafka(payload, self.limits),
            3 => codecs::lz4_frame(payload, self.limits, legacy_lz4),
            4 => codecs::zstd(payload, self.limits),
            _ => {
                self.malformed(format!("unknown compression codec {codec}"), at);
                return None;
            }
        };
        match res {
            Ok(out) => Some(out),
            Err(p) => {
                let status = matches!(p, codecs::Problem::Failed(_)).then_some("malformed");
                self.problem(status, p.kind(), p.detail().to_owned(), Some(at));
                None
            }
        }
    }
}

fn be_i64(b: &[u8], p: usize) -> i64 {
    i64::from_be_bytes(b[p..p + 8].try_into().expect("8 bytes"))
}
fn be_i32(b: &[u8], p: usize) -> i32 {
    i32::from_be_bytes(b[p..p + 4].try_into().expect("4 bytes"))
}
fn be_u32(b: &[u8], p: usize) -> u32 {
    u32::from_be_bytes(b[p..p + 4].try_into().expect("4 bytes"))
}
fn be_i16(b: &[u8], p: usize) -> i16 {
    i16::from_be_bytes([b[p], b[p + 1]])
}

/// Decodes every batch/message of a record set. `partial_ok`: a Fetch response may end with a
/// partial batch (normal); elsewhere that is malformed. Never panics on any input.
pub fn decode_record_set<'a>(
    data: &'a [u8],
    partial_ok: bool,
    limits: &mut Limits,
) -> RecordSet<'a> {
    decode_record_set_in_frame(data, partial_ok, limits, 0)
}

/// [`decode_record_set`] for a record set of a frame that already counted `prior_records`
/// records in its earlier sets: past `Limits::max_messages` per frame, records are read and
/// checked but not kept as messages (a `message_limit` note).
pub fn decode_record_set_in_frame<'a>(
    data: &'a [u8],
    partial_ok: bool,
    limits: &mut Limits,
    prior_records: u64,
) -> RecordSet<'a> {
    decode_record_set_after(data, partial_ok, limits, prior_records, 0)
}

/// [`decode_record_set_in_frame`] when the frame's earlier record sets also counted
/// `prior_controls` control records: a frame keeps at most `Limits::max_messages` control
/// record dicts over all its sets (a compressed control batch can hold millions), and counts
/// them all (`control_records` in the stats).
pub fn decode_record_set_after<'a>(
    data: &'a [u8],
    partial_ok: bool,
    limits: &mut Limits,
    prior_records: u64,
    prior_controls: u64,
) -> RecordSet<'a> {
    decode_record_set_listing(
        data,
        partial_ok,
        limits,
        prior_records,
        prior_controls,
        0,
        true,
    )
}

/// [`decode_record_set_after`] when the frame's earlier record sets also read `prior_entries`
/// batches and legacy messages: a frame lists at most `Limits::max_batches` of them in its
/// fields (an empty batch is 61 bytes: a 100 MiB set holds 1.7M); the rest are read, checked
/// and counted (`unlisted`, a `batch_limit` note).
///
/// `keep_messages` false (no sink reads the messages): a v2 batch's records are read, checked
/// and counted exactly as with it, but not made into `messages` (their keys, values and headers
/// are not copied out). Legacy message sets count their records by making them, so they always
/// do.
pub fn decode_record_set_listing<'a>(
    data: &'a [u8],
    partial_ok: bool,
    limits: &mut Limits,
    prior_records: u64,
    prior_controls: u64,
    prior_entries: u64,
    keep_messages: bool,
) -> RecordSet<'a> {
    let mut cx = Ctx {
        keep_messages,
        limits,
        partial_ok,
        base: 0,
        problems: Vec::new(),
        stats: Stats::default(),
        messages: Vec::new(),
        prior_records: prior_records as i64,
        prior_controls: prior_controls as i64,
        counted: 0,
        prior_entries: prior_entries as i64,
        kinds: Vec::new(),
    };
    let mut first_unlisted = 0usize;
    let n = data.len();
    let mut out = RecordSet {
        size: n,
        ..RecordSet::default()
    };
    let mut pos = 0usize;
    let mut records = 0i64;
    while pos < n {
        let left = n - pos;
        if left < 17 {
            partial(
                &mut cx,
                &mut out,
                pos,
                left,
                "record set ends with a partial entry header".into(),
            );
            break;
        }
        let base_offset = be_i64(data, pos);
        let length = be_i32(data, pos + 8);
        let magic = data[pos + 16];
        let length64 = i64::from(length);
        if length < 0
            || (magic == 2 && length64 < V2_OVERHEAD - 12)
            || (magic < 2 && length64 < LEGACY_MIN)
        {
            cx.malformed(
                format!("record entry declares length {length}"),
                pos as i128,
            );
            out.undecoded_bytes = Some(left);
            break;
        }
        let end = pos + 12 + length as usize;
        if end > n {
            partial(
                &mut cx,
                &mut out,
                pos,
                left,
                format!("entry of {} bytes with {left} left", 12 + length64),
            );
            break;
        }
        let listed = cx.entries_so_far() < cx.limits.max_batches as i64;
        let e = if magic == 2 {
            Entry::V2(batch_v2(data, pos, end, base_offset, &mut cx))
        } else if magic < 2 {
            Entry::Legacy(legacy(data, pos, end, base_offset, magic, &mut cx, 0, None))
        } else {
            cx.malformed(format!("unknown record magic {magic}"), (pos + 16) as i128);
            out.undecoded_bytes = Some(left);
            break;
        };
        records += match &e {
            Entry::V2(b) => b.record_count,
            Entry::Legacy(m) => m.record_count,
        };
        if listed {
            out.entries.push(e);
        } else {
            if out.unlisted == 0 {
                first_unlisted = pos;
            }
            out.unlisted += 1;
        }
        pos = end;
    }
    if out.unlisted != 0 {
        let detail = format!(
            "{} of the record set's {} batches are past the frame's {}th: read and checked, not \
             listed",
            out.unlisted,
            out.entries.len() as u64 + out.unlisted,
            cx.limits.max_batches
        );
        cx.problem(None, "batch_limit", detail, Some(first_unlisted as i128));
    }
    out.record_count = records;
    out.problems = cx.problems;
    out.stats = cx.stats;
    out.counted = cx.counted;
    out.messages = cx.messages;
    out
}

fn partial(cx: &mut Ctx<'_, '_>, out: &mut RecordSet<'_>, pos: usize, left: usize, why: String) {
    out.partial_trailing_bytes = Some(left);
    if !cx.partial_ok {
        cx.malformed(format!("truncated record set: {why}"), pos as i128);
    }
}

/// Why a record stopped: it contradicts itself (`Bad`) or reads past the bytes (`Index`, the
/// reference's IndexError).
enum RecErr {
    Bad(String, i128),
    Index,
}

fn zz(x: u128) -> i128 {
    ((x >> 1) as i128) ^ -((x & 1) as i128)
}

fn at(rb: &[u8], p: i128) -> Result<u8, RecErr> {
    usize::try_from(p)
        .ok()
        .and_then(|i| rb.get(i).copied())
        .ok_or(RecErr::Index)
}

/// The bounds of Python's `rb[a:b]` (clamped, never failing) for non-negative a and b.
fn clamp(len: usize, a: i128, b: i128) -> (usize, usize) {
    let l = len as i128;
    let (a, b) = (a.clamp(0, l) as usize, b.clamp(0, l) as usize);
    (a, b.max(a))
}

/// A zig-zag varint at rb[p] -> (value, next position).
fn varint(rb: &[u8], mut p: i128) -> Result<(i128, i128), RecErr> {
    let x = at(rb, p)?;
    p += 1;
    if x < 0x80 {
        return Ok((zz(u128::from(x)), p));
    }
    let mut result = u128::from(x & 0x7F);
    let mut shift = 7;
    loop {
        let x = at(rb, p)?;
        p += 1;
        result |= u128::from(x & 0x7F) << shift;
        if x < 0x80 {
            return Ok((zz(result), p));
        }
        shift += 7;
        if shift > 63 {
            return Err(RecErr::Bad("varint longer than 10 bytes".into(), p));
        }
    }
}

/// A one-byte varint inline, else the general one.
fn var(rb: &[u8], p: &mut i128) -> Result<i128, RecErr> {
    let x = at(rb, *p)?;
    if x < 0x80 {
        *p += 1;
        return Ok(zz(u128::from(x)));
    }
    let (v, np) = varint(rb, *p)?;
    *p = np;
    Ok(v)
}

fn batch_v2<'a>(
    data: &'a [u8],
    pos: usize,
    end: usize,
    base_offset: i64,
    cx: &mut Ctx<'_, 'a>,
) -> Batch<'a> {
    let attributes = be_i16(data, pos + 21);
    let crc = be_u32(data, pos + 17);
    let computed = crc32c::crc32c(&data[pos + 21..end]);
    let crc_ok = computed == crc;
    let codec = attributes & 7;
    let log_append = attributes & 8 != 0;
    let control = attributes & 32 != 0;
    let transactional = attributes & 16 != 0;
    let compression = CODEC_NAMES[codec as usize];
    let mut b = Batch {
        base_offset,
        batch_length: be_i32(data, pos + 8),
        partition_leader_epoch: be_i32(data, pos + 12),
        magic: data[pos + 16] as i8,
        crc,
        crc_ok,
        attributes,
        last_offset_delta: be_i32(data, pos + 23),
        base_timestamp: be_i64(data, pos + 27),
        max_timestamp: be_i64(data, pos + 35),
        producer_id: be_i64(data, pos + 43),
        producer_epoch: be_i16(data, pos + 51),
        base_sequence: be_i32(data, pos + 53),
        records_count: be_i32(data, pos + 57),
        record_count: 0,
        control_records: None,
    };
    cx.stats.add("batches", 1);
    if crc_ok {
        cx.stats.add("crc_ok", 1);
    } else {
        cx.stats.add("crc_bad", 1);
        cx.problem(
            Some("bad_checksum"),
            "bad_checksum",
            format!("record batch at offset {base_offset}: CRC-32C {crc:#010x} stored, {computed:#010x} computed"),
            Some((pos + 17) as i128),
        );
    }
    let count = b.records_count;
    if count < 0 {
        cx.malformed(
            format!("record batch declares {count} records"),
            (pos + 57) as i128,
        );
        return b;
    }
    let start = pos + V2_OVERHEAD as usize;
    let decompressed;
    let (rb, p0, rend, rel): (&[u8], usize, usize, i128) = if codec != 0 {
        match cx.decompress(codec, &data[start..end], false, start as i128) {
            Some(v) => {
                decompressed = v;
                (&decompressed[..], 0, decompressed.len(), start as i128)
            }
            None => return b,
        }
    } else {
        (data, start, end, 0)
    };
    let owned = codec != 0;
    // rb[a:b] as the reference slices it: borrowed from `data`, or copied out of a decompressed
    // buffer that ends with this batch.
    let mk = |a: i128, b: i128| -> Cow<'a, [u8]> {
        let (a, b) = clamp(rb.len(), a, b);
        if owned {
            Cow::Owned(rb[a..b].to_vec())
        } else {
            Cow::Borrowed(&data[a..b])
        }
    };
    if count as usize > rend - p0 {
        cx.malformed(
            format!("batch declares {count} records in {} bytes", rend - p0),
            (pos + 57) as i128,
        );
        return b;
    }
    let ts_fixed = log_append.then_some(b.max_timestamp);
    let detail = BatchDetail {
        batch_base_offset: base_offset,
        producer_id: b.producer_id,
        producer_epoch: b.producer_epoch,
        base_sequence: b.base_sequence,
        transactional,
    };
    // The frame's message cap (`Limits::max_messages`) left for this batch.
    let room = cx.limits.max_messages as i64 - cx.records_so_far();
    // Control records are not messages, but the frame keeps at most max_messages of them too.
    let control_room = cx.limits.max_messages as i64 - cx.controls_so_far();
    let mut controls = Vec::new();
    // Keys, values and headers are copied out only for what is kept: messages (when a sink reads
    // them) and control records (their dicts are the batch's fields).
    let want = cx.keep_messages || control;
    let mut p = p0 as i128;
    let mut n = 0usize;
    let mut run = || -> Result<(), RecErr> {
        for i in 0..count as usize {
            n = i;
            let length = var(rb, &mut p)?;
            let rec_end = p + length;
            if length < 5 || rec_end > rend as i128 {
                return Err(RecErr::Bad(
                    format!("record {i} declares length {length}"),
                    p,
                ));
            }
            let (t, o, x) = (at(rb, p + 1)?, at(rb, p + 2)?, at(rb, p + 3)?);
            let (ts_delta, off_delta, klen);
            if t < 0x80 && o < 0x80 && x < 0x80 {
                (ts_delta, off_delta, klen) = (zz(t.into()), zz(o.into()), zz(x.into()));
                p += 4;
            } else {
                if t < 0x80 {
                    ts_delta = zz(t.into());
                    p += 2;
                } else {
                    let (v, np) = varint(rb, p + 1)?;
                    ts_delta = v;
                    p = np;
                }
                off_delta = var(rb, &mut p)?;
                klen = var(rb, &mut p)?;
            }
            let key = if klen >= 0 {
                let k = want.then(|| mk(p, p + klen));
                p += klen;
                k
            } else {
                None
            };
            let vlen = var(rb, &mut p)?;
            let value = if vlen >= 0 {
                let v = want.then(|| mk(p, p + vlen));
                p += vlen;
                v
            } else {
                None
            };
            let mut headers = None;
            if at(rb, p)? == 0 {
                p += 1;
            } else {
                let hcount = var(rb, &mut p)?;
                if hcount != 0 {
                    if hcount < 0 || hcount > rec_end - p {
                        return Err(RecErr::Bad(
                            format!("record {i} declares {hcount} headers"),
                            p,
                        ));
                    }
                    let mut hs = Vec::with_capacity(if want { hcount as usize } else { 0 });
                    for _ in 0..hcount {
                        let (hk, np) = varint(rb, p)?;
                        p = np;
                        if hk < 0 {
                            return Err(RecErr::Bad(
                                format!("record {i}: header key length {hk}"),
                                p,
                            ));
                        }
                        let (a, z) = clamp(rb.len(), p, p + hk);
                        let hkey = want.then(|| String::from_utf8_lossy(&rb[a..z]).into_owned());
                        p += hk;
                        let (hv, np) = varint(rb, p)?;
                        p = np;
                        let hval = (want && hv >= 0).then(|| mk(p, p + hv));
                        p += hv.max(0);
                        if let Some(hkey) = hkey {
                            hs.push((hkey, hval));
                        }
                    }
                    headers = want.then_some(hs);
                }
            }
            if p != rec_end {
                return Err(RecErr::Bad(
                    format!("record {i} ends at {p}, declared end {rec_end}"),
                    p,
                ));
            }
            if control {
                if (i as i64) < control_room {
                    controls.push(control_record(key, value));
                }
                continue;
            }
            if (i as i64) >= room || !want {
                continue; // past the frame's cap, or no sink reads it: read and checked
            }
            cx.messages.push(Message {
                value_size: vlen.max(0),
                offset: i128::from(base_offset) + off_delta,
                key,
                value,
                timestamp_ms: Some(
                    ts_fixed.map_or(i128::from(b.base_timestamp) + ts_delta, i128::from),
                ),
                headers: headers.take(),
                compression,
                checksum_ok: crc_ok,
                detail: Some(detail.clone()),
            });
        }
        n = count as usize;
        Ok(())
    };
    let r = run();
    match r {
        Err(RecErr::Bad(msg, off)) => {
            b.record_count = n as i64;
            cx.counted_only(if control { 0 } else { n as i64 }, room);
            cx.malformed(format!("batch at offset {base_offset}: {msg}"), rel + off);
            return b;
        }
        Err(RecErr::Index) => {
            b.record_count = n as i64;
            cx.counted_only(if control { 0 } else { n as i64 }, room);
            cx.malformed(
                format!("batch at offset {base_offset}: record {n} runs past the batch"),
                rel + p,
            );
            return b;
        }
        Ok(()) => {}
    }
    b.record_count = if control { 0 } else { n as i64 };
    cx.counted_only(b.record_count, room);
    if !controls.is_empty() {
        b.control_records = Some(controls);
    }
    if p != rend as i128 {
        cx.malformed(
            format!(
                "batch at offset {base_offset}: {} bytes after the last record",
                rend as i128 - p
            ),
            rel + p,
        );
    }
    let max = cx.limits.max_messages;
    if control {
        cx.stats.add("control_records", n as u64);
        let n = n as i64;
        if control_room >= 0 && n > control_room {
            cx.problem(
                None,
                "message_limit",
                format!(
                    "batch at offset {base_offset}: control records past the frame's {max}th were read and checked, not kept ({} of {n})",
                    n - control_room
                ),
                Some(pos as i128),
            );
        }
    }
    if room >= 0 && b.record_count > room {
        // Counted, not materialised (whatever the command, so the note is the same everywhere).
        cx.problem(
            None,
            "message_limit",
            format!(
                "batch at offset {base_offset}: records past the frame's {max}th were read and checked, not kept ({} of {})",
                b.record_count - room,
                b.record_count
            ),
            Some(pos as i128),
        );
    }
    cx.stats.add("records", b.record_count as u64);
    b
}

/// A KRaft control record's value, decoded with the data structure for its type (versions tried
/// newest first, as the schema version is not on the wire).
fn decode_control_value(ctype: i16, value: &[u8]) -> Option<Vec<Field<'static>>> {
    let name = match ctype {
        2 => "LeaderChangeMessage",
        3 => "SnapshotHeaderRecord",
        4 => "SnapshotFooterRecord",
        5 => "KRaftVersionRecord",
        6 => "VotersRecord",
        _ => return None,
    };
    let mut plans: Vec<_> = DATA_PLANS.iter().filter(|d| d.name == name).collect();
    plans.sort_by_key(|d| std::cmp::Reverse(d.version));
    for d in plans {
        let dec = decode_body(value, 0, d.plan, &[]);
        if dec.error.is_none() && dec.end == value.len() {
            return Some(dec.fields.into_iter().map(Field::into_owned).collect());
        }
    }
    None
}

fn control_record<'a>(key: Option<Cow<'a, [u8]>>, value: Option<Cow<'a, [u8]>>) -> Control<'a> {
    let Some(k) = key.as_deref().filter(|k| k.len() >= 4) else {
        return Control::Key(key);
    };
    let (version, ctype) = (be_i16(k, 0), be_i16(k, 2));
    let (mut marker, mut decoded, mut raw) = (None, None, None);
    match value {
        Some(v) if (ctype == 0 || ctype == 1) && v.len() >= 6 => {
            marker = Some((be_i16(&v, 0), be_i32(&v, 2)))
        }
        Some(v) => match decode_control_value(ctype, &v) {
            Some(d) => decoded = Some(d),
            None => raw = Some(v),
        },
        None => {}
    }
    Control::Typed {
        version,
        ctype,
        marker,
        decoded,
        value: raw,
    }
}

#[allow(clippy::too_many_arguments)]
fn legacy<'a>(
    data: &'a [u8],
    pos: usize,
    end: usize,
    offset: i64,
    magic: u8,
    cx: &mut Ctx<'_, 'a>,
    depth: usize,
    inner_of: Option<&mut Vec<Message<'a>>>,
) -> Legacy {
    let crc = be_u32(data, pos + 12);
    let attributes = data[pos + 17] as i8;
    let computed = crc32(&data[pos + 16..end]);
    let crc_ok = computed == crc;
    let codec = i16::from(attributes & 7);
    let log_append = attributes & 8 != 0 && magic == 1;
    let mut m = Legacy {
        offset,
        message_size: (end - pos - 12) as i64,
        crc,
        crc_ok,
        magic,
        attributes,
        record_count: 0,
        timestamp: None,
        inner: None,
    };
    cx.stats.add("messages", 1);
    if crc_ok {
        cx.stats.add("crc_ok", 1);
    } else {
        cx.stats.add("crc_bad", 1);
        cx.problem(
            Some("bad_checksum"),
            "bad_checksum",
            format!(
                "message at offset {offset}: CRC-32 {crc:#010x} stored, {computed:#010x} computed"
            ),
            Some((pos + 12) as i128),
        );
    }
    let mut p = pos + 18;
    let mut ts = None;
    // Python's struct.unpack_from reads past `end` (not past the buffer): so does this.
    let unpack_err = |size: usize, p: usize| {
        format!(
            "unpack_from requires a buffer of at least {} bytes for unpacking {size} bytes at offset {p} (actual buffer size is {})",
            p + size,
            data.len()
        )
    };
    let read = (|| -> Result<KeyValue<'a>, (String, usize)> {
        if magic == 1 {
            if p + 8 > data.len() {
                return Err((unpack_err(8, p), p));
            }
            let t = be_i64(data, p);
            p += 8;
            ts = Some(t);
            m.timestamp = Some((t, log_append));
        }
        if p + 4 > data.len() {
            return Err((unpack_err(4, p), p));
        }
        let klen = be_i32(data, p);
        p += 4;
        if i64::from(klen) > end as i64 - p as i64 {
            return Err((format!("key length {klen}"), p - 4));
        }
        let key = (klen >= 0).then(|| &data[p..p + klen as usize]);
        p += klen.max(0) as usize;
        if p + 4 > data.len() {
            return Err((unpack_err(4, p), p));
        }
        let vlen = be_i32(data, p);
        p += 4;
        if i64::from(vlen) > end as i64 - p as i64 {
            return Err((format!("value length {vlen}"), p - 4));
        }
        let value = (vlen >= 0).then(|| &data[p..p + vlen as usize]);
        p += vlen.max(0) as usize;
        Ok((key, value, vlen))
    })();
    let (key, value, vlen) = match read {
        Ok(r) => r,
        Err((msg, off)) => {
            cx.malformed(format!("message at offset {offset}: {msg}"), off as i128);
            return m;
        }
    };
    if p != end {
        cx.malformed(
            // Negative when the lengths were read past a message shorter than its header (as
            // the reference, which reads them from the whole set).
            format!(
                "message at offset {offset}: {} bytes after the value",
                end as i64 - p as i64
            ),
            p as i128,
        );
    }
    if codec == 0 {
        m.record_count = 1;
        cx.stats.add("records", 1);
        let msg = Message {
            value_size: i128::from(vlen.max(0)),
            offset: i128::from(offset),
            key: key.map(Cow::Borrowed),
            value: value.map(Cow::Borrowed),
            timestamp_ms: ts.filter(|t| *t >= 0).map(i128::from),
            headers: None,
            compression: None,
            checksum_ok: crc_ok,
            detail: None,
        };
        match inner_of {
            Some(v) => v.push(msg),
            None => cx.messages.push(msg),
        }
        return m;
    }
    if depth >= 1 || inner_of.is_some() {
        cx.malformed(
            format!("message at offset {offset}: compressed message inside a compressed message"),
            (pos + 17) as i128,
        );
        return m;
    }
    let Some(value) = value else {
        cx.malformed(
            format!("compressed message at offset {offset} has no value"),
            p as i128,
        );
        return m;
    };
    let Some(inner) = cx.decompress(codec, value, magic == 0, (p - value.len()) as i128) else {
        return m;
    };
    let saved = cx.base;
    cx.base = saved + pos as i128;
    let mut inner_msgs: Vec<Message<'a>> = Vec::new();
    let mut entries: Vec<bool> = Vec::new();
    // Past the frame's cap (Limits::max_messages) inner messages are read and counted, not kept.
    let room = cx.limits.max_messages as i64 - cx.records_so_far();
    let (mut over, mut last_over) = (0usize, 0i128);
    let (mut ipos, n) = (0usize, inner.len());
    while ipos < n {
        if ((n - ipos) as i64) < 12 + LEGACY_MIN {
            cx.malformed(
                format!(
                    "wrapper at offset {offset}: inner set ends with {} stray bytes",
                    n - ipos
                ),
                0,
            );
            break;
        }
        let ioff = be_i64(&inner, ipos);
        let isize = be_i32(&inner, ipos + 8);
        let imagic = inner[ipos + 16];
        let iend = ipos as i64 + 12 + i64::from(isize);
        if i64::from(isize) < LEGACY_MIN || iend > n as i64 || imagic > 1 {
            cx.malformed(
                format!("wrapper at offset {offset}: bad inner message at byte {ipos}"),
                0,
            );
            break;
        }
        let iend = iend as usize;
        // The inner buffer is temporary: its messages own their bytes (depth 1 copies).
        let mut sink = Vec::new();
        let e = legacy_inner(&inner, ipos, iend, ioff, imagic, cx, &mut sink);
        if (inner_msgs.len() as i64) < room {
            inner_msgs.extend(sink);
        } else if let Some(last) = sink.last() {
            over += sink.len();
            last_over = last.offset;
        }
        entries.push(e);
        ipos = iend;
    }
    cx.base = saved;
    if magic == 1 && offset != 0 {
        let last = inner_msgs
            .last()
            .map(|im| if over > 0 { last_over } else { im.offset });
        if let Some(last) = last {
            for im in &mut inner_msgs {
                im.offset += i128::from(offset) - last;
            }
        }
    }
    let compression = CODEC_NAMES[codec as usize];
    for im in &mut inner_msgs {
        im.compression = compression;
        im.checksum_ok = im.checksum_ok && crc_ok;
        if log_append {
            im.timestamp_ms = ts.map(i128::from);
        }
    }
    m.inner = Some((entries.len(), entries.iter().all(|ok| *ok)));
    m.record_count = (inner_msgs.len() + over) as i64;
    cx.counted += over as u64;
    cx.messages.extend(inner_msgs);
    if over > 0 && room >= 0 {
        // Once per frame: the wrapper that crossed the cap.
        let max = cx.limits.max_messages;
        let detail = format!(
            "wrapper at offset {offset}: inner messages past the frame's {max}th were read and checked, not kept ({over} of {})",
            m.record_count
        );
        cx.problem(None, "message_limit", detail, Some(pos as i128));
    }
    m
}

/// An inner message of a compressed wrapper, read from the decompressed buffer: its messages are
/// made to own their bytes (the buffer does not outlive the wrapper). Returns its CRC verdict.
fn legacy_inner<'a>(
    inner: &[u8],
    ipos: usize,
    iend: usize,
    ioff: i64,
    imagic: u8,
    cx: &mut Ctx<'_, 'a>,
    out: &mut Vec<Message<'a>>,
) -> bool {
    let mut tmp_cx = Ctx {
        limits: &mut *cx.limits,
        partial_ok: cx.partial_ok,
        base: cx.base,
        problems: Vec::new(),
        stats: Stats::default(),
        messages: Vec::new(),
        prior_records: cx.prior_records,
        prior_controls: cx.prior_controls,
        counted: 0,
        prior_entries: 0,
        kinds: Vec::new(),
        keep_messages: true,
    };
    let mut msgs: Vec<Message<'_>> = Vec::new();
    let e = legacy(
        inner,
        ipos,
        iend,
        ioff,
        imagic,
        &mut tmp_cx,
        1,
        Some(&mut msgs),
    );
    let (problems, stats) = (tmp_cx.problems, tmp_cx.stats);
    cx.counted += tmp_cx.counted;
    for p in problems {
        cx.push_problem(p);
    }
    for (k, v) in stats.counts {
        cx.stats.add(k, v);
    }
    out.extend(msgs.into_iter().map(|m| -> Message<'a> { m.into_owned() }));
    e.crc_ok
}

impl Message<'_> {
    /// The same message holding its own bytes.
    pub fn into_owned(self) -> Message<'static> {
        let own = |c: Option<Cow<'_, [u8]>>| c.map(|c| Cow::Owned(c.into_owned()));
        Message {
            value_size: self.value_size,
            offset: self.offset,
            key: own(self.key),
            value: own(self.value),
            timestamp_ms: self.timestamp_ms,
            headers: self
                .headers
                .map(|hs| hs.into_iter().map(|(k, v)| (k, own(v))).collect()),
            compression: self.compression,
            checksum_ok: self.checksum_ok,
            detail: self.detail,
        }
    }
}

/// CRC-32 (IEEE, zlib's) of a legacy message.
fn crc32(data: &[u8]) -> u32 {
    let mut h = flate2::Crc::new();
    h.update(data);
    h.sum()
}

/// Record sets built by hand, for the tests of this module and of `recordsets`.
#[cfg(test)]
pub(crate) mod test_sets {
    /// A v2 batch with one record, built by hand (field by field, Kafka's layout).
    pub(crate) fn batch(value: &[u8], attributes: i16) -> Vec<u8> {
        // Record: attributes 0, ts delta 0, offset delta 0, key null (-1 -> 0x01), value, 0 headers.
        let mut rec = vec![0u8, 0, 0, 1, (value.len() as u8) << 1];
        rec.extend_from_slice(value);
        rec.push(0);
        let mut records = vec![(rec.len() as u8) << 1];
        records.extend(rec);
        let mut after_crc = Vec::new();
        after_crc.extend(attributes.to_be_bytes());
        after_crc.extend(0i32.to_be_bytes()); // last offset delta
        after_crc.extend(1000i64.to_be_bytes()); // base timestamp
        after_crc.extend(1000i64.to_be_bytes()); // max timestamp
        after_crc.extend((-1i64).to_be_bytes()); // producer id
        after_crc.extend((-1i16).to_be_bytes());
        after_crc.extend((-1i32).to_be_bytes());
        after_crc.extend(1i32.to_be_bytes()); // records
        after_crc.extend(records);
        let crc = crc32c::crc32c(&after_crc);
        let mut b = Vec::new();
        b.extend(42i64.to_be_bytes());
        b.extend((after_crc.len() as i32 + 9).to_be_bytes()); // epoch + magic + crc + rest
        b.extend(0i32.to_be_bytes());
        b.push(2);
        b.extend(crc.to_be_bytes());
        b.extend(after_crc);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::test_sets::batch;
    use super::*;

    #[test]
    fn one_record_batch_by_hand() {
        let data = batch(b"hi", 0);
        let rs = decode_record_set(&data, false, &mut Limits::default());
        assert_eq!(rs.problems, vec![]);
        assert_eq!(rs.record_count, 1);
        let m = &rs.messages[0];
        assert_eq!(
            (m.offset, m.timestamp_ms, m.value.as_deref()),
            (42, Some(1000), Some(&b"hi"[..]))
        );
        assert_eq!(m.key, None);
        assert!(m.checksum_ok);
    }

    #[test]
    fn bad_crc_and_cut_set() {
        let mut data = batch(b"hi", 0);
        let last = data.len() - 2;
        data[last] ^= 0xff;
        let rs = decode_record_set(&data, false, &mut Limits::default());
        assert_eq!(rs.problems[0].kind, "bad_checksum");
        assert_eq!(rs.problems[0].offset, Some(17));
        let cut = &data[..data.len() - 1];
        let rs = decode_record_set(cut, true, &mut Limits::default());
        assert_eq!(rs.partial_trailing_bytes, Some(cut.len()));
        assert!(rs.problems.is_empty());
    }

    #[test]
    fn legacy_magic0_message_by_hand() {
        // offset 7, size, crc, magic 0, attributes 0, key null, value "v".
        let body = [0u8, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, b'v'];
        let crc = crc32(&body);
        let mut d = Vec::new();
        d.extend(7i64.to_be_bytes());
        d.extend((4 + body.len() as i32).to_be_bytes());
        d.extend(crc.to_be_bytes());
        d.extend(body);
        let rs = decode_record_set(&d, false, &mut Limits::default());
        assert_eq!(rs.problems, vec![]);
        assert_eq!(rs.messages[0].offset, 7);
        assert_eq!(rs.messages[0].value.as_deref(), Some(&b"v"[..]));
        // Magic 1 with the minimum length 14: the key length is read past the message's end
        // (from the next bytes of the set, as the reference does), then 8 bytes too many.
        let mut m1 = Vec::new();
        let body = [1u8, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        m1.extend(0i64.to_be_bytes());
        m1.extend(14i32.to_be_bytes());
        m1.extend(crc32(&body).to_be_bytes());
        m1.extend(body);
        m1.extend([0xff, 0xff, 0xff, 0xfb, 0xff, 0xff, 0xff, 0xf7]); // key -5, value -9
        let rs = decode_record_set(&m1, true, &mut Limits::default());
        assert_eq!(
            rs.problems[0].detail,
            "message at offset 0: -8 bytes after the value"
        );
        // A CRC-32 check against zlib's value for "123456789" (0xCBF43926).
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}

/// Where a record set sits in a decoded body and whose it is: the topic and partition the
/// messages table needs, read from the structs enclosing it as the reference's `_locate` does
/// (innermost first; only fields decoded before the record set count).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Located<'a> {
    /// The record set's bytes (after its length).
    pub start: usize,
    pub end: usize,
    /// The topic's name, or `None` when only its id is known (see `topic_id`).
    pub topic: Option<Cow<'a, str>>,
    /// The topic id (a UUID) when no name encloses the set: the run's topic names resolve it.
    pub topic_id: Option<[u8; 16]>,
    pub partition: Option<i64>,
}

/// Every record set of a decoded body, in decoding order, with its topic and partition.
pub fn locate_record_sets<'a>(fields: &[super::body::Field<'a>]) -> LocatedSets<'a> {
    let mut out = LocatedSets::new();
    let mut stack = Stack::new();
    walk_struct(fields, &mut stack, &mut out);
    out
}

/// A body's record sets: inline for one (a Produce request or Fetch response of one
/// partition, the most common), on the heap for more.
pub type LocatedSets<'a> = smallvec::SmallVec<[Located<'a>; 1]>;

/// The structs enclosing the node being walked, inline up to eight (record sets sit three
/// structs down; a deeper tree spills to the heap): the walk of a body allocates nothing else.
type Stack<'x, 'a> = smallvec::SmallVec<[&'x [super::body::Field<'a>]; 8]>;

/// Only a struct, an array or a record set can hold or be one: the rest (most fields and
/// elements) are passed over without entering them.
fn may_hold_records(n: &super::body::Node<'_>) -> bool {
    use super::body::Value;
    matches!(
        n.value,
        Value::Struct(_) | Value::Array(_) | Value::Records { .. }
    )
}

fn walk_struct<'x, 'a>(
    fields: &'x [super::body::Field<'a>],
    stack: &mut Stack<'x, 'a>,
    out: &mut LocatedSets<'a>,
) {
    for (i, f) in fields.iter().enumerate() {
        if may_hold_records(&f.node) {
            stack.push(&fields[..i]);
            walk_node(&f.node, stack, out);
            stack.pop();
        }
    }
}

fn walk_node<'x, 'a>(
    n: &'x super::body::Node<'a>,
    stack: &mut Stack<'x, 'a>,
    out: &mut LocatedSets<'a>,
) {
    use super::body::Value;
    match &n.value {
        Value::Struct(fields) => walk_struct(fields, stack, out),
        Value::Array(items) => {
            for it in items.iter().filter(|it| may_hold_records(it)) {
                walk_node(it, stack, out);
            }
        }
        Value::Records { .. } => out.push(locate(stack, n.start, n.end)),
        _ => {}
    }
}

fn locate<'a>(stack: &Stack<'_, 'a>, start: usize, end: usize) -> Located<'a> {
    use super::body::{Name, Value};
    let mut l = Located {
        start,
        end,
        topic: None,
        topic_id: None,
        partition: None,
    };
    let mut have_topic = false;
    for d in stack.iter().rev() {
        // One look at each field, from the last: the last field of each name is the one that
        // counts (as a search from the end for each name would find it).
        let mut found: [Option<&Value<'a>>; 6] = [None; 6];
        for f in d.iter().rev() {
            let Name::Field(name) = &f.name else { continue };
            let k = match *name {
                "index" => 0,
                "partition_index" => 1,
                "partition" => 2,
                "name" => 3,
                "topic" => 4,
                "topic_id" => 5,
                _ => continue,
            };
            if found[k].is_none() {
                found[k] = Some(&f.node.value);
            }
        }
        if l.partition.is_none() {
            // The first of the partition names (in this order) holding an integer.
            l.partition = found[..3].iter().find_map(|v| match v {
                Some(Value::Int(i)) => Some(*i),
                _ => None,
            });
        }
        if !have_topic {
            match (found[3], found[4], found[5]) {
                (Some(Value::Str(s)), _, _) | (_, Some(Value::Str(s)), _) => {
                    l.topic = Some(s.clone());
                    have_topic = true;
                }
                (_, _, Some(Value::Uuid(u))) => {
                    l.topic_id = Some(*u);
                    have_topic = true;
                }
                _ => {}
            }
        }
        if have_topic && l.partition.is_some() {
            break;
        }
    }
    l
}

#[cfg(test)]
mod locate_tests {
    use super::super::body::{Field, Name, Node, Value};
    use super::*;

    fn field<'a>(name: &'static str, value: Value<'a>) -> Field<'a> {
        Field {
            name: Name::Field(name),
            node: Node {
                value,
                start: 0,
                end: 0,
            },
        }
    }

    fn records(at: usize) -> Field<'static> {
        Field {
            name: Name::Field("records"),
            node: Node {
                value: Value::Records { size: 4 },
                start: at,
                end: at + 4,
            },
        }
    }

    fn elem(fields: Vec<Field<'static>>) -> Node<'static> {
        Node {
            value: Value::Struct(fields),
            start: 0,
            end: 0,
        }
    }

    #[test]
    fn each_set_takes_the_nearest_names_read_before_it() {
        let id = [7u8; 16];
        // topic_data: [ {name "orders", partition_data: [ {index 1, index 2, records@10},
        //   {partition_index "x" (not an integer), partition 5, records@20} ]},
        //   {topic_id, partitions: [ {partition_index 3, records@30} ]} ]
        // and a set with nothing around it but a tag and a name that is not text.
        let tree = vec![
            field(
                "topic_data",
                Value::Array(vec![
                    elem(vec![
                        field("name", Value::Str("orders".into())),
                        field(
                            "partition_data",
                            Value::Array(vec![
                                elem(vec![
                                    field("index", Value::Int(1)),
                                    field("index", Value::Int(2)),
                                    records(10),
                                ]),
                                elem(vec![
                                    field("partition_index", Value::Str("x".into())),
                                    field("partition", Value::Int(5)),
                                    records(20),
                                ]),
                            ]),
                        ),
                    ]),
                    elem(vec![
                        field("topic_id", Value::Uuid(id)),
                        field("name", Value::Int(9)),
                        field(
                            "partitions",
                            Value::Array(vec![elem(vec![
                                field("partition_index", Value::Int(3)),
                                records(30),
                                field("index", Value::Int(99)), // after the set: not its
                            ])]),
                        ),
                    ]),
                ]),
            ),
            Field {
                name: Name::Tag(0),
                node: Node {
                    value: Value::Int(4),
                    start: 0,
                    end: 0,
                },
            },
            records(40),
        ];
        let got: Vec<_> = locate_record_sets(&tree)
            .into_iter()
            .map(|l| {
                (
                    l.start,
                    l.topic.map(|t| t.into_owned()),
                    l.topic_id,
                    l.partition,
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (10, Some("orders".to_string()), None, Some(2)),
                (20, Some("orders".to_string()), None, Some(5)),
                (30, None, Some(id), Some(3)),
                (40, None, None, None),
            ]
        );
    }
}
