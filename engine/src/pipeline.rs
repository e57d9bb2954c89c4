//! One capture, from stream events to ordered records (the port of `_Capture`,
//! `dissect_native` and `finish_capture` of `wiredump/dissect/pipeline.py`, event for event).
//!
//! [`Dissection`] drives the Rust stream loop ([`StreamEngine`]) and, for each stream event, does
//! what the Python listener does: protocol choice (ports, or held first bytes scored by
//! [`crate::detection`]), replay of the held bytes into the chosen protocol's
//! [`ConnectionFramer`], and output in packet order as far as the hold bounds allow. A request
//! waiting for its response holds back the frames behind it (so that it leaves carrying its
//! peer's packet), but only up to `hold_frames` frames, `hold_bytes` bytes or `hold_us` of
//! capture time. Connection rows leave in stream order once the reassembler drops a connection,
//! so memory is bounded per capture, not per connection count. One `Dissection` owns all the
//! capture's run state: registry, limits, run state shared by sessions, per-connection maps.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::rc::Rc;

use crate::capture::CaptureReader;
use crate::codecs::Limits;
use crate::correlation::{Correlator, PendingBudget};
use crate::detection::{ConnPorts, Decision, Detector, Held, Item, EARLY_TRIES, HOLD_TOTAL};
use crate::framing::{ConnectionFramer, Discard, Output};
use crate::model::{Anomaly, ConnectionSummary, Exchange, FrameRef, Role};
use crate::packet::Addr;
use crate::printable::str_repr;
use crate::protocol::{ConnCtx, Protocol, RunState, SessionOptions, MIN_CONFIDENCE};
use crate::stream::{Event as StreamEvent, StreamEngine};
use crate::tcp::{Retention, TcpEvent};

/// Closed undecided connections waiting for their port to be learned, at most.
pub const MAX_PARKED: usize = 4096;
/// What a held frame's message counts for in `hold_bytes`, beyond its wire bytes.
pub const MESSAGE_HELD_SIZE: u64 = 256;
/// Anomalies kept waiting behind held frames at most; past that they go out of order.
pub const MAX_READY_HELD: usize = 65_536;
/// Records read per step of the stream loop.
const STEP_RECORDS: usize = 256;

/// The engine's limits (Python's `wiredump.dissect.limits.Limits`): the codec part every
/// session shares, and the engine's own bounds.
#[derive(Clone, Debug)]
pub struct EngineLimits {
    pub codec: Limits,
    pub max_stream_buffer: u64,
    pub max_connections: usize,
    /// pcapng interfaces kept per section (Python's `Limits.max_interfaces`).
    pub max_interfaces: usize,
    pub half_open_us: i64,
    pub closed_linger_us: i64,
    pub max_out_of_order: usize,
    pub max_pending_requests: usize,
    /// Outstanding requests over all connections of a capture (`correlation::PendingBudget`).
    pub max_pending_total: usize,
}

impl Default for EngineLimits {
    fn default() -> Self {
        EngineLimits {
            codec: Limits::default(),
            max_stream_buffer: 128 << 20,
            max_connections: 16_384,
            max_interfaces: crate::capture::MAX_INTERFACES,
            half_open_us: 60_000_000,
            closed_linger_us: 10_000_000,
            max_out_of_order: 8 << 20,
            max_pending_requests: 65536,
            max_pending_total: 65536,
        }
    }
}

/// The run options (Python's `pipeline.Options`, engine choice aside).
#[derive(Clone, Debug)]
pub struct Options {
    /// Port → protocol name, overriding ports and detection.
    pub decode_as: Vec<(u16, String)>,
    pub keep_bytes: bool,
    pub show_secrets: bool,
    pub messages: bool,
    /// Keep frames' field trees (see [`SessionOptions::detail`]).
    pub detail: bool,
    /// Keep messages' values (see [`SessionOptions::values`]).
    pub values: bool,
    pub hold_frames: usize,
    pub hold_bytes: u64,
    pub hold_us: i64,
    pub limits: EngineLimits,
    /// (k, n): decode only the connections whose stream is k modulo n.
    pub shard: Option<(u64, u64)>,
    /// With `shard`: observe the connections of other shares whose protocol shares run state
    /// (frame them to learn what they teach, [`Protocol::shares_run_state`]), so that this
    /// share decodes its own exactly as the whole capture would. Off: they are dropped like any
    /// connection the share does not own, and [`Dissection::run_state_consulted`] says whether
    /// that could have mattered (a speculative share, rerun with observers when it did).
    pub observe_others: bool,
    /// Dissect each packet as soon as it is read (`-l`): a pipe fed live (`tcpdump -U -w - |
    /// wiredump - -l`) must not wait for [`STEP_RECORDS`] packets before the first line.
    pub live: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            decode_as: Vec::new(),
            keep_bytes: false,
            show_secrets: false,
            messages: true,
            detail: true,
            values: true,
            hold_frames: 4096,
            hold_bytes: 8 << 20,
            hold_us: 120_000_000,
            limits: EngineLimits::default(),
            shard: None,
            observe_others: true,
            live: false,
        }
    }
}

/// The end of one capture (Python's `pipeline.CaptureEnd`).
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureEnd {
    pub name: String,
    pub packets: u64,
    pub truncated: Option<String>,
    pub skipped_unknown_link: u64,
}

/// One record leaving the engine, in output order. A frame's own anomalies follow it (the
/// binding yields them right after the frame, as Python's `release` does).
///
/// Every variant is a pointer: a record is moved through several stages (the capture's
/// queue, the run's, the sinks), and with the rows inline each move copied 160 bytes (a
/// `memcpy` call per stage and record, ~4% of the plain timeline's time).
#[derive(Debug)]
pub enum Record {
    Frame(FrameRef),
    Anomaly(Box<Anomaly>),
    Exchange(Box<Exchange>),
    Connection(Box<ConnectionSummary>),
    CaptureEnd(Box<CaptureEnd>),
}

