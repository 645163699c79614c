//! Where component servers' keys and values are kept: this process's memory,
//! or the team's Redis. Both backends behave alike (limits, the number
//! format, pages of keys in sorted order), so a component sees no
//! difference but reach.

use crate::team_state::{self, SharedState};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The longest bucket identifier or key, in bytes.
const NAME_BYTES: usize = 1024;
/// The largest value, in bytes.
const VALUE_BYTES: usize = 1024 * 1024;
/// The most one server keeps in memory (keys and values), in bytes: a
/// component cannot grow mcpw without bound. (In Redis, Redis's own memory
/// policy applies.)
pub(crate) const SERVER_BYTES: usize = 64 * 1024 * 1024;
/// Keys per page of `list-keys`.
pub(crate) const PAGE: usize = 1000;

/// Why an operation failed, said to the component.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum KvError {
    /// A name or value over its limit.
    #[error("{0}")]
    TooLarge(String),
    /// The server keeps as much as it may.
    #[error("the server's store is full ({} MiB)", SERVER_BYTES / (1024 * 1024))]
    Full,
    /// `increment` on a value that is not a number.
    #[error("the value of {0:?} is not a number")]
    NotANumber(String),
    /// A sum past u64.
    #[error("incrementing {0:?} overflows")]
    Overflow(String),
    /// Redis did not answer or refused.
    #[error("the shared state: {0}")]
    Shared(String),
}

/// One bucket of one server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    /// The server's name.
    pub server: String,
    /// The identifier the component opened.
    pub bucket: String,
}

impl Place {
    /// `bucket` of `server`, if its identifier is within the limit.
    pub fn new(server: &str, bucket: &str) -> Result<Place, KvError> {
        name_fits("a bucket identifier", bucket)?;
        Ok(Place {
            server: server.into(),
            bucket: bucket.into(),
        })
    }

    fn redis_key(&self) -> String {
        team_state::key(&["kv", &self.server, &self.bucket])
    }
}

fn name_fits(what: &str, name: &str) -> Result<(), KvError> {
    if name.len() > NAME_BYTES {
        return Err(KvError::TooLarge(format!(
            "{what} is longer than {NAME_BYTES} bytes"
        )));
    }
    Ok(())
}

fn value_fits(key: &str, value: &[u8]) -> Result<(), KvError> {
    name_fits("a key", key)?;
    if value.len() > VALUE_BYTES {
        return Err(KvError::TooLarge(format!(
            "the value of {key:?} is larger than {} MiB",
            VALUE_BYTES / (1024 * 1024)
        )));
    }
    Ok(())
}

/// The keys and values of every component server of the process.
pub enum Stores {
    /// In this process, for as long as it runs.
    Memory(Mutex<Memory>),
    /// In Redis, shared by the replicas.
    Shared(Arc<SharedState>),
}

/// Buckets in memory, and how much each server keeps.
#[derive(Default)]
pub struct Memory {
    buckets: HashMap<Place, BTreeMap<String, Vec<u8>>>,
    used: HashMap<String, usize>,
}

impl Stores {
    /// In Redis when the process shares state, else in memory.
    pub fn new(shared: Option<Arc<SharedState>>) -> Arc<Stores> {
        Arc::new(match shared {
            Some(state) => Stores::Shared(state),
            None => Stores::Memory(Mutex::default()),
        })
    }

    /// The values of `keys`, in their order.
    pub async fn get_many(
        &self,
        at: &Place,
        keys: Vec<String>,
    ) -> Result<Vec<Option<Vec<u8>>>, KvError> {
        match self {
            Stores::Memory(m) => {
                let m = lock(m);
                let bucket = m.buckets.get(at);
                Ok(keys
                    .iter()
                    .map(|k| bucket.and_then(|b| b.get(k)).cloned())
                    .collect())
            }
            Stores::Shared(_) if keys.is_empty() => Ok(Vec::new()),
            Stores::Shared(state) => {
                let mut cmd = redis::cmd("HMGET");
                cmd.arg(at.redis_key()).arg(&keys);
                shared(state.command(cmd).await)
            }
        }
    }

