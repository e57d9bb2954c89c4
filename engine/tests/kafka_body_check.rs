//! `body::check_body` (the walk that builds nothing, used to try layouts) against
//! `body::decode_body_limited` (the walk that builds the tree): for every request and response
//! plan of the schema, over the real Kafka frames of the shared captures, all their truncations,
//! single-byte mutations and small element budgets, the two must agree on error or not, the
//! error's kind, place and sizes (and its `what` where it is a field's name), where the body
//! ended, and the record sets `records::locate_record_sets` finds in the tree. The record sets
//! found are also read both ways a layout trial could read them (messages made or not): the
//! problems must be the same.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};

use wiredump_engine::capture::{CaptureReader, Input};
use wiredump_engine::codecs::Limits;
use wiredump_engine::kafka::body::{check_against_decode, Checked, DecodeError, MAX_ELEMENTS};
use wiredump_engine::kafka::header::{request_header, response_header};
use wiredump_engine::kafka::records::{decode_record_set_in_frame, decode_record_set_listing};
use wiredump_engine::kafka::schema::{
    plan, request_header_version, response_header_version, Plan, API_PLANS,
};
use wiredump_engine::model::Kind;
use wiredump_engine::pipeline::{Dissection, Options, Record};
use wiredump_engine::registry;

/// Both walks over `data[start..]` (`body::check_against_decode`); panics where they disagree.
fn agree(data: &[u8], start: usize, plan: &'static Plan, budget: u64, what: &str) -> Checked {
    check_against_decode(data, start, plan, budget)
        .unwrap_or_else(|e| panic!("{what} at {start} budget {budget}: {e}"))
}

/// The record sets a check found, read as the first of a frame with messages made (what the
/// layout trial read before) and without (what it reads now): the same problems.
fn same_problems(data: &[u8], sets: &[Range<usize>], what: &str) -> usize {
    for r in sets {
        let bytes = &data[r.clone()];
        let kept = decode_record_set_in_frame(bytes, true, &mut Limits::default(), 0);
        let checked =
            decode_record_set_listing(bytes, true, &mut Limits::default(), 0, 0, 0, false);
        assert_eq!(kept.problems, checked.problems, "{what}: set {r:?}");
        assert_eq!(kept.record_count, checked.record_count, "{what}: set {r:?}");
    }
    sets.len()
}

/// A Kafka frame of a capture, whole (size prefix included), with what it was decoded as.
struct RealFrame {
    name: String,
    data: Vec<u8>,
    key: i16,
    version: i16,
    response: bool,
}

fn captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut paths = vec![root.join("samples/kafka-basic.pcap")];
    let shared = root.join("../shared/captures/kafka");
    let shared = if shared.is_dir() {
        shared
    } else {
        PathBuf::from("/work/shared/captures/kafka")
    };
    let mut found: Vec<PathBuf> = std::fs::read_dir(&shared)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    paths.extend(found);
    paths.retain(|p| p.is_file());
    paths
}

/// Every distinct Kafka frame of the captures, as the engine reassembles and frames them.
fn real_frames() -> Vec<RealFrame> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for path in captures() {
        let reader = CaptureReader::open(Input::Path(path.display().to_string())).expect("pcap");
        let opts = Options {
            keep_bytes: true,
            ..Options::default()
        };
        let mut d = Dissection::new(reader, opts, registry::protocols()).expect("options");
        while let Some(r) = d.next_record() {
            let Record::Frame(f) = r else { continue };
            let f = f.borrow();
            let (Some(data), Some(version)) = (&f.data, f.version) else {
                continue;
            };
            if f.protocol != "kafka" || !seen.insert(data.clone()) {
                continue;
            }
            out.push(RealFrame {
                name: format!(
                    "{} #{} {} v{version} {:?}",
                    path.file_name().unwrap().to_string_lossy(),
                    f.packet,
                    f.type_,
                    f.kind
                ),
                data: data.clone(),
                key: f.type_code as i16,
                version: version as i16,
                response: f.kind == Kind::Response,
            });
        }
    }
    out
}

/// Where the body of `f` starts under its own header, if the header reads.
fn body_start(f: &RealFrame) -> Option<usize> {
    if f.response {
        let hv = response_header_version(f.key, f.version);
        response_header(&f.data, hv).ok().map(|h| h.body_start)
    } else {
        let hv = request_header_version(f.key, f.version);
        request_header(&f.data, hv).ok().map(|h| h.body_start)
    }
}

/// Every start a layout trial may try on `data`: after each request and response header
/// version, and the response header's 8 bytes.
fn starts(data: &[u8]) -> BTreeSet<usize> {
    let mut s = BTreeSet::from([8]);
    for hv in 0..=2 {
        if let Ok(h) = request_header(data, hv) {
            s.insert(h.body_start);
        }
    }
    if let Ok(h) = response_header(data, 1) {
        s.insert(h.body_start);
    }
    s.retain(|&x| x <= data.len());
    s
}

/// Single-byte mutations of `body[start..]`: every position (strided past 200) with values
/// that make lengths null, negative, huge, zero, or varints long.
fn mutations(data: &[u8], start: usize) -> impl Iterator<Item = (usize, Vec<u8>)> + '_ {
    let n = data.len() - start;
    let step = (n / 200).max(1);
    (start..data.len()).step_by(step).flat_map(move |i| {
        [0x00u8, 0xff, 0x80, 0x01, data[i] ^ 0x01]
            .into_iter()
            .filter(move |&v| v != data[i])
            .map(move |v| {
                let mut m = data.to_vec();
                m[i] = v;
                (i, m)
            })
    })
}

