//! The one table-walking decoder for every Kafka request and response body.
//!
//! It follows a generated [`Plan`]: classic and compact strings, bytes, arrays and records,
//! nullable structs, tagged-field sections (known tags by name, unknown ones kept raw). Every
//! count and length is checked against the bytes left before anything is read or allocated, and
//! a contradiction is a returned [`DecodeError`], never a panic. Every decoded value keeps its
//! byte span so a viewer can highlight exactly a field's bytes.
//!
//! It gives exactly what the Python reference (`wiredump/dissect/protocols/kafka/body.py`,
//! `walk_body`) gives: the same values, the same partial decode before an error, the same error
//! messages at the same offsets, the same collected error codes with their paths.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;

use super::schema::{Fixed, Kind, Op, Plan};

/// Structs nested deeper than this are refused (as `body.MAX_DEPTH`).
pub const MAX_DEPTH: usize = 24;

/// Array elements a body keeps when decoded without the run's limits at hand (as
/// `body.MAX_ELEMENTS`; the run's is `Limits::max_elements`).
pub const MAX_ELEMENTS: u64 = 100_000;

/// A field's name: a schema name, an unknown tag's number, or the unknown-tags section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Name {
    Field(&'static str),
    /// An unknown tagged field, by tag number (inside `_unknown_tags`).
    Tag(u64),
}

impl Name {
    /// The key the Python decoder uses.
    pub fn as_str(&self) -> Cow<'static, str> {
        match self {
            Name::Field(s) => Cow::Borrowed(s),
            Name::Tag(t) => Cow::Owned(t.to_string()),
        }
    }
}

/// One decoded value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Bytes(Cow<'a, [u8]>),
    /// A secret bytes field: only its length is shown.
    Masked(usize),
    Uuid([u8; 16]),
    Array(Vec<Node<'a>>),
    Struct(Vec<Field<'a>>),
    /// A record set (decoded separately by `records`); `size` bytes at the node's span.
    Records {
        size: usize,
    },
}

/// A value and the bytes it was read from (`start..end`, offsets in the decoded buffer).
#[derive(Clone, Debug, PartialEq)]
pub struct Node<'a> {
    pub value: Value<'a>,
    pub start: usize,
    pub end: usize,
}

impl Node<'_> {
    /// The same node holding its own bytes (for values read from a temporary buffer, such as a
    /// decompressed batch).
    pub fn into_owned(self) -> Node<'static> {
        let value = match self.value {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            Value::Int(i) => Value::Int(i),
            Value::Float(f) => Value::Float(f),
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
            Value::Bytes(b) => Value::Bytes(Cow::Owned(b.into_owned())),
            Value::Masked(n) => Value::Masked(n),
            Value::Uuid(u) => Value::Uuid(u),
            Value::Array(items) => Value::Array(items.into_iter().map(Node::into_owned).collect()),
            Value::Struct(fields) => {
                Value::Struct(fields.into_iter().map(Field::into_owned).collect())
            }
            Value::Records { size } => Value::Records { size },
        };
        Node {
            value,
            start: self.start,
            end: self.end,
        }
    }
}

impl Field<'_> {
    pub fn into_owned(self) -> Field<'static> {
        Field {
            name: self.name,
            node: self.node.into_owned(),
        }
    }
}

/// A named value inside a struct. A struct may name a field twice (a tag that repeats a field):
/// the later value wins, at the earlier place, as a dict assignment does.
#[derive(Clone, Debug, PartialEq)]
pub struct Field<'a> {
    pub name: Name,
    pub node: Node<'a>,
}

/// Why a body does not decode: its bytes end early (`Short`) or contradict the layout (`Bad`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeError {
    Short {
        what: Cow<'static, str>,
        offset: usize,
        need: i64,
        left: i64,
    },
    Bad {
        msg: String,
        offset: usize,
    },
}

impl DecodeError {
    /// Where in the buffer the problem is.
    pub fn offset(&self) -> usize {
        match self {
            DecodeError::Short { offset, .. } | DecodeError::Bad { offset, .. } => *offset,
        }
    }

    /// `Short` or `Bad` (the Python exception's class name).
    pub fn kind(&self) -> &'static str {
        match self {
            DecodeError::Short { .. } => "Short",
            DecodeError::Bad { .. } => "Bad",
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Short {
                what,
                offset,
                need,
                left,
            } => {
                write!(f, "{what} at byte {offset} needs {need} bytes, {left} left")
            }
            DecodeError::Bad { msg, .. } => f.write_str(msg),
        }
    }
}

