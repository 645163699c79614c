//! Declarations of real and odd schemas.

use super::*;
use serde_json::json;

/// The declaration of a tool without output schema.
fn decl(name: &str, description: &str, input: &Value) -> String {
    declaration(&ToolDecl {
        name,
        description,
        input_schema: input,
        output_schema: None,
    })
}

/// The signature line (the last line) of a declaration.
fn signature(text: &str) -> &str {
    text.rsplit('\n').next().unwrap_or_default()
}

const READ_TEXT_FILE: &str = "Read the complete contents of a file from the file system as text. \
    Handles various text encodings and provides detailed error messages if the file cannot be read. \
    Use this tool when you need to examine the contents of a single file. Use the 'head' parameter \
    to read only the first N lines of a file, or the 'tail' parameter to read only the last N lines \
    of a file. Operates on the file as text regardless of extension. Only works within allowed directories.";

fn read_text_file_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "tail": {"type": "number", "description": "If provided, returns only the last N lines of the file"},
            "head": {"type": "number", "description": "If provided, returns only the first N lines of the file"}
        },
        "required": ["path"],
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#"
    })
}

#[test]
fn filesystem_read_text_file() {
    let text = decl("read_text_file", READ_TEXT_FILE, &read_text_file_schema());
    let (comment, line) = text.split_once('\n').expect("a comment line");
    assert!(comment.starts_with("/** Read the complete contents of a file"));
    assert!(
        comment.ends_with("… */"),
        "long description is clipped: {comment}"
    );
    assert!(comment.chars().count() <= DESCRIPTION_LIMIT + 7);
    assert_eq!(
        line,
        "tools.read_text_file(args: { path: string; \
         /** If provided, returns only the last N lines of the file */ tail?: number; \
         /** If provided, returns only the first N lines of the file */ head?: number }): Promise<any>"
    );
}

#[test]
fn filesystem_edit_file_array_of_objects_and_default() {
    let schema = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                    "newText": {"type": "string", "description": "Text to replace with"}
                },
                "required": ["oldText", "newText"],
                "additionalProperties": false
            }},
            "dryRun": {"type": "boolean", "default": false, "description": "Preview changes using git-style diff format"}
        },
        "required": ["path", "edits"],
        "additionalProperties": false
    });
    let text = decl(
        "edit_file",
        "Make line-based edits to a text file.",
        &schema,
    );
    assert_eq!(
        text,
        "/** Make line-based edits to a text file. */\n\
         tools.edit_file(args: { path: string; edits: { \
         /** Text to search for - must match exactly */ oldText: string; \
         /** Text to replace with */ newText: string }[]; \
         /** Preview changes using git-style diff format (default: false) */ dryRun?: boolean }): Promise<any>"
    );
}

#[test]
fn filesystem_directory_tree_with_output_schema() {
    let input = json!({
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "excludePatterns": {"type": "array", "items": {"type": "string"}, "default": []}
        },
        "required": ["path"]
    });
    let output = json!({"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]});
    let tool = ToolDecl {
        name: "directory_tree",
        description: "Get a recursive tree view of files and directories as a JSON structure.",
        input_schema: &input,
        output_schema: Some(&output),
    };
    assert_eq!(
        signature(&declaration(&tool)),
        "tools.directory_tree(args: { path: string; /** default: [] */ excludePatterns?: string[] }): \
         Promise<{ content: string }>"
    );
}

#[test]
fn memory_create_entities_nested_arrays() {
    let schema = json!({
        "type": "object",
        "properties": {"entities": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "The name of the entity"},
                "entityType": {"type": "string", "description": "The type of the entity"},
                "observations": {"type": "array", "items": {"type": "string"},
                    "description": "An array of observation contents associated with the entity"}
            },
            "required": ["name", "entityType", "observations"]
        }}},
        "required": ["entities"]
    });
    let text = decl(
        "create_entities",
        "Create multiple new entities in the knowledge graph",
        &schema,
    );
    assert_eq!(
        signature(&text),
        "tools.create_entities(args: { entities: { /** The name of the entity */ name: string; \
         /** The type of the entity */ entityType: string; \
         /** An array of observation contents associated with the entity */ observations: string[] }[] }): \
         Promise<any>"
    );
}

