//! General developer vocabulary: words and phrases that mean the same thing
//! when asking for a tool. A query is expanded with the other members of every
//! group it mentions, at a lower weight than its own words. This is general
//! knowledge of how people talk about software, not tuned to any query set.

use super::fasthash::FastMap as HashMap;
use super::text::tokens;
use std::sync::OnceLock;

/// Groups of interchangeable words and phrases. Order within a group does not matter.
const GROUPS: &[&[&str]] = &[
    // Actions.
    &[
        "create",
        "make",
        "new",
        "add",
        "raise",
        "file",
        "generate",
        "init",
        "initialize",
        "spin up",
        "set up",
        "register",
        "open",
    ],
    &[
        "delete", "remove", "rm", "destroy", "drop", "erase", "purge", "del", "unlink", "trash",
        "discard", "wipe",
    ],
    &["list", "ls", "enumerate", "all", "browse", "show all"],
    &[
        "get",
        "fetch",
        "retrieve",
        "read",
        "show",
        "view",
        "display",
        "see",
        "inspect",
        "describe",
        "detail",
        "info",
        "information",
        "look up",
        "lookup",
        "check",
        "obtain",
    ],
    &[
        "update", "edit", "modify", "change", "patch", "alter", "adjust", "amend", "tweak", "set",
    ],
    &[
        "search", "find", "query", "look for", "locate", "grep", "seek", "discover", "lookup",
        "filter",
    ],
    &[
        "send", "post", "message", "notify", "dm", "deliver", "publish", "share",
    ],
    &[
        "run", "execute", "exec", "invoke", "launch", "trigger", "start", "kick off", "fire",
    ],
    &[
        "stop",
        "kill",
        "terminate",
        "halt",
        "end",
        "abort",
        "cancel",
        "shut down",
        "shutdown",
    ],
    &["move", "mv", "relocate", "transfer"],
    &["rename", "mv", "retitle"],
    &["copy", "cp", "duplicate", "clone", "replicate"],
    &["read", "cat", "open", "load", "content", "contents"],
    &[
        "write",
        "save",
        "store",
        "put",
        "dump",
        "persist",
        "overwrite",
    ],
    &["merge", "combine", "land", "integrate"],
    &["close", "shut", "exit", "quit", "dismiss"],
    &["click", "press", "tap", "hit", "push"],
    &["type", "enter", "input", "fill", "key in", "write"],
    &["download", "pull", "fetch", "grab", "save"],
    &["upload", "push", "attach", "put"],
    &["install", "add", "set up", "deploy"],
    &["uninstall", "remove"],
    &[
        "summarize",
        "summary",
        "tldr",
        "digest",
        "recap",
        "overview",
    ],
    &[
        "convert",
        "transform",
        "translate",
        "change into",
        "turn into",
    ],
    &["schedule", "book", "plan", "calendar"],
    &["compare", "diff", "difference", "changes"],
    &["restart", "reboot", "reload", "relaunch"],
    &["archive", "compress", "zip", "tar", "gzip"],
    &["extract", "unzip", "unpack", "decompress"],
    &["approve", "accept", "confirm", "ok", "allow"],
    &["reject", "decline", "deny", "dismiss"],
    &["assign", "delegate", "give"],
    &["subscribe", "follow", "watch"],
    &["unsubscribe", "unfollow", "unwatch"],
    &["navigate", "go to", "visit", "open", "browse", "load"],
    &["go back", "back", "previous", "return"],
    &["scroll", "page down", "swipe"],
    &["hover", "mouse over", "mouseover"],
    &["drag", "drag and drop", "drop"],
    &["wait", "until", "pause", "sleep", "delay"],
    &[
        "evaluate",
        "eval",
        "execute javascript",
        "run script",
        "script",
    ],
    &[
        "screenshot",
        "screen shot",
        "screen capture",
        "capture",
        "screengrab",
        "snapshot",
        "picture of the screen",
        "image of the page",
    ],
    &["record", "capture", "trace", "profile"],
    &["validate", "verify", "check", "lint", "test"],
    &["format", "prettify", "beautify", "pretty print"],
    &[
        "calculate",
        "compute",
        "calc",
        "math",
        "evaluate",
        "arithmetic",
    ],
    &["count", "number of", "how many", "total"],
    &[
        "authenticate",
        "login",
        "log in",
        "sign in",
        "auth",
        "authorize",
    ],
    &["logout", "log out", "sign out"],
    &["invite", "add member"],
    &["react", "reaction", "emoji"],
    &["reply", "respond", "answer", "comment"],
    &["comment", "note", "remark", "annotate"],
    &["star", "favorite", "bookmark", "like"],
    &["fork", "copy"],
    &["refund", "reimburse", "money back"],
    &["pay", "payment", "charge", "purchase", "checkout"],
    &["buy", "purchase", "order"],
    &["sell", "sale"],
    &[
        "remember",
        "memorize",
        "memory",
        "knowledge",
        "fact",
        "note",
    ],
    &["recall", "remember", "retrieve"],
    &["think", "reason", "reasoning", "step by step", "plan"],
    &["translate", "translation"],
    &["transcribe", "transcript", "caption", "subtitle"],
    &[
        "geocode",
        "coordinates",
        "latitude",
        "longitude",
        "lat",
        "lng",
        "address",
    ],
    &[
        "direction",
        "route",
        "navigation",
        "drive",
        "driving",
        "itinerary",
    ],
    &["nearby", "near", "near me", "around", "local", "closest"],
    &["scale", "resize", "replica"],
    &["resize", "dimension", "size", "width", "height", "viewport"],
    &["emulate", "simulate", "throttle", "mock"],
    &["mock", "intercept", "stub", "fake", "route"],
    &["audit", "lighthouse", "review", "analyze", "score"],
    &["analyze", "analysis", "inspect", "examine", "investigate"],
    &["monitor", "watch", "observe", "track"],
    &["log", "logs", "output", "console", "stdout", "stderr"],
    &[
        "error",
        "exception",
        "crash",
        "failure",
        "failed",
        "fail",
        "broken",
        "bug",
    ],
    &[
        "health",
        "healthy",
        "status",
        "crashing",
        "crash",
        "unhealthy",
    ],
    &[
        "current",
        "now",
        "right now",
        "present",
        "latest",
        "live",
        "today",
        "up to date",
        "up-to-date",
    ],
    // Things.
    &[
        "pull request",
        "pr",
        "merge request",
        "mr",
        "change request",
        "patch",
    ],
    &[
        "issue", "ticket", "bug", "task", "story", "defect", "problem",
    ],
    &["repository", "repo", "project", "codebase", "source code"],
    &["directory", "folder", "dir"],
    &["file", "document", "doc"],
    &[
        "message",
        "msg",
        "chat",
        "dm",
        "direct message",
        "text",
        "post",
    ],
    &["channel", "room", "group", "conversation"],
    &["thread", "replies", "conversation"],
    &["kubernetes", "k8s", "kube", "kubectl", "cluster"],
    &["pod", "container", "workload"],
    &["deployment", "deploy", "rollout"],
    &["namespace", "ns"],
    &["context", "kubeconfig", "cluster"],
    &["container", "docker", "image"],
    &["database", "db", "sql", "table"],
    &["postgres", "postgresql", "psql", "pg"],
    &["mysql", "mariadb"],
    &["sqlite", "sqlite3"],
    &["redis", "cache", "key value"],
    &["javascript", "js", "node", "script"],
    &["typescript", "ts"],
    &["python", "py"],
    &[
        "configuration",
        "config",
        "cfg",
        "setting",
        "settings",
        "preference",
        "option",
    ],
    &[
        "credential",
        "creds",
        "secret",
        "token",
        "password",
        "api key",
        "key",
    ],
    &["environment", "env", "variable", "var"],
    &[
        "documentation",
        "docs",
        "doc",
        "manual",
        "reference",
        "guide",
        "api reference",
    ],
    &["commit", "changeset", "revision", "change"],
    &["branch", "feature branch"],
    &["history", "log", "commits", "timeline", "past"],
    &["stage", "staged", "add", "index"],
    &["checkout", "switch", "change to"],
    &["blame", "annotate", "who changed", "author", "line history"],
    &["release", "version", "tag"],
    &[
        "workflow", "action", "actions", "pipeline", "ci", "job", "build",
    ],
    &["ci", "continuous integration", "pipeline", "build"],
    &[
        "image",
        "picture",
        "photo",
        "img",
        "pic",
        "graphic",
        "illustration",
        "drawing",
    ],
    &["draw", "plot", "chart", "graph", "visualize", "diagram"],
    &["chart", "graph", "plot", "visualization"],
    &["email", "mail", "gmail", "e-mail", "inbox", "message"],
    &["event", "meeting", "appointment", "calendar"],
    &[
        "user", "account", "member", "person", "people", "profile", "me", "myself",
    ],
    &[
        "whoami",
        "who am i",
        "me",
        "current user",
        "myself",
        "my profile",
    ],
    &["team", "group", "org", "organization"],
    &["weather", "forecast", "temperature", "rain", "climate"],
    &["stock", "ticker", "share", "equity", "quote"],
    &["currency", "money", "exchange", "fx", "rate", "forex"],
    &["web", "internet", "online", "website", "site", "google"],
    &["page", "tab", "website", "site", "webpage", "web page"],
    &[
        "url", "link", "address", "website", "uri", "http", "https", "href",
    ],
    &["browser", "chrome", "chromium", "firefox", "webpage"],
    &[
        "terminal",
        "shell",
        "command line",
        "cli",
        "bash",
        "console",
    ],
    &["process", "pid", "program", "task"],
    &[
        "time",
        "clock",
        "timezone",
        "time zone",
        "hour",
        "date",
        "now",
    ],
    &["dialog", "alert", "popup", "prompt", "confirm", "modal"],
    &[
        "form", "field", "input", "textbox", "text box", "signup", "sign up",
    ],
    &["button", "link", "element"],
    &[
        "dropdown",
        "drop down",
        "select",
        "combobox",
        "option",
        "menu",
    ],
    &["key", "keyboard", "keystroke", "shortcut"],
    &["cookie", "cookies"],
    &[
        "local storage",
        "localstorage",
        "storage",
        "session storage",
    ],
    &[
        "network", "request", "requests", "traffic", "http", "fetch", "xhr",
    ],
    &[
        "performance",
        "perf",
        "speed",
        "trace",
        "profile",
        "profiling",
        "slow",
    ],
    &["memory", "heap", "ram", "leak"],
    &["accessibility", "a11y", "aria", "screen reader"],
    &["pdf", "portable document"],
    &["spreadsheet", "excel", "sheet", "xlsx", "csv", "workbook"],
    &["word", "docx", "word document"],
    &[
        "presentation",
        "powerpoint",
        "pptx",
        "slide",
        "slides",
        "deck",
    ],
    &["note", "notes", "notebook", "page", "memo"],
    &["wiki", "confluence", "knowledge base", "kb"],
    &[
        "knowledge graph",
        "graph",
        "entity",
        "entities",
        "relation",
        "observation",
        "memory",
    ],
    &[
        "paper",
        "papers",
        "article",
        "research",
        "arxiv",
        "publication",
    ],
    &["article", "wikipedia", "encyclopedia", "entry"],
    &["video", "youtube", "clip"],
    &["audio", "sound", "voice", "speech"],
    &[
        "map", "maps", "location", "place", "places", "geo", "address",
    ],
    &[
        "coffee shop",
        "cafe",
        "restaurant",
        "place",
        "business",
        "point of interest",
    ],
    &["elevation", "altitude", "height"],
    &["invoice", "bill", "billing"],
    &["customer", "client", "buyer"],
    &["subscription", "plan", "recurring"],
    &["balance", "funds", "account balance"],
    &[
        "vulnerability",
        "vulnerabilities",
        "cve",
        "security",
        "advisory",
        "alert",
        "dependabot",
    ],
    &["code smell", "smell", "quality", "issue", "lint", "sonar"],
    &["quality gate", "gate", "quality"],
    &["test", "tests", "unit test", "spec", "testing"],
    &["simulator", "emulator", "sim", "device"],
    &["iphone", "ios", "ipad", "apple"],
    &["android", "apk"],
    &["app", "application"],
    &["sprint", "iteration", "board", "scrum", "agile"],
    &[
        "worklog",
        "work log",
        "time tracking",
        "log work",
        "hours",
        "time spent",
    ],
    &[
        "transition",
        "move",
        "status",
        "state",
        "done",
        "close",
        "resolve",
    ],
    &["jql", "jira query"],
    &["cypher", "graph query", "neo4j"],
    &["shell command", "command", "terminal"],
    &["news", "stories", "headlines", "top stories"],
    &["helm", "chart", "helm chart"],
    &["port forward", "port-forward", "forward", "tunnel"],
    &["manifest", "yaml", "spec", "resource"],
    &["gist", "snippet", "paste"],
    &["notification", "notifications", "alert", "inbox", "unread"],
    &["review", "reviewer", "code review", "approval"],
    &["label", "tag"],
    &["secret", "vault"],
    &["log 2 hours", "worklog"],
];

