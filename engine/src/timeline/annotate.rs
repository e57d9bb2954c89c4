//! `annotate` and `in_packet_order` (`wiredump/cli/source.py`) over the engine's records: each
//! frame with its reply verdict and stream-break mark, then the lines sorted by packet within a
//! window. Ported step for step, down to the items that print nothing (a frame's own anomalies,
//! exchanges): they count in the hold and the window as they do in Python, so the lines come
//! out in the same order.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::rc::Rc;

use super::FrameLine;
use crate::model::{Anomaly, ExchangeStatus, Frame, Kind};
use crate::pipeline::CaptureEnd;

/// A frame's reply verdict (`Item.reply`): none, the two words, or still waiting for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    None,
    Unanswered,
    NoReplyYet,
    Pending,
}

/// Where an item's verdict lives. A frame that waits for its exchange shares its verdict with
/// the waiting list: the exchange may settle it after the frame left the hold (past
/// `max_wait`), and it is read when the line is printed, as Python's shared `Item` is.
#[derive(Debug)]
pub enum Reply {
    Now(Verdict),
    Shared(Rc<Cell<Verdict>>),
}

impl Reply {
    pub fn get(&self) -> Verdict {
        match self {
            Reply::Now(v) => *v,
            Reply::Shared(c) => c.get(),
        }
    }

    fn set(&mut self, v: Verdict) {
        match self {
            Reply::Now(x) => *x = v,
            Reply::Shared(c) => c.set(v),
        }
    }
}

/// An engine record as the timeline's stages see it (`pipeline.Event`).
#[derive(Debug)]
pub enum Event {
    /// A frame, as its line's text.
    Frame(FrameLine),
    /// One of a frame's own anomalies (`ev.frame` set): never a line, but an item.
    FrameAnomaly {
        packet: u64,
    },
    /// An anomaly without a frame. Boxed, as the capture's end: items are moved through
    /// several stages per line, and these rare events would otherwise size every item.
    Anomaly(Box<Anomaly>),
    Exchange,
    Connection {
        server_port: u16,
    },
    CaptureEnd(Box<CaptureEnd>),
}

/// An event with its verdict and stream mark (`source.Item`).
#[derive(Debug)]
pub struct Item {
    pub ev: Event,
    pub reply: Reply,
    /// The stream-break kind (`gap`, `resync`) the frame comes after.
    pub after: Option<Cow<'static, str>>,
}

impl Item {
    fn new(ev: Event) -> Item {
        Item {
            ev,
            reply: Reply::Now(Verdict::None),
            after: None,
        }
    }
}

