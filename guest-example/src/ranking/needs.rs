//! A task's needs: the clauses of a query that each ask for something. An
//! agent searches with the task it was given ("find the most-starred Rust
//! repositories about tracing, compare their licences and save a table to
//! `report.md`"), and such a task needs a tool per clause. The clauses are
//! cut where a sentence ends, at `;`, at "then", and at "and" or a comma
//! before a verb of action; never at the period of an abbreviation ("e.g.",
//! "U.S.") nor inside a name ("Node.js", "report.md"), and a clause that
//! asks for nothing ("please", "when you're done") is no need.

/// Verbs an agent is told to do: a clause starts where one follows "and",
/// a comma or "then".
const ACTIONS: &[&str] = &[
    "add",
    "analyse",
    "analyze",
    "archive",
    "assign",
    "attach",
    "book",
    "calculate",
    "capture",
    "chart",
    "check",
    "click",
    "close",
    "commit",
    "compare",
    "compile",
    "compute",
    "convert",
    "copy",
    "count",
    "create",
    "delete",
    "deploy",
    "describe",
    "download",
    "draft",
    "draw",
    "edit",
    "email",
    "export",
    "extract",
    "fetch",
    "file",
    "fill",
    "find",
    "forward",
    "generate",
    "get",
    "grab",
    "import",
    "install",
    "invite",
    "label",
    "list",
    "locate",
    "log",
    "look",
    "mail",
    "merge",
    "message",
    "move",
    "navigate",
    "notify",
    "open",
    "paste",
    "pay",
    "ping",
    "plot",
    "post",
    "print",
    "publish",
    "pull",
    "push",
    "put",
    "query",
    "read",
    "record",
    "remember",
    "remind",
    "remove",
    "rename",
    "render",
    "reply",
    "report",
    "restart",
    "review",
    "run",
    "save",
    "schedule",
    "scrape",
    "search",
    "send",
    "set",
    "share",
    "show",
    "sort",
    "start",
    "stop",
    "store",
    "submit",
    "summarise",
    "summarize",
    "sync",
    "tag",
    "take",
    "tell",
    "test",
    "text",
    "track",
    "translate",
    "tweet",
    "update",
    "upload",
    "visit",
    "write",
];

/// An action verb followed by one of these words is a noun ("pull
/// requests", "log files"), and starts no clause.
const NOUN_USES: &[(&str, &[&str])] = &[
    ("pull", &["request", "requests"]),
    ("merge", &["request", "requests", "conflict", "conflicts"]),
    ("push", &["notification", "notifications"]),
    (
        "test",
        &[
            "case", "cases", "result", "results", "suite", "suites", "run", "runs",
        ],
    ),
    (
        "log",
        &[
            "file", "files", "entry", "entries", "line", "lines", "message", "messages",
        ],
    ),
    (
        "search",
        &["result", "results", "engine", "engines", "history"],
    ),
    (
        "file",
        &["name", "names", "path", "paths", "size", "sizes", "system"],
    ),
    ("text", &["file", "files", "message", "messages"]),
    ("report", &["file", "files"]),
];

/// Words that end in a period without ending a sentence.
const ABBREVIATIONS: &[&str] = &[
    "e.g", "i.e", "etc", "vs", "approx", "incl", "no", "nr", "dr", "mr", "mrs", "ms", "st", "jan",
    "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "fig", "inc",
    "ltd", "co", "corp", "dept", "est", "min", "max", "u.s", "u.k", "e.u", "a.m", "p.m",
];

/// Words that ask for nothing: a clause of these alone is no need.
const FILLER: &[&str] = &[
    "a", "all", "also", "an", "and", "are", "as", "be", "below", "can", "could", "do", "done",
    "finally", "first", "for", "from", "good", "great", "i", "if", "in", "is", "it", "it's", "its",
    "just", "kindly", "let", "make", "me", "my", "nice", "now", "of", "ok", "okay", "on", "once",
    "please", "readable", "really", "so", "sure", "thank", "thanks", "that", "the", "then",
    "there", "this", "to", "up", "us", "we", "when", "with", "would", "you", "you're", "your",
];

/// The clauses of `query` that each ask for something, in the order the
/// query states them; one (the query itself) when it states one need.
pub(super) fn split(query: &str) -> Vec<String> {
    let mut clauses = Vec::new();
    for sentence in sentences(query) {
        clauses.extend(clauses_of(&sentence));
    }
    clauses.retain(|c| asks_for_something(c));
    if clauses.is_empty() {
        return vec![query.trim().to_string()];
    }
    clauses
}

