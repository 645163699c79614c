//! The tasks mcpw handed its clients: whose each is, and the tool it came
//! from. Only the client a task was given to reaches it (`tasks/get`,
//! `tasks/update`, `tasks/cancel`); another client that sees the same
//! server is told the task is unknown. A task's end is recorded once, in
//! the audit trail. Replicas that share state keep the book there, so that
//! a task given at one is reached at any; each entry lasts a day.

use crate::team_state::SharedState;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// How many tasks one process keeps, the oldest let go first.
const KEPT: usize = 4096;

/// How long a task is kept in shared state, in seconds.
const SHARED_TTL_S: u64 = 24 * 3600;

/// One task handed to a client.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Given {
    /// The client it was given to (its owner key).
    pub client: String,
    /// The client's name, for the audit (a token's or principal's).
    #[serde(default)]
    pub caller: String,
    /// Its server.
    pub server: String,
    /// The server's own name of the tool called.
    pub tool: String,
    /// The tool's name as the client called it.
    pub name: String,
}

/// Every task handed out, by the id its client knows.
#[derive(Default)]
pub(crate) struct TaskBook {
    here: Mutex<(HashMap<String, Given>, VecDeque<String>)>,
    shared: Option<Arc<SharedState>>,
}

impl TaskBook {
    /// A book kept here, and in `shared` when replicas share state.
    pub(crate) fn new(shared: Option<Arc<SharedState>>) -> TaskBook {
        TaskBook {
            here: Mutex::default(),
            shared,
        }
    }

    /// Records that task `id` was given to `given.client`.
    pub(crate) async fn give(&self, id: &str, given: Given) {
        if let Some(state) = &self.shared {
            let json = serde_json::to_string(&given).expect("a task's record serializes");
            let mut set = redis::cmd("SET");
            set.arg(key(id)).arg(json).arg("EX").arg(SHARED_TTL_S);
            if let Err(e) = state.command::<()>(set).await {
                tracing::warn!("task {id} is known to this replica only: {e}");
            }
        }
        let mut here = self.here.lock().unwrap_or_else(|p| p.into_inner());
        let (tasks, order) = &mut *here;
        if tasks.insert(id.to_string(), given).is_none() {
            order.push_back(id.to_string());
        }
        while order.len() > KEPT {
            if let Some(old) = order.pop_front() {
                tasks.remove(&old);
            }
        }
    }

    /// Task `id`, when it was given to `client`.
    pub(crate) async fn of(&self, id: &str, client: &str) -> Option<Given> {
        let here = {
            let book = self.here.lock().unwrap_or_else(|p| p.into_inner());
            book.0.get(id).cloned()
        };
        let found = match (here, &self.shared) {
            (Some(g), _) => Some(g),
            (None, Some(state)) => {
                let text: Option<String> = state
                    .command(redis::cmd("GET").arg(key(id)).clone())
                    .await
                    .ok()?;
                text.and_then(|t| serde_json::from_str(&t).ok())
            }
            (None, None) => None,
        };
        found.filter(|g| g.client == client)
    }

    /// Forgets task `id` once it ended; whether it was known here or there
    /// (so its end is recorded once).
    pub(crate) async fn ended(&self, id: &str) -> bool {
        let here = {
            let mut book = self.here.lock().unwrap_or_else(|p| p.into_inner());
            book.0.remove(id).is_some()
        };
        let Some(state) = &self.shared else {
            return here;
        };
        let removed: Result<u64, _> = state.command(redis::cmd("DEL").arg(key(id)).clone()).await;
        match removed {
            Ok(n) => n > 0,
            Err(_) => here,
        }
    }
}

fn key(id: &str) -> String {
    crate::team_state::key(&["task", id])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn given(client: &str) -> Given {
        Given {
            client: client.into(),
            caller: client.into(),
            server: "s".into(),
            tool: "t".into(),
            name: "s__t".into(),
        }
    }

    #[tokio::test]
    async fn a_task_is_its_clients_alone_and_ends_once() {
        let book = TaskBook::new(None);
        book.give("s/1", given("alice")).await;
        assert_eq!(book.of("s/1", "alice").await, Some(given("alice")));
        assert_eq!(book.of("s/1", "bob").await, None, "another client's");
        assert_eq!(book.of("s/2", "alice").await, None, "never given");
        assert!(book.ended("s/1").await);
        assert!(!book.ended("s/1").await, "its end is recorded once");
        assert_eq!(book.of("s/1", "alice").await, None);
    }

    #[tokio::test]
    async fn the_oldest_tasks_are_let_go_past_the_limit() {
        let book = TaskBook::new(None);
        for i in 0..=KEPT {
            book.give(&format!("s/{i}"), given("a")).await;
        }
        assert_eq!(book.of("s/0", "a").await, None);
        assert!(book.of(&format!("s/{KEPT}"), "a").await.is_some());
    }
}