/// What pairs a request with the exchange that settles it: (stream, packet, id, type).
type Key = (u64, u64, Option<i64>, Cow<'static, str>);

/// How many early verdicts `annotate` keeps at most (the oldest is dropped past it).
const MAX_EARLY: usize = 100_000;

/// `annotate`'s state for one run.
pub struct Annotator {
    /// Kinds of frameless anomalies that mark their stream's next frame (`STREAM_BREAKS`).
    breaks: HashSet<String>,
    /// Items held at most while the head waits (`MAX_WAIT`).
    max_wait: usize,
    queue: VecDeque<Item>,
    waiting: HashMap<Key, VecDeque<Rc<Cell<Verdict>>>>,
    /// Verdicts that came before their frame, with their insertion number, and the insertion
    /// order (entries whose number no longer matches were taken and are skipped): Python's
    /// insertion-ordered dict, whose oldest entry goes past [`MAX_EARLY`].
    early: HashMap<Key, (ExchangeStatus, u64)>,
    early_order: VecDeque<(Key, u64)>,
    early_seq: u64,
    broken: HashMap<u64, (Cow<'static, str>, u64)>,
}

fn resolve(status: ExchangeStatus) -> Verdict {
    if status == ExchangeStatus::Unanswered {
        Verdict::Unanswered
    } else {
        Verdict::None
    }
}

impl Annotator {
    pub fn new(breaks: HashSet<String>, max_wait: usize) -> Annotator {
        Annotator {
            breaks,
            max_wait,
            queue: VecDeque::new(),
            waiting: HashMap::new(),
            early: HashMap::new(),
            early_order: VecDeque::new(),
            early_seq: 0,
            broken: HashMap::new(),
        }
    }

    /// Takes `ev` and appends to `out` the items that may leave now, in order.
    pub fn push(&mut self, ev: Event, out: &mut Vec<Item>) {
        let item = Item::new(ev);
        match &item.ev {
            Event::Anomaly(a) => {
                if let Some(stream) = a.stream {
                    if self.breaks.contains(a.kind.as_ref()) {
                        self.broken.insert(stream, (a.kind.clone(), a.packet));
                    }
                }
            }
            Event::CaptureEnd(_) => {
                for q in self.waiting.values() {
                    for cell in q {
                        cell.set(Verdict::None);
                    }
                }
                self.waiting.clear();
                self.early.clear();
                self.early_order.clear();
                self.broken.clear();
            }
            // A frame's verdict and mark are found by [`Annotator::frame`], from the frame.
            Event::Frame(_)
            | Event::FrameAnomaly { .. }
            | Event::Exchange
            | Event::Connection { .. } => {}
        }
        self.queue.push_back(item);
        self.release(out);
    }

    /// A frame (`f`, made into `line`): its stream-break mark and its verdict, known or awaited.
    pub fn frame(&mut self, f: &Frame, line: FrameLine, out: &mut Vec<Item>) {
        let mut item = Item::new(Event::Frame(line));
        if let Some((kind, packet)) = self.broken.get(&f.stream) {
            if f.first_packet >= *packet {
                item.after = Some(kind.clone());
                self.broken.remove(&f.stream);
            }
        }
        if f.kind == Kind::Request && f.peer_packet.is_none() {
            if f.awaiting {
                item.reply = Reply::Now(Verdict::NoReplyYet);
            } else {
                let key = (f.stream, f.packet, f.correlation_id, f.type_.clone());
                match self.take_early(&key) {
                    Some(status) => item.reply = Reply::Now(resolve(status)),
                    None => {
                        let cell = Rc::new(Cell::new(Verdict::Pending));
                        self.waiting.entry(key).or_default().push_back(cell.clone());
                        item.reply = Reply::Shared(cell);
                    }
                }
            }
        }
        self.queue.push_back(item);
        self.release(out);
    }

    /// An exchange: settles the request waiting for it, or is kept for the request to come
    /// (then the exchange's own item follows, as every event is one).
    pub fn exchange(&mut self, key: Key, status: ExchangeStatus, out: &mut Vec<Item>) {
        if let Some(q) = self.waiting.get_mut(&key) {
            if let Some(cell) = q.pop_front() {
                cell.set(resolve(status));
            }
            if q.is_empty() {
                self.waiting.remove(&key);
            }
        } else {
            self.put_early(key, status);
        }
        self.push(Event::Exchange, out);
    }

    /// Everything still held, in order (the end of the run).
    pub fn drain(&mut self, out: &mut Vec<Item>) {
        while let Some(mut head) = self.queue.pop_front() {
            if head.reply.get() == Verdict::Pending {
                head.reply.set(Verdict::None);
            }
            out.push(head);
        }
    }

    fn release(&mut self, out: &mut Vec<Item>) {
        while let Some(head) = self.queue.front() {
            if head.reply.get() == Verdict::Pending && self.queue.len() <= self.max_wait {
                break;
            }
            let mut head = self.queue.pop_front().expect("front");
            if head.reply.get() == Verdict::Pending {
                head.reply.set(Verdict::None);
            }
            out.push(head);
        }
    }

    fn take_early(&mut self, key: &Key) -> Option<ExchangeStatus> {
        self.early.remove(key).map(|(s, _)| s)
    }

    fn put_early(&mut self, key: Key, status: ExchangeStatus) {
        if let Some(e) = self.early.get_mut(&key) {
            e.0 = status; // a dict keeps the first position of a key set again
            return;
        }
        self.early_seq += 1;
        self.early.insert(key.clone(), (status, self.early_seq));
        self.early_order.push_back((key, self.early_seq));
        if self.early.len() > MAX_EARLY {
            while let Some((k, seq)) = self.early_order.pop_front() {
                if self.early.get(&k).is_some_and(|e| e.1 == seq) {
                    self.early.remove(&k);
                    break;
                }
            }
        }
        // Taken entries leave stale places in the order: drop them before they outnumber the
        // live ones, so the order stays bounded with the map.
        if self.early_order.len() > 2 * self.early.len() + 1024 {
            let early = &self.early;
            self.early_order
                .retain(|(k, seq)| early.get(k).is_some_and(|e| e.1 == *seq));
        }
    }
}

/// `in_packet_order`: up to `window` lines kept, the one with the smallest packet let out first
/// (arrival order among equal packets).
///
/// Kept sorted in a deque rather than a heap: lines arrive almost in packet order, so a new one
/// nearly always goes at the back and the one let out is the front, with no item moved; a heap
/// moved every line through log2(window) places on its way out (~2% of the plain timeline). A
/// line that arrives late is inserted in its place, moving at most half the window (256 lines
/// in the CLI): bounded whatever the order of a capture's lines.
pub struct Reorder {
    window: usize,
    kept: VecDeque<(u64, Item)>,
}

impl Reorder {
    pub fn new(window: usize) -> Reorder {
        Reorder {
            window,
            kept: VecDeque::new(),
        }
    }

    /// Takes `item` and appends to `out` what leaves now.
    pub fn push(&mut self, item: Item, out: &mut Vec<Item>) {
        if self.window == 0 {
            out.push(item);
            return;
        }
        let packet = match &item.ev {
            Event::Frame(line) => line.packet,
            Event::FrameAnomaly { packet } => *packet,
            Event::Anomaly(a) => a.packet,
            Event::Exchange => {
                out.push(item);
                return;
            }
            Event::Connection { .. } | Event::CaptureEnd(_) => {
                self.drain(out);
                out.push(item);
                return;
            }
        };
        // After every kept line of the same or a smaller packet: arrival order among equals.
        if self.kept.back().is_none_or(|(p, _)| *p <= packet) {
            self.kept.push_back((packet, item));
        } else {
            let at = self.kept.partition_point(|(p, _)| *p <= packet);
            self.kept.insert(at, (packet, item));
        }
        if self.kept.len() > self.window {
            out.push(self.kept.pop_front().expect("kept").1);
        }
    }

    /// Everything kept, smallest packet first.
    pub fn drain(&mut self, out: &mut Vec<Item>) {
        out.extend(self.kept.drain(..).map(|(_, item)| item));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frame-anomaly items stand for lines here: the window orders items by packet alone.
    fn item(packet: u64, tag: &'static str) -> Item {
        let mut it = Item::new(Event::FrameAnomaly { packet });
        it.after = Some(Cow::Borrowed(tag));
        it
    }

    #[test]
    fn reorder_lets_out_the_smallest_packet_then_the_first_arrived() {
        // Worked by hand with a window of 2: after 5a, 3: [3, 5a]; 5b makes three, 3 leaves;
        // 1 goes first and leaves; 4 goes first and leaves; the end lets out 5a then 5b.
        let mut r = Reorder::new(2);
        let mut out = Vec::new();
        for (p, t) in [(5, "5a"), (3, "3"), (5, "5b"), (1, "1"), (4, "4")] {
            r.push(item(p, t), &mut out);
        }
        r.drain(&mut out);
        let tags: Vec<_> = out.iter().map(|i| i.after.as_deref().unwrap()).collect();
        assert_eq!(tags, ["3", "1", "4", "5a", "5b"]);
    }
}