#[test]
fn description_is_collapsed_clipped_and_optional() {
    let schema = json!({});
    assert_eq!(
        decl("t", "  Does\n\tthings.  ", &schema),
        "/** Does things. */\ntools.t(args?: {}): Promise<any>"
    );
    // Empty or blank: no comment line at all.
    assert_eq!(decl("t", "", &schema), "tools.t(args?: {}): Promise<any>");
    assert_eq!(
        decl("t", " \n ", &schema),
        "tools.t(args?: {}): Promise<any>"
    );
    let long = "word ".repeat(100);
    let comment = clip(&long, DESCRIPTION_LIMIT);
    assert!(
        comment.ends_with("word…"),
        "cut at a word boundary: {comment}"
    );
    assert!(comment.chars().count() <= DESCRIPTION_LIMIT);
    // A single over-long word is cut inside it.
    let url = "x".repeat(500);
    assert_eq!(clip(&url, 10), format!("{}…", "x".repeat(9)));
    assert_eq!(clip("one, two three", 9), "one, two…");
    assert_eq!(clip("one, two three", 8), "one…");
}

#[test]
fn comment_terminators_are_escaped() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "description": "ends */ here", "default": "*/"}
    }});
    let text = decl("t", "bad */ description", &schema);
    assert_eq!(
        text,
        "/** bad *\\/ description */\ntools.t(args?: { /** ends *\\/ here (default: \"*\\/\") */ a?: string }): Promise<any>"
    );
    assert_eq!(
        text.matches("*/").count(),
        2,
        "only the real comment ends remain"
    );
}

#[test]
fn tool_names_that_are_not_identifiers_are_quoted() {
    let schema = json!({});
    assert_eq!(
        decl("get-weather", "", &schema),
        "tools[\"get-weather\"](args?: {}): Promise<any>"
    );
    assert_eq!(
        decl("1st", "", &schema),
        "tools[\"1st\"](args?: {}): Promise<any>"
    );
    assert_eq!(
        decl("a\"b\n", "", &schema),
        "tools[\"a\\\"b\\n\"](args?: {}): Promise<any>"
    );
    assert_eq!(
        decl("", "", &schema),
        "tools[\"\"](args?: {}): Promise<any>"
    );
    assert_eq!(
        decl("$ok_1", "", &schema),
        "tools.$ok_1(args?: {}): Promise<any>"
    );
}

#[test]
fn args_optionality() {
    let none = "tools.t(args?: {}): Promise<any>";
    assert_eq!(decl("t", "", &json!({})), none);
    assert_eq!(decl("t", "", &json!({"type": "object"})), none);
    assert_eq!(
        decl("t", "", &json!({"type": "object", "properties": {}})),
        none
    );
    assert_eq!(
        decl(
            "t",
            "",
            &json!({"type": "object", "additionalProperties": false})
        ),
        none
    );
    assert_eq!(decl("t", "", &json!(true)), none);
    let optional = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    assert_eq!(
        decl("t", "", &optional),
        "tools.t(args?: { q?: string }): Promise<any>"
    );
    let required =
        json!({"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]});
    assert_eq!(
        decl("t", "", &required),
        "tools.t(args: { q: string }): Promise<any>"
    );
    let map = json!({"type": "object", "additionalProperties": {"type": "string"}});
    assert_eq!(
        decl("t", "", &map),
        "tools.t(args: Record<string, string>): Promise<any>"
    );
}

#[test]
fn return_type_from_output_schema() {
    let input = json!({});
    let output = json!({"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "string"}}, "total": {"type": "integer"}
    }, "required": ["items"]});
    let tool = ToolDecl {
        name: "list",
        description: "",
        input_schema: &input,
        output_schema: Some(&output),
    };
    assert_eq!(
        declaration(&tool),
        "tools.list(args?: {}): Promise<{ items: string[]; total?: number }>"
    );
    let any = json!({});
    let tool = ToolDecl {
        output_schema: Some(&any),
        ..tool
    };
    assert_eq!(
        declaration(&tool),
        "tools.list(args?: {}): Promise<unknown>"
    );
}

#[test]
fn primitive_types() {
    assert_eq!(ts_type(&json!({"type": "string"})), "string");
    assert_eq!(ts_type(&json!({"type": "number"})), "number");
    assert_eq!(ts_type(&json!({"type": "integer"})), "number");
    assert_eq!(ts_type(&json!({"type": "boolean"})), "boolean");
    assert_eq!(ts_type(&json!({"type": "null"})), "null");
    assert_eq!(ts_type(&json!({"type": "date"})), "unknown");
    assert_eq!(ts_type(&json!({"type": 7})), "unknown");
    assert_eq!(ts_type(&json!({"format": "uri"})), "unknown");
    assert_eq!(ts_type(&json!({})), "unknown");
}

#[test]
fn array_types() {
    assert_eq!(
        ts_type(&json!({"type": "array", "items": {"type": "string"}})),
        "string[]"
    );
    assert_eq!(ts_type(&json!({"type": "array"})), "unknown[]");
    assert_eq!(
        ts_type(&json!({"type": "array", "items": {"type": ["string", "number"]}})),
        "(string | number)[]"
    );
    assert_eq!(
        ts_type(
            &json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})
        ),
        "number[][]"
    );
    assert_eq!(
        ts_type(&json!({"type": "array", "prefixItems": [{"type": "number"}, {"type": "string"}]})),
        "[number, string]"
    );
    // Without `type`, `items` still says it is an array.
    assert_eq!(ts_type(&json!({"items": {"type": "boolean"}})), "boolean[]");
    assert_eq!(
        ts_type(&json!({"type": "array", "items": {"enum": ["a", "b"]}})),
        "(\"a\" | \"b\")[]"
    );
}

