//! The loop of `pipeline.dissect_capture` up to reassembly: records → segments → stream events.
//!
//! For every record it says that the record was read (its number and time: the pipeline's clock
//! for releasing held frames), flags a record cut by the snap length, and passes what the
//! reassembler made of its TCP segment. After the last record the reassembler flushes every
//! connection still open.

use crate::capture::CaptureReader;
use crate::packet::parse_tcp;
use crate::tcp::{Reassembler, Retention, TcpEvent};

/// What one step of the capture produced, in the order the reference pipeline sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A record was read (every record, TCP or not).
    Record { number: u64, ts_us: i64 },
    /// The record holds fewer bytes than were on the wire.
    TruncatedPacket {
        number: u64,
        caplen: u64,
        orig_len: u64,
    },
    /// The record's time in the file was unusable (it carries the capture's last good time).
    BadTimestamp { number: u64, note: String },
    /// What reassembly made of the record's segment.
    Tcp(TcpEvent),
    /// The last record was read; what follows is the flush of the connections still open.
    End,
}

/// A capture read and reassembled in steps of a few records.
pub struct StreamEngine {
    pub reader: CaptureReader,
    pub tcp: Reassembler,
    /// Number of the last record read.
    pub packets: u64,
    finished: bool,
}

impl StreamEngine {
    pub fn new(reader: CaptureReader, max_out_of_order: usize, server_ports: Vec<u16>) -> Self {
        StreamEngine {
            reader,
            tcp: Reassembler::new(max_out_of_order, server_ports),
            packets: 0,
            finished: false,
        }
    }

    /// Sets the server ports and the out-of-order bound (before the first step).
    pub fn configure(
        &mut self,
        max_out_of_order: usize,
        server_ports: Vec<u16>,
        retention: Retention,
    ) {
        self.tcp = Reassembler::new(max_out_of_order, server_ports);
        self.tcp.set_retention(retention);
    }

    /// Whether the capture has been read to its end and every connection flushed.
    pub fn finished(&self) -> bool {
        self.finished
    }

    /// Reads up to `max_records` records (and `max_events` events, roughly) into `out`.
    /// At the end of the capture the connections still open are flushed and `finished()` turns true.
    pub fn step(&mut self, max_records: usize, max_events: usize, out: &mut Vec<Event>) {
        let mut n = 0;
        while n < max_records && out.len() < max_events {
            let Some(rec) = self.reader.next_record() else {
                if !self.finished {
                    out.push(Event::End);
                    self.tcp.finish();
                    out.extend(self.tcp.events.drain(..).map(Event::Tcp));
                    self.finished = true;
                }
                return;
            };
            n += 1;
            self.packets = rec.number;
            out.push(Event::Record {
                number: rec.number,
                ts_us: rec.ts_us,
            });
            if rec.orig_len as usize > rec.data.len() {
                out.push(Event::TruncatedPacket {
                    number: rec.number,
                    caplen: rec.data.len() as u64,
                    orig_len: rec.orig_len as u64,
                });
            }
            if let Some(note) = &rec.ts_note {
                out.push(Event::BadTimestamp {
                    number: rec.number,
                    note: note.clone(),
                });
            }
            let (number, ts_us, linktype) = (rec.number, rec.ts_us, rec.linktype);
            self.tcp.expire(ts_us); // connections done with: rows out, state dropped
            if let Some(seg) = parse_tcp(linktype, rec.data) {
                self.tcp.segment(&seg, number, ts_us);
            }
            out.extend(self.tcp.events.drain(..).map(Event::Tcp));
        }
    }
}
