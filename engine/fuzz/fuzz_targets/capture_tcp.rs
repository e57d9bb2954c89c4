//! The capture reader, link/IP/TCP parsing and TCP reassembly on arbitrary bytes: they must
//! never panic, loop or allocate beyond their bounds, whatever the file holds (pcap, pcapng or
//! any of the compressed inputs, recognised by magic as for a real file).
#![no_main]

use libfuzzer_sys::fuzz_target;
use wiredump_engine::capture::{CaptureReader, Input};
use wiredump_engine::stream::StreamEngine;

fuzz_target!(|data: &[u8]| {
    let input = Input::Reader("fuzz".to_string(), Box::new(std::io::Cursor::new(data.to_vec())));
    let Ok(reader) = CaptureReader::open(input) else { return };
    // A small out-of-order bound so the buffer-full paths are reached too.
    let mut engine = StreamEngine::new(reader, 4096, vec![9092, 6650]);
    let mut events = Vec::new();
    while !engine.finished() {
        events.clear();
        engine.step(64, 4096, &mut events);
    }
});