#[test]
fn object_types_and_property_names() {
    let schema = json!({"type": "object", "properties": {
        "plain": {"type": "string"},
        "with-dash": {"type": "number"},
        "quote\"d": {"type": "boolean"},
        "9lives": {}
    }, "required": ["with-dash", "9lives", "nonexistent", 3]});
    assert_eq!(
        ts_type(&schema),
        "{ plain?: string; \"with-dash\": number; \"quote\\\"d\"?: boolean; \"9lives\": unknown }"
    );
    // Key order is the schema's (preserve_order), not alphabetical.
    let ordered =
        json!({"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "string"}}});
    assert_eq!(ts_type(&ordered), "{ z?: string; a?: string }");
    // Without `type`, `properties` still says it is an object.
    assert_eq!(
        ts_type(&json!({"properties": {"x": {"type": "null"}}})),
        "{ x?: null }"
    );
}

#[test]
fn records() {
    assert_eq!(
        ts_type(&json!({"type": "object", "additionalProperties": {"type": "number"}})),
        "Record<string, number>"
    );
    assert_eq!(
        ts_type(&json!({"type": "object"})),
        "Record<string, unknown>"
    );
    assert_eq!(
        ts_type(&json!({"type": "object", "additionalProperties": true})),
        "Record<string, unknown>"
    );
    assert_eq!(
        ts_type(&json!({"type": "object", "additionalProperties": {}})),
        "Record<string, unknown>"
    );
    assert_eq!(
        ts_type(&json!({"type": "object", "additionalProperties": false})),
        "{}"
    );
    assert_eq!(
        ts_type(
            &json!({"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}})
        ),
        "Record<string, string[]>"
    );
}

#[test]
fn enums_and_consts() {
    assert_eq!(
        ts_type(&json!({"enum": ["a", "b", 1, null, true]})),
        "\"a\" | \"b\" | 1 | null | true"
    );
    assert_eq!(
        ts_type(&json!({"type": "string", "enum": ["x", "x", "y"]})),
        "\"x\" | \"y\""
    );
    assert_eq!(ts_type(&json!({"const": "fixed"})), "\"fixed\"");
    assert_eq!(ts_type(&json!({"const": 2.5})), "2.5");
    assert_eq!(ts_type(&json!({"const": {"k": [1]}})), "{\"k\":[1]}");
    assert_eq!(ts_type(&json!({"enum": ["a\"b"]})), "\"a\\\"b\"");
    // An empty enum is malformed: the `type` beside it still counts.
    assert_eq!(ts_type(&json!({"type": "string", "enum": []})), "string");
}

#[test]
fn unions_intersections_and_nullable() {
    assert_eq!(
        ts_type(&json!({"type": ["string", "null"]})),
        "string | null"
    );
    assert_eq!(
        ts_type(&json!({"anyOf": [{"type": "string"}, {"type": "number"}]})),
        "string | number"
    );
    assert_eq!(
        ts_type(
            &json!({"oneOf": [{"type": "string"}, {"type": "string"}, {"type": "integer"}, {"type": "number"}]})
        ),
        "string | number"
    );
    assert_eq!(
        ts_type(&json!({"type": "string", "nullable": true})),
        "string | null"
    );
    assert_eq!(
        ts_type(&json!({"type": ["string", "null"], "nullable": true})),
        "string | null"
    );
    assert_eq!(ts_type(&json!({"nullable": true})), "unknown");
    assert_eq!(
        ts_type(&json!({"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"type": "object", "properties": {"b": {"type": "number"}}}
        ]})),
        "{ a: string } & { b?: number }"
    );
    assert_eq!(
        ts_type(
            &json!({"allOf": [{"anyOf": [{"type": "string"}, {"type": "number"}]}, {"enum": [1, "x"]}]})
        ),
        "(string | number) & (1 | \"x\")"
    );
    assert_eq!(
        ts_type(
            &json!({"type": "array", "items": {"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]},
            "$defs": {"A": {"type": "object", "properties": {"a": {"type": "string"}}},
                      "B": {"type": "object", "properties": {"b": {"type": "string"}}}}})
        ),
        "({ a?: string } & { b?: string })[]"
    );
}

#[test]
fn combinators_beside_type() {
    // Constraint-only branches (`required` alternatives) add nothing.
    let schema = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}]});
    assert_eq!(ts_type(&schema), "{ a?: string; b?: string }");
    // A bare `type: object` beside a union of shapes is dropped, not intersected.
    let schema = json!({"type": "object", "oneOf": [
        {"properties": {"kind": {"const": "a"}}, "required": ["kind"]},
        {"properties": {"kind": {"const": "b"}}, "required": ["kind"]}
    ]});
    assert_eq!(ts_type(&schema), "{ kind: \"a\" } | { kind: \"b\" }");
    assert_eq!(
        ts_type(&json!({"type": "string", "anyOf": [{"format": "date"}, {"format": "uri"}]})),
        "string"
    );
}

