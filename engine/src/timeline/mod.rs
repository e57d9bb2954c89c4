//! The plain text timeline made from the engine's records, with no Python object per frame.
//!
//! `wiredump CAPTURE > file` used to turn every record into Python objects (frame, anomalies,
//! events) only to format one line from them: most of the run's time went on those objects.
//! Here the same stages run in Rust on the records as they leave the engine — `annotate` (reply
//! verdicts, stream-break marks) and `in_packet_order` ([`annotate`]), the `TimelinePrinter`'s
//! loop with its `Clock`, `plain_frame`/`plain_anomaly` and `badges` ([`text`], here) and
//! `CaptureNotes` ([`notes`]) — and the lines collect in a buffer the binding hands to Python in
//! big chunks to write.
//!
//! Python stays the reference and keeps the other timelines (colour, -V, -x, -Y, JSON, fields):
//! each piece here names its Python twin, and `tests/test_timeline_native_render.py` runs both
//! renderers on every capture and compares stdout and stderr byte for byte. What Python
//! declares (the anomaly kinds shown by default, the stream breaks, the protocol names, the
//! verdict words, the bounds) comes in through [`Declared`], never copied here.

pub mod annotate;
pub mod notes;
pub mod text;

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write;
use std::rc::Rc;

use annotate::{Annotator, Event, Item, Reorder, Verdict};
use notes::CaptureNotes;
use text::{
    escape_into, is_plain, is_printable_str, push_int, push_int_right, push_latency, push_right,
    Clock, TimeMode,
};

use crate::model::{ExchangeStatus, Frame, Role, Status};
use crate::pipeline::Record;

/// What the Python side declares, passed in once per run.
#[derive(Clone, Debug)]
pub struct Declared {
    /// Frameless anomaly kinds shown without -A (`anomalies.shown_by_default()`).
    pub shown: HashSet<String>,
    /// Frameless anomaly kinds that mark their stream's next frame (`source.STREAM_BREAKS`).
    pub stream_breaks: HashSet<String>,
    /// The anomaly kind summarised once per capture (`notes.SNAP`).
    pub snap: String,
    /// Every protocol as people write it, `Kafka/Pulsar/…` (`notes.protocol_titles()`).
    pub titles: String,
    /// The verdict badges (`source.UNANSWERED`, `source.NO_REPLY_YET`).
    pub unanswered: String,
    pub no_reply_yet: String,
    /// Items held at most while a request waits for its verdict (`source.MAX_WAIT`).
    pub max_wait: usize,
    /// Server ports named at most in the no-traffic note (`notes.MAX_PORTS`).
    pub max_ports: usize,
}

/// What the command line asks of this timeline.
#[derive(Clone, Debug)]
pub struct Settings {
    pub time: TimeMode,
    /// -A: every frameless anomaly is a line, the snap-length ones too.
    pub all_anomalies: bool,
    /// -c: stop after this many frames shown.
    pub count: Option<u64>,
    /// Lines kept to put a late one in its place (`REORDER_WINDOW`; 0 with -l).
    pub window: usize,
    /// The run has several captures: a `==> name <==` head for each, names on the notes.
    pub several: bool,
}

/// `PacketTimes` (source.py): the times of the most recent packets, in a bounded ring, to give
/// an anomaly (which names a packet) its time.
struct PacketTimes {
    ring: Vec<i64>,
    count: u64,
    first: Option<i64>,
}

/// Packets whose time is kept (`PacketTimes.WINDOW`): 8 MiB, and flat on any capture.
const TIMES_WINDOW: u64 = 1 << 20;

impl PacketTimes {
    fn new() -> PacketTimes {
        PacketTimes {
            ring: Vec::new(),
            count: 0,
            first: None,
        }
    }

    fn append(&mut self, ts_us: i64) {
        if self.first.is_none() {
            self.first = Some(ts_us);
        }
        let i = (self.count % TIMES_WINDOW) as usize;
        if i == self.ring.len() {
            self.ring.push(ts_us); // grows with the capture up to the window, never past it
        } else {
            self.ring[i] = ts_us;
        }
        self.count += 1;
    }

    /// A record read: the numbers skipped before it take its time (as the Python hook does).
    fn record(&mut self, number: u64, ts_us: i64) {
        while self.count + 1 < number {
            self.append(ts_us);
        }
        self.append(ts_us);
    }

