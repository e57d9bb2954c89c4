//! Which protocol a connection speaks, and which side is its client (the port of
//! `wiredump/dissect/detection.py`, same decisions in the same order).
//!
//! In order, for one capture (a [`Detector`] is per capture, never shared):
//!
//! 1. decode-as (`-d PORT=PROTO`) on either port;
//! 2. a protocol's well-known port on either port;
//! 3. a server port that an earlier connection of this capture was detected on;
//! 4. otherwise the connection's first bytes are held ([`Held`], bounded) and every protocol
//!    scores them (its own session tried on them, [`crate::trial`], plus what only it knows):
//!    what the client sent and what the server sent, and, when the capture did not see the
//!    connection open, the other role assignment too. The best score wins if it reaches
//!    `MIN_CONFIDENCE` and no other protocol ties with it; it wins at once at `CERTAIN`.
//!
//! The timing of the decisions (early tries, full holds, windows slid past for connections seen
//! mid-stream, parking of closed undecided connections) is the pipeline's, as in Python; this
//! module holds the data and the scoring. A panic in a protocol's scoring is a bug: it scores 0
//! and becomes an `internal_error` anomaly.

use std::collections::{HashMap, HashSet};

use crate::framing::internal_error;
use crate::model::{Anomaly, Role};
use crate::protocol::{Protocol, CERTAIN, MIN_CONFIDENCE};
use crate::shield::shielded;

/// Bytes of each direction's first run that are scored; reaching it ends the wait.
pub const HOLD_BYTES: usize = 64 * 1024;
/// Deliveries (data or gaps) held per connection before detection decides with what it has.
pub const HOLD_CHUNKS: usize = 32;
/// Bytes held over all undecided connections of a capture; beyond it the connection that pushed
/// past decides at once.
pub const HOLD_TOTAL: u64 = 32 * 1024 * 1024;
/// Times a connection is scored before its hold ends (each time the other side speaks).
pub const EARLY_TRIES: u32 = 3;
/// Later windows tried per connection seen mid-stream whose first window scored too low.
pub const MAX_WINDOWS: u32 = 128;
/// Later windows tried over all connections of a capture.
pub const CAPTURE_WINDOWS: u32 = 2048;

fn ri(role: Role) -> usize {
    match role {
        Role::Client => 0,
        Role::Server => 1,
    }
}

/// What one held delivery was.
#[derive(Debug, Clone)]
pub enum Item {
    Data(Vec<u8>),
    Gap(u64),
}

/// A connection's first deliveries, kept until detection decides, then replayed as they came.
#[derive(Debug, Default)]
pub struct Held {
    /// (role, data or the size of a gap, packet, ts_us) in delivery order.
    pub items: Vec<(Role, Item, u64, i64)>,
    /// Each direction's first bytes up to its first gap (at most HOLD_BYTES): what is scored.
    pub runs: [Vec<u8>; 2],
    /// Directions whose scored run ended at a gap.
    pub cut: [bool; 2],
    /// A gap came before some direction's first byte: its run starts inside the stream.
    pub gap_first: bool,
    pub size: u64,
    pub last_role: Option<Role>,
    pub tries: u32,
    pub first_packet: u64,
    pub first_ts_us: i64,
    /// No protocol reached the minimum while the connection was open: nothing is held any more.
    pub given_up: bool,
    /// Bytes of each direction not decoded because no protocol was known for them.
    pub dropped: [u64; 2],
    /// Windows slid past: their bytes are in `dropped`.
    pub windows: u32,
    /// The best score any window slid past reached.
    pub best_seen: Option<(&'static str, i32)>,
}

impl Held {
    /// Holds one delivery; true when the other side just spoke (time to score again).
    pub fn add(&mut self, role: Role, data: &[u8], packet: u64, ts_us: i64) -> bool {
        if self.items.is_empty() && self.windows == 0 {
            self.first_packet = packet;
            self.first_ts_us = ts_us;
        }
        self.items
            .push((role, Item::Data(data.to_vec()), packet, ts_us));
        self.size += data.len() as u64;
        let r = ri(role);
        let run = &mut self.runs[r];
        if !self.cut[r] && run.len() < HOLD_BYTES {
            let take = (HOLD_BYTES - run.len()).min(data.len());
            run.extend_from_slice(&data[..take]);
        }
        let turn = self.last_role.is_some_and(|l| l != role);
        self.last_role = Some(role);
        turn
    }

    pub fn add_gap(&mut self, role: Role, size: u64, packet: u64, ts_us: i64) {
        if self.items.is_empty() && self.windows == 0 {
            self.first_packet = packet;
            self.first_ts_us = ts_us;
        }
        self.items.push((role, Item::Gap(size), packet, ts_us));
        if !self.runs[ri(role)].is_empty() {
            self.cut[ri(role)] = true;
        } else {
            self.gap_first = true;
        }
    }

