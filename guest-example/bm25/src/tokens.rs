//! Identifier-aware tokens: `createIssue`, `create_issue`, `create-issue` and
//! `create.issue` all give `create`, `issue`; letters and digits split
//! (`ec2` → `ec`, `2`); a few common English endings are removed.

/// Words too common to say anything.
const STOP: &[&str] = &[
    "a", "an", "the", "of", "to", "for", "in", "on", "and", "or", "is", "it", "me", "my", "i",
    "you", "your", "with", "from", "by", "at", "be", "this", "that", "please", "can", "are", "as",
    "all", "any",
];

/// Light stemming: plural and verb endings, so `issues`/`issue` and
/// `listing`/`list` meet.
pub fn stem(word: &str) -> String {
    let w = word;
    let n = w.len();
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..n - 3]);
    }
    if n > 5 && w.ends_with("ing") {
        return w[..n - 3].to_string();
    }
    if n > 4 && w.ends_with("ed") && !w.ends_with("eed") {
        return w[..n - 2].to_string();
    }
    if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") {
        return w[..n - 1].to_string();
    }
    w.to_string()
}

/// Splits text into lowercase, stemmed tokens (stop words dropped).
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = word.to_lowercase();
            if !STOP.contains(&w.as_str()) {
                out.push(stem(&w));
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut word, &mut out);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let camel = p.is_lowercase() && c.is_uppercase();
            let digit_edge = p.is_ascii_digit() != c.is_ascii_digit();
            if camel || digit_edge {
                flush(&mut word, &mut out);
            }
        }
        word.push(c);
        prev = Some(c);
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_of_every_style_agree() {
        for s in [
            "createIssue",
            "create_issue",
            "create-issue",
            "create.issue",
            "CreateIssue",
            "create issues",
        ] {
            assert_eq!(tokenize(s), vec!["create", "issue"], "{s}");
        }
    }

    #[test]
    fn digits_and_stop_words() {
        assert_eq!(
            tokenize("list the EC2 instances"),
            vec!["list", "ec", "2", "instance"]
        );
        assert_eq!(tokenize("a to the"), Vec::<String>::new());
    }

    #[test]
    fn endings() {
        assert_eq!(stem("repositories"), "repository");
        assert_eq!(stem("listing"), "list");
        assert_eq!(stem("created"), "creat");
        assert_eq!(stem("create"), "create");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("access"), "access");
    }
}
