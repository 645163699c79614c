//! The default scoring: BM25F over identifier-aware tokens in several fields,
//! with the query widened by developer vocabulary, corrected for typos, and
//! tilted towards the servers it names.
//!
//! Everything that depends only on the catalog — field statistics, each
//! (term, tool) weight, the typo neighbourhoods — is computed when the index is
//! built, so a query adds up a few posting lists.

use super::Hit;
use super::fasthash::{FastMap as HashMap, FastSet};
use super::lexicon;
use super::shapes;
use super::text::{self, stem, tokens, words};
use super::typo::Typos;
use crate::model::Entry;

/// The profile name of this scorer.
pub const PROFILE: &str = "default";

/// Fields of a tool, in index order: name, title, server, description,
/// parameter names, parameter descriptions.
const FIELDS: usize = 6;
/// How much a match in each field counts.
const WEIGHT: [f32; FIELDS] = [3.0, 2.0, 1.5, 1.0, 0.6, 0.25];
/// Length normalisation per field (0: none, 1: full).
const B: [f32; FIELDS] = [0.2, 0.2, 0.0, 0.75, 0.5, 0.5];
/// Term-frequency saturation.
const K1: f32 = 1.2;

/// Weights of a concept's alternatives, by where they came from (its own words weigh 1).
const W_CONCAT: f32 = 0.9;
const W_TYPO: f32 = 0.75;
const W_TYPO_SURE: f32 = 0.95;
const W_SYNONYM: f32 = 0.6;
const W_PHRASE_SYNONYM: f32 = 0.8;
const W_IMPLIED: f32 = 0.7;
const W_NUMBER: f32 = 0.3;
/// Extra weight for tools of a server the query names.
const SERVER_BOOST: f32 = 1.35;
/// How much of a tool's score depends on how much of its name the query explains.
const COVERAGE: f32 = 0.25;
/// Server-name words too generic to mean "this server".
const GENERIC_SERVER_WORDS: &[&str] = &[
    "mcp", "server", "api", "tool", "tools", "model", "context", "protocol", "simple", "client",
    "kit",
];

pub struct HybridIndex {
    /// term → (tool, BM25F weight of the term in that tool).
    postings: HashMap<String, Vec<(u32, f32)>>,
    /// tool → the words of its name that say what it does (not its server's name).
    name_words: Vec<Vec<String>>,
    /// tool → server number.
    server_of: Vec<u32>,
    /// word → servers whose name (or keywords) contain it.
    servers_by_word: HashMap<String, Vec<u32>>,
    /// Typo neighbourhoods of the catalog's words as written (not stemmed).
    typos: Typos,
}

/// The string literals of a JSON text, in order: each as the offset of its
/// closing quote (the text's length when it never closes) and its contents as
/// written (escapes are not decoded). Total: any text, however malformed or
/// cut short, yields literals, never a panic.
fn string_literals(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut literals = Vec::new();
    let mut i = 0;
    while let Some(open) = bytes
        .get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'"'))
    {
        let start = i + open + 1;
        let mut end = start;
        // An escape skips the byte after the backslash, so `\"` does not close the string.
        while let Some(&b) = bytes.get(end) {
            match b {
                b'"' => break,
                b'\\' => end += 2,
                _ => end += 1,
            }
        }
        // A closing quote is an ASCII byte, hence a char boundary; so is the end of the text.
        let end = end.min(bytes.len());
        literals.push((end, text.get(start..end).unwrap_or("")));
        i = end + 1;
    }
    literals
}

/// Parameter names and descriptions from a JSON Schema text, as two texts of
/// words: names are the keys whose value is an object (the parameters, at any
/// depth) other than the keywords that hold such objects (`properties`,
/// `items`, ...); text is every `description` string and the choices of every
/// `enum`.
///
/// A scan of the string literals rather than a JSON parser: no dependency in
/// the guest, no tree built for each tool, and malformed or truncated text is
/// read as far as it makes sense (a literal that never closes is no key, but
/// can still be a description) instead of being refused or trapping.
fn schema_fields(schema: &str) -> (String, String) {
    let mut names = String::new();
    let mut text = String::new();
    let strings = string_literals(schema);
    // A key is a string followed by ':'; a property name is a key whose value is an object.
    for (k, &(end, s)) in strings.iter().enumerate() {
        // A literal that never closes runs to the end of the text: nothing follows it.
        let Some(after) = schema.get(end + 1..) else {
            continue;
        };
        let Some(value) = after.trim_start().strip_prefix(':') else {
            continue;
        };
        let value = value.trim_start();
        if s == "enum" && value.starts_with('[') {
            // The choices of a consolidated tool's `method` or `operation` say
            // what it does (`drain`, `get_files`).
            let close = schema.len() - value.len() + value.find(']').unwrap_or(value.len());
            for &(_, v) in strings.iter().skip(k + 1).take_while(|(e, _)| *e < close) {
                text.push_str(v);
                text.push(' ');
            }
        } else if s == "description" {
            if let Some(&(_, d)) = strings.get(k + 1) {
                text.push_str(d);
                text.push(' ');
            }
        } else if value.starts_with('{')
            && !matches!(
                s,
                "properties" | "items" | "additionalProperties" | "$defs" | "definitions"
            )
        {
            names.push_str(s);
            names.push(' ');
        }
    }
    (names, text)
}