#[test]
fn refs_resolve_against_the_root() {
    let schema = json!({
        "type": "object",
        "properties": {
            "point": {"$ref": "#/$defs/Point"},
            "old": {"$ref": "#/definitions/Old"},
            "missing": {"$ref": "#/$defs/Nope"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "bad": {"$ref": 3}
        },
        "required": ["point"],
        "$defs": {"Point": {"type": "object", "properties": {
            "x": {"type": "number"}, "unit": {"$ref": "#/$defs/Unit"}}, "required": ["x"]},
            "Unit": {"enum": ["cm", "in"]}},
        "definitions": {"Old": {"type": "boolean"}}
    });
    assert_eq!(
        ts_type(&schema),
        "{ point: { x: number; unit?: \"cm\" | \"in\" }; old?: boolean; missing?: unknown; remote?: unknown; bad?: unknown }"
    );
}

#[test]
fn ref_cycles_become_names_or_unknown() {
    let tree = json!({
        "$ref": "#/$defs/TreeEntry",
        "$defs": {"TreeEntry": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/TreeEntry"}}
        }, "required": ["name"]}}
    });
    assert_eq!(ts_type(&tree), "{ name: string; children?: TreeEntry[] }");
    // Mutual recursion stops at the first repeat.
    let mutual = json!({"$ref": "#/definitions/A", "definitions": {
        "A": {"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}}},
        "B": {"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}}
    }});
    assert_eq!(ts_type(&mutual), "{ b?: { a?: A } }");
    // A name that cannot be a type, or the root itself, becomes `unknown`.
    let odd = json!({"$ref": "#/$defs/a-b", "$defs": {"a-b": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a-b"}]}}});
    assert_eq!(ts_type(&odd), "unknown");
    let root = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
    assert_eq!(ts_type(&root), "{ next?: { next?: unknown } }");
    let selfref = json!({"$ref": "#/$defs/S", "$defs": {"S": {"$ref": "#/$defs/S"}}});
    assert_eq!(ts_type(&selfref), "S");
}

#[test]
fn deep_objects_become_object() {
    let mut schema = json!({"type": "string"});
    for _ in 0..6 {
        schema = json!({"type": "object", "properties": {"a": schema}, "required": ["a"]});
    }
    assert_eq!(ts_type(&schema), "{ a: { a: { a: { a: object } } } }");
    // Arrays do not count as object levels.
    let listed = json!({"type": "array", "items": {"type": "array", "items": schema}});
    assert_eq!(ts_type(&listed), "{ a: { a: { a: { a: object } } } }[][]");
    let record = json!({"type": "object", "additionalProperties": schema});
    assert_eq!(
        ts_type(&record),
        "Record<string, { a: { a: { a: object } } }>"
    );
}

#[test]
fn property_comments_clip_and_defaults() {
    let long = "Lorem ipsum dolor sit amet ".repeat(10);
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "string", "description": long},
        "b": {"type": "integer", "default": 10},
        "c": {"type": "object", "default": {"key": "a very long default value that goes on and on"}},
        "d": {"type": "string", "description": "   ", "default": null}
    }});
    let text = ts_type(&schema);
    let first = text.split("*/").next().unwrap_or_default();
    assert!(first.ends_with("… "), "description clipped: {first}");
    assert!(first.chars().count() <= PROPERTY_DESCRIPTION_LIMIT + 6);
    assert!(text.contains("/** default: 10 */ b?: number"), "{text}");
    assert!(
        text.contains("/** default: {\"key\":\"a very long default value that… */ c?:"),
        "{text}"
    );
    assert!(text.contains("/** default: null */ d?: string"), "{text}");
}