    fn get(&self, packet: u64) -> Option<i64> {
        let low = self.count.saturating_sub(TIMES_WINDOW);
        (packet >= 1 && packet > low && packet <= self.count)
            .then(|| self.ring[((packet - 1) % TIMES_WINDOW) as usize])
    }

    fn reset(&mut self) {
        self.count = 0;
        self.first = None;
    }
}

/// The plain timeline of a run (one or several captures): feed it each capture's records and
/// the times of the packets read, take the text it made.
pub struct Timeline {
    decl: Declared,
    settings: Settings,
    annotate: Annotator,
    order: Reorder,
    clock: Clock,
    notes: CaptureNotes,
    times: PacketTimes,
    /// The first event of the current capture reached the printer (`started`).
    started: bool,
    shown: u64,
    /// `-c` is reached: nothing more is read or printed.
    stopped: bool,
    /// Lines made and not taken yet, each ending with a newline.
    out: String,
    /// End-of-capture notes for stderr (`TimelinePrinter.said`).
    pub said: Vec<String>,
    /// `name: capture is truncated: …` for each truncated capture.
    pub truncated: Vec<String>,
    /// The name of the capture being read (`run.info.name`).
    current: String,
    released: Vec<Item>,
    ordered: Vec<Item>,
    /// A frame's time, made again for each line.
    time: String,
    /// The heads of the lines of the connections seen last.
    heads: Heads,
}

impl Timeline {
    pub fn new(decl: Declared, settings: Settings) -> Timeline {
        let breaks = decl.stream_breaks.clone();
        Timeline {
            annotate: Annotator::new(breaks, decl.max_wait),
            order: Reorder::new(settings.window),
            clock: Clock::new(settings.time),
            notes: CaptureNotes::new(!settings.all_anomalies, decl.max_ports),
            times: PacketTimes::new(),
            started: false,
            shown: 0,
            stopped: settings.count == Some(0),
            out: String::new(),
            said: Vec::new(),
            truncated: Vec::new(),
            current: String::new(),
            released: Vec::new(),
            ordered: Vec::new(),
            time: String::new(),
            heads: Heads::default(),
            decl,
            settings,
        }
    }

    /// `-c` is reached: stop reading.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The text made so far (whole lines).
    pub fn text(&self) -> &str {
        &self.out
    }

