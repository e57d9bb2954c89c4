//! The framing engine: reassembled bytes in, stamped frames out (the port of
//! `wiredump/dissect/framing.py`, event for event).
//!
//! One [`ConnectionFramer`] per connection drives the protocol's [`Session`] for both directions:
//! it buffers only up to the frame length the session declares (never beyond the protocol's
//! maximum, itself within the engine's stream-buffer ceiling), maps every frame back to the
//! packets that carried its first and last byte, reports skipped bytes when it resynchronises,
//! turns bytes cut by a gap or by the end of the stream into a `truncated` frame, and shields the
//! rest of the capture from any decoder bug: a panic inside the session's `frame_length`,
//! `resync`, `decode` or `close` is caught and becomes an `internal_error` anomaly where the
//! Python engine reports one, never "not a frame" or "malformed". A frame whose decode panicked
//! is kept as an undecoded frame of status `undecodable` carrying the `internal_error`.

use std::any::Any;
use std::collections::VecDeque;

use crate::model::{Anomaly, Exchange, Frame, FrameRef, Role, Status};
use crate::protocol::{ConnCtx, FrameLen, Session};
use crate::shield::shielded;

/// Bytes kept while no frame start is found (a frame header must fit in them).
pub const RESYNC_KEEP: usize = 64 * 1024;
/// A session that cannot size a frame after this many bytes is looking at garbage.
pub const MAX_HEADER_WAIT: usize = 64 * 1024;
/// Consumed bytes dropped from the front of a direction's buffer past this.
pub const COMPACT_AT: usize = 256 * 1024;
/// A direction buffer whose capacity passed this is freed, not kept, once its bytes are all
/// consumed: a frame near a protocol's maximum (100 MiB and more) must not leave its buffer's
/// memory held for the rest of the connection.
pub const RELEASE_AT: usize = 1 << 20;
/// A resynchronising direction is scanned again once this many new bytes came (or it doubled).
pub const RESYNC_STEP: usize = 16 * 1024;
/// Up to this many bytes, a resynchronising direction is scanned again whenever the other side
/// speaks (cheap, and keeps answers behind their requests); beyond it, the doubling rule.
pub const EAGER_RESYNC: usize = 4096;
/// Internal errors of framing and resync reported one by one per connection; past this one more
/// anomaly at the end counts the rest. Errors in decode each belong to their frame.
pub const MAX_INTERNAL_REPORTS: u64 = 64;
/// The anomaly kind of a bug caught by a shield.
pub const INTERNAL_ERROR: &str = "internal_error";
const MAX_DETAIL: usize = 300;

/// Where the framer's records go (the pipeline, or nowhere for an observing framer).
pub trait Output {
    fn frame(&mut self, frame: FrameRef);
    fn anomaly(&mut self, anomaly: Anomaly);
    fn exchange(&mut self, exchange: Exchange);
}

/// An output that keeps nothing (an observing framer: its session only learns run state).
pub struct Discard;

impl Output for Discard {
    fn frame(&mut self, _frame: FrameRef) {}
    fn anomaly(&mut self, _anomaly: Anomaly) {}
    fn exchange(&mut self, _exchange: Exchange) {}
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Framing,
    Resync,
    Dead,
}

struct Dir {
    role: Role,
    buf: Vec<u8>,
    pos: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    /// (end offset, packet, ts_us) of each delivery still in the buffer.
    chunks: VecDeque<(u64, u64, i64)>,
    need: usize,
    mode: Mode,
    skipped: u64,
    /// Packet where the skipped run began.
    skip_from: u64,
    dead_bytes: u64,
    /// Bytes the last fruitless resync looked at.
    scanned: usize,
    /// Why the current skipped run began, when it is not garbage.
    skip_why: String,
}

impl Dir {
    fn new(role: Role) -> Dir {
        Dir {
            role,
            buf: Vec::new(),
            pos: 0,
            base: 0,
            chunks: VecDeque::new(),
            need: 0,
            mode: Mode::Framing,
            skipped: 0,
            skip_from: 0,
            dead_bytes: 0,
            scanned: 0,
            skip_why: String::new(),
        }
    }

