//! Pairing requests with responses, one correlator per connection (the Rust twin of
//! `wiredump/dissect/correlation.py`, same semantics call for call).
//!
//! A protocol decides what the key is (Kafka: correlation id; Pulsar: request id and a response
//! type that fits; TANK: request id) and calls [`Correlator::request`] / [`Correlator::response`];
//! the correlator links the two frames (peer packet both ways, latency on the later one) in
//! [`Correlator::drain`], once the engine has stamped both, keeps the request marked `awaiting`
//! (the output holds it back) until its answer is known, and records the exchange. Outstanding
//! requests are bounded per connection (`max_pending`) and over the whole capture
//! ([`PendingBudget`]): a request waiting for its answer keeps its whole frame, so without the
//! second bound many connections that are never answered would hold frames by the million.

use std::cell::Cell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

use crate::model::{Exchange, ExchangeStatus, Frame, FrameRef};

/// The anomaly on a request given up because the capture's budget was spent.
pub const PENDING_LIMIT: &str = "pending_limit";

/// A pairing key: protocols build theirs from ids and tags (`(kind, request id)`…).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Key {
    None,
    Int(i64),
    Str(&'static str),
    Tuple(Vec<Key>),
}

/// What kind of completion a `_done` entry records (`Event` links without an exchange row).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Done {
    Row(ExchangeStatus),
    Event,
}

/// Requests waiting for their answer over all connections of one capture (Python's
/// `correlation.PendingBudget`): one per capture, owned by the pipeline and shared by its
/// connections' correlators (`Limits.max_pending_total`). Past the limit, the connection that
/// registers a request gives up its own oldest one as unanswered, so a connection never takes
/// another's requests away and the outcome does not depend on the order connections are served.
#[derive(Debug)]
pub struct PendingBudget {
    pub limit: usize,
    count: Cell<usize>,
}

impl PendingBudget {
    pub fn new(limit: usize) -> Rc<PendingBudget> {
        Rc::new(PendingBudget {
            limit,
            count: Cell::new(0),
        })
    }

    /// Requests outstanding now over the capture.
    pub fn count(&self) -> usize {
        self.count.get()
    }

    fn add(&self, n: usize) -> bool {
        self.count.set(self.count.get() + n);
        self.count.get() > self.limit
    }

    /// The `pending_limit` anomaly's text, on the request that went over the bound; `given_up`:
    /// the packet of the connection's oldest request given up for it, None when it is this very
    /// request (the connection had no other waiting).
    fn detail(&self, given_up: Option<u64>) -> String {
        let which = match given_up {
            None => "this one".to_string(),
            Some(p) => format!("the connection's oldest (packet {p})"),
        };
        format!(
            "more than {} requests waited for their answer at once over the capture \
             (Limits.max_pending_total): {which} is reported unanswered",
            self.limit
        )
    }

    fn sub(&self, n: usize) {
        self.count.set(self.count.get() - n);
    }
}

/// The requests pending under one key, oldest first: `first`, then `rest`. Nearly always one
/// (Kafka's correlation ids and Pravega's request ids are unique per request), held without an
/// allocation; more under one key (TANK's consumes share theirs, up to `max_pending` of them)
/// queue in `rest`, where taking the oldest stays O(1).
#[derive(Default)]
struct Queue {
    /// None only when the queue is empty.
    first: Option<FrameRef>,
    rest: VecDeque<FrameRef>,
}

impl Queue {
    fn push(&mut self, f: FrameRef) {
        if self.first.is_none() {
            self.first = Some(f);
        } else {
            self.rest.push_back(f);
        }
    }

    fn is_empty(&self) -> bool {
        self.first.is_none()
    }

    fn iter(&self) -> impl Iterator<Item = &FrameRef> {
        self.first.iter().chain(self.rest.iter())
    }

    /// Takes the request at `at` (0: the oldest).
    fn remove(&mut self, at: usize) -> Option<FrameRef> {
        if at == 0 {
            let f = self.first.take();
            self.first = self.rest.pop_front();
            f
        } else {
            self.rest.remove(at - 1)
        }
    }
}

impl IntoIterator for Queue {
    type Item = FrameRef;
    type IntoIter = std::iter::Chain<
        std::option::IntoIter<FrameRef>,
        std::collections::vec_deque::IntoIter<FrameRef>,
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.first.into_iter().chain(self.rest)
    }
}