/// A phrase's tokens: stemmed, stop words kept when the phrase is nothing
/// else ("me"), dropped otherwise ("who am i" → "am").
fn phrase_tokens(phrase: &str) -> Vec<String> {
    let t = tokens(phrase);
    if t.is_empty() {
        super::text::words(phrase)
            .iter()
            .map(|w| super::text::stem(w))
            .collect()
    } else {
        t
    }
}

struct Lexicon {
    /// Tokens of each phrase, by group.
    groups: Vec<Vec<Vec<String>>>,
    /// First token of a phrase → (group, phrase) where it starts.
    starts: HashMap<String, Vec<(usize, usize)>>,
}

fn lexicon() -> &'static Lexicon {
    static LEXICON: OnceLock<Lexicon> = OnceLock::new();
    LEXICON.get_or_init(|| {
        let groups: Vec<Vec<Vec<String>>> = GROUPS
            .iter()
            .map(|g| {
                g.iter()
                    .map(|p| phrase_tokens(p))
                    .filter(|t| !t.is_empty())
                    .collect()
            })
            .collect();
        let mut starts: HashMap<String, Vec<(usize, usize)>> = HashMap::default();
        for (gi, g) in groups.iter().enumerate() {
            for (pi, p) in g.iter().enumerate() {
                starts.entry(p[0].clone()).or_default().push((gi, pi));
            }
        }
        Lexicon { groups, starts }
    })
}

