//! A client's requests about a task a server's call made (`tasks/get`,
//! `tasks/update`, `tasks/cancel`), made on the connection the task lives
//! on: the host makes them, so that no connection leaves it.

use super::Host;
use crate::lifecycle::LifecycleError;
use crate::upstream::Need;
use rmcp::model::{GetTaskResult, UpdateTaskParams};

impl Host {
    /// `server`'s task `task` (the server's own id), asked on the
    /// connection that serves `need` (the one its call was made on).
    pub async fn get_task(
        &self,
        server: &str,
        task: &str,
        need: Need<'_>,
    ) -> Result<GetTaskResult, LifecycleError> {
        let timeout = self.manager.call_timeout(server);
        self.manager
            .with_connection_for(
                server,
                need,
                |c| async move { c.get_task(task, timeout).await },
            )
            .await
    }

    /// Sends `params` (the server's own task id, and the client's answers
    /// as the guards let them through) to `server`.
    pub async fn update_task(
        &self,
        server: &str,
        params: UpdateTaskParams,
        need: Need<'_>,
    ) -> Result<(), LifecycleError> {
        let timeout = self.manager.call_timeout(server);
        self.manager
            .with_connection_for(server, need, |c| async move {
                c.update_task(params, timeout).await
            })
            .await
    }

    /// Cancels `server`'s task `task`.
    pub async fn cancel_task(
        &self,
        server: &str,
        task: &str,
        need: Need<'_>,
    ) -> Result<(), LifecycleError> {
        let timeout = self.manager.call_timeout(server);
        self.manager
            .with_connection_for(server, need, |c| async move {
                c.cancel_task(task, timeout).await
            })
            .await
    }
}
