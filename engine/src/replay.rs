//! Drives one protocol session call by call, as the framing engine would, without the framer:
//! each `decode` gets exactly the bytes, role and completeness the caller says, its frames are
//! stamped with the packets and time given, and the correlator is drained after every call
//! (linking answered pairs), as `framing.ConnectionFramer` does after each decode.
//!
//! What it is for: the differential tests replay the calls the Python framer made on a real
//! capture (recorded by `tests/replay_support.py`) into the Rust session and compare every frame
//! and exchange; and the fuzz targets drive sessions through it.

use std::rc::Rc;

use crate::model::{Anomaly, Exchange, FrameRef, Frames, Role, Status};
use crate::protocol::{ConnCtx, FrameLen, Protocol, Session};

/// Where the frames of one decode call sit in the capture (the framer's stamp).
#[derive(Clone, Copy, Debug, Default)]
pub struct Stamp {
    /// Packet that completed the frame.
    pub packet: u64,
    /// Packet that carried its first byte.
    pub first_packet: u64,
    /// Time of the completing packet, µs since the epoch.
    pub ts_us: i64,
}

/// One session and its context, driven by hand.
pub struct Replay {
    pub session: Box<dyn Session>,
    pub ctx: ConnCtx,
    protocol: &'static str,
    /// Every exchange drained so far, in the order the correlator gave them.
    pub exchanges: Vec<Exchange>,
    /// Anomalies the session reported outside any frame.
    pub reports: Vec<Anomaly>,
}

impl Replay {
    pub fn new(protocol: &dyn Protocol, ctx: ConnCtx) -> Replay {
        let session = protocol.new_session(&ctx);
        Replay {
            session,
            ctx,
            protocol: protocol.name(),
            exchanges: Vec::new(),
            reports: Vec::new(),
        }
    }

    /// The session's answer for the frame at the head of `buf`.
    pub fn frame_length(&mut self, buf: &[u8], role: Role) -> FrameLen {
        self.session.frame_length(&mut self.ctx, buf, role)
    }

    /// The session's resync answer on `buf`.
    pub fn resync(&mut self, buf: &[u8], role: Role) -> Option<usize> {
        self.session.resync(&mut self.ctx, buf, role)
    }

    /// Decodes one frame's bytes and stamps what comes out as `ConnectionFramer._decode` does:
    /// role, packets, time, length (the data's when one frame came out), `truncated` when the
    /// bytes were cut (status and, on the first frame, the `truncated` anomaly).
    pub fn decode(&mut self, data: &[u8], role: Role, complete: bool, at: Stamp) -> Frames {
        let frames = self.session.decode(&mut self.ctx, data, role, complete);
        let single = frames.len() == 1;
        for (i, f) in frames.iter().enumerate() {
            let mut f = f.borrow_mut();
            f.role = role;
            f.first_packet = at.first_packet;
            f.packet = at.packet;
            f.ts_us = at.ts_us;
            if f.length == 0 && single {
                f.length = data.len() as u64;
            }
            if !complete && f.status == Status::Ok {
                f.status = Status::Truncated;
            }
            if !complete && i == 0 {
                let cut = data.len() as u64;
                f.add(
                    Anomaly::new("truncated", format!("frame cut after {cut} bytes")).at(Some(cut)),
                );
            }
        }
        self.emit(&frames, at);
        self.drain(at);
        frames
    }

    /// Ends the connection as `ConnectionFramer.finish` does: frames the session still held, then
    /// every outstanding request becomes unanswered.
    pub fn close(&mut self, at: Stamp) -> Vec<FrameRef> {
        let frames = self.session.close(&mut self.ctx);
        self.emit(&frames, at);
        self.drain(at);
        let rest = self.ctx.correlator.close();
        self.exchanges.extend(rest);
        frames
    }