/// Splits a run-together word into two known words (`heapsnapshot` → `heap`,
/// `snapshot`), preferring the most even split.
fn split_compound(word: &str, vocabulary: &FastSet<String>) -> Option<(String, String)> {
    if word.len() < 8 || !word.is_ascii() || vocabulary.contains(word) && word.len() < 8 {
        return None;
    }
    (4..=word.len() - 4)
        .filter(|&i| vocabulary.contains(&word[..i]) && vocabulary.contains(&word[i..]))
        .min_by_key(|&i| i.abs_diff(word.len() / 2))
        .map(|i| (word[..i].to_string(), word[i..].to_string()))
}

impl HybridIndex {
    pub fn build(entries: &[Entry], server_keywords: &[(String, Vec<String>)]) -> HybridIndex {
        lexicon::warm_up();
        let mut server_ids: HashMap<&str, u32> = HashMap::default();
        let mut server_names: Vec<&str> = Vec::new();
        let server_of: Vec<u32> = entries
            .iter()
            .map(|e| {
                *server_ids.entry(e.tool.server.as_str()).or_insert_with(|| {
                    server_names.push(e.tool.server.as_str());
                    (server_names.len() - 1) as u32
                })
            })
            .collect();
        let keywords: HashMap<&str, String> = server_keywords
            .iter()
            .map(|(s, k)| (s.as_str(), k.join(" ")))
            .collect();

        let mut servers_by_word: HashMap<String, Vec<u32>> = HashMap::default();
        for (id, name) in server_names.iter().enumerate() {
            let mut ws: Vec<String> = words(name).into_iter().map(|w| stem(&w)).collect();
            ws.push(stem(&name.to_lowercase().replace(['-', '_', '.'], "")));
            if let Some(k) = keywords.get(name) {
                ws.extend(tokens(k));
            }
            ws.sort();
            ws.dedup();
            for w in ws
                .into_iter()
                .filter(|w| w.len() > 1 && !GENERIC_SERVER_WORDS.contains(&w.as_str()))
            {
                servers_by_word.entry(w).or_default().push(id as u32);
            }
        }

        // Words a server puts in most of its tool names (`browser_`, `kubectl_`)
        // are a namespace, not what a tool does.
        let mut per_server: HashMap<u32, (usize, HashMap<String, usize>)> = HashMap::default();
        for (i, e) in entries.iter().enumerate() {
            let entry = per_server.entry(server_of[i]).or_default();
            entry.0 += 1;
            let mut ws: Vec<String> = words(&e.tool.name).into_iter().map(|w| stem(&w)).collect();
            ws.sort();
            ws.dedup();
            for w in ws {
                *entry.1.entry(w).or_default() += 1;
            }
        }
        let name_words: Vec<Vec<String>> = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let server: Vec<String> = words(&e.tool.server)
                    .into_iter()
                    .map(|w| stem(&w))
                    .collect();
                let (tools, counts) = &per_server[&server_of[i]];
                let namespace =
                    |w: &String| *tools >= 4 && counts.get(w).is_some_and(|&c| c * 2 > *tools);
                let mut ws: Vec<String> = words(&e.tool.name)
                    .into_iter()
                    .map(|w| stem(&w))
                    .filter(|w| !server.contains(w) && !namespace(w))
                    .collect();
                ws.sort();
                ws.dedup();
                ws
            })
            .collect();
        // Raw words of every field, once.
        struct Raw {
            name: Vec<String>,
            title: Vec<String>,
            server: Vec<String>,
            description: Vec<String>,
            param_names: Vec<String>,
            param_text: Vec<String>,
        }
        let raws: Vec<Raw> = entries
            .iter()
            .map(|e| {
                let t = &e.tool;
                let (param_names, param_text) = schema_fields(&t.input_schema);
                let mut server = words(&t.server);
                if let Some(k) = keywords.get(t.server.as_str()) {
                    server.extend(words(k));
                }
                Raw {
                    name: words(&t.name),
                    title: words(t.title.as_deref().unwrap_or("")),
                    server,
                    // The host already turns an annotation title into `title`.
                    description: words(&t.description),
                    param_names: words(&param_names),
                    param_text: words(&param_text),
                }
            })
            .collect();
        // Every word the catalog uses, as written: typos are judged against these.
        let mut vocabulary: FastSet<String> = FastSet::default();
        for r in &raws {
            for w in r.name.iter().chain(&r.description).chain(&r.server) {
                if w.len() >= 3
                    && w.bytes().all(|b| b.is_ascii_alphabetic())
                    && !vocabulary.contains(w)
                {
                    vocabulary.insert(w.clone());
                }
            }
        }

        // Terms as ids: one string per distinct term.
        let mut ids: HashMap<String, u32> = HashMap::default();
        let mut stems: HashMap<String, u32> = HashMap::default();
        let intern = |stemmed: String, ids: &mut HashMap<String, u32>| -> u32 {
            let next = ids.len() as u32;
            *ids.entry(stemmed).or_insert(next)
        };
        let mut term_of = |w: &str, ids: &mut HashMap<String, u32>| -> u32 {
            if let Some(&id) = stems.get(w) {
                return id;
            }
            let id = intern(stem(w), ids);
            stems.insert(w.to_string(), id);
            id
        };
        let mut docs: Vec<[Vec<u32>; FIELDS]> = Vec::with_capacity(raws.len());
        for r in &raws {
            let mut name: Vec<u32> = r.name.iter().map(|w| term_of(w, &mut ids)).collect();
            // `heap_snapshot` also answers "heapsnapshot", `screen_shot` "screenshot".
            for p in r.name.windows(2) {
                name.push(term_of(&format!("{}{}", p[0], p[1]), &mut ids));
            }
            // `sequentialthinking` also answers "sequential thinking".
            for w in &r.name {
                if let Some((a, b)) = split_compound(w, &vocabulary) {
                    name.push(term_of(&a, &mut ids));
                    name.push(term_of(&b, &mut ids));
                }
            }
            let filtered = |ws: &[String],
                            ids: &mut HashMap<String, u32>,
                            term_of: &mut dyn FnMut(&str, &mut HashMap<String, u32>) -> u32|
             -> Vec<u32> {
                ws.iter()
                    .filter(|w| !text::is_stop(w))
                    .map(|w| term_of(w, ids))
                    .collect()
            };
            let title = filtered(&r.title, &mut ids, &mut term_of);
            let server = filtered(&r.server, &mut ids, &mut term_of);
            let description = filtered(&r.description, &mut ids, &mut term_of);
            let param_names = filtered(&r.param_names, &mut ids, &mut term_of);
            let param_text = filtered(&r.param_text, &mut ids, &mut term_of);
            docs.push([name, title, server, description, param_names, param_text]);
        }

        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for d in &docs {
            for f in 0..FIELDS {
                avg[f] += d[f].len() as f32 / n;
            }
        }
        let mut lists: Vec<Vec<(u32, f32)>> = vec![Vec::new(); ids.len()];
        let mut local: Vec<(u32, f32)> = Vec::new();
        for (doc, d) in docs.iter().enumerate() {
            local.clear();
            for f in 0..FIELDS {
                let norm = 1.0 - B[f] + B[f] * d[f].len() as f32 / avg[f].max(1e-6);
                local.extend(d[f].iter().map(|&t| (t, WEIGHT[f] / norm)));
            }
            local.sort_unstable_by_key(|&(t, _)| t);
            let mut i = 0;
            while i < local.len() {
                let (t, mut w) = local[i];
                i += 1;
                while i < local.len() && local[i].0 == t {
                    w += local[i].1;
                    i += 1;
                }
                lists[t as usize].push((doc as u32, w));
            }
        }
        let typos = Typos::build(vocabulary.iter().map(String::as_str));
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::default();
        postings.reserve(ids.len());
        for (term, id) in ids {
            let list = std::mem::take(&mut lists[id as usize]);
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            postings.insert(
                term,
                list.into_iter()
                    .map(|(d, w)| (d, idf * w * (K1 + 1.0) / (w + K1)))
                    .collect(),
            );
        }
        HybridIndex {
            postings,
            name_words,
            server_of,
            servers_by_word,
            typos,
        }
    }

    fn known(&self, term: &str) -> bool {
        self.postings.contains_key(term)
    }

    /// The concepts of a query: each a set of alternatives (token sequences
    /// with a weight); a tool scores a concept by its best alternative.
    fn concepts(&self, query: &str) -> Vec<Vec<(Vec<String>, f32)>> {
        let raw: Vec<String> = words(query)
            .into_iter()
            .filter(|w| !text::is_stop(w))
            .collect();
        let mut own: Vec<String> = raw.iter().map(|w| stem(w)).collect();
        let mut typo_alts: Vec<Vec<(Vec<String>, f32)>> = vec![Vec::new(); own.len()];
        // Words the vocabulary knows are meant as written, even when the catalog
        // lacks them ("rain" is weather, not a typo of "train").
        let mut meant = vec![false; own.len()];
        for m in lexicon::meanings(&own) {
            meant[m.start..m.start + m.len]
                .iter_mut()
                .for_each(|x| *x = true);
        }
        for (i, t) in own.iter_mut().enumerate() {
            if self.known(t) || meant[i] {
                continue;
            }
            // "rerun", "reopen", "redeploy": the verb again.
            if let Some(rest) = raw[i]
                .strip_prefix("re")
                .filter(|r| r.len() >= 3 && self.known(&stem(r)))
            {
                typo_alts[i] = vec![(vec![stem(rest)], W_SYNONYM)];
                *t = stem(rest);
                continue;
            }
            // Typos: an unknown word stands for its known neighbours (as written, then stemmed).
            let mut candidates: Vec<String> = self
                .typos
                .candidates(&raw[i])
                .into_iter()
                .map(stem)
                .filter(|c| self.known(c))
                .collect();
            // Most used first; ties by spelling, so the answer never depends on hash order.
            let df = |c: &String| self.postings.get(c).map_or(0, Vec::len);
            candidates.sort_by(|a, b| df(b).cmp(&df(a)).then_with(|| a.cmp(b)));
            candidates.dedup();
            if let Some(best) = candidates.first().cloned() {
                let w = if candidates.len() == 1 {
                    W_TYPO_SURE
                } else {
                    W_TYPO
                };
                typo_alts[i] = candidates.into_iter().map(|c| (vec![c], w)).collect();
                *t = best;
            }
        }
        // Spans the vocabulary knows; a phrase swallows the words inside it.
        let meanings = lexicon::meanings(&own);
        let mut covered = vec![false; own.len()];
        let mut concepts: Vec<Vec<(Vec<String>, f32)>> = Vec::new();
        for m in meanings.iter().filter(|m| m.len > 1) {
            if covered[m.start..m.start + m.len].iter().any(|c| *c) {
                continue;
            }
            covered[m.start..m.start + m.len]
                .iter_mut()
                .for_each(|c| *c = true);
            let mut alts = vec![(own[m.start..m.start + m.len].to_vec(), 1.0)];
            alts.extend(m.alternatives.iter().map(|a| (a.clone(), W_PHRASE_SYNONYM)));
            concepts.push(alts);
        }
        for i in 0..own.len() {
            // A word said twice is one concept ("1.1.1.1" is not four ones).
            if covered[i] || own[..i].contains(&own[i]) {
                continue;
            }
            // A bare number is a value (an id, a count), rarely what a tool is about.
            let own_weight = if own[i].bytes().all(|b| b.is_ascii_digit()) {
                W_NUMBER
            } else {
                1.0
            };
            let mut alts = vec![(vec![own[i].clone()], own_weight)];
            alts.append(&mut typo_alts[i]);
            if let Some(m) = meanings.iter().find(|m| m.start == i && m.len == 1) {
                alts.extend(m.alternatives.iter().map(|a| (a.clone(), W_SYNONYM)));
            }
            // Words run together ("screen shot" → "screenshot").
            if let Some(next) = raw.get(i + 1) {
                let joined = stem(&format!("{}{}", raw[i], next));
                if self.known(&joined) {
                    alts.push((vec![joined], W_CONCAT));
                }
            }
            concepts.push(alts);
        }
        // Literals imply what they are about (`notes.txt` a file, `#42` an issue).
        let known = |w: &str| self.known(&stem(&w.to_lowercase()));
        for alts in shapes::implied(query, &known) {
            let alts: Vec<String> = alts.iter().map(|a| stem(a)).collect();
            if !own.iter().any(|t| alts.contains(t)) {
                concepts.push(alts.into_iter().map(|a| (vec![a], W_IMPLIED)).collect());
            }
        }
        concepts
    }

    /// Servers the query names, by a word of their name or keywords, or the
    /// start of one ("sonar" for `sonarqube`).
    fn named_servers(&self, query: &str) -> Vec<u32> {
        let mut named: Vec<u32> = Vec::new();
        let ws: Vec<String> = words(query)
            .into_iter()
            .filter(|w| !text::is_stop(w))
            .map(|w| stem(&w))
            .collect();
        // A product named in words stands for its one-word name ("ant design" → antd).
        let mut ws = ws;
        for m in lexicon::meanings(&ws.clone()).iter().filter(|m| m.len > 1) {
            ws.extend(
                m.alternatives
                    .iter()
                    .filter(|a| a.len() == 1)
                    .map(|a| a[0].clone()),
            );
        }
        for w in &ws {
            if let Some(list) = self.servers_by_word.get(w) {
                named.extend(list);
            } else if w.len() >= 4 {
                for (name, list) in &self.servers_by_word {
                    if name.len() > w.len() + 2 && name.starts_with(w.as_str()) {
                        named.extend(list);
                    }
                }
            }
        }
        named.sort_unstable();
        named.dedup();
        named
    }

    pub fn score(&self, query: &str, in_scope: &dyn Fn(usize) -> bool) -> Vec<Hit> {
        let n = self.server_of.len();
        let mut total = vec![0f32; n];
        let mut best = vec![0f32; n];
        let mut alt = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut alt_touched: Vec<u32> = Vec::new();
        let concepts = self.concepts(query);
        let asked: FastSet<&str> = concepts
            .iter()
            .flatten()
            .flat_map(|(tokens, _)| tokens.iter().map(String::as_str))
            .collect();
        for concept in &concepts {
            for (tokens, w) in concept {
                // An alternative of several words: its words' sum, damped for length.
                let damp = if tokens.len() > 1 {
                    *w / (tokens.len() as f32).sqrt()
                } else {
                    *w
                };
                for t in tokens {
                    for &(d, s) in self.postings.get(t).map_or(&[][..], Vec::as_slice) {
                        if alt[d as usize] == 0.0 {
                            alt_touched.push(d);
                        }
                        alt[d as usize] += s;
                    }
                }
                for &d in &alt_touched {
                    let v = alt[d as usize] * damp;
                    alt[d as usize] = 0.0;
                    if best[d as usize] == 0.0 {
                        touched.push(d);
                    }
                    best[d as usize] = best[d as usize].max(v);
                }
                alt_touched.clear();
            }
            for &d in &touched {
                total[d as usize] += best[d as usize];
                best[d as usize] = 0.0;
            }
            touched.clear();
        }
        let named = self.named_servers(query);
        total
            .iter()
            .enumerate()
            .filter(|(i, s)| **s > 0.0 && in_scope(*i))
            .map(|(i, &s)| {
                let boost = if named.contains(&self.server_of[i]) {
                    SERVER_BOOST
                } else {
                    1.0
                };
                // A tool whose name the query explains word for word is what was asked for.
                let name = &self.name_words[i];
                let explained = name.iter().filter(|w| asked.contains(w.as_str())).count();
                let coverage = if name.is_empty() {
                    0.0
                } else {
                    explained as f32 / name.len() as f32
                };
                Hit {
                    index: i as u32,
                    score: s * boost * (1.0 - COVERAGE + COVERAGE * coverage),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Index, IndexOptions, SearchOptions};
    use crate::model::{Entry, Tool};

    fn catalog() -> Vec<Entry> {
        [
            ("github", "create_pull_request", "Create a new pull request in a GitHub repository.", r#"{"properties":{"title":{"type":"string","description":"PR title"},"head":{"type":"string"}}}"#),
            ("github", "issue_write", "Create a new or update an existing issue in a GitHub repository.", "{}"),
            ("gitlab", "create_merge_request", "Create a new merge request in a GitLab project", "{}"),
            ("gitlab", "create_issue", "Create a new issue in a GitLab project", "{}"),
            ("playwright", "browser_take_screenshot", "Take a screenshot of the current page", "{}"),
            ("atlassian", "jira_create_issue", "Create a new Jira issue", "{}"),
            ("filesystem", "list_directory", "Get a detailed listing of all files and directories in a specified path", r#"{"properties":{"path":{"type":"string"}}}"#),
            ("chrome-devtools", "take_heapsnapshot", "Capture a heap snapshot of the page", "{}"),
            ("kubernetes", "node_management", "Manage Kubernetes nodes", r#"{"properties":{"operation":{"type":"string","enum":["cordon","drain"]}}}"#),
            ("kubernetes", "kubectl_get", "Get Kubernetes resources like pods or nodes", "{}"),
            ("github", "list_branches", "List branches in a GitHub repository", "{}"),
            ("filesystem", "list_allowed_directories", "List the directories this server may access", "{}"),
            ("weather", "get_forecast", "Get the weather forecast for a city", "{}"),
            ("rail", "search_trains", "Search train tickets between two stations", "{}"),
        ]
        .iter()
        .map(|(s, n, d, schema)| {
            let mut t = Tool::new(s, n, d);
            t.input_schema = schema.to_string();
            Entry { name: format!("{}__{}", s.replace('-', "_"), n), tool: t }
        })
        .collect()
    }

    fn top(query: &str) -> String {
        let cat = catalog();
        let idx = Index::build(cat.clone(), IndexOptions::default()).unwrap();
        let hits = idx
            .search(
                query,
                &SearchOptions {
                    limit: 3,
                    ..Default::default()
                },
            )
            .unwrap();
        cat[hits[0].index as usize].name.clone()
    }

    #[test]
    fn a_synonym_reaches_the_tool() {
        assert_eq!(top("raise a PR"), "github__create_pull_request");
        assert_eq!(top("open a ticket in jira"), "atlassian__jira_create_issue");
    }

    #[test]
    fn a_typo_is_forgiven() {
        assert_eq!(top("creat isue on githb"), "github__issue_write");
        assert_eq!(
            top("screenshto of the page"),
            "playwright__browser_take_screenshot"
        );
    }

    #[test]
    fn a_known_word_is_not_taken_for_a_typo() {
        // "rain" is one letter from "train", but the vocabulary knows it means weather.
        assert_eq!(top("will it rain tomorrow"), "weather__get_forecast");
        assert_eq!(top("trian tickets"), "rail__search_trains");
    }

    #[test]
    fn a_named_server_is_preferred() {
        assert_eq!(top("create an issue on gitlab"), "gitlab__create_issue");
        assert_eq!(top("create an issue on github"), "github__issue_write");
    }

    #[test]
    fn camel_case_and_run_together_words() {
        assert_eq!(top("createMergeRequest"), "gitlab__create_merge_request");
        assert_eq!(top("heap snapshot"), "chrome_devtools__take_heapsnapshot");
        assert_eq!(top("ls the folder"), "filesystem__list_directory");
    }

    #[test]
    fn parameters_count() {
        assert_eq!(
            top("pull request with a head branch"),
            "github__create_pull_request"
        );
        // An enum's choices name what a consolidated tool does.
        assert_eq!(top("cordon worker-3"), "kubernetes__node_management");
    }

    #[test]
    fn an_owner_repo_slug_means_a_repository() {
        assert!(top("what is in acme/web").starts_with("github__"));
        // Two ordinary words are not a slug.
        let index = super::HybridIndex::build(&catalog(), &[]);
        let implied = |q: &str| {
            index
                .concepts(q)
                .iter()
                .flatten()
                .any(|(t, _)| t.contains(&super::stem("repository")))
        };
        assert!(implied("what is in acme/web"));
        assert!(!implied("list directories/files"));
    }

    #[test]
    fn numbers_are_values_said_once() {
        let index = super::HybridIndex::build(&catalog(), &[]);
        let concepts = index.concepts("who owns 1.1.1.1");
        let ones: Vec<f32> = concepts
            .iter()
            .flatten()
            .filter(|(t, _)| t == &["1"])
            .map(|(_, w)| *w)
            .collect();
        assert_eq!(ones, [super::W_NUMBER]);
        const { assert!(super::W_NUMBER < 1.0) };
    }
}

#[cfg(test)]
mod schema_tests {
    use super::schema_fields;
    use proptest::prelude::*;
    use serde_json::{Map, Value};
    use std::panic::{AssertUnwindSafe, catch_unwind};

    /// The scan as it was before it was made total, kept verbatim as an
    /// oracle. It panics on a string literal that never closes, so it is only
    /// compared where it returns.
    fn old_serde_json_lite(schema: &str) -> Result<(String, String), ()> {
        let mut names = String::new();
        let mut text = String::new();
        let bytes = schema.as_bytes();
        let mut i = 0;
        let mut strings: Vec<(usize, String)> = Vec::new();
        while i < bytes.len() {
            if bytes[i] == b'"' {
                let start = i + 1;
                let mut j = start;
                let mut s = String::new();
                while j < bytes.len() && bytes[j] != b'"' {
                    if bytes[j] == b'\\' {
                        j += 1;
                    }
                    j += 1;
                }
                if j <= bytes.len() {
                    s.push_str(&String::from_utf8_lossy(&bytes[start..j.min(bytes.len())]));
                }
                strings.push((j, s));
                i = j + 1;
            } else {
                i += 1;
            }
        }
        for (k, (end, s)) in strings.iter().enumerate() {
            let after = schema[end + 1..].trim_start();
            if !after.starts_with(':') {
                continue;
            }
            let value = after[1..].trim_start();
            if s == "enum" && value.starts_with('[') {
                let close = schema.len() - value.len() + value.find(']').unwrap_or(value.len());
                for (_, v) in strings[k + 1..].iter().take_while(|(e, _)| *e < close) {
                    text.push_str(v);
                    text.push(' ');
                }
            } else if s == "description" {
                if let Some((_, d)) = strings.get(k + 1) {
                    text.push_str(d);
                    text.push(' ');
                }
            } else if value.starts_with('{')
                && !matches!(
                    s.as_str(),
                    "properties" | "items" | "additionalProperties" | "$defs" | "definitions"
                )
            {
                names.push_str(s);
                names.push(' ');
            }
        }
        Ok((names, text))
    }

    /// The old scan's answer, or `None` where it panicked.
    fn old(schema: &str) -> Option<(String, String)> {
        catch_unwind(AssertUnwindSafe(|| old_serde_json_lite(schema)))
            .ok()
            .map(|r| r.unwrap_or_default())
    }

    /// A schema like the ones servers send: nested objects, an enum, escapes,
    /// non-ASCII text, keys that are not parameter names.
    const REALISTIC: &str = r#"{"type":"object","properties":{"path":{"type":"string","description":"Path of the file, e.g. \"src/main.rs\" or C:\\dir\\f.txt"},"mode":{"type":"string","enum":["read","write","append"],"description":"Open mode"},"options":{"type":"object","properties":{"encoding":{"type":"string","default":"utf-8","description":"Text encoding — «utf-8» by default"}},"additionalProperties":false},"tags":{"type":"array","items":{"type":"string"},"description":"Labels\nto attach"},"查询":{"type":"integer","minimum":0,"description":"查询车票"}},"required":["path"],"$defs":{"Node":{"type":"object"}}}"#;

    #[test]
    fn an_unterminated_string_is_read_as_far_as_it_goes() {
        // The text ends inside a string literal: the old scan sliced past the end.
        assert_eq!(
            schema_fields(r#"{"properties":{"path":{"description":"The path to"#),
            ("path ".to_string(), "The path to ".to_string())
        );
        // ... or inside an escape of one.
        let _ = schema_fields(r#"{"properties":{"path":{"description":"C:\"#);
        for schema in ["\"", "\"\\", "{\"", "{\"a\":\"", "{\"a\" : \"b", "\"\u{e9}"] {
            let _ = schema_fields(schema);
        }
    }

    #[test]
    fn every_prefix_of_a_schema_reads_without_panicking() {
        let pretty = serde_json::to_string_pretty(
            &serde_json::from_str::<Value>(REALISTIC).expect("REALISTIC is JSON"),
        )
        .unwrap();
        for schema in [REALISTIC, pretty.as_str()] {
            for (cut, _) in schema.char_indices().chain([(schema.len(), ' ')]) {
                let _ = schema_fields(&schema[..cut]);
                let _ = schema_fields(&schema[cut..]);
            }
        }
    }

    #[test]
    fn a_well_formed_schema_reads_as_before() {
        let (names, text) = schema_fields(REALISTIC);
        assert_eq!(names, "path mode options encoding tags 查询 Node ");
        assert_eq!(
            text,
            r#"Path of the file, e.g. \"src/main.rs\" or C:\\dir\\f.txt read write append Open mode Text encoding — «utf-8» by default Labels\nto attach 查询车票 "#
        );
        assert_eq!(old(REALISTIC), Some((names, text)));
        for schema in ["", "{}", "null", "[]", r#"{"type":"object"}"#] {
            assert_eq!(schema_fields(schema), (String::new(), String::new()));
        }
    }

    /// Keys that mean something to the scan, and some that do not.
    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => prop::sample::select(vec![
                "properties", "description", "enum", "items", "type", "$defs",
                "definitions", "additionalProperties", "anyOf", "default", "path",
            ])
            .prop_map(str::to_string),
            1 => any::<String>(),
            1 => "[a-z\"\\\\\\]\\[{}:, ]{0,8}",
        ]
    }

    /// Arbitrary JSON, shaped like a schema often enough to reach every branch.
    fn json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<String>().prop_map(Value::String),
            key().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
            ]
        })
    }

    /// A string value: arbitrary, or one of the keys (with quotes, brackets, backslashes).
    fn string() -> impl Strategy<Value = String> {
        prop_oneof![any::<String>(), key()]
    }

    /// A JSON Schema: parameters under `properties` (each a schema again),
    /// descriptions, enums, array items, and now and then arbitrary JSON.
    fn schema() -> impl Strategy<Value = Value> {
        json().prop_recursive(4, 48, 5, |inner| {
            (
                prop::collection::vec((key(), inner.clone()), 0..5),
                prop::option::of(string()),
                prop::option::of(prop::collection::vec(string(), 0..5)),
                prop::option::of(inner),
            )
                .prop_map(|(properties, description, choices, items)| {
                    let mut schema = Map::new();
                    schema.insert("type".into(), "object".into());
                    if !properties.is_empty() {
                        let properties = properties.into_iter().collect::<Map<_, _>>();
                        schema.insert("properties".into(), properties.into());
                    }
                    if let Some(d) = description {
                        schema.insert("description".into(), d.into());
                    }
                    if let Some(c) = choices {
                        schema.insert("enum".into(), c.into());
                    }
                    if let Some(i) = items {
                        schema.insert("items".into(), i);
                    }
                    Value::Object(schema)
                })
        })
    }

    /// A schema's text, compact or pretty.
    fn schema_text() -> impl Strategy<Value = String> {
        (prop_oneof![1 => json(), 3 => schema()], any::<bool>()).prop_map(|(v, pretty)| {
            if pretty {
                serde_json::to_string_pretty(&v).unwrap()
            } else {
                v.to_string()
            }
        })
    }

    /// One edit of a text, at a position given as a fraction of its length.
    #[derive(Clone, Debug)]
    enum Edit {
        Truncate(prop::sample::Index),
        Drop(prop::sample::Index, usize),
        Insert(prop::sample::Index, String),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        let piece = prop_oneof![
            prop::sample::select(vec![
                "\"", "\\", ":", "{", "}", "[", "]", ",", " ", "\u{e9}"
            ])
            .prop_map(str::to_string),
            any::<String>(),
        ];
        prop_oneof![
            any::<prop::sample::Index>().prop_map(Edit::Truncate),
            (any::<prop::sample::Index>(), 1..8usize).prop_map(|(i, n)| Edit::Drop(i, n)),
            (any::<prop::sample::Index>(), piece).prop_map(|(i, s)| Edit::Insert(i, s)),
        ]
    }

    /// The char boundary at or before `index` of `text`.
    fn boundary(text: &str, index: &prop::sample::Index) -> usize {
        let mut at = index.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }

    fn apply(mut text: String, edits: &[Edit]) -> String {
        for e in edits {
            match e {
                Edit::Truncate(i) => text.truncate(boundary(&text, i)),
                Edit::Drop(i, n) => {
                    let from = boundary(&text, i);
                    let to = text[from..]
                        .char_indices()
                        .nth(*n)
                        .map_or(text.len(), |(k, _)| from + k);
                    text.replace_range(from..to, "");
                }
                Edit::Insert(i, s) => text.insert_str(boundary(&text, i), s),
            }
        }
        text
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_text_reads_without_panicking(text in any::<String>()) {
            let _ = schema_fields(&text);
        }

        #[test]
        fn a_well_formed_schema_reads_as_the_old_scan_did(schema in schema_text()) {
            prop_assert_eq!(Some(schema_fields(&schema)), old(&schema));
        }

        #[test]
        fn a_damaged_schema_reads_without_panicking(
            schema in schema_text(),
            edits in prop::collection::vec(edit(), 1..4),
        ) {
            let damaged = apply(schema, &edits);
            let new = schema_fields(&damaged);
            // Where the old scan did not panic, nothing changed.
            if let Some(old) = old(&damaged) {
                prop_assert_eq!(new, old);
            }
        }

        #[test]
        fn every_truncation_of_a_schema_reads_without_panicking(
            schema in schema_text(),
            cut in any::<prop::sample::Index>(),
        ) {
            let cut = boundary(&schema, &cut);
            let _ = schema_fields(&schema[..cut]);
        }
    }
}
