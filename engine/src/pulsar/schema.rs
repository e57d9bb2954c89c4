//! Pulsar's protobuf schema as the decoder uses it (the twin of `schema.py`): type names, the
//! command field of each type, the raw type number when protobuf cannot tell it, message ids.

use super::proto::{self, en, msg, Msg, Ty, MESSAGES};

/// BaseCommand type number → enum name (CONNECT, SEND, …).
pub fn type_name(t: u128) -> Option<&'static str> {
    i32::try_from(t)
        .ok()
        .and_then(|n| proto::ENUMS[en::BaseCommand_Type as usize].name_of(n))
}

/// The BaseCommand type number called `name` (names from the schema; panics on a typo, which
/// the unit tests would catch).
pub fn code(name: &str) -> u128 {
    proto::ENUMS[en::BaseCommand_Type as usize]
        .values
        .iter()
        .find(|v| v.1 == name)
        .map(|v| v.0 as u128)
        .unwrap_or(u128::MAX)
}

/// Type number → name of the BaseCommand field holding that command (same number by design).
pub fn command_field(t: u128) -> Option<&'static str> {
    let t = u32::try_from(t).ok()?;
    MESSAGES[msg::BaseCommand as usize]
        .fields
        .iter()
        .find(|f| f.number == t && matches!(f.ty, Ty::Message(_)))
        .map(|f| f.name)
}

/// ServerError number → name.
pub fn server_error(code: i64) -> Option<&'static str> {
    proto::enum_name(en::ServerError, code)
}

/// CompressionType number → name.
pub fn compression_name(code: i64) -> Option<&'static str> {
    proto::enum_name(en::CompressionType, code)
}

/// A uint64 id as the int64 the tables hold (-1 written as 2^64-1 reads back as -1).
pub fn signed64(v: u64) -> i64 {
    v as i64
}

/// BaseCommand field 1 (type) read straight from the wire, whatever protobuf makes of it.
pub fn raw_type(data: &[u8]) -> Option<u128> {
    if data.len() >= 2 && data[0] == 0x08 && data[1] < 0x80 {
        return Some(u128::from(data[1]));
    }
    let mut pos = 0usize;
    while pos < data.len() {
        let tag = uvarint(data, &mut pos)?;
        let (field, wt) = (tag >> 3, tag & 7);
        match wt {
            0 => {
                let v = uvarint(data, &mut pos)?;
                if field == 1 {
                    return Some(v);
                }
            }
            1 => pos = skip(data, pos, 8)?,
            2 => {
                let n = uvarint(data, &mut pos)?;
                pos = skip(data, pos, usize::try_from(n).ok()?)?;
            }
            5 => pos = skip(data, pos, 4)?,
            _ => return None,
        }
    }
    None
}

fn skip(data: &[u8], pos: usize, n: usize) -> Option<usize> {
    let end = pos.checked_add(n)?;
    (end <= data.len()).then_some(end)
}

/// An unsigned LEB128 of at most 10 bytes, unbounded like a Python int (up to 70 bits).
fn uvarint(data: &[u8], pos: &mut usize) -> Option<u128> {
    let mut v = 0u128;
    for i in 0..10 {
        let b = *data.get(*pos)?;
        *pos += 1;
        v |= u128::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A MessageIdData as ledger:entry:partition:batch_index (Pulsar's own string form).
///
/// Brokers leave `partition` at -1; clients fill in the partition of the topic they produce to
/// or consume from, which `partition` gives when known.
pub fn message_id_str(mid: &Msg, batch_index: Option<i64>, partition: Option<i64>) -> String {
    let bi = batch_index.unwrap_or_else(|| mid.int("batch_index"));
    let own = mid.int("partition");
    let part = match partition {
        Some(p) if own < 0 => p,
        _ => own,
    };
    format!(
        "{}:{}:{}:{}",
        signed64(mid.uint("ledgerId")),
        signed64(mid.uint("entryId")),
        part,
        bi
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_raw_types() {
        assert_eq!(type_name(2), Some("CONNECT"));
        assert_eq!(code("SEND"), 6);
        assert_eq!(command_field(6), Some("send"));
        assert_eq!(raw_type(b"\x08\x06"), Some(6));
        assert_eq!(raw_type(b"\x12\x00\x08\x86\x01"), Some(134));
        assert_eq!(raw_type(b"\x12\x05\x00"), None);
        assert_eq!(server_error(0), Some("UnknownError"));
    }
}
