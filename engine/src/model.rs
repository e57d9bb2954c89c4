//! The records that flow from decoders to sinks (the Rust twin of `wiredump/dissect/model.py`).
//!
//! Decoders fill in what they know of a frame (type, ids, fields, messages, anomalies); the
//! framing engine fills in where it sits in the capture (packets, stream, time, length); the
//! correlator fills in the peer and latency. A frame is shared as a [`FrameRef`]
//! (`Rc<RefCell<Frame>>`) because, as in the Python reference, three owners touch it before it
//! leaves: the session that made it (a response may complete its request's messages), the
//! correlator that links it, and the output queue that holds a request until its answer is known.
//! One capture is dissected on one thread, so `Rc` is enough.

use std::any::Any;
use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

/// Who sent the bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    Client,
    Server,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
        }
    }

    /// 0 for the client, 1 for the server: the index of per-direction state (`[T; 2]`).
    pub fn index(self) -> usize {
        match self {
            Role::Client => 0,
            Role::Server => 1,
        }
    }

    /// The other side.
    pub fn other(self) -> Role {
        match self {
            Role::Client => Role::Server,
            Role::Server => Role::Client,
        }
    }
}

/// A frame's place in an exchange (the frames table's `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Request,
    Response,
    Event,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Response => "response",
            Kind::Event => "event",
        }
    }
}

/// A frame's status, as in the frames table of the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Ok,
    Malformed,
    BadChecksum,
    Truncated,
    UnknownType,
    UnsupportedVersion,
    Undecodable,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Malformed => "malformed",
            Status::BadChecksum => "bad_checksum",
            Status::Truncated => "truncated",
            Status::UnknownType => "unknown_type",
            Status::UnsupportedVersion => "unsupported_version",
            Status::Undecodable => "undecodable",
        }
    }
}

/// A message's direction (the messages table's `direction`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Produce,
    Deliver,
}

impl Direction {
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::Produce => "produce",
            Direction::Deliver => "deliver",
        }
    }
}

/// Byte range `[start, end)` of a field's encoding inside its frame (framing included), so that
/// `-x --mark` highlights exactly the field's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span {
            start: start as u32,
            end: end as u32,
        }
    }

    /// The same range seen from `by` bytes further out (a body's spans inside its frame).
    pub fn shifted(self, by: usize) -> Span {
        Span {
            start: self.start + by as u32,
            end: self.end + by as u32,
        }
    }
}

/// One decoded value: what Python's JSON-able `Frame.fields` holds (bytes are rendered as hex by
/// the sinks). `UInt` keeps unsigned 64-bit protocol values (Pulsar ledger ids) exact.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    Map(Fields),
}

/// One named field with the byte span of its encoding (None for values computed, not read).
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: Cow<'static, str>,
    pub value: Value,
    pub span: Option<Span>,
}

/// An ordered map of fields (the order the wire carries them, as Python dicts keep it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Fields(pub Vec<Field>);

impl Fields {
    pub fn new() -> Fields {
        Fields(Vec::new())
    }

    /// Empty, with room for `n` fields: a decoder that knows how many it sets allocates once,
    /// exactly (a record batch's 20 fields grown by doubling held 32 slots; held frames keep
    /// thousands of them).
    pub fn with_capacity(n: usize) -> Fields {
        Fields(Vec::with_capacity(n))
    }

    /// Adds or replaces `name` (a Python `d[name] = value`: replacing keeps the first position).
    pub fn set(&mut self, name: impl Into<Cow<'static, str>>, value: Value) -> &mut Self {
        self.set_span(name, value, None)
    }

    /// As [`Fields::set`], with the span of the value's bytes.
    pub fn set_span(
        &mut self,
        name: impl Into<Cow<'static, str>>,
        value: Value,
        span: Option<Span>,
    ) -> &mut Self {
        let name = name.into();
        // Decoders set a dozen or more fields one after the other, mostly new names, so the
        // search fails on every field: compare length and first and last bytes before the
        // bytes themselves (most names differ there; a whole compare per field was ~7% of the
        // export).
        let key = name.as_bytes();
        let same = |f: &Field| {
            let b = f.name.as_bytes();
            b.len() == key.len() && b.first() == key.first() && b.last() == key.last() && b == key
        };
        if let Some(f) = self.0.iter_mut().find(|f| same(f)) {
            f.value = value;
            f.span = span;
        } else {
            self.0.push(Field { name, value, span });
        }
        self
    }

