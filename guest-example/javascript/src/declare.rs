//! TypeScript-style declarations of MCP tools, read by a model that writes
//! `await tools.<name>(args)` calls in JavaScript.
//!
//! A declaration is a description comment line and a one-line signature:
//!
//! ```text
//! /** Read the complete contents of a file from the file system as text. ... */
//! tools.read_text_file(args: { path: string; /** If provided, returns only the last N lines of the file */ tail?: number }): Promise<any>
//! ```
//!
//! The JSON Schema to TypeScript mapping is lossy on purpose: it keeps what a
//! call needs (names, optionality, shapes, literals) and drops validation detail
//! (formats, bounds, patterns). Any JSON value is accepted as a schema; what is
//! not understood becomes `unknown`. Work is bounded (recursion depth, a node
//! budget), so hostile schemas cost little and never overflow the stack.

use serde_json::{Map, Value};
use std::collections::HashSet;

/// A tool as the declaration shows it.
#[derive(Clone, Copy, Debug)]
pub struct ToolDecl<'a> {
    /// The tool's name, as called: `tools.<name>` or `tools["<name>"]`.
    pub name: &'a str,
    /// The tool's description; may be empty.
    pub description: &'a str,
    /// The JSON Schema of the tool's arguments.
    pub input_schema: &'a Value,
    /// The JSON Schema of the tool's structured result, when it has one.
    pub output_schema: Option<&'a Value>,
}

/// Characters kept of a tool description.
const DESCRIPTION_LIMIT: usize = 300;
/// Characters kept of a property description.
const PROPERTY_DESCRIPTION_LIMIT: usize = 100;
/// Characters kept of a property's default value, as JSON.
const DEFAULT_LIMIT: usize = 40;
/// Longest declaration before the length guard simplifies it.
const MAX_DECLARATION_CHARS: usize = 2000;
/// Objects nested deeper than this are written `object`.
const MAX_OBJECT_DEPTH: usize = 4;
/// Deepest schema recursion (through any keyword); deeper is `unknown`.
/// Keeps the stack small whatever the input.
const MAX_LEVEL: usize = 64;
/// Schema nodes visited per type; past it, `unknown`. Shared `$ref`s can
/// otherwise expand exponentially.
const NODE_BUDGET: usize = 10_000;

/// What a rendering includes; the length guard retries with less.
#[derive(Clone, Copy, Debug)]
struct Options {
    /// Property comments (descriptions and defaults).
    comments: bool,
    /// Objects at this many enclosing objects or more are written `object`.
    max_depth: usize,
}

/// Full detail, then no property comments, then only the top object's shape.
const STAGES: [Options; 3] = [
    Options {
        comments: true,
        max_depth: MAX_OBJECT_DEPTH,
    },
    Options {
        comments: false,
        max_depth: MAX_OBJECT_DEPTH,
    },
    Options {
        comments: false,
        max_depth: 1,
    },
];

/// The declaration of one tool.
///
/// The description comment (if any) on the first line, then
/// `tools.<name>(args: <type>): Promise<<result>>`, with no trailing newline.
/// Longer than 2,000 characters, it is redone without property comments, then
/// also without the details of nested objects.
#[must_use]
pub fn declaration(tool: &ToolDecl) -> String {
    let mut text = String::new();
    for options in STAGES {
        text = render_declaration(tool, options);
        if text.chars().count() <= MAX_DECLARATION_CHARS {
            break;
        }
    }
    text
}

/// The TypeScript type of a JSON Schema (exposed for tests and reuse).
///
/// `$ref`s resolve against `schema` itself; property comments are included.
#[must_use]
pub fn ts_type(schema: &Value) -> String {
    render(&type_of(schema, STAGES[0]))
}