    fn avail(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Forgets the consumed buffer (all of it is consumed): a large one is freed, a small one
    /// kept for the next bytes.
    fn release(&mut self) {
        self.base += self.buf.len() as u64;
        if self.buf.capacity() > RELEASE_AT {
            self.buf = Vec::new();
        } else {
            self.buf.clear();
        }
        self.pos = 0;
    }
}

/// The message of a caught panic (`panic!("…")` payloads are `&str` or `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".to_string()
    }
}

/// The `internal_error` anomaly for a panic caught around `function` of `protocol` (Python's
/// `internal.internal_error`; the exception's type name is `panic`).
pub fn internal_error(
    payload: &(dyn Any + Send),
    function: &str,
    protocol: &'static str,
    where_: &str,
    offset: Option<u64>,
) -> Anomaly {
    let mut msg = panic_message(payload);
    if msg.chars().count() > 120 {
        msg = msg.chars().take(117).collect::<String>() + "...";
    }
    let at = if where_.is_empty() {
        String::new()
    } else {
        format!(" on {where_}")
    };
    let detail = format!("internal error: panic in {protocol}.{function}{at}: {msg}");
    let mut a = Anomaly::new(
        INTERNAL_ERROR,
        detail.chars().take(MAX_DETAIL).collect::<String>(),
    )
    .at(offset);
    a.protocol = Some(protocol);
    a
}

/// Frames one connection for one protocol (see the module doc).
pub struct ConnectionFramer {
    pub protocol: &'static str,
    max_frame: u64,
    /// The engine's own ceiling (`Limits.max_stream_buffer` of the Python engine).
    max_stream_buffer: u64,
    pub session: Box<dyn Session>,
    pub ctx: ConnCtx,
    keep_bytes: bool,
    /// Frames emitted so far (the connections table's `frames`).
    pub frames: u64,
    dirs: [Dir; 2],
    last_packet: u64,
    internal_errors: u64,
}

fn idx(role: Role) -> usize {
    match role {
        Role::Client => 0,
        Role::Server => 1,
    }
}

impl ConnectionFramer {
    pub fn new(
        protocol: &'static str,
        max_frame: u64,
        max_stream_buffer: u64,
        session: Box<dyn Session>,
        ctx: ConnCtx,
        keep_bytes: bool,
    ) -> ConnectionFramer {
        ConnectionFramer {
            protocol,
            max_frame,
            max_stream_buffer,
            session,
            ctx,
            keep_bytes,
            frames: 0,
            dirs: [Dir::new(Role::Client), Dir::new(Role::Server)],
            last_packet: 0,
            internal_errors: 0,
        }
    }

    // -- input ------------------------------------------------------------------------------

    /// In-order bytes of `role`, carried by `packet`.
    pub fn feed(&mut self, out: &mut dyn Output, role: Role, data: &[u8], packet: u64, ts_us: i64) {
        self.last_packet = packet;
        let o = idx(role.other());
        {
            let od = &self.dirs[o];
            let avail = od.avail();
            if od.mode == Mode::Resync
                && od.scanned > 0
                && od.scanned < avail
                && avail <= EAGER_RESYNC
            {
                // The other side is resynchronising and has bytes not yet scanned: scan them
                // now, so that a request found there is decoded before this side's answer.
                if self.try_resync(out, o) {
                    self.run(out, o);
                }
            }
        }
        let i = idx(role);
        let d = &mut self.dirs[i];
        if d.mode == Mode::Dead {
            d.dead_bytes += data.len() as u64;
            return;
        }
        if d.pos >= d.buf.len() {
            d.release();
        } else if d.pos > COMPACT_AT {
            d.buf.drain(..d.pos);
            d.base += d.pos as u64;
            d.pos = 0;
        }
        if d.buf.is_empty() && d.mode == Mode::Framing {
            // Nothing buffered: the frames that lie whole in `data` are framed and decoded
            // where they lie, and only bytes that must wait are copied (most deliveries of small
            // frames copy nothing).
            d.chunks
                .push_back((d.base + data.len() as u64, packet, ts_us));
            self.run_on(out, i, Some(data));
            return;
        }
        d.buf.extend_from_slice(data);
        d.chunks
            .push_back((d.base + d.buf.len() as u64, packet, ts_us));
        self.run(out, i);
    }

