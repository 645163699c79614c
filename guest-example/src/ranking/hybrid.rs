//! The default scoring: BM25F over identifier-aware tokens in several fields,
//! with the query widened by developer vocabulary, corrected for typos, and
//! tilted towards the servers it names.
//!
//! Everything that depends only on the catalog — field statistics, each
//! (term, tool) weight, the typo neighbourhoods — is computed when the index is
//! built, so a query adds up a few posting lists.

use super::Hit;
use super::fasthash::{FastMap as HashMap, FastSet};
use super::lexicon::{self, Meaning};
use super::schema_text::schema_fields;
use super::shapes;
use super::text::{self, stem, tokens, words};
use super::typo::Typos;
use super::writers;
use crate::model::Entry;

/// The profile name of this scorer.
pub(crate) const PROFILE: &str = "default";

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
/// A word met only inside a literal value (a file name, a path, a URL, an
/// address): it names a thing, rarely what a tool is for.
const W_LITERAL: f32 = 0.3;
/// Extra weight for tools of a server the query names.
const SERVER_BOOST: f32 = 1.35;
/// How much of a tool's score depends on how much of its name the query explains.
const COVERAGE: f32 = 0.25;
/// Extra weight for a tool that takes a path and content (see [`writers`])
/// when the query asks for a file to be written.
const WRITER_BOOST: f32 = 1.5;
/// Server-name words too generic to mean "this server".
const GENERIC_SERVER_WORDS: &[&str] = &[
    "mcp", "server", "api", "tool", "tools", "model", "context", "protocol", "simple", "client",
    "kit",
];

pub(crate) struct HybridIndex {
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
    /// tool → does it write a file (takes a path and content)?
    writers: Vec<bool>,
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

/// One concept of a query: its alternatives, each a token sequence with a weight.
type Concept = Vec<(Vec<String>, f32)>;

/// A tool's fields as term ids, in `FIELDS` order.
type Doc = [Vec<u32>; FIELDS];

/// Raw words of every field of one tool, as written.
struct Raw {
    name: Vec<String>,
    title: Vec<String>,
    server: Vec<String>,
    description: Vec<String>,
    param_names: Vec<String>,
    param_text: Vec<String>,
    /// Does the tool take a path and content?
    writer: bool,
}

impl Raw {
    /// Splits a tool's fields into words; its server's keywords count as server words.
    fn of(entry: &Entry, keywords: &HashMap<&str, String>) -> Raw {
        let t = &entry.tool;
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
            writer: writers::is_writer(&param_names),
        }
    }
}

/// Terms as ids: one string per distinct term, and each word as written
/// remembered so that it is stemmed once.
#[derive(Default)]
struct Terms {
    /// Stemmed term → id, numbered in order of first use.
    ids: HashMap<String, u32>,
    /// Word as written → id of its stem.
    stems: HashMap<String, u32>,
}

impl Terms {
    /// The id of a word's stem.
    fn of(&mut self, w: &str) -> u32 {
        if let Some(&id) = self.stems.get(w) {
            return id;
        }
        let stemmed = stem(w);
        let next = self.ids.len() as u32;
        let id = *self.ids.entry(stemmed).or_insert(next);
        self.stems.insert(w.to_string(), id);
        id
    }

    /// The ids of the words that are not stop words.
    fn of_content(&mut self, ws: &[String]) -> Vec<u32> {
        ws.iter()
            .filter(|w| !text::is_stop(w))
            .map(|w| self.of(w))
            .collect()
    }

    /// A tool's fields as term ids. Its name also answers for its words run
    /// together and for the halves of a run-together word.
    fn doc(&mut self, r: &Raw, vocabulary: &FastSet<String>) -> Doc {
        let mut name: Vec<u32> = r.name.iter().map(|w| self.of(w)).collect();
        // `heap_snapshot` also answers "heapsnapshot", `screen_shot` "screenshot".
        for p in r.name.windows(2) {
            name.push(self.of(&format!("{}{}", p[0], p[1])));
        }
        // `sequentialthinking` also answers "sequential thinking".
        for w in &r.name {
            if let Some((a, b)) = split_compound(w, vocabulary) {
                name.push(self.of(&a));
                name.push(self.of(&b));
            }
        }
        let title = self.of_content(&r.title);
        let server = self.of_content(&r.server);
        let description = self.of_content(&r.description);
        let param_names = self.of_content(&r.param_names);
        let param_text = self.of_content(&r.param_text);
        [name, title, server, description, param_names, param_text]
    }
}

/// Numbers the servers in catalog order: each tool's server number, and the
/// servers' names by number.
fn number_servers(entries: &[Entry]) -> (Vec<u32>, Vec<&str>) {
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
    (server_of, server_names)
}

/// The words that name each server: the words of its name, its name run
/// together, and its keywords, less the words too generic to name one.
fn server_words(
    server_names: &[&str],
    keywords: &HashMap<&str, String>,
) -> HashMap<String, Vec<u32>> {
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
    servers_by_word
}