/// Boxed as the records they become ([`Record`]), so a queue's entry is two words.
enum Ready {
    Anomaly(Box<Anomaly>),
    Exchange(Box<Exchange>),
}

/// The output queues the framers write to (a part of the capture of its own, so that a framer
/// owned by a connection can write to them).
#[derive(Default)]
struct Queues {
    ready: VecDeque<Ready>,
    held: VecDeque<FrameRef>,
    /// Signed: a frame's size is taken again when it leaves and may have grown (a response
    /// completing its request's messages), as in Python.
    held_bytes: i64,
    /// Frames made by a replay of held bytes, merged in packet order afterwards.
    replayed: Option<Vec<FrameRef>>,
}

fn held_size(f: &FrameRef) -> i64 {
    let f = f.borrow();
    (f.length + f.messages.len() as u64 * MESSAGE_HELD_SIZE) as i64
}

impl Output for Queues {
    fn frame(&mut self, frame: FrameRef) {
        self.held_bytes += held_size(&frame);
        match &mut self.replayed {
            Some(r) => r.push(frame),
            None => self.held.push_back(frame),
        }
    }

    fn anomaly(&mut self, anomaly: Anomaly) {
        self.ready.push_back(Ready::Anomaly(Box::new(anomaly)));
    }

    fn exchange(&mut self, exchange: Exchange) {
        self.ready.push_back(Ready::Exchange(Box::new(exchange)));
    }
}

/// The first packet of each connection whose bytes detection holds, with its minimum at hand
/// (the release barrier is asked for on every packet; Python takes `min` of a dict).
#[derive(Default)]
struct Waiting {
    by_stream: HashMap<u64, u64, ahash::RandomState>,
    ordered: BTreeSet<(u64, u64)>,
}

impl Waiting {
    fn insert(&mut self, stream: u64, packet: u64) {
        if let Some(old) = self.by_stream.insert(stream, packet) {
            self.ordered.remove(&(old, stream));
        }
        self.ordered.insert((packet, stream));
    }

    fn remove(&mut self, stream: u64) {
        if let Some(old) = self.by_stream.remove(&stream) {
            self.ordered.remove(&(old, stream));
        }
    }

    fn min(&self) -> Option<u64> {
        self.ordered.first().map(|&(p, _)| p)
    }

    fn clear(&mut self) {
        self.by_stream.clear();
        self.ordered.clear();
    }
}

/// Open connections whose first bytes detection holds, in the order they began (Python's dict
/// order), with the earliest first time at hand: expiry is asked for on every new connection, and
/// scans them all only when one is old enough.
#[derive(Default)]
struct Holding {
    seq: u64,
    by_stream: HashMap<u64, (u64, i64), ahash::RandomState>,
    in_order: BTreeMap<u64, u64>,
    by_time: BTreeSet<(i64, u64)>,
}

impl Holding {
    fn push(&mut self, stream: u64, first_ts_us: i64) {
        self.seq += 1;
        self.by_stream.insert(stream, (self.seq, first_ts_us));
        self.in_order.insert(self.seq, stream);
        self.by_time.insert((first_ts_us, stream));
    }

    fn remove(&mut self, stream: u64) {
        if let Some((seq, ts)) = self.by_stream.remove(&stream) {
            self.in_order.remove(&seq);
            self.by_time.remove(&(ts, stream));
        }
    }

    fn is_empty(&self) -> bool {
        self.by_stream.is_empty()
    }

    /// The streams that began before `limit`, in the order they began.
    fn older_than(&self, limit: i64) -> Vec<u64> {
        if self.by_time.first().is_none_or(|&(ts, _)| ts >= limit) {
            return Vec::new();
        }
        self.in_order
            .values()
            .copied()
            .filter(|s| self.by_stream[s].1 < limit)
            .collect()
    }
}

/// What the listener keeps of a connection (`conn.user` of the Python pipeline).
enum User {
    /// No delivery yet (`None`).
    Unset,
    Held(Box<Held>),
    /// The connection's framer; `observe`: another worker's, its output is dropped.
    Framer(Box<ConnectionFramer>, bool),
    /// Undecoded, another worker's, or done with (`False`).
    Off,
}

struct Conn {
    stream: u64,
    client: Rc<str>,
    client_port: u16,
    server: Rc<str>,
    server_port: u16,
    first_ts_us: i64,
    saw_syn: bool,
    last_ts_us: i64,
    released: bool,
    last_packet: u64,
    protocol: Option<&'static str>,
    frames: u64,
    user: User,
    packets: u64,
    bytes_client: u64,
    bytes_server: u64,
    gaps: u64,
    retransmissions: u64,
    state: &'static str,
}

impl Conn {
    fn ports(&self) -> ConnPorts {
        ConnPorts {
            client_port: self.client_port,
            server_port: self.server_port,
            saw_syn: self.saw_syn,
        }
    }

    fn summary(&self) -> ConnectionSummary {
        ConnectionSummary {
            stream: self.stream,
            client: self.client.clone(),
            client_port: self.client_port,
            server: self.server.clone(),
            server_port: self.server_port,
            protocol: self.protocol,
            packets: self.packets,
            bytes_client: self.bytes_client,
            bytes_server: self.bytes_server,
            frames: self.frames,
            gaps: self.gaps,
            retransmissions: self.retransmissions,
            first_ts_us: self.first_ts_us,
            last_ts_us: self.last_ts_us,
            state: self.state,
        }
    }
}

