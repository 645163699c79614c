//! The script guest of a host (code mode): the user's `settings.plugins.script`
//! or the embedded JavaScript guest, loaded on first use and then kept, with
//! its pool of warmed instances filled in the background.

use super::{Host, HostError};
use crate::plugin::script::{ScriptLimits, Scripter};
use crate::plugin::{DEFAULT_SCRIPT_GUEST, Grants, GuestModule, LoadOptions, PluginError, Role};
use std::sync::Arc;

/// The script guest once loaded, or why it could not be.
pub(super) type Loaded = tokio::sync::OnceCell<Result<Arc<Scripter>, Arc<PluginError>>>;

impl Host {
    /// The script guest. Loading it compiles a JavaScript engine (seconds,
    /// once per machine: the compile cache keeps it), so it waits for the
    /// first script.
    pub async fn scripter(&self) -> Result<Arc<Scripter>, HostError> {
        let loaded = self
            .scripter
            .get_or_init(|| async {
                let (config, services) = self.guests.clone();
                let limits = ScriptLimits::default();
                let loaded = tokio::task::spawn_blocking(move || {
                    let scripter = load(&config, services, limits)?;
                    let filler = scripter.clone();
                    // Instances get ready while the first script runs.
                    std::thread::spawn(move || filler.fill());
                    Ok(scripter)
                })
                .await
                .unwrap_or_else(|e| {
                    Err(PluginError::Load {
                        guest: "script".into(),
                        message: format!("loading stopped: {e}"),
                    })
                });
                loaded.map_err(Arc::new)
            })
            .await;
        loaded.clone().map_err(HostError::Script)
    }
}

fn load(
    config: &crate::plugin::PolicyConfig,
    services: Arc<dyn crate::plugin::HostServices>,
    limits: ScriptLimits,
) -> Result<Arc<Scripter>, PluginError> {
    let options = LoadOptions {
        limits: crate::plugin::Limits {
            memory_bytes: limits.memory_bytes,
            deadline: limits.cpu,
        },
        // The toolbox is the script role's own import; nothing else is granted.
        grants: config
            .grants
            .get(&Role::Script)
            .copied()
            .unwrap_or_else(Grants::none),
        services,
        cache: config.cache.clone(),
    };
    let module = match config.guests.get(&Role::Script) {
        Some(path) => {
            let wasm = std::fs::read(path).map_err(|source| PluginError::Io {
                path: path.clone(),
                source,
            })?;
            GuestModule::load(&path.display().to_string(), &wasm, options)?
        }
        None => GuestModule::load("javascript", DEFAULT_SCRIPT_GUEST, options)?,
    };
    Scripter::new(module, limits)
}
