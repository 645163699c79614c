//! The exposures: each is one type that says what a session's `tools/list`
//! answers and where its `tools/call` goes, by the tool's name, as an
//! rmcp `Router` dispatches; the gateway holds the one it serves. Nothing
//! else asks which exposure is served: it asks the exposure.

mod auto;
mod code;
mod direct;
mod exposed;
mod proxy;
mod tool_search;

pub(super) use exposed::{Args, Exposed};

use super::Exposure;

/// The exposure a gateway serves.
pub(super) fn of(exposure: Exposure) -> &'static dyn Exposed {
    match exposure {
        Exposure::Direct => &direct::Direct,
        Exposure::ToolSearch => &tool_search::ToolSearch,
        Exposure::Proxy => &proxy::Proxy,
        Exposure::Code => &code::Code,
        Exposure::Auto => &auto::Auto,
    }
}

impl super::Gateway {
    /// The exposure this gateway serves.
    pub(super) fn exposed(&self) -> &'static dyn Exposed {
        of(self.exposure)
    }

    /// Builds the search index now, not at the first search.
    pub(super) async fn prepare_search(&self) {
        match self.host.prepare_search().await {
            Ok(()) | Err(crate::host::HostError::ShuttingDown) => {}
            Err(e) => tracing::warn!("cannot build the search index: {e}"),
        }
    }
}