/// One attempt at a declaration, with the given detail.
fn render_declaration(tool: &ToolDecl, options: Options) -> String {
    let mut out = String::new();
    let description = clip(tool.description, DESCRIPTION_LIMIT);
    if !description.is_empty() {
        out.push_str("/** ");
        out.push_str(&escape_comment(&description));
        out.push_str(" */\n");
    }
    out.push_str("tools");
    if is_identifier(tool.name) {
        out.push('.');
        out.push_str(tool.name);
    } else {
        out.push('[');
        out.push_str(&json_string(tool.name));
        out.push(']');
    }
    out.push('(');
    out.push_str(&parameter(tool.input_schema, options));
    out.push_str("): Promise<");
    // Without a declared output schema the value may be the result's text
    // or structured content the tool sends anyway: `any` says so, where
    // `string` would have a model call `.split` on an object.
    match tool.output_schema {
        Some(schema) => write_ty(&type_of(schema, options), &mut out),
        None => out.push_str("any"),
    }
    out.push('>');
    out
}

/// The `args` parameter: optional when every argument is.
fn parameter(schema: &Value, options: Options) -> String {
    let ty = type_of(schema, options);
    // Nothing to pass (or nothing known): the call may omit it.
    let nothing = match &ty {
        Ty::Unknown => true,
        Ty::Object(props) => props.is_empty(),
        Ty::Record(value) => **value == Ty::Unknown,
        _ => false,
    };
    if nothing {
        return "args?: {}".to_owned();
    }
    let optional = matches!(&ty, Ty::Object(props) if props.iter().all(|prop| prop.optional));
    let mark = if optional { "?" } else { "" };
    format!("args{mark}: {}", render(&ty))
}

/// The type of a root schema, whose `$ref`s resolve against itself.
fn type_of(schema: &Value, options: Options) -> Ty {
    Ctx {
        root: schema,
        options,
        expanding: Vec::new(),
        budget: NODE_BUDGET,
    }
    .ty(schema, 0, 0)
}

/// A TypeScript type, kept structured so that unions and intersections can be
/// flattened, deduplicated and parenthesised correctly.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Ty {
    Unknown,
    Never,
    /// `string`, `number`, `boolean`, `null` or `object`.
    Prim(&'static str),
    /// A JSON literal (valid TypeScript type syntax).
    Lit(String),
    /// A definition's name, where expanding it again would recurse forever.
    Named(String),
    Array(Box<Ty>),
    Tuple(Vec<Ty>),
    Object(Vec<Prop>),
    Record(Box<Ty>),
    Union(Vec<Ty>),
    Intersection(Vec<Ty>),
}

/// A property of an object type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Prop {
    name: String,
    optional: bool,
    /// The comment's text, already clipped and escaped.
    comment: Option<String>,
    ty: Ty,
}

/// State of one schema-to-type conversion.
struct Ctx<'a> {
    /// What `$ref`s resolve against.
    root: &'a Value,
    options: Options,
    /// The `$ref` pointers being expanded, outermost first: a cycle guard.
    expanding: Vec<&'a str>,
    /// Schema nodes still allowed.
    budget: usize,
}

impl<'a> Ctx<'a> {
    /// The type of `schema` inside `depth` objects, `level` recursions deep.
    fn ty(&mut self, schema: &'a Value, depth: usize, level: usize) -> Ty {
        if level > MAX_LEVEL || self.budget == 0 {
            return Ty::Unknown;
        }
        self.budget -= 1;
        let map = match schema {
            Value::Object(map) => map,
            // `false` accepts nothing; `true` and non-schemas say nothing.
            Value::Bool(false) => return Ty::Never,
            _ => return Ty::Unknown,
        };
        let ty = self.keywords(map, depth, level);
        // OpenAPI-style `nullable`, still common in tool schemas.
        if map.get("nullable") == Some(&Value::Bool(true)) {
            union(vec![ty, Ty::Prim("null")])
        } else {
            ty
        }
    }