    /// Appends a field the caller knows is not there yet (a decoder listing a fixed set of
    /// distinct names): [`Fields::set`] without its search for the name, which for a record
    /// batch's 21 fields was 210 comparisons (set_span was ~9% of the export's engine time).
    pub fn push_new(&mut self, name: &'static str, value: Value) -> &mut Self {
        debug_assert!(self.get(name).is_none(), "{name} set twice");
        self.0.push(Field {
            name: Cow::Borrowed(name),
            value,
            span: None,
        });
        self
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|f| f.name == name).map(|f| &f.value)
    }

    pub fn get_mut(&mut self, name: &str) -> Option<&mut Value> {
        self.0
            .iter_mut()
            .find(|f| f.name == name)
            .map(|f| &mut f.value)
    }

    pub fn remove(&mut self, name: &str) -> Option<Value> {
        let i = self.0.iter().position(|f| f.name == name)?;
        Some(self.0.remove(i).value)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }
}

/// One problem found; `offset` is the byte offset inside the frame when there is one.
#[derive(Clone, Debug, PartialEq)]
pub struct Anomaly {
    pub kind: Cow<'static, str>,
    pub detail: String,
    pub offset: Option<u64>,
    pub packet: u64,
    pub stream: Option<u64>,
    pub protocol: Option<&'static str>,
    /// Capture time of `packet` (µs since the epoch), filled in by the engine.
    pub ts_us: Option<i64>,
}

impl Anomaly {
    pub fn new(kind: impl Into<Cow<'static, str>>, detail: impl Into<String>) -> Anomaly {
        Anomaly {
            kind: kind.into(),
            detail: detail.into(),
            offset: None,
            packet: 0,
            stream: None,
            protocol: None,
            ts_us: None,
        }
    }

    pub fn at(mut self, offset: Option<u64>) -> Anomaly {
        self.offset = offset;
        self
    }
}

/// One application message carried by a frame (Kafka record, Pulsar message, event…).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    pub direction: Option<Direction>,
    pub value_size: i64,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub offset: Option<i64>,
    pub message_id: Option<String>,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub timestamp_ms: Option<i64>,
    pub headers: Option<Vec<(String, Option<Vec<u8>>)>>,
    pub compression: Option<Cow<'static, str>>,
    pub checksum_ok: Option<bool>,
    /// The message's other fields. Shared (`Rc`) because every record of a Kafka batch has the
    /// same ones (its batch's producer state): a Fetch response of 32k records held 32k copies
    /// (~14 MB at the engine's peak on the benchmark capture).
    pub detail: Option<Rc<Fields>>,
    /// A produced record's place among the records its request carries for its partition (0
    /// for the first); `offset` stays null until the broker's answer gives the base (Kafka).
    pub offset_delta: Option<i64>,
}

/// One topic (and partition) a frame names, with what the frame says of it there (the twin of
/// Python's `TopicPartition`).
///
/// Why typed: the per-topic results of a frame (a Produce response's error and base offset per
/// partition, a Fetch response's high watermark…) sit at different paths in each protocol's
/// decode; the `partitions` table gives them one shape. Filled by the protocol's session (its own
/// `partitions` module says where it finds them); what a protocol does not have stays None.
/// Integers are kept as the decode holds them, so the Python objects equal the reference's: the
/// offsets are `i128` because TANK's sequence numbers are u64 (a Consume "from the tail" asks for
/// 2^64-1); the table makes a value that does not fit its column null, as the reference does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TopicPartition {
    pub topic: Option<String>,
    pub partition: Option<i64>,
    pub error_code: Option<i64>,
    pub error: Option<String>,
    /// The offset the entry names (a Produce response's base offset, a Fetch request's fetch
    /// offset, a committed or listed offset; else the first offset of the records it carries).
    pub offset: Option<i128>,
    pub high_watermark: Option<i128>,
    pub log_start_offset: Option<i128>,
    /// Records (messages, events) the entry carries.
    pub records: Option<i64>,
}

