//! TCP connection tracking and stream reassembly.
//!
//! A port of `wiredump/dissect/tcp.py` (the reference), event for event. Connections are
//! numbered in order of their first packet, and a SYN that reopens a finished 4-tuple starts a
//! new one, as Wireshark's `tcp.stream` does. Each direction turns segments into an in-order byte
//! stream: retransmitted bytes are dropped (conflicting ones reported), early segments wait in a
//! buffer bounded by `max_out_of_order` bytes, and bytes that never appear (capture loss, the
//! receiver acknowledged them) become a reported gap instead of a stall.
//!
//! What the reassembler makes of the segments leaves as [`TcpEvent`]s in the order the reference
//! calls its listener, so a consumer replaying them sees exactly what the Python listener sees.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::packet::{Addr, Segment, ACK, FIN, RST, SYN};

/// Delivered chunks remembered per direction to tell a faithful retransmission from a conflicting one.
const RECENT_CHUNKS: usize = 4;
/// Packets of a connection to wait, once the receiver acknowledged bytes the capture has not
/// shown, for those bytes to turn up anyway before calling them a gap.
const HOLE_GRACE_PACKETS: i64 = 8;

/// The client's direction (index into [`Conn::halves`]) and the server's.
pub const CLIENT: usize = 0;
pub const SERVER: usize = 1;

/// The role names the reference uses.
pub fn role_name(role: usize) -> &'static str {
    if role == CLIENT {
        "client"
    } else {
        "server"
    }
}

/// Signed distance a - b in 32-bit sequence space.
fn delta(a: u32, b: u32) -> i64 {
    a.wrapping_sub(b) as i32 as i64
}

/// What the reassembler reports, in the order the reference's listener is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpEvent {
    /// A new connection, with its endpoints as first taken (client: the SYN's sender, else by port).
    Open {
        stream: u64,
        client: Addr,
        client_port: u16,
        server: Addr,
        server_port: u16,
        first_ts_us: i64,
    },
    /// In-order bytes of one direction.
    Data {
        stream: u64,
        role: usize,
        data: Vec<u8>,
        packet: u64,
        ts_us: i64,
    },
    /// Bytes of one direction that will never come.
    Gap {
        stream: u64,
        role: usize,
        size: u64,
        packet: u64,
        ts_us: i64,
    },
    /// The connection's reassembly ended (its stats keep counting later packets).
    Close { stream: u64, last_ts_us: i64 },
    /// A packet of a connection whose reassembly ended (its time is the connection's last).
    Touch { stream: u64, ts_us: i64 },
    /// The connection's first SYN (detection may swap the roles only of one without).
    SawSyn { stream: u64 },
    /// The connection's state was dropped: `row` is final (see [`Reassembler::expire`]). The
    /// event carries the row because nothing of the connection is kept to read it from later.
    Release { stream: u64, row: ConnRow },
    /// Something the reader should know, at a packet.
    Anomaly {
        kind: &'static str,
        detail: String,
        packet: u64,
        stream: u64,
    },
}

#[derive(Debug, Clone)]
struct Held {
    seq: u32,
    data: Vec<u8>,
    missing: u64,
    packet: u64,
    ts_us: i64,
}

#[derive(Debug, Default)]
struct Half {
    next_raw: Option<u32>,
    delivered: i64,
    /// Held segments in insertion order (the reference's dict order decides which goes first).
    ooo: Vec<Held>,
    ooo_bytes: usize,
    recent: VecDeque<(i64, Vec<u8>)>,
    acked_raw: Option<u32>,
    /// The packet (and time) of the ACK that first covered bytes not seen yet.
    acked_packet: u64,
    acked_ts_us: i64,
    syn: bool,
    fin: bool,
    /// Sequence number of this direction's FIN: its data ends there.
    fin_raw: Option<u32>,
    bytes: u64,
}

impl Half {
    fn held_index(&self, seq: u32) -> Option<usize> {
        self.ooo.iter().position(|h| h.seq == seq)
    }

    /// Bytes of this direction the receiver acknowledged (or that precede its FIN) beyond what
    /// the capture delivered: tshark's "ACKed unseen segment". 0 when there are none.
    fn unseen(&self) -> u64 {
        let Some(next) = self.next_raw else { return 0 };
        let Some(end) = self.fin_raw.or(self.acked_raw) else {
            return 0;
        };
        delta(end, next).max(0) as u64
    }

    /// The receiver acknowledged bytes of this direction that the capture has not delivered.
    fn hole_open(&self) -> bool {
        self.unseen() > 0
    }
}

#[derive(Debug)]
struct Queued {
    role: usize,
    seq: u32,
    data: Vec<u8>,
    missing: u64,
    packet: u64,
    ts_us: i64,
}

/// What the connections table needs of reassembly, taken when a connection's state is dropped
/// (its roles as the reassembler had them then).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnRow {
    pub packets: u64,
    /// Payload bytes delivered by the client, by the server.
    pub bytes_client: u64,
    pub bytes_server: u64,
    pub gaps: u64,
    pub retransmissions: u64,
    pub first_ts_us: i64,
    pub last_ts_us: i64,
    pub last_packet: u64,
    /// "reset", "closed", "midstream" or "open".
    pub state: &'static str,
}

impl ConnRow {
    /// The row with client and server exchanged (the roles were swapped after it was taken).
    pub fn swapped(mut self) -> ConnRow {
        std::mem::swap(&mut self.bytes_client, &mut self.bytes_server);
        self
    }
}

/// One TCP connection still tracked: endpoints, counters and reassembly state.
#[derive(Debug)]
pub struct Conn {
    pub stream: u64,
    pub client: Addr,
    pub client_port: u16,
    pub server: Addr,
    pub server_port: u16,
    pub first_ts_us: i64,
    pub last_ts_us: i64,
    pub last_packet: u64,
    pub packets: u64,
    pub gaps: u64,
    pub retransmissions: u64,
    pub saw_syn: bool,
    pub reset: bool,
    pub finished: bool,
    /// Nobody reads this connection's bytes (see [`Reassembler::mute`]).
    mute: bool,
    halves: [Half; 2],
    hole: Option<usize>,
    hole_wait: i64,
    queued: Vec<Queued>,
    queued_bytes: usize,
}