    /// Takes the text made so far.
    pub fn take_text(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// Forgets the text made so far (handed out by [`Timeline::text`]), keeping its buffer.
    pub fn clear_text(&mut self) {
        self.out.clear();
    }

    /// The capture whose records come next is called `name` (the `==> name <==` head).
    pub fn capture(&mut self, name: &str) {
        if self.current != name {
            self.current = name.to_string();
        }
    }

    /// The records the engine read (number, time), before the records they produced.
    pub fn packets(&mut self, times: &[(u64, i64)]) {
        for &(number, ts) in times {
            self.times.record(number, ts);
        }
    }

    /// One record of the current capture.
    pub fn record(&mut self, rec: Record) {
        if self.stopped {
            return;
        }
        let mut released = std::mem::take(&mut self.released);
        match rec {
            Record::Frame(f) => {
                // The frame is read here and let go: the items keep its line's text.
                let f = f.borrow();
                self.annotate
                    .frame(&f, FrameLine::new(&f, &mut self.heads), &mut released);
                for a in &f.anomalies {
                    let packet = a.packet;
                    self.annotate
                        .push(Event::FrameAnomaly { packet }, &mut released);
                }
            }
            Record::Anomaly(a) => self.annotate.push(Event::Anomaly(a), &mut released),
            Record::Exchange(e) => {
                let settles = matches!(
                    e.status,
                    ExchangeStatus::Unanswered | ExchangeStatus::NoResponseExpected
                );
                match e.request_packet {
                    Some(packet) if settles => {
                        let key = (e.stream, packet, e.correlation_id, e.type_);
                        self.annotate.exchange(key, e.status, &mut released);
                    }
                    _ => self.annotate.push(Event::Exchange, &mut released),
                }
            }
            Record::Connection(c) => self.annotate.push(
                Event::Connection {
                    server_port: c.server_port,
                },
                &mut released,
            ),
            Record::CaptureEnd(e) => {
                self.annotate.push(Event::CaptureEnd(e), &mut released);
            }
        }
        self.pass(&mut released);
        self.released = released;
    }

    /// The end of the run: what the stages still hold is printed.
    pub fn finish(&mut self) {
        let mut released = std::mem::take(&mut self.released);
        self.annotate.drain(&mut released);
        self.pass(&mut released);
        let mut ordered = std::mem::take(&mut self.ordered);
        self.order.drain(&mut ordered);
        self.print_all(&mut ordered);
        self.ordered = ordered;
        self.released = released;
    }

    /// Items out of `annotate` through the reorder window to the printer.
    fn pass(&mut self, released: &mut Vec<Item>) {
        let mut ordered = std::mem::take(&mut self.ordered);
        for item in released.drain(..) {
            self.order.push(item, &mut ordered);
            self.print_all(&mut ordered);
        }
        self.ordered = ordered;
    }

    fn print_all(&mut self, ordered: &mut Vec<Item>) {
        for item in ordered.drain(..) {
            if !self.stopped {
                self.print(item);
            }
        }
    }

    /// `TimelinePrinter.run`'s loop body for one item.
    fn print(&mut self, item: Item) {
        // notes.feed: a snap-length line is summarised at the capture's end.
        match &item.ev {
            Event::Frame(_) => self.notes.frame(),
            // Its line is replaced by the summary (a guard with an effect: it counts it).
            Event::Anomaly(a) if a.kind == self.decl.snap && self.notes.snap(a) => return,
            Event::Connection { server_port } => self.notes.connection(*server_port),
            _ => {}
        }
        if !self.started {
            self.clock.start(self.times.first);
            self.started = true;
            if self.settings.several {
                // The capture's name, not escaped: the line's guard escapes it (`Out.line`).
                let start = self.out.len();
                let _ = write!(self.out, "==> {} <==", self.current);
                self.end_line(start);
            }
        }
        match item.ev {
            Event::Frame(line) => {
                let mut time = std::mem::take(&mut self.time);
                time.clear();
                self.clock.format(&mut time, Some(line.ts_us), true);
                let reply = match item.reply.get() {
                    Verdict::Unanswered => Some(self.decl.unanswered.as_str()),
                    Verdict::NoReplyYet => Some(self.decl.no_reply_yet.as_str()),
                    Verdict::None | Verdict::Pending => None,
                };
                let start = self.out.len();
                let after = item.after.as_deref();
                line.write(&mut self.out, &time, reply, after);
                if line.printable(reply, after) {
                    self.out.push('\n');
                } else {
                    self.end_line(start);
                }
                self.time = time;
                self.shown += 1;
                if self.settings.count.is_some_and(|c| self.shown >= c) {
                    self.stopped = true; // stop reading at once, as tshark -c does
                }
            }
            Event::Anomaly(a) => {
                if self.settings.all_anomalies || self.decl.shown.contains(a.kind.as_ref()) {
                    // `plain_anomaly` (render.py).
                    let mut time = String::new();
                    self.clock
                        .format(&mut time, self.times.get(a.packet), false);
                    let start = self.out.len();
                    let line = &mut self.out;
                    push_int_right(line, a.packet, 6);
                    line.push(' ');
                    push_right(line, &time, 10);
                    line.push(' ');
                    let place = a.stream.map(|s| format!("{s:>3}")).unwrap_or_default();
                    let _ = write!(line, "{place:>3} ! {}", a.kind);
                    if let Some(p) = a.protocol {
                        let _ = write!(line, " ({p})");
                    }
                    line.push_str(": ");
                    escape_into(line, &a.detail);
                    self.end_line(start);
                }
            }
            Event::CaptureEnd(e) => {
                self.started = false;
                let name = self.settings.several.then_some(e.name.as_str());
                let said = self
                    .notes
                    .end(e.packets, name, &self.decl.titles, &self.decl.snap);
                self.said.extend(said);
                if let Some(t) = e.truncated.as_deref().filter(|t| !t.is_empty()) {
                    self.truncated
                        .push(format!("{}: capture is truncated: {t}", e.name));
                }
                self.times.reset();
            }
            Event::FrameAnomaly { .. } | Event::Exchange | Event::Connection { .. } => {}
        }
    }

    /// Ends the line written to the text from `start` as `Out.line` writes a plain line: as
    /// given, unless it still holds a character a terminal would act on (a capture's name in
    /// its head): then escaped whole.
    fn end_line(&mut self, start: usize) {
        if !is_printable_str(&self.out[start..]) {
            let line = self.out.split_off(start);
            escape_into(&mut self.out, &line);
        }
        self.out.push('\n');
    }
}

/// A frame's line as far as the frame alone says it (`plain_frame` with `badges`, render.py),
/// made when the frame leaves the engine: the items `annotate` and the reorder window hold then
/// keep this text, not the frame with its decoded fields. The time, the verdict and the stream
/// break are added when the line is printed ([`FrameLine::write`]).
#[derive(Debug)]
pub struct FrameLine {
    pub packet: u64,
    pub ts_us: i64,
    /// ` stream client → server protocol type…peer`, then the badges the frame itself has
    /// (joined), then `  summary` (escaped).
    text: String,
    badges_at: usize,
    summary_at: usize,
    /// The pieces of `text` written unescaped (addresses, protocol, kinds) are printable; the
    /// rest is escaped or this module's own text, so the printed line needs no second look
    /// unless a piece it is printed with (the verdict, the stream break) is not printable.
    printable: bool,
}

/// The start of a frame's line up to its type (` stream near → far protocol `), the same for
/// every frame of a connection's direction: made once and copied.
#[derive(Debug)]
struct Head {
    stream: u64,
    role: Role,
    src: Rc<str>,
    src_port: u16,
    dst: Rc<str>,
    dst_port: u16,
    protocol: &'static str,
    text: String,
    /// The addresses and the protocol (written unescaped) are printable.
    printable: bool,
}

impl Head {
    fn new(f: &Frame) -> Head {
        let mut text = String::with_capacity(64);
        text.push(' ');
        push_int_right(&mut text, f.stream, 3);
        text.push(' ');
        let (near, far) = match f.role {
            Role::Client => ((&f.src, f.src_port), (&f.dst, f.dst_port)),
            Role::Server => ((&f.dst, f.dst_port), (&f.src, f.src_port)),
        };
        push_endpoint(&mut text, near.0, near.1);
        text.push_str(if f.role == Role::Client {
            " → "
        } else {
            " ← "
        });
        push_endpoint(&mut text, far.0, far.1);
        text.push(' ');
        text.push_str(f.protocol);
        for _ in f.protocol.chars().count()..7 {
            text.push(' '); // `{:<7}`
        }
        text.push(' ');
        Head {
            stream: f.stream,
            role: f.role,
            src: f.src.clone(),
            src_port: f.src_port,
            dst: f.dst.clone(),
            dst_port: f.dst_port,
            protocol: f.protocol,
            text,
            printable: is_printable_str(&f.src)
                && is_printable_str(&f.dst)
                && is_printable_str(f.protocol),
        }
    }

