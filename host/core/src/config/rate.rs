//! Rate limits as the config writes them: `"N/s"`, `"N/min"` or `"N/h"`
//! (a bucket of N calls, filled again at that pace), in `settings.rateLimit`
//! (every call of a client) and a server's `rateLimit` (its calls, or, as
//! `{glob: rate}`, those of the tools each glob matches).

use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// A token bucket: `calls` at most at once, filled again over `per`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Rate {
    /// The bucket's size, and how many calls `per` gives back.
    pub calls: u32,
    /// How long the bucket takes to fill again from empty.
    #[serde(serialize_with = "as_ms")]
    pub per: Duration,
}

fn as_ms<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

impl Rate {
    /// Reads a JSON `"N/unit"`.
    pub fn from_value(v: &serde_json::Value) -> Result<Rate, String> {
        match v {
            serde_json::Value::String(s) => Rate::parse(s),
            other => Err(format!(
                "expected \"N/s\", \"N/min\" or \"N/h\" (N calls a second, minute or hour), found {other}"
            )),
        }
    }

    /// Reads `"N/unit"`.
    pub fn parse(s: &str) -> Result<Rate, String> {
        let usage = || {
            format!(
                "expected \"N/s\", \"N/min\" or \"N/h\" (N calls a second, minute or hour), found {s:?}"
            )
        };
        let (n, unit) = s.split_once('/').ok_or_else(usage)?;
        let calls: u32 = n.trim().parse().ok().filter(|&n| n > 0).ok_or_else(usage)?;
        let per = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            _ => return Err(usage()),
        };
        Ok(Rate { calls, per })
    }

    /// How many calls come back each millisecond.
    pub fn per_ms(self) -> f64 {
        f64::from(self.calls) / self.per.as_millis().max(1) as f64
    }

    /// As the config writes it.
    pub fn text(self) -> String {
        let unit = match self.per.as_secs() {
            1 => "s",
            60 => "min",
            _ => "h",
        };
        format!("{}/{unit}", self.calls)
    }
}

/// A server's `rateLimit`: one rate for all its calls, or rates by tool glob
/// (every glob that matches a tool applies).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum RateRule {
    /// One bucket for the server.
    Server(Rate),
    /// A bucket per glob, shared by the tools it matches.
    Tools(Vec<(String, Rate)>),
}

impl RateRule {
    /// Reads `"N/unit"` or `{glob: "N/unit"}`.
    pub fn parse(v: &Value) -> Result<RateRule, String> {
        match v {
            Value::String(s) => Rate::parse(s).map(RateRule::Server),
            Value::Object(globs) => globs
                .iter()
                .map(|(g, r)| {
                    let rate = r
                        .as_str()
                        .ok_or_else(|| format!("{g}: expected \"N/unit\", found {r}"))?;
                    Rate::parse(rate)
                        .map(|r| (g.clone(), r))
                        .map_err(|e| format!("{g}: {e}"))
                })
                .collect::<Result<_, _>>()
                .map(RateRule::Tools),
            other => Err(format!(
                "expected \"N/unit\" or an object of tool globs and rates, found {other}"
            )),
        }
    }

    /// The buckets a call of `tool` draws from: a name for each, and its rate.
    pub fn buckets(&self, tool: &str) -> Vec<(String, Rate)> {
        match self {
            RateRule::Server(r) => vec![(String::new(), *r)],
            RateRule::Tools(globs) => globs
                .iter()
                .filter(|(g, _)| super::approve::glob_matches(g, tool))
                .map(|(g, r)| (g.clone(), *r))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rates_read_as_calls_per_unit() {
        assert_eq!(
            Rate::parse("10/min").unwrap(),
            Rate {
                calls: 10,
                per: Duration::from_secs(60)
            }
        );
        assert_eq!(Rate::parse(" 3 / s ").unwrap().per, Duration::from_secs(1));
        assert_eq!(Rate::parse("2/h").unwrap().text(), "2/h");
        for bad in ["0/min", "ten/min", "5", "5/day", "-1/s"] {
            assert!(Rate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_rule_is_one_bucket_or_one_per_matching_glob() {
        let one = RateRule::parse(&json!("60/min")).unwrap();
        assert_eq!(one.buckets("anything").len(), 1);
        let globs = RateRule::parse(&json!({"*": "60/min", "create_*": "5/min"})).unwrap();
        let names = |t: &str| {
            globs
                .buckets(t)
                .into_iter()
                .map(|(g, _)| g)
                .collect::<Vec<_>>()
        };
        assert_eq!(names("create_issue"), ["*", "create_*"]);
        assert_eq!(names("list_issues"), ["*"]);
        assert!(
            RateRule::parse(&json!({"x": 5}))
                .unwrap_err()
                .starts_with("x: ")
        );
        assert!(RateRule::parse(&json!(true)).is_err());
    }
}