pub struct Correlator {
    pub stream: u64,
    pub protocol: &'static str,
    pub max_pending: usize,
    /// Pending requests per key, oldest first; `order` keeps keys in first-insertion order
    /// (Python's OrderedDict) so that the oldest request is the one evicted.
    pending: HashMap<Key, Queue, ahash::RandomState>,
    order: VecDeque<Key>,
    count: usize,
    done: Vec<(Done, Option<FrameRef>, Option<FrameRef>)>,
    /// Requests dropped as unanswered because more than `max_pending` were outstanding.
    pub evicted: u64,
    budget: Option<Rc<PendingBudget>>,
    /// Pairing for a connection another worker decodes (see [`Correlator::observing`]).
    observe: bool,
}

impl Correlator {
    pub fn new(stream: u64, protocol: &'static str, max_pending: usize) -> Correlator {
        Correlator {
            stream,
            protocol,
            max_pending,
            pending: HashMap::default(),
            order: VecDeque::new(),
            count: 0,
            done: Vec::new(),
            evicted: 0,
            budget: None,
            observe: false,
        }
    }

    /// The correlator of a connection another worker decodes (a share's observer): what is
    /// pending, per connection and against the capture's budget, is kept exactly as when
    /// decoding (the budget is shared with the connections this worker decodes, and which
    /// request a response finds decides what the observer reads of it), but nothing is recorded
    /// for output: no exchange rows, no links, no notes, since the frames are never shown.
    pub fn observing(mut self, observe: bool) -> Correlator {
        self.observe = observe;
        self
    }

    /// A correlator whose outstanding requests also count against the capture's `budget`.
    pub fn with_budget(
        stream: u64,
        protocol: &'static str,
        max_pending: usize,
        budget: Rc<PendingBudget>,
    ) -> Correlator {
        Correlator {
            budget: Some(budget),
            ..Correlator::new(stream, protocol, max_pending)
        }
    }

    // -- what protocols call --------------------------------------------------------------

    /// Registers a request; it is held until answered when it expects a response.
    pub fn request(&mut self, frame: &FrameRef, key: Key, expects_response: bool) {
        if !expects_response {
            if self.observe {
                return;
            }
            self.done.push((
                Done::Row(ExchangeStatus::NoResponseExpected),
                Some(frame.clone()),
                None,
            ));
            return;
        }
        if !self.observe {
            frame.borrow_mut().awaiting = true;
        }
        let q = self.pending.entry(key.clone()).or_insert_with(|| {
            self.order.push_back(key);
            Queue::default()
        });
        q.push(frame.clone());
        self.count += 1;
        if let Some(budget) = self.budget.clone().filter(|b| b.add(1)) {
            if self.observe {
                self.evict_oldest();
                return;
            }
            // Said on the request that arrived (not yet out), not on the one given up, which the
            // pipeline may have let out already (its hold bounds).
            let given_up = self
                .evict_oldest()
                .filter(|r| !std::rc::Rc::ptr_eq(r, frame))
                .map(|r| r.borrow().packet);
            frame
                .borrow_mut()
                .note(PENDING_LIMIT, budget.detail(given_up), None);
            return;
        }
        if self.count > self.max_pending {
            self.evict_oldest();
        }
    }

    /// The request a response with this key would pair with, without pairing it. `fits`
    /// narrows the candidates (Pulsar: a response type that answers the request's type).
    pub fn peek(&self, key: &Key, fits: Option<&dyn Fn(&Frame) -> bool>) -> Option<FrameRef> {
        let q = self.pending.get(key)?;
        q.iter()
            .find(|r| fits.is_none_or(|f| f(&r.borrow())))
            .cloned()
    }

    /// Pairs a response with the oldest fitting request under `key`; None if there is none (the
    /// response is then recorded as `no_request`). The returned request may still be changed
    /// (a response may complete its request's messages): it has not left yet.
    pub fn response(
        &mut self,
        frame: &FrameRef,
        key: &Key,
        fits: Option<&dyn Fn(&Frame) -> bool>,
    ) -> Option<FrameRef> {
        let Some(req) = self.peek(key, fits) else {
            if self.observe {
                return None;
            }
            self.done.push((
                Done::Row(ExchangeStatus::NoRequest),
                None,
                Some(frame.clone()),
            ));
            return None;
        };
        let q = self.pending.get_mut(key).expect("peeked key is pending");
        let at = q
            .iter()
            .position(|r| std::rc::Rc::ptr_eq(r, &req))
            .expect("peeked request is queued");
        q.remove(at);
        if q.is_empty() {
            self.forget(key);
        }
        self.count -= 1;
        if let Some(b) = &self.budget {
            b.sub(1);
        }
        if self.observe {
            return Some(req);
        }
        // Linked in `drain`, once the engine has stamped the response's packet and time.
        self.done.push((
            Done::Row(ExchangeStatus::Answered),
            Some(req.clone()),
            Some(frame.clone()),
        ));
        Some(req)
    }