impl TopicPartition {
    /// A row naming only its topic.
    pub fn topic(topic: impl Into<String>) -> TopicPartition {
        TopicPartition {
            topic: Some(topic.into()),
            ..TopicPartition::default()
        }
    }
}

/// One protocol data unit. `context` is private to the protocol (e.g. the request a response was
/// decoded with) and never exported.
#[derive(Debug)]
pub struct Frame {
    pub protocol: &'static str,
    pub type_: Cow<'static, str>,
    pub type_code: i64,
    pub kind: Kind,
    pub version: Option<i32>,
    pub correlation_id: Option<i64>,
    pub status: Status,
    pub error_code: Option<i32>,
    pub error: Option<Cow<'static, str>>,
    pub summary: String,
    pub fields: Fields,
    /// The `detail` JSON text of the `body` field, made in place of its tree when only the
    /// tables read the frame ([`crate::protocol::SessionOptions::detail_text`]): `fields`
    /// then holds `body` as a null placeholder at its place, which the frames row fills with
    /// this text ([`crate::detail_json::write_frame_json`]). None otherwise.
    pub body_text: Option<String>,
    pub messages: Vec<Message>,
    pub anomalies: Vec<Anomaly>,
    pub context: Option<Box<dyn Any>>,
    /// The topics/partitions the frame names (see [`TopicPartition`]); None: it names none.
    pub partitions: Option<Vec<TopicPartition>>,
    // Filled in by the framing engine.
    pub role: Role,
    pub packet: u64,
    pub first_packet: u64,
    pub ts_us: i64,
    pub stream: u64,
    pub src: Rc<str>,
    pub src_port: u16,
    pub dst: Rc<str>,
    pub dst_port: u16,
    pub length: u64,
    pub data: Option<Vec<u8>>,
    // Filled in by the correlator.
    pub peer_packet: Option<u64>,
    pub latency_us: Option<i64>,
    pub awaiting: bool,
    pub exchange_done: bool,
    /// Set when the frame leaves for the sinks: after that nothing may change it.
    pub released: bool,
    /// Messages the frame carried past `Limits::max_messages`: read, checked and counted, not
    /// kept in `messages` (the `message_limit` anomaly says so). Totals count
    /// `messages.len() + messages_counted`, so the cap bounds memory without changing counts.
    pub messages_counted: u64,
    /// Per anomaly kind [`Frame::flag`] was called with: times called, and the index in
    /// `anomalies` of the `anomaly_limit` anomaly counting those past [`MAX_ANOMALIES_PER_KIND`].
    /// A few kinds per frame at most, so a vector (no allocation for frames without anomalies).
    pub flagged: Vec<(Cow<'static, str>, u64, Option<usize>)>,
}

/// Anomalies of one kind [`Frame::flag`] lists per frame. Hostile bytes can make a decoder find a
/// problem every byte or two (a Consume chunk of tiny malformed bundles: one per two bytes of a
/// frame of up to 256 MiB); each is an object and a row, so past this the rest of that kind are
/// counted in one `anomaly_limit` anomaly instead. Per kind, so that a flood of one never hides
/// another. Twin of `wiredump.dissect.model.MAX_ANOMALIES_PER_KIND`.
pub const MAX_ANOMALIES_PER_KIND: u64 = 64;
/// Anomaly kind: how many more anomalies of a kind the frame had past [`MAX_ANOMALIES_PER_KIND`].
pub const ANOMALY_LIMIT: &str = "anomaly_limit";

/// A frame shared by its session, the correlator and the output queue (see the module doc).
pub type FrameRef = Rc<RefCell<Frame>>;

/// The frames one decode call gives (`Session::decode`): nearly always one, held inline so that
/// a frame costs no vector of its own.
pub type Frames = smallvec::SmallVec<[FrameRef; 1]>;

impl Frame {
    pub fn new(
        protocol: &'static str,
        type_: impl Into<Cow<'static, str>>,
        type_code: i64,
    ) -> Frame {
        Frame::with_ends(
            protocol,
            type_.into(),
            type_code,
            Rc::from(""),
            Rc::from(""),
        )
    }

