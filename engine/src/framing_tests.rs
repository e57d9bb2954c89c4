//! The framer reads a delivery in place when nothing is buffered, and copies only what must
//! wait: the frames, their packets and the anomalies must be those of the same bytes buffered
//! on delivery. A one-byte-length protocol (a frame is its length byte `n` < 0x80 and `n` more
//! bytes; 0xFF is not a frame start; resync finds the next byte below 0x80), fed so that every
//! case happens: frames whole in one delivery, several in one, one split over three, garbage
//! in the middle of a delivery, a frame cut by the end.

use super::*;
use crate::model::Kind;

struct OneByte;

impl Session for OneByte {
    fn frame_length(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> FrameLen {
        match buf.first() {
            None => FrameLen::NeedMore,
            Some(&b) if b >= 0x80 => FrameLen::NotAFrame,
            Some(&b) => FrameLen::Len(u64::from(b) + 1),
        }
    }

    fn resync(&mut self, _ctx: &mut ConnCtx, buf: &[u8], _role: Role) -> Option<usize> {
        buf.iter().position(|b| *b < 0x80)
    }

    fn decode(
        &mut self,
        _ctx: &mut ConnCtx,
        data: &[u8],
        _role: Role,
        complete: bool,
    ) -> crate::model::Frames {
        let mut f = Frame::new("onebyte", "F", 0);
        f.kind = Kind::Event;
        f.summary = format!("{:?} {complete}", &data[1.min(data.len())..]);
        smallvec::smallvec![f.shared()]
    }
}

#[derive(Default)]
struct Keep {
    seen: Vec<String>,
}

impl Output for Keep {
    fn frame(&mut self, frame: FrameRef) {
        let f = frame.borrow();
        let notes: Vec<String> = f.anomalies.iter().map(|a| a.detail.clone()).collect();
        self.seen.push(format!(
            "frame {} packets {}-{} status {} {notes:?}",
            f.summary,
            f.first_packet,
            f.packet,
            f.status.as_str()
        ));
    }
    fn anomaly(&mut self, a: Anomaly) {
        self.seen
            .push(format!("anomaly {} at {}: {}", a.kind, a.packet, a.detail));
    }
    fn exchange(&mut self, _e: Exchange) {}
}

fn framed(deliveries: &[&[u8]]) -> Vec<String> {
    let ctx = ConnCtx::standalone("onebyte", 0);
    let mut f = ConnectionFramer::new("onebyte", 0, 1 << 20, Box::new(OneByte), ctx, false);
    let mut out = Keep::default();
    for (k, d) in deliveries.iter().enumerate() {
        f.feed(&mut out, Role::Client, d, k as u64 + 1, 0);
    }
    f.finish(&mut out);
    out.seen
}

#[test]
fn deliveries_read_in_place_frame_as_buffered_bytes() {
    let got = framed(&[
        &[2, 10, 11, 1, 12],         // packet 1: two whole frames
        &[3, 13],                    // 2: a frame begins
        &[14],                       // 3: goes on
        &[15, 0, 0xFF, 0xFF, 1, 16], // 4: ends; an empty frame; garbage; a whole frame
        &[1, 17, 4, 18],             // 5: a frame; one cut by the end
    ]);
    // By hand: frames [10 11] and [12] of packet 1, [13 14 15] from 2 to 4, [] and [16] of 4
    // around 2 skipped bytes, [17] of 5, then [18] cut (4 declared, 1 came).
    assert_eq!(
        got,
        [
            "frame [10, 11] true packets 1-1 status ok []",
            "frame [12] true packets 1-1 status ok []",
            "frame [13, 14, 15] true packets 2-4 status ok []",
            "frame [] true packets 4-4 status ok []",
            "anomaly resync at 4: skipped 2 client bytes that are not onebyte frames; \
             resynchronised at stream offset 12",
            "frame [16] true packets 4-4 status ok []",
            "frame [17] true packets 5-5 status ok []",
            "frame [18] false packets 5-5 status truncated [\"frame cut after 2 bytes\"]",
        ]
    );
}
