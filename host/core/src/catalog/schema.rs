//! A tool's input schema, held in the form each reader needs, each made once.
//!
//! A warm catalog has thousands of schemas. Read from the metadata cache they
//! stay JSON text (the guests take text, and most are never looked into); an
//! MCP listing or a parameter summary parses one on first need. Received from a
//! server as an object, the text is made on first need. Clones share both forms.

use serde::de::{Deserialize, Deserializer};
use serde::ser::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// A JSON object, as MCP's `inputSchema` is.
pub type JsonObject = Map<String, Value>;

/// A tool's input JSON Schema: text and object, each made at most once.
#[derive(Clone)]
pub struct Schema(Arc<Forms>);

struct Forms {
    text: OnceLock<Arc<str>>,
    object: OnceLock<Arc<JsonObject>>,
}

impl Schema {
    /// A schema known as JSON text, parsed when first looked into.
    fn from_text(text: impl Into<Arc<str>>) -> Schema {
        Schema(Arc::new(Forms {
            text: OnceLock::from(text.into()),
            object: OnceLock::new(),
        }))
    }

    /// A schema known as an object.
    pub fn from_object(object: JsonObject) -> Schema {
        Schema(Arc::new(Forms {
            text: OnceLock::new(),
            object: OnceLock::from(Arc::new(typed(object))),
        }))
    }

    /// The schema as JSON text (what the guests get).
    pub fn text(&self) -> &str {
        self.0.text.get_or_init(|| {
            let object = self.0.object.get().expect("a schema has one form at least");
            serde_json::to_string(&**object)
                .expect("a JSON object serialises")
                .into()
        })
    }

    /// The schema as an object that says `"type": "object"`, as MCP listings
    /// require. Text that is not a JSON object reads as `{"type": "object"}`.
    pub fn object(&self) -> &Arc<JsonObject> {
        self.0.object.get_or_init(|| {
            let text = self.0.text.get().expect("a schema has one form at least");
            let object = match serde_json::from_str(text) {
                Ok(Value::Object(m)) => m,
                _ => Map::new(),
            };
            Arc::new(typed(object))
        })
    }

    /// One member of the object form.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.object().get(key)
    }

    /// The object form as a JSON value.
    pub fn to_value(&self) -> Value {
        Value::Object((**self.object()).clone())
    }
}

/// MCP requires the top level of an input schema to say `"type": "object"`.
fn typed(mut object: JsonObject) -> JsonObject {
    if !object.contains_key("type") {
        object.insert("type".into(), Value::String("object".into()));
    }
    object
}

impl Default for Schema {
    fn default() -> Schema {
        Schema::from_object(Map::new())
    }
}

impl From<Value> for Schema {
    /// A value that is not an object becomes `{"type": "object"}`.
    fn from(v: Value) -> Schema {
        match v {
            Value::Object(m) => Schema::from_object(m),
            _ => Schema::default(),
        }
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Schema) -> bool {
        if Arc::ptr_eq(&self.0, &other.0) {
            return true;
        }
        match (self.0.text.get(), other.0.text.get()) {
            (Some(a), Some(b)) if a == b => true,
            _ => self.object() == other.object(),
        }
    }
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.text())
    }
}

impl Serialize for Schema {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.text.get() {
            // Written as read: no tree is built to write a cache file.
            Some(text) => match RawValue::from_string(text.to_string()) {
                Ok(raw) => raw.serialize(s),
                Err(_) => self.object().serialize(s),
            },
            None => self.object().serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Schema {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Schema, D::Error> {
        // Only checked for well-formedness here; parsed when first looked into.
        let raw = Box::<RawValue>::deserialize(d)?;
        Ok(Schema::from_text(raw.get()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_is_kept_as_read_and_parsed_once_when_looked_into() {
        let s: Schema =
            serde_json::from_str(r#"{"properties": {"q": {"type": "string"}}}"#).expect("a schema");
        assert_eq!(s.text(), r#"{"properties": {"q": {"type": "string"}}}"#);
        assert_eq!(s.get("type"), Some(&json!("object")), "made MCP-valid");
        assert!(
            Arc::ptr_eq(s.object(), s.clone().object()),
            "clones share the parse"
        );
        assert_eq!(
            serde_json::to_string(&s).expect("serialises"),
            r#"{"properties": {"q": {"type": "string"}}}"#
        );
    }

    #[test]
    fn objects_get_their_text_on_first_need() {
        let s = Schema::from(json!({"type": "object", "required": ["a"]}));
        assert_eq!(s.text(), r#"{"type":"object","required":["a"]}"#);
        assert_eq!(
            s,
            Schema::from_text(r#"{"type": "object", "required": ["a"]}"#)
        );
        assert_ne!(s, Schema::default());
    }

    #[test]
    fn anything_but_an_object_reads_as_an_empty_object_schema() {
        for text in ["[1]", "\"x\"", "null"] {
            let s: Schema = serde_json::from_str(text).expect("well-formed JSON");
            assert_eq!(s.to_value(), json!({"type": "object"}), "{text}");
            assert_eq!(s.text(), text, "the guests see what the server sent");
        }
        assert_eq!(Schema::from(json!(3)).to_value(), json!({"type": "object"}));
    }

    #[test]
    fn values_and_raw_text_deserialise_alike() {
        let v = json!({"type": "object", "properties": {}});
        let from_value: Schema = serde_json::from_value(v.clone()).expect("from a value");
        assert_eq!(from_value.to_value(), v);
    }
}