    /// `size` bytes of `role` were never captured.
    pub fn gap(&mut self, out: &mut dyn Output, role: Role, size: u64, packet: u64, _ts_us: i64) {
        let i = idx(role);
        if self.dirs[i].mode == Mode::Dead {
            return;
        }
        self.flush_partial(out, i);
        let d = &mut self.dirs[i];
        d.base += d.buf.len() as u64 + size;
        d.buf = Vec::new();
        d.pos = 0;
        d.need = 0;
        d.chunks.clear();
        d.mode = Mode::Resync;
        d.skipped = 0;
        d.skip_from = packet;
        d.skip_why.clear();
        d.scanned = 0;
    }

    /// End of connection (or of the capture): flush partial frames, close exchanges.
    pub fn finish(&mut self, out: &mut dyn Output) {
        for i in 0..2 {
            self.flush_partial(out, i);
        }
        for f in self.call_close(out) {
            self.emit(out, f);
        }
        for ex in self.ctx.correlator.close() {
            out.exchange(ex);
        }
        if self.internal_errors > MAX_INTERNAL_REPORTS {
            let a = Anomaly::new(
                INTERNAL_ERROR,
                format!(
                    "internal error: {} more internal errors in {} on this connection (only the \
                     first {} are reported one by one)",
                    self.internal_errors - MAX_INTERNAL_REPORTS,
                    self.protocol,
                    MAX_INTERNAL_REPORTS
                ),
            );
            self.report(out, a, None);
        }
        // Nothing of the connection runs after finish: free the buffers now.
        for d in &mut self.dirs {
            d.buf = Vec::new();
            d.chunks = VecDeque::new();
        }
    }

    // -- engine -----------------------------------------------------------------------------

    fn run(&mut self, out: &mut dyn Output, i: usize) {
        self.run_on(out, i, None);
    }