    /// Links two frames that belong together without an exchange row (e.g. acks).
    pub fn event_pair(&mut self, first: &FrameRef, second: &FrameRef) {
        if self.observe {
            return;
        }
        self.done
            .push((Done::Event, Some(first.clone()), Some(second.clone())));
    }

    /// The keys requests are pending under (the oldest key first), e.g. for a protocol whose
    /// responses come in request order (Kafka: a response id below every pending one).
    pub fn pending_keys(&self) -> impl Iterator<Item = &Key> {
        self.order.iter()
    }

    /// Requests outstanding now.
    pub fn pending(&self) -> usize {
        self.count
    }

    /// Links a request and its response: peer packets both ways, latency on the response.
    pub fn link(req: &mut Frame, resp: &mut Frame) {
        req.awaiting = false;
        req.peer_packet = (resp.packet != 0).then_some(resp.packet);
        resp.peer_packet = Some(req.packet);
        if resp.ts_us != 0 && req.ts_us != 0 {
            resp.latency_us = Some(resp.ts_us - req.ts_us);
        }
    }

    // -- what the engine calls ------------------------------------------------------------

    /// Exchanges completed since the last call, as table rows.
    pub fn drain(&mut self) -> Vec<Exchange> {
        let mut out = Vec::new();
        self.drain_each(|ex| out.push(ex));
        out
    }

    /// [`Correlator::drain`], each row handed to `each`: the framing engine drains after every
    /// frame, so neither the row vector nor the completed list is made anew each time.
    pub fn drain_each(&mut self, mut each: impl FnMut(Exchange)) {
        if self.done.is_empty() {
            return;
        }
        let mut done = std::mem::take(&mut self.done);
        for (status, req, resp) in done.drain(..) {
            if let (Some(q), Some(s)) = (&req, &resp) {
                if std::rc::Rc::ptr_eq(q, s) {
                    // One frame answering itself cannot be borrowed twice; nothing to link.
                    q.borrow_mut().awaiting = false;
                } else {
                    Self::link(&mut q.borrow_mut(), &mut s.borrow_mut());
                }
            }
            if let Done::Row(status) = status {
                each(self.row(status, req.as_ref(), resp.as_ref()));
            }
        }
        // Nothing is completed while rows are made (`row` and `link` only read and stamp).
        debug_assert!(self.done.is_empty());
        self.done = done;
    }

    /// Every request still outstanding becomes unanswered.
    pub fn close(&mut self) -> Vec<Exchange> {
        if self.observe {
            self.order.clear();
            self.pending.clear();
        }
        for key in std::mem::take(&mut self.order) {
            if let Some(q) = self.pending.remove(&key) {
                for req in q {
                    req.borrow_mut().awaiting = false;
                    self.done
                        .push((Done::Row(ExchangeStatus::Unanswered), Some(req), None));
                }
            }
        }
        if let Some(b) = &self.budget {
            b.sub(self.count);
        }
        self.count = 0;
        self.drain()
    }

    fn forget(&mut self, key: &Key) {
        self.pending.remove(key);
        if let Some(i) = self.order.iter().position(|k| k == key) {
            self.order.remove(i);
        }
    }

    fn evict_oldest(&mut self) -> Option<FrameRef> {
        let key = self.order.front().cloned()?;
        let q = self.pending.get_mut(&key).expect("ordered key is pending");
        let req = q.remove(0).expect("pending queues are never empty");
        if q.is_empty() {
            self.forget(&key);
        }
        self.count -= 1;
        if let Some(b) = &self.budget {
            b.sub(1);
        }
        self.evicted += 1;
        if self.observe {
            return Some(req);
        }
        req.borrow_mut().awaiting = false;
        self.done.push((
            Done::Row(ExchangeStatus::Unanswered),
            Some(req.clone()),
            None,
        ));
        Some(req)
    }

