use super::words::{self, split, stem};
use super::*;
use crate::catalog::Tool;
use std::sync::Arc;

fn entry(server: &str, tool: &str, description: &str) -> Entry {
    Entry {
        name: format!("{server}__{tool}"),
        tool: Arc::new(Tool::new(server, tool, description)),
    }
}

/// Servers with their tools, each tool `(name, description)`.
fn catalog(servers: &[(&str, &[(&str, &str)])]) -> Vec<Entry> {
    servers
        .iter()
        .flat_map(|(s, tools)| tools.iter().map(move |(t, d)| entry(s, t, d)))
        .collect()
}

fn groups<'a>(entries: &'a [Entry], keywords: &'a [String]) -> Vec<Group<'a>> {
    let mut groups: Vec<Group<'a>> = Vec::new();
    for e in entries {
        match groups.last_mut() {
            Some(g) if g.server == e.tool.server => g.tools.push(e),
            _ => groups.push(Group {
                server: &e.tool.server,
                keywords: if e.tool.server == "kw" { keywords } else { &[] },
                tools: vec![e],
            }),
        }
    }
    groups
}

const GIT: &[(&str, &str)] = &[
    ("git_commit", "Records changes to the repository"),
    ("git_diff", "Shows the differences between commits"),
    ("git_branch", "Creates a branch"),
];
const ISSUES: &[(&str, &str)] = &[
    ("create_issue", "Create a new issue in a repository"),
    ("list_issues", "List the issues of a repository"),
    ("add_issue_comment", "Comment on an issue"),
    ("create_pull_request", "Open a pull request"),
];

#[test]
fn shared_prefixes_end_at_a_separator() {
    assert_eq!(
        shared_prefix(&["github__create_issue", "github__list_issues"]),
        "github__"
    );
    assert_eq!(
        shared_prefix(&["t12306__get-current-date", "t12306__get-tickets"]),
        "t12306__get-"
    );
    assert_eq!(
        shared_prefix(&["abc", "abd"]),
        "",
        "no separator, no prefix"
    );
    assert_eq!(shared_prefix(&["a_", "a_b"]), "", "no name is all prefix");
    assert_eq!(shared_prefix(&["s__é1", "s__é2"]), "s__");
    assert_eq!(shared_prefix(&[]), "");
}

#[test]
fn names_share_their_prefix_once() {
    assert_eq!(
        grouped("github", &["github__create_issue", "github__list_issues"]),
        "github__{create_issue, list_issues}"
    );
    // One tool, or names with nothing in common: the server, then the names.
    assert_eq!(grouped("time", &["time__now"]), "time: time__now");
    assert_eq!(grouped("x", &["alpha", "beta"]), "x: alpha, beta");
}

#[test]
fn the_richest_form_that_fits_is_taken() {
    let entries = catalog(&[("git", GIT), ("github", ISSUES)]);
    let g = groups(&entries, &[]);
    let said = said_of(&g);
    let (form, text) = outline(&g, 10_000, || &said);
    assert_eq!(form, Form::Described);
    assert!(
        text.contains("\n- github__create_issue: Create a new issue in a repository"),
        "{text}"
    );
    let (form, text) = outline(&g, 200, || &said);
    assert_eq!(form, Form::Names, "{text}");
    assert!(
        text.contains("\n- git__git_{commit, diff, branch}"),
        "{text}"
    );
    assert!(text.len() <= 200);
    let (form, text) = outline(&g, 60, || &said);
    assert_eq!(form, Form::Servers, "{text}");
    assert!(text.len() <= 60, "{} bytes: {text}", text.len());
    assert!(text.contains("github") && text.contains("git"), "{text}");
    assert_eq!(
        outline(&[], 100, || &said),
        (Form::Described, String::new())
    );
}

#[test]
fn servers_come_most_tools_first_named_before_described() {
    let entries = catalog(&[("git", GIT), ("github", ISSUES)]);
    let g = groups(&entries, &[]);
    // Room for the names and a word each.
    let named = servers(&g, 60, &said_of(&g));
    assert!(named.complete);
    let text = &named.text;
    assert!(
        text.find("github").unwrap() < text.find("; git").unwrap(),
        "{text}"
    );
    assert!(text.len() <= 60, "{} bytes: {text}", text.len());
    assert!(
        named
            .shown
            .iter()
            .all(|s| s.as_ref().is_some_and(|w| w.len() == 1)),
        "{text}"
    );
    // With room to spare, more words and each server's count.
    let roomy = servers(&g, 400, &said_of(&g));
    assert!(roomy.text.contains("github (4): "), "{}", roomy.text);
    assert!(roomy.text.contains("git (3): "), "{}", roomy.text);
}

#[test]
fn servers_that_do_not_fit_are_counted() {
    let mut spec: Vec<(String, Vec<(&str, &str)>)> = Vec::new();
    for i in 0..40 {
        spec.push((format!("server{i:02}"), vec![("t", ""); 40 - i]));
    }
    let spec: Vec<(&str, &[(&str, &str)])> = spec
        .iter()
        .map(|(s, t)| (s.as_str(), t.as_slice()))
        .collect();
    let entries = catalog(&spec);
    let g = groups(&entries, &[]);
    let fitted = servers(&g, 150, &said_of(&g));
    assert!(!fitted.complete);
    assert!(fitted.text.len() <= 150, "{}", fitted.text);
    let shown = fitted.shown.iter().filter(|s| s.is_some()).count();
    assert!(
        fitted
            .text
            .ends_with(&format!("; and {} more servers", 40 - shown)),
        "{}",
        fitted.text
    );
    // The biggest servers are the ones named.
    assert!(fitted.shown[..shown].iter().all(Option::is_some));
    assert!(fitted.text.contains("server00"));
    assert_eq!(servers(&g, 20, &said_of(&g)).text, "", "not one name fits");
}

#[test]
fn search_keywords_are_said_of_their_server() {
    let entries = catalog(&[("kw", GIT), ("github", ISSUES)]);
    let keywords = ["version control".to_string()];
    let g = groups(&entries, &keywords);
    let text = servers(&g, 400, &said_of(&g)).text;
    assert!(text.contains("kw (3): version control"), "{text}");
}

#[test]
fn words_tell_servers_apart() {
    let tools = |server, list: &'static [(&str, &str)]| words::Tools {
        server,
        tools: list.to_vec(),
    };
    let said = words::of_servers(&[tools("git", GIT), tools("github", ISSUES)], 3);
    assert_eq!(said[1][0], "issue", "{said:?}");
    assert!(said[1].contains(&"pull".to_string()), "{said:?}");
    // The server's own name, and words common to all tools, say nothing.
    assert!(
        said[0].iter().all(|w| !w.contains("git") && w != "create"),
        "{said:?}"
    );
    assert!(said[0].contains(&"commit".to_string()), "{said:?}");
}

#[test]
fn words_split_identifiers_and_fold_plurals() {
    let split: Vec<String> = split("get_pullRequest-by ID").collect();
    assert_eq!(split, ["get", "pull", "request", "by", "id"]);
    assert_eq!(stem("entities"), "entity");
    assert_eq!(stem("issues"), "issue");
    assert_eq!(stem("class"), "class");
}
