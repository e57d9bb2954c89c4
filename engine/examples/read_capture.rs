//! Reads and reassembles a capture with the engine alone (no Python), for benchmarks/engine_read.py:
//! prints packets, listener events (data, gap, close, anomaly), payload bytes delivered and seconds.
//!
//!     cargo run --release --example read_capture -- capture.pcap

use std::time::Instant;

use wiredump_engine::capture::{CaptureReader, Input};
use wiredump_engine::stream::{Event, StreamEngine};
use wiredump_engine::tcp::TcpEvent;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: read_capture CAPTURE");
        std::process::exit(2);
    };
    let t0 = Instant::now();
    let reader = match CaptureReader::open(Input::Path(path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let mut engine = StreamEngine::new(reader, 8 << 20, vec![9092, 6650, 12345, 11011]);
    let (mut events, mut bytes) = (0u64, 0u64);
    let mut out = Vec::new();
    while !engine.finished() {
        out.clear();
        engine.step(4096, 16384, &mut out);
        for ev in &out {
            // Counted as the Python listener is called: data, gap, close, anomaly.
            match ev {
                Event::Tcp(TcpEvent::Data { data, .. }) => {
                    events += 1;
                    bytes += data.len() as u64;
                }
                Event::Tcp(
                    TcpEvent::Gap { .. } | TcpEvent::Close { .. } | TcpEvent::Anomaly { .. },
                ) => events += 1,
                _ => {}
            }
        }
    }
    let secs = t0.elapsed().as_secs_f64();
    println!("{} {} {} {:.3}", engine.packets, events, bytes, secs);
}