    /// Stores each pair.
    pub async fn set_many(&self, at: &Place, pairs: Vec<(String, Vec<u8>)>) -> Result<(), KvError> {
        for (k, v) in &pairs {
            value_fits(k, v)?;
        }
        match self {
            Stores::Memory(m) => lock(m).set(at, pairs),
            Stores::Shared(_) if pairs.is_empty() => Ok(()),
            Stores::Shared(state) => {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(at.redis_key());
                for (k, v) in pairs {
                    cmd.arg(k).arg(v);
                }
                shared(state.command::<()>(cmd).await)
            }
        }
    }

    /// Removes each key.
    pub async fn delete_many(&self, at: &Place, keys: Vec<String>) -> Result<(), KvError> {
        match self {
            Stores::Memory(m) => {
                lock(m).delete(at, &keys);
                Ok(())
            }
            Stores::Shared(_) if keys.is_empty() => Ok(()),
            Stores::Shared(state) => {
                let mut cmd = redis::cmd("HDEL");
                cmd.arg(at.redis_key()).arg(keys);
                shared(state.command::<()>(cmd).await)
            }
        }
    }

    /// A page of the bucket's keys, sorted, from offset `cursor`.
    pub async fn list(
        &self,
        at: &Place,
        cursor: Option<u64>,
    ) -> Result<(Vec<String>, Option<u64>), KvError> {
        let mut keys: Vec<String> = match self {
            Stores::Memory(m) => lock(m)
                .buckets
                .get(at)
                .map(|b| b.keys().cloned().collect())
                .unwrap_or_default(),
            Stores::Shared(state) => {
                let mut cmd = redis::cmd("HKEYS");
                cmd.arg(at.redis_key());
                shared(state.command(cmd).await)?
            }
        };
        keys.sort();
        let from = usize::try_from(cursor.unwrap_or(0)).unwrap_or(usize::MAX);
        let page: Vec<String> = keys.iter().skip(from).take(PAGE).cloned().collect();
        let next = from.saturating_add(page.len());
        let more = next < keys.len();
        Ok((page, more.then_some(next as u64)))
    }

    /// Adds `delta` to the number under `key` (decimal text; missing is 0).
    pub async fn increment(&self, at: &Place, key: &str, delta: u64) -> Result<u64, KvError> {
        name_fits("a key", key)?;
        match self {
            Stores::Memory(m) => lock(m).increment(at, key, delta),
            Stores::Shared(state) => {
                let by = i64::try_from(delta).map_err(|_| KvError::Overflow(key.into()))?;
                let mut cmd = redis::cmd("HINCRBY");
                cmd.arg(at.redis_key()).arg(key).arg(by);
                match state.command::<i64>(cmd).await {
                    Ok(n) => u64::try_from(n).map_err(|_| KvError::NotANumber(key.into())),
                    Err(e) if e.to_string().contains("not an integer") => {
                        Err(KvError::NotANumber(key.into()))
                    }
                    Err(e) if e.to_string().contains("overflow") => {
                        Err(KvError::Overflow(key.into()))
                    }
                    Err(e) => Err(KvError::Shared(e.to_string())),
                }
            }
        }
    }
}

impl Memory {
    fn set(&mut self, at: &Place, pairs: Vec<(String, Vec<u8>)>) -> Result<(), KvError> {
        let bucket = self.buckets.get(at);
        let (mut freed, mut added) = (0usize, 0usize);
        for (k, v) in &pairs {
            freed += bucket
                .and_then(|b| b.get(k))
                .map_or(0, |old| k.len() + old.len());
            added += k.len() + v.len();
        }
        let used = self.used.entry(at.server.clone()).or_default();
        let after = (*used + added).saturating_sub(freed);
        if after > SERVER_BYTES && after > *used {
            return Err(KvError::Full);
        }
        *used = after;
        self.buckets.entry(at.clone()).or_default().extend(pairs);
        Ok(())
    }

    fn delete(&mut self, at: &Place, keys: &[String]) {
        let Some(bucket) = self.buckets.get_mut(at) else {
            return;
        };
        let mut freed = 0;
        for k in keys {
            freed += bucket.remove(k).map_or(0, |v| k.len() + v.len());
        }
        if bucket.is_empty() {
            self.buckets.remove(at);
        }
        if let Some(used) = self.used.get_mut(&at.server) {
            *used = used.saturating_sub(freed);
        }
    }