/// Per server: how many tools it has, and in how many of their names each
/// (stemmed) word appears.
fn name_word_counts(
    entries: &[Entry],
    server_of: &[u32],
) -> HashMap<u32, (usize, HashMap<String, usize>)> {
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
    per_server
}

/// Each tool's name words that say what it does (stemmed, sorted, once each):
/// not its server's name, and not its server's namespace.
fn tool_name_words(entries: &[Entry], server_of: &[u32]) -> Vec<Vec<String>> {
    // Words a server puts in most of its tool names (`browser_`, `kubectl_`)
    // are a namespace, not what a tool does.
    let per_server = name_word_counts(entries, server_of);
    entries
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
        .collect()
}

/// Every word the catalog uses, as written: typos are judged against these.
fn catalog_vocabulary(raws: &[Raw]) -> FastSet<String> {
    let mut vocabulary: FastSet<String> = FastSet::default();
    for r in raws {
        for w in r.name.iter().chain(&r.description).chain(&r.server) {
            if w.len() >= 3 && w.bytes().all(|b| b.is_ascii_alphabetic()) && !vocabulary.contains(w)
            {
                vocabulary.insert(w.clone());
            }
        }
    }
    vocabulary
}

/// Mean length of each field over the catalog; `n` is the number of tools (at least 1).
fn average_lengths(docs: &[Doc], n: f32) -> [f32; FIELDS] {
    let mut avg = [0f32; FIELDS];
    for d in docs {
        for f in 0..FIELDS {
            avg[f] += d[f].len() as f32 / n;
        }
    }
    avg
}

/// For each of the query's words (`raw`, stop words left out), whether it
/// is met only inside the query's literals (see [`shapes::literals`]).
fn literal_only(query: &str, raw: &[String]) -> Vec<bool> {
    let literals = shapes::literals(query);
    if literals.is_empty() {
        return vec![false; raw.len()];
    }
    let inside: Vec<String> = literals.iter().flat_map(|l| words(l)).collect();
    let mut rest = query.to_string();
    for l in &literals {
        rest = rest.replacen(l, " ", 1);
    }
    let outside = words(&rest);
    raw.iter()
        .map(|w| inside.contains(w) && !outside.contains(w))
        .collect()
}

/// Each term's list of (tool, field-weighted frequency): a term's
/// occurrences in a tool summed over fields, each weighted by its field and
/// normalised for the field's length.
fn weighted_frequencies(docs: &[Doc], avg: &[f32; FIELDS], terms: usize) -> Vec<Vec<(u32, f32)>> {
    let mut lists: Vec<Vec<(u32, f32)>> = vec![Vec::new(); terms];
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
    lists
}

/// The BM25F postings: each frequency saturated by `K1`, times the term's IDF
/// over `n` tools.
fn bm25f_postings(
    ids: HashMap<String, u32>,
    mut lists: Vec<Vec<(u32, f32)>>,
    n: f32,
) -> HashMap<String, Vec<(u32, f32)>> {
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
    postings
}

/// Which query words the vocabulary knows: those are meant as written, even
/// when the catalog lacks them ("rain" is weather, not a typo of "train").
fn meant_as_written(own: &[String]) -> Vec<bool> {
    let mut meant = vec![false; own.len()];
    for m in lexicon::meanings(own) {
        meant[m.start..m.start + m.len]
            .iter_mut()
            .for_each(|x| *x = true);
    }
    meant
}

/// The concepts of the phrases the vocabulary knows, each the phrase and its
/// synonyms; marks the words a phrase swallows as `covered`.
fn phrase_concepts(own: &[String], meanings: &[Meaning], covered: &mut [bool]) -> Vec<Concept> {
    let mut concepts: Vec<Concept> = Vec::new();
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
    concepts
}

impl HybridIndex {
    pub(crate) fn build(
        entries: &[Entry],
        server_keywords: &[(String, Vec<String>)],
    ) -> HybridIndex {
        lexicon::warm_up();
        let (server_of, server_names) = number_servers(entries);
        let keywords: HashMap<&str, String> = server_keywords
            .iter()
            .map(|(s, k)| (s.as_str(), k.join(" ")))
            .collect();
        let servers_by_word = server_words(&server_names, &keywords);
        let name_words = tool_name_words(entries, &server_of);
        // Raw words of every field, once.
        let raws: Vec<Raw> = entries.iter().map(|e| Raw::of(e, &keywords)).collect();
        let vocabulary = catalog_vocabulary(&raws);
        let mut terms = Terms::default();
        let mut docs: Vec<Doc> = Vec::with_capacity(raws.len());
        for r in &raws {
            docs.push(terms.doc(r, &vocabulary));
        }
        let n = docs.len().max(1) as f32;
        let avg = average_lengths(&docs, n);
        let lists = weighted_frequencies(&docs, &avg, terms.ids.len());
        let typos = Typos::build(vocabulary.iter().map(String::as_str));
        HybridIndex {
            postings: bm25f_postings(terms.ids, lists, n),
            name_words,
            server_of,
            servers_by_word,
            typos,
            writers: raws.iter().map(|r| r.writer).collect(),
        }
    }

