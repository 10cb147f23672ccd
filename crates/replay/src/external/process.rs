//! The child process of an external policy: spawned through the shell, fed by a writer
//! thread, read message by message (lines, or length-prefixed MessagePack) by a reader thread,
//! so that the replay's thread only ever waits with a timeout. Dropping it kills the child's process group (the shell and what it started,
//! on Unix) and reaps the child; the threads are never joined (a
//! grandchild holding the pipes open cannot hang jitterlab).

use std::io::{self, BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::Format;
use super::msgpack::PREFIX;

/// The longest reply read: beyond it, a reply "that never ends" is an error.
pub(super) const MAX_LINE: usize = 256 << 20;

/// How much of the child's standard error is kept for error messages.
const STDERR_TAIL: usize = 2048;

/// What the reader thread saw.
enum Line {
    /// A complete message, without its newline or length prefix.
    Text(Vec<u8>),
    /// A message longer than [`MAX_LINE`].
    TooLong,
    /// Where a length prefix was due, text: the first bytes.
    Unframed(Vec<u8>),
    /// The child closed its standard output.
    Eof,
    /// Reading failed.
    Failed(io::Error),
}

/// Why waiting for a reply failed.
pub(super) enum WaitError {
    /// Nothing complete came within the timeout.
    Timeout,
    /// The child's output ended (it exited or crashed); its exit status when known.
    Ended(Option<ExitStatus>),
    /// A message beyond [`MAX_LINE`] bytes.
    TooLong,
    /// Text where a MessagePack length prefix was due (its first bytes): a child answering
    /// in JSON Lines, or in no protocol at all.
    Unframed(Vec<u8>),
    /// Reading the pipe failed.
    Io(io::Error),
}

/// A running external policy.
pub(super) struct Process {
    child: Child,
    to_child: Option<Sender<Vec<u8>>>,
    /// Buffers the writer is done with, to encode the next batches into (a fresh buffer per
    /// batch costs a page fault per 4 KiB).
    written: Option<Receiver<Vec<u8>>>,
    lines: Receiver<Line>,
    stderr: Arc<Mutex<Vec<u8>>>,
    write_error: Arc<Mutex<Option<io::Error>>>,
    /// The child was waited for (its id may be reused: its group is not killed any more).
    reaped: bool,
}

/// The platform's shell running `command`.
fn shell(command: &str) -> Command {
    if cfg!(windows) {
        let mut c = Command::new("cmd");
        c.args(["/C", command]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", command]);
        // Its own process group, so that what the shell starts is killed with it.
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut c, 0);
        c
    }
}

/// Kills the process group `pid` leads (the shell and what it started), through `kill(1)`:
/// the crate has no `unsafe` for a direct `kill(2)`. Only called before the leader is reaped,
/// so its id cannot have been reused.
fn kill_group(pid: u32) {
    if cfg!(unix) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{pid}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

impl Process {
    /// Starts `command` through the shell, its standard input and output piped, its replies
    /// read in `format`'s framing.
    pub(super) fn spawn(command: &str, format: Format) -> io::Result<Self> {
        let mut child = shell(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("no stdin pipe"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout pipe"))?;
        let stderr_pipe = child.stderr.take();
        let (to_child, batches) = mpsc::channel::<Vec<u8>>();
        let (done, written) = mpsc::channel::<Vec<u8>>();
        let write_error = Arc::new(Mutex::new(None));
        let we = Arc::clone(&write_error);
        thread::Builder::new()
            .name("exec-writer".into())
            .spawn(move || write_all(stdin, &batches, &done, &we))?;
        let (tx, lines) = mpsc::channel();
        thread::Builder::new()
            .name("exec-reader".into())
            .spawn(move || match format {
                Format::Json => read_lines(stdout, &tx),
                Format::Msgpack => read_frames(stdout, &tx),
            })?;
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(pipe) = stderr_pipe {
            let keep = Arc::clone(&stderr);
            thread::Builder::new()
                .name("exec-stderr".into())
                .spawn(move || keep_tail(pipe, &keep))?;
        }
        Ok(Self {
            child,
            to_child: Some(to_child),
            written: Some(written),
            lines,
            stderr,
            write_error,
            reaped: false,
        })
    }

    /// The buffers the writer is done with, emptied, to encode the next messages into (once:
    /// later calls get a channel that stays empty).
    pub(super) fn recycled(&mut self) -> Receiver<Vec<u8>> {
        self.written.take().unwrap_or_else(|| mpsc::channel().1)
    }

    /// Queues one message for the child (never blocks).
    pub(super) fn send(&self, line: Vec<u8>) {
        if let Some(tx) = &self.to_child {
            // A closed channel means the writer stopped: the error shows when reading.
            let _ = tx.send(line);
        }
    }

    /// Closes the child's standard input once everything queued is written.
    pub(super) fn close_input(&mut self) {
        self.to_child = None;
    }

    /// The next reply message, within `timeout`.
    pub(super) fn recv(&mut self, timeout: Duration) -> Result<Vec<u8>, WaitError> {
        match self.lines.recv_timeout(timeout) {
            Ok(Line::Text(t)) => Ok(t),
            Ok(Line::TooLong) => Err(WaitError::TooLong),
            Ok(Line::Unframed(head)) => Err(WaitError::Unframed(head)),
            Ok(Line::Failed(e)) => Err(WaitError::Io(e)),
            Ok(Line::Eof) | Err(RecvTimeoutError::Disconnected) => Err(WaitError::Ended(
                self.exit_status(Duration::from_millis(500)),
            )),
            Err(RecvTimeoutError::Timeout) => Err(WaitError::Timeout),
        }
    }

    /// The exit status, if the child exits within `wait`.
    fn exit_status(&mut self, wait: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + wait;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    self.reaped = true;
                    return Some(status);
                }
                Ok(None) if Instant::now() < end => thread::sleep(Duration::from_millis(5)),
                _ => return None,
            }
        }
    }

    /// Waits up to `wait` for the child to exit after its input closed; kills it after.
    pub(super) fn finish(&mut self, wait: Duration) {
        self.close_input();
        if self.exit_status(wait).is_none() {
            self.kill();
        }
    }

    /// Kills the child and what it started, and reaps it.
    fn kill(&mut self) {
        kill_group(self.child.id());
        let _ = self.child.kill();
        // After a kill the wait is immediate.
        let _ = self.child.wait();
        self.reaped = true;
    }

    /// The last lines the child wrote to standard error, on one line.
    pub(super) fn stderr_tail(&self) -> String {
        // Give the stderr thread a moment to read what a crashing child wrote last.
        thread::sleep(Duration::from_millis(20));
        let tail = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8_lossy(&tail);
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let chars: Vec<char> = text.chars().collect();
        let keep = 300;
        if chars.len() > keep {
            format!(
                "…{}",
                chars[chars.len() - keep..].iter().collect::<String>()
            )
        } else {
            text
        }
    }

    /// Why writing to the child failed, if it did.
    pub(super) fn write_error(&self) -> Option<String> {
        self.write_error
            .lock()
            .ok()
            .and_then(|e| e.as_ref().map(ToString::to_string))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.to_child = None;
        if !self.reaped {
            self.kill();
        }
    }
}

/// Writes each message as it comes, and hands its buffer back through `done`.
fn write_all(
    stdin: ChildStdin,
    batches: &Receiver<Vec<u8>>,
    done: &Sender<Vec<u8>>,
    error: &Mutex<Option<io::Error>>,
) {
    let mut w = io::BufWriter::with_capacity(1 << 16, stdin);
    for mut message in batches {
        let result = w.write_all(&message).and_then(|()| w.flush());
        if let Err(e) = result {
            if let Ok(mut slot) = error.lock() {
                *slot = Some(e);
            }
            return;
        }
        message.clear();
        let _ = done.send(message);
    }
    let _ = w.flush();
}

fn read_lines(stdout: impl Read, tx: &Sender<Line>) {
    let mut r = BufReader::with_capacity(1 << 16, stdout);
    // Each line's buffer starts as large as the last line (replies are alike).
    let mut last = 0;
    loop {
        let mut buf = Vec::with_capacity(last + 1);
        let limit = MAX_LINE as u64 + 1;
        match (&mut r).take(limit).read_until(b'\n', &mut buf) {
            Ok(0) => {
                let _ = tx.send(Line::Eof);
                return;
            }
            Ok(_) if buf.last() == Some(&b'\n') => {
                last = buf.len();
                buf.pop();
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
                if tx.send(Line::Text(buf)).is_err() {
                    return;
                }
            }
            Ok(_) if buf.len() > MAX_LINE => {
                let _ = tx.send(Line::TooLong);
                return;
            }
            // The output ended inside a line: what came is not a reply.
            Ok(_) => {
                let _ = tx.send(Line::Eof);
                return;
            }
            Err(e) => {
                let _ = tx.send(Line::Failed(e));
                return;
            }
        }
    }
}

/// Reads length-prefixed messages: 4 bytes of length, big-endian, then the message.
fn read_frames(stdout: impl Read, tx: &Sender<Line>) {
    let mut r = BufReader::with_capacity(1 << 16, stdout);
    loop {
        let mut head = [0u8; PREFIX];
        let got = match read_full(&mut r, &mut head) {
            Ok(n) => n,
            Err(e) => {
                let _ = tx.send(Line::Failed(e));
                return;
            }
        };
        if got < PREFIX {
            // The output ended, before a message or inside its prefix.
            let _ = tx.send(Line::Eof);
            return;
        }
        let n = u32::from_be_bytes(head) as usize;
        if n > MAX_LINE {
            // Text where a length is due (a JSON reply, a greeting): say so, with what came.
            let line = if head.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
                let mut text = head.to_vec();
                let mut rest = Vec::new();
                let _ = (&mut r).take(76).read_until(b'\n', &mut rest);
                text.extend(rest.iter().take_while(|&&b| b != b'\n' && b != b'\r'));
                Line::Unframed(text)
            } else {
                Line::TooLong
            };
            let _ = tx.send(line);
            return;
        }
        let mut buf = vec![0u8; n];
        match read_full(&mut r, &mut buf) {
            Ok(got) if got == n => {
                if tx.send(Line::Text(buf)).is_err() {
                    return;
                }
            }
            // The output ended inside a message: what came is not a reply.
            Ok(_) => {
                let _ = tx.send(Line::Eof);
                return;
            }
            Err(e) => {
                let _ = tx.send(Line::Failed(e));
                return;
            }
        }
    }
}

/// Reads until `buf` is full or the input ends: how many bytes came.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn keep_tail(mut pipe: impl Read, keep: &Mutex<Vec<u8>>) {
    let mut chunk = [0u8; 4096];
    while let Ok(n) = pipe.read(&mut chunk) {
        if n == 0 {
            return;
        }
        if let Ok(mut tail) = keep.lock() {
            tail.extend_from_slice(&chunk[..n]);
            if tail.len() > STDERR_TAIL {
                let cut = tail.len() - STDERR_TAIL;
                tail.drain(..cut);
            }
        }
    }
}
