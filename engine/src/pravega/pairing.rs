//! Pairing Pravega replies with their requests (WIRE.md §4; the twin of `pravega/pairing.py`).
//!
//! Outstanding requests are indexed by requestId and, for appends, by writer id and event
//! number; each pair is given to the connection's correlator under a key unique to the request,
//! so the correlator links the frames and writes the exchange rows while the Pravega rules for
//! *which* request a reply answers stay here:
//!
//! * a reply answers the oldest outstanding request with its requestId whose type expects it;
//!   failure replies answer any request. A reply of a type the request does not expect still
//!   pairs by id (anomaly `unexpected_reply`) unless it is an append acknowledgement;
//! * DATA_APPENDED(writer, eventNumber, previousEventNumber) acknowledges every append of the
//!   writer with last event number in (previous, eventNumber]; CONDITIONAL_CHECK_FAILED and
//!   INVALID_EVENT_NUMBER name one event;
//! * a READ_SEGMENT may be answered by several SEGMENT_READs: the first makes the exchange, the
//!   others point back at the request without a second row;
//! * the client's HELLO is answered by the server's HELLO.
//!
//! Everything held is bounded: the correlator evicts the oldest outstanding requests beyond its
//! limit, and the indexes here forget them with it.

use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use super::commands::{command, Command};
use super::ordered::OrderedMap;
use crate::correlation::{Correlator, Key};
use crate::model::{Anomaly, FrameRef, Value};

const APPEND_TYPES: [&str; 3] = ["AppendBlockEnd", "ConditionalAppend", "ConditionalBlockEnd"];
const APPEND_REPLIES: [&str; 2] = ["DataAppended", "ConditionalCheckFailed"];
/// Answered READ_SEGMENTs remembered for the further SEGMENT_READs that may follow.
pub const MAX_ANSWERED_READS: usize = 1024;

/// Private to a request frame (its `context`): its correlator key and whether it is answered.
#[derive(Debug)]
pub struct Pending {
    pub key: Key,
    pub request_id: Option<i64>,
    pub writer_id: Option<String>,
    pub event_number: Option<i64>,
    pub done: bool,
}

fn is_append(name: &str) -> bool {
    APPEND_TYPES.contains(&name)
}

/// Answered, or given up on by the correlator.
fn dead(req: &FrameRef) -> bool {
    let r = req.borrow();
    r.context_ref::<Pending>().is_none_or(|p| p.done) || !r.awaiting
}

/// Outstanding requests of one connection, and the rules that pair replies with them.
pub struct Pairing {
    max_pending: usize,
    seq: i64,
    by_rid: HashMap<i64, VecDeque<FrameRef>>,
    appends: HashMap<String, OrderedMap<i64, FrameRef>>,
    pending_count: i64,
    answered_reads: OrderedMap<i64, FrameRef>,
    hello: Option<FrameRef>,
}

impl Pairing {
    pub fn new(max_pending: usize) -> Pairing {
        Pairing {
            max_pending: max_pending.max(16),
            seq: 0,
            by_rid: HashMap::new(),
            appends: HashMap::new(),
            pending_count: 0,
            answered_reads: OrderedMap::default(),
            hello: None,
        }
    }

    fn next_key(&mut self) -> Key {
        self.seq += 1;
        Key::Tuple(vec![Key::Str("pravega"), Key::Int(self.seq)])
    }

    pub fn hello_request(&mut self, corr: &mut Correlator, f: &FrameRef) {
        let key = self.next_key();
        f.borrow_mut().context = Some(Box::new(Pending {
            key: key.clone(),
            request_id: None,
            writer_id: None,
            event_number: None,
            done: false,
        }));
        self.hello = Some(f.clone());
        corr.request(f, key, true);
    }

    pub fn hello_reply(&mut self, corr: &mut Correlator, f: &FrameRef) {
        if let Some(req) = &self.hello {
            let key = {
                let mut r = req.borrow_mut();
                match r.context_mut::<Pending>() {
                    Some(p) if !p.done => {
                        p.done = true;
                        Some(p.key.clone())
                    }
                    _ => None,
                }
            };
            if let Some(key) = key {
                corr.response(f, &key, None);
                return;
            }
        }
        corr.response(f, &Key::Tuple(vec![Key::Str("pravega-no-hello")]), None);
    }

