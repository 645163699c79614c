//! What the literals in a query imply. "read notes.txt" is about a file even
//! though it never says "file"; "close #34" is about an issue; "acme/web" is a
//! repository; "1.1.1.1" an IP address; "#general" a chat channel; an address
//! is where something is sent, and a file named as where something goes
//! ("save it to report.md") is written. Each shape adds the word it implies as
//! an extra, lighter concept of the query.

/// File name extensions: a query naming `notes.txt` is about a file.
const FILE_EXTENSIONS: &[&str] = &[
    "txt", "md", "json", "yaml", "yml", "toml", "csv", "xml", "html", "css", "js", "ts", "tsx",
    "jsx", "py", "rs", "go", "java", "c", "cpp", "h", "sh", "log", "ini", "cfg", "conf", "env",
    "pdf", "png", "jpg", "jpeg", "gif", "svg", "docx", "xlsx", "pptx", "zip", "tar", "gz", "sql",
    "lock", "rb", "php", "swift", "kt", "wav", "mp3", "mp4", "mov",
];

/// The implied concepts of `query`, each as its alternative words (unstemmed).
/// `known` says whether a word is one the catalog uses, to tell a slug
/// (`acme/web`) from two ordinary words (`read/write`).
pub(crate) fn implied(query: &str, known: &dyn Fn(&str) -> bool) -> Vec<&'static [&'static str]> {
    let literals: Vec<&str> = query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && !matches!(c, '#' | '/' | '@')))
        .filter(|w| !w.is_empty())
        .collect();
    let any = |f: fn(&str) -> bool| literals.iter().any(|w| f(w));
    let mut out: Vec<&'static [&'static str]> = Vec::new();
    if any(is_url) {
        out.push(&["url"]);
    } else if any(is_file_name) {
        out.push(&["file"]);
    } else if any(is_path) {
        out.push(&["directory", "file", "path"]);
    }
    if any(is_issue_key) {
        out.push(&["issue"]);
    } else if any(is_number_ref) {
        // `#120` numbers issues and pull requests alike.
        out.push(&["issue", "pull"]);
    }
    if literals.iter().any(|w| is_slug(w, known)) {
        out.push(&["repository", "repo"]);
    }
    if any(is_ipv4) {
        out.push(&["ip"]);
    }
    if any(is_email) {
        out.push(&["email"]);
        // An address is where something goes: sending is asked for.
        out.push(&["send"]);
    }
    if destination_file(query) {
        // "… to report.md": a file is written.
        out.push(&["write"]);
        out.push(&["path"]);
    }
    if any(is_channel) {
        out.push(&["channel"]);
    }
    if any(is_handle) {
        out.push(&["user"]);
    }
    out
}

/// The query's literal values: file names, paths, URLs and addresses. Their
/// words name things ("./notes/frameworks.md"), not what to do with them.
pub(crate) fn literals(query: &str) -> Vec<&str> {
    query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| matches!(c, ',' | ';' | '`' | '\'' | '"' | ')' | '(')))
        .map(|w| w.trim_end_matches(['.', ':', '?', '!']))
        .filter(|w| is_url(w) || is_file_name(w) || is_path(w) || is_email(w))
        .collect()
}

/// Does the query name a file as where something goes ("save it to
/// report.md", "as signups.csv", "into ./notes/")?
pub(crate) fn destination_file(query: &str) -> bool {
    let words: Vec<&str> = query.split_whitespace().collect();
    words.windows(2).any(|w| {
        let target = w[1]
            .trim_matches(|c: char| matches!(c, ',' | '.' | ';' | '`' | '\'' | '"' | ')' | '('));
        matches!(w[0].to_lowercase().as_str(), "to" | "into" | "as")
            && (is_file_name(target) || is_path(target))
    })
}

/// Does the query name a file or a path (not a URL)?
pub(crate) fn names_file(query: &str) -> bool {
    literals(query)
        .iter()
        .any(|w| !is_url(w) && (is_file_name(w) || is_path(w)))
}

fn is_url(w: &str) -> bool {
    w.starts_with("http://") || w.starts_with("https://") || w.starts_with("www.")
}

/// `notes.txt`, `~/music/track01.wav`.
fn is_file_name(w: &str) -> bool {
    let w = w.trim_end_matches('/');
    w.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && !stem.ends_with('/')
            && FILE_EXTENSIONS.contains(&ext.to_lowercase().as_str())
    })
}

/// `/home/me/src`, `~/project`, `./lib`: a place in a file system.
fn is_path(w: &str) -> bool {
    let rest = w
        .strip_prefix("~/")
        .or_else(|| w.strip_prefix("./"))
        .or_else(|| w.strip_prefix('/'));
    rest.is_some_and(|r| {
        !r.is_empty()
            && r.split('/').all(|p| !p.is_empty() || r.ends_with('/'))
            && r.chars().any(|c| c.is_alphabetic())
    }) && !w.starts_with("//")
}

