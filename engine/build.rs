//! Generates the Kafka decode tables from `wiredump/proto/kafka_schema.json`, and the output
//! tables' column builders from `wiredump/tables.json`.
//!
//! Why at build time: the schema is Kafka's own JSON message specs (turned into one table by
//! `scripts/gen_kafka_schema.py`); compiling it here into static plans, one per (api key,
//! version, direction), means no decoder is written per API and nothing is compiled or cached
//! at run time. The compilation mirrors `wiredump/dissect/protocols/kafka/schema.py`
//! (`_compile_struct`, `_compile_field`, `_fuse`) so both decoders walk the same plans.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

// Pulsar's protobuf tables, in their own file (see its doc).
#[path = "codegen/pulsar.rs"]
mod pulsar;
// Where Kafka bodies hold topics and partitions, in its own file (see its doc).
#[path = "codegen/kafka_partitions.rs"]
mod kafka_partitions;

const SCHEMA: &str = "../wiredump/proto/kafka_schema.json";
const TABLES: &str = "../wiredump/tables.json";

fn main() {
    tables::generate();
    println!("cargo:rerun-if-changed={SCHEMA}");
    println!("cargo:rerun-if-changed=build.rs");
    let text = std::fs::read_to_string(SCHEMA).expect("read kafka_schema.json");
    let schema: Value = serde_json::from_str(&text).expect("parse kafka_schema.json");
    let mut g = Gen::default();
    let out = g.generate(&schema);
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("kafka_tables.rs");
    std::fs::write(dest, out).expect("write kafka_tables.rs");
    kafka_partitions::generate(&schema);
    pulsar::generate_pulsar();
}

#[derive(Default)]
struct Gen {
    /// Plan text -> its static's name (identical plans are emitted once).
    plans: HashMap<String, String>,
    statics: String,
}

fn range(v: Option<&Value>) -> Option<(i64, i64)> {
    let a = v?.as_array()?;
    Some((a[0].as_i64()?, a[1].as_i64()?))
}

fn within(r: Option<(i64, i64)>, v: i64) -> bool {
    matches!(r, Some((lo, hi)) if lo <= v && v <= hi)
}

fn fixed(t: &str) -> Option<(&'static str, u32)> {
    Some(match t {
        "int8" => ("I8", 1),
        "int16" => ("I16", 2),
        "uint16" => ("U16", 2),
        "int32" => ("I32", 4),
        "uint32" => ("U32", 4),
        "int64" => ("I64", 8),
        "float64" => ("F64", 8),
        _ => return None,
    })
}

/// One compiled field: its Rust expression and what `schema.py` calls its code and min size.
struct Op {
    expr: String,
    kind: &'static str,
    fixed: Option<&'static str>,
    name: Option<String>,
    min_size: u32,
}

fn name_expr(name: &Option<String>) -> String {
    match name {
        Some(n) => format!("Some({n:?})"),
        None => "None".into(),
    }
}

fn op_expr(kind: &str, name: &Option<String>, compact: bool, nullable: bool, min: u32) -> String {
    let error = name.as_deref().is_some_and(|n| n.ends_with("error_code"));
    format!(
        "Op {{ kind: {kind}, name: {}, compact: {compact}, nullable: {nullable}, min_size: {min}, error: {error} }}",
        name_expr(name)
    )
}