    /// Frames direction `i`: its buffer, or `ext` (a delivery that came while nothing was
    /// buffered), read in place as the buffer would be: `dirs[i].pos` is then the position in
    /// `ext`. Whatever cannot be done in place (resynchronising, a frame not whole yet) first
    /// copies `ext` into the buffer, which leaves the direction exactly as if `ext` had been
    /// buffered on delivery; when every byte of `ext` is framed, nothing is copied.
    fn run_on(&mut self, out: &mut dyn Output, i: usize, mut ext: Option<&[u8]>) {
        let role = self.dirs[i].role;
        // The protocol's largest frame, within the engine's own ceiling: the bytes a direction
        // buffers while a frame completes never pass it.
        let ceiling = self.max_stream_buffer;
        let ours = self.max_frame == 0 || self.max_frame > ceiling;
        let max_frame = if ours { ceiling } else { self.max_frame };
        loop {
            let (pos, avail) = {
                let d = &self.dirs[i];
                match ext {
                    Some(e) => (d.pos, e.len() - d.pos),
                    None => (d.pos, d.avail()),
                }
            };
            if let Some(e) = ext {
                if self.dirs[i].mode != Mode::Framing {
                    self.dirs[i].buf.extend_from_slice(e);
                    ext = None;
                    continue;
                }
                if avail == 0 {
                    // All of it framed in place: as a buffer released after its last frame.
                    let d = &mut self.dirs[i];
                    d.base += e.len() as u64;
                    d.pos = 0;
                    return;
                }
            }
            if avail == 0 {
                return;
            }
            if self.dirs[i].mode == Mode::Resync {
                // Scanning the whole window again for every small segment would be quadratic;
                // scan again once the window has doubled or RESYNC_STEP new bytes came.
                let scanned = self.dirs[i].scanned;
                if scanned > 0 && avail < 2 * scanned && avail - scanned < RESYNC_STEP {
                    return;
                }
                if !self.try_resync(out, i) {
                    return;
                }
                continue;
            }
            let mut n = self.dirs[i].need;
            if n == 0 {
                let start = self.dirs[i].base + pos as u64;
                let got = {
                    let session = &mut self.session;
                    let ctx = &mut self.ctx;
                    let buf = match ext {
                        Some(e) => &e[pos..],
                        None => &self.dirs[i].buf[pos..],
                    };
                    shielded(|| session.frame_length(ctx, buf, role))
                };
                self.flush_reports(out);
                let len = match got {
                    Ok(l) => l,
                    Err(p) => {
                        self.internal(out, &*p, "frame_length", i, start);
                        self.dirs[i].skip_why =
                            format!("after an internal error in {}.frame_length", self.protocol);
                        FrameLen::NotAFrame
                    }
                };
                let len = match len {
                    FrameLen::NeedMore | FrameLen::Len(0) => {
                        if avail > MAX_HEADER_WAIT {
                            FrameLen::NotAFrame
                        } else {
                            self.keep(i, ext);
                            return;
                        }
                    }
                    other => other,
                };
                match len {
                    FrameLen::Undecodable => {
                        let at = self.packet_at(i, start);
                        let d = &mut self.dirs[i];
                        d.mode = Mode::Dead;
                        d.dead_bytes = avail as u64;
                        let a = Anomaly::new(
                            "undecodable",
                            format!(
                                "{} bytes from stream offset {start} on cannot be decoded",
                                role.as_str()
                            ),
                        );
                        d.buf = Vec::new();
                        d.pos = 0;
                        self.report(out, a, Some(at));
                        return;
                    }
                    FrameLen::NotAFrame | FrameLen::NeedMore => {
                        self.dirs[i].mode = Mode::Resync;
                        self.dirs[i].skip_from = self.packet_at(i, start);
                        self.skip(i, 1);
                        continue;
                    }
                    FrameLen::Len(len) => {
                        if max_frame != 0 && len > max_frame {
                            let at = self.packet_at(i, start);
                            let a = Anomaly::new(
                                "oversize_frame",
                                format!(
                                    "{} frame at stream offset {start} declares {len} bytes, over \
                                     the {} maximum of {max_frame}{}",
                                    role.as_str(),
                                    self.protocol,
                                    if ours {
                                        " (the engine's stream buffer limit)"
                                    } else {
                                        ""
                                    }
                                ),
                            );
                            self.report(out, a, Some(at));
                            self.dirs[i].mode = Mode::Resync;
                            self.dirs[i].skip_from = at;
                            self.skip(i, 1);
                            continue;
                        }
                        n = len as usize;
                        self.dirs[i].need = n;
                    }
                }
            }
            if avail < n {
                self.keep(i, ext);
                return;
            }
            if let Some(e) = ext {
                self.dirs[i].need = 0;
                let start = self.dirs[i].base + pos as u64;
                self.decode(out, i, &e[pos..pos + n], start, true);
                self.dirs[i].pos = pos + n;
                continue;
            }
            // The frame is decoded from the direction's buffer itself, not a copy: a frame near
            // the protocol's maximum (Kafka's 100 MiB, a Pulsar broker's 128 MiB) would cost
            // its size once more. The buffer is moved out while the session reads it (nothing
            // else touches this direction's bytes during `decode`) and moved back after.
            let d = &mut self.dirs[i];
            let buf = std::mem::take(&mut d.buf);
            d.need = 0;
            let start = d.base + pos as u64;
            self.decode(out, i, &buf[pos..pos + n], start, true);
            let d = &mut self.dirs[i];
            d.buf = buf;
            d.pos = pos + n;
            if d.pos >= d.buf.len() {
                d.release(); // freed before more bytes come, when large
            }
        }
    }

    /// Bytes framed in place that must wait for more: copied into the (empty) buffer whole,
    /// with the position where framing stopped, as if they had been buffered on delivery.
    fn keep(&mut self, i: usize, ext: Option<&[u8]>) {
        if let Some(e) = ext {
            self.dirs[i].buf.extend_from_slice(e);
        }
    }

    /// Looks for a frame start; true (and framing mode) when one was found.
    fn try_resync(&mut self, out: &mut dyn Output, i: usize) -> bool {
        let (pos, avail, role, start) = {
            let d = &self.dirs[i];
            (d.pos, d.avail(), d.role, d.base + d.pos as u64)
        };
        let got = {
            let session = &mut self.session;
            let ctx = &mut self.ctx;
            let buf = &self.dirs[i].buf[pos..];
            shielded(|| session.resync(ctx, buf, role))
        };
        self.flush_reports(out);
        let at = match got {
            Ok(at) => at,
            Err(p) => {
                self.internal(out, &*p, "resync", i, start);
                self.dirs[i].skip_why =
                    format!("after an internal error in {}.resync", self.protocol);
                None
            }
        };
        match at {
            Some(rel) if rel < avail => {
                if rel > 0 {
                    self.skip(i, rel as u64);
                }
                self.resynced(out, i, false);
                let d = &mut self.dirs[i];
                d.mode = Mode::Framing;
                d.scanned = 0;
                true
            }
            _ => {
                let keep = avail.min(RESYNC_KEEP);
                if avail > keep {
                    self.skip(i, (avail - keep) as u64);
                }
                self.dirs[i].scanned = keep;
                false
            }
        }
    }