    /// A request answered by nothing of its own (APPEND_BLOCK: its end is acknowledged).
    pub fn no_reply(&mut self, corr: &mut Correlator, f: &FrameRef) {
        corr.request(f, Key::Tuple(vec![Key::Str("pravega-block")]), false);
    }

    pub fn register(&mut self, corr: &mut Correlator, f: &FrameRef, cmd: &Command) {
        let key = self.next_key();
        let p = {
            let fr = f.borrow();
            let rid = fr.correlation_id;
            let mut p = Pending {
                key: key.clone(),
                request_id: rid,
                writer_id: None,
                event_number: None,
                done: false,
            };
            if is_append(cmd.name) {
                if let Some(Value::Str(w)) = fr.fields.get("writer_id") {
                    p.writer_id = Some(w.clone());
                }
                let en = fr
                    .fields
                    .get("last_event_number")
                    .or_else(|| fr.fields.get("event_number"));
                if let Some(Value::Int(n)) = en {
                    p.event_number = Some(*n);
                }
            }
            p
        };
        let (rid, writer, en) = (p.request_id, p.writer_id.clone(), p.event_number);
        f.borrow_mut().context = Some(Box::new(p));
        corr.request(f, key, true);
        if let Some(rid) = rid.filter(|&r| r != -1) {
            self.by_rid.entry(rid).or_default().push_back(f.clone());
            self.pending_count += 1;
        }
        if let (Some(w), Some(n)) = (writer, en) {
            self.appends.entry(w).or_default().insert(n, f.clone());
            self.pending_count += 1;
        }
        if self.pending_count > 2 * self.max_pending as i64 {
            self.prune();
        }
    }

    /// Pairs reply `f` (of command `cmd`) with the request(s) it answers.
    pub fn answer(&mut self, corr: &mut Correlator, f: &FrameRef, cmd: &Command) {
        let name = cmd.name;
        let (rid, writer, en, prev) = {
            let fr = f.borrow();
            let int = |k: &str| match fr.fields.get(k) {
                Some(Value::Int(n)) => Some(*n),
                _ => None,
            };
            let writer = match fr.fields.get("writer_id") {
                Some(Value::Str(w)) => Some(w.clone()),
                _ => None,
            };
            (
                fr.correlation_id,
                writer,
                int("event_number"),
                int("previous_event_number"),
            )
        };
        let mut reqs: Vec<FrameRef> = Vec::new();
        if name == "DataAppended" {
            if let (Some(w), Some(en), Some(prev)) = (&writer, en, prev) {
                reqs = self.acked_appends(w, prev as i128, en as i128);
            }
        } else if name == "ConditionalCheckFailed" {
            if let (Some(w), Some(en)) = (&writer, en) {
                reqs = self.acked_appends(w, en as i128 - 1, en as i128);
            }
        }
        if reqs.is_empty() {
            if let Some(rid) = rid.filter(|&r| r != -1) {
                let (req, expected) = self.by_request_id(rid, cmd);
                if let Some(req) = req {
                    if !expected {
                        let t = req.borrow().type_.clone();
                        f.borrow_mut().add(Anomaly::new(
                            "unexpected_reply",
                            format!("{name} is not a reply {t} expects (request id {rid})"),
                        ));
                    }
                    reqs.push(req);
                }
            }
        }
        if reqs.is_empty() && name == "InvalidEventNumber" {
            let n = en.unwrap_or(-1);
            if n != -1 {
                if let Some(w) = &writer {
                    reqs = self.acked_appends(w, n as i128 - 1, n as i128);
                }
            }
        }
        if reqs.is_empty() && name == "SegmentRead" {
            if let Some(rid) = rid {
                if let Some(first) = self.answered_reads.get(&rid) {
                    let packet = first.borrow().packet;
                    let mut fr = f.borrow_mut();
                    fr.peer_packet = (packet != 0).then_some(packet);
                    fr.fields
                        .set("continues_read_of_packet", Value::Int(packet as i64));
                    return;
                }
            }
        }
        if reqs.is_empty() {
            corr.response(f, &Key::Tuple(vec![Key::Str("pravega-unmatched")]), None);
            return;
        }
        let mut acks = Vec::new();
        for req in &reqs {
            let (key, is_read, n) = {
                let mut r = req.borrow_mut();
                let is_read = r.type_ == "ReadSegment";
                match r.context_mut::<Pending>() {
                    Some(p) => {
                        p.done = true;
                        (p.key.clone(), is_read, p.event_number)
                    }
                    None => continue,
                }
            };
            acks.push(n.map_or(Value::Null, Value::Int));
            corr.response(f, &key, None);
            if is_read {
                if let Some(rid) = rid {
                    self.answered_reads.insert(rid, req.clone());
                    while self.answered_reads.len() > MAX_ANSWERED_READS {
                        self.answered_reads.pop_first();
                    }
                }
            }
        }
        if reqs.len() > 1 {
            f.borrow_mut().fields.set("acknowledges", Value::List(acks));
        }
    }

