//! Which of mcpw's requests a component server is answering, and since when:
//! read off the newline-delimited JSON-RPC mcpw writes to it, and off the
//! messages it writes back as the one reader of a server's output
//! (`upstream::stdio`) passes them on, so that `timeoutMs` bounds a request's
//! time (armed only while one is outstanding) whatever the component does
//! meanwhile.

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use std::collections::HashMap;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::AsyncWrite;

/// The requests outstanding, by id, with when each was sent.
#[derive(Debug, Default)]
pub struct Meter {
    outstanding: Mutex<HashMap<String, Instant>>,
}

/// What a message says of itself.
#[derive(Deserialize)]
struct Head {
    id: Option<Value>,
    method: Option<IgnoredAny>,
}

impl Meter {
    /// A message mcpw sent: a request (a method and an id) is outstanding.
    fn sent(&self, line: &[u8]) {
        if let Ok(Head {
            id: Some(id),
            method: Some(_),
        }) = serde_json::from_slice(line)
        {
            lock(&self.outstanding).insert(id.to_string(), Instant::now());
        }
    }

    /// A message the component wrote: an answer (an id, no method) ends its request.
    pub(super) fn answered(&self, line: &[u8]) {
        if let Ok(Head {
            id: Some(id),
            method: None,
        }) = serde_json::from_slice(line)
        {
            lock(&self.outstanding).remove(&id.to_string());
        }
    }

    /// How long the oldest outstanding request has run.
    pub fn longest(&self) -> Option<Duration> {
        lock(&self.outstanding).values().min().map(|t| t.elapsed())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Complete lines out of a stream's chunks.
#[derive(Debug, Default)]
struct Lines(Vec<u8>);

impl Lines {
    fn feed(&mut self, bytes: &[u8], each: impl Fn(&[u8])) {
        let mut rest = bytes;
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            match self.0.is_empty() {
                true => each(&rest[..end]),
                false => {
                    self.0.extend_from_slice(&rest[..end]);
                    each(&self.0);
                    self.0.clear();
                }
            }
            rest = &rest[end + 1..];
        }
        self.0.extend_from_slice(rest);
    }
}

/// mcpw's writes to the component, metered.
pub struct Sent<W> {
    inner: W,
    meter: Arc<Meter>,
    lines: Lines,
}

impl<W> Sent<W> {
    pub fn new(inner: W, meter: Arc<Meter>) -> Self {
        Sent {
            inner,
            meter,
            lines: Lines::default(),
        }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Sent<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let written = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = written {
            let meter = this.meter.clone();
            this.lines.feed(&buf[..n], |line| meter.sent(line));
        }
        written
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_outstanding_from_its_sending_to_its_answer() {
        let meter = Meter::default();
        let mut sent = Lines::default();
        let mut answered = Lines::default();
        assert_eq!(meter.longest(), None);
        sent.feed(
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","pa"#,
            |l| meter.sent(l),
        );
        assert_eq!(meter.longest(), None, "half a line is no request yet");
        sent.feed(
            b"rams\":{}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n",
            |l| meter.sent(l),
        );
        assert!(meter.longest().is_some());
        // The component's own request to mcpw does not end mcpw's.
        answered.feed(
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"sampling/createMessage\"}\n",
            |l| meter.answered(l),
        );
        assert!(meter.longest().is_some());
        answered.feed(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n", |l| {
            meter.answered(l)
        });
        assert_eq!(meter.longest(), None);
    }

    #[test]
    fn ids_of_either_type_are_told_apart() {
        let meter = Meter::default();
        meter.sent(br#"{"id":"1","method":"a"}"#);
        meter.answered(br#"{"id":1,"result":{}}"#);
        assert!(
            meter.longest().is_some(),
            "the number 1 is not the string \"1\""
        );
        meter.answered(br#"{"id":"1","error":{}}"#);
        assert_eq!(meter.longest(), None);
    }
}