    /// Made from these very values. The addresses are the same text: the same allocation
    /// (the frames of a connection share it, and the head holds it, so its memory cannot have
    /// been given to another address), else equal text (a stream number may be another
    /// connection's in the next capture).
    fn is_of(&self, f: &Frame) -> bool {
        let same = |a: &Rc<str>, b: &Rc<str>| Rc::ptr_eq(a, b) || **a == **b;
        self.stream == f.stream
            && self.role == f.role
            && self.src_port == f.src_port
            && self.dst_port == f.dst_port
            && (std::ptr::eq(self.protocol, f.protocol) || self.protocol == f.protocol)
            && same(&self.src, &f.src)
            && same(&self.dst, &f.dst)
    }
}

/// Heads of the directions seen last, one slot per (stream, role) modulo [`HEAD_SLOTS`]:
/// bounded whatever the number of connections, and a connection's frames mostly follow each
/// other in a slot of their own.
#[derive(Debug, Default)]
struct Heads {
    slots: Vec<Option<Head>>,
    /// The last type name from the code (not from the wire) found to need no escape: the
    /// same name (same address and length: static text never changes) is written unchecked.
    plain_type: Option<&'static str>,
}

const HEAD_SLOTS: usize = 64;

impl Heads {
    fn of(&mut self, f: &Frame) -> &Head {
        if self.slots.is_empty() {
            self.slots.resize_with(HEAD_SLOTS, || None);
        }
        let role = usize::from(f.role == Role::Server);
        let i = ((f.stream as usize).wrapping_mul(2) + role) % HEAD_SLOTS;
        let slot = &mut self.slots[i];
        if !slot.as_ref().is_some_and(|h| h.is_of(f)) {
            *slot = Some(Head::new(f));
        }
        slot.as_ref().expect("just made")
    }
}

impl FrameLine {
    fn new(f: &Frame, heads: &mut Heads) -> FrameLine {
        let head = heads.of(f);
        // Lines are held in the reorder window and freed in another order than they were made:
        // a size rounded up to 256 bytes puts nearly every line in one allocator size class,
        // so the allocator hands a freed line's memory straight to the next line.
        let mut out =
            String::with_capacity((head.text.len() + 64 + f.summary.len()).next_multiple_of(256));
        out.push_str(&head.text);
        let head_printable = head.printable;
        match &f.type_ {
            Cow::Borrowed(t) if heads.plain_type.is_some_and(|p| std::ptr::eq(p, *t)) => {
                out.push_str(t);
            }
            Cow::Borrowed(t) => {
                escape_into(&mut out, t);
                if is_plain(t) {
                    heads.plain_type = Some(t);
                }
            }
            Cow::Owned(t) => escape_into(&mut out, t),
        }
        if let Some(v) = f.version {
            out.push_str(" v");
            push_int(&mut out, v);
        }
        if let Some(id) = f.correlation_id {
            out.push_str(" id=");
            push_int(&mut out, id);
        }
        if let Some(peer) = f.peer_packet {
            match f.latency_us {
                Some(us) => {
                    out.push_str(" ← #");
                    push_int(&mut out, peer);
                    out.push(' ');
                    push_latency(&mut out, us);
                }
                None => {
                    out.push_str(" → #");
                    push_int(&mut out, peer);
                }
            }
        }
        let badges_at = out.len();
        // `badges` up to the verdict: the status, the frame's own anomaly kinds, the error when
        // the summary does not say it.
        let status = f.status.as_str();
        let mut kinds: Vec<&str> = Vec::new();
        if f.status != Status::Ok {
            kinds.push(status);
        }
        for a in &f.anomalies {
            let kind = a.kind.as_ref();
            if !kinds.contains(&kind)
                && kind != status
                && !(kind == "truncated" && f.status == Status::Truncated)
            {
                kinds.push(kind);
            }
        }
        for (i, k) in kinds.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(k);
        }
        if let Some(e) = f.error.as_deref().filter(|e| !e.is_empty()) {
            if !f.summary.contains(e) {
                if !kinds.is_empty() {
                    out.push_str(", ");
                }
                out.push_str("error ");
                escape_into(&mut out, e);
            }
        }
        let summary_at = out.len();
        // The addresses, the protocol (the head's) and the kinds are not escaped here (the
        // line's guard escapes them, as `Out.line` does); the type, the error and the summary
        // are, and the rest is ASCII digits and this function's own text. A look at those pieces
        // now spares looking at the whole line when it is printed (its arrows are not ASCII).
        let printable = head_printable && kinds.iter().all(|k| is_printable_str(k));
        if !f.summary.is_empty() {
            out.push_str("  ");
            escape_into(&mut out, &f.summary);
        }
        FrameLine {
            packet: f.packet,
            ts_us: f.ts_us,
            text: out,
            badges_at,
            summary_at,
            printable,
        }
    }