/// The per-capture listener (Python's `_Capture`).
pub struct Capture {
    pub name: Rc<str>,
    opts: Options,
    limits: Rc<RefCell<Limits>>,
    session_opts: Rc<SessionOptions>,
    observe_opts: Rc<SessionOptions>,
    pub detector: Detector,
    /// The connections not released yet (and those parked), by stream; boxed, as the
    /// reassembler's (see `tcp::Reassembler::live`).
    conns: HashMap<u64, Box<Conn>, ahash::RandomState>,
    /// Closed connections no protocol was recognised on, waiting for their port to be learned.
    parked: Vec<(u64, Decision)>,
    /// Stream → first packet of each connection whose bytes detection holds.
    waiting: Waiting,
    /// Open connections whose first bytes detection holds, in the order they began.
    holding: Holding,
    q: Queues,
    pub now_us: i64,
    run_state: Rc<RefCell<RunState>>,
    /// Requests waiting for their answer over all connections (`Limits.max_pending_total`).
    pending: Rc<PendingBudget>,
    rows: HashMap<u64, (u64, Option<ConnectionSummary>), ahash::RandomState>,
    row_heap: BinaryHeap<Reverse<u64>>,
    next_row: u64,
    rows_out: VecDeque<(u64, ConnectionSummary)>,
    late: HashSet<u64, ahash::RandomState>,
    /// Role swaps decided while handling the current event, for the reassembler.
    swaps: Vec<u64>,
    /// Connections another worker decodes whose bytes nobody here reads, for the reassembler.
    mutes: Vec<u64>,
    /// The text of the addresses seen lately: a capture of many short connections between a
    /// few hosts would otherwise format and allocate both addresses of every connection again.
    addrs: AddrNames,
}

/// Addresses as the connections table and frames show them, shared between connections (at
/// most [`AddrNames::MAX`] kept; past that the map starts again).
#[derive(Default)]
struct AddrNames(HashMap<Addr, Rc<str>, ahash::RandomState>);

impl AddrNames {
    const MAX: usize = 4096;

    fn get(&mut self, a: Addr) -> Rc<str> {
        if let Some(s) = self.0.get(&a) {
            return s.clone();
        }
        if self.0.len() >= Self::MAX {
            self.0.clear();
        }
        let s: Rc<str> = Rc::from(a.to_string());
        self.0.insert(a, s.clone());
        s
    }
}

impl Capture {
    /// A listener for one capture; an error names an unknown protocol in decode-as.
    pub fn new(
        name: &str,
        opts: Options,
        protocols: Vec<Box<dyn Protocol>>,
    ) -> Result<Capture, String> {
        let mut decode_as = HashMap::new();
        for (port, proto) in &opts.decode_as {
            let Some(i) = protocols.iter().position(|p| p.name() == proto) else {
                let known: Vec<&str> = protocols.iter().map(|p| p.name()).collect();
                return Err(format!(
                    "unknown protocol {} in decode-as (known: {})",
                    str_repr(proto),
                    known.join(", ")
                ));
            };
            decode_as.insert(*port, i);
        }
        let mut codec = opts.limits.codec.clone();
        codec.decompressed_total = 0;
        let session_opts = SessionOptions {
            show_secrets: opts.show_secrets,
            messages: opts.messages,
            detail: opts.detail,
            values: opts.values,
            observe: false,
            detail_text: false,
        };
        let observe_opts = SessionOptions {
            observe: true,
            ..session_opts.clone()
        };
        let pending = PendingBudget::new(opts.limits.max_pending_total);
        Ok(Capture {
            name: Rc::from(name),
            limits: Rc::new(RefCell::new(codec)),
            session_opts: Rc::new(session_opts),
            observe_opts: Rc::new(observe_opts),
            opts,
            detector: Detector::new(protocols, decode_as),
            conns: HashMap::default(),
            parked: Vec::new(),
            waiting: Waiting::default(),
            holding: Holding::default(),
            q: Queues::default(),
            now_us: 0,
            run_state: Rc::new(RefCell::new(RunState::default())),
            pending,
            rows: HashMap::default(),
            row_heap: BinaryHeap::new(),
            next_row: 0,
            rows_out: VecDeque::new(),
            late: HashSet::default(),
            swaps: Vec::new(),
            mutes: Vec::new(),
            addrs: AddrNames::default(),
        })
    }

    /// Did a session's decoding read run state that another connection could have taught
    /// ([`Protocol::run_state_consulted`])? A share that did not observe the connections it
    /// does not own (`observe_others` off) decoded its own exactly as the whole capture would
    /// as long as this stays false: those connections reach the ones it owns through run state
    /// only (detection, stream numbers and budgets are decided before a connection is framed,
    /// and observers return nothing), bar the capture-wide budget of pending requests, which a
    /// share counts over the connections it follows (docs/spark.md).
    pub fn run_state_consulted(&self) -> bool {
        let rs = self.run_state.borrow();
        self.detector
            .protocols
            .iter()
            .any(|p| p.shares_run_state() && p.run_state_consulted(&rs))
    }

    pub fn owns(&self, stream: Option<u64>) -> bool {
        match (self.opts.shard, stream) {
            (None, _) => true,
            (Some((k, _)), None) => k == 0,
            (Some((k, n)), Some(s)) => s % n == k,
        }
    }

    fn conn(&mut self, stream: u64) -> &mut Conn {
        self.conns.get_mut(&stream).expect("a known connection")
    }

    // -- protocol choice ------------------------------------------------------------------

    /// A connection's first delivery: decide by its ports, or hold its bytes for detection.
    /// True when the roles were swapped.
    fn start(&mut self, stream: u64, packet: u64, ts_us: i64) -> bool {
        if !self.parked.is_empty() || !self.holding.is_empty() {
            self.expire(false);
        }
        let ports = self.conn(stream).ports();
        match self.detector.by_port(&ports) {
            None => {
                self.conn(stream).user = User::Held(Box::default());
                self.waiting.insert(stream, packet);
                // Its first delivery (this one) gives the hold its first time.
                self.holding.push(stream, ts_us);
                false
            }
            Some(d) => self.apply(stream, &d),
        }
    }