    fn with_ends(
        protocol: &'static str,
        type_: Cow<'static, str>,
        type_code: i64,
        src: Rc<str>,
        dst: Rc<str>,
    ) -> Frame {
        Frame {
            protocol,
            type_,
            type_code,
            kind: Kind::Event,
            version: None,
            correlation_id: None,
            status: Status::Ok,
            error_code: None,
            error: None,
            summary: String::new(),
            fields: Fields::new(),
            messages: Vec::new(),
            anomalies: Vec::new(),
            context: None,
            partitions: None,
            role: Role::Client,
            packet: 0,
            first_packet: 0,
            ts_us: 0,
            stream: 0,
            src,
            src_port: 0,
            dst,
            dst_port: 0,
            length: 0,
            data: None,
            peer_packet: None,
            latency_us: None,
            awaiting: false,
            exchange_done: false,
            released: false,
            messages_counted: 0,
            flagged: Vec::new(),
            body_text: None,
        }
    }

    /// As [`Frame::new`], with `addr` (a clone of an address the caller holds) as both
    /// endpoints: no allocation for them. For frames whose endpoints the framing engine sets
    /// anyway, or that are never shown (an observer's).
    pub fn new_at(
        protocol: &'static str,
        type_: impl Into<Cow<'static, str>>,
        type_code: i64,
        addr: &Rc<str>,
    ) -> Frame {
        Frame::with_ends(
            protocol,
            type_.into(),
            type_code,
            addr.clone(),
            addr.clone(),
        )
    }

    /// The frame, shared.
    pub fn shared(self) -> FrameRef {
        Rc::new(RefCell::new(self))
    }

    /// Marks the frame with a status and records why; the first non-ok status wins.
    ///
    /// At most [`MAX_ANOMALIES_PER_KIND`] anomalies of a kind are listed; the rest are counted in
    /// one `anomaly_limit` anomaly (at the offset of the first one left out), so that what a frame
    /// holds is bounded whatever its bytes say. The status is set either way.
    pub fn flag(
        &mut self,
        status: Status,
        kind: impl Into<Cow<'static, str>>,
        detail: impl Into<String>,
        offset: Option<u64>,
    ) {
        if self.status == Status::Ok {
            self.status = status;
        }
        self.note(kind, detail, offset);
    }

    /// Records an anomaly that does not change the frame's status (our own limits: a frame is
    /// not malformed because it exceeds them), under the same per-kind cap as [`Frame::flag`].
    pub fn note(
        &mut self,
        kind: impl Into<Cow<'static, str>>,
        detail: impl Into<String>,
        offset: Option<u64>,
    ) {
        self.add(Anomaly::new(kind, detail).at(offset));
    }

    /// Records an anomaly built elsewhere (an `internal_error` carries its protocol) under the
    /// per-kind cap of [`Frame::flag`]; every anomaly a frame carries goes through here, so no
    /// decoder can make a frame hold more than [`MAX_ANOMALIES_PER_KIND`] of a kind.
    pub fn add(&mut self, anomaly: Anomaly) {
        let i = self.count_kind(&anomaly.kind, || anomaly.kind.clone(), 1);
        if self.flagged[i].1 <= MAX_ANOMALIES_PER_KIND {
            self.anomalies.push(anomaly);
            return;
        }
        self.over(i, anomaly.offset);
    }

    /// `count` more anomalies of `kind` whose details were never kept ([`PendingAnomalies`]
    /// dropped them past the cap), counted as [`Frame::note`] would count them. Only for a kind
    /// the frame already lists [`MAX_ANOMALIES_PER_KIND`] of; `offset` is the first one's.
    pub fn note_more(&mut self, kind: Cow<'static, str>, count: u64, offset: Option<u64>) {
        let i = self.count_kind(&kind.clone(), || kind, count);
        self.over(i, offset);
    }