    /// Whether the line [`FrameLine::write`] makes with these pieces is printable: escaped text
    /// is, and so is the time (the [`Clock`]'s digits, signs and separators only; a test checks
    /// every mode), so only the other pieces need a look.
    pub fn printable(&self, reply: Option<&str>, after: Option<&str>) -> bool {
        self.printable && reply.is_none_or(is_printable_str) && after.is_none_or(is_printable_str)
    }

    /// The whole line (no newline): packet, `time`, the frame's text, its badges with the
    /// verdict and the stream break, the summary.
    pub fn write(&self, out: &mut String, time: &str, reply: Option<&str>, after: Option<&str>) {
        push_int_right(out, self.packet, 6);
        out.push(' ');
        push_right(out, time, 10);
        out.push_str(&self.text[..self.badges_at]);
        let own = &self.text[self.badges_at..self.summary_at];
        if !own.is_empty() || reply.is_some() || after.is_some() {
            out.push_str(" [");
            out.push_str(own);
            let mut first = own.is_empty();
            for (word, prefix) in [(reply, ""), (after, "after ")] {
                if let Some(w) = word {
                    if !first {
                        out.push_str(", ");
                    }
                    out.push_str(prefix);
                    out.push_str(w);
                    first = false;
                }
            }
            out.push(']');
        }
        out.push_str(&self.text[self.summary_at..]);
    }
}