    fn increment(&mut self, at: &Place, key: &str, delta: u64) -> Result<u64, KvError> {
        let old = match self.buckets.get(at).and_then(|b| b.get(key)) {
            None => 0,
            Some(v) => std::str::from_utf8(v)
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
                .ok_or_else(|| KvError::NotANumber(key.into()))?,
        };
        let sum = old
            .checked_add(delta)
            .ok_or_else(|| KvError::Overflow(key.into()))?;
        self.set(at, vec![(key.to_string(), sum.to_string().into_bytes())])?;
        Ok(sum)
    }
}

fn shared<T>(outcome: Result<T, team_state::SharedStateError>) -> Result<T, KvError> {
    outcome.map_err(|e| KvError::Shared(e.to_string()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(server: &str, bucket: &str) -> Place {
        Place::new(server, bucket).unwrap()
    }

    #[tokio::test]
    async fn servers_see_buckets_of_their_own() {
        let stores = Stores::new(None);
        let mine = at("a", "b");
        stores
            .set_many(&mine, vec![("k".into(), b"v".to_vec())])
            .await
            .unwrap();
        let got = stores.get_many(&mine, vec!["k".into(), "x".into()]).await;
        assert_eq!(got.unwrap(), vec![Some(b"v".to_vec()), None]);
        let theirs = stores.get_many(&at("other", "b"), vec!["k".into()]).await;
        assert_eq!(theirs.unwrap(), vec![None]);
    }

    #[tokio::test]
    async fn increments_are_decimal_text_and_refuse_other_values() {
        let stores = Stores::new(None);
        let place = at("s", "counts");
        assert_eq!(stores.increment(&place, "n", 2).await, Ok(2));
        assert_eq!(stores.increment(&place, "n", 3).await, Ok(5));
        let got = stores.get_many(&place, vec!["n".into()]).await.unwrap();
        assert_eq!(got, vec![Some(b"5".to_vec())]);
        stores
            .set_many(&place, vec![("w".into(), b"word".to_vec())])
            .await
            .unwrap();
        let refused = stores.increment(&place, "w", 1).await;
        assert_eq!(refused, Err(KvError::NotANumber("w".into())));
        let past = stores.increment(&place, "n", u64::MAX).await;
        assert_eq!(past, Err(KvError::Overflow("n".into())));
    }

    #[tokio::test]
    async fn keys_come_in_sorted_pages() {
        let stores = Stores::new(None);
        let place = at("s", "many");
        let pairs: Vec<_> = (0..PAGE + 5)
            .map(|i| (format!("k{i:05}"), vec![]))
            .collect();
        stores.set_many(&place, pairs).await.unwrap();
        let (first, next) = stores.list(&place, None).await.unwrap();
        assert_eq!(first.len(), PAGE);
        assert_eq!(first[0], "k00000");
        assert_eq!(next, Some(PAGE as u64));
        let (rest, end) = stores.list(&place, next).await.unwrap();
        assert_eq!(rest.len(), 5);
        assert_eq!(end, None);
    }

    /// Limits obeyed and violated: a value at the limit and one past it; a
    /// server filling its share, then freeing room.
    #[tokio::test]
    async fn limits_hold() {
        let stores = Stores::new(None);
        let place = at("s", "big");
        let at_limit = vec![0u8; VALUE_BYTES];
        stores
            .set_many(&place, vec![("a".into(), at_limit.clone())])
            .await
            .unwrap();
        let over = vec![("b".into(), vec![0u8; VALUE_BYTES + 1])];
        let refused = stores.set_many(&place, over).await.unwrap_err();
        assert!(matches!(refused, KvError::TooLarge(_)), "{refused}");
        let mut n = 1;
        let full = loop {
            let pair = vec![(format!("k{n}"), at_limit.clone())];
            match stores.set_many(&place, pair).await {
                Ok(()) => n += 1,
                Err(e) => break e,
            }
        };
        assert_eq!(full, KvError::Full);
        assert!(n >= SERVER_BYTES / VALUE_BYTES - 1, "{n}");
        // Another server still has room; freeing a value makes room again.
        let other = at("t", "big");
        let pair = vec![("a".into(), at_limit.clone())];
        stores.set_many(&other, pair.clone()).await.unwrap();
        stores.delete_many(&place, vec!["a".into()]).await.unwrap();
        stores.set_many(&place, pair).await.unwrap();
        let long = "x".repeat(NAME_BYTES + 1);
        assert!(matches!(Place::new("s", &long), Err(KvError::TooLarge(_))));
    }
}
