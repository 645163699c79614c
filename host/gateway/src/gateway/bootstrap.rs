//! Listing every server once, before the first answer that needs the
//! catalog: shared by a gateway and the replica links of its sessions.

use crate::host::Host;
use std::sync::Arc;

/// Connects servers whose tools are unknown (nothing cached), once.
pub(super) struct Bootstrap {
    host: Arc<Host>,
    done: tokio::sync::OnceCell<()>,
}

impl Bootstrap {
    pub(super) fn new(host: Arc<Host>) -> Arc<Bootstrap> {
        Arc::new(Bootstrap {
            host,
            done: tokio::sync::OnceCell::new(),
        })
    }

    /// Waits until every server has been listed at least once (from the cache
    /// or by connecting); failures are recorded in the status, not returned.
    pub(super) async fn ready(&self) {
        self.done
            .get_or_init(|| self.host.bootstrap(|_, _| {}))
            .await;
    }

    /// Has every server been listed at least once?
    pub(super) fn is_ready(&self) -> bool {
        self.done.initialized()
    }

    /// Answers from the cache alone: servers with nothing cached are left
    /// out instead of being connected.
    pub(super) fn skip(&self) {
        let _ = self.done.set(());
    }
}
