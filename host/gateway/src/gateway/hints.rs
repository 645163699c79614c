//! Hints in a listed tool's `_meta` for clients that defer tools themselves
//! (Claude Code's tool search): `anthropic/alwaysLoad` on the tools meant to
//! be in the agent's context from the start, and `anthropic/searchHint`, the
//! server's `searchKeywords`, for the client's own search to find the others.

use serde_json::{Map, Value};

/// The `_meta` key of a tool the client should never defer.
const ALWAYS_LOAD: &str = "anthropic/alwaysLoad";
/// The `_meta` key of the words a client's tool search matches a tool by.
const SEARCH_HINT: &str = "anthropic/searchHint";

/// What a listed tool is hinted with.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Hints<'a> {
    /// Loaded from the start, never deferred by the client.
    pub always_load: bool,
    /// The server's `searchKeywords`.
    pub keywords: &'a [String],
}

impl Hints<'_> {
    /// A tool the client should never defer.
    pub(crate) fn always() -> Hints<'static> {
        Hints {
            always_load: true,
            keywords: &[],
        }
    }

    /// `meta` (an object, or none) with these hints added; what it held
    /// stays. None when there is nothing to say.
    pub(crate) fn add_to(self, meta: Option<Value>) -> Option<Value> {
        let mut object = match meta {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        if self.always_load {
            object.insert(ALWAYS_LOAD.into(), Value::Bool(true));
        }
        if !self.keywords.is_empty() {
            object.insert(SEARCH_HINT.into(), Value::String(self.keywords.join(", ")));
        }
        (!object.is_empty()).then_some(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hints_join_what_the_meta_held() {
        let keywords = ["issues".to_string(), "pull requests".to_string()];
        let hints = Hints {
            always_load: true,
            keywords: &keywords,
        };
        let held = json!({"anthropic/maxResultSizeChars": 40000});
        assert_eq!(
            hints.add_to(Some(held)),
            Some(json!({"anthropic/maxResultSizeChars": 40000,
                        "anthropic/alwaysLoad": true,
                        "anthropic/searchHint": "issues, pull requests"}))
        );
    }

    #[test]
    fn no_hint_and_no_meta_is_no_meta() {
        assert_eq!(Hints::default().add_to(None), None);
        let budget = json!({"anthropic/maxResultSizeChars": 4});
        assert_eq!(Hints::default().add_to(Some(budget.clone())), Some(budget));
        assert_eq!(
            Hints::always().add_to(None),
            Some(json!({"anthropic/alwaysLoad": true}))
        );
    }
}
