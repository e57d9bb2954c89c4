//! Every Pravega segment-store wire command, as data (the twin of `pravega/commands.py`).
//!
//! One row per `WireCommandType` (facts: shared/reference/pravega/WIRE.md §5, which follows
//! Pravega's `WireCommands.java`): name, type code, who sends it, its payload fields in wire
//! order and the replies that may answer it. One walker (`codec::decode_fields`) reads any row,
//! so a new command is a new row and nothing else. The rows are checked in the tests below
//! against WIRE.md (parsed independently, as `tests/test_pravega_table.py` does) and against
//! the Python table itself (`commands.py`, parsed), so the two engines cannot drift apart.

/// How a field is encoded (see `codec.rs` for each encoding).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Byte,
    Bool,
    Int,
    Long,
    Uuid,
    Str,
    Blob,
    Rest,
    Zeros,
    Event,
    TableEntries,
    TableKeys,
    TableIteratorArgs,
    ChunkInfos,
    AttributeUpdates,
    Longs,
    Strs,
    MergedSources,
}

impl FieldKind {
    /// The kind's name in the Python table (`"table_entries"`…).
    pub const fn py_name(self) -> &'static str {
        match self {
            FieldKind::Byte => "byte",
            FieldKind::Bool => "bool",
            FieldKind::Int => "int",
            FieldKind::Long => "long",
            FieldKind::Uuid => "uuid",
            FieldKind::Str => "str",
            FieldKind::Blob => "blob",
            FieldKind::Rest => "rest",
            FieldKind::Zeros => "zeros",
            FieldKind::Event => "event",
            FieldKind::TableEntries => "table_entries",
            FieldKind::TableKeys => "table_keys",
            FieldKind::TableIteratorArgs => "table_iterator_args",
            FieldKind::ChunkInfos => "chunk_infos",
            FieldKind::AttributeUpdates => "attribute_updates",
            FieldKind::Longs => "longs",
            FieldKind::Strs => "strs",
            FieldKind::MergedSources => "merged_sources",
        }
    }

    /// Bytes of a fixed-size kind, None for a variable one.
    const fn fixed_size(self) -> Option<u32> {
        match self {
            FieldKind::Byte | FieldKind::Bool => Some(1),
            FieldKind::Int => Some(4),
            FieldKind::Long => Some(8),
            FieldKind::Uuid => Some(16),
            _ => None,
        }
    }

    /// Fewest bytes the kind can take on the wire.
    const fn min_size(self) -> u32 {
        match self {
            FieldKind::Str => 2,
            FieldKind::Blob => 4,
            FieldKind::Event => 8,
            FieldKind::TableEntries
            | FieldKind::TableKeys
            | FieldKind::ChunkInfos
            | FieldKind::AttributeUpdates
            | FieldKind::Longs
            | FieldKind::Strs
            | FieldKind::MergedSources => 4,
            k => match k.fixed_size() {
                Some(n) => n,
                None => 0,
            },
        }
    }
}

/// The value an older sender's missing trailing field is read as (the Java readers check the
/// bytes remaining first); `Required` when the field must be on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Absent {
    Required,
    Int(i64),
    Str(&'static str),
    Bool(bool),
    EmptyList,
}

/// One field: its name in `Frame.fields`, its kind, and the value assumed when absent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct F {
    pub name: &'static str,
    pub kind: FieldKind,
    pub default: Absent,
}

impl F {
    pub const fn optional(&self) -> bool {
        !matches!(self.default, Absent::Required)
    }
}

/// Who sends a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// Request: client → segment store.
    Q,
    /// Reply.
    R,
    /// Either side.
    Both,
    /// Only inside an append block.
    Inner,
}

/// One row of the table.
#[derive(Debug)]
pub struct Command {
    pub code: i32,
    /// Pravega's class name (`SetupAppend`), used as the frame type.
    pub name: &'static str,
    /// The `WireCommandType` constant (`SETUP_APPEND`).
    pub constant: &'static str,
    pub direction: Dir,
    pub fields: &'static [F],
    /// Non-failure replies that answer this request (failure replies answer any request).
    pub replies: &'static [&'static str],
    /// `isFailure()` in Pravega: an error reply.
    pub failure: bool,
}