impl Conn {
    /// Payload bytes delivered by the client, by the server.
    pub fn bytes(&self) -> (u64, u64) {
        (self.halves[CLIENT].bytes, self.halves[SERVER].bytes)
    }

    /// "reset", "closed", "midstream" or "open", as the connections table says.
    pub fn state(&self) -> &'static str {
        if self.reset {
            "reset"
        } else if self.halves[CLIENT].fin && self.halves[SERVER].fin {
            "closed"
        } else if !self.saw_syn {
            "midstream"
        } else {
            "open"
        }
    }

    /// The connection's row as it stands.
    pub fn row(&self) -> ConnRow {
        let (bytes_client, bytes_server) = self.bytes();
        ConnRow {
            packets: self.packets,
            bytes_client,
            bytes_server,
            gaps: self.gaps,
            retransmissions: self.retransmissions,
            first_ts_us: self.first_ts_us,
            last_ts_us: self.last_ts_us,
            last_packet: self.last_packet,
            state: self.state(),
        }
    }
}

/// Where events go, and the one limit reassembly needs.
struct Out<'a> {
    events: &'a mut Vec<TcpEvent>,
    max_ooo: usize,
    spare: &'a mut Vec<Vec<u8>>,
}

/// Delivered bytes' buffers kept for reuse at most (see [`Reassembler::give_back`]).
const SPARE_BUFFERS: usize = 256;
/// A buffer larger than this is not kept for reuse.
const SPARE_MAX: usize = 16 * 1024;

/// Keeps a delivered buffer for the next delivery: small ones, and a bounded number of them.
fn recycle(spare: &mut Vec<Vec<u8>>, buf: Vec<u8>) {
    if spare.len() < SPARE_BUFFERS && buf.capacity() <= SPARE_MAX {
        spare.push(buf);
    }
}

impl Out<'_> {
    /// `bytes` in a buffer of their own: one given back by the consumer when there is one.
    fn copy(&mut self, bytes: &[u8]) -> Vec<u8> {
        match self.spare.pop() {
            Some(mut v) => {
                v.clear();
                v.extend_from_slice(bytes);
                v
            }
            None => bytes.to_vec(),
        }
    }
}

impl Out<'_> {
    fn anomaly(&mut self, conn: &Conn, kind: &'static str, detail: String, packet: u64) {
        self.events.push(TcpEvent::Anomaly {
            kind,
            detail,
            packet,
            stream: conn.stream,
        });
    }
}

/// A 4-tuple as the table keys it (see [`canonical`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key(Addr, u16, Addr, u16);

impl std::hash::Hash for Key {
    /// Hashed as a few words (an IPv4 endpoint and its port in one), not field by field: the
    /// derived hash feeds the hasher eight pieces per segment (two enum tags, two lengths).
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        fn endpoint<H: std::hash::Hasher>(a: &Addr, port: u16, h: &mut H) {
            match a {
                Addr::V4(b) => {
                    h.write_u64(u64::from(u32::from_be_bytes(*b)) << 16 | u64::from(port))
                }
                Addr::V6(b) => {
                    h.write_u128(u128::from_be_bytes(*b));
                    h.write_u16(port);
                }
            }
        }
        endpoint(&self.0, self.1, h);
        endpoint(&self.2, self.3, h);
    }
}

/// The table's key of a 4-tuple: its two endpoints in one order whichever sent the segment, so
/// that one lookup finds a connection from either direction. The reference looks the tuple up
/// as sent, then reversed; at most one of the two is ever in the table (a connection is opened
/// only when neither is, and a reopened one replaces the one released), so one canonical key
/// finds the same connection.
fn canonical(a: Addr, a_port: u16, b: Addr, b_port: u16) -> Key {
    if (a, a_port) <= (b, b_port) {
        Key(a, a_port, b, b_port)
    } else {
        Key(b, b_port, a, a_port)
    }
}

/// Streams in the order they were last touched (Python's `OrderedDict` with `move_to_end`).
#[derive(Debug, Default)]
struct Order {
    by_tick: BTreeMap<u64, u64>,
    tick_of: HashMap<u64, u64, ahash::RandomState>,
    next: u64,
}

impl Order {
    /// Insert at the end, or move there.
    fn touch(&mut self, stream: u64) {
        if let Some(t) = self.tick_of.remove(&stream) {
            self.by_tick.remove(&t);
        }
        self.by_tick.insert(self.next, stream);
        self.tick_of.insert(stream, self.next);
        self.next += 1;
    }

    fn contains(&self, stream: u64) -> bool {
        self.tick_of.contains_key(&stream)
    }

    fn remove(&mut self, stream: u64) {
        if let Some(t) = self.tick_of.remove(&stream) {
            self.by_tick.remove(&t);
        }
    }

    fn first(&self) -> Option<u64> {
        self.by_tick.values().next().copied()
    }

    fn is_empty(&self) -> bool {
        self.tick_of.is_empty()
    }
}

/// When the reassembler lets go of a connection's state (the reference's `Limits`).
#[derive(Debug, Clone, Copy)]
pub struct Retention {
    /// Connections tracked at once; past this the oldest quiet one is released.
    pub max_connections: usize,
    /// Capture time after which a connection that never carried payload is released.
    pub half_open_us: i64,
    /// Capture time a closed or reset connection is kept after its last packet.
    pub closed_linger_us: i64,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            max_connections: 65_536,
            half_open_us: 60_000_000,
            closed_linger_us: 10_000_000,
        }
    }
}