    /// Outstanding appends of `writer` whose last event number is in (previous, last], in the
    /// order sent (event-number order), so the scan stops at the first one past `last`.
    fn acked_appends(&mut self, writer: &str, previous: i128, last: i128) -> Vec<FrameRef> {
        let Some(pending) = self.appends.get(writer) else {
            return Vec::new();
        };
        let mut out: Vec<FrameRef> = Vec::new();
        let mut gone: Vec<FrameRef> = Vec::new();
        for (&n, req) in pending.iter() {
            if n as i128 > last {
                break;
            }
            if dead(req) {
                gone.push(req.clone());
            } else if previous < 0 || n as i128 > previous {
                out.push(req.clone());
            }
        }
        for req in gone.iter().chain(out.iter()) {
            self.forget(req);
        }
        out
    }

    /// The oldest outstanding request with this request id that `cmd` answers; else the oldest
    /// non-append request with the id, returned with false (not a reply it expects).
    fn by_request_id(&mut self, rid: i64, cmd: &Command) -> (Option<FrameRef>, bool) {
        let reqs: Vec<FrameRef> = match self.by_rid.get(&rid) {
            Some(q) => q.iter().cloned().collect(),
            None => Vec::new(),
        };
        let mut fallback: Option<FrameRef> = None;
        for req in reqs {
            if dead(&req) {
                self.forget(&req);
                continue;
            }
            let (code, is_app) = {
                let r = req.borrow();
                (r.type_code, is_append(&r.type_))
            };
            let Some(req_cmd) = i32::try_from(code).ok().and_then(command) else {
                continue;
            };
            if cmd.failure || req_cmd.answered_by(cmd.name) {
                self.forget(&req);
                return (Some(req), true);
            }
            if fallback.is_none() && !is_app && !APPEND_REPLIES.contains(&cmd.name) {
                fallback = Some(req);
            }
        }
        if let Some(fb) = &fallback {
            self.forget(fb);
        }
        (fallback, false)
    }

    /// Drops a request from both indexes (answered, or given up by the correlator).
    fn forget(&mut self, req: &FrameRef) {
        let (rid, writer, en) = {
            let r = req.borrow();
            match r.context_ref::<Pending>() {
                Some(p) => (p.request_id, p.writer_id.clone(), p.event_number),
                None => return,
            }
        };
        if let Some(rid) = rid {
            if let Some(q) = self.by_rid.get_mut(&rid) {
                if let Some(i) = q.iter().position(|o| Rc::ptr_eq(o, req)) {
                    q.remove(i);
                    self.pending_count -= 1;
                }
                if q.is_empty() {
                    self.by_rid.remove(&rid);
                }
            }
        }
        if let Some(w) = writer {
            if let Some(appends) = self.appends.get_mut(&w) {
                if let Some(n) = en {
                    if appends.get(&n).is_some_and(|o| Rc::ptr_eq(o, req)) {
                        appends.remove(&n);
                        self.pending_count -= 1;
                        if appends.is_empty() {
                            self.appends.remove(&w);
                        }
                    }
                }
            }
        }
    }

    /// Forgets requests the correlator already gave up on (it bounds outstanding requests).
    fn prune(&mut self) {
        let mut count = 0i64;
        self.by_rid.retain(|_, q| {
            q.retain(|r| !dead(r));
            count += q.len() as i64;
            !q.is_empty()
        });
        self.appends.retain(|_, m| {
            m.retain(|_, r| !dead(r));
            count += m.len() as i64;
            !m.is_empty()
        });
        self.pending_count = count;
    }
}
