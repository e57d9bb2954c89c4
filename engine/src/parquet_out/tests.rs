//! The files on hand-made records, read back with the crate's own reader: the rows and their
//! values, the row groups cut at the bounds, the encodings and statistics asked for, an empty
//! table, and errors that name the file (a missing directory, a full disk).

use std::path::PathBuf;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::Array;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding};
use parquet::file::reader::{FileReader, SerializedFileReader};

use super::*;
use crate::arrow_out::tests::frame;
use crate::arrow_out::{TableOptions, TableSet};

fn settings() -> WriteSettings {
    WriteSettings {
        zstd_level: 3,
        dictionary: vec!["protocol".into(), "topic".into()],
        no_statistics: vec!["detail".into(), "summary".into(), "headers".into()],
        row_group_rows: 1 << 20,
        row_group_bytes: 8 << 20,
        page_bytes: 1 << 20,
    }
}

/// A fresh directory of this test's own.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wiredump-parquet-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Frames with packets 10, 11, …, each carrying two messages, one batch per frame.
fn batches(frames: u64) -> (TableSet, Vec<(Table, RecordBatch)>) {
    let mut set = TableSet::new(TableOptions {
        values: true,
        batch_rows: 1,
        batch_bytes: 1 << 20,
        cut_anywhere: false,
    });
    for p in 10..10 + frames {
        set.frame("cap.pcap", &frame(p, 2)).unwrap();
    }
    set.finish().unwrap();
    let out = std::iter::from_fn(|| set.pop()).collect();
    (set, out)
}

fn write(dir: &Path, s: &WriteSettings, frames: u64) -> TableSet {
    let (set, out) = batches(frames);
    let mut files = TableFiles::create(dir, |t| set.schema(t), s).unwrap();
    for (t, b) in &out {
        files.write(*t, b).unwrap();
    }
    files.close().unwrap();
    set
}

fn reader(dir: &Path, table: &str) -> SerializedFileReader<File> {
    SerializedFileReader::new(File::open(dir.join(format!("{table}.parquet"))).unwrap()).unwrap()
}

