//! Text to tokens: identifier-aware splitting (snake_case, camelCase, kebab,
//! dotted, letters/digits), lowercase, a few stop words out, light stemming.

/// Words that carry no meaning for tool search.
const STOP: &[&str] = &[
    "a", "an", "the", "of", "to", "for", "in", "on", "and", "or", "is", "it", "its", "me", "my",
    "i", "you", "your", "with", "from", "by", "at", "be", "this", "that", "these", "those",
    "please", "can", "could", "would", "should", "are", "as", "was", "were", "will", "do", "does",
    "did", "we", "our", "us", "some", "into", "onto", "about", "via", "so", "then", "there",
    "here", "what", "which", "who", "how", "want", "need", "like", "just", "let", "lets", "s", "t",
];

/// Is this a stop word (already lowercase)?
pub fn is_stop(word: &str) -> bool {
    STOP.contains(&word)
}

/// Light stemming that maps inflections of one word together:
/// issues/issue, listing/list, created/create/creating, boxes/box.
pub fn stem(word: &str) -> String {
    let w = word;
    if w.len() <= 3 || !w.is_ascii() {
        return w.to_string();
    }
    let mut s = if let Some(base) = w.strip_suffix("ies").filter(|b| b.len() >= 2) {
        format!("{base}y")
    } else if let Some(base) = w.strip_suffix("sses") {
        format!("{base}ss")
    } else if let Some(base) = ["xes", "ches", "shes", "zes"]
        .iter()
        .find_map(|e| w.strip_suffix(e).map(|b| (b, *e)))
    {
        format!("{}{}", base.0, &base.1[..base.1.len() - 2])
    } else if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w[..w.len() - 1].to_string()
    } else {
        w.to_string()
    };
    for ending in ["ing", "ed"] {
        if let Some(base) = s
            .strip_suffix(ending)
            .filter(|b| b.len() >= 3 && b.chars().any(|c| "aeiouy".contains(c)))
        {
            let mut b = base.to_string();
            // running → runn → run
            let bytes = b.as_bytes();
            if bytes.len() >= 2
                && bytes[bytes.len() - 1] == bytes[bytes.len() - 2]
                && !"lsz".contains(bytes[bytes.len() - 1] as char)
            {
                b.pop();
            }
            s = b;
            break;
        }
    }
    // create / creat(ed) / creat(ing) meet at "creat".
    if s.len() > 3 && s.ends_with('e') && !s.ends_with("ee") {
        s.pop();
    }
    s
}

/// Raw words of a text: split at non-alphanumerics, camelCase humps and
/// letter/digit edges; lowercase; no stemming, stop words kept.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev: Option<char> = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        // Chinese and Japanese are written without spaces: a run of ideographs
        // becomes its overlapping pairs ("查询车票" → 查询, 询车, 车票), which
        // match the same words inside any longer run.
        if is_cjk(c) {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            let mut run = vec![c];
            while let Some(&n) = chars.peek().filter(|n| is_cjk(**n)) {
                run.push(n);
                chars.next();
            }
            if run.len() == 1 {
                out.push(c.to_string());
            }
            out.extend(run.windows(2).map(|p| p.iter().collect::<String>()));
            prev = None;
            continue;
        }
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            prev = None;
            continue;
        }
        if let Some(p) = prev {
            let hump = p.is_lowercase() && c.is_uppercase();
            // "HTTPServer" → "HTTP", "Server": an upper followed by upper+lower.
            let acronym_end = p.is_uppercase()
                && c.is_uppercase()
                && chars.peek().is_some_and(|n| n.is_lowercase());
            let digit_edge = p.is_ascii_digit() != c.is_ascii_digit();
            if (hump || acronym_end || digit_edge) && !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
        }
        if c.is_ascii() {
            word.push(c.to_ascii_lowercase());
        } else {
            word.extend(c.to_lowercase());
        }
        prev = Some(c);
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Han ideographs and Japanese kana, which are written without spaces.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // hiragana, katakana
        | 0x3400..=0x4DBF    // CJK extension A
        | 0x4E00..=0x9FFF    // CJK unified ideographs
        | 0xF900..=0xFAFF    // compatibility ideographs
        | 0x20000..=0x2FA1F) // extensions B and later
}

/// Stemmed tokens of a text, stop words removed.
pub fn tokens(text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !is_stop(w))
        .map(|w| stem(&w))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifier_styles_agree() {
        for s in [
            "createIssue",
            "create_issue",
            "create-issue",
            "create.issue",
            "CreateIssue",
            "creating issues",
            "created an issue",
        ] {
            assert_eq!(tokens(s), vec!["creat", "issu"], "{s}");
        }
    }

    #[test]
    fn acronyms_and_digits() {
        assert_eq!(
            words("getHTTPServer ec2"),
            vec!["get", "http", "server", "ec", "2"]
        );
        assert_eq!(
            words("resize to 375x812"),
            vec!["resize", "to", "375", "x", "812"]
        );
    }

    #[test]
    fn ideographs_become_overlapping_pairs() {
        assert_eq!(words("查询车票"), vec!["查询", "询车", "车票"]);
        assert_eq!(words("12306车票 query"), vec!["12306", "车票", "query"]);
        assert_eq!(words("八字"), vec!["八字"]);
        assert_eq!(words("字 a"), vec!["字", "a"]);
        // A query's words meet the same pairs inside a longer description.
        let description = words("查询12306余票信息");
        assert!(words("余票").iter().all(|w| description.contains(w)));
    }

    #[test]
    fn stemming_meets_inflections() {
        let same = |a: &str, b: &str| assert_eq!(stem(a), stem(b), "{a} ~ {b}");
        same("issues", "issue");
        same("repositories", "repository");
        same("listing", "list");
        same("running", "run");
        same("boxes", "box");
        same("matches", "match");
        same("processes", "process");
        same("files", "file");
        same("deleted", "delete");
        same("mapping", "map");
        assert_eq!(stem("status"), "status");
        assert_eq!(stem("access"), "access");
        assert_eq!(stem("git"), "git");
        assert_eq!(stem("analysis"), "analysis");
    }

    #[test]
    fn stop_words_go() {
        assert_eq!(
            tokens("please show me the logs of this pod"),
            vec!["show", "log", "pod"]
        );
    }
}
