//! `CaptureNotes` (`wiredump/cli/notes.py`): what the timeline says about a capture as a whole,
//! once, at its end: that it held no broker traffic (with its connections' server ports), and
//! one line for all the packets the snap length cut instead of one line each.

use std::collections::HashMap;

use super::text::{escape, plural};
use crate::model::Anomaly;

/// Per-capture counts; [`CaptureNotes::end`] makes the lines and starts again.
#[derive(Default)]
pub struct CaptureNotes {
    /// `-A` shows each snap-length anomaly: then there is no summary.
    pub summarise_snap: bool,
    /// Server ports named at most in the no-traffic line (`notes.MAX_PORTS`).
    max_ports: usize,
    frames: u64,
    connections: u64,
    ports: HashMap<u16, u64>,
    snap: u64,
    snap_first: Option<Anomaly>,
    snap_last: u64,
}

impl CaptureNotes {
    pub fn new(summarise_snap: bool, max_ports: usize) -> CaptureNotes {
        CaptureNotes {
            summarise_snap,
            max_ports,
            ..CaptureNotes::default()
        }
    }

    pub fn frame(&mut self) {
        self.frames += 1;
    }

    pub fn connection(&mut self, server_port: u16) {
        self.connections += 1;
        *self.ports.entry(server_port).or_insert(0) += 1;
    }

    /// A snap-length anomaly without a frame; true when the summary replaces its line.
    pub fn snap(&mut self, a: &Anomaly) -> bool {
        self.snap += 1;
        if self.snap_first.is_none() {
            self.snap_first = Some(a.clone());
        }
        self.snap_last = a.packet;
        self.summarise_snap
    }

    /// The lines for the capture that ends (`packets` it held; `name` prefixes them when the
    /// run has several captures); the counts start again. `titles` names the protocols
    /// (`notes.protocol_titles()`), `snap_kind` the anomaly kind summarised.
    pub fn end(
        &mut self,
        packets: u64,
        name: Option<&str>,
        titles: &str,
        snap_kind: &str,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        let place = name
            .filter(|n| !n.is_empty())
            .map(|n| format!("{}: ", escape(n)))
            .unwrap_or_default();
        if self.frames == 0 {
            lines.push(format!("{place}{}", self.no_frames(packets, titles)));
        }
        if self.snap > 0 && self.summarise_snap {
            if let Some(first) = &self.snap_first {
                let span = if self.snap == 1 {
                    format!("#{}", first.packet)
                } else {
                    format!("#{} to #{}", first.packet, self.snap_last)
                };
                lines.push(format!(
                    "{place}{} ({span}) cut by the snap length or claiming a longer original length \
                     than captured, e.g. #{}: {} (each is a {snap_kind} row of the anomalies \
                     table; -A shows each)",
                    plural(self.snap, "packet"),
                    first.packet,
                    escape(&first.detail),
                ));
            }
        }
        *self = CaptureNotes::new(self.summarise_snap, self.max_ports);
        lines
    }

    /// `notes.no_frames`.
    fn no_frames(&self, packets: u64, titles: &str) -> String {
        if self.connections == 0 {
            return format!(
                "no {titles} frames: no TCP connection in {}",
                plural(packets, "packet")
            );
        }
        let mut order: Vec<u16> = self.ports.keys().copied().collect();
        order.sort_by_key(|p| (std::cmp::Reverse(self.ports[p]), *p));
        let mut shown = order
            .iter()
            .take(self.max_ports)
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        if order.len() > self.max_ports {
            shown.push_str(", …");
        }
        format!(
            "no {titles} frames in {} ({} {shown}); try -d PORT=PROTO",
            plural(self.connections, "TCP connection"),
            if order.len() == 1 { "port" } else { "ports" },
        )
    }
}
