//! A subject's stderr, drained into a bounded tail as it comes, and read
//! to its present end whenever a fault takes the tail.
//!
//! The pipe is non-blocking and is only ever read under the tail's lock:
//! by the thread that drains it (it waits with poll(2) without the lock,
//! so a subject that floods stderr never blocks), and by a fault, which
//! first reads whatever is waiting in the pipe. So everything the subject
//! wrote to stderr before the fault was seen (a traceback, then a
//! malformed stdout line) is in the fault, every time — never lost to a
//! drain thread that had not been scheduled yet — and taking it waits for
//! nothing (a descendant that keeps stderr open costs no time).

use std::io::{ErrorKind, Read};
use std::os::fd::{AsRawFd, RawFd};
use std::process::ChildStderr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread;

use crate::subject::pipes::set_nonblocking;

/// The most one look at the pipe reads while it holds the lock: a subject
/// flooding stderr keeps neither the drain thread nor a fault in the read
/// for ever (64 KiB is a pipe's default room; a subject may grow it).
const READ_AT_ONCE: usize = 1 << 20;

/// A subject's stderr: its pipe and its tail, shared by the thread that
/// drains it and the process's faults.
pub(super) struct Stderr {
    state: Mutex<Tail>,
    /// The pipe's descriptor, which the drain thread polls (it stays open
    /// as long as `state` holds the pipe, that is as long as this lives).
    fd: RawFd,
}

/// The last bytes of the stream, how many there were in all, and whether
/// it has ended.
struct Tail {
    pipe: ChildStderr,
    /// How many of the last bytes are kept.
    keep: usize,
    bytes: Vec<u8>,
    total: u64,
    ended: bool,
}

impl Stderr {
    /// Start draining `pipe` (made non-blocking) on a thread of its own,
    /// keeping its last `keep` bytes.
    pub(super) fn start(pipe: ChildStderr, keep: usize) -> std::io::Result<Arc<Stderr>> {
        let fd = pipe.as_raw_fd();
        set_nonblocking(fd)?;
        let stderr = Arc::new(Stderr {
            state: Mutex::new(Tail {
                pipe,
                keep,
                bytes: Vec::new(),
                total: 0,
                ended: false,
            }),
            fd,
        });
        let drained = Arc::clone(&stderr);
        thread::Builder::new()
            .name("ctxgate-subject-stderr".into())
            .spawn(move || drained.drain())?;
        Ok(stderr)
    }

    fn lock(&self) -> MutexGuard<'_, Tail> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Read the pipe as bytes come, until it ends (every process that
    /// held it is gone): a subject never blocks on a full stderr.
    fn drain(&self) {
        loop {
            if self.lock().read_waiting() {
                return;
            }
            let mut fds = [libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            }];
            // SAFETY: poll(2) on one pollfd we own; its fd is open as long
            // as `self` (held by this thread) is.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 1, -1) };
            if n < 0 && std::io::Error::last_os_error().kind() != ErrorKind::Interrupted {
                return;
            }
            if fds[0].revents & libc::POLLNVAL != 0 {
                return;
            }
        }
    }

    /// The tail as a fault shows it, once what waits in the pipe is read:
    /// every byte written to stderr before this call is in it (but those
    /// past the tail's size, which are counted).
    pub(super) fn tail(&self) -> String {
        let mut t = self.lock();
        t.read_waiting();
        let mut s = crate::model::text::lines(&String::from_utf8_lossy(&t.bytes));
        if t.total > t.bytes.len() as u64 {
            s = format!(
                "[… {} earlier bytes of stderr not kept]\n{s}",
                t.total - t.bytes.len() as u64
            );
        }
        s
    }
}

impl Tail {
    /// Read what waits in the pipe (at most [`READ_AT_ONCE`]) into the
    /// tail; whether the stream has ended.
    fn read_waiting(&mut self) -> bool {
        let mut buf = [0u8; 8192];
        let mut read = 0;
        while !self.ended && read < READ_AT_ONCE {
            let n = match self.pipe.read(&mut buf) {
                Ok(0) => {
                    self.ended = true;
                    break;
                }
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => {
                    self.ended = true;
                    break;
                }
            };
            read += n;
            self.total += n as u64;
            self.bytes.extend_from_slice(&buf[..n]);
            if self.bytes.len() > self.keep {
                let cut = self.bytes.len() - self.keep;
                self.bytes.drain(..cut);
            }
        }
        self.ended
    }
}