    fn row(
        &self,
        status: ExchangeStatus,
        req: Option<&FrameRef>,
        resp: Option<&FrameRef>,
    ) -> Exchange {
        let first = req
            .or(resp)
            .expect("an exchange has a request or a response");
        let first = first.borrow();
        let req = req.map(|r| r.borrow());
        let resp = resp.map(|r| r.borrow());
        Exchange {
            stream: self.stream,
            protocol: self.protocol,
            type_: first.type_.clone(),
            correlation_id: first.correlation_id,
            status,
            request_packet: req.as_ref().map(|r| r.packet),
            response_packet: resp.as_ref().map(|r| r.packet),
            request_ts_us: req.as_ref().map(|r| r.ts_us),
            response_ts_us: resp.as_ref().map(|r| r.ts_us),
            latency_us: if req.is_some() {
                resp.as_ref().and_then(|r| r.latency_us)
            } else {
                None
            },
            error_code: resp.as_ref().and_then(|r| r.error_code),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(packet: u64, ts: i64) -> FrameRef {
        let mut f = Frame::new("test", "Req", 1);
        f.packet = packet;
        f.ts_us = ts;
        f.shared()
    }

    #[test]
    fn a_keys_queue_keeps_request_order() {
        // Three requests under one key (as TANK's consumes): answers and evictions take them
        // oldest first, a fitting one from the middle, and close reports the rest in order.
        let mut c = Correlator::new(1, "test", 2);
        let fr: Vec<FrameRef> = (1..=4).map(|p| frame(p, 10 * p as i64)).collect();
        fr[1].borrow_mut().type_code = 2;
        for f in &fr[..3] {
            c.request(f, Key::Int(9), true);
        }
        // max_pending 2: the third request evicted the first.
        assert_eq!((c.pending(), c.evicted), (2, 1));
        let fits = |f: &Frame| f.type_code != 2;
        let got = c
            .response(&frame(8, 80), &Key::Int(9), Some(&fits))
            .unwrap();
        assert!(
            Rc::ptr_eq(&got, &fr[2]),
            "the fitting one, from behind the oldest"
        );
        c.request(&fr[3], Key::Int(9), true);
        let got = c.response(&frame(9, 90), &Key::Int(9), None).unwrap();
        assert!(Rc::ptr_eq(&got, &fr[1]), "then the oldest");
        let rows = c.close();
        let packets: Vec<Option<u64>> = rows.iter().map(|r| r.request_packet).collect();
        // Evicted 1, answered 3 and 2, then 4 unanswered at close.
        assert_eq!(packets, vec![Some(1), Some(3), Some(2), Some(4)]);
        assert_eq!(c.pending(), 0);
    }

    #[test]
    fn pairs_oldest_fitting_request_and_links_in_drain() {
        let mut c = Correlator::new(3, "test", 16);
        let (a, b) = (frame(1, 100), frame(2, 150));
        b.borrow_mut().type_code = 2;
        c.request(&a, Key::Int(7), true);
        c.request(&b, Key::Int(7), true);
        assert!(a.borrow().awaiting);
        let resp = frame(5, 400);
        let fits = |f: &Frame| f.type_code == 2;
        let got = c.response(&resp, &Key::Int(7), Some(&fits)).unwrap();
        assert!(std::rc::Rc::ptr_eq(&got, &b));
        let rows = c.drain();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, ExchangeStatus::Answered);
        assert_eq!(rows[0].latency_us, Some(250));
        assert_eq!(b.borrow().peer_packet, Some(5));
        assert_eq!(resp.borrow().peer_packet, Some(2));
        assert!(!b.borrow().awaiting);
        let rows = c.close();
        assert_eq!(rows[0].status, ExchangeStatus::Unanswered);
        assert_eq!(rows[0].request_packet, Some(1));
    }

    #[test]
    fn response_without_request_and_eviction() {
        let mut c = Correlator::new(0, "test", 2);
        let r = frame(9, 10);
        assert!(c.response(&r, &Key::Int(1), None).is_none());
        for i in 0..3 {
            c.request(&frame(i + 1, 1), Key::Int(i as i64), true);
        }
        assert_eq!(c.evicted, 1);
        let rows = c.drain();
        assert_eq!(rows[0].status, ExchangeStatus::NoRequest);
        assert_eq!(rows[1].status, ExchangeStatus::Unanswered);
        assert_eq!(rows[1].request_packet, Some(1));
        assert_eq!(c.pending(), 2);
    }

    #[test]
    fn the_capture_budget_makes_the_requesting_connection_give_up_its_own_oldest() {
        // Budget 3 over two connections (per-connection bound 16, never reached).
        let budget = PendingBudget::new(3);
        let mut a = Correlator::with_budget(0, "test", 16, budget.clone());
        let mut b = Correlator::with_budget(1, "test", 16, budget.clone());
        a.request(&frame(1, 1), Key::Int(1), true);
        a.request(&frame(2, 1), Key::Int(2), true);
        b.request(&frame(3, 1), Key::Int(1), true);
        assert_eq!((budget.count(), a.evicted, b.evicted), (3, 0, 0));
        // The fourth outstanding request: b gives up its own oldest (packet 3), a keeps both;
        // the request that went over the bound says so.
        let b4 = frame(4, 1);
        b.request(&b4, Key::Int(2), true);
        let said: Vec<_> = b4
            .borrow()
            .anomalies
            .iter()
            .map(|x| (x.kind.to_string(), x.detail.clone()))
            .collect();
        assert_eq!(
            said,
            [(
                PENDING_LIMIT.to_string(),
                "more than 3 requests waited for their answer at once over the capture \
                 (Limits.max_pending_total): the connection's oldest (packet 3) is reported \
                 unanswered"
                    .to_string()
            )]
        );
        assert_eq!((budget.count(), a.pending(), b.pending()), (3, 2, 1));
        let rows = b.drain();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].status, ExchangeStatus::Unanswered);
        assert_eq!(rows[0].request_packet, Some(3));
        // An answer frees a place; closing a connection frees all of its places.
        assert!(a.response(&frame(5, 2), &Key::Int(1), None).is_some());
        assert_eq!(budget.count(), 2);
        b.request(&frame(6, 1), Key::Int(3), true);
        assert_eq!((budget.count(), b.evicted), (3, 1));
        assert_eq!(b.close().len(), 2);
        assert_eq!(budget.count(), 1);
        a.close();
        assert_eq!(budget.count(), 0);
    }

    #[test]
    fn an_observing_correlator_keeps_what_is_pending_and_records_nothing() {
        // The same requests and responses through a decoding and an observing correlator,
        // each with its own budget of 3: the same requests stay pending (the same one is
        // given up past each bound), each response finds the same request, and only the
        // decoding one records rows, links and notes.
        let run = |observe: bool| {
            let budget = PendingBudget::new(3);
            let mut c = Correlator::with_budget(0, "test", 2, budget.clone()).observing(observe);
            let mut other = Correlator::with_budget(1, "test", 16, budget.clone());
            other.request(&frame(100, 1), Key::Int(9), true);
            let reqs: Vec<FrameRef> = (1..=4).map(|p| frame(p, 1)).collect();
            for (i, r) in reqs.iter().enumerate() {
                c.request(r, Key::Int(i as i64), true); // past 2: the oldest is given up
            }
            c.request(&frame(5, 1), Key::Int(50), false);
            let over = frame(6, 1);
            other.request(&frame(101, 1), Key::Int(10), true);
            c.request(&over, Key::Int(6), true); // past the budget of 3: gives up its own oldest
            let found: Vec<Option<u64>> = [0, 2, 3, 6]
                .iter()
                .map(|k| {
                    c.response(&frame(20, 2), &Key::Int(*k), None)
                        .map(|r| r.borrow().packet)
                })
                .collect();
            let state = (c.pending(), c.evicted, budget.count(), found);
            let rows = c.drain().len() + c.close().len();
            let noted = over.borrow().anomalies.len() + reqs[2].borrow().anomalies.len();
            (state, budget.count(), rows, noted)
        };
        let (decoding, observing) = (run(false), run(true));
        // With the other connection's request, requests 3, 4 and 6 each go over the budget of
        // 3 and give up their connection's oldest (1, 2, then 3): 4 and 6 remain; keys 0 and 2
        // find nothing, 3 and 6 find requests 4 and 6 (the budget then holds only the other
        // connection's request 101, which gave up its 100 for itself).
        assert_eq!(decoding.0, (0, 3, 1, vec![None, None, Some(4), Some(6)]));
        assert_eq!(observing.0, decoding.0);
        assert_eq!((decoding.1, observing.1), (1, 1));
        // 3 given up, 1 without an answer expected, 2 without a request, 2 answered; the
        // pending_limit notes on requests 3 and 6.
        assert_eq!((decoding.2, decoding.3), (8, 2));
        assert_eq!((observing.2, observing.3), (0, 0));
    }
}