    fn decode(&mut self, out: &mut dyn Output, i: usize, data: &[u8], start: u64, complete: bool) {
        let role = self.dirs[i].role;
        let (first_packet, last_packet, ts_us) = self.span(i, start, start + data.len() as u64);
        let got = {
            let session = &mut self.session;
            let ctx = &mut self.ctx;
            shielded(|| session.decode(ctx, data, role, complete))
        };
        self.flush_reports(out);
        let frames = match got {
            Ok(frames) => frames,
            Err(p) => {
                // The bytes are a real frame (framing found it); wiredump failed to read them.
                let mut f = Frame::new(self.protocol, "?", -1);
                f.status = Status::Undecodable;
                f.summary = "not decoded: internal error (panic)".to_string();
                f.add(internal_error(
                    &*p,
                    "decode",
                    self.protocol,
                    &format!("the {} frame at stream offset {start}", role.as_str()),
                    Some(0),
                ));
                smallvec::smallvec![f.shared()]
            }
        };
        let count = frames.len();
        for (k, fr) in frames.into_iter().enumerate() {
            {
                let mut f = fr.borrow_mut();
                f.role = role;
                f.first_packet = first_packet;
                f.packet = last_packet;
                f.ts_us = ts_us;
                if f.length == 0 {
                    f.length = if count == 1 { data.len() as u64 } else { 0 };
                }
                if !complete && f.status == Status::Ok {
                    f.status = Status::Truncated;
                }
                if !complete && k == 0 {
                    f.add(
                        Anomaly::new("truncated", format!("frame cut after {} bytes", data.len()))
                            .at(Some(data.len() as u64)),
                    );
                }
                if self.keep_bytes && f.data.is_none() {
                    f.data = Some(data.to_vec()); // only when asked (`keep_bytes`)
                }
            }
            self.emit(out, fr);
        }
        self.ctx.correlator.drain_each(|ex| out.exchange(ex));
    }

    fn emit(&mut self, out: &mut dyn Output, fr: FrameRef) {
        {
            let ctx = &self.ctx;
            let mut f = fr.borrow_mut();
            f.stream = ctx.stream;
            if f.role == Role::Client {
                f.src = ctx.client.clone();
                f.src_port = ctx.client_port;
                f.dst = ctx.server.clone();
                f.dst_port = ctx.server_port;
            } else {
                f.src = ctx.server.clone();
                f.src_port = ctx.server_port;
                f.dst = ctx.client.clone();
                f.dst_port = ctx.client_port;
            }
            if f.packet == 0 {
                f.packet = self.last_packet;
                f.first_packet = self.last_packet;
            }
            let packet = f.packet;
            for a in f.anomalies.iter_mut() {
                if a.packet == 0 {
                    a.packet = packet;
                }
                a.stream = Some(ctx.stream);
                a.protocol = Some(self.protocol);
            }
        }
        self.frames += 1;
        out.frame(fr);
    }

    fn flush_partial(&mut self, out: &mut dyn Output, i: usize) {
        let (mode, has, scanned, skipped) = {
            let d = &self.dirs[i];
            (d.mode, d.buf.len() > d.pos, d.scanned, d.skipped)
        };
        if mode == Mode::Framing && has {
            let d = &mut self.dirs[i];
            let buf = std::mem::take(&mut d.buf);
            let from = d.pos;
            let start = d.base + from as u64;
            d.need = 0;
            self.decode(out, i, &buf[from..], start, false);
            let d = &mut self.dirs[i];
            d.buf = buf;
            d.pos = d.buf.len();
            d.release();
        } else if mode == Mode::Resync && has && scanned > 0 && self.try_resync(out, i) {
            self.run(out, i); // the frames in the bytes that had not been scanned yet
            self.flush_partial(out, i);
            return;
        } else if mode == Mode::Resync && has {
            let n = self.dirs[i].avail() as u64;
            self.skip(i, n);
            self.resynced(out, i, true);
        } else if mode == Mode::Resync && skipped > 0 {
            self.resynced(out, i, true);
        }
        self.dirs[i].chunks.clear();
    }

