//! The one small interface every protocol implements (the Rust twin of
//! `wiredump/dissect/protocols/base.py`).
//!
//! Modelled on Wireshark's `tcp_dissect_pdus`: the protocol says how long the frame at the head
//! of a byte stream is, where the next plausible frame starts after garbage, and how to decode
//! one whole frame. Buffering, packet bookkeeping, gaps, truncation, resynchronisation reporting
//! and output ordering belong to the framing engine, so a protocol module holds nothing but
//! protocol knowledge. A protocol lives in its own module (`crate::kafka`, `crate::pulsar`…)
//! and is named only there and in the registry.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::codecs::Limits;
use crate::correlation::Correlator;
use crate::model::{Anomaly, FrameRef, Frames, Role};

/// What [`Session::frame_length`] answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameLen {
    /// Not enough bytes yet to know the frame's length.
    NeedMore,
    /// The bytes at the head cannot start a frame: the engine resynchronises.
    NotAFrame,
    /// The rest of this direction cannot be decoded (TLS, raw SASL…): the engine stops framing it.
    Undecodable,
    /// Total length in bytes, framing included. A length above the protocol's maximum is
    /// returned as is: the engine reports it as `oversize_frame` and resynchronises without
    /// buffering it.
    Len(u64),
}

/// Run options a session may read (Python's `ConnContext.options`).
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// Show secrets (SASL, auth data) instead of masking them.
    pub show_secrets: bool,
    /// Decode every application message; sinks that need only frames turn it off, and
    /// decoders may then count messages from their headers (checksums are still verified).
    pub messages: bool,
    /// Keep each frame's decoded field tree (`Frame::fields`) and `partitions`. Sinks that read
    /// only a frame's columns and summary (the plain timeline) turn it off, and decoders may then
    /// skip converting the body they walked into fields: the summary, status, error and anomalies
    /// are the same either way.
    pub detail: bool,
    /// Keep each message's value bytes (`Message::value`); off when no sink writes them (the
    /// export without `--values`): values are then measured (`value_size`), not copied.
    pub values: bool,
    /// Framing a connection another worker decodes: learn run state, return no frames
    /// (see [`Protocol::shares_run_state`]).
    pub observe: bool,
    /// Only the table builders read the frames (the export): a decoder may write a body's
    /// `detail` JSON text straight from what it walked ([`crate::model::Frame::body_text`])
    /// instead of making its field tree, which nothing else would read. Set by the tables'
    /// feed before the first packet ([`crate::pipeline::Dissection::text_detail`]), never
    /// where frames reach Python.
    pub detail_text: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            show_secrets: false,
            messages: true,
            detail: true,
            values: true,
            observe: false,
            detail_text: false,
        }
    }
}

/// State one run (one capture) shares between its connections, keyed by protocol-qualified
/// names (e.g. Kafka's topic names); made once per capture by the engine, never process-global.
#[derive(Default)]
pub struct RunState {
    entries: HashMap<&'static str, Box<dyn Any>, ahash::RandomState>,
}

impl RunState {
    /// The entry `key` of type `T`, made with `T::default()` the first time it is asked for.
    ///
    /// # Panics
    /// When `key` already holds another type: two protocols would be sharing one name.
    pub fn entry<T: Default + 'static>(&mut self, key: &'static str) -> &mut T {
        self.entries
            .entry(key)
            .or_insert_with(|| Box::new(T::default()))
            .downcast_mut::<T>()
            .expect("a run-state key holds one type")
    }

    /// The entry `key` if it was made and holds a `T` (read-only: nothing is made).
    pub fn get<T: 'static>(&self, key: &'static str) -> Option<&T> {
        self.entries.get(key)?.downcast_ref::<T>()
    }
}

/// What a session knows of its connection and of the run.
pub struct ConnCtx {
    pub capture: Rc<str>,
    pub stream: u64,
    pub client: Rc<str>,
    pub client_port: u16,
    pub server: Rc<str>,
    pub server_port: u16,
    pub correlator: Correlator,
    /// The run's limits (one per capture: the decompressed total is the capture's).
    pub limits: Rc<RefCell<Limits>>,
    pub options: Rc<SessionOptions>,
    pub run_state: Rc<RefCell<RunState>>,
    /// Anomalies that belong to no frame, reported by the session; the engine stamps them with
    /// packet, stream and protocol and sends them out (Python's `ctx.report`).
    pub reports: Vec<Anomaly>,
}

