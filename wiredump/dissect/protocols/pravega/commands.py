"""Every Pravega segment-store wire command, as data.

One row per `WireCommandType` (facts: shared/reference/pravega/WIRE.md §5, which
follows Pravega's `WireCommands.java`): the command name, its type code, who sends
it, its payload fields in wire order, and the replies that may answer it. The Python
face derives Pravega's filter fields (`fields.py`) and the names `check` accepts
(`names.py`) from it; the engine's decoder (engine/src/pravega) holds the same table.

Field kinds:
``byte bool int long uuid str blob rest zeros`` primitives, and the composites
``event`` (an embedded `[int 0][int len][bytes]` record), ``table_entries``,
``table_keys`` (count + keys), ``table_iterator_args``, ``chunk_infos``,
``attribute_updates``, ``longs``, ``strs`` and ``merged_sources``.

A field with `default` set is optional on the wire: older senders omit it (the
Java readers check the bytes remaining first), and the default is what the reader
assumes when it is absent. That is how short and long forms of one command (e.g.
CreateTableSegment from the Rust client, without its three trailing fields) both
decode.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

REQUIRED: Any = object()
"""Marker: the field must be on the wire."""

Q, R, BOTH, INNER = "Q", "R", "both", "inner"
"""Direction: request (client → segment store), reply, either side, only inside an append block."""

LONG_MIN = -(2**63)


@dataclass(frozen=True, slots=True)
class F:
    """One field: its name in `Frame.fields`, its kind, and the value assumed when absent."""

    name: str
    kind: str
    default: Any = REQUIRED

    @property
    def optional(self) -> bool:
        return self.default is not REQUIRED


@dataclass(frozen=True, slots=True)
class Command:
    code: int
    name: str
    """Pravega's class name (`SetupAppend`), used as the frame type."""
    constant: str
    """The `WireCommandType` constant (`SETUP_APPEND`)."""
    direction: str
    fields: tuple[F, ...]
    replies: frozenset[str] = field(default_factory=frozenset)
    """Non-failure replies that answer this request (failure replies answer any request)."""
    failure: bool = False
    """`isFailure()` in Pravega: an error reply."""

    @property
    def min_payload(self) -> int:
        """Fewest payload bytes a well-formed command can have (required fields only)."""
        n = 0
        for f in self.fields:
            if f.optional:
                break
            n += _MIN_SIZE.get(f.kind, 0)
        return n

    @property
    def max_payload(self) -> int | None:
        """Most payload bytes, for commands made only of fixed-size fields; else None."""
        n = 0
        for f in self.fields:
            size = _FIXED_SIZE.get(f.kind)
            if size is None:
                return None
            n += size
        return n


_FIXED_SIZE = {"byte": 1, "bool": 1, "int": 4, "long": 8, "uuid": 16}
_MIN_SIZE = {**_FIXED_SIZE, "str": 2, "blob": 4, "event": 8, "table_entries": 4, "table_keys": 4}
_MIN_SIZE.update({"chunk_infos": 4, "attribute_updates": 4, "longs": 4, "strs": 4, "merged_sources": 4})

RID = F("request_id", "long")
RID_OPT = F("request_id", "long", -1)
SEG = F("segment", "str")
TOKEN = F("delegation_token", "str")
TRACE_OPT = F("server_stack_trace", "str", "")
OFFSET_OPT = F("offset", "long", -1)
WRITER = F("writer_id", "uuid")

_ROWS: list[Command] = []


def _cmd(
    code: int,
    name: str,
    constant: str,
    direction: str,
    fields: tuple[F, ...],
    replies: tuple[str, ...] = (),
    failure: bool = False,
) -> None:
    _ROWS.append(Command(code, name, constant, direction, fields, frozenset(replies), failure))