/// A schema of `count` properties, each with a long description and a
/// nested object.
fn wide_schema(count: usize) -> Value {
    let mut props = Map::new();
    for index in 0..count {
        props.insert(
            format!("field{index}"),
            json!({
                "type": "object",
                "description": "A long explanation of this field that the guard removes first ".repeat(2),
                "properties": {"inner": {"type": "object", "properties": {"x": {"type": "string"}}}}
            }),
        );
    }
    json!({"type": "object", "properties": props})
}

#[test]
fn length_guard_drops_comments_then_nested_detail() {
    let small = wide_schema(2);
    let text = decl("t", "d", &small);
    assert!(
        text.contains("/** A long explanation"),
        "under the limit, comments stay"
    );
    assert!(text.contains("inner?: { x?: string }"));

    // Too long with comments, short enough without.
    let medium = wide_schema(20);
    let text = decl("t", "d", &medium);
    assert!(
        text.chars().count() <= MAX_DECLARATION_CHARS,
        "{}",
        text.len()
    );
    assert_eq!(
        text.matches("/**").count(),
        1,
        "only the tool's comment remains: {text}"
    );
    assert!(
        text.contains("field0?: { inner?: { x?: string } }"),
        "{text}"
    );

    // Still too long: nested objects lose their shape.
    let large = wide_schema(60);
    let text = decl("t", "d", &large);
    assert!(text.contains("field0?: object; field1?: object"), "{text}");
    assert!(!text.contains("inner"));
    assert!(
        text.starts_with("/** d */\n"),
        "the tool description is kept"
    );
}

#[test]
fn odd_schemas_do_not_panic() {
    let odd = [
        json!(true),
        json!(false),
        json!(null),
        json!(42),
        json!("string"),
        json!([1, 2]),
        json!({"type": []}),
        json!({"type": ["bogus", 1]}),
        json!({"type": "object", "properties": [1, 2], "required": "all"}),
        json!({"type": "object", "properties": {"a": 5, "b": null, "c": false}}),
        json!({"type": "array", "items": 7}),
        json!({"type": "array", "items": []}),
        json!({"anyOf": "x", "oneOf": [], "allOf": {}}),
        json!({"anyOf": [false, false]}),
        json!({"enum": {"a": 1}}),
        json!({"$ref": "#/$defs/"}),
        json!({"$ref": "#/~"}),
        json!({"$ref": ""}),
        json!({"$ref": "#/0/1"}),
        json!({"description": {"nested": true}, "default": [1, {"a": null}]}),
    ];
    for schema in &odd {
        let text = ts_type(schema);
        assert!(!text.is_empty());
        let tool = ToolDecl {
            name: "x",
            description: "",
            input_schema: schema,
            output_schema: Some(schema),
        };
        let declared = declaration(&tool);
        assert!(declared.starts_with("tools.x("), "{declared}");
    }
    assert_eq!(ts_type(&json!(false)), "never");
    assert_eq!(ts_type(&json!({"anyOf": [false, false]})), "never");
    assert_eq!(ts_type(&json!({"type": "array", "items": []})), "unknown[]");
    assert_eq!(
        ts_type(&json!({"type": "object", "properties": {"a": 5, "c": false}})),
        "{ a?: unknown; c?: never }"
    );
}

