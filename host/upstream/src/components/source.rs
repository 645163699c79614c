//! Where a component's bytes come from: a file on this machine, `https://`
//! with the sha256 digest the definition names, or an OCI registry by the
//! digest of its manifest (`oci://registry/repository@sha256:…`). A fetched
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
pub(crate) async fn load(
    source: &str,
    sha256: Option<&str>,
    cache_dir: &Path,
) -> Result<Vec<u8>, String> {
    if let Some(reference) = source.strip_prefix("oci://") {
        return from_registry(reference, cache_dir).await;
    }
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

/// The manifest media types a component's artifact may have.
const MANIFESTS: &[&str] = &[
    oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
    oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE,
];
/// The layer media types a component may have.
const LAYERS: &[&str] = &[
    "application/wasm",
    oci_client::manifest::WASM_LAYER_MEDIA_TYPE,
];

/// The component an OCI reference pinned by digest names: its manifest
/// checked against the digest, its layer against the manifest.
async fn from_registry(reference: &str, cache_dir: &Path) -> Result<Vec<u8>, String> {
    let failed = |e: oci_client::errors::OciDistributionError| format!("oci://{reference}: {e}");
    let parsed: oci_client::Reference = reference
        .parse()
        .map_err(|e| format!("oci://{reference}: {e}"))?;
    let Some(pinned) = parsed.digest().and_then(|d| d.strip_prefix("sha256:")) else {
        return Err(format!("oci://{reference}: pin it by digest (@sha256:…)"));
    };
    let kept = cache_dir.join("sources").join(format!("{pinned}.wasm"));
    if let Ok(bytes) = tokio::fs::read(&kept).await {
        return Ok(bytes);
    }
    let client = oci_client::Client::new(registry_config(parsed.resolve_registry()));
    let anonymous = oci_client::secrets::RegistryAuth::Anonymous;
    let (manifest, _) = client
        .pull_manifest_raw(&parsed, &anonymous, MANIFESTS)
        .await
        .map_err(failed)?;
    let manifest =
        checked(manifest.to_vec(), Some(pinned)).map_err(|e| format!("its manifest: {e}"))?;
    let manifest: oci_client::manifest::OciImageManifest = serde_json::from_slice(&manifest)
        .map_err(|e| format!("oci://{reference}: its manifest: {e}"))?;
    let Some(layer) = manifest
        .layers
        .iter()
        .find(|l| LAYERS.contains(&l.media_type.as_str()))
    else {
        return Err(format!("oci://{reference} holds no WebAssembly layer"));
    };
    let mut bytes = Vec::new();
    client
        .pull_blob(&parsed, layer, &mut bytes)
        .await
        .map_err(failed)?;
    let bytes = checked(bytes, layer.digest.strip_prefix("sha256:"))?;
    keep(&kept, &bytes);
    Ok(bytes)
}

/// HTTPS, except to a registry on this machine (a local test or mirror).
fn registry_config(registry: &str) -> oci_client::client::ClientConfig {
    let host = registry.rsplit_once(':').map_or(registry, |(h, _)| h);
    let loopback = matches!(host, "localhost" | "127.0.0.1" | "[::1]");
    let protocol = match loopback {
        true => oci_client::client::ClientProtocol::HttpsExcept(vec![registry.to_string()]),
        false => oci_client::client::ClientProtocol::Https,
    };
    oci_client::client::ClientConfig {
        protocol,
        ..Default::default()
    }
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

    fn sha256(bytes: &[u8]) -> String {
        Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// A registry on loopback answering `manifest` for any manifest and
    /// `blob` for any blob: the fault of a registry (or of a path to it)
    /// that a real one does not produce. Returns its address.
    async fn registry(manifest: Vec<u8>, blob: Vec<u8>) -> String {
        use axum::routing::get;
        let oci = [(
            axum::http::header::CONTENT_TYPE,
            oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
        )];
        let app = axum::Router::new()
            .route("/v2/", get(|| async { "{}" }))
            .route(
                "/v2/mcpw/probe/manifests/{reference}",
                get(move || async move { (oci, manifest) }),
            )
            .route(
                "/v2/mcpw/probe/blobs/{digest}",
                get(move || async move { blob }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap().to_string();
        tokio::spawn(async move { axum::serve(listener, app).await });
        at
    }

    fn manifest_of(layer: &[u8]) -> Vec<u8> {
        serde_json::json!({
            "schemaVersion": 2, "mediaType": oci_client::manifest::OCI_IMAGE_MEDIA_TYPE,
            "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                       "digest": format!("sha256:{}", sha256(b"{}")), "size": 2},
            "layers": [{"mediaType": oci_client::manifest::WASM_LAYER_MEDIA_TYPE,
                        "digest": format!("sha256:{}", sha256(layer)), "size": layer.len()}]})
        .to_string()
        .into_bytes()
    }

    /// Pinned by digest, a component runs only as pinned: a manifest other
    /// than the pinned one is refused, and so is a layer other than the
    /// manifest names; nothing is kept either time.
    #[tokio::test]
    async fn a_registry_answering_other_bytes_than_pinned_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let component = b"\0asm component".to_vec();
        let manifest = manifest_of(&component);
        let pinned = sha256(&manifest);
        let other_manifest = manifest_of(b"\0asm another");
        let at = registry(other_manifest, component.clone()).await;
        let source = format!("oci://{at}/mcpw/probe@sha256:{pinned}");
        // Refused for its digest (by the OCI client or by mcpw), not for
        // anything else that could fail.
        let for_its_digest =
            |why: &str| why.contains("Digest error") || why.contains("its sha256 is");
        let why = load(&source, None, dir.path()).await.unwrap_err();
        assert!(for_its_digest(&why) && why.contains(&pinned), "{why}");
        let at = registry(manifest, b"\0asm swapped".to_vec()).await;
        let source = format!("oci://{at}/mcpw/probe@sha256:{pinned}");
        let why = load(&source, None, dir.path()).await.unwrap_err();
        assert!(
            for_its_digest(&why) && why.contains(&sha256(&component)),
            "the layer is checked: {why}"
        );
        assert!(!dir.path().join("sources").exists(), "nothing was kept");
    }
}