# fmt: off
_cmd(-127, "Hello", "HELLO", BOTH, (F("high_version", "int"), F("low_version", "int")), ("Hello",))
_cmd(-1, "Padding", "PADDING", INNER, (F("padding", "zeros"),))
_cmd(-2, "PartialEvent", "PARTIAL_EVENT", INNER, (F("data", "rest"),))
_cmd(-3, "FlushToStorage", "FLUSH_TO_STORAGE", Q, (F("container_id", "int"), TOKEN, RID), ("StorageFlushed",))
_cmd(-4, "StorageFlushed", "FLUSHED_TO_STORAGE", R, (RID,))
_cmd(-5, "ListStorageChunks", "LIST_STORAGE_CHUNKS", Q, (SEG, TOKEN, RID), ("StorageChunksListed",))
_cmd(-6, "StorageChunksListed", "STORAGE_CHUNKS_LISTED", R, (RID, F("chunks", "chunk_infos")))
_cmd(0, "Event", "EVENT", INNER, (F("data", "rest"),))
_cmd(1, "SetupAppend", "SETUP_APPEND", Q, (RID, WRITER, SEG, TOKEN), ("AppendSetup",))
_cmd(2, "AppendSetup", "APPEND_SETUP", R, (RID, SEG, WRITER, F("last_event_number", "long")))
_cmd(3, "AppendBlock", "APPEND_BLOCK", Q, (WRITER, F("data", "rest")))
_cmd(4, "AppendBlockEnd", "APPEND_BLOCK_END", Q,
     (WRITER, F("size_of_whole_events", "int"), F("data", "blob"), F("num_events", "int"),
      F("last_event_number", "long"), RID_OPT),
     ("DataAppended", "InvalidEventNumber"))
_cmd(5, "ConditionalAppend", "CONDITIONAL_APPEND", Q,
     (WRITER, F("event_number", "long"), F("expected_offset", "long"), F("event", "event"), RID_OPT),
     ("DataAppended", "ConditionalCheckFailed", "InvalidEventNumber"))
_cmd(7, "DataAppended", "DATA_APPENDED", R,
     (WRITER, F("event_number", "long"), F("previous_event_number", "long", -1), RID_OPT,
      F("current_segment_write_offset", "long", -1)))
_cmd(8, "ConditionalCheckFailed", "CONDITIONAL_CHECK_FAILED", R, (WRITER, F("event_number", "long"), RID_OPT))
_cmd(9, "ReadSegment", "READ_SEGMENT", Q,
     (SEG, F("offset", "long"), F("suggested_length", "int"), TOKEN, RID_OPT), ("SegmentRead",))
_cmd(10, "SegmentRead", "SEGMENT_READ", R,
     (SEG, F("offset", "long"), F("at_tail", "bool"), F("end_of_segment", "bool"), F("data", "blob"), RID_OPT))
_cmd(11, "GetStreamSegmentInfo", "GET_STREAM_SEGMENT_INFO", Q, (RID, F("segment", "str"), TOKEN),
     ("StreamSegmentInfo",))
_cmd(12, "StreamSegmentInfo", "STREAM_SEGMENT_INFO", R,
     (RID, F("segment", "str"), F("exists", "bool"), F("is_sealed", "bool"), F("is_deleted", "bool"),
      F("last_modified", "long"), F("write_offset", "long"), F("start_offset", "long", 0)))
_cmd(20, "CreateSegment", "CREATE_SEGMENT", Q,
     (RID, SEG, F("target_rate", "int"), F("scale_type", "byte"), TOKEN, F("rollover_size_bytes", "long", 0)),
     ("SegmentCreated",))
_cmd(21, "SegmentCreated", "SEGMENT_CREATED", R, (RID, SEG))
_cmd(28, "SealSegment", "SEAL_SEGMENT", Q, (RID, SEG, TOKEN), ("SegmentSealed",))
_cmd(29, "SegmentSealed", "SEGMENT_SEALED", R, (RID, SEG))
_cmd(30, "DeleteSegment", "DELETE_SEGMENT", Q, (RID, SEG, TOKEN), ("SegmentDeleted",))
_cmd(31, "SegmentDeleted", "SEGMENT_DELETED", R, (RID, SEG))
_cmd(32, "UpdateSegmentPolicy", "UPDATE_SEGMENT_POLICY", Q,
     (RID, SEG, F("target_rate", "int"), F("scale_type", "byte"), TOKEN), ("SegmentPolicyUpdated",))
_cmd(33, "SegmentPolicyUpdated", "SEGMENT_POLICY_UPDATED", R, (RID, SEG))
_cmd(34, "GetSegmentAttribute", "GET_SEGMENT_ATTRIBUTE", Q,
     (RID, F("segment", "str"), F("attribute_id", "uuid"), TOKEN), ("SegmentAttribute",))
