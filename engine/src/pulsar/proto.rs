//! A protobuf (proto2) decoder driven by the tables codegen/pulsar.rs cuts from `PulsarApi.proto`.
//!
//! Why not prost structs: the reference (Python protobuf on upb) keeps presence for every proto2
//! field, `required` ones included, lists set fields in field-number order, drops values of a
//! closed enum it does not know into the unknown set, merges a repeated singular sub-message
//! into the first, lets the last oneof member win and rejects the same malformed inputs (tags
//! over 32 bits, field 0, wire types 6/7, stray end-groups, nesting past 100). Every one of those
//! shows in the decoded tree, so this decoder does exactly what upb does, and nothing else.

use std::borrow::Cow;

use crate::model::{Field, Fields, Span, Value};

include!(concat!(env!("OUT_DIR"), "/pulsar_proto.rs"));

/// A field's protobuf type (`Message`/`Enum` index [`MESSAGES`]/[`ENUMS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Double,
    Float,
    Int64,
    UInt64,
    Int32,
    Fixed64,
    Fixed32,
    Bool,
    String,
    Bytes,
    UInt32,
    SFixed32,
    SFixed64,
    SInt32,
    SInt64,
    Message(u16),
    Enum(u16),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Label {
    Optional,
    Required,
    Repeated,
}

/// The value a getter returns for an unset field (proto2 `[default = …]` or the type's zero).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Def {
    None,
    Int(i64),
    UInt(u64),
    Bool(bool),
    Float(f64),
    Str(&'static str),
}

#[derive(Debug)]
pub struct FieldDesc {
    pub number: u32,
    pub name: &'static str,
    pub ty: Ty,
    pub label: Label,
    /// Index of the oneof the field belongs to, -1 for none.
    pub oneof: i32,
    pub default: Def,
}

#[derive(Debug)]
pub struct MsgDesc {
    pub name: &'static str,
    /// Sorted by field number.
    pub fields: &'static [FieldDesc],
}

#[derive(Debug)]
pub struct EnumDesc {
    pub name: &'static str,
    pub values: &'static [(i32, &'static str)],
}

impl EnumDesc {
    pub fn name_of(&self, n: i32) -> Option<&'static str> {
        self.values.iter().find(|v| v.0 == n).map(|v| v.1)
    }
}

/// One decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum PV {
    Int(i64),
    UInt(u64),
    Float(f64),
    Bool(bool),
    Enum(i32),
    /// A `string` field's bytes (proto2 does not check UTF-8; [`text`] renders them).
    Str(Vec<u8>),
    Bytes(Vec<u8>),
    Msg(Msg),
}

/// One value of a field with the span of its bytes (offsets in the buffer given to [`parse`]
/// plus its `base`).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub val: PV,
    pub span: Span,
}

/// One set field: its index in the message's `fields` and its values (one unless repeated).
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    pub fi: u16,
    pub items: Vec<Item>,
}

/// A decoded message: its set fields, in field-number order.
#[derive(Clone, Debug, PartialEq)]
pub struct Msg {
    pub desc: u16,
    pub slots: Vec<Slot>,
}

/// upb's default nesting limit (groups and sub-messages).
const MAX_DEPTH: i32 = 100;

/// The error text the reference gives for any input upb rejects.
pub fn parse_error(desc: u16) -> String {
    let d = &MESSAGES[desc as usize];
    format!(
        "{}: Error parsing message with type 'pulsar.proto.{}': Wire format was corrupt",
        short_name(d.name),
        d.name
    )
}

fn short_name(full: &str) -> &str {
    full.rsplit('.').next().unwrap_or(full)
}

/// Parses `data` as message `desc`; None when upb would reject it. Spans are `base` + offset.
pub fn parse(desc: u16, data: &[u8], base: usize) -> Option<Msg> {
    let mut m = Msg::empty(desc);
    let mut d = Dec { data, base };
    d.message(&mut m, 0, data.len(), MAX_DEPTH, None).ok()?;
    Some(m)
}

struct Dec<'a> {
    data: &'a [u8],
    base: usize,
}

type R<T> = Result<T, ()>;