    fn apply(&mut self, stream: u64, decision: &Decision) -> bool {
        if decision.swap {
            let c = self.conn(stream);
            std::mem::swap(&mut c.client, &mut c.server);
            std::mem::swap(&mut c.client_port, &mut c.server_port);
            // Zero until released; a released connection (parked, then its port learned) keeps
            // its row here, and the reference's swap turns its byte counts too.
            std::mem::swap(&mut c.bytes_client, &mut c.bytes_server);
            self.swaps.push(stream);
        }
        let owns = self.owns(Some(stream));
        match decision.spec {
            Some(spec)
                if !owns
                    && self.opts.observe_others
                    && self.detector.protocols[spec].shares_run_state() =>
            {
                let f = self.framer(stream, spec, true);
                self.conn(stream).user = User::Framer(Box::new(f), true);
            }
            Some(spec) if owns => {
                let f = self.framer(stream, spec, false);
                let name = self.detector.protocols[spec].name();
                let c = self.conn(stream);
                c.user = User::Framer(Box::new(f), false);
                c.protocol = Some(name);
            }
            _ => {
                self.conn(stream).user = User::Off;
                if !owns {
                    // Off for good (nothing turns an `Off` connection back on): its bytes need
                    // not even be copied out of reassembly.
                    self.mutes.push(stream);
                }
            }
        }
        decision.swap
    }

    fn framer(&self, stream: u64, spec: usize, observe: bool) -> ConnectionFramer {
        let c = &self.conns[&stream];
        let proto = &self.detector.protocols[spec];
        let ctx = ConnCtx {
            capture: self.name.clone(),
            stream,
            client: c.client.clone(),
            client_port: c.client_port,
            server: c.server.clone(),
            server_port: c.server_port,
            correlator: Correlator::with_budget(
                stream,
                proto.name(),
                self.opts.limits.max_pending_requests,
                self.pending.clone(),
            )
            .observing(observe),
            limits: self.limits.clone(),
            options: if observe {
                self.observe_opts.clone()
            } else {
                self.session_opts.clone()
            },
            run_state: self.run_state.clone(),
            reports: Vec::new(),
        };
        let session = proto.new_session(&ctx);
        ConnectionFramer::new(
            proto.name(),
            proto.max_frame(),
            self.opts.limits.max_stream_buffer,
            session,
            ctx,
            self.opts.keep_bytes,
        )
    }

    /// Takes a connection's held bytes out of it (put back by the caller when still held).
    fn take_held(&mut self, stream: u64) -> Box<Held> {
        let c = self.conn(stream);
        match std::mem::replace(&mut c.user, User::Unset) {
            User::Held(h) => h,
            other => {
                c.user = other;
                panic!("take_held on a connection not held")
            }
        }
    }

    fn hold(&mut self, stream: u64, role: Role, data: &[u8], packet: u64, ts_us: i64) {
        let mut held = self.take_held(stream);
        if held.given_up {
            self.late(stream, held, role, data, packet, ts_us);
            return;
        }
        let turn = held.add(role, data, packet, ts_us);
        self.detector.held_total += data.len() as u64;
        if held.full() || self.detector.held_total > HOLD_TOTAL {
            self.decide(stream, held, true, false, true);
        } else if turn && held.tries < EARLY_TRIES {
            held.tries += 1;
            self.decide(stream, held, false, false, false);
        } else {
            self.conn(stream).user = User::Held(held);
        }
    }

    /// Chooses from the held bytes (or waits, when not `final_`), then replays them as they came
    /// (Python's `_decide`; `held` was taken out of the connection and goes back when still held).
    fn decide(
        &mut self,
        stream: u64,
        mut held: Box<Held>,
        final_: bool,
        closing: bool,
        window: bool,
    ) {
        let ports = self.conn(stream).ports();
        let Some(mut decision) = self.detector.by_bytes(&ports, &held, final_) else {
            self.conn(stream).user = User::Held(held);
            return;
        };
        for mut a in std::mem::take(&mut decision.errors) {
            a.packet = held.first_packet;
            a.stream = Some(stream);
            self.on_anomaly(a);
        }
        if decision.wait {
            self.conn(stream).user = User::Held(held);
            return;
        }
        if decision.spec.is_none() && window && !closing && self.detector.may_slide(&ports, &held) {
            let last = held.items.last().map_or(held.first_packet, |it| it.2);
            self.detector.windows += 1;
            self.detector.held_total -= held.slide(decision.best);
            // Frames of other connections from the first packet still held wait.
            let at = held.items.iter().map(|it| it.2).min().unwrap_or(last);
            self.waiting.insert(stream, at);
            self.conn(stream).user = User::Held(held);
            return;
        }
        self.holding.remove(stream);
        if let Some(seen) = held.best_seen {
            if decision.best.is_none_or(|b| seen.1 > b.1) {
                decision.best = Some(seen);
            }
        }
        let Some(spec) = decision.spec else {
            if closing
                && decision.best.is_some()
                && self.detector.held_total <= HOLD_TOTAL
                && self.parked.len() < MAX_PARKED
            {
                self.conn(stream).user = User::Held(held);
                self.parked.push((stream, decision));
            } else {
                self.waiting.remove(stream);
                self.detector.held_total -= held.give_up();
                self.undecoded(stream, &held, &decision);
                self.conn(stream).user = if closing { User::Off } else { User::Held(held) };
            }
            return;
        };
        self.detector.held_total -= held.size;
        self.waiting.remove(stream);
        if decision.swap {
            held.swap();
        }
        self.apply(stream, &decision);
        let is_framer = matches!(self.conn(stream).user, User::Framer(..));
        if is_framer && held.windows > 0 {
            let name = self.detector.protocols[spec].name();
            let w = held.windows;
            let mut a = Anomaly::new(
                "undecoded",
                format!(
                    "{} client and {} server bytes not decoded: sent before the window {name} was \
                     recognised on ({w} earlier window{} of this connection, seen mid-stream, held \
                     no frame start: the capture began inside a large frame)",
                    held.dropped[0],
                    held.dropped[1],
                    if w != 1 { "s" } else { "" }
                ),
            );
            a.packet = held.first_packet;
            a.stream = Some(stream);
            self.on_anomaly(a);
        }
        if is_framer {
            self.q.replayed = Some(Vec::new());
            let Capture { conns, q, .. } = self;
            let c = conns.get_mut(&stream).expect("a known connection");
            if let User::Framer(f, observe) = &mut c.user {
                let out: &mut dyn Output = if *observe { &mut Discard } else { q };
                for (role, item, packet, ts_us) in held.items.drain(..) {
                    match item {
                        Item::Gap(size) => f.gap(out, role, size, packet, ts_us),
                        Item::Data(d) => f.feed(out, role, &d, packet, ts_us),
                    }
                }
            }
            self.merge_replayed();
        }
        if decision.learned.is_some() && !self.parked.is_empty() {
            self.unpark();
        }
    }