_cmd(35, "SegmentAttribute", "SEGMENT_ATTRIBUTE", R, (RID, F("value", "long")))
_cmd(36, "UpdateSegmentAttribute", "UPDATE_SEGMENT_ATTRIBUTE", Q,
     (RID, F("segment", "str"), F("attribute_id", "uuid"), F("new_value", "long"), F("expected_value", "long"),
      TOKEN), ("SegmentAttributeUpdated",))
_cmd(37, "SegmentAttributeUpdated", "SEGMENT_ATTRIBUTE_UPDATED", R, (RID, F("success", "bool")))
_cmd(38, "TruncateSegment", "TRUNCATE_SEGMENT", Q, (RID, SEG, F("truncation_offset", "long"), TOKEN),
     ("SegmentTruncated",))
_cmd(39, "SegmentTruncated", "SEGMENT_TRUNCATED", R, (RID, SEG))
_cmd(40, "CreateTransientSegment", "CREATE_TRANSIENT_SEGMENT", Q,
     (RID, WRITER, F("parent_segment", "str"), TOKEN), ("SegmentCreated",))
_cmd(41, "LocateOffset", "LOCATE_OFFSET", Q, (RID, SEG, F("target_offset", "long"), TOKEN), ("OffsetLocated",))
_cmd(42, "OffsetLocated", "OFFSET_LOCATED", R, (RID, SEG, F("offset", "long")))
_cmd(50, "WrongHost", "WRONG_HOST", R, (RID, SEG, F("correct_host", "str"), TRACE_OPT), failure=True)
_cmd(51, "SegmentIsSealed", "SEGMENT_IS_SEALED", R, (RID, SEG, TRACE_OPT, OFFSET_OPT), failure=True)
_cmd(52, "SegmentAlreadyExists", "SEGMENT_ALREADY_EXISTS", R, (RID, SEG, TRACE_OPT), failure=True)
_cmd(53, "NoSuchSegment", "NO_SUCH_SEGMENT", R, (RID, SEG, TRACE_OPT, OFFSET_OPT), failure=True)
_cmd(55, "InvalidEventNumber", "INVALID_EVENT_NUMBER", R,
     (WRITER, RID, TRACE_OPT, F("event_number", "long", -1)), failure=True)
_cmd(56, "SegmentIsTruncated", "SEGMENT_IS_TRUNCATED", R,
     (RID, SEG, F("start_offset", "long"), TRACE_OPT, OFFSET_OPT), failure=True)
_cmd(57, "OperationUnsupported", "OPERATION_UNSUPPORTED", R, (RID, F("operation_name", "str"), TRACE_OPT),
     failure=True)
_cmd(58, "MergeSegments", "MERGE_SEGMENTS", Q,
     (RID, F("target", "str"), F("source", "str"), TOKEN, F("attribute_updates", "attribute_updates", [])),
     ("SegmentsMerged", "SegmentAttributeUpdated"))
_cmd(59, "SegmentsMerged", "SEGMENTS_MERGED", R,
     (RID, F("target", "str"), F("source", "str"), F("new_target_write_offset", "long", -1)))
_cmd(60, "AuthTokenCheckFailed", "AUTH_TOKEN_CHECK_FAILED", R,
     (RID, TRACE_OPT, F("error_code", "int", -1)), failure=True)
_cmd(61, "ErrorMessage", "ERROR_MESSAGE", R, (RID, SEG, F("message", "str"), F("error_code", "int")), failure=True)
_cmd(68, "GetTableSegmentInfo", "GET_TABLE_SEGMENT_INFO", Q, (RID, F("segment", "str"), TOKEN),
     ("TableSegmentInfo",))
_cmd(69, "TableSegmentInfo", "TABLE_SEGMENT_INFO", R,
     (RID, F("segment", "str"), F("start_offset", "long"), F("length", "long"), F("entry_count", "long"),
      F("key_length", "int")))
_cmd(70, "CreateTableSegment", "CREATE_TABLE_SEGMENT", Q,
     (RID, SEG, TOKEN, F("sorted_deprecated", "bool", False), F("key_length", "int", 0),
      F("rollover_size_bytes", "long", 0)), ("SegmentCreated",))