impl Dec<'_> {
    fn varint(&self, pos: &mut usize, end: usize) -> R<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            if *pos >= end {
                return Err(());
            }
            let b = self.data[*pos];
            *pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(())
    }

    fn tag(&self, pos: &mut usize, end: usize) -> R<u32> {
        let mut v = 0u64;
        for i in 0..5 {
            if *pos >= end {
                return Err(());
            }
            let b = self.data[*pos];
            *pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return u32::try_from(v).map_err(|_| ());
            }
        }
        Err(())
    }

    fn fixed(&self, pos: &mut usize, end: usize, n: usize) -> R<u64> {
        if end - *pos < n {
            return Err(());
        }
        let mut v = 0u64;
        for i in 0..n {
            v |= u64::from(self.data[*pos + i]) << (8 * i);
        }
        *pos += n;
        Ok(v)
    }

    fn len(&self, pos: &mut usize, end: usize) -> R<usize> {
        let n = self.varint(pos, end)?;
        if n > (end - *pos) as u64 {
            return Err(());
        }
        Ok(n as usize)
    }

    /// Decodes fields into `m` until `end`, or until the end-group of `group`.
    fn message(
        &mut self,
        m: &mut Msg,
        mut pos: usize,
        end: usize,
        depth: i32,
        group: Option<u32>,
    ) -> R<usize> {
        let desc = &MESSAGES[m.desc as usize];
        while pos < end {
            let tag = self.tag(&mut pos, end)?;
            let (num, wt) = (tag >> 3, tag & 7);
            if num == 0 {
                return Err(());
            }
            if wt == 4 {
                return if group == Some(num) { Ok(pos) } else { Err(()) };
            }
            let fi = desc.fields.binary_search_by_key(&num, |f| f.number).ok();
            match fi {
                Some(fi) => self.field(m, fi, wt, &mut pos, end, depth)?,
                None => self.skip(wt, num, &mut pos, end, depth)?,
            }
        }
        if group.is_some() {
            return Err(()); // the buffer ended inside a group
        }
        Ok(pos)
    }

    fn skip(&mut self, wt: u32, num: u32, pos: &mut usize, end: usize, depth: i32) -> R<()> {
        match wt {
            0 => {
                self.varint(pos, end)?;
            }
            1 => {
                self.fixed(pos, end, 8)?;
            }
            2 => {
                let n = self.len(pos, end)?;
                *pos += n;
            }
            3 => {
                if depth - 1 < 0 {
                    return Err(());
                }
                *pos = self.skip_group(*pos, end, depth - 1, num)?;
            }
            5 => {
                self.fixed(pos, end, 4)?;
            }
            _ => return Err(()),
        }
        Ok(())
    }

    fn skip_group(&mut self, mut pos: usize, end: usize, depth: i32, group: u32) -> R<usize> {
        while pos < end {
            let tag = self.tag(&mut pos, end)?;
            let (num, wt) = (tag >> 3, tag & 7);
            if num == 0 {
                return Err(());
            }
            if wt == 4 {
                return if num == group { Ok(pos) } else { Err(()) };
            }
            self.skip(wt, num, &mut pos, end, depth)?;
        }
        Err(())
    }

    fn scalar(&self, ty: Ty, pos: &mut usize, end: usize) -> R<Option<PV>> {
        Ok(Some(match ty {
            Ty::Int32 => PV::Int(i64::from(self.varint(pos, end)? as u32 as i32)),
            Ty::Int64 => PV::Int(self.varint(pos, end)? as i64),
            Ty::UInt32 => PV::Int(i64::from(self.varint(pos, end)? as u32)),
            Ty::UInt64 => PV::UInt(self.varint(pos, end)?),
            Ty::SInt32 => {
                let v = self.varint(pos, end)? as u32;
                PV::Int(i64::from((v >> 1) as i32 ^ -((v & 1) as i32)))
            }
            Ty::SInt64 => {
                let v = self.varint(pos, end)?;
                PV::Int((v >> 1) as i64 ^ -((v & 1) as i64))
            }
            Ty::Bool => PV::Bool(self.varint(pos, end)? != 0),
            Ty::Enum(e) => {
                let v = self.varint(pos, end)? as u32 as i32;
                if ENUMS[e as usize].name_of(v).is_none() {
                    return Ok(None); // a closed enum: unknown values go to the unknown set
                }
                PV::Enum(v)
            }
            Ty::Fixed32 => PV::Int(self.fixed(pos, end, 4)? as i64),
            Ty::SFixed32 => PV::Int(i64::from(self.fixed(pos, end, 4)? as u32 as i32)),
            Ty::Float => PV::Float(f64::from(f32::from_bits(self.fixed(pos, end, 4)? as u32))),
            Ty::Fixed64 => PV::UInt(self.fixed(pos, end, 8)?),
            Ty::SFixed64 => PV::Int(self.fixed(pos, end, 8)? as i64),
            Ty::Double => PV::Float(f64::from_bits(self.fixed(pos, end, 8)?)),
            Ty::String | Ty::Bytes | Ty::Message(_) => return Err(()),
        }))
    }

    fn field(
        &mut self,
        m: &mut Msg,
        fi: usize,
        wt: u32,
        pos: &mut usize,
        end: usize,
        depth: i32,
    ) -> R<()> {
        let fd = &MESSAGES[m.desc as usize].fields[fi];
        let want = match fd.ty {
            Ty::Double | Ty::Fixed64 | Ty::SFixed64 => 1,
            Ty::Float | Ty::Fixed32 | Ty::SFixed32 => 5,
            Ty::String | Ty::Bytes | Ty::Message(_) => 2,
            _ => 0,
        };
        let repeated = fd.label == Label::Repeated;
        if wt != want {
            if repeated && wt == 2 && want != 2 {
                // Packed repeated scalars (accepted for any repeated scalar, as upb does).
                let n = self.len(pos, end)?;
                let stop = *pos + n;
                while *pos < stop {
                    let at = *pos;
                    if let Some(v) = self.scalar(fd.ty, pos, stop)? {
                        let span = Span::new(self.base + at, self.base + *pos);
                        m.push(fi, Item { val: v, span }, true);
                    }
                }
                return Ok(());
            }
            let num = fd.number;
            return self.skip(wt, num, pos, end, depth);
        }
        let at = *pos;
        match fd.ty {
            Ty::String | Ty::Bytes => {
                let n = self.len(pos, end)?;
                let v = self.data[*pos..*pos + n].to_vec();
                let span = Span::new(self.base + *pos, self.base + *pos + n);
                *pos += n;
                let val = if fd.ty == Ty::String {
                    PV::Str(v)
                } else {
                    PV::Bytes(v)
                };
                m.push(fi, Item { val, span }, repeated);
            }
            Ty::Message(sub) => {
                let n = self.len(pos, end)?;
                if depth - 1 < 0 {
                    return Err(());
                }
                let (s, e) = (*pos, *pos + n);
                let span = Span::new(self.base + s, self.base + e);
                if !repeated {
                    if let Some(PV::Msg(existing)) = m.get_mut(fi) {
                        // A singular sub-message seen again is merged into the first.
                        self.message(existing, s, e, depth - 1, None)?;
                        *pos = e;
                        return Ok(());
                    }
                }
                let mut child = Msg::empty(sub);
                self.message(&mut child, s, e, depth - 1, None)?;
                *pos = e;
                m.push(
                    fi,
                    Item {
                        val: PV::Msg(child),
                        span,
                    },
                    repeated,
                );
            }
            ty => {
                if let Some(v) = self.scalar(ty, pos, end)? {
                    let span = Span::new(self.base + at, self.base + *pos);
                    m.push(fi, Item { val: v, span }, repeated);
                }
            }
        }
        Ok(())
    }
}