/// Names of standards and versions that look like issue keys (`SHA-256`).
const NOT_ISSUE_KEYS: &[&str] = &[
    "SHA", "UTF", "ISO", "RFC", "COVID", "GPT", "AES", "RSA", "MD", "PEP", "ES", "IPV", "TLS",
    "HTTP", "ECMA", "IEEE", "X",
];

/// `#42`.
fn is_number_ref(w: &str) -> bool {
    w.starts_with('#') && w.len() > 1 && w[1..].chars().all(|c| c.is_ascii_digit())
}

/// An issue key (`PROJ-12`).
fn is_issue_key(w: &str) -> bool {
    w.split_once('-').is_some_and(|(p, n)| {
        p.len() >= 2
            && !NOT_ISSUE_KEYS.contains(&p)
            && p.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            && !n.is_empty()
            && n.chars().all(|c| c.is_ascii_digit())
    })
}

/// `owner/name`: two parts, no leading slash or dots, not two ordinary words.
fn is_slug(w: &str, known: &dyn Fn(&str) -> bool) -> bool {
    w.split_once('/').is_some_and(|(o, r)| {
        let part = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        part(o) && part(r) && !o.chars().all(|c| c.is_ascii_digit()) && !(known(o) && known(r))
    })
}

fn is_ipv4(w: &str) -> bool {
    let w = w.split_once('/').map_or(w, |(ip, _)| ip); // a CIDR block too
    let parts: Vec<&str> = w.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.parse::<u8>().is_ok())
}

fn is_email(w: &str) -> bool {
    w.split_once('@').is_some_and(|(user, host)| {
        !user.is_empty() && host.contains('.') && !host.starts_with('.') && !host.ends_with('.')
    })
}

/// `#general`, `#team-releases`: a chat channel (a number after `#` is an issue).
fn is_channel(w: &str) -> bool {
    w.strip_prefix('#').is_some_and(|name| {
        name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    })
}

/// `@alice`: a person's handle (an address has a domain after the `@`).
fn is_handle(w: &str) -> bool {
    w.strip_prefix('@').is_some_and(|name| {
        name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && !name.ends_with('.')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(q: &str) -> Vec<&'static str> {
        implied(q, &|w| ["read", "write", "files"].contains(&w))
            .into_iter()
            .map(|alts| alts[0])
            .collect()
    }

    #[test]
    fn each_shape_and_its_look_alikes() {
        assert_eq!(shapes("summarize notes.txt"), ["file"]);
        assert_eq!(shapes("tempo of ~/music/track01.wav"), ["file"]);
        assert_eq!(shapes("open https://example.com/a.html"), ["url"]);
        assert_eq!(shapes("move OPS-17 to done"), ["issue"]);
        assert_eq!(shapes("close #34"), ["issue"]);
        assert_eq!(shapes("stars of facebook/react"), ["repository"]);
        assert_eq!(shapes("who owns 1.1.1.1?"), ["ip"]);
        assert_eq!(shapes("hosts in 10.0.0.0/8"), ["ip"]);
        assert_eq!(shapes("grep TODO in /home/me/project/src"), ["directory"]);
        assert_eq!(shapes("what is in ~/Downloads"), ["directory"]);
        assert_eq!(shapes("mail bob@example.com"), ["email", "send"]);
        assert_eq!(shapes("save it to ./notes/a.md"), ["file", "write", "path"]);
        assert_eq!(
            shapes("store the list as trials.md"),
            ["file", "write", "path"]
        );
        assert_eq!(shapes("summarize notes.md for me"), ["file"]);
        assert_eq!(shapes("tell #team-releases we shipped"), ["channel"]);
        assert_eq!(shapes("ping @alice about it"), ["user"]);
        // Look-alikes that are none of these.
        assert!(shapes("read/write files").is_empty());
        assert!(shapes("50/50, // a comment, /").is_empty());
        assert!(shapes("version 1.2.3 of node 20").is_empty());
        assert!(shapes("the 3/4 mark, on 2024/05").is_empty());
        assert!(shapes("Mr. Smith @ home").is_empty());
        assert!(shapes("C# and F# code, @ 5pm, # of rows").is_empty());
        assert!(shapes("COVID-19 figures for 999.1.1.1").is_empty());
    }

    #[test]
    fn literals_are_file_names_paths_urls_and_addresses() {
        assert_eq!(
            literals("write the versions to ./notes/frameworks.md, please."),
            ["./notes/frameworks.md"]
        );
        assert_eq!(
            literals("open https://shop.example.com and mail bob@example.com."),
            ["https://shop.example.com", "bob@example.com"]
        );
        assert!(literals("save the notes of version 1.2.3").is_empty());
    }
}
