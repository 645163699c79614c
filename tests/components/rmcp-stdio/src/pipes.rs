//! Standard input and output as tokio streams over `wasi:io`. tokio's own
//! stdio needs threads, which wasm32-wasip2 has none of: a read or write
//! that would wait subscribes to the stream's pollable, and one task waits
//! on every such pollable at once (`wasi:io/poll`), letting the runtime run
//! whatever is ready in between.

use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use wasi::cli::{stdin, stdout};
use wasi::io::poll::{Pollable, poll};
use wasi::io::streams::{InputStream, OutputStream, StreamError};

thread_local! {
    /// Pollables tasks wait on, with their wakers.
    static WAITING: RefCell<Vec<(Pollable, Waker)>> = const { RefCell::new(Vec::new()) };
}

/// How long the waiting task blocks when nothing is ready: the most a tokio
/// timer can be late while the streams are idle.
const IDLE_NS: u64 = 50_000_000;

/// Standard input and output, and the task that wakes their readers and
/// writers (on the current `LocalSet`).
pub fn stdio() -> (Input, Output) {
    tokio::task::spawn_local(wait_on_streams());
    (Input(stdin::get_stdin()), Output(stdout::get_stdout()))
}

/// Waits for the streams' pollables, after every ready task ran.
async fn wait_on_streams() {
    loop {
        tokio::task::yield_now().await;
        if !wake_ready() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }
}

/// Blocks until a pollable waited on is ready (or a while passes) and wakes
/// its task; false when none is waited on.
fn wake_ready() -> bool {
    let waiting = WAITING.with(|w| std::mem::take(&mut *w.borrow_mut()));
    if waiting.is_empty() {
        return false;
    }
    let idle = wasi::clocks::monotonic_clock::subscribe_duration(IDLE_NS);
    let mut all: Vec<&Pollable> = waiting.iter().map(|(p, _)| p).collect();
    all.push(&idle);
    let ready = poll(&all);
    let mut still = Vec::new();
    for (i, (pollable, waker)) in waiting.into_iter().enumerate() {
        match ready.contains(&(i as u32)) {
            true => waker.wake(),
            false => still.push((pollable, waker)),
        }
    }
    WAITING.with(|w| w.borrow_mut().extend(still));
    true
}

fn wait(pollable: Pollable, cx: &Context<'_>) {
    WAITING.with(|w| w.borrow_mut().push((pollable, cx.waker().clone())));
}

fn failed(e: StreamError) -> io::Error {
    io::Error::other(format!("{e:?}"))
}

/// Standard input.
pub struct Input(InputStream);

impl AsyncRead for Input {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.0.read(buf.remaining() as u64) {
            Ok(bytes) if bytes.is_empty() => {
                wait(self.0.subscribe(), cx);
                Poll::Pending
            }
            Ok(bytes) => {
                buf.put_slice(&bytes);
                Poll::Ready(Ok(()))
            }
            // Closed: the end of the input.
            Err(StreamError::Closed) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(failed(e))),
        }
    }
}

/// Standard output.
pub struct Output(OutputStream);

impl AsyncWrite for Output {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let room = match self.0.check_write() {
            Ok(room) => room,
            Err(e) => return Poll::Ready(Err(failed(e))),
        };
        if room == 0 {
            wait(self.0.subscribe(), cx);
            return Poll::Pending;
        }
        let n = buf.len().min(room as usize);
        Poll::Ready(self.0.write(&buf[..n]).map(|()| n).map_err(failed))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.0.blocking_flush().map_err(failed))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_flush(cx)
    }
}