    /// The index of `kind` in `flagged` (`owned`: the kind to keep when it is new), counted
    /// `count` more times.
    fn count_kind(
        &mut self,
        kind: &str,
        owned: impl FnOnce() -> Cow<'static, str>,
        count: u64,
    ) -> usize {
        let i = match self.flagged.iter().position(|(k, _, _)| k == kind) {
            Some(i) => i,
            None => {
                self.flagged.push((owned(), 0, None));
                self.flagged.len() - 1
            }
        };
        self.flagged[i].1 += count;
        i
    }

    fn over(&mut self, i: usize, offset: Option<u64>) {
        let entry = &mut self.flagged[i];
        let text = format!(
            "{} more {} anomalies in this frame past the first {MAX_ANOMALIES_PER_KIND} \
             (counted, not listed)",
            entry.1 - MAX_ANOMALIES_PER_KIND,
            entry.0
        );
        match entry.2.and_then(|at| self.anomalies.get_mut(at)) {
            Some(limit) if limit.kind == ANOMALY_LIMIT => limit.detail = text,
            _ => {
                entry.2 = Some(self.anomalies.len());
                self.anomalies
                    .push(Anomaly::new(ANOMALY_LIMIT, text).at(offset));
            }
        }
    }

    /// The protocol's private context, if it is of type `T`.
    pub fn context_ref<T: 'static>(&self) -> Option<&T> {
        self.context.as_ref()?.downcast_ref::<T>()
    }

    pub fn context_mut<T: 'static>(&mut self) -> Option<&mut T> {
        self.context.as_mut()?.downcast_mut::<T>()
    }
}

