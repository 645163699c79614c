//! The sockets mcpw accepts: every HTTP listener (the gateway with its
//! operations endpoints, the OAuth callback) goes through [`listener`].

use axum::serve::ListenerExt;

/// `tcp` as a listener whose accepted connections send small writes at once.
///
/// Without `TCP_NODELAY`, a response written in two parts (headers, then a
/// body or an SSE frame) waits for the client's delayed ACK: about 40 ms per
/// request on Linux. That is the whole cost of an `echo` through the gateway
/// several times over.
pub fn listener(
    tcp: tokio::net::TcpListener,
) -> impl axum::serve::Listener<Io = tokio::net::TcpStream, Addr = std::net::SocketAddr> {
    tcp.tap_io(|stream: &mut tokio::net::TcpStream| {
        if let Err(error) = stream.set_nodelay(true) {
            // The connection still works, only slower: not worth refusing it.
            tracing::debug!("TCP_NODELAY not set on an accepted connection: {error}");
        }
    })
}

#[cfg(test)]
mod tests {
    use axum::serve::Listener;

    /// Obeyed: what `listener` accepts has Nagle off. Violated: the plain
    /// listener's accepted socket has it on, so the check can tell them apart.
    #[tokio::test]
    async fn accepted_connections_have_nodelay_and_plain_ones_do_not() {
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let mut ours = super::listener(tcp);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = ours.accept().await;
        assert!(
            accepted.nodelay().unwrap(),
            "an accepted socket has Nagle on"
        );

        let mut plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = plain.local_addr().unwrap();
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (accepted, _) = Listener::accept(&mut plain).await;
        assert!(
            !accepted.nodelay().unwrap(),
            "Linux's default changed: this test no longer tells"
        );
    }
}