/// The decode of one body: the fields read (all of them, or those read before `error`), the
/// non-zero error codes with their paths, and where the body ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded<'a> {
    pub fields: Vec<Field<'a>>,
    pub errors: Vec<(String, i64)>,
    pub end: usize,
    pub error: Option<DecodeError>,
    /// Array elements kept in `fields` (at most the budget, see [`decode_body_limited`]).
    pub kept: u64,
    /// Array elements read past the budget: checked, not kept (`body.Elements.dropped`).
    pub dropped: u64,
    /// Path and offset of the first element not kept (`body.Elements.first`).
    pub first_dropped: Option<(String, usize)>,
    /// `Records` nodes read (at least those `fields` holds): 0 spares looking for record sets
    /// in a tree that has none (a Produce response, most bodies).
    pub record_nodes: usize,
}

type R<T> = Result<T, DecodeError>;

fn short(what: impl Into<Cow<'static, str>>, offset: usize, need: i64, left: i64) -> DecodeError {
    DecodeError::Short {
        what: what.into(),
        offset,
        need,
        left,
    }
}

/// A Python `None` in an f-string.
fn opt(name: Option<&'static str>) -> &'static str {
    name.unwrap_or("None")
}

/// A bounds-checked cursor (as `wire.Cursor`): `end` narrows inside a tagged field.
struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    end: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> i64 {
        self.end as i64 - self.pos as i64
    }

    fn take(&mut self, n: i64, what: &'static str) -> R<&'a [u8]> {
        if n < 0 || n > self.left() {
            return Err(short(what, self.pos, n, self.left()));
        }
        let v = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(v)
    }

    /// A uvarint of at most `max_bytes`; `words`: name a too-long one in full (a check leaves
    /// its `what` empty, see [`check_body`]).
    fn uvarint(&mut self, what: &'static str, max_bytes: usize, words: bool) -> R<u64> {
        let start = self.pos;
        let mut value: u64 = 0;
        for i in 0..max_bytes {
            if self.pos >= self.end {
                return Err(short(
                    what,
                    start,
                    (self.pos - start + 1) as i64,
                    (self.end - start) as i64,
                ));
            }
            let b = self.buf[self.pos];
            self.pos += 1;
            value |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        let what = if words {
            Cow::Owned(format!("{what} (longer than {max_bytes} bytes)"))
        } else {
            Cow::Borrowed(UNNAMED)
        };
        Err(short(
            what,
            start,
            max_bytes as i64 + 1,
            (self.end - start) as i64,
        ))
    }

    fn fixed(&mut self, ty: Fixed) -> Value<'a> {
        let b = &self.buf[self.pos..];
        let v = match ty {
            Fixed::I8 => Value::Int(i64::from(b[0] as i8)),
            Fixed::Bool => Value::Bool(b[0] != 0),
            Fixed::I16 => Value::Int(i64::from(i16::from_be_bytes([b[0], b[1]]))),
            Fixed::U16 => Value::Int(i64::from(u16::from_be_bytes([b[0], b[1]]))),
            Fixed::I32 => Value::Int(i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
            Fixed::U32 => Value::Int(i64::from(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))),
            Fixed::I64 => Value::Int(i64::from_be_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ])),
            Fixed::F64 => Value::Float(f64::from_be_bytes([
                b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
            ])),
        };
        self.pos += ty.size();
        v
    }
}

/// What `value` produced: a node, or nothing to place: (for an array of structs) a field it
/// already placed in the enclosing struct so that a partial decode shows the elements read
/// before an error, or (in a check) a value not kept.
enum Got<'a> {
    Node(Node<'a>),
    Placed,
}

/// The `what` of a `Short` whose words a check does not write (see [`check_body`]).
const UNNAMED: &str = "";