/// `endpoint` (render.py): `10.0.0.1:9092`, an IPv6 address in brackets.
fn push_endpoint(out: &mut String, host: &str, port: u16) {
    // A byte loop: an address is a few bytes, too short for `contains`'s memchr to pay.
    if host.bytes().any(|b| b == b':') {
        out.push('[');
        out.push_str(host);
        out.push(']');
    } else {
        out.push_str(host);
    }
    out.push(':');
    push_int(out, port);
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::rc::Rc;

    use super::*;
    use crate::model::{Anomaly, Exchange, Kind};
    use crate::pipeline::CaptureEnd;

    fn declared() -> Declared {
        Declared {
            shown: ["gap".to_string(), "resync".to_string()].into(),
            stream_breaks: ["gap".to_string(), "resync".to_string()].into(),
            snap: "truncated_packet".into(),
            titles: "Kafka/Pulsar".into(),
            unanswered: "unanswered".into(),
            no_reply_yet: "no reply yet".into(),
            max_wait: 10_000,
            max_ports: 8,
        }
    }

    fn settings(window: usize) -> Settings {
        Settings {
            time: TimeMode::Relative,
            all_anomalies: false,
            count: None,
            window,
            several: false,
        }
    }

    /// A Kafka-like request on stream 0 at `packet` (its first packet too), 1 ms per packet.
    fn request(packet: u64, cid: i64) -> Record {
        let mut f = Frame::new("kafka", "Produce", 0);
        f.kind = Kind::Request;
        f.version = Some(9);
        f.correlation_id = Some(cid);
        f.packet = packet;
        f.first_packet = packet;
        f.ts_us = 1_000_000 + packet as i64 * 1000;
        f.src = Rc::from("10.0.0.1");
        f.src_port = 40000;
        f.dst = Rc::from("::1");
        f.dst_port = 9092;
        f.summary = "topic \u{1b}x".into();
        Record::Frame(f.shared())
    }

    fn exchange(packet: u64, cid: i64, status: ExchangeStatus) -> Record {
        Record::Exchange(Box::new(Exchange {
            stream: 0,
            protocol: "kafka",
            type_: Cow::Borrowed("Produce"),
            correlation_id: Some(cid),
            status,
            request_packet: Some(packet),
            response_packet: None,
            request_ts_us: None,
            response_ts_us: None,
            latency_us: None,
            error_code: None,
        }))
    }

    fn end() -> Record {
        Record::CaptureEnd(Box::new(CaptureEnd {
            name: "x.pcap".into(),
            packets: 9,
            truncated: None,
            skipped_unknown_link: 0,
        }))
    }

    fn run(window: usize, records: Vec<Record>) -> (String, Timeline) {
        let mut tl = Timeline::new(declared(), settings(window));
        tl.capture("x.pcap");
        tl.packets(
            &(1..=9)
                .map(|n| (n, 1_000_000 + n as i64 * 1000))
                .collect::<Vec<_>>(),
        );
        for r in records {
            tl.record(r);
        }
        tl.finish();
        (tl.take_text(), tl)
    }

    #[test]
    fn verdicts_before_and_after_the_frame() {
        // Packet 4: its exchange comes later (unanswered). Packet 5: its exchange came first
        // (no response expected: no badge). Packet 6 waits behind nothing (no exchange until the
        // capture ends: no verdict).
        let (text, tl) = run(
            256,
            vec![
                exchange(5, 2, ExchangeStatus::NoResponseExpected),
                request(4, 1),
                request(5, 2),
                request(6, 3),
                exchange(4, 1, ExchangeStatus::Unanswered),
                end(),
            ],
        );
        let lines: Vec<&str> = text.lines().collect();
        // Times relative to packet 1 (1.001 s); the summary's ESC escaped; `::1` in brackets;
        // the server is on the right of a client's arrow.
        assert_eq!(
            lines,
            [
                "     4   0.003000   0 10.0.0.1:40000 → [::1]:9092 kafka   Produce v9 id=1 [unanswered]  topic \\x1bx",
                "     5   0.004000   0 10.0.0.1:40000 → [::1]:9092 kafka   Produce v9 id=2  topic \\x1bx",
                "     6   0.005000   0 10.0.0.1:40000 → [::1]:9092 kafka   Produce v9 id=3  topic \\x1bx",
            ]
        );
        assert!(tl.said.is_empty() && tl.truncated.is_empty());
    }

    #[test]
    fn type_names_are_checked_unless_the_same_static_text_was_plain() {
        // A static name found plain is written unchecked the next time; another static name
        // (a tab in it), or an owned one with the same text as the plain one, is checked.
        static TABBED: &str = "Pro\tduce";
        let mut heads = Heads::default();
        let line = |heads: &mut Heads, t: Cow<'static, str>| {
            let mut f = Frame::new("kafka", t, 0);
            f.src = Rc::from("10.0.0.1");
            f.dst = Rc::from("10.0.0.2");
            let l = FrameLine::new(&f, heads);
            l.text[l.text.find("kafka").expect("protocol") + 8..l.badges_at].to_string()
        };
        assert_eq!(line(&mut heads, Cow::Borrowed("Produce")), "Produce");
        assert_eq!(heads.plain_type, Some("Produce"));
        assert_eq!(line(&mut heads, Cow::Borrowed("Produce")), "Produce");
        assert_eq!(line(&mut heads, Cow::Borrowed(TABBED)), "Pro\\tduce");
        assert_eq!(
            heads.plain_type,
            Some("Produce"),
            "a name that needs escaping is not kept"
        );
        assert_eq!(
            line(&mut heads, Cow::Owned("Pro\u{1b}duce".into())),
            "Pro\\x1bduce"
        );
        assert_eq!(line(&mut heads, Cow::Owned("Produce".into())), "Produce");
    }

    #[test]
    fn a_line_with_an_unescaped_piece_a_terminal_acts_on_is_escaped_whole() {
        // An address name is written as it is (the line's guard escapes it): a name holding ESC
        // makes the whole line escaped, the summary's escape too (its backslash doubled), as
        // `Out.line` does; the same frame with a plain name keeps its line as made.
        let named = |name: &str| {
            let Record::Frame(f) = request(5, 2) else {
                unreachable!()
            };
            f.borrow_mut().src = Rc::from(name);
            Record::Frame(f)
        };
        let records = |name: &str| {
            vec![
                exchange(5, 2, ExchangeStatus::NoResponseExpected),
                named(name),
                end(),
            ]
        };
        let (text, _) = run(256, records("evil\u{1b}[2Jhost"));
        assert_eq!(
            text,
            "     5   0.004000   0 evil\\x1b[2Jhost:40000 → [::1]:9092 kafka   Produce v9 id=2  topic \\\\x1bx\n"
        );
        let (text, _) = run(256, records("broker-1"));
        assert_eq!(
            text,
            "     5   0.004000   0 broker-1:40000 → [::1]:9092 kafka   Produce v9 id=2  topic \\x1bx\n"
        );
    }

    #[test]
    fn a_line_head_is_made_again_for_another_connection_in_its_slot() {
        // Stream 0 from 10.0.0.1, then stream 0 of another address (as in the next capture),
        // then stream 64 (the same slot of the heads), then stream 0 again: each line shows its
        // own frame's endpoints.
        let with = |packet: u64, cid: i64, stream: u64, src: &str| {
            let Record::Frame(f) = request(packet, cid) else {
                unreachable!()
            };
            {
                let mut b = f.borrow_mut();
                b.stream = stream;
                b.src = Rc::from(src);
            }
            Record::Frame(f)
        };
        let mut records = vec![];
        for (p, stream, src) in [
            (4, 0, "10.0.0.1"),
            (5, 0, "10.0.0.9"),
            (6, 64, "10.0.0.9"),
            (7, 0, "10.0.0.1"),
        ] {
            records.push(exchange(p, p as i64, ExchangeStatus::NoResponseExpected));
            records.push(with(p, p as i64, stream, src));
        }
        records.push(end());
        let (text, _) = run(256, records);
        let heads: Vec<&str> = text
            .lines()
            .filter_map(|l| l[17..].split(" kafka").next())
            .collect();
        assert_eq!(
            heads,
            [
                "   0 10.0.0.1:40000 → [::1]:9092",
                "   0 10.0.0.9:40000 → [::1]:9092",
                "  64 10.0.0.9:40000 → [::1]:9092",
                "   0 10.0.0.1:40000 → [::1]:9092",
            ]
        );
    }

    #[test]
    fn window_puts_a_late_anomaly_in_its_place_and_marks_the_next_frame() {
        // A gap at packet 3 found after the frame of packet 4: printed before it (window), and
        // the frame after it on its stream gets `after gap` only when it starts at or past 3.
        let mut gap = Anomaly::new("gap", "lost 10 bytes");
        gap.packet = 3;
        gap.stream = Some(0);
        let (text, _) = run(
            256,
            vec![
                request(4, 1),
                Record::Anomaly(Box::new(gap)),
                request(6, 2),
                exchange(4, 1, ExchangeStatus::NoResponseExpected),
                exchange(6, 2, ExchangeStatus::NoResponseExpected),
                end(),
            ],
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0], "     3   0.002000   0 ! gap: lost 10 bytes");
        assert!(lines[1].starts_with("     4 ") && lines[1].ends_with("id=1  topic \\x1bx"));
        assert!(lines[2].starts_with("     6 ") && lines[2].contains(" [after gap]  "));
        // Without the window (-l) the anomaly stays where it was found.
        let mut gap = Anomaly::new("gap", "lost 10 bytes");
        gap.packet = 3;
        gap.stream = Some(0);
        let (text, _) = run(
            0,
            vec![request(4, 1), Record::Anomaly(Box::new(gap)), end()],
        );
        let firsts: Vec<&str> = text.lines().map(|l| &l[..6]).collect();
        assert_eq!(firsts, ["     4", "     3"]);
    }

    #[test]
    fn a_verdict_given_after_the_frame_left_the_hold_still_shows() {
        // max_wait 1: the waiting request leaves the hold as soon as another item queues; its
        // verdict, shared with the waiting list, is still set by the exchange before the
        // window prints it (as the Python `Item` object is).
        let mut d = declared();
        d.max_wait = 1;
        let mut tl = Timeline::new(d, settings(256));
        tl.capture("x.pcap");
        tl.packets(&[(1, 1_000_000)]);
        tl.record(request(4, 1));
        tl.record(request(5, 2));
        tl.record(exchange(4, 1, ExchangeStatus::Unanswered));
        tl.record(exchange(5, 2, ExchangeStatus::NoResponseExpected));
        tl.record(end());
        let text = tl.take_text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("id=1 [unanswered]"), "{lines:?}");
        assert!(lines[1].ends_with("id=2  topic \\x1bx"), "{lines:?}");
    }

    #[test]
    fn count_notes_and_several_captures() {
        let mut s = settings(0);
        s.count = Some(1);
        s.several = true;
        let mut tl = Timeline::new(declared(), s);
        tl.capture("a\u{7}.pcap");
        tl.packets(&[(1, 5)]);
        tl.record(exchange(4, 1, ExchangeStatus::NoResponseExpected));
        tl.record(request(4, 1));
        assert!(tl.stopped());
        tl.record(request(5, 2));
        tl.finish();
        let text = tl.take_text();
        // The head escaped whole (`Out.line`'s guard), one frame, then nothing.
        assert!(text.starts_with("==> a\\a.pcap <==\n     4 "), "{text:?}");
        assert_eq!(text.lines().count(), 2);
        // A capture without frames: the note, its name first when there are several.
        let mut s = settings(256);
        s.several = true;
        let mut tl = Timeline::new(declared(), s);
        tl.capture("web.pcap");
        tl.record(Record::CaptureEnd(Box::new(CaptureEnd {
            name: "web.pcap".into(),
            packets: 1,
            truncated: Some("cut".into()),
            skipped_unknown_link: 0,
        })));
        assert_eq!(
            tl.said,
            ["web.pcap: no Kafka/Pulsar frames: no TCP connection in 1 packet"]
        );
        assert_eq!(tl.truncated, ["web.pcap: capture is truncated: cut"]);
        assert_eq!(tl.take_text(), "==> web.pcap <==\n");
    }
}
