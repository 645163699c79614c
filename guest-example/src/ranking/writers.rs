//! Tools that write a file, and queries that ask for one. "Save it as Markdown
//! to report.md" asks for a tool that takes where to write and what: its
//! words ("markdown", "report") name the content and the file, and lead to
//! tools that convert or take notes. A tool whose input schema has both a
//! path-like and a content-like parameter writes a file; a query with a verb
//! of writing and a file name or path, or a file named as where something
//! goes, asks for one, and such tools count more for it.

use super::shapes;

/// Parameter names (lowercase, without `_` and `-`) that say where to write.
const PATH_NAMES: &[&str] = &[
    "path",
    "filepath",
    "filename",
    "file",
    "destination",
    "destinationpath",
    "outputpath",
    "outputfile",
    "savepath",
    "targetpath",
];

/// Parameter names (as [`PATH_NAMES`]) that say what to write.
const CONTENT_NAMES: &[&str] = &[
    "content",
    "contents",
    "filecontent",
    "text",
    "body",
    "data",
    "markdown",
];

/// Verbs (lowercase, any common form) that put something somewhere.
const VERBS: &[&str] = &[
    "write", "writes", "writing", "save", "saves", "saving", "store", "stores", "storing",
    "export", "exports", "append", "appends", "send", "sends",
];

/// Does a tool whose parameter names are `names` (as `schema_fields` gives
/// them, space-separated) take both where to write and what?
pub(crate) fn is_writer(names: &str) -> bool {
    let norm: Vec<String> = names
        .split_whitespace()
        .map(|n| n.to_lowercase().replace(['_', '-'], ""))
        .collect();
    let has = |set: &[&str]| norm.iter().any(|n| set.contains(&n.as_str()));
    has(PATH_NAMES) && has(CONTENT_NAMES)
}

/// Does `query` ask for a file to be written: a verb of writing with a file
/// name or path, or a file named as where something goes?
pub(crate) fn asks_to_write(query: &str) -> bool {
    if shapes::destination_file(query) {
        return true;
    }
    let verb = query.split_whitespace().any(|w| {
        let w = w
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        VERBS.contains(&w.as_str())
    });
    verb && shapes::names_file(query)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Entry, Tool};
    use crate::ranking::{Index, IndexOptions, SearchOptions};

    #[test]
    fn a_writer_takes_a_path_and_content() {
        assert!(is_writer("path content mode "));
        assert!(is_writer("file_path content commit_message "));
        assert!(is_writer("files path content "));
        assert!(!is_writer("path "));
        assert!(!is_writer("title content "));
        assert!(!is_writer("element target text "));
    }

    /// The tools "Save it as Markdown to report.md" meets first in the bench
    /// catalog, as they are there (descriptions cut short), and four others.
    fn catalog() -> Vec<Entry> {
        [
            ("basic-memory", "write_note", "Create or update a markdown note. Returns a markdown formatted summary of the semantic content.", r#"{"properties":{"title":{"type":"string"},"content":{"type":"string"},"folder":{"type":"string"},"tags":{"type":"string"}}}"#),
            ("doc-forge", "html_to_markdown", "Convert HTML to Markdown format", r#"{"properties":{"inputPath":{"type":"string"},"outputDir":{"type":"string"}}}"#),
            ("npx-fetch", "fetch_markdown", "Fetch a website and return the content as Markdown", r#"{"properties":{"url":{"type":"string"},"headers":{"type":"object"}}}"#),
            ("filesystem", "write_file", "Create a new file or completely overwrite an existing file with new content. Handles text content with proper encoding.", r#"{"properties":{"path":{"type":"string"},"content":{"type":"string"}}}"#),
            ("github", "create_issue", "Create a new issue in a GitHub repository", r#"{"properties":{"title":{"type":"string"},"body":{"type":"string"}}}"#),
            ("weather", "get_forecast", "Get the weather forecast for a city", r#"{"properties":{"city":{"type":"string"}}}"#),
            ("slack", "post_message", "Post a message to a Slack channel", r#"{"properties":{"channel":{"type":"string"},"text":{"type":"string"}}}"#),
            ("git", "git_log", "Show the commit logs", r#"{"properties":{"repo_path":{"type":"string"}}}"#),
        ]
        .iter()
        .map(|(s, n, d, schema)| {
            let mut tool = Tool::new(s, n, d);
            tool.input_schema = schema.to_string();
            Entry { name: format!("{s}__{n}"), tool }
        })
        .collect()
    }

    #[test]
    fn the_writer_with_a_path_and_content_ranks_first_for_a_file_to_save() {
        let query = "Save it as Markdown to report.md";
        let mut index = Index::build(catalog(), IndexOptions::default()).unwrap();
        let names: Vec<String> = catalog().into_iter().map(|e| e.name).collect();
        let first = |hits: Vec<crate::ranking::Hit>| names[hits[0].index as usize].clone();
        let options = SearchOptions::default();
        assert_eq!(
            first(index.search(query, &options).unwrap()),
            "filesystem__write_file"
        );
        // Meaning puts the notes tool and the converters nearer to the query
        // ("Markdown") than the writer, as the model does, and all four far
        // nearer than the rest: the writer still comes first.
        let cosines = [0.62, 0.6, 0.58, 0.4, 0.1, 0.05, 0.1, 0.05];
        let rows = cosines.map(|c: f32| vec![c, (1.0 - c * c).sqrt()]);
        assert!(index.set_vectors(rows.to_vec()));
        let hits = index
            .search_with(query, &options, Some(&[1.0, 0.0]))
            .unwrap();
        assert_eq!(first(hits), "filesystem__write_file");
    }

    #[test]
    fn writing_is_asked_by_a_verb_and_a_file_or_a_destination() {
        assert!(asks_to_write("Save it as Markdown to report.md"));
        assert!(asks_to_write("write the versions in ./notes/frameworks.md"));
        assert!(asks_to_write("put the table into out.csv"));
        assert!(!asks_to_write("read report.md"));
        assert!(!asks_to_write("write a note about the meeting"));
    }
}