impl ConnCtx {
    /// A context for one connection alone (tests, detection trials): its own limits, options
    /// and run state.
    pub fn standalone(protocol: &'static str, stream: u64) -> ConnCtx {
        ConnCtx {
            capture: Rc::from(""),
            stream,
            client: Rc::from("10.0.0.1"),
            client_port: 40000,
            server: Rc::from("10.0.0.2"),
            server_port: 0,
            correlator: Correlator::new(stream, protocol, 65536),
            limits: Rc::new(RefCell::new(Limits::default())),
            options: Rc::new(SessionOptions::default()),
            run_state: Rc::new(RefCell::new(RunState::default())),
            reports: Vec::new(),
        }
    }

    /// Reports an anomaly that belongs to no frame.
    pub fn report(&mut self, anomaly: Anomaly) {
        self.reports.push(anomaly);
    }
}

/// Per-connection decoder state (both directions). Never panics on bad input: a broken frame is
/// a frame with a status and an anomaly (the engine turns a panic into `internal_error`).
pub trait Session {
    /// Length of the frame starting at `buf[0]` (the engine's buffer from the frame's first
    /// byte: read it, keep nothing of it).
    fn frame_length(&mut self, ctx: &mut ConnCtx, buf: &[u8], role: Role) -> FrameLen;

    /// Offset in `buf` of the first plausible frame start, or None when none is found in what
    /// is buffered (the engine keeps its last bytes and asks again when more arrive).
    fn resync(&mut self, ctx: &mut ConnCtx, buf: &[u8], role: Role) -> Option<usize>;

    /// Decodes one frame's bytes sent by `role`. `complete` is false for the bytes left when the
    /// stream ended or a gap cut the frame: return a frame with status `truncated` describing
    /// what can be read. Usually one frame; a protocol may return none (bytes it swallows) or
    /// several.
    fn decode(&mut self, ctx: &mut ConnCtx, data: &[u8], role: Role, complete: bool) -> Frames;

    /// Called once at the end of the connection; may return frames it still held.
    fn close(&mut self, _ctx: &mut ConnCtx) -> Vec<FrameRef> {
        Vec::new()
    }
}

/// Score a connection's best protocol needs; below it the connection stays undecoded.
pub const MIN_CONFIDENCE: i32 = 50;
/// Score at which detection decides at once.
pub const CERTAIN: i32 = 90;

/// What a scratch session made of one direction's first bytes (Python's `trial.Side`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrialSide {
    /// Type names of the whole frames that decoded with status ok, in order, from the first.
    pub frames: Vec<String>,
    /// Bytes before the first frame (a capture begun inside a frame).
    pub skipped: usize,
    /// A frame after the clean ones failed to frame or decode.
    pub broken: bool,
    /// The bytes end inside a frame whose header the session accepted.
    pub partial: bool,
    /// Frames of a kind the other side sends.
    pub misplaced: u32,
}

/// A protocol's own session tried on a connection's first bytes (Python's `trial.Trial`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trial {
    pub client: TrialSide,
    pub server: TrialSide,
    /// Answers paired with requests.
    pub answered: u32,
    /// The common part of a score, as `Trial.points()` computes it (set by `crate::trial`).
    pub points: i32,
}

impl Trial {
    pub fn points(&self) -> i32 {
        self.points
    }
}

/// Registration data for one protocol: name, ports, detection, sessions.
pub trait Protocol {
    /// The protocol's name in tables (`kafka`).
    fn name(&self) -> &'static str;
    /// Well-known server ports: a connection on one of them is this protocol's.
    fn ports(&self) -> &'static [u16];
    /// Largest frame (framing included) the protocol allows; beyond it, `oversize_frame`.
    fn max_frame(&self) -> u64;
    /// True when a session learns from other connections through [`ConnCtx::run_state`].
    fn shares_run_state(&self) -> bool {
        false
    }
    /// Has a session of this run read from `state` something another connection could have
    /// taught it (Kafka: a topic id looked up)? Only asked of protocols that share run state.
    fn run_state_consulted(&self, _state: &RunState) -> bool {
        false
    }
    /// Do `data`, the first bytes `role` sent, open a connection the way this protocol does?
    /// A hint that scoring may add to (a greeting), never a decision on its own.
    fn sniff(&self, _data: &[u8], _role: Role) -> bool {
        false
    }
    /// How sure (0–100) that a connection whose client sent `client` and whose server sent
    /// `server` first speaks this protocol, given `trial`: what a scratch session of this
    /// protocol made of those bytes (computed by the engine's detection, `crate::trial`, the
    /// port of `protocols/trial.py`). The default is the trial's common points; a protocol adds
    /// what only it knows (a greeting, a handshake) as its Python `sniff.score` does.
    fn score(&self, trial: &Trial, _client: &[u8], _server: &[u8], _opened: bool) -> i32 {
        trial.points()
    }
    /// Fresh per-connection state.
    fn new_session(&self, ctx: &ConnCtx) -> Box<dyn Session>;
}