impl Gen {
    fn field(&mut self, f: &Value, version: i64, mut flexible: bool, name: Option<String>) -> Op {
        let ftype = f["type"].as_str().expect("type");
        if let Some(fl) = f.get("flexible") {
            flexible = within(range(Some(fl)), version);
        }
        let nullable = within(range(f.get("nullable")), version);
        let simple = |kind: &'static str, fx: Option<&'static str>, compact: bool, min: u32| Op {
            expr: op_expr(kind, &name, compact, nullable, min),
            kind,
            fixed: fx,
            name: name.clone(),
            min_size: min,
        };
        if let Some(base) = ftype.strip_prefix("[]") {
            let elem = if let Some(fields) = f.get("fields") {
                let (plan, min) = self.plan(fields, version, flexible);
                Op {
                    expr: op_expr(&format!("Kind::Struct(&{plan})"), &None, false, false, min),
                    kind: "Struct",
                    fixed: None,
                    name: None,
                    min_size: min,
                }
            } else {
                let v = serde_json::json!({ "type": base });
                self.field(&v, version, flexible, None)
            };
            // The decoder bounds an array's count by the bytes left divided by this size, so
            // it must never be 0 (a count could then allocate without limit).
            assert!(elem.min_size > 0, "array {name:?} has elements of size 0");
            let min = if flexible { 1 } else { 4 };
            return Op {
                expr: op_expr(
                    &format!("Kind::Array(&{})", elem.expr),
                    &name,
                    flexible,
                    nullable,
                    min,
                ),
                kind: "Array",
                fixed: None,
                name,
                min_size: min,
            };
        }
        if let Some(fields) = f.get("fields") {
            let (plan, min) = self.plan(fields, version, flexible);
            let min = if nullable { 1 } else { min };
            return Op {
                expr: op_expr(
                    &format!("Kind::Struct(&{plan})"),
                    &name,
                    false,
                    nullable,
                    min,
                ),
                kind: "Struct",
                fixed: None,
                name,
                min_size: min,
            };
        }
        if let Some((fx, size)) = fixed(ftype) {
            let e = format!("Kind::Fixed(Fixed::{fx})");
            let mut op = simple("Fixed", Some(fx), false, size);
            op.expr = op_expr(&e, &name, false, nullable, size);
            return op;
        }
        let (kind, min) = match ftype {
            "bool" => ("Bool", 1),
            "uuid" => ("Uuid", 16),
            "string" => ("String", if flexible { 1 } else { 2 }),
            "bytes" => ("Bytes", if flexible { 1 } else { 4 }),
            "records" => ("Records", if flexible { 1 } else { 4 }),
            other => panic!("unknown Kafka field type {other}"),
        };
        let compact = flexible && kind != "Bool" && kind != "Uuid";
        let mut op = simple(kind, None, compact, min);
        op.expr = op_expr(&format!("Kind::{kind}"), &name, compact, nullable, min);
        op
    }

    /// Compiles a struct for one version; returns the plan's static name and its min size.
    fn plan(&mut self, fields: &Value, version: i64, flexible: bool) -> (String, u32) {
        let mut ops: Vec<Op> = Vec::new();
        let mut tags: Vec<(u64, Op)> = Vec::new();
        for f in fields.as_array().expect("fields") {
            if !within(range(f.get("versions")), version) {
                continue;
            }
            let name = f["name"].as_str().map(str::to_owned);
            if f.get("tag").is_some() && within(range(f.get("tagged")), version) {
                if flexible {
                    let tag = f["tag"].as_u64().expect("tag");
                    let op = self.field(f, version, true, name);
                    tags.retain(|(t, _)| *t != tag);
                    tags.push((tag, op));
                }
                continue;
            }
            ops.push(self.field(f, version, flexible, name));
        }
        let min: u32 = ops.iter().map(|o| o.min_size).sum::<u32>() + u32::from(flexible);
        let count = ops.len();
        let fused = fuse(ops);
        let mut body = String::from("Plan { ops: &[");
        for e in &fused {
            let _ = write!(body, "{e}, ");
        }
        body.push_str("], tags: &[");
        for (t, op) in &tags {
            let _ = write!(body, "({t}, {}), ", op.expr);
        }
        let _ = write!(
            body,
            "], fields: {count}, flexible: {flexible}, min_size: {min} }}"
        );
        let n = self.plans.len();
        let name = self
            .plans
            .entry(body.clone())
            .or_insert_with(|| {
                let name = format!("P{n}");
                let _ = writeln!(self.statics, "static {name}: Plan = {body};");
                name
            })
            .clone();
        (name, min)
    }

