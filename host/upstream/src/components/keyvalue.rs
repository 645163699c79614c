//! `wasi:keyvalue` (draft 0.2.0: store, atomics, batch) for component
//! servers: state that outlives an instance. A proxy's instance lives for
//! one request and a command's is started again past its `timeoutMs`; what
//! they keep here stays. Each server sees only buckets of its own (a bucket
//! is named by the server and the identifier opened). Values are kept in
//! this process's memory, or in Redis when the process shares state
//! (`--shared-state`), so a session may move between replicas.
//!
//! Every component may use it: it reaches nothing of the user's, only a
//! store of its own, bounded (`stores` has the limits).

mod stores;

pub use stores::{KvError, Place, Stores};

use std::sync::Arc;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/servers",
        world: "wasi:keyvalue/imports",
        imports: { default: async | trappable },
        with: {
            "wasi:keyvalue/store.bucket": super::Bucket,
        },
    });
}

use bindings::wasi::keyvalue::{atomics, batch, store};

/// An open bucket, as the component holds it.
pub struct Bucket(Place);

/// Whose store an instance reaches.
#[derive(Clone)]
pub struct Scope {
    /// Where values are kept.
    pub stores: Arc<Stores>,
    /// The server the instance runs for.
    pub server: String,
}

/// The interfaces' host, for one call: the instance's scope and its table.
pub struct KeyValue<'a> {
    scope: &'a Scope,
    table: &'a mut ResourceTable,
}

struct HasKeyValue;

impl HasData for HasKeyValue {
    type Data<'a> = KeyValue<'a>;
}

/// Links the interfaces; `view` finds an instance's scope and table.
pub fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> KeyValue<'_>,
) -> wasmtime::Result<()> {
    store::add_to_linker::<T, HasKeyValue>(linker, view)?;
    atomics::add_to_linker::<T, HasKeyValue>(linker, view)?;
    batch::add_to_linker::<T, HasKeyValue>(linker, view)
}

impl<'a> KeyValue<'a> {
    /// The host of `scope`'s buckets, kept in `table`.
    pub fn new(scope: &'a Scope, table: &'a mut ResourceTable) -> KeyValue<'a> {
        KeyValue { scope, table }
    }

    fn place(&self, bucket: &Resource<Bucket>) -> wasmtime::Result<Place> {
        Ok(self.table.get(bucket)?.0.clone())
    }
}

type Answer<T> = wasmtime::Result<Result<T, store::Error>>;

/// A failure as the component sees it.
fn said<T>(outcome: Result<T, KvError>) -> Result<T, store::Error> {
    outcome.map_err(|e| store::Error::Other(e.to_string()))
}

impl store::Host for KeyValue<'_> {
    async fn open(&mut self, identifier: String) -> Answer<Resource<Bucket>> {
        let place = match Place::new(&self.scope.server, &identifier) {
            Ok(p) => p,
            Err(e) => return Ok(said(Err(e))),
        };
        Ok(Ok(self.table.push(Bucket(place))?))
    }
}

impl store::HostBucket for KeyValue<'_> {
    async fn get(&mut self, bucket: Resource<Bucket>, key: String) -> Answer<Option<Vec<u8>>> {
        let at = self.place(&bucket)?;
        let got = self.scope.stores.get_many(&at, vec![key]).await;
        Ok(said(got.map(|mut v| v.pop().flatten())))
    }

    async fn set(&mut self, bucket: Resource<Bucket>, key: String, value: Vec<u8>) -> Answer<()> {
        let at = self.place(&bucket)?;
        Ok(said(
            self.scope.stores.set_many(&at, vec![(key, value)]).await,
        ))
    }

    async fn delete(&mut self, bucket: Resource<Bucket>, key: String) -> Answer<()> {
        let at = self.place(&bucket)?;
        Ok(said(self.scope.stores.delete_many(&at, vec![key]).await))
    }

    async fn exists(&mut self, bucket: Resource<Bucket>, key: String) -> Answer<bool> {
        let at = self.place(&bucket)?;
        let got = self.scope.stores.get_many(&at, vec![key]).await;
        Ok(said(got.map(|v| v.first().is_some_and(Option::is_some))))
    }

    async fn list_keys(
        &mut self,
        bucket: Resource<Bucket>,
        cursor: Option<u64>,
    ) -> Answer<store::KeyResponse> {
        let at = self.place(&bucket)?;
        let page = self.scope.stores.list(&at, cursor).await;
        Ok(said(
            page.map(|(keys, cursor)| store::KeyResponse { keys, cursor }),
        ))
    }

    async fn drop(&mut self, bucket: Resource<Bucket>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        Ok(())
    }
}

impl atomics::Host for KeyValue<'_> {
    async fn increment(
        &mut self,
        bucket: Resource<Bucket>,
        key: String,
        delta: u64,
    ) -> Answer<u64> {
        let at = self.place(&bucket)?;
        Ok(said(self.scope.stores.increment(&at, &key, delta).await))
    }
}

impl batch::Host for KeyValue<'_> {
    async fn get_many(
        &mut self,
        bucket: Resource<Bucket>,
        keys: Vec<String>,
    ) -> Answer<Vec<Option<(String, Vec<u8>)>>> {
        let at = self.place(&bucket)?;
        let got = self.scope.stores.get_many(&at, keys.clone()).await;
        Ok(said(got.map(|values| {
            keys.into_iter()
                .zip(values)
                .map(|(k, v)| v.map(|v| (k, v)))
                .collect()
        })))
    }

    async fn set_many(
        &mut self,
        bucket: Resource<Bucket>,
        key_values: Vec<(String, Vec<u8>)>,
    ) -> Answer<()> {
        let at = self.place(&bucket)?;
        Ok(said(self.scope.stores.set_many(&at, key_values).await))
    }

    async fn delete_many(&mut self, bucket: Resource<Bucket>, keys: Vec<String>) -> Answer<()> {
        let at = self.place(&bucket)?;
        Ok(said(self.scope.stores.delete_many(&at, keys).await))
    }
}