#[test]
fn check_agrees_with_decode_on_real_frames_under_every_plan() {
    let frames = real_frames();
    // The captures hold hundreds of distinct Kafka frames of many APIs: a test over few would
    // prove little.
    assert!(frames.len() > 300, "only {} frames", frames.len());
    let apis: BTreeSet<i16> = frames.iter().map(|f| f.key).collect();
    assert!(apis.len() >= 15, "only APIs {apis:?}");
    let (mut whole, mut sets) = (0, 0);
    for f in &frames {
        for start in starts(&f.data) {
            for p in API_PLANS {
                for plan in [p.request, p.response].into_iter().flatten() {
                    let c = agree(&f.data, start, plan, MAX_ELEMENTS, &f.name);
                    if c.error.is_none() && c.end == f.data.len() {
                        whole += 1;
                        sets += same_problems(&f.data, &c.records, &f.name);
                    }
                }
            }
        }
    }
    eprintln!(
        "{} frames, {whole} whole reads, {sets} record sets",
        frames.len()
    );
    // Every frame reads whole at least with its own layout; record sets were among them.
    assert!(whole >= frames.len(), "{whole} whole reads");
    assert!(sets > 50, "{sets} record sets");
}

#[test]
fn check_agrees_with_decode_on_cut_and_mutated_frames() {
    let frames = real_frames();
    let mut own_whole = 0;
    let mut tried = 0u64;
    for f in &frames {
        let Some(plan) = plan(f.key, f.version, f.response) else {
            continue;
        };
        let Some(start) = body_start(f) else { continue };
        let c = agree(&f.data, start, plan, MAX_ELEMENTS, &f.name);
        if c.error.is_none() && c.end == f.data.len() {
            own_whole += 1;
        }
        // Small budgets: elements (and their record sets) read past them are not kept.
        for budget in [0, 1, 2, 3, 5] {
            agree(&f.data, start, plan, budget, &f.name);
        }
        // Every cut of the first 300 bytes, then strided (cut walks are quadratic).
        let step = ((f.data.len() - start) / 300).max(1);
        let cuts = (start..f.data.len()).filter(|c| c - start < 300 || (c - start) % step == 0);
        for cut in cuts {
            agree(&f.data[..cut], start, plan, MAX_ELEMENTS, &f.name);
            tried += 1;
        }
        for (i, m) in mutations(&f.data, start) {
            let mc = agree(&m, start, plan, MAX_ELEMENTS, &f.name);
            agree(&m, start, plan, 2, &f.name);
            // A record set's bytes changed: read both ways (its problems are what changed).
            if c.records.iter().any(|r| r.contains(&i)) {
                same_problems(&m, &mc.records, &f.name);
            }
            tried += 1;
        }
    }
    eprintln!(
        "{} frames, {own_whole} read whole by their own plan, {tried} variants",
        frames.len()
    );
    assert!(
        own_whole * 10 >= frames.len() * 9,
        "{own_whole} of {}",
        frames.len()
    );
    assert!(tried > 100_000, "{tried} variants");
}

/// Hand-made flexible bodies: unknown tags, a tag longer than the bytes, a tag count larger
/// than the bytes, varints longer than five bytes, a null where one is allowed and where none is.
#[test]
fn check_agrees_on_hand_made_flexible_bodies() {
    // FindCoordinator v3 response: throttle, error_code, error_message (compact null), node_id,
    // host "h", port, then the tag section.
    let head = vec![0, 0, 0, 5, 0, 15, 0, 0, 0, 0, 1, 2, b'h', 0, 0, 0x23, 0x84];
    let p = plan(10, 3, true).expect("FindCoordinator v3");
    let tails: [&[u8]; 7] = [
        &[0],                            // no tags
        &[1, 7, 2, 0xaa, 0xbb],          // unknown tag 7, 2 bytes
        &[1, 7, 5, 0xaa],                // tag longer than the bytes
        &[9, 7, 0],                      // 9 tags in 2 bytes
        &[0xff, 0xff, 0xff, 0xff, 0xff], // count varint longer than 5 bytes
        &[2, 7, 0, 8, 1, 0],             // two unknown tags
        &[1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
    ];
    for t in tails {
        let mut b = head.clone();
        b.extend_from_slice(t);
        agree(&b, 0, p, MAX_ELEMENTS, "FindCoordinator v3 tags");
        for cut in 0..b.len() {
            agree(&b[..cut], 0, p, MAX_ELEMENTS, "FindCoordinator v3 tags cut");
        }
    }
    // Metadata v12 request (flexible): topics compact array of { topic_id uuid, name compact
    // nullable string, tags }, allow_auto_topic_creation, include_topic_authorized_operations,
    // tags. A null name is allowed; the same bytes as a non-nullable string elsewhere are not.
    let mut m = vec![2];
    m.extend([0u8; 16]);
    m.extend([0, 0]); // name null, no tags
    m.extend([1, 0, 0]);
    let p = plan(3, 12, false).expect("Metadata v12");
    let c = agree(&m, 0, p, MAX_ELEMENTS, "Metadata v12");
    assert_eq!((c.end, c.error), (m.len(), None));
    // CreateTopics v5 request: topics[{ name (non-nullable) ...}] with a null name.
    let p = plan(19, 5, false).expect("CreateTopics v5");
    let c = agree(
        &[2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
        0,
        p,
        MAX_ELEMENTS,
        "CreateTopics v5",
    );
    assert!(
        matches!(c.error, Some(DecodeError::Bad { offset: 2, .. })),
        "{c:?}"
    );
}