/// Feeds every TCP segment of a capture; reports in-order bytes, gaps and anomalies as events.
///
/// Only connections still tracked are held (at most `Retention::max_connections`): a released
/// one leaves its row in its `Release` event and nothing of it stays, so memory is bounded by
/// the retention limits, not by the number of connections a capture holds.
pub struct Reassembler {
    max_out_of_order: usize,
    server_ports: Vec<u16>,
    /// 4-tuple (client first) → stream of the connection tracked on it.
    connections: HashMap<Key, u64, ahash::RandomState>,
    /// The table's keys in insertion order (the reference's dict order, for eviction).
    table: Order,
    /// The connections tracked, by stream. Boxed: the table's slots stay small (16 bytes, not
    /// the 416 of a `Conn`), so that growing or rehashing it under a flood of short connections
    /// moves and leaves behind little memory.
    live: HashMap<u64, Box<Conn>, ahash::RandomState>,
    /// The stream number the next connection gets.
    next_stream: u64,
    retention: Retention,
    /// Connections that never carried payload, least recently active first.
    quiet: Order,
    /// Finished (closed or reset) connections, least recently active first.
    closed: Order,
    /// Connections released after `half_open_us` without a byte of payload.
    pub half_open_released: u64,
    /// Connections released early because `max_connections` were tracked at once.
    pub evicted: u64,
    /// Events not yet taken.
    pub events: Vec<TcpEvent>,
    /// Buffers of `Data` events given back once read, reused for the next deliveries: a
    /// capture of many small segments would otherwise allocate and free one per segment.
    spare: Vec<Vec<u8>>,
}

impl Reassembler {
    pub fn new(max_out_of_order: usize, mut server_ports: Vec<u16>) -> Self {
        server_ports.sort_unstable();
        server_ports.dedup();
        Reassembler {
            max_out_of_order,
            server_ports,
            connections: HashMap::default(),
            table: Order::default(),
            live: HashMap::default(),
            next_stream: 0,
            retention: Retention::default(),
            quiet: Order::default(),
            closed: Order::default(),
            half_open_released: 0,
            evicted: 0,
            events: Vec::new(),
            spare: Vec::new(),
        }
    }

    /// The connection's bytes are read by nobody (another worker decodes it, and no state it
    /// could teach is shared): they are counted, but neither copied into `Data` events nor
    /// kept to tell retransmissions apart (the anomalies that tell it are the other worker's).
    pub fn mute(&mut self, stream: u64) {
        if let Some(c) = self.live.get_mut(&stream) {
            c.mute = true;
        }
    }

    /// The buffer of a `Data` event read and done with, for the next delivery (small ones
    /// only, and a bounded number of them).
    pub fn give_back(&mut self, buf: Vec<u8>) {
        recycle(&mut self.spare, buf);
    }

    /// Sets when connections are let go of (before the first segment).
    pub fn set_retention(&mut self, retention: Retention) {
        self.retention = retention;
    }

    /// Flush the connection, drop its state, report its row final.
    fn release(&mut self, stream: u64) {
        let Some(mut conn) = self.live.remove(&stream) else {
            // Released already; never left in an order, where expiry would wait on it forever.
            self.quiet.remove(stream);
            self.closed.remove(stream);
            return;
        };
        let mut out = Out {
            events: &mut self.events,
            max_ooo: self.max_out_of_order,
            spare: &mut self.spare,
        };
        finish_conn(&mut conn, &mut out);
        let key = canonical(conn.client, conn.client_port, conn.server, conn.server_port);
        if self.connections.get(&key) == Some(&stream) {
            self.connections.remove(&key);
            self.table.remove(stream);
        }
        self.quiet.remove(stream);
        self.closed.remove(stream);
        self.events.push(TcpEvent::Release {
            stream,
            row: conn.row(),
        });
    }

    /// Too many connections tracked: release the least recently active finished one, else the
    /// least recently active one without payload, else the oldest.
    fn evict(&mut self) {
        let victim = self
            .closed
            .first()
            .or_else(|| self.quiet.first())
            .or_else(|| self.table.first());
        if let Some(stream) = victim {
            self.evicted += 1;
            self.release(stream);
        }
    }

    /// Release what has been quiet long enough at capture time `now_us`.
    pub fn expire(&mut self, now_us: i64) {
        if !self.closed.is_empty() {
            let limit = now_us.saturating_sub(self.retention.closed_linger_us);
            while let Some(s) = self.closed.first() {
                if self.live.get(&s).is_some_and(|c| c.last_ts_us >= limit) {
                    break;
                }
                self.release(s);
            }
        }
        if !self.quiet.is_empty() {
            let limit = now_us.saturating_sub(self.retention.half_open_us);
            while let Some(s) = self.quiet.first() {
                if self.live.get(&s).is_some_and(|c| c.last_ts_us >= limit) {
                    break;
                }
                self.half_open_released += 1;
                self.release(s);
            }
        }
    }

    /// A connection still tracked, by stream number (None once released).
    pub fn conn(&self, stream: u64) -> Option<&Conn> {
        self.live.get(&stream).map(|c| &**c)
    }

    /// How many connections are tracked now.
    pub fn tracked(&self) -> usize {
        self.live.len()
    }

    fn is_server_port(&self, p: u16) -> bool {
        self.server_ports.binary_search(&p).is_ok()
    }

    fn open(&mut self, seg: &Segment<'_>, ts_us: i64) -> u64 {
        let client_is_src = if seg.flags & SYN != 0 {
            seg.flags & ACK == 0
        } else if self.is_server_port(seg.dport) && !self.is_server_port(seg.sport) {
            true
        } else if self.is_server_port(seg.sport) && !self.is_server_port(seg.dport) {
            false
        } else {
            seg.sport >= seg.dport
        };
        let (client, client_port, server, server_port) = if client_is_src {
            (seg.src, seg.sport, seg.dst, seg.dport)
        } else {
            (seg.dst, seg.dport, seg.src, seg.sport)
        };
        let stream = self.next_stream;
        self.next_stream += 1;
        let conn = Conn {
            stream,
            client,
            client_port,
            server,
            server_port,
            first_ts_us: ts_us,
            last_ts_us: 0,
            last_packet: 0,
            packets: 0,
            gaps: 0,
            retransmissions: 0,
            saw_syn: false,
            reset: false,
            finished: false,
            mute: false,
            halves: [Half::default(), Half::default()],
            hole: None,
            hole_wait: 0,
            queued: Vec::new(),
            queued_bytes: 0,
        };
        self.live.insert(stream, Box::new(conn));
        self.connections
            .insert(canonical(client, client_port, server, server_port), stream);
        self.table.touch(stream);
        self.quiet.touch(stream);
        self.events.push(TcpEvent::Open {
            stream,
            client,
            client_port,
            server,
            server_port,
            first_ts_us: ts_us,
        });
        stream
    }