/// A span of the query that the vocabulary knows, and what else it can mean.
#[derive(Clone, Debug, PartialEq)]
pub struct Meaning {
    /// First query token of the span.
    pub start: usize,
    /// Tokens in the span.
    pub len: usize,
    /// The other members of its groups (token sequences).
    pub alternatives: Vec<Vec<String>>,
}

/// Prepares the vocabulary now (index build time) rather than on the first query.
pub fn warm_up() {
    lexicon();
}

/// Every span of `query` that is a phrase of some group, longest first at each
/// position, with the other members of all its groups.
pub fn meanings(query: &[String]) -> Vec<Meaning> {
    let lex = lexicon();
    let mut out: Vec<Meaning> = Vec::new();
    for start in 0..query.len() {
        let Some(candidates) = lex.starts.get(&query[start]) else {
            continue;
        };
        let mut by_len: HashMap<usize, Vec<Vec<String>>> = HashMap::default();
        for &(gi, pi) in candidates {
            let phrase = &lex.groups[gi][pi];
            if query.get(start..start + phrase.len()) != Some(phrase.as_slice()) {
                continue;
            }
            let alts = by_len.entry(phrase.len()).or_default();
            for other in &lex.groups[gi] {
                if other != phrase && !alts.contains(other) {
                    alts.push(other.clone());
                }
            }
        }
        let mut lens: Vec<usize> = by_len.keys().copied().collect();
        lens.sort_unstable_by(|a, b| b.cmp(a));
        for len in lens {
            out.push(Meaning {
                start,
                len,
                alternatives: by_len.remove(&len).unwrap_or_default(),
            });
        }
    }
    out
}