    /// A delivery of a connection given up on: decoded if its port was learned since.
    fn late(
        &mut self,
        stream: u64,
        mut held: Box<Held>,
        mut role: Role,
        data: &[u8],
        packet: u64,
        ts_us: i64,
    ) {
        let ports = self.conn(stream).ports();
        let Some(decision) = self.detector.by_port(&ports) else {
            held.dropped[if role == Role::Client { 0 } else { 1 }] += data.len() as u64;
            self.conn(stream).user = User::Held(held);
            return;
        };
        if decision.swap {
            held.swap();
            role = role.other();
        }
        self.apply(stream, &decision);
        if matches!(self.conn(stream).user, User::Framer(..)) {
            let name = self.detector.protocols[decision.spec.expect("by port")].name();
            let mut a = Anomaly::new(
                "undecoded",
                format!(
                    "{} sent before the port was known to carry {name} (detected on another \
                     connection) were not decoded",
                    held.what()
                ),
            );
            a.packet = packet;
            a.stream = Some(stream);
            self.on_anomaly(a);
            self.feed(stream, role, data, packet, ts_us);
        }
    }

    fn feed(&mut self, stream: u64, role: Role, data: &[u8], packet: u64, ts_us: i64) {
        let Capture { conns, q, .. } = self;
        if let Some(Conn {
            user: User::Framer(f, observe),
            ..
        }) = conns.get_mut(&stream).map(|c| &mut **c)
        {
            let out: &mut dyn Output = if *observe { &mut Discard } else { q };
            f.feed(out, role, data, packet, ts_us);
        }
    }

    /// Closed connections whose port was just learned: decode what they held.
    fn unpark(&mut self) {
        let mut still = Vec::new();
        for (stream, undecided) in std::mem::take(&mut self.parked) {
            let ports = self.conn(stream).ports();
            if self.detector.by_port(&ports).is_none() {
                still.push((stream, undecided));
                continue;
            }
            let held = self.take_held(stream);
            self.decide(stream, held, true, false, false);
            self.on_close(stream);
            if self.conn(stream).released {
                self.row(stream);
            }
        }
        // Python assigns `parked = still` after the loop, dropping what the loop parked meanwhile.
        self.parked = still;
    }

    /// Reports a connection no protocol was recognised on (none when nothing looked like one).
    fn undecoded(&mut self, stream: u64, held: &Held, decision: &Decision) {
        let Some((name, score)) = decision.best else {
            return;
        };
        let mut a = Anomaly::new(
            "undecoded",
            format!(
                "{} not decoded: no protocol recognised with confidence (best {name}, {score} of \
                 the {MIN_CONFIDENCE} needed); decode-as (-d PORT={name}) decides",
                held.what()
            ),
        );
        a.packet = held.first_packet;
        a.stream = Some(stream);
        self.on_anomaly(a);
    }

    /// Puts the frames a replay made among the held ones, in packet order.
    fn merge_replayed(&mut self) {
        let frames = self.q.replayed.take().unwrap_or_default();
        if frames.is_empty() {
            return;
        }
        let mut merged = VecDeque::with_capacity(self.q.held.len() + frames.len());
        let mut it = frames.into_iter().peekable();
        for f in self.q.held.drain(..) {
            let p = f.borrow().packet;
            while let Some(r) = it.next_if(|r| r.borrow().packet < p) {
                merged.push_back(r);
            }
            merged.push_back(f);
        }
        merged.extend(it);
        self.q.held = merged;
    }

    /// Parked connections closed longer ago than `hold_us` (or all) stay undecoded, and open
    /// connections held that long are decided with what they sent.
    fn expire(&mut self, everything: bool) {
        let limit = self.now_us - self.opts.hold_us;
        let old = self.holding.older_than(limit);
        for stream in old {
            if matches!(self.conns[&stream].user, User::Held(_)) {
                let held = self.take_held(stream);
                self.decide(stream, held, true, false, false);
            }
        }
        let mut still = Vec::new();
        for (stream, undecided) in std::mem::take(&mut self.parked) {
            let (last_ts, released) = {
                let c = &self.conns[&stream];
                (c.last_ts_us, c.released)
            };
            if everything || last_ts < limit {
                self.waiting.remove(stream);
                let held = self.take_held(stream);
                self.detector.held_total -= held.size;
                self.undecoded(stream, &held, &undecided);
                self.conn(stream).user = User::Off;
                if released {
                    self.row(stream);
                }
            } else {
                still.push((stream, undecided));
            }
        }
        self.parked = still;
    }

    /// End of the capture: the connections still waiting for their port stay undecoded.
    fn end(&mut self) {
        self.expire(true);
        self.waiting.clear();
    }

    // -- stream listener -----------------------------------------------------------------

