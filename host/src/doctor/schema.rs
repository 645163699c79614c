//! A few clear rules a tool's definition should meet, or clients drop or
//! misuse the tool.

use crate::catalog::Tool;
use serde_json::Value;

/// What is wrong with `tool`'s definition, a line per problem.
pub(crate) fn lint(tool: &Tool) -> Vec<String> {
    let mut problems = Vec::new();
    if tool.description.trim().is_empty() {
        problems.push("has no description: the agent cannot tell when to use it".to_string());
    }
    let schema = tool.input_schema.to_value();
    match schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => problems.push(format!(
            "its input schema's type is {other}, not \"object\": clients that check it drop the tool"
        )),
        None => problems.push(
            "its input schema has no `\"type\": \"object\"`: clients that check it drop the tool"
                .to_string(),
        ),
    }
    let properties = schema.get("properties");
    if properties.is_some_and(|p| !p.is_object()) {
        problems.push("its input schema's `properties` is not an object".to_string());
    }
    match schema.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            for name in names {
                let known = name
                    .as_str()
                    .is_some_and(|n| properties.and_then(|p| p.get(n)).is_some());
                if !known {
                    problems.push(format!(
                        "its input schema requires {name}, which is not among its properties"
                    ));
                }
            }
        }
        Some(_) => problems.push("its input schema's `required` is not a list".to_string()),
    }
    problems
}