fn read(dir: &Path, table: &str) -> Vec<RecordBatch> {
    let f = File::open(dir.join(format!("{table}.parquet"))).unwrap();
    ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

#[test]
fn rows_read_back_with_their_values_and_schema() {
    let dir = scratch("values");
    let set = write(&dir, &settings(), 3);
    let frames = read(&dir, "frames");
    assert_eq!(frames[0].schema(), set.schema(Table::Frames));
    let packets: Vec<i64> = frames
        .iter()
        .flat_map(|b| {
            b.column_by_name("packet")
                .unwrap()
                .as_primitive::<Int64Type>()
                .values()
                .to_vec()
        })
        .collect();
    assert_eq!(packets, [10, 11, 12]);
    let types = frames[0].column_by_name("type").unwrap().as_string::<i32>();
    assert_eq!(types.value(0), "Produce");
    let summary = frames[0]
        .column_by_name("summary")
        .unwrap()
        .as_string::<i32>();
    assert_eq!(summary.value(0), "Produce t-é");
    let messages = read(&dir, "messages");
    assert_eq!(messages.iter().map(|b| b.num_rows()).sum::<usize>(), 6);
    let m = &messages[0];
    // The same columns; the map's entries read back under the Parquet format's name.
    let names = |s: SchemaRef| {
        s.fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(m.schema()), names(set.schema(Table::Messages)));
    assert_eq!(
        m.column_by_name("topic")
            .unwrap()
            .as_string::<i32>()
            .value(0),
        "t"
    );
    assert_eq!(
        m.column_by_name("key").unwrap().as_binary::<i32>().value(0),
        b"k"
    );
    assert_eq!(
        m.column_by_name("value")
            .unwrap()
            .as_binary::<i32>()
            .value(1),
        b"hello"
    );
    let headers = m.column_by_name("headers").unwrap().as_map();
    assert_eq!(headers.value(0).len(), 2);
    assert_eq!(headers.keys().as_string::<i32>().value(1), "n");
    assert!(headers.values().is_null(1));
    // A table no record reached: its schema, no row.
    let anomalies = reader(&dir, "anomalies");
    assert_eq!(anomalies.metadata().num_row_groups(), 0);
    assert_eq!(anomalies.metadata().file_metadata().num_rows(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn row_groups_are_cut_at_the_row_and_byte_bounds() {
    let dir = scratch("bounds");
    let rows = WriteSettings {
        row_group_rows: 2,
        ..settings()
    };
    write(&dir, &rows, 5);
    let sizes: Vec<i64> = reader(&dir, "frames")
        .metadata()
        .row_groups()
        .iter()
        .map(|g| g.num_rows())
        .collect();
    assert_eq!(sizes, [2, 2, 1]);
    // A byte bound any batch crosses: one row group per batch.
    let bytes = WriteSettings {
        row_group_bytes: 1,
        ..settings()
    };
    write(&dir, &bytes, 4);
    assert_eq!(reader(&dir, "frames").metadata().num_row_groups(), 4);
    // Neither bound reached: one row group for all.
    write(&dir, &settings(), 4);
    assert_eq!(reader(&dir, "frames").metadata().num_row_groups(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn encodings_statistics_and_codec_are_those_asked_for() {
    let dir = scratch("encodings");
    write(&dir, &settings(), 3);
    let r = reader(&dir, "messages");
    let g = r.metadata().row_group(0);
    let column = |name: &str| {
        (0..g.num_columns())
            .map(|i| g.column(i))
            .find(|c| c.column_path().string() == name)
            .unwrap_or_else(|| panic!("no column {name}"))
    };
    // (The level is not in the file: a reader sees zstd.)
    for c in g.columns() {
        assert!(
            matches!(c.compression(), Compression::ZSTD(_)),
            "{:?}",
            c.compression()
        );
    }
    let dictionary = |name: &str| {
        column(name)
            .encodings()
            .any(|e| e == Encoding::RLE_DICTIONARY)
    };
    assert!(dictionary("topic"));
    assert!(dictionary("protocol"));
    assert!(!dictionary("capture"));
    assert!(!dictionary("packet"));
    // Statistics: min/max where asked, none on the blob columns (a map's leaves included).
    let packet = column("packet")
        .statistics()
        .expect("packet has statistics")
        .clone();
    match packet {
        parquet::file::statistics::Statistics::Int64(s) => {
            assert_eq!((s.min_opt(), s.max_opt()), (Some(&10), Some(&12)));
        }
        other => panic!("packet statistics {other:?}"),
    }
    assert!(column("detail").statistics().is_none());
    assert!(column("headers.key_value.key").statistics().is_none());
    assert!(column("headers.key_value.value").statistics().is_none());
    assert!(column("topic").statistics().is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_missing_directory_is_named_in_the_error() {
    let dir = scratch("missing").join("not-there");
    let (set, _) = batches(1);
    let err = TableFiles::create(&dir, |t| set.schema(t), &settings())
        .err()
        .expect("no directory, no file");
    assert_eq!(err.path, dir.join("frames.parquet"));
    assert_eq!(err.error.kind(), io::ErrorKind::NotFound);
}

#[test]
fn a_full_disk_is_reported_by_the_writer_thread() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = scratch("full");
    // The frames file is the full device: every write fails with ENOSPC.
    std::os::unix::fs::symlink("/dev/full", dir.join("frames.parquet")).unwrap();
    let (set, out) = batches(3);
    let files = TableFiles::create(&dir, |t| set.schema(t), &settings()).unwrap();
    let mut bg = BackgroundFiles::start(files).unwrap();
    let mut first = None;
    for (t, b) in out {
        if let Err(e) = bg.send(t, b) {
            first = Some(e);
            break;
        }
    }
    let err = match first {
        Some(e) => e,
        None => bg.close().expect_err("the footer cannot be written"),
    };
    assert_eq!(err.path, dir.join("frames.parquet"));
    assert_eq!(err.error.raw_os_error(), Some(28), "{err}");
    // Asked again, the same error.
    assert!(bg
        .close()
        .unwrap_err()
        .to_string()
        .contains("No space left on device"));
    std::fs::remove_dir_all(&dir).unwrap();
}
