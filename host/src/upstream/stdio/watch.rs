//! A server's stdout on its way to the MCP codec, watched for what the codec
//! would drop without a word: a message over the size limit (the connection
//! is closed with that reason instead of leaving the call to time out) and
//! text that is not JSON-RPC (kept as a note for the error if nothing answers).

use super::StderrTail;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// How much of a line is kept to judge (and quote) it.
const HEAD: usize = 120;

pub struct Watched<R> {
    inner: R,
    notes: Arc<StderrTail>,
    limit: usize,
    /// Bytes of the current line so far (without its newline).
    line_len: usize,
    /// Its first bytes.
    head: Vec<u8>,
}

impl<R> Watched<R> {
    /// Watches `inner`; a line longer than `limit` bytes ends the stream.
    pub fn new(inner: R, notes: Arc<StderrTail>, limit: usize) -> Self {
        Watched {
            inner,
            notes,
            limit,
            line_len: 0,
            head: Vec::with_capacity(HEAD),
        }
    }

    fn line_ended(&mut self) {
        let text = String::from_utf8_lossy(&self.head);
        let text = text.trim();
        if !text.is_empty() && !text.starts_with('{') {
            self.notes.note(
                format!("the server wrote text that is not JSON-RPC on stdout: {text:?}"),
                false,
            );
        }
        self.line_len = 0;
        self.head.clear();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let mut oversized = false;
        for chunk in buf.filled()[before..].split_inclusive(|&b| b == b'\n') {
            let ends = chunk.last() == Some(&b'\n');
            let content = &chunk[..chunk.len() - ends as usize];
            this.line_len += content.len();
            let room = HEAD.saturating_sub(this.head.len());
            this.head
                .extend_from_slice(&content[..content.len().min(room)]);
            // rmcp drops a line whose content reaches the limit (with its newline, over it).
            if this.line_len >= this.limit {
                let mib = this.limit >> 20;
                this.notes.note(
                    format!("the server sent a message larger than {mib} MiB (the limit), so the connection was closed"),
                    true,
                );
                oversized = true;
                break;
            }
            if ends {
                this.line_ended();
            }
        }
        if oversized {
            // An error read hands back no bytes.
            buf.set_filled(before);
            return Poll::Ready(Err(io::Error::other("message over the size limit")));
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], limit: usize) -> (io::Result<Vec<u8>>, Option<String>) {
        let notes = Arc::new(StderrTail::default());
        let mut w = Watched::new(input, notes.clone(), limit);
        let mut out = Vec::new();
        let r = w.read_to_end(&mut out).await.map(|_| out);
        (r, notes.stdout_note())
    }

    #[tokio::test]
    async fn json_lines_pass_untouched() {
        let input = b"{\"jsonrpc\":\"2.0\"}\n  {\"id\":1}\n\n";
        let (out, note) = read_all(input, 64).await;
        assert_eq!(out.unwrap(), input);
        assert_eq!(note, None);
    }

    #[tokio::test]
    async fn text_that_is_not_json_is_noted() {
        let (out, note) = read_all(b"{\"a\":1}\nStarting server...\n{\"b\":2}\n", 64).await;
        assert!(out.is_ok(), "the stream goes on");
        assert!(note.unwrap().contains("\"Starting server...\""));
    }

    #[tokio::test]
    async fn an_oversized_line_ends_the_stream_with_the_reason() {
        let mut input = b"{\"ok\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 << 20));
        input.push(b'\n');
        let (out, note) = read_all(&input, 2 << 20).await;
        assert!(out.is_err());
        assert!(note.unwrap().contains("larger than 2 MiB"));
        // Just under the limit is fine; at it, rmcp would drop it.
        let mut input = vec![b'{'; (1 << 20) - 1];
        input.push(b'\n');
        assert!(read_all(&input, 1 << 20).await.0.is_ok());
        input.insert(0, b'{');
        assert!(read_all(&input, 1 << 20).await.0.is_err());
    }
}