impl Msg {
    pub fn empty(desc: u16) -> Msg {
        Msg {
            desc,
            slots: Vec::new(),
        }
    }

    pub fn descriptor(&self) -> &'static MsgDesc {
        &MESSAGES[self.desc as usize]
    }

    fn push(&mut self, fi: usize, item: Item, repeated: bool) {
        let fields = MESSAGES[self.desc as usize].fields;
        let oneof = fields[fi].oneof;
        if oneof >= 0 {
            // Setting a oneof member clears the others.
            self.slots
                .retain(|s| s.fi as usize == fi || fields[s.fi as usize].oneof != oneof);
        }
        match self.slots.binary_search_by_key(&(fi as u16), |s| s.fi) {
            Ok(i) => {
                if repeated {
                    self.slots[i].items.push(item);
                } else {
                    self.slots[i].items = vec![item];
                }
            }
            Err(i) => self.slots.insert(
                i,
                Slot {
                    fi: fi as u16,
                    items: vec![item],
                },
            ),
        }
    }

    fn get_mut(&mut self, fi: usize) -> Option<&mut PV> {
        let i = self
            .slots
            .binary_search_by_key(&(fi as u16), |s| s.fi)
            .ok()?;
        self.slots[i].items.last_mut().map(|it| &mut it.val)
    }

    /// The field called `name` of this message's type.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.descriptor().fields.iter().position(|f| f.name == name)
    }

    fn slot(&self, name: &str) -> Option<&Slot> {
        let fi = self.field_index(name)? as u16;
        self.slots.iter().find(|s| s.fi == fi)
    }

    /// Python's `HasField` (for a repeated field: has at least one value).
    pub fn has(&self, name: &str) -> bool {
        self.slot(name).is_some()
    }

    /// The value of a set singular field.
    pub fn item(&self, name: &str) -> Option<&Item> {
        self.slot(name)?.items.last()
    }

    pub fn get(&self, name: &str) -> Option<&PV> {
        self.item(name).map(|i| &i.val)
    }

    fn default_of(&self, name: &str) -> Def {
        self.field_index(name)
            .map(|i| self.descriptor().fields[i].default)
            .unwrap_or(Def::None)
    }

    /// An integer field, or its default (uint64 values as their bits).
    pub fn int(&self, name: &str) -> i64 {
        match self.get(name) {
            Some(PV::Int(v)) => *v,
            Some(PV::UInt(v)) => *v as i64,
            Some(PV::Enum(v)) => i64::from(*v),
            Some(PV::Bool(b)) => i64::from(*b),
            _ => match self.default_of(name) {
                Def::Int(v) => v,
                Def::UInt(v) => v as i64,
                Def::Bool(b) => i64::from(b),
                _ => 0,
            },
        }
    }

    /// A uint64 field (or any integer field) as unsigned, or its default.
    pub fn uint(&self, name: &str) -> u64 {
        match self.get(name) {
            Some(PV::UInt(v)) => *v,
            _ => self.int(name) as u64,
        }
    }

    pub fn boolean(&self, name: &str) -> bool {
        match self.get(name) {
            Some(PV::Bool(b)) => *b,
            _ => matches!(self.default_of(name), Def::Bool(true)),
        }
    }

    /// A string field as text (`schema.text`: invalid UTF-8 replaced), or its default.
    pub fn text(&self, name: &str) -> Cow<'_, str> {
        match self.get(name) {
            Some(PV::Str(b)) | Some(PV::Bytes(b)) => String::from_utf8_lossy(b),
            _ => match self.default_of(name) {
                Def::Str(s) => Cow::Borrowed(s),
                _ => Cow::Borrowed(""),
            },
        }
    }

    /// A string/bytes field's raw bytes (empty when unset).
    pub fn raw(&self, name: &str) -> &[u8] {
        match self.get(name) {
            Some(PV::Str(b)) | Some(PV::Bytes(b)) => b,
            _ => &[],
        }
    }

    pub fn msg(&self, name: &str) -> Option<&Msg> {
        match self.get(name) {
            Some(PV::Msg(m)) => Some(m),
            _ => None,
        }
    }

    /// A sub-message, or the empty one of its type when unset (Python's attribute access).
    pub fn msg_or_empty(&self, name: &str) -> Cow<'_, Msg> {
        if let Some(m) = self.msg(name) {
            return Cow::Borrowed(m);
        }
        let desc = self
            .field_index(name)
            .and_then(|i| match self.descriptor().fields[i].ty {
                Ty::Message(d) => Some(d),
                _ => None,
            })
            .unwrap_or(0);
        Cow::Owned(Msg::empty(desc))
    }

    /// Every value of a repeated field.
    pub fn list(&self, name: &str) -> &[Item] {
        self.slot(name).map(|s| &s.items[..]).unwrap_or(&[])
    }

    /// Python's `FindInitializationErrors`: missing required fields, then those of set
    /// sub-messages, as dotted paths.
    pub fn missing_required(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.missing_into("", &mut out);
        out
    }

    fn missing_into(&self, prefix: &str, out: &mut Vec<String>) {
        let fields = self.descriptor().fields;
        for (i, f) in fields.iter().enumerate() {
            if f.label == Label::Required && !self.slots.iter().any(|s| s.fi as usize == i) {
                out.push(format!("{prefix}{}", f.name));
            }
        }
        for s in &self.slots {
            let f = &fields[s.fi as usize];
            if !matches!(f.ty, Ty::Message(_)) {
                continue;
            }
            for (k, it) in s.items.iter().enumerate() {
                if let PV::Msg(m) = &it.val {
                    let p = if f.label == Label::Repeated {
                        format!("{prefix}{}[{k}].", f.name)
                    } else {
                        format!("{prefix}{}.", f.name)
                    };
                    m.missing_into(&p, out);
                }
            }
        }
    }
}