    pub fn full(&self) -> bool {
        self.items.len() >= HOLD_CHUNKS || self.runs.iter().any(|r| r.len() >= HOLD_BYTES)
    }

    /// The other side is the client: every held delivery changes role.
    pub fn swap(&mut self) {
        for it in self.items.iter_mut() {
            it.0 = it.0.other();
        }
        self.runs.swap(0, 1);
        self.cut.swap(0, 1);
        self.last_role = self.last_role.map(Role::other);
        self.dropped.swap(0, 1);
    }

    /// Directions whose window is over: their run is full or ended at a gap, or, when the hold is
    /// full by its count of deliveries, the direction that made most of them.
    pub fn done(&self) -> Vec<Role> {
        let over: Vec<Role> = [Role::Client, Role::Server]
            .into_iter()
            .filter(|&r| self.cut[ri(r)] || self.runs[ri(r)].len() >= HOLD_BYTES)
            .collect();
        if !over.is_empty() || self.items.len() < HOLD_CHUNKS {
            return over;
        }
        let mut count = [0usize; 2];
        for it in &self.items {
            count[ri(it.0)] += 1;
        }
        // Python's max() keeps the first of equal keys: the client on a tie.
        vec![if count[1] > count[0] {
            Role::Server
        } else {
            Role::Client
        }]
    }

    /// Drops what the `done` directions held and scores their next bytes as a new window;
    /// returns the bytes released.
    pub fn slide(&mut self, best: Option<(&'static str, i32)>) -> u64 {
        let gone = self.done();
        if let Some(b) = best {
            if self.best_seen.is_none_or(|s| b.1 > s.1) {
                self.best_seen = Some(b);
            }
        }
        let mut released = 0u64;
        let mut kept = Vec::with_capacity(self.items.len());
        for item in std::mem::take(&mut self.items) {
            if !gone.contains(&item.0) {
                kept.push(item);
            } else if let Item::Data(d) = &item.1 {
                self.dropped[ri(item.0)] += d.len() as u64;
                released += d.len() as u64;
            }
        }
        self.items = kept;
        self.size -= released;
        for role in gone {
            self.runs[ri(role)] = Vec::new();
            self.cut[ri(role)] = false;
        }
        self.gap_first = true; // the new window starts inside the stream
        self.tries = 0;
        self.windows += 1;
        released
    }

    /// Stops holding (see `given_up`); returns the bytes released.
    pub fn give_up(&mut self) -> u64 {
        for it in &self.items {
            if let Item::Data(d) = &it.1 {
                self.dropped[ri(it.0)] += d.len() as u64;
            }
        }
        let size = self.size;
        self.size = 0;
        self.items = Vec::new();
        self.runs = [Vec::new(), Vec::new()];
        self.given_up = true;
        size
    }

    /// The bytes not decoded, for an anomaly.
    pub fn what(&self) -> String {
        let mut counts = self.dropped;
        for it in &self.items {
            if let Item::Data(d) = &it.1 {
                counts[ri(it.0)] += d.len() as u64;
            }
        }
        format!("{} client and {} server bytes", counts[0], counts[1])
    }
}

/// What detection decided (or that it waits).
#[derive(Debug, Default)]
pub struct Decision {
    /// Index of the chosen protocol in the run's registry; None: undecoded.
    pub spec: Option<usize>,
    /// The connection's roles must be swapped.
    pub swap: bool,
    /// For an undecoded connection: the protocol that scored best, and its score.
    pub best: Option<(&'static str, i32)>,
    /// The server port this decision taught.
    pub learned: Option<u16>,
    /// `internal_error` anomalies: a protocol's scoring panicked (it scored 0).
    pub errors: Vec<Anomaly>,
    /// Not a decision: only `errors` to report, the bytes stay held.
    pub wait: bool,
}

impl Decision {
    fn of(spec: usize, swap: bool) -> Decision {
        Decision {
            spec: Some(spec),
            swap,
            ..Decision::default()
        }
    }
}

/// What detection needs to know of a connection.
pub struct ConnPorts {
    pub client_port: u16,
    pub server_port: u16,
    pub saw_syn: bool,
}

/// Protocol choice for the connections of one capture.
pub struct Detector {
    pub protocols: Vec<Box<dyn Protocol>>,
    pub decode_as: HashMap<u16, usize>,
    pub port_map: HashMap<u16, usize>,
    /// Server port → the protocol a connection on it was detected as, in this capture.
    pub learned: HashMap<u16, usize>,
    pub held_total: u64,
    /// Later windows tried so far in this capture.
    pub windows: u32,
}

impl Detector {
    pub fn new(protocols: Vec<Box<dyn Protocol>>, decode_as: HashMap<u16, usize>) -> Detector {
        let mut port_map = HashMap::new();
        for (i, p) in protocols.iter().enumerate() {
            for &port in p.ports() {
                port_map.entry(port).or_insert(i);
            }
        }
        Detector {
            protocols,
            decode_as,
            port_map,
            learned: HashMap::new(),
            held_total: 0,
            windows: 0,
        }
    }