impl Command {
    /// Fewest payload bytes a well-formed command can have (required fields only).
    pub const fn min_payload(&self) -> u32 {
        let mut n = 0;
        let mut i = 0;
        while i < self.fields.len() {
            if self.fields[i].optional() {
                break;
            }
            n += self.fields[i].kind.min_size();
            i += 1;
        }
        n
    }

    /// Most payload bytes, for commands made only of fixed-size fields; else None.
    pub const fn max_payload(&self) -> Option<u32> {
        let mut n = 0;
        let mut i = 0;
        while i < self.fields.len() {
            match self.fields[i].kind.fixed_size() {
                Some(s) => n += s,
                None => return None,
            }
            i += 1;
        }
        Some(n)
    }

    pub fn answered_by(&self, reply: &str) -> bool {
        self.replies.contains(&reply)
    }
}

const fn f(name: &'static str, kind: FieldKind) -> F {
    F {
        name,
        kind,
        default: Absent::Required,
    }
}

const fn opt(name: &'static str, kind: FieldKind, default: Absent) -> F {
    F {
        name,
        kind,
        default,
    }
}

use Absent as D;
use FieldKind as K;

const RID: F = f("request_id", K::Long);
const RID_OPT: F = opt("request_id", K::Long, D::Int(-1));
const SEG: F = f("segment", K::Str);
const TOKEN: F = f("delegation_token", K::Str);
const TRACE_OPT: F = opt("server_stack_trace", K::Str, D::Str(""));
const OFFSET_OPT: F = opt("offset", K::Long, D::Int(-1));
const WRITER: F = f("writer_id", K::Uuid);

const fn cmd(
    code: i32,
    name: &'static str,
    constant: &'static str,
    direction: Dir,
    fields: &'static [F],
    replies: &'static [&'static str],
) -> Command {
    Command {
        code,
        name,
        constant,
        direction,
        fields,
        replies,
        failure: false,
    }
}

const fn fail(
    code: i32,
    name: &'static str,
    constant: &'static str,
    fields: &'static [F],
) -> Command {
    Command {
        code,
        name,
        constant,
        direction: Dir::R,
        fields,
        replies: &[],
        failure: true,
    }
}

use Dir::{Both, Inner, Q, R};