/// The sentences of `text`: cut after `.`, `?`, `!` or `;` followed by white
/// space (not after an abbreviation), and at line ends.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c == '\n' {
            out.push(std::mem::take(&mut current));
            continue;
        }
        current.push(c);
        let next_is_space = chars.get(i + 1).is_none_or(|n| n.is_whitespace());
        let ends = match c {
            '?' | '!' | ';' => next_is_space,
            '.' => next_is_space && !ends_in_abbreviation(&current),
            _ => false,
        };
        if ends {
            out.push(std::mem::take(&mut current));
        }
    }
    out.push(current);
    out.into_iter()
        .map(|s| trim_clause(&s).to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Does `text` (ending in a period) end with an abbreviation?
fn ends_in_abbreviation(text: &str) -> bool {
    let body = text.trim_end_matches('.');
    let last = body
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_lowercase();
    ABBREVIATIONS.contains(&last.as_str())
        // One letter ("J. Smith") or initials ("U.S.A.").
        || (last.len() == 1 && last.chars().all(char::is_alphabetic))
        || (last.len() > 2 && last.split('.').all(|p| p.chars().count() == 1))
}

/// The clauses of one sentence: cut before "then", and before "and" or a
/// comma when an action verb follows.
fn clauses_of(sentence: &str) -> Vec<String> {
    let words: Vec<&str> = sentence.split_whitespace().collect();
    let mut out = Vec::new();
    let mut current: Vec<&str> = Vec::new();
    for (i, &word) in words.iter().enumerate() {
        let bare = bare(word);
        let after = |k: usize| words.get(i + k).map(|w| self::bare(w));
        let cut_here = !current.is_empty()
            && match bare.as_str() {
                "then" => true,
                "and" | "&" => match after(1).as_deref() {
                    Some("then") => true,
                    Some(next) => {
                        is_action(next)
                            && !noun_use(next, after(2).as_deref())
                            && content_words(&current) >= 2
                    }
                    None => false,
                },
                _ => false,
            };
        let comma_before = current.last().is_some_and(|w| w.ends_with(','));
        let cut_at_comma = !current.is_empty()
            && comma_before
            && is_action(&bare)
            && !noun_use(&bare, after(1).as_deref())
            && content_words(&current) >= 2;
        if cut_here || cut_at_comma {
            out.push(current.join(" "));
            current.clear();
        }
        if !(cut_here && matches!(bare.as_str(), "and" | "&" | "then")) {
            current.push(word);
        }
    }
    out.push(current.join(" "));
    out.into_iter()
        .map(|c| trim_clause(&c).to_string())
        .filter(|c| !c.is_empty())
        .collect()
}

/// Is `verb` followed by `next` a noun ("pull requests")?
fn noun_use(verb: &str, next: Option<&str>) -> bool {
    let Some(next) = next else { return false };
    NOUN_USES
        .iter()
        .any(|(v, nouns)| *v == verb && nouns.contains(&next))
}

/// Words that lead a clause without being part of what it asks.
const LEADS: &[&str] = &[
    "and",
    "&",
    "then",
    "please",
    "also",
    "finally",
    "next",
    "afterwards",
];

/// A clause without the punctuation and joining words at its ends.
fn trim_clause(text: &str) -> &str {
    let punctuation = |c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '-');
    let mut t = text.trim_matches(punctuation);
    loop {
        let first = t.split_whitespace().next().unwrap_or("");
        if first.is_empty() || !LEADS.contains(&bare(first).as_str()) || first == t {
            break;
        }
        t = t[first.len()..].trim_start_matches(punctuation);
    }
    t.trim_end_matches(['.', '!', '?']).trim()
}

/// A word without the punctuation around it, lowercase.
fn bare(word: &str) -> String {
    word.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'' && c != '&')
        .to_lowercase()
}

/// Is `word` (bare) a verb of action, in any common form?
fn is_action(word: &str) -> bool {
    ACTIONS.contains(&word)
        || ["s", "es"].iter().any(|e| {
            word.strip_suffix(e)
                .is_some_and(|base| ACTIONS.contains(&base))
        })
}

/// How many words of `words` carry meaning.
fn content_words(words: &[&str]) -> usize {
    words
        .iter()
        .filter(|w| {
            let b = bare(w);
            !b.is_empty() && !FILLER.contains(&b.as_str())
        })
        .count()
}

/// Does a clause ask for something: a word beyond the filler?
fn asks_for_something(clause: &str) -> bool {
    let words: Vec<&str> = clause.split_whitespace().collect();
    content_words(&words) > 0
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn one_need_is_the_query_itself() {
        assert_eq!(split("take a screenshot"), vec!["take a screenshot"]);
        assert_eq!(split("  list my open PRs  "), vec!["list my open PRs"]);
    }

    #[test]
    fn a_task_is_cut_at_each_action() {
        assert_eq!(
            split(
                "find the three most-starred Rust repositories about tracing, compare their licences and save a table to report.md"
            ),
            vec![
                "find the three most-starred Rust repositories about tracing",
                "compare their licences",
                "save a table to report.md",
            ]
        );
        assert_eq!(
            split("Get the weather in Paris; then email it to Bob."),
            vec!["Get the weather in Paris", "email it to Bob"]
        );
        assert_eq!(
            split("Query the orders table and then plot revenue per month"),
            vec!["Query the orders table", "plot revenue per month"]
        );
    }

    #[test]
    fn names_and_abbreviations_keep_their_periods() {
        assert_eq!(
            split("Upgrade Node.js in the repo, e.g. to v22. Then post a note in #dev"),
            vec![
                "Upgrade Node.js in the repo, e.g. to v22",
                "post a note in #dev"
            ]
        );
        assert_eq!(
            split("Look up U.S. GDP figures and write them to ./notes/gdp.txt"),
            vec!["Look up U.S. GDP figures", "write them to ./notes/gdp.txt"]
        );
    }

    #[test]
    fn and_between_things_is_no_cut() {
        assert_eq!(
            split("search issues and pull requests mentioning the crash"),
            vec!["search issues and pull requests mentioning the crash"]
        );
        // One word before "and" is not a need of its own.
        assert_eq!(
            split("find and replace TODO in main.rs"),
            vec!["find and replace TODO in main.rs"]
        );
    }

    #[test]
    fn filler_is_no_need() {
        assert_eq!(
            split("Please list the pods in staging. Thanks! Make sure it's readable."),
            vec!["list the pods in staging"]
        );
        assert_eq!(split("please"), vec!["please"]);
    }
}