    /// A bare SYN on a known 4-tuple is a new connection unless it retransmits the first SYN.
    fn reopens(conn: &Conn, seg: &Segment<'_>) -> bool {
        if conn.reset || conn.halves[CLIENT].fin || conn.halves[SERVER].fin {
            return true;
        }
        let role = if seg.src == conn.client && seg.sport == conn.client_port {
            CLIENT
        } else {
            SERVER
        };
        let half = &conn.halves[role];
        half.syn
            && half
                .next_raw
                .is_some_and(|n| delta(seg.seq.wrapping_add(1), n) != 0)
            && half.delivered > 0
    }

    /// The connection the segment belongs to (opened when there is none).
    fn lookup(&mut self, seg: &Segment<'_>, ts_us: i64) -> u64 {
        let mut found = self
            .connections
            .get(&canonical(seg.src, seg.sport, seg.dst, seg.dport))
            .copied();
        if let Some(ci) = found {
            if seg.flags & SYN != 0
                && seg.flags & ACK == 0
                && self.live.get(&ci).is_some_and(|c| Self::reopens(c, seg))
            {
                self.release(ci);
                found = None;
            }
        }
        match found {
            Some(ci) => ci,
            None => {
                if self.connections.len() >= self.retention.max_connections {
                    self.evict(); // before the new one joins: it is never the one released
                }
                self.open(seg, ts_us)
            }
        }
    }

    /// Make the side taken for the server the client (detection found the other side sends the
    /// requests), as `TcpReassembler.swap_roles` does: the table stays keyed by (client, server).
    pub fn swap_roles(&mut self, stream: u64) {
        let Some(conn) = self.live.get_mut(&stream) else {
            return; // released: its row was taken with the roles it had (see `ConnRow::swapped`)
        };
        // The key is the same either way round (see `canonical`).
        let key = canonical(conn.client, conn.client_port, conn.server, conn.server_port);
        let mine = self.connections.get(&key) == Some(&stream);
        std::mem::swap(&mut conn.client, &mut conn.server);
        std::mem::swap(&mut conn.client_port, &mut conn.server_port);
        conn.halves.swap(CLIENT, SERVER);
        conn.hole = conn.hole.map(|h| 1 - h);
        for q in conn.queued.iter_mut() {
            q.role = 1 - q.role;
        }
        if mine {
            self.table.touch(stream); // re-keyed: the reference's dict puts it last
        }
    }

    /// One captured TCP segment.
    pub fn segment(&mut self, seg: &Segment<'_>, packet: u64, ts_us: i64) {
        let stream = self.lookup(seg, ts_us);
        let conn = self.live.get_mut(&stream).expect("looked up: tracked");
        let role = if seg.src == conn.client && seg.sport == conn.client_port {
            CLIENT
        } else {
            SERVER
        };
        if conn.finished {
            if self.closed.contains(stream) {
                self.closed.touch(stream);
            }
        } else if self.quiet.contains(stream) {
            if !seg.payload.is_empty() || seg.missing != 0 {
                self.quiet.remove(stream); // it carries data: kept until it closes
            } else {
                self.quiet.touch(stream);
            }
        }
        let was_finished = conn.finished;
        let mut out = Out {
            events: &mut self.events,
            max_ooo: self.max_out_of_order,
            spare: &mut self.spare,
        };
        segment_conn(conn, role, seg, packet, ts_us, &mut out);
        if !was_finished && conn.finished {
            self.quiet.remove(stream);
            self.closed.touch(stream);
        }
    }

    /// End of capture: flush every connection still open and release them all, in stream order.
    pub fn finish(&mut self) {
        let mut open: Vec<u64> = self.connections.values().copied().collect();
        open.sort_unstable();
        for stream in open {
            self.release(stream);
        }
    }
}