/// Every command, in the order of the Python table.
#[rustfmt::skip]
pub static COMMANDS: &[Command] = &[
    cmd(-127, "Hello", "HELLO", Both, &[f("high_version", K::Int), f("low_version", K::Int)], &["Hello"]),
    cmd(-1, "Padding", "PADDING", Inner, &[f("padding", K::Zeros)], &[]),
    cmd(-2, "PartialEvent", "PARTIAL_EVENT", Inner, &[f("data", K::Rest)], &[]),
    cmd(-3, "FlushToStorage", "FLUSH_TO_STORAGE", Q, &[f("container_id", K::Int), TOKEN, RID], &["StorageFlushed"]),
    cmd(-4, "StorageFlushed", "FLUSHED_TO_STORAGE", R, &[RID], &[]),
    cmd(-5, "ListStorageChunks", "LIST_STORAGE_CHUNKS", Q, &[SEG, TOKEN, RID], &["StorageChunksListed"]),
    cmd(-6, "StorageChunksListed", "STORAGE_CHUNKS_LISTED", R, &[RID, f("chunks", K::ChunkInfos)], &[]),
    cmd(0, "Event", "EVENT", Inner, &[f("data", K::Rest)], &[]),
    cmd(1, "SetupAppend", "SETUP_APPEND", Q, &[RID, WRITER, SEG, TOKEN], &["AppendSetup"]),
    cmd(2, "AppendSetup", "APPEND_SETUP", R, &[RID, SEG, WRITER, f("last_event_number", K::Long)], &[]),
    cmd(3, "AppendBlock", "APPEND_BLOCK", Q, &[WRITER, f("data", K::Rest)], &[]),
    cmd(4, "AppendBlockEnd", "APPEND_BLOCK_END", Q,
        &[WRITER, f("size_of_whole_events", K::Int), f("data", K::Blob), f("num_events", K::Int),
          f("last_event_number", K::Long), RID_OPT],
        &["DataAppended", "InvalidEventNumber"]),
    cmd(5, "ConditionalAppend", "CONDITIONAL_APPEND", Q,
        &[WRITER, f("event_number", K::Long), f("expected_offset", K::Long), f("event", K::Event), RID_OPT],
        &["DataAppended", "ConditionalCheckFailed", "InvalidEventNumber"]),
    cmd(7, "DataAppended", "DATA_APPENDED", R,
        &[WRITER, f("event_number", K::Long), opt("previous_event_number", K::Long, D::Int(-1)), RID_OPT,
          opt("current_segment_write_offset", K::Long, D::Int(-1))], &[]),
    cmd(8, "ConditionalCheckFailed", "CONDITIONAL_CHECK_FAILED", R, &[WRITER, f("event_number", K::Long), RID_OPT], &[]),
    cmd(9, "ReadSegment", "READ_SEGMENT", Q,
        &[SEG, f("offset", K::Long), f("suggested_length", K::Int), TOKEN, RID_OPT], &["SegmentRead"]),
    cmd(10, "SegmentRead", "SEGMENT_READ", R,
        &[SEG, f("offset", K::Long), f("at_tail", K::Bool), f("end_of_segment", K::Bool), f("data", K::Blob), RID_OPT], &[]),
    cmd(11, "GetStreamSegmentInfo", "GET_STREAM_SEGMENT_INFO", Q, &[RID, f("segment", K::Str), TOKEN], &["StreamSegmentInfo"]),
    cmd(12, "StreamSegmentInfo", "STREAM_SEGMENT_INFO", R,
        &[RID, f("segment", K::Str), f("exists", K::Bool), f("is_sealed", K::Bool), f("is_deleted", K::Bool),
          f("last_modified", K::Long), f("write_offset", K::Long), opt("start_offset", K::Long, D::Int(0))], &[]),
    cmd(20, "CreateSegment", "CREATE_SEGMENT", Q,
        &[RID, SEG, f("target_rate", K::Int), f("scale_type", K::Byte), TOKEN, opt("rollover_size_bytes", K::Long, D::Int(0))],
        &["SegmentCreated"]),
    cmd(21, "SegmentCreated", "SEGMENT_CREATED", R, &[RID, SEG], &[]),
    cmd(28, "SealSegment", "SEAL_SEGMENT", Q, &[RID, SEG, TOKEN], &["SegmentSealed"]),
    cmd(29, "SegmentSealed", "SEGMENT_SEALED", R, &[RID, SEG], &[]),
    cmd(30, "DeleteSegment", "DELETE_SEGMENT", Q, &[RID, SEG, TOKEN], &["SegmentDeleted"]),
    cmd(31, "SegmentDeleted", "SEGMENT_DELETED", R, &[RID, SEG], &[]),
    cmd(32, "UpdateSegmentPolicy", "UPDATE_SEGMENT_POLICY", Q,
        &[RID, SEG, f("target_rate", K::Int), f("scale_type", K::Byte), TOKEN], &["SegmentPolicyUpdated"]),
    cmd(33, "SegmentPolicyUpdated", "SEGMENT_POLICY_UPDATED", R, &[RID, SEG], &[]),
    cmd(34, "GetSegmentAttribute", "GET_SEGMENT_ATTRIBUTE", Q,
        &[RID, f("segment", K::Str), f("attribute_id", K::Uuid), TOKEN], &["SegmentAttribute"]),
    cmd(35, "SegmentAttribute", "SEGMENT_ATTRIBUTE", R, &[RID, f("value", K::Long)], &[]),
    cmd(36, "UpdateSegmentAttribute", "UPDATE_SEGMENT_ATTRIBUTE", Q,
        &[RID, f("segment", K::Str), f("attribute_id", K::Uuid), f("new_value", K::Long), f("expected_value", K::Long), TOKEN],
        &["SegmentAttributeUpdated"]),
    cmd(37, "SegmentAttributeUpdated", "SEGMENT_ATTRIBUTE_UPDATED", R, &[RID, f("success", K::Bool)], &[]),
    cmd(38, "TruncateSegment", "TRUNCATE_SEGMENT", Q, &[RID, SEG, f("truncation_offset", K::Long), TOKEN], &["SegmentTruncated"]),
    cmd(39, "SegmentTruncated", "SEGMENT_TRUNCATED", R, &[RID, SEG], &[]),
    cmd(40, "CreateTransientSegment", "CREATE_TRANSIENT_SEGMENT", Q,
        &[RID, WRITER, f("parent_segment", K::Str), TOKEN], &["SegmentCreated"]),
    cmd(41, "LocateOffset", "LOCATE_OFFSET", Q, &[RID, SEG, f("target_offset", K::Long), TOKEN], &["OffsetLocated"]),
    cmd(42, "OffsetLocated", "OFFSET_LOCATED", R, &[RID, SEG, f("offset", K::Long)], &[]),
    fail(50, "WrongHost", "WRONG_HOST", &[RID, SEG, f("correct_host", K::Str), TRACE_OPT]),
    fail(51, "SegmentIsSealed", "SEGMENT_IS_SEALED", &[RID, SEG, TRACE_OPT, OFFSET_OPT]),
    fail(52, "SegmentAlreadyExists", "SEGMENT_ALREADY_EXISTS", &[RID, SEG, TRACE_OPT]),
    fail(53, "NoSuchSegment", "NO_SUCH_SEGMENT", &[RID, SEG, TRACE_OPT, OFFSET_OPT]),
    fail(55, "InvalidEventNumber", "INVALID_EVENT_NUMBER", &[WRITER, RID, TRACE_OPT, opt("event_number", K::Long, D::Int(-1))]),
    fail(56, "SegmentIsTruncated", "SEGMENT_IS_TRUNCATED", &[RID, SEG, f("start_offset", K::Long), TRACE_OPT, OFFSET_OPT]),
    fail(57, "OperationUnsupported", "OPERATION_UNSUPPORTED", &[RID, f("operation_name", K::Str), TRACE_OPT]),
    cmd(58, "MergeSegments", "MERGE_SEGMENTS", Q,
        &[RID, f("target", K::Str), f("source", K::Str), TOKEN, opt("attribute_updates", K::AttributeUpdates, D::EmptyList)],
        &["SegmentsMerged", "SegmentAttributeUpdated"]),
    cmd(59, "SegmentsMerged", "SEGMENTS_MERGED", R,
        &[RID, f("target", K::Str), f("source", K::Str), opt("new_target_write_offset", K::Long, D::Int(-1))], &[]),
    fail(60, "AuthTokenCheckFailed", "AUTH_TOKEN_CHECK_FAILED", &[RID, TRACE_OPT, opt("error_code", K::Int, D::Int(-1))]),
    fail(61, "ErrorMessage", "ERROR_MESSAGE", &[RID, SEG, f("message", K::Str), f("error_code", K::Int)]),
    cmd(68, "GetTableSegmentInfo", "GET_TABLE_SEGMENT_INFO", Q, &[RID, f("segment", K::Str), TOKEN], &["TableSegmentInfo"]),
    cmd(69, "TableSegmentInfo", "TABLE_SEGMENT_INFO", R,
        &[RID, f("segment", K::Str), f("start_offset", K::Long), f("length", K::Long), f("entry_count", K::Long),
          f("key_length", K::Int)], &[]),
    cmd(70, "CreateTableSegment", "CREATE_TABLE_SEGMENT", Q,
        &[RID, SEG, TOKEN, opt("sorted_deprecated", K::Bool, D::Bool(false)), opt("key_length", K::Int, D::Int(0)),
          opt("rollover_size_bytes", K::Long, D::Int(0))], &["SegmentCreated"]),
    cmd(71, "DeleteTableSegment", "DELETE_TABLE_SEGMENT", Q, &[RID, SEG, f("must_be_empty", K::Bool), TOKEN], &["SegmentDeleted"]),
    cmd(74, "UpdateTableEntries", "UPDATE_TABLE_ENTRIES", Q,
        &[RID, SEG, TOKEN, f("entries", K::TableEntries), opt("table_segment_offset", K::Long, D::Int(-1))],
        &["TableEntriesUpdated"]),
    cmd(75, "TableEntriesUpdated", "TABLE_ENTRIES_UPDATED", R, &[RID, f("updated_versions", K::Longs)], &[]),
    cmd(76, "RemoveTableKeys", "REMOVE_TABLE_KEYS", Q,
        &[RID, SEG, TOKEN, f("keys", K::TableKeys), opt("table_segment_offset", K::Long, D::Int(-1))], &["TableKeysRemoved"]),
    cmd(77, "TableKeysRemoved", "TABLE_KEYS_REMOVED", R, &[RID, SEG], &[]),
    cmd(78, "ReadTable", "READ_TABLE", Q, &[RID, SEG, TOKEN, f("keys", K::TableKeys)], &["TableRead"]),
    cmd(79, "TableRead", "TABLE_READ", R, &[RID, SEG, f("entries", K::TableEntries)], &[]),
    fail(80, "TableSegmentNotEmpty", "TABLE_SEGMENT_NOT_EMPTY", &[RID, SEG, f("server_stack_trace", K::Str)]),
    fail(81, "TableKeyDoesNotExist", "TABLE_KEY_DOES_NOT_EXIST", &[RID, SEG, f("server_stack_trace", K::Str)]),
    fail(82, "TableKeyBadVersion", "TABLE_KEY_BAD_VERSION", &[RID, SEG, f("server_stack_trace", K::Str)]),
    cmd(83, "ReadTableKeys", "READ_TABLE_KEYS", Q,
        &[RID, SEG, TOKEN, f("suggested_key_count", K::Int), f("args", K::TableIteratorArgs)], &["TableKeysRead"]),
    cmd(84, "TableKeysRead", "TABLE_KEYS_READ", R,
        &[RID, SEG, f("keys", K::TableKeys), f("continuation_token", K::Blob)], &[]),
    cmd(85, "ReadTableEntries", "READ_TABLE_ENTRIES", Q,
        &[RID, SEG, TOKEN, f("suggested_entry_count", K::Int), f("args", K::TableIteratorArgs)], &["TableEntriesRead"]),
    cmd(86, "TableEntriesRead", "TABLE_ENTRIES_READ", R,
        &[RID, SEG, f("entries", K::TableEntries), f("continuation_token", K::Blob)], &[]),
    cmd(87, "TableEntriesDeltaRead", "TABLE_ENTRIES_DELTA_READ", R,
        &[RID, SEG, f("entries", K::TableEntries), f("should_clear", K::Bool), f("reached_end", K::Bool),
          f("last_position", K::Long)], &[]),
    cmd(88, "ReadTableEntriesDelta", "READ_TABLE_ENTRIES_DELTA", Q,
        &[RID, SEG, TOKEN, f("from_position", K::Long), f("suggested_entry_count", K::Int)], &["TableEntriesDeltaRead"]),
    cmd(89, "ConditionalBlockEnd", "CONDITIONAL_BLOCK_END", Q,
        &[WRITER, f("event_number", K::Long), f("expected_offset", K::Long), f("data", K::Blob), RID],
        &["DataAppended", "ConditionalCheckFailed", "InvalidEventNumber"]),
    cmd(90, "MergeSegmentsBatch", "MERGE_SEGMENTS_BATCH", Q,
        &[RID, f("target", K::Str), f("sources", K::Strs), TOKEN], &["SegmentsBatchMerged"]),
    cmd(91, "SegmentsBatchMerged", "SEGMENTS_BATCH_MERGED", R, &[RID, f("target", K::Str), f("merged", K::MergedSources)], &[]),
    cmd(100, "KeepAlive", "KEEP_ALIVE", Both, &[], &[]),
];