    fn call_close(&mut self, out: &mut dyn Output) -> Vec<FrameRef> {
        let got = {
            let session = &mut self.session;
            let ctx = &mut self.ctx;
            shielded(|| session.close(ctx))
        };
        self.flush_reports(out);
        match got {
            Ok(frames) => frames,
            Err(p) => {
                // Once per connection: reported even past MAX_INTERNAL_REPORTS.
                let a = internal_error(
                    &*p,
                    "close",
                    self.protocol,
                    "the end of the connection",
                    None,
                );
                self.report(out, a, None);
                Vec::new()
            }
        }
    }

    // -- bookkeeping ------------------------------------------------------------------------

    /// Sends out what the session reported during its last call (Python's synchronous
    /// `ctx.report`: before the frames and exchanges of that call).
    fn flush_reports(&mut self, out: &mut dyn Output) {
        if self.ctx.reports.is_empty() {
            return;
        }
        for a in std::mem::take(&mut self.ctx.reports) {
            self.report(out, a, None);
        }
    }

    fn internal(
        &mut self,
        out: &mut dyn Output,
        payload: &(dyn Any + Send),
        function: &str,
        i: usize,
        offset: u64,
    ) {
        let where_ = format!(
            "{} bytes at stream offset {offset}",
            self.dirs[i].role.as_str()
        );
        let a = internal_error(payload, function, self.protocol, &where_, None);
        let at = self.packet_at(i, offset);
        self.internal_errors += 1;
        if self.internal_errors <= MAX_INTERNAL_REPORTS {
            self.report(out, a, Some(at));
        }
    }

    fn skip(&mut self, i: usize, n: u64) {
        if self.dirs[i].skipped == 0 {
            let at = self.dirs[i].base + self.dirs[i].pos as u64;
            self.dirs[i].skip_from = self.packet_at(i, at);
        }
        let d = &mut self.dirs[i];
        d.skipped += n;
        d.pos += n as usize;
    }

    fn resynced(&mut self, out: &mut dyn Output, i: usize, ended: bool) {
        let d = &mut self.dirs[i];
        if d.skipped == 0 {
            return;
        }
        let where_ = if ended {
            "until the stream ended".to_string()
        } else {
            format!("resynchronised at stream offset {}", d.base + d.pos as u64)
        };
        let what = if d.skip_why.is_empty() {
            format!("that are not {} frames", self.protocol)
        } else {
            d.skip_why.clone()
        };
        let a = Anomaly::new(
            "resync",
            format!(
                "skipped {} {} bytes {what}; {where_}",
                d.skipped,
                d.role.as_str()
            ),
        );
        let from = d.skip_from;
        d.skipped = 0;
        d.skip_why.clear();
        self.report(out, a, Some(from));
    }

    fn report(&mut self, out: &mut dyn Output, mut a: Anomaly, packet: Option<u64>) {
        if a.packet == 0 {
            a.packet = match packet {
                Some(p) if p != 0 => p,
                _ => self.last_packet,
            };
        }
        a.stream = Some(self.ctx.stream);
        a.protocol = Some(self.protocol);
        out.anomaly(a);
    }

    fn packet_at(&self, i: usize, offset: u64) -> u64 {
        for &(end, packet, _) in &self.dirs[i].chunks {
            if offset < end {
                return packet;
            }
        }
        self.last_packet
    }

    fn span(&mut self, i: usize, start: u64, end: u64) -> (u64, u64, i64) {
        let chunks = &mut self.dirs[i].chunks;
        while chunks.len() > 1 && chunks[0].0 <= start {
            chunks.pop_front();
        }
        let Some(&(_, first, _)) = chunks.front() else {
            return (self.last_packet, self.last_packet, 0);
        };
        for &(c_end, packet, ts) in chunks.iter() {
            if end <= c_end {
                return (first, packet, ts);
            }
        }
        let &(_, p, ts) = chunks.back().expect("not empty");
        (first, p, ts)
    }
}

#[cfg(test)]
#[path = "framing_tests.rs"]
mod tests;
