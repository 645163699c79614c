//! A server's stdout on its way to the MCP codec, watched for what the codec
//! would drop without a word: a message over the size limit, and text that
//! is not JSON-RPC (kept as a note for the error if nothing answers).
//!
//! Lines pass whole, so that one over the limit can be held back: the codec
//! never sees it, and in its place goes an error answer to the request it
//! answered (its `id` read from the line's start or end). That call fails and
//! the connection, with the server's state, stays. A line whose `id` cannot be
//! found ends the stream, with the reason.
//!
//! It is the one reader of every stdio server's output, a process's or a
//! component's: a line is never held beyond the limit, however long the
//! server writes without a newline, and whoever needs to see each message
//! (progress, a component's meter) is told here rather than splitting the
//! stream again.

use super::StderrTail;
use crate::upstream::handler::ProgressRoutes;
use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};
use tokio::io::{AsyncRead, ReadBuf};

/// How much of a line's start (and end) is kept to judge, quote, or find its `id`.
const HEAD: usize = 512;

/// Told each message on its way to the codec (an error answer in place of
/// one over the limit), its newline included.
pub(crate) type Seen = Arc<dyn Fn(&[u8]) + Send + Sync>;

pub(crate) struct Watched<R> {
    inner: R,
    notes: Arc<StderrTail>,
    limit: usize,
    /// The current line so far, while under the limit.
    line: Vec<u8>,
    /// Over the limit: its first bytes, and its last ones so far.
    skipped: Option<(Vec<u8>, VecDeque<u8>)>,
    /// Whole lines ready for the codec.
    out: VecDeque<u8>,
    /// The server's stdout ended.
    eof: bool,
    /// Where the progress read is handed on, in order.
    progress: ProgressRoutes,
    seen: Option<Seen>,
}

impl<R> Watched<R> {
    /// Watches `inner`; a line of `limit` bytes or more is answered for.
    pub(crate) fn new(
        inner: R,
        notes: Arc<StderrTail>,
        limit: usize,
        progress: ProgressRoutes,
    ) -> Self {
        Watched {
            inner,
            notes,
            limit,
            line: Vec::new(),
            skipped: None,
            out: VecDeque::new(),
            eof: false,
            progress,
            seen: None,
        }
    }

    /// Tells `seen` of each message passed on.
    pub(crate) fn telling(mut self, seen: Option<Seen>) -> Self {
        self.seen = seen;
        self
    }

    /// Passes `line` on to the codec.
    fn pass(&mut self, line: &[u8]) {
        if let Some(seen) = &self.seen {
            seen(line);
        }
        self.out.extend(line);
    }

    fn note_if_not_json(&self, head: &[u8]) {
        let text = String::from_utf8_lossy(&head[..head.len().min(120)]);
        let text = text.trim();
        if !text.is_empty() && !text.starts_with('{') {
            self.notes.note(
                format!("the server wrote text that is not JSON-RPC on stdout: {text:?}"),
                false,
            );
        }
    }

    /// Takes in what the server wrote. An error means an oversized line
    /// whose request cannot be told.
    fn take_in(&mut self, bytes: &[u8]) -> io::Result<()> {
        for chunk in bytes.split_inclusive(|&b| b == b'\n') {
            let ends = chunk.last() == Some(&b'\n');
            let content = &chunk[..chunk.len() - ends as usize];
            match &mut self.skipped {
                // rmcp drops a line whose content reaches the limit: checked
                // before the chunk is copied, so no more than the limit is held.
                None if self.line.len() + content.len() >= self.limit => {
                    let head = self
                        .line
                        .iter()
                        .chain(content)
                        .take(HEAD)
                        .copied()
                        .collect();
                    let mut tail = VecDeque::with_capacity(HEAD);
                    keep_end(&mut tail, &self.line);
                    keep_end(&mut tail, content);
                    self.line = Vec::new();
                    self.skipped = Some((head, tail));
                }
                None => {
                    self.line.extend_from_slice(chunk);
                    if ends {
                        let line = std::mem::take(&mut self.line);
                        self.note_if_not_json(&line);
                        if let Ok(text) = std::str::from_utf8(&line) {
                            crate::upstream::progress::route(&self.progress, text);
                        }
                        self.pass(&line);
                        // The buffer is kept for the next line, unless a big one grew it.
                        if line.capacity() <= REUSED {
                            self.line = line;
                            self.line.clear();
                        }
                    }
                    continue;
                }
                Some((_, tail)) => keep_end(tail, content),
            }
            if ends {
                self.answer_for_skipped()?;
            }
        }
        Ok(())
    }

