//! A subject's stdin and stdout, driven from the calling thread with
//! poll(2) (issue 13). Request bytes are written as the pipe takes them
//! while answer bytes are read as they come, so neither side can block the
//! other — a subject that stops reading its stdin while the harness has
//! more to send, or floods its stdout, costs a timeout, never a hang — and
//! an answer reaches the harness with one wake-up, not the three a reader
//! and a writer thread cost.

use std::collections::VecDeque;
use std::io::{self, IoSlice, Read, Write};
use std::ops::Range;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::process::{ChildStdin, ChildStdout};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What reading the subject's stdout gives.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// One line, without its `\n`.
    Text(Vec<u8>),
    /// A line passed the cap (in bytes) before its end.
    Oversized(usize),
    /// stdout is closed (the subject exited, or closed it).
    Closed,
    /// No whole line within the wait.
    Pending,
}

/// The harness's ends of a subject's stdin and stdout, non-blocking.
pub struct Pipes {
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// Request bytes not yet taken by the pipe: the chunks in order, the
    /// first from `sent` on. A history's JSON is queued as the chunk it
    /// was written in, not copied (issue 48): a batch's requests can be
    /// megabytes of images each.
    pending: VecDeque<Chunk>,
    sent: usize,
    /// Answer bytes read and not yet handed out: `input[start..end]` (the
    /// buffer stays allocated and initialised between reads).
    input: Vec<u8>,
    start: usize,
    end: usize,
    /// Where in `input[start..]` to look for the next `\n` from (what is
    /// before has none).
    scanned: usize,
    cap: usize,
    eof: bool,
    /// A second handle on stdout, to wait on without holding these pipes.
    waiter: Arc<Waiter>,
}

/// A wait for a subject's stdout to have bytes, which needs no access to
/// its [`Pipes`]: a worker sharing a subject (`Lane`) waits for its answer
/// with this, so that other workers may send their requests meanwhile.
pub struct Waiter {
    stdout: OwnedFd,
}