/// The body walker. `KEEP`: build the tree, the error codes' paths and the errors' words
/// ([`decode_body`]); without it the same walk, with every check made in the same order, keeps
/// only where the body ends, its first error's kind and place, and its record sets' ranges
/// ([`check_body`]): one walker, so that the check cannot drift from the decode.
struct Walker<'a, 's, const KEEP: bool> {
    cur: Cursor<'a>,
    secrets: &'s [&'s str],
    errors: Vec<(String, i64)>,
    /// (field name, array index) per enclosing struct, for the error codes' paths.
    /// Inline: bodies nest a few structs deep (a deeper one spills to the heap).
    path: smallvec::SmallVec<[(Option<&'static str>, Option<usize>); 8]>,
    depth: usize,
    /// Array elements the tree may still keep: a body of a million 8-byte elements would
    /// otherwise be a million nodes (as `body.Elements`). Past it elements are read, not kept.
    left: u64,
    /// Elements read past the budget.
    dropped: u64,
    /// Path and offset of the first of them.
    first_dropped: Option<(String, usize)>,
    /// Reading elements past the budget: their error codes count only while none is collected
    /// (the frame's first error code stays the first read), their record sets are not decoded.
    dropping: bool,
    /// A check's record sets (the `Records` nodes the tree would keep), in reading order.
    records: Vec<Range<usize>>,
    /// A decode's `Records` nodes made (kept in the tree or not): none means the tree holds
    /// no record set to look for.
    record_nodes: usize,
}

impl<'a, 's, const KEEP: bool> Walker<'a, 's, KEEP> {
    fn new(buf: &'a [u8], pos: usize, secrets: &'s [&'s str], max_elements: u64) -> Self {
        Walker {
            cur: Cursor {
                buf,
                pos: pos.min(buf.len()),
                end: buf.len(),
            },
            secrets,
            errors: Vec::new(),
            path: smallvec::SmallVec::new(),
            depth: 0,
            left: max_elements,
            dropped: 0,
            first_dropped: None,
            dropping: false,
            records: Vec::new(),
            record_nodes: 0,
        }
    }
}

impl<'a, const KEEP: bool> Walker<'a, '_, KEEP> {
    /// A contradiction at `offset`. Its words are written only when a tree is kept: a check
    /// (layouts are tried many times, most fail) needs where, not why.
    fn bad(offset: usize, msg: impl FnOnce() -> String) -> DecodeError {
        DecodeError::Bad {
            msg: if KEEP { msg() } else { String::new() },
            offset,
        }
    }

    /// A `Short`'s `what` that has to be written (not a field's name): empty in a check.
    fn named(what: impl FnOnce() -> String) -> Cow<'static, str> {
        if KEEP {
            Cow::Owned(what())
        } else {
            Cow::Borrowed(UNNAMED)
        }
    }

    /// Enters a struct field `name` (element `index` of it when an array) for the error codes'
    /// paths, which only a kept tree has.
    fn enter(&mut self, name: Option<&'static str>, index: Option<usize>) {
        if KEEP {
            self.path.push((name, index));
        }
    }

    fn leave(&mut self) {
        if KEEP {
            self.path.pop();
        }
    }

    /// The innermost path entry is element `i` of its array.
    fn at_index(&mut self, i: usize) {
        if KEEP {
            if let Some(p) = self.path.last_mut() {
                p.1 = Some(i);
            }
        }
    }

    /// The enclosing structs' path (`a.b[3].c`, as `BodyDecoder._where` writes it) and `suffix`.
    fn path_to(&self, suffix: &str) -> String {
        let mut p = String::new();
        for (n, i) in &self.path {
            p.push('.');
            p.push_str(opt(*n));
            if let Some(i) = i {
                p.push_str(&format!("[{i}]"));
            }
        }
        p.push_str(suffix);
        p.trim_start_matches('.').to_owned()
    }

    fn record_error(&mut self, name: &str, code: i64) {
        if !KEEP || (self.dropping && !self.errors.is_empty()) {
            return;
        }
        let p = self.path_to(&format!(".{name}"));
        self.errors.push((p, code));
    }

    /// Remembers where the first element past the budget is (`BodyDecoder._lost`).
    fn lost(&mut self, suffix: &str) {
        if KEEP && self.first_dropped.is_none() {
            self.first_dropped = Some((self.path_to(suffix), self.cur.pos));
        }
    }

    /// Elements `i..n` of an array of structs past the budget, read and not kept; the array's
    /// entry is the last of `path` (`BodyDecoder.rest_structs`).
    fn rest_structs(&mut self, plan: &'static Plan, i: usize, n: usize) -> R<()> {
        self.at_index(i);
        self.lost("");
        let was = self.dropping;
        self.dropping = true;
        for j in i..n {
            self.at_index(j);
            self.dropped += 1;
            let mut scratch = Vec::new();
            self.structure(plan, &mut scratch)?;
        }
        self.dropping = was;
        Ok(())
    }

    /// Elements `i..n` of array `name` of values past the budget, read and not kept
    /// (`BodyDecoder.rest_values`).
    fn rest_values(&mut self, elem: &'static Op, name: Option<&str>, i: usize, n: usize) -> R<()> {
        if KEEP {
            self.lost(&format!(".{}[{i}]", name.unwrap_or("None")));
        }
        let was = self.dropping;
        self.dropping = true;
        for _ in i..n {
            self.dropped += 1;
            self.value(elem, None)?;
        }
        self.dropping = was;
        Ok(())
    }

    /// A length or count: compact (uvarint N+1), int32 (`wide`) or int16; -1 is null.
    fn length(&mut self, compact: bool, wide: bool, what: &'static str) -> R<i64> {
        let c = &mut self.cur;
        let n = if compact {
            if c.pos < c.end && c.buf[c.pos] < 0x80 {
                c.pos += 1;
                return Ok(i64::from(c.buf[c.pos - 1]) - 1);
            }
            c.uvarint(what, 5, KEEP)? as i64 - 1
        } else {
            let size = if wide { 4 } else { 2 };
            if c.left() < size {
                return Err(short(what, c.pos, size, c.left()));
            }
            let b = &c.buf[c.pos..];
            c.pos += size as usize;
            if wide {
                i64::from(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
            } else {
                i64::from(i16::from_be_bytes([b[0], b[1]]))
            }
        };
        if n < -1 {
            return Err(Self::bad(self.cur.pos, || format!("{what}: length {n}")));
        }
        Ok(n)
    }

    fn structure(&mut self, plan: &'static Plan, out: &mut Vec<Field<'a>>) -> R<()> {
        if self.depth > MAX_DEPTH {
            return Err(Self::bad(self.cur.pos, || "structs nested too deep".into()));
        }
        self.depth += 1;
        if KEEP {
            out.reserve(plan.fields as usize);
        }
        for op in plan.ops {
            if let Kind::Run(run) = op.kind {
                let size = op.min_size as i64;
                if size > self.cur.left() {
                    return Err(short(run[0].name, self.cur.pos, size, self.cur.left()));
                }
                if !KEEP {
                    self.cur.pos += size as usize; // nothing in a run but its width to check
                    continue;
                }
                for f in run {
                    let start = self.cur.pos;
                    let v = self.cur.fixed(f.ty);
                    if f.error {
                        if let Value::Int(code) = v {
                            if code != 0 {
                                self.record_error(f.name, code);
                            }
                        }
                    }
                    out.push(Field {
                        name: Name::Field(f.name),
                        node: Node {
                            value: v,
                            start,
                            end: self.cur.pos,
                        },
                    });
                }
            } else if let Got::Node(node) = self.value(op, Some(out))? {
                out.push(Field {
                    name: Name::Field(opt(op.name)),
                    node,
                });
            }
        }
        if plan.flexible {
            let c = &mut self.cur;
            if c.pos < c.end && c.buf[c.pos] == 0 {
                c.pos += 1;
            } else {
                self.tagged(plan.tags, out)?;
            }
        }
        self.depth -= 1;
        Ok(())
    }

    fn tagged(&mut self, tags: &'static [(u32, Op)], out: &mut Vec<Field<'a>>) -> R<()> {
        let count = self.cur.uvarint("tagged field count", 5, KEEP)?;
        if count as i64 > self.cur.left() {
            let left = self.cur.left();
            return Err(Self::bad(self.cur.pos, || {
                format!("{count} tagged fields in {left} bytes")
            }));
        }
        let mut unknown: Option<usize> = None;
        for _ in 0..count {
            let tag = self.cur.uvarint("tag", 5, KEEP)?;
            let size = self.cur.uvarint("tagged field size", 5, KEEP)? as i64;
            if size > self.cur.left() {
                return Err(short(
                    Self::named(|| format!("tagged field {tag}")),
                    self.cur.pos,
                    size,
                    self.cur.left(),
                ));
            }
            let start = self.cur.pos;
            let fend = start + size as usize;
            let Some((_, op)) = tags.iter().rev().find(|(t, _)| u64::from(*t) == tag) else {
                if !KEEP {
                    self.cur.pos = fend; // an unknown tag's bytes are kept raw, not read
                    continue;
                }
                let raw = Node {
                    value: Value::Bytes(Cow::Borrowed(&self.cur.buf[start..fend])),
                    start,
                    end: fend,
                };
                self.cur.pos = fend;
                let i = *unknown.get_or_insert_with(|| {
                    out.push(Field {
                        name: Name::Field("_unknown_tags"),
                        node: Node {
                            value: Value::Struct(Vec::new()),
                            start,
                            end: fend,
                        },
                    });
                    out.len() - 1
                });
                let holder = &mut out[i].node;
                holder.end = fend;
                if let Value::Struct(items) = &mut holder.value {
                    items.push(Field {
                        name: Name::Tag(tag),
                        node: raw,
                    });
                }
                continue;
            };
            let end = self.cur.end;
            self.cur.end = fend;
            let got = self.value(op, Some(out));
            let got = match got {
                Ok(g) => g,
                Err(e) => {
                    self.cur.end = end;
                    return Err(e);
                }
            };
            if let Got::Node(node) = got {
                out.push(Field {
                    name: Name::Field(opt(op.name)),
                    node,
                });
            }
            if self.cur.pos != self.cur.end {
                let left = self.cur.end - self.cur.pos;
                let e = Self::bad(self.cur.pos, || {
                    format!("tagged field {} leaves {left} bytes", opt(op.name))
                });
                self.cur.end = end;
                return Err(e);
            }
            self.cur.end = end;
            self.cur.pos = fend;
        }
        Ok(())
    }

    fn value(&mut self, op: &'static Op, out: Option<&mut Vec<Field<'a>>>) -> R<Got<'a>> {
        let start = self.cur.pos;
        let node = |value, end| {
            Ok(if KEEP {
                Got::Node(Node { value, start, end })
            } else {
                Got::Placed
            })
        };
        match op.kind {
            Kind::Fixed(ty) => {
                let size = ty.size() as i64;
                if size > self.cur.left() {
                    return Err(short(
                        op.name.unwrap_or("value"),
                        start,
                        size,
                        self.cur.left(),
                    ));
                }
                let v = self.cur.fixed(ty);
                if op.error {
                    if let (Value::Int(code), Some(name)) = (&v, op.name) {
                        if *code != 0 {
                            self.record_error(name, *code);
                        }
                    }
                }
                node(v, self.cur.pos)
            }
            Kind::Run(_) => Err(Self::bad(start, || "unknown op 8".into())),
            Kind::String => {
                let what = op.name.unwrap_or("string");
                let n = self.length(op.compact, false, what)?;
                if n < 0 {
                    if !op.nullable {
                        return Err(Self::bad(self.cur.pos, || {
                            format!("{}: null in a non-nullable string", opt(op.name))
                        }));
                    }
                    return node(Value::Null, self.cur.pos);
                }
                let b = self.cur.take(n, what)?;
                if !KEEP {
                    return Ok(Got::Placed); // not made text: a check reads no value
                }
                // Valid UTF-8 (nearly every string) is checked by the word-at-a-time validator;
                // only an invalid one takes the lossy path and its replacement characters.
                let text = match std::str::from_utf8(b) {
                    Ok(s) => Cow::Borrowed(s),
                    Err(_) => String::from_utf8_lossy(b),
                };
                node(Value::Str(text), self.cur.pos)
            }
            Kind::Array(elem) => {
                let n = self.length(op.compact, true, op.name.unwrap_or("array"))?;
                if n < 0 {
                    return node(Value::Null, self.cur.pos);
                }
                let left = self.cur.left();
                if n.saturating_mul(i64::from(elem.min_size)) > left {
                    return Err(Self::bad(self.cur.pos, || {
                        format!("{}: {n} elements cannot fit in {left} bytes", opt(op.name))
                    }));
                }
                // n <= bytes left (every element takes at least one byte): the capacity is bounded.
                // And no more than the elements the body may still keep (none in a check).
                let n = n as usize;
                let cap = if KEEP {
                    n.min(usize::try_from(self.left).unwrap_or(usize::MAX))
                } else {
                    0
                };
                if let Kind::Struct(plan) = elem.kind {
                    if let (true, Some(out), Some(name)) = (KEEP, out, op.name) {
                        out.push(Field {
                            name: Name::Field(name),
                            node: Node {
                                value: Value::Array(Vec::with_capacity(cap)),
                                start,
                                end: start,
                            },
                        });
                        let at = out.len() - 1;
                        self.enter(op.name, Some(0));
                        for i in 0..n {
                            if self.left == 0 {
                                let r = self.rest_structs(plan, i, n);
                                out[at].node.end = self.cur.pos;
                                r?;
                                break;
                            }
                            self.left -= 1;
                            self.at_index(i);
                            let Value::Array(items) = &mut out[at].node.value else {
                                unreachable!()
                            };
                            let es = self.cur.pos;
                            items.push(Node {
                                value: Value::Struct(Vec::new()),
                                start: es,
                                end: es,
                            });
                            let item = items.last_mut().expect("pushed");
                            let Value::Struct(fields) = &mut item.value else {
                                unreachable!()
                            };
                            let r = self.structure(plan, fields);
                            item.end = self.cur.pos;
                            out[at].node.end = self.cur.pos;
                            r?;
                        }
                        self.leave();
                        return Ok(Got::Placed);
                    }
                    let mut items = Vec::with_capacity(cap);
                    self.enter(op.name, Some(0));
                    for i in 0..n {
                        if self.left == 0 {
                            self.rest_structs(plan, i, n)?;
                            break;
                        }
                        self.left -= 1;
                        self.at_index(i);
                        let es = self.cur.pos;
                        let mut fields = Vec::new();
                        self.structure(plan, &mut fields)?;
                        if KEEP {
                            items.push(Node {
                                value: Value::Struct(fields),
                                start: es,
                                end: self.cur.pos,
                            });
                        }
                    }
                    self.leave();
                    return node(Value::Array(items), self.cur.pos);
                }
                let mut items = Vec::with_capacity(cap);
                for i in 0..n {
                    if self.left == 0 {
                        self.rest_values(elem, op.name, i, n)?;
                        break;
                    }
                    self.left -= 1;
                    match self.value(elem, None)? {
                        Got::Node(nd) => items.push(nd),
                        Got::Placed => {}
                    }
                }
                node(Value::Array(items), self.cur.pos)
            }
            Kind::Struct(plan) => {
                if op.nullable {
                    if self.cur.left() < 1 {
                        return Err(short(
                            op.name.unwrap_or("struct"),
                            start,
                            1,
                            self.cur.left(),
                        ));
                    }
                    let marker = self.cur.buf[self.cur.pos] as i8;
                    self.cur.pos += 1;
                    if marker < 0 {
                        return node(Value::Null, self.cur.pos);
                    }
                }
                self.enter(op.name, None);
                let mut fields = Vec::new();
                self.structure(plan, &mut fields)?;
                self.leave();
                node(Value::Struct(fields), self.cur.pos)
            }
            Kind::Bool => {
                if self.cur.left() < 1 {
                    return Err(short(op.name.unwrap_or("bool"), start, 1, self.cur.left()));
                }
                let v = self.cur.fixed(Fixed::Bool);
                node(v, self.cur.pos)
            }
            Kind::Uuid => {
                let b = self.cur.take(16, op.name.unwrap_or("uuid"))?;
                let mut u = [0u8; 16];
                u.copy_from_slice(b);
                node(Value::Uuid(u), self.cur.pos)
            }
            Kind::Bytes => {
                let what = op.name.unwrap_or("bytes");
                let n = self.length(op.compact, true, what)?;
                if n < 0 {
                    return node(Value::Null, self.cur.pos);
                }
                let b = self.cur.take(n, what)?;
                if KEEP && op.name.is_some_and(|name| self.secrets.contains(&name)) {
                    return node(Value::Masked(b.len()), self.cur.pos);
                }
                node(Value::Bytes(Cow::Borrowed(b)), self.cur.pos)
            }
            Kind::Records => {
                let what = op.name.unwrap_or("records");
                let n = self.length(op.compact, true, what)?;
                if n < 0 {
                    return node(Value::Null, self.cur.pos);
                }
                let at = self.cur.pos;
                self.cur.take(n, what)?;
                if !KEEP {
                    // The tree keeps no record set read past the element budget (`rest_*`).
                    if !self.dropping {
                        self.records.push(at..self.cur.pos);
                    }
                    return Ok(Got::Placed);
                }
                self.record_nodes += 1;
                Ok(Got::Node(Node {
                    value: Value::Records { size: n as usize },
                    start: at,
                    end: self.cur.pos,
                }))
            }
        }
    }
}