    /// Ports that say which side is the server (decode-as and well-known ones).
    pub fn server_ports(&self) -> Vec<u16> {
        let set: HashSet<u16> = self
            .port_map
            .keys()
            .chain(self.decode_as.keys())
            .copied()
            .collect();
        let mut v: Vec<u16> = set.into_iter().collect();
        v.sort_unstable();
        v
    }

    /// Steps 1–3: a decision from the ports alone, or None.
    pub fn by_port(&self, conn: &ConnPorts) -> Option<Decision> {
        for table in [&self.decode_as, &self.port_map] {
            for port in [conn.server_port, conn.client_port] {
                if let Some(&spec) = table.get(&port) {
                    return Some(Decision::of(spec, false));
                }
            }
        }
        if let Some(&spec) = self.learned.get(&conn.server_port) {
            return Some(Decision::of(spec, false));
        }
        if let Some(&spec) = self.learned.get(&conn.client_port) {
            if !conn.saw_syn {
                return Some(Decision::of(spec, true));
            }
        }
        None
    }

    /// Whether an undecided connection's next window is scored rather than giving up on it.
    pub fn may_slide(&self, conn: &ConnPorts, held: &Held) -> bool {
        !conn.saw_syn
            && !held.done().is_empty()
            && held.windows < MAX_WINDOWS
            && self.windows < CAPTURE_WINDOWS
            && self.held_total <= HOLD_TOTAL
    }

    /// Step 4: the decision the held bytes support, or None to wait for more (when not `final`).
    pub fn by_bytes(&mut self, conn: &ConnPorts, held: &Held, final_: bool) -> Option<Decision> {
        if let Some(d) = self.by_port(conn) {
            return Some(d);
        }
        let opened = conn.saw_syn && !held.gap_first;
        let (client, server) = (&held.runs[0][..], &held.runs[1][..]);
        let mut tries = vec![(false, client, server)];
        if !conn.saw_syn {
            tries.push((true, server, client));
        }
        let mut scores: Vec<(i32, bool, usize)> = Vec::new();
        let mut errors = Vec::new();
        for (i, proto) in self.protocols.iter().enumerate() {
            for &(swap, c, s) in &tries {
                let got = shielded(|| {
                    let t = crate::trial::trial(proto.as_ref(), c, s, opened);
                    proto.score(&t, c, s, opened)
                });
                let points = match got {
                    Ok(p) => p,
                    Err(p) => {
                        let roles = if swap {
                            "roles swapped"
                        } else {
                            "roles by port"
                        };
                        errors.push(internal_error(
                            &*p,
                            "score",
                            proto.name(),
                            &format!("the first bytes ({roles})"),
                            None,
                        ));
                        0
                    }
                };
                scores.push((points, swap, i));
            }
        }
        let best = scores.iter().map(|s| s.0).max().unwrap_or(0);
        let top: Vec<(bool, usize)> = scores
            .iter()
            .filter(|s| s.0 == best)
            .map(|s| (s.1, s.2))
            .collect();
        let undecided = if final_ {
            Some(Decision {
                best: if best != 0 {
                    Some((self.protocols[top[0].1].name(), best))
                } else {
                    None
                },
                errors,
                ..Decision::default()
            })
        } else if !errors.is_empty() {
            Some(Decision {
                errors,
                wait: true,
                ..Decision::default()
            })
        } else {
            None
        };
        if best < (if final_ { MIN_CONFIDENCE } else { CERTAIN }) {
            return undecided;
        }
        let names: HashSet<&'static str> = top.iter().map(|t| self.protocols[t.1].name()).collect();
        if names.len() > 1 {
            return undecided; // two protocols equally sure: a guess either way
        }
        // The ports' role assignment when both fit (Python's min by swap keeps the first).
        let &(swap, spec) = top.iter().find(|t| !t.0).unwrap_or(&top[0]);
        let port = if swap {
            conn.client_port
        } else {
            conn.server_port
        };
        let taught = !self.learned.contains_key(&port);
        self.learned.entry(port).or_insert(spec);
        let errors = undecided.map(|d| d.errors).unwrap_or_default();
        Some(Decision {
            spec: Some(spec),
            swap,
            learned: taught.then_some(port),
            errors,
            ..Decision::default()
        })
    }
}