    /// The end of an oversized line: an error answer in its place.
    fn answer_for_skipped(&mut self) -> io::Result<()> {
        let (head, mut tail) = self.skipped.take().expect("over the limit");
        let mib = self.limit >> 20;
        let Some(id) = request_id(&head, tail.make_contiguous()) else {
            self.notes.note(
                format!("the server sent a message larger than {mib} MiB (the limit), so the connection was closed"),
                true,
            );
            return Err(io::Error::other("message over the size limit"));
        };
        tracing::warn!("a server's answer was over {mib} MiB: that call fails");
        let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {
            "code": -32603,
            "message": format!("the server's answer is larger than {mib} MiB, the most mcpw takes in one message"),
        }});
        let mut line = answer.to_string().into_bytes();
        line.push(b'\n');
        self.pass(&line);
        Ok(())
    }
}

/// The largest line buffer kept for the next line.
const REUSED: usize = 64 << 10;

/// Keeps the last [`HEAD`] bytes of what `tail` held and `bytes`.
fn keep_end(tail: &mut VecDeque<u8>, bytes: &[u8]) {
    tail.extend(&bytes[bytes.len().saturating_sub(HEAD)..]);
    let extra = tail.len().saturating_sub(HEAD);
    tail.drain(..extra);
}

/// The `id` of a JSON-RPC message from its first and last bytes: the first
/// `"id"` key before its result or error, else the last one at its end.
fn request_id(head: &[u8], tail: &[u8]) -> Option<serde_json::Value> {
    let head = String::from_utf8_lossy(head);
    let body = ["\"result\"", "\"error\""]
        .iter()
        .filter_map(|k| head.find(k))
        .min()
        .unwrap_or(head.len());
    if let Some(id) = head[..body]
        .find("\"id\"")
        .and_then(|at| id_value(&head[at + 4..]))
    {
        return Some(id);
    }
    let tail = String::from_utf8_lossy(tail);
    tail.rfind("\"id\"")
        .and_then(|at| id_value(&tail[at + 4..]))
}

/// The value after `"id"`: `: 5` or `: "abc"`.
fn id_value(after_key: &str) -> Option<serde_json::Value> {
    let rest = after_key.trim_start().strip_prefix(':')?.trim_start();
    let end = if let Some(quoted) = rest.strip_prefix('"') {
        quoted.find('"')? + 2
    } else {
        rest.find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len())
    };
    serde_json::from_str(&rest[..end]).ok()
}