/// Decodes `data[start..]` with `plan`. Never panics on any input: a body that does not fit
/// comes back with `error` set and the fields read before it (as the Python walker's partial).
/// `secrets` names bytes fields shown only by their length. Keeps at most [`MAX_ELEMENTS`]
/// array elements (see [`decode_body_limited`]).
pub fn decode_body<'a>(
    data: &'a [u8],
    start: usize,
    plan: &'static Plan,
    secrets: &[&str],
) -> Decoded<'a> {
    decode_body_limited(data, start, plan, secrets, MAX_ELEMENTS)
}

/// [`decode_body`] keeping at most `max_elements` array elements in the tree, counted over all
/// its arrays in the order they are read (`Limits::max_elements`): the rest are read and checked
/// but not kept, and `dropped` / `first_dropped` say how many and from where (as the Python
/// `body.Elements`).
pub fn decode_body_limited<'a>(
    data: &'a [u8],
    start: usize,
    plan: &'static Plan,
    secrets: &[&str],
    max_elements: u64,
) -> Decoded<'a> {
    let mut w = Walker::<true>::new(data, start, secrets, max_elements);
    let mut fields = Vec::new();
    let error = w.structure(plan, &mut fields).err();
    Decoded {
        fields,
        errors: w.errors,
        end: w.cur.pos,
        error,
        kept: max_elements - w.left,
        dropped: w.dropped,
        first_dropped: w.first_dropped,
        record_nodes: w.record_nodes,
    }
}