    fn on_data(&mut self, stream: u64, mut role: Role, data: &[u8], packet: u64, ts_us: i64) {
        if matches!(self.conn(stream).user, User::Unset) && self.start(stream, packet, ts_us) {
            role = role.other();
        }
        match self.conn(stream).user {
            User::Held(_) => self.hold(stream, role, data, packet, ts_us),
            User::Framer(..) => self.feed(stream, role, data, packet, ts_us),
            _ => {}
        }
    }

    fn on_gap(&mut self, stream: u64, mut role: Role, size: u64, packet: u64, ts_us: i64) {
        if matches!(self.conn(stream).user, User::Unset) && self.start(stream, packet, ts_us) {
            role = role.other();
        }
        let Capture { conns, q, .. } = self;
        let c = conns.get_mut(&stream).expect("a known connection");
        let full = match &mut c.user {
            User::Held(h) => {
                if h.given_up {
                    return;
                }
                h.add_gap(role, size, packet, ts_us);
                h.full()
            }
            User::Framer(f, observe) => {
                let out: &mut dyn Output = if *observe { &mut Discard } else { q };
                f.gap(out, role, size, packet, ts_us);
                false
            }
            _ => false,
        };
        if full {
            let held = self.take_held(stream);
            self.decide(stream, held, true, false, true);
        }
    }

    fn on_close(&mut self, stream: u64) {
        if let User::Held(h) = &self.conn(stream).user {
            if h.given_up {
                self.conn(stream).user = User::Off;
            } else {
                let held = self.take_held(stream);
                self.decide(stream, held, true, true, false);
            }
            if matches!(self.conn(stream).user, User::Held(_)) {
                return; // parked: waits for its port to be learned
            }
        }
        let Capture { conns, q, .. } = self;
        let c = conns.get_mut(&stream).expect("a known connection");
        if let User::Framer(f, observe) = &mut c.user {
            let out: &mut dyn Output = if *observe { &mut Discard } else { q };
            f.finish(out);
            c.frames = f.frames;
            c.user = User::Off; // release the session's state
        }
    }

    fn on_release(&mut self, stream: u64) {
        if !matches!(self.conn(stream).user, User::Held(_)) {
            self.row(stream);
        }
    }

    /// Queues a released connection's row; rows leave in stream order, except that past
    /// `max_connections` rows waiting behind open connections, those give up their place.
    fn row(&mut self, stream: u64) {
        let Some(c) = self.conns.remove(&stream) else {
            return;
        };
        let summary = if self.owns(Some(stream)) {
            Some(c.summary())
        } else {
            None
        };
        if self.late.remove(&stream) {
            if let Some(s) = summary {
                self.rows_out.push_back((c.last_packet, s));
            }
            return;
        }
        self.rows.insert(stream, (c.last_packet, summary));
        self.row_heap.push(Reverse(stream));
        if self.rows.len() > self.opts.limits.max_connections {
            let Reverse(lowest) = *self.row_heap.peek().expect("not empty");
            self.late.extend(self.next_row..lowest);
            self.next_row = lowest;
        }
        while let Some(&Reverse(s)) = self.row_heap.peek() {
            if s != self.next_row {
                break;
            }
            self.row_heap.pop();
            let (last, row) = self.rows.remove(&s).expect("queued row");
            if let Some(row) = row {
                self.rows_out.push_back((last, row));
            }
            self.next_row += 1;
        }
    }

    fn on_anomaly(&mut self, a: Anomaly) {
        if self.opts.shard.is_some() && !self.owns(a.stream) {
            return;
        }
        self.q.ready.push_back(Ready::Anomaly(Box::new(a)));
    }

    fn pending(&self) -> bool {
        !self.q.ready.is_empty() || !self.q.held.is_empty() || !self.rows_out.is_empty()
    }

    // -- ordering ---------------------------------------------------------------------------

    /// The records that may leave now, in packet order as far as the hold bounds allow (see
    /// Python's `_Capture.release`).
    fn release(&mut self, final_: bool, out: &mut VecDeque<Record>) {
        let limit_ts = self.now_us - self.opts.hold_us;
        let (max_frames, max_bytes) = (self.opts.hold_frames, self.opts.hold_bytes);
        let barrier = self.waiting.min();
        let q = &mut self.q;
        while let Some(fr) = q.held.front() {
            let (awaiting, packet, ts_us) = {
                let f = fr.borrow();
                (f.awaiting, f.packet, f.ts_us)
            };
            if (awaiting || barrier.is_some_and(|b| packet >= b))
                && !final_
                && q.held.len() <= max_frames
                && q.held_bytes <= max_bytes as i64
                && ts_us >= limit_ts
            {
                break;
            }
            while let Some(r) = q.ready.front() {
                match r {
                    Ready::Anomaly(a) if a.packet > packet => break,
                    _ => {}
                }
                out.push_back(match q.ready.pop_front().expect("front") {
                    Ready::Anomaly(a) => Record::Anomaly(a),
                    Ready::Exchange(e) => Record::Exchange(e),
                });
            }
            let fr = q.held.pop_front().expect("front");
            q.held_bytes -= held_size(&fr);
            fr.borrow_mut().released = true;
            out.push_back(Record::Frame(fr));
        }
        let first = q.held.front().map(|f| f.borrow().packet);
        while let Some(r) = q.ready.front() {
            if let (Some(first), Ready::Anomaly(a)) = (first, r) {
                if a.packet > first && q.ready.len() <= MAX_READY_HELD {
                    break;
                }
            }
            out.push_back(match q.ready.pop_front().expect("front") {
                Ready::Anomaly(a) => Record::Anomaly(a),
                Ready::Exchange(e) => Record::Exchange(e),
            });
        }
        while let Some((last, _)) = self.rows_out.front() {
            if !(final_ || first.is_none_or(|f| *last < f)) {
                break;
            }
            let (_, row) = self.rows_out.pop_front().expect("front");
            out.push_back(Record::Connection(Box::new(row)));
        }
    }
}