    fn generate(&mut self, schema: &Value) -> String {
        let mut apis: Vec<(i64, &Value)> = schema["apis"]
            .as_object()
            .expect("apis")
            .iter()
            .map(|(k, v)| (k.parse().expect("api key"), v))
            .collect();
        apis.sort_by_key(|(k, _)| *k);
        let mut table = String::from("pub static API_PLANS: &[ApiPlans] = &[\n");
        let mut info = String::from("pub static APIS: &[ApiInfo] = &[\n");
        // For each api key from 0 to the largest, where its plans are in API_PLANS (start, end):
        // a lookup by key is one index, not a search.
        let mut ranges: Vec<(usize, usize)> = Vec::new();
        let mut rows = 0usize;
        for (key, api) in &apis {
            let key_at = usize::try_from(*key).expect("api keys are not negative");
            ranges.resize(ranges.len().max(key_at + 1), (rows, rows));
            let flex = api["flexible"].as_i64();
            let name = api["name"].as_str().expect("name");
            let _ = writeln!(
                info,
                "    ApiInfo {{ key: {key}, name: {name:?}, flexible: {} }},",
                flex.map_or("None".into(), |f| format!("Some({f})"))
            );
            let mut versions: Vec<i64> = api["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .filter_map(Value::as_i64)
                .collect();
            versions.sort_unstable();
            for v in versions {
                let flexible = flex.is_some_and(|f| v >= f);
                let mut sides = Vec::new();
                for kind in ["request", "response"] {
                    let entry = api[kind].as_array().expect("entries").iter().find(|e| {
                        e["versions"]
                            .as_array()
                            .expect("versions")
                            .iter()
                            .any(|x| x.as_i64() == Some(v))
                    });
                    sides.push(match entry {
                        Some(e) => format!("Some(&{})", self.plan(&e["fields"], v, flexible).0),
                        None => "None".into(),
                    });
                }
                let _ = writeln!(
                    table,
                    "    ApiPlans {{ key: {key}, version: {v}, request: {}, response: {} }},",
                    sides[0], sides[1]
                );
                rows += 1;
            }
            ranges[key_at] = (ranges[key_at].0, rows);
        }
        table.push_str("];\n");
        info.push_str("];\n");
        table.push_str("/// Where each api key's plans are in `API_PLANS`, indexed by the key.\n");
        table.push_str("pub static API_RANGES: &[(u16, u16)] = &[\n");
        for (start, end) in &ranges {
            let _ = writeln!(table, "    ({start}, {end}),");
        }
        table.push_str("];\n");
        let mut data = String::from("pub static DATA_PLANS: &[DataPlan] = &[\n");
        let mut names: Vec<(&String, &Value)> =
            schema["data"].as_object().expect("data").iter().collect();
        names.sort_by(|a, b| a.0.cmp(b.0));
        for (name, d) in names {
            let flex = d["flexible"].as_i64();
            for v in d["versions"]
                .as_array()
                .expect("versions")
                .iter()
                .filter_map(Value::as_i64)
            {
                let flexible = flex.is_some_and(|f| v >= f);
                let (plan, _) = self.plan(&d["fields"], v, flexible);
                let _ = writeln!(
                    data,
                    "    DataPlan {{ name: {name:?}, version: {v}, plan: &{plan} }},"
                );
            }
        }
        data.push_str("];\n");
        let mut errors: Vec<(i64, &str)> = schema["errors"]
            .as_object()
            .expect("errors")
            .iter()
            .map(|(k, v)| {
                (
                    k.parse().expect("error code"),
                    v.as_str().expect("error name"),
                )
            })
            .collect();
        errors.sort_unstable();
        let mut err = String::from("pub static ERROR_NAMES: &[(i16, &str)] = &[\n");
        for (k, v) in errors {
            let _ = writeln!(err, "    ({k}, {v:?}),");
        }
        err.push_str("];\n");
        format!(
            "// Generated by engine/build.rs from wiredump/proto/kafka_schema.json: do not edit.\n{}{table}{info}{data}{err}",
            self.statics
        )
    }
}

/// Runs of fixed-width fields and bools become one `Kind::Run` (as `schema._fuse` does): the
/// walker reads them with one bounds check and reports a short run under its first name.
fn fuse(ops: Vec<Op>) -> Vec<String> {
    let mut out = Vec::new();
    let mut run: Vec<Op> = Vec::new();
    fn flush(run: &mut Vec<Op>, out: &mut Vec<String>) {
        if run.len() == 1 && run[0].kind == "Fixed" {
            out.push(run.pop().expect("one").expr);
        } else if !run.is_empty() {
            let size: u32 = run.iter().map(|o| o.min_size).sum();
            let mut e = String::from("&[");
            for o in run.iter() {
                let n = o.name.clone().unwrap_or_default();
                let fx = o.fixed.unwrap_or("Bool");
                let _ = write!(
                    e,
                    "RunField {{ name: {n:?}, ty: Fixed::{fx}, error: {} }}, ",
                    n.ends_with("error_code")
                );
            }
            e.push(']');
            out.push(op_expr(
                &format!("Kind::Run({e})"),
                &None,
                false,
                false,
                size,
            ));
            run.clear();
        }
    }
    for op in ops {
        if op.kind == "Fixed" || op.kind == "Bool" {
            run.push(op);
        } else {
            flush(&mut run, &mut out);
            out.push(op.expr);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// The output tables' columns, from their one declaration (`wiredump/tables.json`, which
/// Python's `columns.py` and docs/tables.md read too).
///
/// Why generated: for each table a struct with one typed Arrow builder per declared column, in
/// declaration order, and the declaration itself as static data (for the schema). A column added
/// to the file gets a builder here, and `arrow_out`'s row code cannot leave it unfilled without
/// its tests failing (every column must have as many values as the table has rows); a column
/// renamed there no longer compiles.
mod tables {
    use std::fmt::Write as _;
    use std::path::PathBuf;

    use serde_json::Value;

    /// Declared type -> (ColumnType variant, builder type, builder constructor). The
    /// constructor is a template: `ROWS` is the rows to make room for, `BYTES` the bytes of
    /// text or binary values (`generate` fills them in for a first batch and for the next ones).
    fn rust_type(t: &str) -> (&'static str, &'static str, &'static str) {
        match t {
            "string" => (
                "Utf8",
                "StringBuilder",
                "StringBuilder::with_capacity(ROWS, BYTES)",
            ),
            "int64" => ("Int64", "Int64Builder", "Int64Builder::with_capacity(ROWS)"),
            "int32" => ("Int32", "Int32Builder", "Int32Builder::with_capacity(ROWS)"),
            "bool" => (
                "Bool",
                "BooleanBuilder",
                "BooleanBuilder::with_capacity(ROWS)",
            ),
            "binary" => (
                "Binary",
                "BinaryBuilder",
                "BinaryBuilder::with_capacity(ROWS, BYTES)",
            ),
            "timestamp[us, UTC]" => (
                "TimestampUs",
                "TimestampMicrosecondBuilder",
                "TimestampMicrosecondBuilder::with_capacity(ROWS).with_timezone(UTC)",
            ),
            "timestamp[ms, UTC]" => (
                "TimestampMs",
                "TimestampMillisecondBuilder",
                "TimestampMillisecondBuilder::with_capacity(ROWS).with_timezone(UTC)",
            ),
            "map<string, binary>" => ("StringBinaryMap", "HeadersBuilder", "headers_builder()"),
            other => panic!("{}: unknown column type {other:?}", super::TABLES),
        }
    }

    /// A column name as a Rust field name (`type` is a keyword).
    fn ident(name: &str) -> String {
        assert!(
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
            "{}: column name {name:?} is not snake_case",
            super::TABLES
        );
        match name {
            "type" | "ref" | "match" | "mod" | "fn" | "use" | "in" | "loop" | "move" | "self" => {
                format!("r#{name}")
            }
            _ => name.to_string(),
        }
    }

    fn camel(name: &str) -> String {
        name.split('_')
            .map(|w| {
                let mut c = w.chars();
                c.next()
                    .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                    .unwrap_or_default()
            })
            .collect()
    }

    pub fn generate() {
        println!("cargo:rerun-if-changed={}", super::TABLES);
        let text = std::fs::read_to_string(super::TABLES).expect("read tables.json");
        let doc: Value = serde_json::from_str(&text).expect("parse tables.json");
        // A list, not an object: serde_json (without `preserve_order`) would sort an object's keys.
        let tables = doc["tables"]
            .as_array()
            .expect("tables.json: `tables` is a list");
        let mut out =
            String::from("// Generated by build.rs from wiredump/tables.json: do not edit.\n\n");
        let mut all = Vec::new();
        for t in tables {
            let table = t["name"].as_str().expect("table name").to_string();
            let cols = t["columns"].as_array().expect("columns");
            let upper = table.to_ascii_uppercase();
            let strukt = format!("{}Columns", camel(&table));
            all.push((table.clone(), upper.clone(), strukt.clone()));
            let _ = writeln!(out, "/// The declared columns of the {table} table.");
            let _ = writeln!(out, "pub static {upper}: TableDecl = TableDecl {{");
            let _ = writeln!(out, "    name: {table:?},");
            let _ = writeln!(
                out,
                "    one_row_per: {:?},",
                t["one_row_per"].as_str().expect("one_row_per")
            );
            let _ = writeln!(out, "    columns: &[");
            let mut fields = String::new();
            let mut inits = String::new();
            let mut finish = String::new();
            for c in cols {
                let name = c["name"].as_str().expect("column name");
                let ty = c["type"].as_str().expect("column type");
                let (variant, builder, ctor) = rust_type(ty);
                let unit = match c.get("unit").and_then(Value::as_str) {
                    Some(u) => format!("Some({u:?})"),
                    None => "None".into(),
                };
                let _ = writeln!(
                    out,
                    "        ColumnDecl {{ name: {name:?}, ty: ColumnType::{variant}, null: {}, unit: {unit}, meaning: {:?} }},",
                    c["null"].as_bool().expect("column null"),
                    c["meaning"].as_str().expect("column meaning"),
                );
                let id = ident(name);
                let _ = writeln!(fields, "    /// `{name}`: {ty}.\n    pub {id}: {builder},");
                let first = ctor.replace("ROWS", "rows").replace("BYTES", "rows * 16");
                let _ = writeln!(inits, "            {id}: {first},");
                // A finished builder starts over with no room (arrow-rs hands its buffers to
                // the array): it is made again with the room the batch it just made took, so
                // the next batch's values are not copied from buffer to buffer as they grow.
                let again = match ty {
                    "string" | "binary" => ctor
                        .replace("ROWS", "a.len()")
                        .replace("BYTES", "again_bytes(a.value_data().len(), room_max)"),
                    _ => ctor.replace("ROWS", "a.len()"),
                };
                let _ = writeln!(
                    finish,
                    "            {{\n                let a = self.{id}.finish();\n                self.{id} = {again};\n                Arc::new(a)\n            }},"
                );
            }
            let _ = writeln!(out, "    ],\n}};\n");
            let _ = writeln!(
                out,
                "/// One Arrow builder per column of the {table} table, in declaration order.\npub struct {strukt} {{\n{fields}}}\n"
            );
            let _ = writeln!(
                out,
                "impl {strukt} {{\n    pub fn with_capacity(rows: usize) -> {strukt} {{\n        {strukt} {{\n{inits}        }}\n    }}\n}}\n"
            );
            let _ = writeln!(
                out,
                "impl Columns for {strukt} {{\n    const DECL: &'static TableDecl = &{upper};\n\n    fn new(rows: usize) -> Self {{\n        {strukt}::with_capacity(rows)\n    }}\n\n    fn finish(&mut self, room_max: usize) -> Vec<ArrayRef> {{\n        let _ = room_max; // a table without text or binary columns would not read it\n        vec![\n{finish}        ]\n    }}\n}}\n"
            );
        }
        let _ = writeln!(out, "/// Every table, in declaration order.");
        let _ = write!(out, "pub static TABLES: [&TableDecl; {}] = [", all.len());
        for (_, upper, _) in &all {
            let _ = write!(out, "&{upper}, ");
        }
        let _ = writeln!(out, "];");
        let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("table_columns.rs");
        std::fs::write(dest, out).expect("write table_columns.rs");
    }
}
