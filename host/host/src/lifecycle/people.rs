//! The pool of each person's own connections to the servers of
//! `oauth.perPerson` (opened by [`super::person_connect`]): Alice's
//! calls go out on a connection opened with Alice's login, Bob's on Bob's,
//! and neither ever on the other's or on the server's shared login.
//!
//! Connections are kept per (server, principal) in one pool per process,
//! bounded: at the cap the least recently used idle one is closed, and when
//! none is idle a new person is refused at once (no queue). A person's
//! failure stays theirs: a missing login is no backoff for the server, and
//! the server's health is what its shared connection says. A person's
//! connection hears nothing for the others: its log messages and list
//! changes go nowhere (another person's session must never see them).

use crate::clock::Instant;
use crate::upstream::Connection;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How many person connections a process keeps open at most, across
/// servers, when the settings do not say.
pub(crate) const DEFAULT_MAX_PEOPLE: usize = 256;

/// Whose login a request to a server goes out with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Who<'a> {
    /// The server's shared login: the command line, the Rust API, `serve`
    /// on stdio, a client that signed in as nobody in particular.
    Shared,
    /// A principal (`token:<name>`, `oauth:<issuer>#sub:<sub>`): their own
    /// login on a per-person server, the shared one elsewhere; with the
    /// access token they presented, when an issuer signed it (exchanged
    /// where a server takes that).
    Person(&'a str, Option<&'a str>),
    /// Nobody to act for (a guest's own call): refused by a per-person
    /// server rather than sent with somebody's login.
    Nobody,
}

/// One person's connection to one server.
pub(super) struct PersonSlot {
    /// The server's definition it was opened for: a reload that changes
    /// the server retires it.
    hash: String,
    /// Held while connecting: one attempt at a time per person.
    pub(super) connect_lock: tokio::sync::Mutex<()>,
    conn: Mutex<Option<Arc<Connection>>>,
    last_used: Mutex<Instant>,
    /// When its login was last found still stored.
    checked: Mutex<Instant>,
    /// When the token its connection was opened with expires (seconds
    /// since the epoch), for a token exchanged for the caller's.
    expires: Mutex<Option<u64>>,
    in_flight: AtomicUsize,
}

impl PersonSlot {
    /// Its connection, unless it closed (then forgotten).
    pub(super) fn live(&self) -> Option<Arc<Connection>> {
        let mut conn = lock(&self.conn);
        match &*conn {
            Some(c) if c.is_open() => Some(c.clone()),
            Some(_) => {
                *conn = None;
                None
            }
            None => None,
        }
    }

    /// Keeps `conn` as its connection, just opened with a login (one that
    /// `expires` then, for an exchanged token).
    pub(super) fn hold(&self, conn: Arc<Connection>, expires: Option<u64>) {
        *lock(&self.conn) = Some(conn);
        *lock(&self.checked) = Instant::now();
        *lock(&self.expires) = expires;
    }

    /// Its connection, taken from it, when the token it was opened with
    /// expires within `margin`.
    pub(super) fn expiring(&self, margin: Duration) -> Option<Arc<Connection>> {
        let at = (*lock(&self.expires))?;
        if at > crate::clock::now_secs() + margin.as_secs() {
            return None;
        }
        *lock(&self.expires) = None;
        lock(&self.conn).take()
    }

    /// Whether its login is due to be looked for again (`every` since the
    /// last time); counts this as the look.
    pub(super) fn due_for_check(&self, every: Duration) -> bool {
        let now = Instant::now();
        let mut checked = lock(&self.checked);
        let due = now.duration_since(*checked) >= every;
        if due {
            *checked = now;
        }
        due
    }

    /// Forgets `conn` if it is still its connection (it died).
    pub(super) fn drop_dead(&self, conn: &Arc<Connection>) {
        let mut held = lock(&self.conn);
        if held.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *held = None;
        }
    }

    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Acquire) == 0
    }

    fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// One call in flight on a person's connection, until dropped.
pub(super) struct Busy<'a>(&'a PersonSlot);

impl<'a> Busy<'a> {
    pub(super) fn enter(slot: &'a PersonSlot) -> Self {
        slot.in_flight.fetch_add(1, Ordering::AcqRel);
        slot.touch();
        Busy(slot)
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
        self.0.touch();
    }
}

type Key = (Arc<str>, Arc<str>);

/// Every person connection of the process, by (server, owner).
pub(super) struct People {
    slots: Mutex<HashMap<Key, Arc<PersonSlot>>>,
    max: usize,
}

impl People {
    pub(super) fn new(max: usize) -> People {
        People {
            slots: Mutex::default(),
            max: max.max(1),
        }
    }

    /// `owner`'s slot for `server` as defined by `hash`, made when there is
    /// none (closing the least recently used idle one at the cap); a slot
    /// of an older definition is replaced. `Err` with the cap when every
    /// slot is busy.
    pub(super) fn slot(
        &self,
        server: &str,
        hash: &str,
        owner: &str,
    ) -> Result<(Arc<PersonSlot>, Vec<Arc<Connection>>), usize> {
        let mut slots = lock(&self.slots);
        let key: Key = (server.into(), owner.into());
        let mut closing = Vec::new();
        match slots.get(&key) {
            Some(s) if s.hash == hash => return Ok((s.clone(), closing)),
            Some(_) => closing.extend(slots.remove(&key).and_then(|s| lock(&s.conn).take())),
            None => {}
        }
        if slots.len() >= self.max {
            let oldest = slots
                .iter()
                .filter(|(_, s)| s.idle())
                .min_by_key(|(_, s)| *lock(&s.last_used))
                .map(|(k, _)| k.clone());
            let Some(oldest) = oldest else {
                return Err(self.max);
            };
            closing.extend(slots.remove(&oldest).and_then(|s| lock(&s.conn).take()));
        }
        let slot = Arc::new(PersonSlot {
            hash: hash.to_string(),
            connect_lock: Default::default(),
            conn: Mutex::new(None),
            last_used: Mutex::new(Instant::now()),
            checked: Mutex::new(Instant::now()),
            expires: Mutex::new(None),
            in_flight: AtomicUsize::new(0),
        });
        slots.insert(key, slot.clone());
        Ok((slot, closing))
    }

    /// Takes out the connections idle longer than `idle` (none in flight),
    /// with their servers, forgetting their slots.
    pub(super) fn idle_since(&self, idle: Duration) -> Vec<(Arc<str>, Arc<Connection>)> {
        let now = Instant::now();
        let mut slots = lock(&self.slots);
        let stale: Vec<Key> = slots
            .iter()
            .filter(|(_, s)| s.idle() && now.duration_since(*lock(&s.last_used)) >= idle)
            .map(|(k, _)| k.clone())
            .collect();
        stale
            .into_iter()
            .filter_map(|k| {
                let slot = slots.remove(&k)?;
                let conn = lock(&slot.conn).take()?;
                Some((k.0, conn))
            })
            .collect()
    }
}