    /// The type a schema object's keywords describe, `nullable` aside.
    fn keywords(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
        if let Some(reference) = map.get("$ref") {
            return self.reference(reference, depth, level);
        }
        if let Some(value) = map.get("const") {
            return Ty::Lit(value.to_string());
        }
        // Literals are more precise than the `type` beside them. An empty list
        // is malformed and ignored rather than read as `never`.
        if let Some(Value::Array(values)) = map.get("enum").filter(|v| !is_empty_array(v)) {
            return union(
                values
                    .iter()
                    .map(|value| Ty::Lit(value.to_string()))
                    .collect(),
            );
        }
        let (base, is_bare) = self.base(map, depth, level);
        let mut parts = Vec::new();
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = map.get(key).filter(|v| !is_empty_array(v)) {
                let mut alternatives = Vec::with_capacity(members.len());
                for member in members {
                    alternatives.push(self.ty(member, depth, level + 1));
                }
                parts.push(union(alternatives));
            }
        }
        if let Some(Value::Array(members)) = map.get("allOf") {
            for member in members {
                parts.push(self.ty(member, depth, level + 1));
            }
        }
        if parts.is_empty() {
            return base;
        }
        // `{type: "object", anyOf: [...]}`: a bare object adds nothing but noise.
        if !is_bare {
            parts.insert(0, base);
        }
        intersection(parts)
    }

    /// The type from `type` (or, without it, from `properties` / `items`), and
    /// whether it is bare: says nothing that combinators beside it would not.
    fn base(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> (Ty, bool) {
        match map.get("type") {
            Some(Value::String(name)) => self.named_type(name, map, depth, level),
            Some(Value::Array(names)) => {
                let mut alternatives = Vec::new();
                for name in names.iter().filter_map(Value::as_str) {
                    alternatives.push(self.named_type(name, map, depth, level).0);
                }
                if alternatives.is_empty() {
                    (Ty::Unknown, true)
                } else {
                    (union(alternatives), false)
                }
            }
            // No `type`, but the shape keywords still say what the value is.
            None if map.contains_key("properties") => self.object(map, depth, level),
            None if map.contains_key("items") || map.contains_key("prefixItems") => {
                (self.array(map, depth, level), false)
            }
            // A `type` that is neither a name nor a list, or nothing to go by.
            _ => (Ty::Unknown, true),
        }
    }

    /// The type of one `type` name, with the schema's other keywords.
    fn named_type(
        &mut self,
        name: &str,
        map: &'a Map<String, Value>,
        depth: usize,
        level: usize,
    ) -> (Ty, bool) {
        let primitive = match name {
            "string" => "string",
            "number" | "integer" => "number",
            "boolean" => "boolean",
            "null" => "null",
            "array" => return (self.array(map, depth, level), false),
            "object" => return self.object(map, depth, level),
            _ => return (Ty::Unknown, true),
        };
        (Ty::Prim(primitive), false)
    }

    /// `T[]`, or a tuple for `prefixItems` / an `items` list.
    fn array(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> Ty {
        let tuple = match (map.get("prefixItems"), map.get("items")) {
            (Some(Value::Array(items)), _) | (_, Some(Value::Array(items)))
                if !items.is_empty() =>
            {
                Some(items)
            }
            _ => None,
        };
        if let Some(items) = tuple {
            let mut elements = Vec::with_capacity(items.len());
            for item in items {
                elements.push(self.ty(item, depth, level + 1));
            }
            return Ty::Tuple(elements);
        }
        let item = match map.get("items") {
            Some(items) => self.ty(items, depth, level + 1),
            None => Ty::Unknown,
        };
        Ty::Array(Box::new(item))
    }

    /// An object type from `properties` and `required`, or a record.
    fn object(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> (Ty, bool) {
        if depth >= self.options.max_depth {
            return (Ty::Prim("object"), false);
        }
        let props = match map.get("properties") {
            Some(Value::Object(props)) if !props.is_empty() => props,
            _ => return self.record(map, depth, level),
        };
        let required: HashSet<&str> = match map.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => HashSet::new(),
        };
        let mut list = Vec::with_capacity(props.len());
        for (name, schema) in props {
            list.push(Prop {
                name: name.clone(),
                optional: !required.contains(name.as_str()),
                comment: self.comment(schema),
                ty: self.ty(schema, depth + 1, level + 1),
            });
        }
        (Ty::Object(list), false)
    }

    /// An object without properties: `Record<string, T>` from
    /// `additionalProperties`, `{}` when none are allowed; bare otherwise.
    fn record(&mut self, map: &'a Map<String, Value>, depth: usize, level: usize) -> (Ty, bool) {
        match map.get("additionalProperties") {
            Some(Value::Bool(false)) => (Ty::Object(Vec::new()), true),
            Some(schema @ Value::Object(_)) => {
                let value = self.ty(schema, depth + 1, level + 1);
                (Ty::Record(Box::new(value)), false)
            }
            _ => (Ty::Record(Box::new(Ty::Unknown)), true),
        }
    }

    /// The type a local `$ref` (`#/$defs/X`, `#/definitions/X`, any `#/...`
    /// pointer) points at. A ref met again while expanding becomes the
    /// definition's name, or `unknown`; other documents are not fetched.
    fn reference(&mut self, reference: &'a Value, depth: usize, level: usize) -> Ty {
        let Some(pointer) = reference.as_str().and_then(|text| text.strip_prefix('#')) else {
            return Ty::Unknown;
        };
        if self.expanding.contains(&pointer) {
            return definition_name(pointer);
        }
        let Some(target) = self.root.pointer(pointer) else {
            return Ty::Unknown;
        };
        self.expanding.push(pointer);
        let ty = self.ty(target, depth, level + 1);
        self.expanding.pop();
        ty
    }

    /// A property's comment: its description, then its default.
    fn comment(&self, schema: &Value) -> Option<String> {
        if !self.options.comments {
            return None;
        }
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .map(|text| clip(text, PROPERTY_DESCRIPTION_LIMIT))
            .filter(|text| !text.is_empty());
        let default = schema.get("default").map(short_json);
        let body = match (description, default) {
            (Some(text), Some(value)) => format!("{text} (default: {value})"),
            (Some(text), None) => text,
            (None, Some(value)) => format!("default: {value}"),
            (None, None) => return None,
        };
        Some(escape_comment(&body))
    }
}

/// Whether a value is `[]`.
fn is_empty_array(value: &Value) -> bool {
    matches!(value, Value::Array(items) if items.is_empty())
}

/// The last segment of a JSON pointer, when it can name a type.
fn definition_name(pointer: &str) -> Ty {
    let last = pointer.rsplit('/').next().unwrap_or_default();
    let name = last.replace("~1", "/").replace("~0", "~");
    if is_identifier(&name) {
        Ty::Named(name)
    } else {
        Ty::Unknown
    }
}

/// `A | B`: flattened, without duplicates; `unknown` absorbs, `never` vanishes.
fn union(members: Vec<Ty>) -> Ty {
    let mut list = Vec::new();
    let mut seen = HashSet::new();
    for member in members {
        let inner = match member {
            Ty::Unknown => return Ty::Unknown,
            Ty::Never => continue,
            Ty::Union(inner) => inner,
            other => vec![other],
        };
        for ty in inner {
            if seen.insert(ty.clone()) {
                list.push(ty);
            }
        }
    }
    match list.len() {
        0 => Ty::Never,
        1 => list.pop().unwrap_or(Ty::Never),
        _ => Ty::Union(list),
    }
}

/// `A & B`: flattened, without duplicates; `unknown` vanishes, `never` absorbs.
fn intersection(members: Vec<Ty>) -> Ty {
    let mut list = Vec::new();
    let mut seen = HashSet::new();
    for member in members {
        let inner = match member {
            Ty::Unknown => continue,
            Ty::Never => return Ty::Never,
            Ty::Intersection(inner) => inner,
            other => vec![other],
        };
        for ty in inner {
            if seen.insert(ty.clone()) {
                list.push(ty);
            }
        }
    }
    match list.len() {
        0 => Ty::Unknown,
        1 => list.pop().unwrap_or(Ty::Unknown),
        _ => Ty::Intersection(list),
    }
}

/// A type as TypeScript text.
fn render(ty: &Ty) -> String {
    let mut out = String::new();
    write_ty(ty, &mut out);
    out
}

/// Appends a type's text; parentheses only where precedence needs them.
fn write_ty(ty: &Ty, out: &mut String) {
    match ty {
        Ty::Unknown => out.push_str("unknown"),
        Ty::Never => out.push_str("never"),
        Ty::Prim(name) => out.push_str(name),
        Ty::Lit(text) | Ty::Named(text) => out.push_str(text),
        Ty::Array(item) => {
            write_grouped(
                item,
                matches!(**item, Ty::Union(_) | Ty::Intersection(_)),
                out,
            );
            out.push_str("[]");
        }
        Ty::Tuple(items) => {
            out.push('[');
            write_joined(items, ", ", out);
            out.push(']');
        }
        Ty::Record(value) => {
            out.push_str("Record<string, ");
            write_ty(value, out);
            out.push('>');
        }
        Ty::Object(props) => write_object(props, out),
        // `&` binds tighter than `|`: intersections inside unions need nothing.
        Ty::Union(members) => write_joined(members, " | ", out),
        Ty::Intersection(members) => {
            for (index, member) in members.iter().enumerate() {
                if index > 0 {
                    out.push_str(" & ");
                }
                write_grouped(member, matches!(member, Ty::Union(_)), out);
            }
        }
    }
}

/// Appends a type, in parentheses if `group`.
fn write_grouped(ty: &Ty, group: bool, out: &mut String) {
    if group {
        out.push('(');
        write_ty(ty, out);
        out.push(')');
    } else {
        write_ty(ty, out);
    }
}

/// Appends types with a separator between them.
fn write_joined(types: &[Ty], separator: &str, out: &mut String) {
    for (index, ty) in types.iter().enumerate() {
        if index > 0 {
            out.push_str(separator);
        }
        write_ty(ty, out);
    }
}

/// Appends `{ a: T; /** note */ b?: U }`, or `{}`.
fn write_object(props: &[Prop], out: &mut String) {
    if props.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push_str("{ ");
    for (index, prop) in props.iter().enumerate() {
        if index > 0 {
            out.push_str("; ");
        }
        if let Some(comment) = &prop.comment {
            out.push_str("/** ");
            out.push_str(comment);
            out.push_str(" */ ");
        }
        if is_identifier(&prop.name) {
            out.push_str(&prop.name);
        } else {
            out.push_str(&json_string(&prop.name));
        }
        if prop.optional {
            out.push('?');
        }
        out.push_str(": ");
        write_ty(&prop.ty, out);
    }
    out.push_str(" }");
}

/// Whether `name` is a plain JS identifier: `[A-Za-z_$][A-Za-z0-9_$]*`.
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// A string as a JSON (and so JS) string literal.
fn json_string(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

/// Compact JSON, cut short: a default is a hint, not a value to copy whole.
fn short_json(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= DEFAULT_LIMIT {
        return text;
    }
    let short: String = text.chars().take(DEFAULT_LIMIT - 1).collect();
    let mut short = short.trim_end().to_owned();
    short.push('…');
    short
}

/// Whitespace collapsed to single spaces; over `limit` characters, cut at a
/// word boundary (inside the word if the first is too long) and ended with `…`.
fn clip(text: &str, limit: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= limit {
        return collapsed;
    }
    let room = limit.saturating_sub(1); // for the ellipsis
    let mut out = String::new();
    let mut used = 0;
    for word in collapsed.split(' ') {
        let need = word.chars().count() + usize::from(!out.is_empty());
        if used + need > room {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
        used += need;
    }
    if out.is_empty() {
        out = collapsed.chars().take(room).collect();
    }
    // "word,…" reads worse than "word…".
    let kept = out.trim_end_matches([',', ';', ':', '-', ' ']).len();
    out.truncate(kept);
    out.push('…');
    out
}

/// Text safe inside a `/** ... */` comment.
fn escape_comment(text: &str) -> String {
    text.replace("*/", "*\\/")
}

#[cfg(test)]
mod tests;
