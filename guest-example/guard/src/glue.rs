//! The guard role over [`refusal`](crate::refusal) and [`redact`](crate::redact).

use crate::redact;
use mcpw_guest::guard::{Call, Guard, GuardError, ResultVerdict, Verdict};
use serde_json::Value;

struct Redactor;

impl Guard for Redactor {
    fn before(call: Call) -> Result<Verdict, GuardError> {
        let args: Value = serde_json::from_str(&call.arguments)
            .map_err(|e| GuardError::InvalidInput(format!("arguments: {e}")))?;
        Ok(match crate::refusal(&call.tool, &args) {
            Some(why) => Verdict::Deny(why),
            None => Verdict::Allow,
        })
    }

    fn after(_call: Call, outcome: String) -> Result<ResultVerdict, GuardError> {
        let mut result: Value = serde_json::from_str(&outcome)
            .map_err(|e| GuardError::InvalidInput(format!("result: {e}")))?;
        Ok(if redact::redact_value(&mut result) {
            ResultVerdict::Replace(result.to_string())
        } else {
            ResultVerdict::Keep
        })
    }
}

mcpw_guest::guard!(Redactor);