/// What [`check_body`] finds: what a caller asks of a body that does not need its values.
#[derive(Clone, Debug, PartialEq)]
pub struct Checked {
    /// Where the body ended (or the error is), as [`Decoded::end`].
    pub end: usize,
    /// [`Decoded::error`] without the words: a `Bad`'s `msg` is empty, and so is a `Short`'s
    /// `what` that is not a field's name (an unknown tag's, a varint's longer than its bytes);
    /// its kind, offset, `need` and `left`, and a named `what`, are decode_body's.
    pub error: Option<DecodeError>,
    /// The byte ranges of the `Records` nodes [`decode_body_limited`] keeps in its tree, in the
    /// order `records::locate_record_sets` lists them (none read past the element budget).
    pub records: Vec<Range<usize>>,
}

/// Walks `data[start..]` with `plan` exactly as [`decode_body_limited`] does (every check, in the
/// same order), building nothing: no tree, no error codes, no error words. For the questions
/// asked of layouts tried and not kept: does the body read whole, where does it end, where are
/// its record sets. Allocates only the record sets' list.
pub fn check_body(data: &[u8], start: usize, plan: &'static Plan, max_elements: u64) -> Checked {
    let mut w = Walker::<false>::new(data, start, &[], max_elements);
    let error = w.structure(plan, &mut Vec::new()).err();
    Checked {
        end: w.cur.pos,
        error,
        records: w.records,
    }
}