    /// `ConnectionFramer._emit`: stream, addresses by role, a packet for frames that have none,
    /// and the frame's anomalies stamped.
    fn emit(&self, frames: &[FrameRef], at: Stamp) {
        let c = &self.ctx;
        for f in frames {
            let mut f = f.borrow_mut();
            f.stream = c.stream;
            let (src, sport, dst, dport) = match f.role {
                Role::Client => (&c.client, c.client_port, &c.server, c.server_port),
                Role::Server => (&c.server, c.server_port, &c.client, c.client_port),
            };
            f.src = Rc::clone(src);
            f.src_port = sport;
            f.dst = Rc::clone(dst);
            f.dst_port = dport;
            if f.packet == 0 {
                f.packet = at.packet;
                f.first_packet = at.packet;
            }
            let packet = f.packet;
            for a in f.anomalies.iter_mut() {
                if a.packet == 0 {
                    a.packet = packet;
                }
                a.stream = Some(c.stream);
                a.protocol = Some(self.protocol);
            }
        }
    }

    fn drain(&mut self, at: Stamp) {
        let ex = self.ctx.correlator.drain();
        self.exchanges.extend(ex);
        for mut a in self.ctx.reports.drain(..) {
            if a.packet == 0 {
                a.packet = at.packet;
            }
            a.stream = Some(self.ctx.stream);
            a.protocol = Some(self.protocol);
            self.reports.push(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correlation::Key;
    use crate::model::{Frame, Kind};

    /// A toy protocol: `[len u8][id u8][payload]`; the client's frames are requests, the
    /// server's the responses with the same id.
    struct Toy;
    struct ToySession;

    impl Protocol for Toy {
        fn name(&self) -> &'static str {
            "toy"
        }
        fn ports(&self) -> &'static [u16] {
            &[]
        }
        fn max_frame(&self) -> u64 {
            255
        }
        fn new_session(&self, _ctx: &ConnCtx) -> Box<dyn Session> {
            Box::new(ToySession)
        }
    }

    impl Session for ToySession {
        fn frame_length(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> FrameLen {
            buf.first()
                .map_or(FrameLen::NeedMore, |&n| FrameLen::Len(n as u64))
        }
        fn resync(&mut self, _ctx: &mut ConnCtx, _buf: &[u8], _role: Role) -> Option<usize> {
            None
        }
        fn decode(
            &mut self,
            ctx: &mut ConnCtx,
            data: &[u8],
            role: Role,
            _complete: bool,
        ) -> Frames {
            let id = data.get(1).copied().unwrap_or(0) as i64;
            let mut f = Frame::new("toy", "Echo", 1);
            f.correlation_id = Some(id);
            f.kind = if role == Role::Client {
                Kind::Request
            } else {
                Kind::Response
            };
            let f = f.shared();
            if role == Role::Client {
                ctx.correlator.request(&f, Key::Int(id), true);
            } else {
                ctx.correlator.response(&f, &Key::Int(id), None);
            }
            smallvec::smallvec![f]
        }
    }

    #[test]
    fn stamps_pairs_and_truncates_as_the_framer() {
        let mut ctx = ConnCtx::standalone("toy", 4);
        ctx.server_port = 9;
        let mut r = Replay::new(&Toy, ctx);
        let at = |p, ts| Stamp {
            packet: p,
            first_packet: p - 1,
            ts_us: ts,
        };
        let req = r.decode(&[3, 7, 0], Role::Client, true, at(2, 1_000));
        let resp = r.decode(&[2, 7], Role::Server, true, at(5, 1_250));
        let cut = r.decode(&[9, 8, 1], Role::Client, false, at(6, 1_300));
        r.close(Stamp::default());
        let (req, resp, cut) = (req[0].borrow(), resp[0].borrow(), cut[0].borrow());
        assert_eq!((req.packet, req.first_packet, req.length), (2, 1, 3));
        assert_eq!((req.src.as_ref(), req.dst_port), ("10.0.0.1", 9));
        assert_eq!((resp.src_port, resp.dst.as_ref()), (9, "10.0.0.1"));
        assert_eq!(req.peer_packet, Some(5));
        assert_eq!((resp.peer_packet, resp.latency_us), (Some(2), Some(250)));
        assert_eq!(cut.status, Status::Truncated);
        assert_eq!(cut.anomalies[0].detail, "frame cut after 3 bytes");
        assert_eq!(cut.anomalies[0].offset, Some(3));
        assert_eq!(cut.anomalies[0].stream, Some(4));
        let statuses: Vec<_> = r.exchanges.iter().map(|e| e.status.as_str()).collect();
        assert_eq!(statuses, ["answered", "unanswered"]);
        assert_eq!(r.exchanges[1].request_packet, Some(6));
    }
}