/// The other members of every group `query` mentions.
#[cfg(test)]
pub fn expand(query: &[String]) -> Vec<Vec<String>> {
    let mut all: Vec<Vec<String>> = Vec::new();
    for m in meanings(query) {
        for a in m.alternatives {
            if !all.contains(&a) {
                all.push(a);
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(q: &str) -> Vec<String> {
        expand(&tokens(q))
            .into_iter()
            .map(|p| p.join(" "))
            .collect()
    }

    fn has(q: &str, phrase: &str) -> bool {
        expanded(q).contains(&tokens(phrase).join(" "))
    }

    #[test]
    fn abbreviations_and_phrases_meet() {
        assert!(
            has("raise a PR", "pull request")
                && has("raise a PR", "merge request")
                && has("raise a PR", "create")
        );
        assert!(has("merge request", "pr"));
        assert!(has("k8s pods", "kubernetes"));
        assert!(has("ls the folder", "list") && has("ls the folder", "directory"));
        assert!(has("grep for TODO", "search"));
        assert!(has("DM someone", "direct message"));
    }

    #[test]
    fn unknown_words_expand_to_nothing() {
        assert!(expanded("zebra quokka").is_empty());
    }

    #[test]
    fn every_phrase_has_tokens() {
        let lex = lexicon();
        assert!(
            lex.groups.iter().all(|g| g.len() >= 2),
            "a group needs two members"
        );
    }
}