/// The oracle of the differential tests and of the fuzz target: walks `data[start..]` both ways
/// and says how [`check_body`] disagrees with [`decode_body_limited`], else gives the check. They
/// must agree on the end, on error or not, on the error's kind, offset, `need` and `left` (and
/// `what` where the check names it; it leaves out only the words decode_body writes), and,
/// when the body reads, on the record sets `records::locate_record_sets` finds in the tree.
pub fn check_against_decode(
    data: &[u8],
    start: usize,
    plan: &'static Plan,
    max_elements: u64,
) -> Result<Checked, String> {
    let full = decode_body_limited(data, start, plan, &[], max_elements);
    let c = check_body(data, start, plan, max_elements);
    let differs = |what: String| Err(format!("{what}: check {c:?}, decode {:?}", full.error));
    // The session looks for record sets only in trees that read a `Records` node.
    if full.record_nodes == 0 && !super::records::locate_record_sets(&full.fields).is_empty() {
        return differs("record sets in a tree that read no Records node".into());
    }
    if c.end != full.end {
        return differs(format!("end {} against {}", c.end, full.end));
    }
    match (&c.error, &full.error) {
        (None, None) => {
            let located: Vec<Range<usize>> = super::records::locate_record_sets(&full.fields)
                .iter()
                .map(|l| l.start..l.end)
                .collect();
            if c.records != located {
                return differs(format!("record sets, decode's {located:?}"));
            }
        }
        (
            Some(DecodeError::Short {
                what,
                offset,
                need,
                left,
            }),
            Some(DecodeError::Short {
                what: fw,
                offset: fo,
                need: fn_,
                left: fl,
            }),
        ) => {
            if (offset, need, left) != (fo, fn_, fl) {
                return differs("short's offset, need or left".into());
            }
            let written = fw.ends_with(" (longer than 5 bytes)")
                || fw
                    .strip_prefix("tagged field ")
                    .is_some_and(|t| t.parse::<u64>().is_ok());
            if (what.is_empty() && !written) || (!what.is_empty() && what != fw) {
                return differs("short's what".into());
            }
        }
        (Some(DecodeError::Bad { msg, offset }), Some(DecodeError::Bad { offset: fo, .. })) => {
            if !msg.is_empty() || offset != fo {
                return differs("bad's words or offset".into());
            }
        }
        _ => return differs("error or not, or its kind".into()),
    }
    Ok(c)
}

