//! Joining chunked messages: one logical message sent as several SEND/MESSAGE frames (the twin
//! of `chunks.py`).
//!
//! A producer splits a payload larger than the broker's maximum into chunks that share a uuid
//! (and the producer's name); each chunk's MessageMetadata gives chunk_id, num_chunks_from_msg
//! and total_chunk_msg_size. The chunks are joined in order, then decrypted/decompressed/split
//! once. Memory is bounded: a connection holds at most `max_sets` unfinished chunked messages and
//! `max_bytes` of their chunks; the oldest set goes first, with an anomaly saying so.

use crate::model::{FrameRef, Role};
use crate::printable::str_repr;

/// Which chunked message a chunk belongs to: (role, consumer id for MESSAGE, producer, uuid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkKey {
    pub role: Role,
    pub consumer_id: Option<u64>,
    pub producer_name: String,
    pub uuid: String,
}

impl ChunkKey {
    /// Python's `repr` of the key tuple, as the anomaly texts show it.
    pub fn repr(&self) -> String {
        let consumer = match self.consumer_id {
            Some(c) => c.to_string(),
            None => "None".into(),
        };
        format!(
            "({}, {consumer}, {}, {})",
            str_repr(self.role.as_str()),
            str_repr(&self.producer_name),
            str_repr(&self.uuid)
        )
    }
}

struct ChunkSet {
    key: ChunkKey,
    num_chunks: i64,
    total_size: i64,
    parts: Vec<Vec<u8>>,
    frames: Vec<FrameRef>,
    checksums: Vec<Option<bool>>,
    size: usize,
}

/// A finished chunked message.
pub struct Joined {
    pub payload: Vec<u8>,
    pub chunks: usize,
    pub checksum_ok: Option<bool>,
    pub frames: Vec<FrameRef>,
    pub problem: Option<String>,
}

pub struct ChunkAssembler {
    pub max_sets: usize,
    pub max_bytes: u64,
    held: u64,
    /// Unfinished sets, oldest first.
    sets: Vec<ChunkSet>,
}

impl ChunkAssembler {
    pub fn new(max_bytes: u64) -> ChunkAssembler {
        ChunkAssembler {
            max_sets: 64,
            max_bytes,
            held: 0,
            sets: Vec::new(),
        }
    }

    fn find(&self, key: &ChunkKey) -> Option<usize> {
        self.sets.iter().position(|s| &s.key == key)
    }

    /// Adds one chunk; returns the joined message when this chunk completes it, and problems.
    #[allow(clippy::too_many_arguments)]
    pub fn add(
        &mut self,
        key: ChunkKey,
        chunk_id: i64,
        num_chunks: i64,
        total_size: i64,
        data: &[u8],
        checksum_ok: Option<bool>,
        frame: &FrameRef,
    ) -> (Option<Joined>, Vec<String>) {
        let mut problems = Vec::new();
        let mut at = self.find(&key);
        if chunk_id == 0 {
            if let Some(i) = at {
                problems.push(format!(
                    "chunked message {} restarted at chunk 0 after {} chunks",
                    key.repr(),
                    self.sets[i].parts.len()
                ));
                self.drop_at(i);
                at = None;
            }
        }
        let i = match at {
            None => {
                if chunk_id != 0 {
                    problems.push(format!(
                        "chunk {chunk_id}/{num_chunks} of {} without its earlier chunks",
                        key.repr()
                    ));
                    return (None, problems);
                }
                if num_chunks <= 0 || total_size < 0 || total_size as u64 > self.max_bytes {
                    problems.push(format!(
                        "chunked message {}: implausible {num_chunks} chunks / {total_size} bytes",
                        key.repr()
                    ));
                    return (None, problems);
                }
                self.sets.push(ChunkSet {
                    key: key.clone(),
                    num_chunks,
                    total_size,
                    parts: Vec::new(),
                    frames: Vec::new(),
                    checksums: Vec::new(),
                    size: 0,
                });
                self.sets.len() - 1
            }
            Some(i) => {
                if chunk_id != self.sets[i].parts.len() as i64 {
                    problems.push(format!(
                        "chunk {chunk_id} of {} where chunk {} was expected; message dropped",
                        key.repr(),
                        self.sets[i].parts.len()
                    ));
                    self.drop_at(i);
                    return (None, problems);
                }
                i
            }
        };
        let cs = &mut self.sets[i];
        cs.parts.push(data.to_vec());
        cs.frames.push(frame.clone());
        cs.checksums.push(checksum_ok);
        cs.size += data.len();
        self.held += data.len() as u64;
        problems.extend(self.enforce(&key));
        let Some(i) = self.find(&key) else {
            return (None, problems);
        };
        if (self.sets[i].parts.len() as i64) < self.sets[i].num_chunks {
            return (None, problems);
        }
        let cs = self.sets.remove(i);
        self.held -= cs.size as u64;
        let payload = cs.parts.concat();
        let problem = (cs.total_size != 0 && payload.len() as i64 != cs.total_size).then(|| {
            format!(
                "joined {} bytes, total_chunk_msg_size says {}",
                payload.len(),
                cs.total_size
            )
        });
        let ok = if cs.checksums.contains(&Some(false)) {
            Some(false)
        } else if cs.checksums.iter().all(|c| *c == Some(true)) {
            Some(true)
        } else {
            None
        };
        let joined = Joined {
            payload,
            chunks: cs.parts.len(),
            checksum_ok: ok,
            frames: cs.frames,
            problem,
        };
        (Some(joined), problems)
    }

    /// Unfinished sets: (key, chunks seen, chunks expected).
    pub fn pending(&self) -> Vec<(String, usize, i64)> {
        self.sets
            .iter()
            .map(|s| (s.key.repr(), s.parts.len(), s.num_chunks))
            .collect()
    }

    fn drop_at(&mut self, i: usize) {
        let cs = self.sets.remove(i);
        self.held -= cs.size as u64;
    }

    fn enforce(&mut self, current: &ChunkKey) -> Vec<String> {
        let mut problems = Vec::new();
        while !self.sets.is_empty()
            && (self.sets.len() > self.max_sets || self.held > self.max_bytes)
        {
            let cs = &self.sets[0];
            problems.push(format!(
                "chunked message {} abandoned after {}/{} chunks (over {} sets or {} bytes held)",
                cs.key.repr(),
                cs.parts.len(),
                cs.num_chunks,
                self.max_sets,
                self.max_bytes
            ));
            let was_current = &cs.key == current;
            self.drop_at(0);
            if was_current {
                break;
            }
        }
        problems
    }
}