/// One capture dissected: iterate [`Dissection::next_record`] for its records in order.
pub struct Dissection {
    pub engine: StreamEngine,
    pub cap: Capture,
    out: VecDeque<Record>,
    /// The stream events of the last step, handled in order from `at` (each taken out in
    /// turn, a cheap `End` left in its place): one buffer reused for every step.
    events: Vec<StreamEvent>,
    at: usize,
    /// Streams whose roles were swapped during the current batch: the batch's later events of
    /// theirs were made before the swap.
    flipped: HashSet<u64, ahash::RandomState>,
    packets: u64,
    started: bool,
    done: bool,
    /// (number, ts_us) of the records read and not yet taken (the CLI's packet times).
    record_times: Vec<(u64, i64)>,
}

impl Dissection {
    /// Lets the decoders write bodies' `detail` text instead of their field trees
    /// ([`SessionOptions::detail_text`]): for a run whose frames only the table builders read.
    /// Takes effect only before any connection has its session (each holds the options it was
    /// made with); returns whether it did.
    pub fn text_detail(&mut self) -> bool {
        let cap = &mut self.cap;
        match (
            Rc::get_mut(&mut cap.session_opts),
            Rc::get_mut(&mut cap.observe_opts),
        ) {
            (Some(s), Some(o)) => {
                s.detail_text = s.detail;
                o.detail_text = o.detail;
                true
            }
            _ => false,
        }
    }

    pub fn new(
        reader: CaptureReader,
        opts: Options,
        protocols: Vec<Box<dyn Protocol>>,
    ) -> Result<Dissection, String> {
        let mut reader = reader;
        reader.max_interfaces = opts.limits.max_interfaces;
        let cap = Capture::new(&reader.name, opts, protocols)?;
        let l = &cap.opts.limits;
        let mut engine = StreamEngine::new(reader, l.max_out_of_order, Vec::new());
        engine.configure(
            l.max_out_of_order,
            cap.detector.server_ports(),
            Retention {
                max_connections: l.max_connections,
                half_open_us: l.half_open_us,
                closed_linger_us: l.closed_linger_us,
            },
        );
        Ok(Dissection {
            engine,
            cap,
            out: VecDeque::new(),
            events: Vec::new(),
            at: 0,
            flipped: HashSet::default(),
            packets: 0,
            started: false,
            done: false,
            record_times: Vec::new(),
        })
    }

    /// The next record of the capture, None after its `CaptureEnd`.
    ///
    /// Stream events are handled one at a time and handling pauses as soon as records are ready:
    /// a frame that leaves is read by the caller before anything later can change it (a request
    /// that left unanswered, past the hold bounds, is still linked to its answer later), as the
    /// Python pipeline's consumers read each event when it is yielded.
    pub fn next_record(&mut self) -> Option<Record> {
        loop {
            if let Some(r) = self.out.pop_front() {
                return Some(r);
            }
            if self.done {
                return None;
            }
            if let Some(slot) = self.events.get_mut(self.at) {
                let ev = std::mem::replace(slot, StreamEvent::End);
                self.at += 1;
                self.event(ev);
                continue;
            }
            if self.engine.finished() {
                self.finish();
                continue;
            }
            self.events.clear();
            self.at = 0;
            let step = if self.cap.opts.live { 1 } else { STEP_RECORDS };
            self.engine.step(step, step * 4, &mut self.events);
            self.flipped.clear();
        }
    }

    /// The records read since the last call: (number, ts_us), in order.
    pub fn take_record_times(&mut self) -> Vec<(u64, i64)> {
        std::mem::take(&mut self.record_times)
    }

    /// The records read since [`Dissection::clear_record_times`], in order: what
    /// [`Dissection::take_record_times`] gives, for a reader called once per record (the
    /// timeline) that would otherwise make a vector each time.
    pub fn record_times(&self) -> &[(u64, i64)] {
        &self.record_times
    }

    pub fn clear_record_times(&mut self) {
        self.record_times.clear();
    }

    fn role(&self, stream: u64, role: usize) -> Role {
        let r = if role == 0 {
            Role::Client
        } else {
            Role::Server
        };
        if self.flipped.contains(&stream) {
            r.other()
        } else {
            r
        }
    }

    fn event(&mut self, ev: StreamEvent) {
        let cap = &mut self.cap;
        match ev {
            StreamEvent::Record { number, ts_us } => {
                if self.started && cap.pending() {
                    cap.release(false, &mut self.out);
                }
                self.started = true;
                self.packets = number;
                self.record_times.push((number, ts_us));
                cap.now_us = ts_us;
            }
            StreamEvent::TruncatedPacket {
                number,
                caplen,
                orig_len,
            } => {
                if cap.owns(None) {
                    let mut a = Anomaly::new(
                        "truncated_packet",
                        format!(
                            "packet cut by the snap length: {caplen} of {orig_len} bytes captured"
                        ),
                    );
                    a.packet = number;
                    cap.q.ready.push_back(Ready::Anomaly(Box::new(a)));
                }
            }
            StreamEvent::BadTimestamp { number, note } => {
                if cap.owns(None) {
                    let mut a = Anomaly::new("bad_timestamp", note);
                    a.packet = number;
                    cap.q.ready.push_back(Ready::Anomaly(Box::new(a)));
                }
            }
            StreamEvent::End => {
                if self.started && cap.pending() {
                    cap.release(false, &mut self.out);
                }
                self.started = false;
            }
            StreamEvent::Tcp(t) => self.tcp_event(t),
        }
        for stream in std::mem::take(&mut self.cap.mutes) {
            self.engine.tcp.mute(stream);
        }
        for stream in std::mem::take(&mut self.cap.swaps) {
            self.engine.tcp.swap_roles(stream);
            if !self.flipped.remove(&stream) {
                self.flipped.insert(stream);
            }
        }
    }