impl Waiter {
    /// Wait until stdout has bytes (or is closed), at most `wait`.
    pub fn wait(&self, wait: Duration) {
        let mut fds = [libc::pollfd {
            fd: self.stdout.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: poll(2) on one pollfd we own; its fd lives as long as self.
        unsafe { libc::poll(fds.as_mut_ptr(), 1, poll_ms(wait)) };
    }
}

/// A piece of a request line: bytes to copy (a request's head, the
/// punctuation between its parts), or JSON written once and shared, which
/// goes to the pipe as it is.
pub enum Piece<'a> {
    Bytes(&'a [u8]),
    Shared(&'a Arc<Vec<u8>>),
}

/// Queued request bytes (`Pipes::pending`).
enum Chunk {
    Owned(Vec<u8>),
    Shared(Arc<Vec<u8>>, Range<usize>),
}

impl Chunk {
    fn bytes(&self) -> &[u8] {
        match self {
            Chunk::Owned(b) => b,
            Chunk::Shared(b, range) => &b[range.clone()],
        }
    }
}

/// How many chunks one write hands the kernel at most (`writev`'s
/// `IOV_MAX` is 1024 on Linux; a batch's lines are a few dozen chunks).
const WRITE_CHUNKS: usize = 64;

/// Bigger pipes take a large request or answer in one go (Linux; the
/// default is 64 KiB, an unprivileged process may ask for up to 1 MiB).
const PIPE_BYTES: i32 = 1 << 20;

/// The least a read asks for.
const READ_CHUNK: usize = 1 << 16;

/// The least run of shared bytes queued by reference, not copied.
const SHARE_BYTES: usize = 1 << 12;

impl Pipes {
    /// Take over the child's pipes; lines longer than `cap` bytes are
    /// refused as they are read.
    pub fn new(stdin: ChildStdin, stdout: ChildStdout, cap: usize) -> io::Result<Pipes> {
        for fd in [stdin.as_raw_fd(), stdout.as_raw_fd()] {
            set_nonblocking(fd)?;
            #[cfg(target_os = "linux")]
            // SAFETY: fcntl(2) on a pipe we own, with an integer argument.
            unsafe {
                // Best effort: a smaller pipe only costs wake-ups.
                libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES);
            }
        }
        let waiter = Arc::new(Waiter {
            stdout: stdout.as_fd().try_clone_to_owned()?,
        });
        Ok(Pipes {
            waiter,
            stdin: Some(stdin),
            stdout,
            pending: VecDeque::new(),
            sent: 0,
            input: Vec::new(),
            start: 0,
            end: 0,
            scanned: 0,
            cap,
            eof: false,
        })
    }

    /// Queue a line, given in `parts`, for the subject's stdin; the next
    /// [`flush`](Self::flush) writes what the pipe takes, the rest goes out
    /// while the next answer is awaited (the lines of a batch go out in one
    /// write, and wake the subject once). Once the subject has closed its
    /// stdin, requests are dropped: the closed stdout or the timeout that
    /// follows says what happened. U+0085, U+2028 and U+2029 go out as
    /// JSON escapes (`protocol::push_line_safe`): a subject that splits
    /// its input with Python's `splitlines()` still reads one line a
    /// request. Returns the bytes queued.
    pub fn queue(&mut self, parts: &[Piece<'_>]) -> usize {
        if self.stdin.is_none() {
            return 0;
        }
        let mut queued = 0;
        for part in parts {
            match part {
                Piece::Bytes(b) => queued += self.push_copied(b),
                // Shared JSON goes as it is, by reference; a character to
                // escape goes as its escape between the runs around it.
                Piece::Shared(b) => {
                    let mut start = 0;
                    for (at, len, escape) in super::protocol::line_breaks(b) {
                        queued += self.push_shared(b, start..at);
                        queued += self.push_copied(escape);
                        start = at + len;
                    }
                    queued += self.push_shared(b, start..b.len());
                }
            }
        }
        queued
    }

    /// Queue `range` of shared bytes by reference (a short run is copied:
    /// a chunk costs a slot of `writev`'s).
    fn push_shared(&mut self, bytes: &Arc<Vec<u8>>, range: Range<usize>) -> usize {
        if range.len() < SHARE_BYTES {
            return self.push_copied(&bytes[range]);
        }
        let n = range.len();
        self.pending
            .push_back(Chunk::Shared(Arc::clone(bytes), range));
        n
    }

    /// Queue a copy of `bytes`, escaped as `protocol::push_line_safe` does.
    fn push_copied(&mut self, bytes: &[u8]) -> usize {
        if bytes.is_empty() {
            return 0;
        }
        if !matches!(self.pending.back(), Some(Chunk::Owned(_))) {
            self.pending.push_back(Chunk::Owned(Vec::new()));
        }
        let Some(Chunk::Owned(last)) = self.pending.back_mut() else {
            unreachable!("pushed above")
        };
        let before = last.len();
        super::protocol::push_line_safe(last, bytes);
        last.len() - before
    }

    /// A handle to wait for stdout with, apart from these pipes.
    pub fn waiter(&self) -> Arc<Waiter> {
        Arc::clone(&self.waiter)
    }

    /// Whether request bytes are still waiting for the pipe.
    pub fn has_pending(&self) -> bool {
        self.stdin.is_some() && !self.pending.is_empty()
    }

    /// Write pending request bytes until the pipe is full. (The pipe
    /// takes a copy: a chunk is never lent to it by reference, with
    /// vmsplice(2) — a subject may move its stdin on without reading it,
    /// and the bytes would still be this process's memory, reused.)
    pub fn flush(&mut self) {
        while self.has_pending() {
            let stdin = self.stdin.as_mut().expect("checked");
            let slices: Vec<IoSlice> = (self.pending.iter().take(WRITE_CHUNKS))
                .enumerate()
                .map(|(k, c)| IoSlice::new(&c.bytes()[if k == 0 { self.sent } else { 0 }..]))
                .collect();
            match stdin.write_vectored(&slices) {
                Ok(0) => return self.close_stdin(),
                Ok(n) => self.advance(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.close_stdin(),
            }
        }
    }

    /// `n` more pending bytes were written: drop the chunks done.
    fn advance(&mut self, mut n: usize) {
        while let Some(front) = self.pending.front() {
            let left = front.bytes().len() - self.sent;
            if n < left {
                self.sent += n;
                return;
            }
            n -= left;
            self.sent = 0;
            self.pending.pop_front();
        }
    }

    fn close_stdin(&mut self) {
        self.stdin = None;
        self.pending = VecDeque::new();
        self.sent = 0;
    }

    /// Close the subject's stdin (it sees the end of its input).
    pub fn close(&mut self) {
        self.close_stdin();
    }

    /// The next line if one comes within `wait` (`Line::Pending`: not
    /// yet), writing pending requests meanwhile. `Duration::ZERO` only
    /// looks at what has arrived.
    /// The bytes of a line read and not yet ended by a `\n`: what a subject
    /// that never ends its line wrote of it.
    pub fn unended(&self) -> &[u8] {
        &self.input[self.start..self.end]
    }

    pub fn next_line(&mut self, wait: Duration) -> Line {
        let until = Instant::now() + wait;
        loop {
            if let Some(line) = self.take_line() {
                return line;
            }
            if self.eof {
                return Line::Closed;
            }
            match self.poll(until.saturating_duration_since(Instant::now())) {
                Ok(true) => {}
                Ok(false) => return Line::Pending,
                Err(_) => self.eof = true,
            }
        }
    }

    /// A line already read whole, or the verdict on an over-long one.
    fn take_line(&mut self) -> Option<Line> {
        let buf = &self.input[self.start..self.end];
        match memchr::memchr(b'\n', &buf[self.scanned..]) {
            Some(p) => {
                let len = self.scanned + p;
                if len > self.cap {
                    return Some(Line::Oversized(self.cap));
                }
                let line = buf[..len].to_vec();
                self.start += len + 1;
                self.scanned = 0;
                if self.start == self.end {
                    self.start = 0;
                    self.end = 0;
                }
                Some(Line::Text(line))
            }
            None => {
                self.scanned = buf.len();
                (buf.len() > self.cap).then_some(Line::Oversized(self.cap))
            }
        }
    }

    /// Wait up to `wait` for stdout to have bytes or stdin room, and move
    /// what can be moved. `Ok(false)`: nothing happened in time.
    fn poll(&mut self, wait: Duration) -> io::Result<bool> {
        let mut fds = [
            libc::pollfd {
                fd: self.stdout.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.stdin.as_ref().map_or(-1, |s| s.as_raw_fd()),
                events: if self.has_pending() { libc::POLLOUT } else { 0 },
                revents: 0,
            },
        ];
        // SAFETY: poll(2) on two pollfd structs we own; a negative fd is
        // ignored by poll.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, poll_ms(wait)) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(true)
            } else {
                Err(e)
            };
        }
        if n == 0 {
            return Ok(false);
        }
        if fds[1].revents & (libc::POLLERR | libc::POLLHUP) != 0 {
            self.close_stdin();
        } else if fds[1].revents & libc::POLLOUT != 0 {
            self.flush();
        }
        if fds[0].revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
            self.fill();
        }
        Ok(true)
    }

    /// Read what stdout has, in as few calls as its size allows.
    fn fill(&mut self) {
        loop {
            // Room for at least a chunk, or as much again as a long line
            // already has: a line of n bytes takes O(log n) reads.
            let have = self.end - self.start;
            let want = READ_CHUNK.max(have);
            if self.input.len() - self.end < want {
                if self.start > 0 {
                    self.input.copy_within(self.start..self.end, 0);
                    self.end = have;
                    self.start = 0;
                }
                if self.input.len() - self.end < want {
                    self.input.resize(self.end + want, 0);
                }
            }
            let room = self.input.len() - self.end;
            match self.stdout.read(&mut self.input[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return;
                }
                Ok(n) => {
                    self.end += n;
                    if n < room || self.end - self.start > self.cap {
                        return;
                    }
                }
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => return,
                    io::ErrorKind::Interrupted => {}
                    _ => {
                        self.eof = true;
                        return;
                    }
                },
            }
        }
    }
}

