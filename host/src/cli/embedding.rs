//! The embedding model of commands over a catalog file (`mcpw search`,
//! `mcpw plugin bench`): `--model`, else `settings.search.model`. Such a
//! command waits for the catalog's vectors (a person asked one question and
//! wants the answer by meaning), where `mcpw serve` ranks by words meanwhile.

use anyhow::{Context, Result};
use mcpw::config::search::ModelSetting;
use mcpw::config::{Config, ConfigSources};
use mcpw::embed::{Embeddings, ModelSource};
use mcpw::plugin::{EmbedModel, StaticServices};
use std::sync::Arc;

/// A model, with the runtime its fetch and background runs use.
pub(crate) struct CliEmbeddings {
    runtime: tokio::runtime::Runtime,
    embeddings: Arc<Embeddings>,
}

/// The model `flag` names (a folder, else an id), else the configured one.
pub(crate) fn open(
    cfg: &Config,
    sources: &ConfigSources,
    flag: Option<&str>,
) -> Result<Option<CliEmbeddings>> {
    let setting = match flag {
        Some(f) if std::path::Path::new(f).is_dir() => Some(ModelSetting::Folder(
            std::path::absolute(f).with_context(|| format!("--model {f}"))?,
        )),
        Some(f) => {
            Some(mcpw::config::search::model(f).map_err(|e| anyhow::anyhow!("--model: {e}"))?)
        }
        None => cfg.settings.search.model.clone(),
    };
    let Some(setting) = setting else {
        return Ok(None);
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .context("start the async runtime")?;
    let env = &sources.env;
    let source = ModelSource::new(&setting, &env.home(), &env.cache_dir());
    let embeddings =
        runtime.block_on(async { Embeddings::new(source, env.cache_dir().join("vectors"), None) });
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
        // A model id not fetched yet: embedding one text fetches and loads it.
        let _entered = self.runtime.enter();
        self.embeddings
            .embed(&["fetch".to_string()], mcpw::plugin::Urgency::Now)
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