/// Fields holding credentials: masked unless the user asks for secrets.
pub const SECRET_FIELDS: [&str; 2] = ["auth_data", "original_auth_data"];

/// `schema.to_dict`: every set field, enums by name, bytes as bytes, nested messages as maps.
pub fn to_dict(m: &Msg, show_secrets: bool, depth: u32, max_depth: u32) -> Fields {
    let mut out = Fields(Vec::with_capacity(m.slots.len()));
    if depth > max_depth {
        out.set("_truncated", Value::Str("nesting too deep".into()));
        return out;
    }
    let fields = m.descriptor().fields;
    for s in &m.slots {
        let fd = &fields[s.fi as usize];
        let span = match (s.items.first(), s.items.last()) {
            (Some(a), Some(b)) => Some(Span {
                start: a.span.start,
                end: b.span.end,
            }),
            _ => None,
        };
        if !show_secrets && SECRET_FIELDS.contains(&fd.name) {
            let n = s.items.last().map(|it| masked_len(&it.val)).unwrap_or(0);
            out.0.push(Field {
                name: Cow::Borrowed(fd.name),
                value: Value::Str(format!("<masked {n} bytes>")),
                span,
            });
            continue;
        }
        let value = if fd.label == Label::Repeated {
            Value::List(
                s.items
                    .iter()
                    .map(|it| value_of(fd, &it.val, show_secrets, depth, max_depth))
                    .collect(),
            )
        } else {
            match s.items.last() {
                Some(it) => value_of(fd, &it.val, show_secrets, depth, max_depth),
                None => continue,
            }
        };
        out.0.push(Field {
            name: Cow::Borrowed(fd.name),
            value,
            span,
        });
    }
    out
}

