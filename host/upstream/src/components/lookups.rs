//! Name lookups (`wasi:sockets/ip-name-lookup`) limited to the hosts a
//! component is granted. WASI's own implementation resolves any name once
//! lookups are allowed, and a lookup is itself a message to the world (a
//! name under a domain its author watches carries data out, connection or
//! not). So mcpw puts this one in front of it: a name that `permissions.network`
//! does not grant is refused (`access-denied`) and logged as any refusal; a
//! granted one is resolved by WASI as before. Linked over WASI's own.

use super::sandbox::{Allowed, refused};
use std::sync::Arc;
use wasmtime::component::{HasData, Linker, Resource};
use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{
    self, Host, HostResolveAddressStream, IpAddress, ResolveAddressStream,
};
use wasmtime_wasi::p2::bindings::sockets::network::{self, ErrorCode, Network};
use wasmtime_wasi::p2::{DynPollable, SocketError};
use wasmtime_wasi::sockets::WasiSocketsCtxView;

/// The lookups of one instance: WASI's, behind the names it is granted.
pub(crate) struct Lookups<'a> {
    /// WASI's sockets, which resolve what is granted.
    pub sockets: WasiSocketsCtxView<'a>,
    /// What the component is granted.
    pub allowed: &'a Arc<Allowed>,
}

struct Granted;

impl HasData for Granted {
    type Data<'a> = Lookups<'a>;
}

/// Links `wasi:sockets/ip-name-lookup` over WASI's own (the linker must
/// allow shadowing), with `view` giving an instance's [`Lookups`].
pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> Lookups<'_>,
) -> wasmtime::Result<()> {
    ip_name_lookup::add_to_linker::<T, Granted>(linker, view)
}

// The lookup's errors are the network interface's: converted as WASI does.
impl network::Host for Lookups<'_> {
    fn convert_error_code(&mut self, error: SocketError) -> wasmtime::Result<ErrorCode> {
        network::Host::convert_error_code(&mut self.sockets, error)
    }

    fn network_error_code(
        &mut self,
        error: Resource<wasmtime_wasi::p2::bindings::sockets::network::Error>,
    ) -> wasmtime::Result<Option<ErrorCode>> {
        network::Host::network_error_code(&mut self.sockets, error)
    }
}

impl network::HostNetwork for Lookups<'_> {
    fn drop(&mut self, network: Resource<Network>) -> wasmtime::Result<()> {
        network::HostNetwork::drop(&mut self.sockets, network)
    }
}

impl Host for Lookups<'_> {
    fn resolve_addresses(
        &mut self,
        network: Resource<Network>,
        name: String,
    ) -> Result<Resource<ResolveAddressStream>, SocketError> {
        if !self.allowed.admits_name(&name) {
            refused(format!("a name lookup of {name:?}"));
            return Err(ErrorCode::AccessDenied.into());
        }
        Host::resolve_addresses(&mut self.sockets, network, name)
    }
}

impl HostResolveAddressStream for Lookups<'_> {
    fn resolve_next_address(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> Result<Option<IpAddress>, SocketError> {
        HostResolveAddressStream::resolve_next_address(&mut self.sockets, stream)
    }

    fn subscribe(
        &mut self,
        stream: Resource<ResolveAddressStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        HostResolveAddressStream::subscribe(&mut self.sockets, stream)
    }

    fn drop(&mut self, stream: Resource<ResolveAddressStream>) -> wasmtime::Result<()> {
        HostResolveAddressStream::drop(&mut self.sockets, stream)
    }
}