/// A tagged-field section with no known tags at `data[pos..]` (headers): the unknown tags
/// (under `_unknown_tags`) and where the section ends.
pub fn decode_tags(data: &[u8], pos: usize) -> Result<(Vec<Field<'_>>, usize), DecodeError> {
    let mut w = Walker::<true>::new(data, pos, &[], MAX_ELEMENTS);
    let mut out = Vec::new();
    w.tagged(&[], &mut out)?;
    Ok((out, w.cur.pos))
}

/// [`decode_tags`] that keeps what it read when it fails: the unknown tags read before the
/// error (the reference's header dict holds them), and where the section ended or the error.
pub fn decode_tags_partial(
    data: &[u8],
    pos: usize,
) -> (Vec<Field<'_>>, Result<usize, DecodeError>) {
    let mut w = Walker::<true>::new(data, pos, &[], MAX_ELEMENTS);
    let mut out = Vec::new();
    let r = w.tagged(&[], &mut out).map(|()| w.cur.pos);
    (out, r)
}

/// Formats a UUID as Python's `str(uuid.UUID(bytes=...))` does.
pub fn uuid_string(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

/// A struct's field by name: the last one of that name (a later assignment wins, as in a dict),
/// the value every reader of a walked tree sees.
pub fn field<'x, 'a>(fields: &'x [Field<'a>], key: &str) -> Option<&'x Node<'a>> {
    fields.iter().rev().find(|f| key == f.name).map(|f| &f.node)
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        matches!(other, Name::Field(s) if s == self)
    }
}

#[cfg(test)]
mod tests {
    use super::super::schema::{data_plan, plan};
    use super::*;