_cmd(71, "DeleteTableSegment", "DELETE_TABLE_SEGMENT", Q, (RID, SEG, F("must_be_empty", "bool"), TOKEN),
     ("SegmentDeleted",))
_cmd(74, "UpdateTableEntries", "UPDATE_TABLE_ENTRIES", Q,
     (RID, SEG, TOKEN, F("entries", "table_entries"), F("table_segment_offset", "long", -1)),
     ("TableEntriesUpdated",))
_cmd(75, "TableEntriesUpdated", "TABLE_ENTRIES_UPDATED", R, (RID, F("updated_versions", "longs")))
_cmd(76, "RemoveTableKeys", "REMOVE_TABLE_KEYS", Q,
     (RID, SEG, TOKEN, F("keys", "table_keys"), F("table_segment_offset", "long", -1)), ("TableKeysRemoved",))
_cmd(77, "TableKeysRemoved", "TABLE_KEYS_REMOVED", R, (RID, SEG))
_cmd(78, "ReadTable", "READ_TABLE", Q, (RID, SEG, TOKEN, F("keys", "table_keys")), ("TableRead",))
_cmd(79, "TableRead", "TABLE_READ", R, (RID, SEG, F("entries", "table_entries")))
_cmd(80, "TableSegmentNotEmpty", "TABLE_SEGMENT_NOT_EMPTY", R, (RID, SEG, F("server_stack_trace", "str")),
     failure=True)
_cmd(81, "TableKeyDoesNotExist", "TABLE_KEY_DOES_NOT_EXIST", R, (RID, SEG, F("server_stack_trace", "str")),
     failure=True)
_cmd(82, "TableKeyBadVersion", "TABLE_KEY_BAD_VERSION", R, (RID, SEG, F("server_stack_trace", "str")),
     failure=True)
_cmd(83, "ReadTableKeys", "READ_TABLE_KEYS", Q,
     (RID, SEG, TOKEN, F("suggested_key_count", "int"), F("args", "table_iterator_args")), ("TableKeysRead",))
_cmd(84, "TableKeysRead", "TABLE_KEYS_READ", R,
     (RID, SEG, F("keys", "table_keys"), F("continuation_token", "blob")))
_cmd(85, "ReadTableEntries", "READ_TABLE_ENTRIES", Q,
     (RID, SEG, TOKEN, F("suggested_entry_count", "int"), F("args", "table_iterator_args")),
     ("TableEntriesRead",))
_cmd(86, "TableEntriesRead", "TABLE_ENTRIES_READ", R,
     (RID, SEG, F("entries", "table_entries"), F("continuation_token", "blob")))
_cmd(87, "TableEntriesDeltaRead", "TABLE_ENTRIES_DELTA_READ", R,
     (RID, SEG, F("entries", "table_entries"), F("should_clear", "bool"), F("reached_end", "bool"),
      F("last_position", "long")))
_cmd(88, "ReadTableEntriesDelta", "READ_TABLE_ENTRIES_DELTA", Q,
     (RID, SEG, TOKEN, F("from_position", "long"), F("suggested_entry_count", "int")),
     ("TableEntriesDeltaRead",))
_cmd(89, "ConditionalBlockEnd", "CONDITIONAL_BLOCK_END", Q,
     (WRITER, F("event_number", "long"), F("expected_offset", "long"), F("data", "blob"), RID),
     ("DataAppended", "ConditionalCheckFailed", "InvalidEventNumber"))
_cmd(90, "MergeSegmentsBatch", "MERGE_SEGMENTS_BATCH", Q,
     (RID, F("target", "str"), F("sources", "strs"), TOKEN), ("SegmentsBatchMerged",))
_cmd(91, "SegmentsBatchMerged", "SEGMENTS_BATCH_MERGED", R, (RID, F("target", "str"), F("merged", "merged_sources")))
_cmd(100, "KeepAlive", "KEEP_ALIVE", BOTH, ())
# fmt: on

COMMANDS: dict[int, Command] = {c.code: c for c in _ROWS}
"""Every command by type code."""
TOP_LEVEL_CODES: frozenset[int] = frozenset(c.code for c in _ROWS if c.direction != INNER)
"""Codes that may start a frame on the wire (EVENT, PADDING, PARTIAL_EVENT live inside blocks only)."""