/// poll(2)'s timeout for `wait`: a sub-millisecond wait rounded up, as
/// poll(…, 0) would spin.
fn poll_ms(wait: Duration) -> i32 {
    let ms = wait.as_millis().min(i32::MAX as u128) as i32;
    if ms == 0 && !wait.is_zero() {
        1
    } else {
        ms
    }
}

pub(crate) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl(2) on a descriptor we own, integer arguments only.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::{Child, Command, Stdio};

    fn start(script: &str, cap: usize) -> (Child, Pipes) {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh runs");
        let pipes = Pipes::new(
            child.stdin.take().unwrap(),
            child.stdout.take().unwrap(),
            cap,
        )
        .unwrap();
        (child, pipes)
    }

    fn wait_line(pipes: &mut Pipes) -> Line {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            match pipes.next_line(Duration::from_millis(50)) {
                Line::Pending if Instant::now() < until => {}
                other => return other,
            }
        }
    }

    /// Lines queued as shared chunks and copied bytes, many chunks to a
    /// write and each far over the pipe's size (so writes end inside a
    /// chunk): read back whole, in order, byte for byte as one copied
    /// line would be — a chunk holding U+2028 or U+0085 escaped like one.
    #[test]
    fn shared_chunks_go_out_as_the_copied_line_would() {
        let (mut child, mut pipes) = start("cat", 64 << 20);
        let big = |k: u8, n: usize| Arc::new(vec![b'a' + k; n]);
        let mut odd = vec![b'x'; 3 << 20];
        odd.splice(1000..1000, "\u{2028}".bytes());
        odd.splice(5..5, "\u{85}".bytes());
        let odd = Arc::new(odd);
        let mut want = Vec::new();
        for k in 0..4u8 {
            let head = format!("{{\"id\":{k},");
            let (a, b) = (big(k, (2 << 20) + k as usize), big(k + 1, 7));
            let pieces = [
                Piece::Bytes(head.as_bytes()),
                Piece::Shared(&a),
                Piece::Bytes(b","),
                Piece::Shared(&b),
                Piece::Shared(&odd),
                Piece::Bytes(b"}\n"),
            ];
            let mut line = Vec::new();
            for p in &pieces {
                let bytes: &[u8] = match p {
                    Piece::Bytes(b) => b,
                    Piece::Shared(b) => b,
                };
                crate::subject::protocol::push_line_safe(&mut line, bytes);
            }
            assert_eq!(pipes.queue(&pieces), line.len());
            want.push(line);
        }
        pipes.flush();
        for line in &want {
            let got = wait_line(&mut pipes);
            assert!(got == Line::Text(line[..line.len() - 1].to_vec()));
        }
        assert!(want[0].windows(6).any(|w| w == b"\\u2028"));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// `cat` answers while it is still being written to: lines far over
    /// the pipe's size go both ways without a deadlock, whole and in order.
    /// Once these pipes let go of a shared chunk, changing it changes
    /// nothing the subject reads — even a subject that moves its stdin on
    /// without copying it (splice(2), as `pv` does, or Go's `io.Copy` to a
    /// socket) and reads it later. (Pages lent to the pipe with vmsplice
    /// and taken back once the pipe had been read failed this: the bytes
    /// were still the harness's memory, in the next pipe.)
    #[test]
    fn a_chunk_let_go_is_no_longer_what_the_subject_reads() {
        if !cfg!(target_os = "linux") {
            return;
        }
        const N: usize = 512 << 10;
        let script = format!(
            "exec python3 -c '
import fcntl, hashlib, os, sys
r, w = os.pipe()
fcntl.fcntl(w, 1031, 1 << 20)
moved = 0
while moved < {N}:
    moved += os.splice(0, w, {N} - moved)
os.write(1, b\"moved\\n\")
os.read(0, 3)
data = b\"\"
while len(data) < {N}:
    data += os.read(r, {N} - len(data))
os.write(1, hashlib.sha256(data).hexdigest().encode() + b\"\\n\")
'"
        );
        let (mut child, mut pipes) = start(&script, 1 << 20);
        let text: Vec<u8> = (0..N).map(|k| b'a' + (k % 26) as u8).collect();
        let mut chunk = Arc::new(text.clone());
        pipes.queue(&[Piece::Shared(&chunk)]);
        pipes.flush();
        assert_eq!(wait_line(&mut pipes), Line::Text(b"moved".to_vec()));
        pipes.flush();
        // Let go: the memory is the harness's to write again.
        Arc::get_mut(&mut chunk)
            .expect("let go once written")
            .fill(b'#');
        pipes.queue(&[Piece::Bytes(b"go\n")]);
        pipes.flush();
        let Line::Text(hash) = wait_line(&mut pipes) else {
            panic!("no hash")
        };
        let want = {
            let out = std::process::Command::new("python3")
                .args(["-c", "import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .and_then(|mut p| {
                    use std::io::Write;
                    p.stdin.take().unwrap().write_all(&text)?;
                    p.wait_with_output()
                })
                .unwrap();
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        assert_eq!(
            String::from_utf8(hash).unwrap(),
            want,
            "the subject read what was sent"
        );
        pipes.close();
        child.wait().unwrap();
    }

    #[test]
    fn long_lines_cross_both_ways_at_once() {
        let (mut child, mut pipes) = start("cat", 64 << 20);
        let lines: Vec<Vec<u8>> = (0..3u8)
            .map(|k| {
                let mut l = vec![b'a' + k; (3 << 20) + k as usize];
                l.push(b'\n');
                l
            })
            .collect();
        for l in &lines {
            pipes.queue(&[Piece::Bytes(l)]);
            pipes.flush();
        }
        for l in &lines {
            assert_eq!(wait_line(&mut pipes), Line::Text(l[..l.len() - 1].to_vec()));
        }
        pipes.close();
        assert_eq!(wait_line(&mut pipes), Line::Closed);
        child.wait().unwrap();
    }

    /// A subject that never reads: sending more than a pipe holds returns
    /// at once, and waiting for its answer ends with the wait.
    #[test]
    fn a_subject_that_never_reads_blocks_nothing() {
        let (mut child, mut pipes) = start("sleep 30", 1 << 20);
        let t = Instant::now();
        pipes.queue(&[Piece::Bytes(&vec![b'x'; 8 << 20])]);
        pipes.flush();
        assert_eq!(pipes.next_line(Duration::from_millis(200)), Line::Pending);
        assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// A line past the cap is refused once the cap is passed, without
    /// waiting for its end; several short lines in one read come out one
    /// by one; an exit shows as `Closed`.
    #[test]
    fn caps_framing_and_end() {
        let (mut child, mut pipes) = start(
            "printf 'one\\ntwo\\n'; head -c 3000000 /dev/zero; sleep 30",
            1 << 20,
        );
        assert_eq!(wait_line(&mut pipes), Line::Text(b"one".to_vec()));
        assert_eq!(wait_line(&mut pipes), Line::Text(b"two".to_vec()));
        assert_eq!(wait_line(&mut pipes), Line::Oversized(1 << 20));
        child.kill().unwrap();
        child.wait().unwrap();
        let (mut child, mut pipes) = start("printf 'last'", 1 << 20);
        assert_eq!(wait_line(&mut pipes), Line::Closed);
        child.wait().unwrap();
    }
}