/// One problem a decoder found before it puts it on its frame: (kind, detail, offset).
pub type Problem = (Cow<'static, str>, String, Option<u64>);

/// Anomalies a decoder finds before it puts them on their frame (TANK reports a frame's problems
/// after its own), bounded as [`Frame::add`] bounds them: the first [`MAX_ANOMALIES_PER_KIND`] of
/// a kind with their details, the rest only counted, in one entry where the first of them was
/// found. [`PendingAnomalies::put_on`] then gives the frame exactly what flagging at once would
/// have, in the same order, without holding one problem per bad byte (the twin of Python's
/// `model.PendingAnomalies`).
#[derive(Debug, Default)]
pub struct PendingAnomalies {
    /// Listed problems, and per kind past the cap one `(kind, "", offset of the first, count)`.
    items: Vec<(Problem, u64)>,
    /// Per kind: problems seen, and the index in `items` of its entry past the cap.
    seen: Vec<(Cow<'static, str>, u64, Option<usize>)>,
}

impl PendingAnomalies {
    pub fn push(&mut self, p: Problem) {
        let i = match self.seen.iter().position(|(k, _, _)| *k == p.0) {
            Some(i) => i,
            None => {
                self.seen.push((p.0.clone(), 0, None));
                self.seen.len() - 1
            }
        };
        let entry = &mut self.seen[i];
        entry.1 += 1;
        if entry.1 <= MAX_ANOMALIES_PER_KIND {
            self.items.push((p, 0));
            return;
        }
        match entry.2 {
            Some(at) => self.items[at].1 += 1,
            None => {
                entry.2 = Some(self.items.len());
                self.items.push(((p.0, String::new(), p.2), 1));
            }
        }
    }

    pub fn append(&mut self, problems: &mut Vec<Problem>) {
        for p in problems.drain(..) {
            self.push(p);
        }
    }

    /// Flags `frame` with each problem (`status_of(kind)`: the status, None for a note).
    pub fn put_on(self, frame: &mut Frame, status_of: impl Fn(&str) -> Option<Status>) {
        for ((kind, detail, offset), more) in self.items {
            if more != 0 {
                frame.note_more(kind, more, offset);
                continue;
            }
            match status_of(&kind) {
                Some(status) => frame.flag(status, kind, detail, offset),
                None => frame.note(kind, detail, offset),
            }
        }
    }
}

#[cfg(test)]
mod pending_tests {
    use super::*;

    const KINDS: [&str; 4] = [
        "malformed",
        "bad_checksum",
        "message_limit",
        "trailing_bytes",
    ];

    fn status_of(kind: &str) -> Option<Status> {
        match kind {
            "malformed" => Some(Status::Malformed),
            "bad_checksum" => Some(Status::BadChecksum),
            _ => None,
        }
    }

    fn rows(f: &Frame) -> Vec<(String, String, Option<u64>)> {
        f.anomalies
            .iter()
            .map(|a| (a.kind.to_string(), a.detail.clone(), a.offset))
            .collect()
    }

    /// Putting pending problems on a frame gives what flagging each at once gives (the
    /// reference), whatever the frame held before, holding at most 65 entries of a kind.
    #[test]
    fn pending_anomalies_give_what_flagging_at_once_gives() {
        let mut seed = 17u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        for _ in 0..300 {
            let before = [0, 1, 5, 70][next(4) as usize];
            let count = [0, 3, 64, 65, 66, 130, 400][next(7) as usize];
            let spread = next(4) + 1;
            let mut direct = Frame::new("x", "t", 0);
            let mut pended = Frame::new("x", "t", 0);
            for i in 0..before {
                let (k, off) = (KINDS[next(4) as usize], next(1000));
                for f in [&mut direct, &mut pended] {
                    f.flag(Status::Malformed, k, format!("before {i}"), Some(off));
                }
            }
            let mut pending = PendingAnomalies::default();
            for i in 0..count {
                let k = KINDS[next(spread) as usize];
                let off = (next(2) == 0).then(|| next(1000));
                match status_of(k) {
                    Some(s) => direct.flag(s, k, format!("p {i}"), off),
                    None => direct.note(k, format!("p {i}"), off),
                }
                pending.push((Cow::Borrowed(k), format!("p {i}"), off));
            }
            assert!(pending.items.len() <= 4 * 65);
            pending.put_on(&mut pended, status_of);
            assert_eq!(rows(&pended), rows(&direct));
            assert_eq!(pended.status, direct.status);
            for f in [&mut direct, &mut pended] {
                f.note("malformed", "after", Some(1));
            }
            assert_eq!(rows(&pended), rows(&direct));
        }
    }
}

/// An exchange's status (the exchanges table's `status`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExchangeStatus {
    Answered,
    Unanswered,
    NoRequest,
    NoResponseExpected,
}

impl ExchangeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExchangeStatus::Answered => "answered",
            ExchangeStatus::Unanswered => "unanswered",
            ExchangeStatus::NoRequest => "no_request",
            ExchangeStatus::NoResponseExpected => "no_response_expected",
        }
    }
}

/// One request with its response (or the lack of one).
#[derive(Clone, Debug, PartialEq)]
pub struct Exchange {
    pub stream: u64,
    pub protocol: &'static str,
    pub type_: Cow<'static, str>,
    pub correlation_id: Option<i64>,
    pub status: ExchangeStatus,
    pub request_packet: Option<u64>,
    pub response_packet: Option<u64>,
    pub request_ts_us: Option<i64>,
    pub response_ts_us: Option<i64>,
    pub latency_us: Option<i64>,
    pub error_code: Option<i32>,
}

/// One TCP connection as the connections table shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionSummary {
    pub stream: u64,
    pub client: Rc<str>,
    pub client_port: u16,
    pub server: Rc<str>,
    pub server_port: u16,
    pub protocol: Option<&'static str>,
    pub packets: u64,
    pub bytes_client: u64,
    pub bytes_server: u64,
    pub frames: u64,
    pub gaps: u64,
    pub retransmissions: u64,
    pub first_ts_us: i64,
    pub last_ts_us: i64,
    /// `open`, `closed`, `reset`, `midstream`.
    pub state: &'static str,
}