impl<R: AsyncRead + Unpin> AsyncRead for Watched<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.out.is_empty() {
                let n = this.out.len().min(buf.remaining());
                let (a, b) = this.out.as_slices();
                let from_a = n.min(a.len());
                buf.put_slice(&a[..from_a]);
                buf.put_slice(&b[..n - from_a]);
                this.out.drain(..n);
                if this.out.is_empty() && this.out.capacity() > REUSED {
                    this.out = VecDeque::new();
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // What is left of an unfinished line goes as it is.
                let rest = std::mem::take(&mut this.line);
                if rest.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                this.pass(&rest);
                continue;
            }
            let mut chunk = [0u8; 64 * 1024];
            let mut read = ReadBuf::new(&mut chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            if read.filled().is_empty() {
                this.eof = true;
                continue;
            }
            this.take_in(read.filled())?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &[u8], limit: usize) -> (io::Result<Vec<u8>>, Option<String>) {
        let notes = Arc::new(StderrTail::default());
        let mut w = Watched::new(input, notes.clone(), limit, ProgressRoutes::default());
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

    /// Progress is handed to its call as it passes, before the result
    /// behind it reaches the codec.
    #[tokio::test]
    async fn progress_read_goes_to_its_call_before_the_result() {
        let routes = ProgressRoutes::default();
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        routes.calls.lock().unwrap().insert("3".into(), tx);
        let input = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":3,\"progress\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n";
        let notes = Arc::new(StderrTail::default());
        let mut w = Watched::new(&input[..], notes, 1 << 20, routes);
        let mut out = Vec::new();
        w.read_to_end(&mut out).await.unwrap();
        assert_eq!(out, input, "lines pass untouched");
        assert_eq!(rx.try_recv().unwrap().progress, 1.0);
        assert!(rx.try_recv().is_err(), "the result is no progress");
    }

    #[tokio::test]
    async fn text_that_is_not_json_is_noted() {
        let (out, note) = read_all(b"{\"a\":1}\nStarting server...\n{\"b\":2}\n", 64).await;
        assert!(out.is_ok(), "the stream goes on");
        assert!(note.unwrap().contains("\"Starting server...\""));
    }

    #[tokio::test]
    async fn an_oversized_answer_is_replaced_by_an_error_for_its_request() {
        let mut input = b"{\"ok\":1}\n{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'x', 3 << 20));
        input.extend(b"\"}\n{\"after\":2}\n");
        let (out, note) = read_all(&input, 2 << 20).await;
        let out = String::from_utf8(out.unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3, "{}", &out[..out.len().min(300)]);
        let answer: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(answer["id"], 7);
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("larger than 2 MiB")
        );
        assert_eq!(lines[2], "{\"after\":2}");
        assert_eq!(note, None);
        // The id at the end, as some servers write it.
        let mut input = b"{\"result\":\"".to_vec();
        input.extend(std::iter::repeat_n(b'y', 3 << 20));
        input.extend(b"\",\"jsonrpc\":\"2.0\",\"id\":\"req-9\"}\n");
        let (out, _) = read_all(&input, 2 << 20).await;
        let answer: serde_json::Value = serde_json::from_slice(&out.unwrap()).unwrap();
        assert_eq!(answer["id"], "req-9");
    }

    /// Written with no newline, far past the limit: never more than the
    /// limit is held, and whoever watches the messages sees the error
    /// answer that takes the line's place (a component's meter ends the
    /// request's time with it).
    #[test]
    fn a_line_past_the_limit_is_not_held_and_its_answer_is_seen() {
        let limit = 1 << 20;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let told = seen.clone();
        let notes = Arc::new(StderrTail::default());
        let mut w = Watched::new(&b""[..], notes, limit, ProgressRoutes::default()).telling(Some(
            Arc::new(move |line: &[u8]| told.lock().unwrap().push(line.to_vec())),
        ));
        w.take_in(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n")
            .unwrap();
        let chunk = vec![b'x'; (64 << 10) + 1];
        for _ in 0..64 {
            w.take_in(&chunk).unwrap();
            assert!(w.line.len() < limit, "{} held", w.line.len());
        }
        w.take_in(b",\"jsonrpc\":\"2.0\",\"id\":2}\nxx").unwrap();
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        let answer: serde_json::Value = serde_json::from_slice(&seen[1]).unwrap();
        assert_eq!(answer["id"], 2);
        assert!(answer["error"]["message"].to_string().contains("1 MiB"));
        assert_eq!(w.out.len(), seen[0].len() + seen[1].len());
        assert_eq!(w.line, b"xx", "the next line starts");
    }

    #[tokio::test]
    async fn an_oversized_line_with_no_id_ends_the_stream_with_the_reason() {
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