fn segment_conn(
    conn: &mut Conn,
    role: usize,
    seg: &Segment<'_>,
    packet: u64,
    ts_us: i64,
    out: &mut Out<'_>,
) {
    let other = 1 - role;
    conn.packets += 1;
    conn.last_ts_us = ts_us;
    conn.last_packet = packet;
    let flags = seg.flags;
    if flags & SYN != 0 {
        if !conn.saw_syn {
            out.events.push(TcpEvent::SawSyn {
                stream: conn.stream,
            });
        }
        conn.saw_syn = true;
        let half = &mut conn.halves[role];
        if half.next_raw.is_none() || !half.syn {
            half.syn = true;
            if half.delivered == 0 && half.ooo.is_empty() {
                half.next_raw = Some(seg.seq.wrapping_add(1));
            }
        }
    }
    if flags & ACK != 0 {
        let o = &mut conn.halves[other];
        if o.next_raw.is_some() && o.acked_raw.is_none_or(|a| delta(seg.ack, a) > 0) {
            if o.unseen() == 0 {
                o.acked_packet = packet;
                o.acked_ts_us = ts_us;
            }
            o.acked_raw = Some(seg.ack);
        }
    }
    if conn.finished {
        out.events.push(TcpEvent::Touch {
            stream: conn.stream,
            ts_us,
        });
        return;
    }
    if conn.hole.is_some() {
        conn.hole_wait -= 1;
        if conn.hole_wait <= 0 {
            give_up(conn, out);
        }
    }
    // The peer's bytes this packet acknowledges were received before it was sent: a hole it
    // reveals is dealt with before this packet's own data goes up.
    if conn.halves[other].acked_raw.is_some() && conn.halves[other].hole_open() {
        await_hole(conn, other);
    }
    let payload = seg.payload;
    let missing = seg.missing as u64;
    if !payload.is_empty() || missing != 0 {
        let seq = if flags & SYN != 0 {
            seg.seq.wrapping_add(1)
        } else {
            seg.seq
        };
        match conn.hole {
            Some(h) if h != role => {
                // The peer's data waits until the acknowledged bytes turn up or are given up.
                conn.queued.push(Queued {
                    role,
                    seq,
                    data: payload.to_vec(),
                    missing,
                    packet,
                    ts_us,
                });
                conn.queued_bytes += payload.len();
                if conn.queued_bytes > out.max_ooo {
                    give_up(conn, out);
                }
            }
            hole => {
                if hole.is_some() {
                    let half = &conn.halves[role];
                    if delta(seq, half.next_raw.unwrap_or(0)) > 0 && half.held_index(seq).is_none()
                    {
                        give_up(conn, out); // the sender moved on past the hole: it is lost
                    }
                }
                let bytes = out.copy(payload);
                data(conn, role, seq, bytes, missing, packet, ts_us, out);
                if conn.hole == Some(role) && !conn.halves[role].hole_open() {
                    resume(conn, out); // the acknowledged bytes turned up late
                }
            }
        }
    }
    if conn.hole.is_some() && (flags & RST != 0 || (flags & FIN != 0 && conn.hole == Some(role))) {
        give_up(conn, out); // nothing more will come
    }
    if flags & RST != 0 {
        conn.reset = true;
        finish_conn(conn, out);
    } else if flags & FIN != 0 {
        conn.halves[role].fin = true;
        if conn.halves[role].fin_raw.is_none() {
            let half = &mut conn.halves[role];
            let known = half.unseen(); // already revealed by an ACK: reported at that ACK
            half.fin_raw = Some(seg.seq.wrapping_add(payload.len() as u32));
            if half.unseen() > 0 && conn.hole.is_none() {
                // The FIN's sequence number says bytes before it were sent that the capture lacks.
                if known == 0 {
                    half.acked_packet = packet;
                    half.acked_ts_us = ts_us;
                }
                await_hole(conn, role);
                if conn.halves[role].ooo.is_empty() {
                    give_up(conn, out); // nothing more of this direction is coming
                }
            }
        }
        if !conn.halves[role].ooo.is_empty() {
            flush_ooo(conn, role, packet, ts_us, "connection ended", out);
        }
        if conn.halves[CLIENT].fin && conn.halves[SERVER].fin {
            finish_conn(conn, out);
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn data(
    conn: &mut Conn,
    role: usize,
    mut seq: u32,
    mut bytes: Vec<u8>,
    mut missing: u64,
    packet: u64,
    ts_us: i64,
    out: &mut Out<'_>,
) {
    let half = &mut conn.halves[role];
    let next = *half.next_raw.get_or_insert(seq); // capture started mid-connection
    let total = bytes.len() as i64 + missing as i64;
    let mut d = delta(seq, next);
    if d < 0 {
        let end = d + total;
        let offset = half.delivered + d;
        conn.retransmissions += 1;
        if end <= 0 {
            retransmission(conn, role, offset, &bytes, packet, true, out);
            return;
        }
        let cut = ((-d) as usize).min(bytes.len());
        retransmission(conn, role, offset, &bytes[..cut], packet, false, out);
        bytes.drain(..cut);
        missing = (total + d - bytes.len() as i64) as u64;
        seq = next;
        d = 0;
    }
    if d > 0 {
        hold(conn, role, seq, bytes, missing, packet, ts_us, out);
        return;
    }
    deliver(conn, role, bytes, missing, packet, ts_us, out);
    if !conn.halves[role].ooo.is_empty() {
        drain_ooo(conn, role, packet, ts_us, false, out);
    }
}

fn deliver(
    conn: &mut Conn,
    role: usize,
    bytes: Vec<u8>,
    missing: u64,
    packet: u64,
    ts_us: i64,
    out: &mut Out<'_>,
) {
    if !bytes.is_empty() {
        let (mute, stream) = (conn.mute, conn.stream);
        let half = &mut conn.halves[role];
        let n = bytes.len();
        if !mute {
            // The oldest chunk's memory is reused for the newest when it fits without holding
            // much more than the chunk needs.
            let oldest = if half.recent.len() >= RECENT_CHUNKS {
                half.recent.pop_front().map(|(_, v)| v)
            } else {
                None
            };
            let copy = match oldest {
                Some(mut v) if v.capacity() >= n && v.capacity() <= n.max(1024) * 2 => {
                    v.clear();
                    v.extend_from_slice(&bytes);
                    v
                }
                _ => bytes.clone(),
            };
            half.recent.push_back((half.delivered, copy));
        }
        half.bytes += n as u64;
        half.delivered += n as i64;
        half.next_raw = Some(half.next_raw.unwrap_or(0).wrapping_add(n as u32));
        if mute {
            recycle(out.spare, bytes); // counted, read by nobody
        } else {
            out.events.push(TcpEvent::Data {
                stream,
                role,
                data: bytes,
                packet,
                ts_us,
            });
        }
    }
    if missing != 0 {
        gap(
            conn,
            role,
            missing,
            packet,
            ts_us,
            "bytes beyond the capture's snap length",
            out,
        );
    }
}

fn gap(
    conn: &mut Conn,
    role: usize,
    size: u64,
    packet: u64,
    ts_us: i64,
    why: &str,
    out: &mut Out<'_>,
) {
    conn.gaps += 1;
    let half = &mut conn.halves[role];
    let detail = format!(
        "{size} {} bytes missing at stream offset {} ({why})",
        role_name(role),
        half.delivered
    );
    half.delivered += size as i64;
    half.next_raw = Some(half.next_raw.unwrap_or(0).wrapping_add(size as u32));
    out.anomaly(conn, "gap", detail, packet);
    out.events.push(TcpEvent::Gap {
        stream: conn.stream,
        role,
        size,
        packet,
        ts_us,
    });
}

fn retransmission(
    conn: &Conn,
    role: usize,
    offset: i64,
    bytes: &[u8],
    packet: u64,
    full: bool,
    out: &mut Out<'_>,
) {
    let half = &conn.halves[role];
    let mut conflict = None;
    for (start, chunk) in &half.recent {
        let lo = (*start).max(offset);
        let hi = (start + chunk.len() as i64).min(offset + bytes.len() as i64);
        if lo < hi
            && chunk[(lo - start) as usize..(hi - start) as usize]
                != bytes[(lo - offset) as usize..(hi - offset) as usize]
        {
            conflict = Some(lo);
            break;
        }
    }
    let r = role_name(role);
    let (kind, detail) = match conflict {
        Some(at) => (
            "overlap_conflict",
            format!("retransmitted {r} bytes differ from the first copy at stream offset {at}; first copy kept"),
        ),
        None => (
            "retransmission",
            format!(
                "{}retransmission of {} {r} bytes at stream offset {offset}",
                if full { "" } else { "partial " },
                bytes.len()
            ),
        ),
    };
    out.anomaly(conn, kind, detail, packet);
}

#[allow(clippy::too_many_arguments)]
fn hold(
    conn: &mut Conn,
    role: usize,
    seq: u32,
    bytes: Vec<u8>,
    missing: u64,
    packet: u64,
    ts_us: i64,
    out: &mut Out<'_>,
) {
    let r = role_name(role);
    let idx = conn.halves[role].held_index(seq);
    if let Some(i) = idx {
        conn.retransmissions += 1;
        let old = &conn.halves[role].ooo[i].data;
        let n = old.len().min(bytes.len());
        let kind = if old[..n] == bytes[..n] {
            "retransmission"
        } else {
            "overlap_conflict"
        };
        let old_len = old.len();
        out.anomaly(
            conn,
            kind,
            format!("{r} segment at seq {seq} seen twice before its turn"),
            packet,
        );
        if old_len >= bytes.len() {
            return;
        }
        conn.halves[role].ooo_bytes -= old_len;
    } else {
        let ahead = delta(seq, conn.halves[role].next_raw.unwrap_or(0));
        out.anomaly(
            conn,
            "out_of_order",
            format!("{r} segment {ahead} bytes ahead of the expected sequence; held"),
            packet,
        );
    }
    let half = &mut conn.halves[role];
    let n = bytes.len();
    let held = Held {
        seq,
        data: bytes,
        missing,
        packet,
        ts_us,
    };
    match idx {
        Some(i) => half.ooo[i] = held,
        None => half.ooo.push(held),
    }
    half.ooo_bytes += n;
    if half.ooo_bytes > out.max_ooo {
        if conn.hole == Some(role) {
            conn.hole = None;
        }
        flush_ooo(conn, role, packet, ts_us, "out-of-order buffer full", out);
        if conn.hole.is_none() && !conn.queued.is_empty() {
            replay(conn, out);
        }
    } else if conn.halves[role].hole_open() {
        await_hole(conn, role);
    }
}

/// Deliver the held segments that now fit; with `own`, each keeps the packet and time it was
/// captured in (the hole was given up), else they complete at the packet that filled the hole.
fn drain_ooo(
    conn: &mut Conn,
    role: usize,
    mut packet: u64,
    mut ts_us: i64,
    own: bool,
    out: &mut Out<'_>,
) {
    loop {
        let half = &mut conn.halves[role];
        if half.ooo.is_empty() {
            return;
        }
        let next = half.next_raw.unwrap_or(0);
        let Some(i) = half.ooo.iter().position(|h| delta(h.seq, next) <= 0) else {
            return;
        };
        let held = half.ooo.remove(i);
        half.ooo_bytes -= held.data.len();
        if own {
            packet = held.packet;
            ts_us = held.ts_us;
        }
        let d = delta(held.seq, next);
        let len = held.data.len() as i64;
        if d + len + held.missing as i64 <= 0 {
            continue;
        }
        if -d >= len {
            deliver(
                conn,
                role,
                Vec::new(),
                (held.missing as i64 + d + len) as u64,
                packet,
                ts_us,
                out,
            );
        } else {
            let mut bytes = held.data;
            bytes.drain(..(-d) as usize);
            deliver(conn, role, bytes, held.missing, packet, ts_us, out);
        }
    }
}

/// Give up waiting: skip to the earliest held segment, report the hole at the packet that carried
/// the bytes after it, deliver what follows.
fn flush_ooo(conn: &mut Conn, role: usize, packet: u64, ts_us: i64, why: &str, out: &mut Out<'_>) {
    while !conn.halves[role].ooo.is_empty() {
        let half = &conn.halves[role];
        let next = half.next_raw.unwrap_or(0);
        let mut best = 0;
        for (i, h) in half.ooo.iter().enumerate() {
            if delta(h.seq, next) < delta(half.ooo[best].seq, next) {
                best = i;
            }
        }
        let first = &half.ooo[best];
        let d = delta(first.seq, next);
        if d > 0 {
            let (hp, ht) = (first.packet, first.ts_us);
            gap(conn, role, d as u64, hp, ht, why, out);
        }
        drain_ooo(conn, role, packet, ts_us, true, out);
    }
}

/// Start waiting a few packets for the acknowledged bytes (one hole per connection).
fn await_hole(conn: &mut Conn, role: usize) {
    if conn.hole.is_none() {
        conn.hole = Some(role);
        conn.hole_wait = HOLE_GRACE_PACKETS;
    }
}

/// The acknowledged bytes are lost: report the gap, deliver what waited behind it.
fn give_up(conn: &mut Conn, out: &mut Out<'_>) {
    let hole = conn.hole.take();
    conn.hole_wait = 0;
    if let Some(role) = hole {
        if !conn.halves[role].ooo.is_empty() {
            let (p, t) = (conn.last_packet, conn.last_ts_us);
            flush_ooo(
                conn,
                role,
                p,
                t,
                "the receiver acknowledged bytes the capture lacks",
                out,
            );
        }
        unseen_gap(conn, role, out);
    }
    replay(conn, out);
}

/// Report acknowledged bytes that nothing captured follows (nothing is held behind them) at the
/// ACK (or FIN) that revealed them, as tshark flags "ACKed unseen segment".
fn unseen_gap(conn: &mut Conn, role: usize, out: &mut Out<'_>) {
    let half = &conn.halves[role];
    let n = half.unseen();
    if n > 0 && half.ooo.is_empty() {
        let mut why = "the receiver acknowledged bytes the capture lacks";
        if let Some(fin) = half.fin_raw {
            if half.acked_raw.is_none_or(|a| delta(a, fin) <= 0) {
                why = "the sender's FIN comes after bytes the capture lacks";
            }
        }
        let packet = if half.acked_packet != 0 {
            half.acked_packet
        } else {
            conn.last_packet
        };
        let ts = half.acked_ts_us;
        gap(conn, role, n, packet, ts, why, out);
    }
}

fn resume(conn: &mut Conn, out: &mut Out<'_>) {
    conn.hole = None;
    conn.hole_wait = 0;
    replay(conn, out);
}

/// Feed the peer's queued segments, in capture order, with their own packets and times.
fn replay(conn: &mut Conn, out: &mut Out<'_>) {
    let queued = std::mem::take(&mut conn.queued);
    conn.queued_bytes = 0;
    for q in queued {
        data(
            conn, q.role, q.seq, q.data, q.missing, q.packet, q.ts_us, out,
        );
    }
}

fn finish_conn(conn: &mut Conn, out: &mut Out<'_>) {
    if conn.finished {
        return;
    }
    if conn.hole.is_some() || !conn.queued.is_empty() {
        give_up(conn, out);
    }
    for role in [CLIENT, SERVER] {
        if !conn.halves[role].ooo.is_empty() {
            let (p, t) = (conn.last_packet, conn.last_ts_us);
            flush_ooo(conn, role, p, t, "connection ended", out);
        }
        unseen_gap(conn, role, out);
        conn.halves[role].recent = VecDeque::new();
        conn.halves[role].ooo = Vec::new();
    }
    conn.queued = Vec::new();
    conn.finished = true;
    out.events.push(TcpEvent::Close {
        stream: conn.stream,
        last_ts_us: conn.last_ts_us,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: Addr = Addr::V4([10, 0, 0, 1]);
    const S: Addr = Addr::V4([10, 0, 0, 2]);

    fn seg(
        from_client: bool,
        seq: u32,
        ack: u32,
        flags: u8,
        payload: &'static [u8],
    ) -> Segment<'static> {
        let (src, dst, sport, dport) = if from_client {
            (C, S, 40000, 9092)
        } else {
            (S, C, 9092, 40000)
        };
        Segment {
            src,
            dst,
            sport,
            dport,
            seq,
            ack,
            flags,
            payload,
            missing: 0,
        }
    }

    fn run(segs: &[Segment<'static>]) -> (Vec<TcpEvent>, Reassembler) {
        let mut r = Reassembler::new(1 << 20, vec![9092]);
        for (i, s) in segs.iter().enumerate() {
            r.segment(s, i as u64 + 1, (i as i64 + 1) * 1000);
        }
        r.finish();
        (std::mem::take(&mut r.events), r)
    }

    fn handshake() -> Vec<Segment<'static>> {
        vec![
            seg(true, 1000, 0, SYN, b""),
            seg(false, 5000, 1001, SYN | ACK, b""),
            seg(true, 1001, 5001, ACK, b""),
        ]
    }

    fn data_of(evs: &[TcpEvent], want_role: usize) -> Vec<(Vec<u8>, u64)> {
        evs.iter()
            .filter_map(|e| match e {
                TcpEvent::Data {
                    role, data, packet, ..
                } if *role == want_role => Some((data.clone(), *packet)),
                _ => None,
            })
            .collect()
    }

    /// The rows the Release events carry, by stream.
    fn rows(evs: &[TcpEvent]) -> Vec<(u64, ConnRow)> {
        evs.iter()
            .filter_map(|e| match e {
                TcpEvent::Release { stream, row } => Some((*stream, row.clone())),
                _ => None,
            })
            .collect()
    }

    /// (client port, server port) of each connection opened.
    fn opened(evs: &[TcpEvent]) -> Vec<(u16, u16)> {
        evs.iter()
            .filter_map(|e| match e {
                TcpEvent::Open {
                    client_port,
                    server_port,
                    ..
                } => Some((*client_port, *server_port)),
                _ => None,
            })
            .collect()
    }

    fn kinds(evs: &[TcpEvent]) -> Vec<&'static str> {
        evs.iter()
            .filter_map(|e| {
                if let TcpEvent::Anomaly { kind, .. } = e {
                    Some(*kind)
                } else {
                    None
                }
            })
            .collect()
    }

    #[test]
    fn in_order_roles_and_close() {
        let mut s = handshake();
        s.push(seg(true, 1001, 5001, ACK, b"hello"));
        s.push(seg(false, 5001, 1006, ACK, b"world"));
        s.push(seg(true, 1006, 5006, FIN | ACK, b""));
        s.push(seg(false, 5006, 1007, FIN | ACK, b""));
        let (evs, r) = run(&s);
        assert_eq!(data_of(&evs, CLIENT), vec![(b"hello".to_vec(), 4)]);
        assert_eq!(data_of(&evs, SERVER), vec![(b"world".to_vec(), 5)]);
        assert_eq!(opened(&evs), vec![(40000, 9092)]);
        let rows = rows(&evs);
        assert_eq!(rows.len(), 1);
        let (stream, c) = &rows[0];
        assert_eq!(
            (
                *stream,
                c.state,
                c.packets,
                c.bytes_client,
                c.bytes_server,
                c.first_ts_us,
                c.last_ts_us,
                c.last_packet
            ),
            (0, "closed", 7, 5, 5, 1000, 7000, 7)
        );
        assert!(r.conn(0).is_none() && r.tracked() == 0); // released at the end: nothing kept
        assert_eq!(
            evs.iter()
                .filter(|e| matches!(e, TcpEvent::Close { .. }))
                .count(),
            1
        );
        assert!(kinds(&evs).is_empty());
    }

    #[test]
    fn out_of_order_completes_at_the_late_packet() {
        let mut s = handshake();
        s.push(seg(true, 1004, 5001, ACK, b"def")); // 3 bytes ahead: held
        s.push(seg(true, 1001, 5001, ACK, b"abc")); // fills the hole
        let (evs, _) = run(&s);
        assert_eq!(
            data_of(&evs, CLIENT),
            vec![(b"abc".to_vec(), 5), (b"def".to_vec(), 5)]
        );
        let detail = evs.iter().find_map(|e| match e {
            TcpEvent::Anomaly {
                kind: "out_of_order",
                detail,
                packet,
                ..
            } => Some((detail.clone(), *packet)),
            _ => None,
        });
        assert_eq!(
            detail,
            Some((
                "client segment 3 bytes ahead of the expected sequence; held".into(),
                4
            ))
        );
    }

    #[test]
    fn retransmissions_exact_partial_and_conflicting() {
        let mut s = handshake();
        s.push(seg(true, 1001, 5001, ACK, b"abcd"));
        s.push(seg(true, 1001, 5001, ACK, b"abcd")); // exact copy
        s.push(seg(true, 1003, 5001, ACK, b"cdef")); // 2 old bytes, 2 new
        s.push(seg(true, 1001, 5001, ACK, b"XY")); // differs from the first copy
        let (evs, _) = run(&s);
        assert_eq!(
            data_of(&evs, CLIENT),
            vec![(b"abcd".to_vec(), 4), (b"ef".to_vec(), 6)]
        );
        let details: Vec<String> = evs
            .iter()
            .filter_map(|e| {
                if let TcpEvent::Anomaly { detail, .. } = e {
                    Some(detail.clone())
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(
            details,
            vec![
                "retransmission of 4 client bytes at stream offset 0".to_string(),
                "partial retransmission of 2 client bytes at stream offset 2".to_string(),
                "retransmitted client bytes differ from the first copy at stream offset 0; first copy kept".to_string(),
            ]
        );
        assert_eq!(rows(&evs)[0].1.retransmissions, 3);
    }

    #[test]
    fn acknowledged_hole_becomes_a_gap_at_the_held_packet() {
        let mut s = handshake();
        s.push(seg(true, 1011, 5001, ACK, b"later")); // 10 bytes never seen before it
        s.push(seg(false, 5001, 1016, ACK, b"")); // the server acknowledges all 15
        for _ in 0..8 {
            s.push(seg(false, 5001, 1016, ACK, b""));
        }
        let (evs, _) = run(&s);
        let gap = evs.iter().find_map(|e| match e {
            TcpEvent::Gap { size, packet, .. } => Some((*size, *packet)),
            _ => None,
        });
        assert_eq!(gap, Some((10, 4)));
        assert_eq!(data_of(&evs, CLIENT), vec![(b"later".to_vec(), 4)]);
        assert_eq!(rows(&evs)[0].1.gaps, 1);
    }

    #[test]
    fn port_reuse_and_midstream_roles() {
        let mut s = handshake();
        s.push(seg(true, 1001, 5001, RST, b""));
        s.push(seg(true, 9000, 0, SYN, b"")); // same 4-tuple after a reset: a new stream
        let (evs, _) = run(&s);
        let states: Vec<(u64, &str)> = rows(&evs).iter().map(|(s, r)| (*s, r.state)).collect();
        assert_eq!(states, vec![(0, "reset"), (1, "open")]);
        assert_eq!(opened(&evs).len(), 2);
        // Without a SYN the server port decides which side is the client.
        let (evs, _) = run(&[seg(false, 7, 9, ACK, b"x")]);
        assert_eq!(opened(&evs), vec![(40000, 9092)]);
        assert_eq!(rows(&evs)[0].1.state, "midstream");
    }

    #[test]
    fn released_connections_leave_their_rows_and_nothing_else() {
        // A SYN flood of 1000 distinct client ports with room for 10: each connection is
        // released (its row in the Release event) and dropped, so at most 10 are ever held.
        let mut r = Reassembler::new(1 << 20, vec![9092]);
        r.set_retention(Retention {
            max_connections: 10,
            ..Retention::default()
        });
        let mut most = 0;
        for i in 0..1000u16 {
            let mut s = seg(true, 1000, 0, SYN, b"");
            s.sport = 20000 + i;
            r.segment(&s, i as u64 + 1, (i as i64 + 1) * 1000);
            most = most.max(r.tracked());
        }
        r.finish();
        assert_eq!((most, r.tracked(), r.evicted), (10, 0, 990));
        let evs = std::mem::take(&mut r.events);
        let rows = rows(&evs);
        let streams: Vec<u64> = rows.iter().map(|(s, _)| *s).collect();
        assert_eq!(streams, (0..1000).collect::<Vec<u64>>());
        for (s, row) in &rows {
            let t = (*s as i64 + 1) * 1000;
            assert_eq!(
                (
                    row.state,
                    row.packets,
                    row.first_ts_us,
                    row.last_ts_us,
                    row.last_packet
                ),
                ("open", 1, t, t, s + 1)
            );
        }
        // A later packet of a released connection starts a new stream (as the anomaly says).
        let mut s = seg(true, 1001, 0, ACK, b"x");
        s.sport = 20000;
        r.segment(&s, 1001, 2_000_000);
        assert!(matches!(r.events[0], TcpEvent::Open { stream: 1000, .. }));
    }
}