    fn tcp_event(&mut self, t: TcpEvent) {
        match t {
            TcpEvent::Open {
                stream,
                client,
                client_port,
                server,
                server_port,
                first_ts_us,
            } => {
                // From the event, not the reassembler: by now it may have dropped the connection
                // (released later in the same batch).
                let conn = Conn {
                    stream,
                    client: self.cap.addrs.get(client),
                    client_port,
                    server: self.cap.addrs.get(server),
                    server_port,
                    first_ts_us,
                    saw_syn: false,
                    last_ts_us: first_ts_us,
                    released: false,
                    last_packet: 0,
                    protocol: None,
                    frames: 0,
                    user: User::Unset,
                    packets: 0,
                    bytes_client: 0,
                    bytes_server: 0,
                    gaps: 0,
                    retransmissions: 0,
                    state: "open",
                };
                self.cap.conns.insert(stream, Box::new(conn));
            }
            TcpEvent::Data {
                stream,
                role,
                data,
                packet,
                ts_us,
            } => {
                let role = self.role(stream, role);
                self.cap.on_data(stream, role, &data, packet, ts_us);
                self.engine.tcp.give_back(data);
            }
            TcpEvent::Gap {
                stream,
                role,
                size,
                packet,
                ts_us,
            } => {
                let role = self.role(stream, role);
                self.cap.on_gap(stream, role, size, packet, ts_us);
            }
            TcpEvent::Close { stream, last_ts_us } => {
                self.cap.conn(stream).last_ts_us = last_ts_us;
                self.cap.on_close(stream);
            }
            TcpEvent::Touch { stream, ts_us } => self.cap.conn(stream).last_ts_us = ts_us,
            TcpEvent::SawSyn { stream } => self.cap.conn(stream).saw_syn = true,
            TcpEvent::Release { stream, row } => {
                // The row was taken before the roles swapped in this batch, if they were.
                let t = if self.flipped.contains(&stream) {
                    row.swapped()
                } else {
                    row
                };
                let c = self.cap.conn(stream);
                c.packets = t.packets;
                c.bytes_client = t.bytes_client;
                c.bytes_server = t.bytes_server;
                c.gaps = t.gaps;
                c.retransmissions = t.retransmissions;
                c.first_ts_us = t.first_ts_us;
                c.last_ts_us = t.last_ts_us;
                c.state = t.state;
                c.last_packet = t.last_packet;
                c.released = true;
                self.cap.on_release(stream);
            }
            TcpEvent::Anomaly {
                kind,
                detail,
                packet,
                stream,
            } => {
                let detail = if self.flipped.contains(&stream) {
                    flip_detail(&detail)
                } else {
                    detail
                };
                let mut a = Anomaly::new(kind, detail);
                a.packet = packet;
                a.stream = Some(stream);
                self.cap.on_anomaly(a);
            }
        }
    }

    /// The end of the capture (Python's `finish_capture`).
    fn finish(&mut self) {
        let cap = &mut self.cap;
        cap.end();
        let packets = self.packets;
        let reader = &self.engine.reader;
        let truncated = reader.truncated.clone();
        if cap.owns(None) {
            if let Some(t) = &truncated {
                let mut a = Anomaly::new("truncated_capture", t.clone());
                a.packet = packets;
                cap.q.ready.push_back(Ready::Anomaly(Box::new(a)));
            }
            let l = &cap.opts.limits;
            let half = format!(
                "that never carried payload were released after {} s without a packet \
                 (half-open: SYN floods, unused handshakes)",
                l.half_open_us.div_euclid(1_000_000)
            );
            let evict = format!(
                "were released early: more than {} were tracked at once (a later packet of \
                 theirs starts a new stream)",
                l.max_connections
            );
            for (kind, n, what) in [
                (
                    "half_open_released",
                    self.engine.tcp.half_open_released,
                    half,
                ),
                ("connection_limit", self.engine.tcp.evicted, evict),
            ] {
                if n != 0 {
                    let mut a = Anomaly::new(
                        kind,
                        format!("{n} connection{} {what}", if n != 1 { "s" } else { "" }),
                    );
                    a.packet = packets;
                    cap.q.ready.push_back(Ready::Anomaly(Box::new(a)));
                }
            }
            let n = reader.interfaces_not_kept;
            if n != 0 {
                let mut a = Anomaly::new(
                    "interface_limit",
                    interface_limit_detail(n, l.max_interfaces),
                );
                a.packet = packets;
                cap.q.ready.push_back(Ready::Anomaly(Box::new(a)));
            }
        }
        cap.release(true, &mut self.out);
        self.out.push_back(Record::CaptureEnd(Box::new(CaptureEnd {
            name: cap.name.to_string(),
            packets,
            truncated,
            skipped_unknown_link: reader.skipped_unknown_link,
        })));
        self.done = true;
    }
}

/// The `interface_limit` detail: `n` pcapng interface blocks past the `bound` kept per section
/// (Python's `pipeline._interface_limit_detail`).
fn interface_limit_detail(n: u64, bound: usize) -> String {
    format!(
        "{n} pcapng interface block{} not kept: past the {bound} interfaces kept per section \
         (a packet naming one ends the capture)",
        if n != 1 { "s" } else { "" }
    )
}

/// An anomaly detail made before its connection's roles were swapped, as it would read after
/// (the first word `client`/`server` changes: Python's `rust_stream._flip`).
fn flip_detail(detail: &str) -> String {
    let mut words: Vec<String> = detail.split(' ').map(str::to_string).collect();
    for w in words.iter_mut() {
        if w == "client" || w == "server" {
            *w = if w == "client" { "server" } else { "client" }.to_string();
            break;
        }
    }
    words.join(" ")
}