/// Row index by `code + 128` (every code fits a signed byte); `NONE` where there is no row.
const NONE: u8 = u8::MAX;
static INDEX: [u8; 256] = {
    let mut idx = [NONE; 256];
    let mut i = 0;
    while i < COMMANDS.len() {
        idx[(COMMANDS[i].code + 128) as usize] = i as u8;
        i += 1;
    }
    idx
};

/// The command with this type code.
pub fn command(code: i32) -> Option<&'static Command> {
    if !(-128..=127).contains(&code) {
        return None;
    }
    match INDEX[(code + 128) as usize] {
        NONE => None,
        i => COMMANDS.get(i as usize),
    }
}

/// The command named `name` (a class name such as `ReadSegment`).
pub fn by_name(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

/// Codes that may start a frame on the wire (EVENT, PADDING, PARTIAL_EVENT live inside blocks).
pub fn top_level(code: i32) -> bool {
    command(code).is_some_and(|c| c.direction != Dir::Inner)
}

pub const WIRE_VERSION: i32 = 17;
pub const OLDEST_COMPATIBLE_VERSION: i32 = 5;
pub const MAX_WIRECOMMAND_SIZE: u32 = 0x00FF_FFFF;
pub const HEADER_SIZE: usize = 8;
/// Largest serialized event (`Serializer.MAX_EVENT_SIZE`); a record adds 8 bytes of header.
pub const MAX_EVENT_SIZE: i32 = 8 * 1024 * 1024;
pub const LONG_MIN: i64 = i64::MIN;

pub fn scale_type(v: i64) -> Option<&'static str> {
    match v {
        0 => Some("NoScaling"),
        1 => Some("Throughput"),
        2 => Some("EventRate"),
        _ => None,
    }
}