    fn known(&self, term: &str) -> bool {
        self.postings.contains_key(term)
    }

    /// The concepts of a query: each a set of alternatives (token sequences
    /// with a weight); a tool scores a concept by its best alternative.
    fn concepts(&self, query: &str) -> Vec<Concept> {
        let raw: Vec<String> = words(query)
            .into_iter()
            .filter(|w| !text::is_stop(w))
            .collect();
        let mut own: Vec<String> = raw.iter().map(|w| stem(w)).collect();
        let typo_alts = self.correct(&raw, &mut own);
        // Spans the vocabulary knows; a phrase swallows the words inside it.
        let meanings = lexicon::meanings(&own);
        let mut covered = vec![false; own.len()];
        let mut concepts = phrase_concepts(&own, &meanings, &mut covered);
        let literal = literal_only(query, &raw);
        concepts.extend(self.word_concepts(&raw, &own, &meanings, &covered, typo_alts, &literal));
        concepts.extend(self.implied_concepts(query, &own));
        concepts
    }

    /// Replaces each query word the catalog does not know, and the vocabulary
    /// does not mean as written, by its correction: a verb for the same verb
    /// with `re` ("rerun"), or the most used known word it may be a typo of.
    /// Returns each word's correction alternatives (none where it stays).
    fn correct(&self, raw: &[String], own: &mut [String]) -> Vec<Concept> {
        let mut typo_alts: Vec<Concept> = vec![Vec::new(); own.len()];
        let meant = meant_as_written(own);
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
            let candidates = self.typo_candidates(&raw[i]);
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
        typo_alts
    }

    /// The known terms an unknown word may be a typo of: its neighbours as
    /// written, stemmed.
    fn typo_candidates(&self, word: &str) -> Vec<String> {
        let mut candidates: Vec<String> = self
            .typos
            .candidates(word)
            .into_iter()
            .map(stem)
            .filter(|c| self.known(c))
            .collect();
        // Most used first; ties by spelling, so the answer never depends on hash order.
        let df = |c: &String| self.postings.get(c).map_or(0, Vec::len);
        candidates.sort_by(|a, b| df(b).cmp(&df(a)).then_with(|| a.cmp(b)));
        candidates.dedup();
        candidates
    }

    /// The concepts of the words no phrase swallowed: each word with its
    /// corrections (`typo_alts`), its synonyms, and its run-together form
    /// with the next word.
    fn word_concepts(
        &self,
        raw: &[String],
        own: &[String],
        meanings: &[Meaning],
        covered: &[bool],
        mut typo_alts: Vec<Concept>,
        literal: &[bool],
    ) -> Vec<Concept> {
        let mut concepts: Vec<Concept> = Vec::new();
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
            // A literal's word, and what it may also mean, counts little.
            if literal[i] {
                alts.iter_mut().for_each(|(_, w)| *w *= W_LITERAL);
            }
            concepts.push(alts);
        }
        concepts
    }

    /// Concepts the query's literals imply (`notes.txt` a file, `#42` an
    /// issue), unless the query already says them.
    fn implied_concepts(&self, query: &str, own: &[String]) -> Vec<Concept> {
        let known = |w: &str| self.known(&stem(&w.to_lowercase()));
        let mut concepts: Vec<Concept> = Vec::new();
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

    pub(crate) fn score(&self, query: &str, in_scope: &dyn Fn(usize) -> bool) -> Vec<Hit> {
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
        let writing = writers::asks_to_write(query);
        total
            .iter()
            .enumerate()
            .filter(|(i, s)| **s > 0.0 && in_scope(*i))
            .map(|(i, &s)| {
                let mut boost = if named.contains(&self.server_of[i]) {
                    SERVER_BOOST
                } else {
                    1.0
                };
                if writing && self.writers[i] {
                    boost *= WRITER_BOOST;
                }
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
            ("basic-memory", "write_note", "Create or update a markdown note.", r#"{"properties":{"title":{"type":"string"},"content":{"type":"string"}}}"#),
            ("filesystem", "write_file", "Create a new file or overwrite an existing file with new content.", r#"{"properties":{"path":{"type":"string"},"content":{"type":"string"}}}"#),
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
    fn a_literals_words_name_a_thing_not_the_tool() {
        // "notes" and "md" are in the file's name: what is asked is writing it.
        assert_eq!(
            top("write the versions to ./notes/frameworks.md"),
            "filesystem__write_file"
        );
        // Said outside the literal, the same word counts in full.
        assert_eq!(
            top("write a note on the versions to ./notes/frameworks.md"),
            "basic_memory__write_note"
        );
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