#[test]
fn deep_and_explosive_schemas_stay_bounded() {
    // Far deeper than any parser allows: the level cap keeps the stack small.
    // Built by hand: `json!` would copy the growing value each time.
    let mut deep = json!({"type": "string"});
    for _ in 0..1000 {
        let mut map = Map::new();
        map.insert("type".to_owned(), json!("array"));
        map.insert("items".to_owned(), deep);
        deep = Value::Object(map);
    }
    let text = ts_type(&deep);
    assert!(
        text.starts_with("unknown[]"),
        "{}",
        &text[..20.min(text.len())]
    );
    // Each definition uses the next twice: 2^40 expansions without a budget.
    let mut defs = Map::new();
    for index in 0..40 {
        let next = json!({"$ref": format!("#/$defs/D{}", index + 1)});
        defs.insert(
            format!("D{index}"),
            json!({"type": "array", "items": {"anyOf": [next, {"allOf": [next]}]}}),
        );
    }
    defs.insert("D40".to_owned(), json!({"type": "string"}));
    let schema = json!({"$ref": "#/$defs/D0", "$defs": defs});
    let text = ts_type(&schema);
    assert!(text.ends_with("[]"), "{text}");
    assert!(!decl("t", "", &schema).is_empty());
}

/// A small deterministic generator (xorshift), for fuzz-like inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }

    /// A random JSON value biased towards schema keywords.
    fn value(&mut self, depth: usize) -> Value {
        const KEYS: [&str; 22] = [
            "type",
            "properties",
            "items",
            "required",
            "$ref",
            "$defs",
            "definitions",
            "anyOf",
            "oneOf",
            "allOf",
            "enum",
            "const",
            "nullable",
            "additionalProperties",
            "description",
            "default",
            "prefixItems",
            "A",
            "b-c",
            "*/",
            "",
            "\u{2028}",
        ];
        const STRINGS: [&str; 14] = [
            "object",
            "array",
            "string",
            "integer",
            "null",
            "boolean",
            "#",
            "#/$defs/A",
            "#/definitions/b-c",
            "#/properties/A",
            "*/ x",
            "a\nb",
            "\u{e9}\u{1F600}",
            "",
        ];
        let leaf = depth == 0 || self.below(3) == 0;
        match self.below(if leaf { 5 } else { 8 }) {
            0 => Value::Null,
            1 => Value::Bool(self.below(2) == 0),
            2 => json!(i64::try_from(self.below(1000)).unwrap_or(0) - 500),
            3 => json!(f64::from(u32::try_from(self.below(100)).unwrap_or(0)) / 7.0),
            4 => Value::String(STRINGS[self.below(STRINGS.len())].to_owned()),
            5 => Value::Array((0..self.below(4)).map(|_| self.value(depth - 1)).collect()),
            _ => {
                let mut map = Map::new();
                for _ in 0..self.below(6) {
                    let key = KEYS[self.below(KEYS.len())].to_owned();
                    let value = self.value(depth - 1);
                    map.insert(key, value);
                }
                Value::Object(map)
            }
        }
    }
}

#[test]
fn fuzz_random_values_never_panic_and_are_deterministic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..5000 {
        let input = rng.value(7);
        let output = rng.value(4);
        let names = ["ok", "not ok", "*/", "", "\u{1F600}"];
        let name = names[rng.below(names.len())];
        let description = ["", "Plain.", "a */ b\n\nc", "\u{2028}x"][rng.below(4)];
        let tool = ToolDecl {
            name,
            description,
            input_schema: &input,
            output_schema: if rng.below(2) == 0 {
                Some(&output)
            } else {
                None
            },
        };
        let first = declaration(&tool);
        assert_eq!(first, declaration(&tool), "deterministic");
        assert!(!first.ends_with('\n'));
        assert!(
            first.matches('\n').count() <= 1,
            "one comment line at most: {first}"
        );
        assert!(signature(&first).starts_with("tools"));
        assert!(signature(&first).contains("): Promise<"));
        assert_eq!(ts_type(&input), ts_type(&input));
    }
}