pub fn auth_error_code(v: i64) -> Option<&'static str> {
    match v {
        -1 => Some("UNSPECIFIED"),
        0 => Some("TOKEN_CHECK_FAILED"),
        1 => Some("TOKEN_EXPIRED"),
        _ => None,
    }
}

pub fn error_message_code(v: i64) -> Option<&'static str> {
    match v {
        -1 => Some("UNSPECIFIED"),
        0 => Some("ILLEGAL_ARGUMENT_EXCEPTION"),
        _ => None,
    }
}

pub fn attribute_update_type(v: i64) -> Option<&'static str> {
    match v {
        1 => Some("Replace"),
        4 => Some("ReplaceIfEquals"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    //! The table against the two sources it must agree with, each parsed here on its own:
    //! WIRE.md §5 (the facts, written from Pravega's `WireCommands.java`) and the Python
    //! reference's `commands.py` (the other engine's table). Skipped when a file is absent.

    use super::*;
    use std::path::PathBuf;

    fn repo_file(rel: &str) -> Option<String> {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel);
        std::fs::read_to_string(p).ok()
    }

    fn snake(name: &str) -> String {
        let mut out = String::new();
        for (i, ch) in name.chars().enumerate() {
            if ch.is_ascii_uppercase() && i > 0 {
                out.push('_');
            }
            out.push(ch.to_ascii_lowercase());
        }
        match out.as_str() {
            "segment_name" => "segment".into(),
            "target_segment_id" => "target".into(),
            _ => out,
        }
    }

    /// Splits on commas outside parentheses and braces.
    fn split_top(s: &str) -> Vec<String> {
        let (mut depth, mut cur, mut out) = (0i32, String::new(), Vec::new());
        for ch in s.chars() {
            match ch {
                '(' | '{' | '[' => depth += 1,
                ')' | '}' | ']' => depth -= 1,
                ',' if depth == 0 => {
                    out.push(std::mem::take(&mut cur));
                    continue;
                }
                _ => {}
            }
            cur.push(ch);
        }
        out.push(cur);
        out
    }

    /// (code, constant, class, [(field, kind, optional)]) of every row of WIRE.md §5, primitive
    /// fields only (composites are checked by the crafted-frame tests).
    #[allow(clippy::type_complexity)]
    fn wire_md_rows(text: &str) -> Vec<(i32, String, String, Vec<(String, String, bool)>)> {
        let start = text.find("## 5. Command table").expect("§5");
        let end = text[start..].find("### 5.1").expect("§5.1") + start;
        let mut rows = Vec::new();
        for line in text[start..end].lines() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() < 6 {
                continue;
            }
            let code = cells[1].replace('−', "-");
            let Ok(code) = code.parse::<i32>() else {
                continue;
            };
            let (constant, class) = cells[2].split_once(" (").expect("TYPE (Class)");
            let class = class.trim_end_matches(')');
            let mut fields = Vec::new();
            for part in split_top(cells[4]) {
                let part = part.trim().replace('`', "");
                let mut words = part.splitn(3, ' ');
                let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                    continue;
                };
                let kind = kind.trim_end_matches(|c: char| !c.is_alphanumeric());
                let kind = match kind {
                    "int" | "long" | "str" | "bool" | "byte" | "blob" => kind.to_owned(),
                    "UUID" => "uuid".to_owned(),
                    _ => continue,
                };
                if !name.chars().all(|c| c.is_alphanumeric() || c == '_') || snake(name) == "count"
                {
                    continue;
                }
                let rest = words.next().unwrap_or("");
                fields.push((snake(name), kind, rest.contains("**opt**")));
            }
            rows.push((code, constant.to_owned(), class.to_owned(), fields));
        }
        rows
    }

    #[test]
    fn table_agrees_with_wire_md() {
        let Some(text) = repo_file("../../shared/reference/pravega/WIRE.md") else {
            eprintln!("WIRE.md not found: skipped");
            return;
        };
        let rows = wire_md_rows(&text);
        assert_eq!(rows.len(), 70);
        assert_eq!(COMMANDS.len(), 70);
        for (code, constant, class, doc_fields) in rows {
            let cmd = command(code).unwrap_or_else(|| panic!("code {code} missing"));
            assert_eq!(
                (cmd.constant, cmd.name),
                (constant.as_str(), class.as_str())
            );
            let mine: Vec<(String, String, bool)> = cmd
                .fields
                .iter()
                .filter(|f| {
                    matches!(
                        f.kind,
                        K::Int | K::Long | K::Str | K::Uuid | K::Bool | K::Byte | K::Blob
                    )
                })
                .map(|f| (f.name.to_owned(), f.kind.py_name().to_owned(), f.optional()))
                .collect();
            assert_eq!(mine, doc_fields, "{class}");
        }
    }

    /// (code, name, constant, direction, fields as written, replies, failure) of one Python row.
    type PyRow = (i32, String, String, String, Vec<String>, Vec<String>, bool);

    /// Parses `commands.py`: each `_cmd(...)` call with its fields (named constants such as
    /// `RID` resolved from their definitions), replies and failure flag.
    fn python_rows(text: &str) -> Vec<PyRow> {
        let mut consts = std::collections::HashMap::new();
        for line in text.lines() {
            if let Some((name, def)) = line.split_once(" = F(") {
                if name.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    consts.insert(name.to_owned(), format!("F({def}"));
                }
            }
        }
        let body =
            &text[text.find("# fmt: off").expect("table")..text.find("# fmt: on").expect("end")];
        let mut rows = Vec::new();
        for call in body.split("_cmd(").skip(1) {
            let call: String = call.lines().map(str::trim).collect::<Vec<_>>().join(" ");
            let call = call.trim();
            let call = call.strip_suffix(')').unwrap_or(call);
            let parts = split_top(call);
            let code: i32 = parts[0].trim().parse().expect("code");
            let unq = |s: &str| s.trim().trim_matches('"').to_owned();
            let dir = match parts[3].trim() {
                "Q" => "Q",
                "R" => "R",
                "BOTH" => "both",
                "INNER" => "inner",
                d => panic!("direction {d}"),
            };
            let fields_src = unwrap_parens(parts[4].trim());
            let fields: Vec<String> = split_top(fields_src)
                .iter()
                .map(|f| f.trim().to_owned())
                .filter(|f| !f.is_empty())
                .map(|f| consts.get(&f).cloned().unwrap_or(f).replace(' ', ""))
                .collect();
            let mut replies = Vec::new();
            let mut failure = false;
            for extra in &parts[5..] {
                let e = extra.trim();
                if e == "failure=True" {
                    failure = true;
                } else {
                    replies = split_top(unwrap_parens(e))
                        .iter()
                        .map(|r| unq(r))
                        .filter(|r| !r.is_empty())
                        .collect();
                }
            }
            rows.push((
                code,
                unq(&parts[1]),
                unq(&parts[2]),
                dir.to_owned(),
                fields,
                replies,
                failure,
            ));
        }
        rows
    }

    fn unwrap_parens(s: &str) -> &str {
        s.strip_prefix('(')
            .and_then(|s| s.strip_suffix(')'))
            .unwrap_or(s)
    }

    fn py_field(f: &F) -> String {
        let default = match f.default {
            Absent::Required => String::new(),
            Absent::Int(n) => format!(",{n}"),
            Absent::Str(s) => format!(",\"{s}\""),
            Absent::Bool(b) => format!(",{}", if b { "True" } else { "False" }),
            Absent::EmptyList => ",[]".into(),
        };
        format!("F(\"{}\",\"{}\"{default})", f.name, f.kind.py_name())
    }

    #[test]
    fn table_agrees_with_the_python_table() {
        let Some(text) = repo_file("../wiredump/dissect/protocols/pravega/commands.py") else {
            eprintln!("commands.py not found: skipped");
            return;
        };
        let rows = python_rows(&text);
        assert_eq!(rows.len(), COMMANDS.len());
        for (row, cmd) in rows.iter().zip(COMMANDS) {
            let (code, name, constant, dir, fields, replies, failure) = row;
            let d = match cmd.direction {
                Dir::Q => "Q",
                Dir::R => "R",
                Dir::Both => "both",
                Dir::Inner => "inner",
            };
            assert_eq!(
                (
                    *code,
                    name.as_str(),
                    constant.as_str(),
                    dir.as_str(),
                    *failure
                ),
                (cmd.code, cmd.name, cmd.constant, d, cmd.failure)
            );
            let mine: Vec<String> = cmd.fields.iter().map(py_field).collect();
            assert_eq!(&mine, fields, "{name}");
            let mine: Vec<&str> = cmd.replies.to_vec();
            assert_eq!(mine, *replies, "{name}");
        }
    }

    #[test]
    fn field_names_are_unique_within_a_row() {
        // The walker appends fields without looking for an earlier one of the same name.
        for cmd in COMMANDS {
            for (i, f) in cmd.fields.iter().enumerate() {
                assert!(
                    !cmd.fields[..i].iter().any(|g| g.name == f.name),
                    "{}",
                    cmd.name
                );
                assert!(!f.name.ends_with("_total"), "{}", cmd.name);
            }
        }
    }

    #[test]
    fn sizes_and_lookup() {
        let hello = command(-127).unwrap();
        assert_eq!((hello.min_payload(), hello.max_payload()), (8, Some(8)));
        let ka = command(100).unwrap();
        assert_eq!((ka.min_payload(), ka.max_payload()), (0, Some(0)));
        // SetupAppend: long + uuid + str + str.
        let sa = command(1).unwrap();
        assert_eq!((sa.min_payload(), sa.max_payload()), (8 + 16 + 2 + 2, None));
        // DataAppended: the required part is writer + eventNumber only.
        assert_eq!(command(7).unwrap().min_payload(), 24);
        assert!(!top_level(0) && !top_level(-1) && !top_level(-2));
        assert!(top_level(-127) && top_level(89) && top_level(91));
        assert!(command(6).is_none() && command(1000).is_none());
        assert_eq!(by_name("ReadSegment").unwrap().code, 9);
    }
}