/// Python's `len(value)`: characters of a valid string, bytes otherwise.
fn masked_len(v: &PV) -> usize {
    match v {
        PV::Str(b) => match std::str::from_utf8(b) {
            Ok(s) => s.chars().count(),
            Err(_) => b.len(),
        },
        PV::Bytes(b) => b.len(),
        _ => 0,
    }
}

fn value_of(fd: &FieldDesc, v: &PV, show_secrets: bool, depth: u32, max_depth: u32) -> Value {
    match v {
        PV::Int(i) => Value::Int(*i),
        PV::UInt(u) => Value::UInt(*u),
        PV::Float(f) => Value::Float(*f),
        PV::Bool(b) => Value::Bool(*b),
        PV::Enum(e) => match fd.ty {
            Ty::Enum(ei) => match ENUMS[ei as usize].name_of(*e) {
                Some(n) => Value::Str(n.to_string()),
                None => Value::Int(i64::from(*e)),
            },
            _ => Value::Int(i64::from(*e)),
        },
        PV::Str(b) => Value::Str(String::from_utf8_lossy(b).into_owned()),
        PV::Bytes(b) => Value::Bytes(b.clone()),
        PV::Msg(m) => Value::Map(to_dict(m, show_secrets, depth + 1, max_depth)),
    }
}

/// The enum value names of `e` by number.
pub fn enum_name(e: u16, n: i64) -> Option<&'static str> {
    i32::try_from(n)
        .ok()
        .and_then(|n| ENUMS[e as usize].name_of(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_command_by_hand() {
        // type=CONNECT(2), connect{client_version="a", protocol_version=20}
        let b = [0x08, 0x02, 0x12, 0x05, 0x0a, 0x01, b'a', 0x20, 0x14];
        let m = parse(msg::BaseCommand, &b, 8).unwrap();
        assert_eq!(m.int("type"), 2);
        let c = m.msg("connect").unwrap();
        assert_eq!(c.text("client_version"), "a");
        assert_eq!(c.int("protocol_version"), 20);
        assert_eq!(c.item("client_version").unwrap().span, Span::new(14, 15));
        assert!(c.missing_required().is_empty());
        let d = to_dict(&m, false, 0, 16);
        assert_eq!(d.get("type"), Some(&Value::Str("CONNECT".into())));
    }

    #[test]
    fn rejects_what_upb_rejects() {
        for bad in [
            &b"\x08\x02\x12"[..],
            b"\x08\x02\x00",
            b"\x08\x02\x0c",
            b"\x80\x80\x80\x80\x10\x01",
            b"\x0e",
            b"\x0f",
            b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",
        ] {
            assert!(parse(msg::BaseCommand, bad, 0).is_none(), "{bad:?}");
        }
        // An unknown enum value is dropped; a group on a known field is skipped.
        let m = parse(msg::BaseCommand, b"\x08\xe3\x01", 0).unwrap();
        assert!(!m.has("type"));
        let m = parse(msg::BaseCommand, b"\x08\x02\x0b\x08\x01\x0c", 0).unwrap();
        assert_eq!(m.int("type"), 2);
        let mut deep = b"\x08\x02".to_vec();
        deep.extend(b"\xfb\x01".repeat(100));
        deep.extend(b"\xfc\x01".repeat(100));
        assert!(parse(msg::BaseCommand, &deep, 0).is_some());
        let mut deeper = b"\x08\x02".to_vec();
        deeper.extend(b"\xfb\x01".repeat(101));
        deeper.extend(b"\xfc\x01".repeat(101));
        assert!(parse(msg::BaseCommand, &deeper, 0).is_none());
    }
}
