//! The embedding model of commands over a catalog file (`mcpw search`,
//! `mcpw plugin bench`): `--model`, else `settings.search.model`, else (for
//! the commands that search as `serve` does) the default model. Such a
//! command waits for the catalog's vectors (a person asked one question and
//! wants the answer by meaning), where `mcpw serve` ranks by words meanwhile.

use anyhow::{Context, Result};
use mcpw::config::search::{ModelChoice, ModelSetting};
use mcpw::config::{Config, ConfigSources};
use mcpw::embed::{Embeddings, ModelSource};
use mcpw::plugin::{EmbedModel, StaticServices};
use std::sync::Arc;

/// A model, with the runtime its fetch and background runs use.
pub(crate) struct CliEmbeddings {
    runtime: tokio::runtime::Runtime,
    embeddings: Arc<Embeddings>,
}

/// Which model a command searches with when `--model` names none.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unnamed {
    /// The one `serve` would use: the configured one, else the default.
    AsServe,
    /// Only one the user's file names (a benchmark reports what it was
    /// asked to measure).
    Configured,
}

/// The model `flag` names (a folder, else an id, or `none` for words
/// alone), else the configured one,
/// else (`AsServe`) the default. The default one offline is words alone,
/// said on stderr; a model the user named that cannot be used is an error.
pub(crate) fn open(
    cfg: &Config,
    sources: &ConfigSources,
    flag: Option<&str>,
    unnamed: Unnamed,
) -> Result<Option<CliEmbeddings>> {
    let env = &sources.env;
    let source = match flag {
        // As in the settings: words alone.
        Some("none") => return Ok(None),
        Some(f) if std::path::Path::new(f).is_dir() => {
            let folder = std::path::absolute(f).with_context(|| format!("--model {f}"))?;
            ModelSource::new(&ModelSetting::Folder(folder), env)
        }
        Some(f) => {
            let setting =
                mcpw::config::search::model(f).map_err(|e| anyhow::anyhow!("--model: {e}"))?;
            ModelSource::new(&setting, env)
        }
        None => match (&cfg.settings.search.model, unnamed) {
            (ModelChoice::Default, Unnamed::Configured) => return Ok(None),
            (choice, _) => match ModelSource::of(choice, env) {
                Some(source) => source,
                None => return Ok(None),
            },
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let default = source.default;
    let embeddings =
        runtime.block_on(async { Embeddings::new(source, env.cache_dir().join("vectors"), None) });
    embeddings.arm();
    if default && let Err(e) = embeddings.load() {
        eprintln!(
            "mcpw: searching by words only: the default embedding model cannot be used ({e})"
        );
        return Ok(None);
    }
    Ok(Some(CliEmbeddings {
        runtime,
        embeddings,
    }))
}

impl CliEmbeddings {
    /// `services`, embedding with this model.
    pub(crate) fn services(&self, services: StaticServices) -> Result<StaticServices> {
        let embeddings = self.embeddings.clone();
        let _entered = self.runtime.enter();
        let model: EmbedModel = self.model()?;
        Ok(services.with_embeddings(model, move |texts, urgency| {
            embeddings.embed(texts, urgency)
        }))
    }

    /// The model as guests see it; fetches it first if it is named by id.
    pub(crate) fn model(&self) -> Result<EmbedModel> {
        if let Some(m) = self.embeddings.model() {
            return Ok(m);
        }
        // A model id not fetched yet: fetched and loaded here.
        let _entered = self.runtime.enter();
        self.embeddings
            .load()
            .map_err(|e| anyhow::anyhow!("the embedding model cannot be used: {e}"))?;
        self.embeddings
            .model()
            .context("the embedding model has no description")
    }

    /// Runs `build` (an index build), and once more after the vectors it
    /// asked for are ready, showing progress on stderr.
    pub(crate) fn ready<T>(&self, mut build: impl FnMut() -> Result<T>) -> Result<T> {
        let before = self.embeddings.status().borrow().pendings;
        let built = build()?;
        if self.embeddings.status().borrow().pendings == before {
            return Ok(built);
        }
        let status = self.embeddings.status();
        let total = status.borrow().total;
        eprintln!("mcpw: embedding {total} tool texts (once; they are cached)…");
        self.runtime.block_on(self.embeddings.idle());
        if let Some(e) = &self.embeddings.status().borrow().error {
            eprintln!("mcpw: search ranks by words only: {e}");
            return Ok(built);
        }
        build()
    }
}