    fn field<'x, 'a>(fields: &'x [Field<'a>], name: &str) -> &'x Node<'a> {
        &fields
            .iter()
            .rev()
            .find(|f| name == f.name)
            .unwrap_or_else(|| panic!("no {name}"))
            .node
    }

    #[test]
    fn metadata_v1_request_by_hand() {
        // Metadata v1 request: topics array of 1 { name: "ab" } (classic: int32 count, int16 length).
        let body = [0, 0, 0, 1, 0, 2, b'a', b'b'];
        let d = decode_body(&body, 0, plan(3, 1, false).unwrap(), &[]);
        assert_eq!(d.error, None);
        assert_eq!(d.end, 8);
        let topics = field(&d.fields, "topics");
        assert_eq!((topics.start, topics.end), (0, 8));
        let Value::Array(items) = &topics.value else {
            panic!()
        };
        let Value::Struct(t) = &items[0].value else {
            panic!()
        };
        let name = field(t, "name");
        assert_eq!(name.value, Value::Str("ab".into()));
        assert_eq!((name.start, name.end), (4, 8));
    }

    #[test]
    fn null_topics_and_short_body() {
        let d = decode_body(
            &[0xff, 0xff, 0xff, 0xff],
            0,
            plan(3, 1, false).unwrap(),
            &[],
        );
        assert_eq!(field(&d.fields, "topics").value, Value::Null);
        // Cut inside the topic name: two bytes declared, one left.
        let d = decode_body(
            &[0, 0, 0, 1, 0, 2, b'a'],
            0,
            plan(3, 1, false).unwrap(),
            &[],
        );
        let e = d.error.expect("short");
        assert_eq!(e.to_string(), "name at byte 6 needs 2 bytes, 1 left");
        assert_eq!(e.offset(), 6);
        // The partial decode holds the array with its first (partial) element.
        let Value::Array(items) = &field(&d.fields, "topics").value else {
            panic!()
        };
        assert_eq!(items.len(), 1);
    }

    #[test]
    fn elements_past_the_budget_are_read_not_kept() {
        // Metadata v1 request, topics ["a", "b", "c", "d"] (6 bytes each after the int32 count):
        // a budget of 2 keeps "a" and "b"; "c" (at 4 + 2 * 3 = 10) and "d" are read, not kept,
        // and the body still ends at its last byte.
        let mut body = vec![0, 0, 0, 4];
        for n in [b'a', b'b', b'c', b'd'] {
            body.extend([0, 1, n]);
        }
        let d = decode_body_limited(&body, 0, plan(3, 1, false).unwrap(), &[], 2);
        assert_eq!(d.error, None);
        assert_eq!(d.end, 16);
        assert_eq!((d.kept, d.dropped), (2, 2));
        assert_eq!(d.first_dropped, Some(("topics[2]".to_owned(), 10)));
        let topics = field(&d.fields, "topics");
        assert_eq!((topics.start, topics.end), (0, 16));
        let Value::Array(items) = &topics.value else {
            panic!()
        };
        assert_eq!(items.len(), 2);
        // Within the budget nothing is dropped.
        let d = decode_body_limited(&body, 0, plan(3, 1, false).unwrap(), &[], 4);
        assert_eq!((d.kept, d.dropped, d.first_dropped), (4, 0, None));
    }

    #[test]
    fn untrusted_counts_are_refused_before_allocation() {
        // 2^31-1 topics in 4 bytes.
        let d = decode_body(
            &[0x7f, 0xff, 0xff, 0xff],
            0,
            plan(3, 1, false).unwrap(),
            &[],
        );
        assert_eq!(
            d.error.unwrap().to_string(),
            "topics: 2147483647 elements cannot fit in 0 bytes"
        );
    }

    #[test]
    fn flexible_response_with_error_code_and_tags() {
        // FindCoordinator v3 response (flexible): throttle_time_ms, error_code=15, error_message
        // null (compact 0), node_id, host "h", port, tagged: unknown tag 7 with 2 bytes.
        let mut b = vec![0, 0, 0, 5, 0, 15, 0, 0, 0, 0, 1, 2, b'h', 0, 0, 0x23, 0x84];
        b.extend([1, 7, 2, 0xaa, 0xbb]);
        let d = decode_body(&b, 0, plan(10, 3, true).unwrap(), &[]);
        assert_eq!(d.error, None, "{:?}", d.fields);
        assert_eq!(d.end, b.len());
        assert_eq!(field(&d.fields, "throttle_time_ms").value, Value::Int(5));
        assert_eq!(field(&d.fields, "error_code").value, Value::Int(15));
        assert_eq!(field(&d.fields, "error_message").value, Value::Null);
        assert_eq!(field(&d.fields, "port").value, Value::Int(9092));
        assert_eq!(d.errors, vec![("error_code".to_string(), 15)]);
        let Value::Struct(tags) = &field(&d.fields, "_unknown_tags").value else {
            panic!()
        };
        assert_eq!(tags[0].name, Name::Tag(7));
        assert_eq!(
            tags[0].node.value,
            Value::Bytes(Cow::Borrowed(&[0xaa, 0xbb]))
        );
        assert_eq!((tags[0].node.start, tags[0].node.end), (20, 22));
    }

    #[test]
    fn compact_length_varint_too_long() {
        // A flexible string whose length varint never ends (5 continuation bytes).
        // Metadata v12 request: topics is a compact array.
        let d = decode_body(
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            0,
            plan(3, 12, false).unwrap(),
            &[],
        );
        let e = d.error.unwrap();
        assert_eq!(
            e.to_string(),
            "topics (longer than 5 bytes) at byte 0 needs 6 bytes, 6 left"
        );
        // A classic data structure: ConsumerProtocolSubscription v0 starts with a null topic list.
        let p = data_plan("ConsumerProtocolSubscription", 0).unwrap();
        let d = decode_body(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 0, p, &[]);
        assert_eq!(field(&d.fields, "topics").value, Value::Null);
    }

    #[test]
    fn uuid_format() {
        let u = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 1, 2, 3, 4, 5, 6, 7, 8,
        ];
        assert_eq!(uuid_string(&u), "12345678-9abc-def0-0102-030405060708");
    }
}
