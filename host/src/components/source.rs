//! Where a component's bytes come from: a file on this machine, or
//! `https://` with the sha256 digest the definition names. A fetched
//! component is kept by its digest, so it is fetched once; bytes whose digest
//! is not the one named never run.

use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

/// The largest component fetched.
const MAX_BYTES: usize = 256 << 20;
/// How long a fetch may take.
const FETCH_WITHIN: Duration = Duration::from_secs(120);

/// The component's bytes from `source` (a path or an `https://` URL),
/// checked against `sha256` when one is named (required for a URL).
/// Fetched bytes are kept in `cache_dir`.
pub async fn load(source: &str, sha256: Option<&str>, cache_dir: &Path) -> Result<Vec<u8>, String> {
    let Some(url) = source.strip_prefix("https://").map(|_| source) else {
        let bytes = tokio::fs::read(source)
            .await
            .map_err(|e| format!("cannot read the component: {e}"))?;
        return checked(bytes, sha256);
    };
    let Some(digest) = sha256 else {
        return Err(format!(
            "{url}: a component fetched over https needs its `sha256`"
        ));
    };
    let kept = cache_dir
        .join("sources")
        .join(format!("{}.wasm", digest.to_ascii_lowercase()));
    if let Ok(bytes) = tokio::fs::read(&kept).await
        && let Ok(bytes) = checked(bytes, Some(digest))
    {
        return Ok(bytes);
    }
    let bytes = checked(fetch(url).await?, Some(digest))?;
    keep(&kept, &bytes);
    Ok(bytes)
}

/// `bytes` when their digest is `sha256` (or none is named).
fn checked(bytes: Vec<u8>, sha256: Option<&str>) -> Result<Vec<u8>, String> {
    let Some(expected) = sha256 else {
        return Ok(bytes);
    };
    let actual: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    match actual.eq_ignore_ascii_case(expected) {
        true => Ok(bytes),
        false => Err(format!(
            "its sha256 is {actual}, not the {expected} the definition names: it does not run"
        )),
    }
}

async fn fetch(url: &str) -> Result<Vec<u8>, String> {
    let failed = |e: reqwest::Error| format!("cannot fetch {url}: {e}");
    let client = reqwest::Client::builder()
        .timeout(FETCH_WITHIN)
        .build()
        .map_err(failed)?;
    let mut response = client.get(url).send().await.map_err(failed)?;
    if !response.status().is_success() {
        return Err(format!("cannot fetch {url}: HTTP {}", response.status()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() > MAX_BYTES {
            return Err(format!("{url} is larger than {} MiB", MAX_BYTES >> 20));
        }
    }
    Ok(bytes)
}

/// Keeps fetched bytes by their digest; a component that cannot be kept is
/// fetched again next time.
fn keep(path: &Path, bytes: &[u8]) {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return;
    };
    let kept = std::fs::create_dir_all(dir)
        .and_then(|()| cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority()))
        .and_then(|dir| {
            crate::state_file::replace(&dir, name, crate::state_file::Access::Default, |w| {
                w.write_all(bytes)
            })
        });
    if let Err(e) = kept {
        tracing::debug!(
            "the fetched component was not kept in {}: {e}",
            dir.display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_file_runs_as_it_is_or_only_with_the_digest_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.wasm");
        std::fs::write(&file, b"bytes").unwrap();
        let path = file.to_str().unwrap();
        let digest = "1dd9f2d1a1d6b0bb5a3d4e6e5f16d2c2a2a4f9a0c21b1a6c7b0d0bbd6fbb8c4a";
        assert_eq!(load(path, None, dir.path()).await.unwrap(), b"bytes");
        let wrong = load(path, Some(digest), dir.path()).await.unwrap_err();
        assert!(wrong.contains("it does not run"), "{wrong}");
        let right: String = Sha256::digest(b"bytes")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            load(path, Some(&right.to_uppercase()), dir.path())
                .await
                .unwrap(),
            b"bytes"
        );
        let unpinned = load("https://h/c.wasm", None, dir.path())
            .await
            .unwrap_err();
        assert!(unpinned.contains("needs its `sha256`"), "{unpinned}");
    }
}
