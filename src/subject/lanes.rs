//! One process subject shared by several harness workers, its *lanes*
//! (issue 13). A worker that judges an answer, generates its next case or
//! writes its next request leaves a subject of its own idle; with two
//! lanes the subject works on one lane's requests meanwhile, and the
//! protocol path costs what the slower of the two sides costs, not both.
//!
//! Each lane writes its requests as one batch before it takes the process,
//! sends them, and reads the answers to its batch itself; batches are read
//! in the order they were sent (a subject answers in order, SPEC §6). The
//! process is held only to send and to take an answer's line: a lane waits
//! for the subject, and parses what it took, with the process let go, so
//! another lane sends its batch meanwhile and the subject always has the
//! next one at hand. A fault kills the process, as it does for a
//! process of its own: the batch that met it gets the fault, and a lane
//! whose batch was still waiting sends it again to the new process — a
//! bystander is never charged with another case's fault.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use super::process::{Prepared, ProcessSubject, Sent};
use super::written::Written;
use super::{Fault, FaultKind, Reply, Request, Subject, SubjectInfo, Traffic};

/// A process subject and the batches in flight on it.
struct Shared {
    state: Mutex<State>,
    /// Signalled when a batch has been read or the process has gone.
    turn: Condvar,
}

struct State {
    subject: ProcessSubject,
    /// Batches sent to the running process, and how many of them were
    /// read: batch `k` is read when `read == k`.
    sent: u64,
    read: u64,
    /// The start of the process these counts are about.
    start: u32,
    /// One batch in flight at a time from now on: the subject has let a
    /// request wait a whole timeout, and a batch queued behind such a one
    /// waits that long too, then has to be sent again.
    solo: bool,
}

/// One worker's handle on a shared process subject.
pub struct Lane {
    shared: Arc<Shared>,
    info: SubjectInfo,
    /// The first lane reports the process's traffic; the others none, so
    /// that a run's sum counts it once.
    reports_traffic: bool,
    /// The run's end: a batch lost with a process after it is not sent
    /// again (each resend may cost a whole timeout).
    deadline: Option<Instant>,
    /// The last config this lane wrote.
    written: Written,
}

impl Lane {
    /// `n` lanes (at least one) on `subject`.
    pub fn split(subject: ProcessSubject, n: usize) -> Vec<Lane> {
        let info = subject.info().clone();
        let start = subject.starts;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                subject,
                sent: 0,
                read: 0,
                start,
                solo: false,
            }),
            turn: Condvar::new(),
        });
        (0..n.max(1))
            .map(|k| Lane {
                shared: Arc::clone(&shared),
                info: info.clone(),
                reports_traffic: k == 0,
                deadline: None,
                written: Written::default(),
            })
            .collect()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.shared)
    }

    fn run(&mut self, requests: &[Request<'_>]) -> Result<Vec<Reply>, Fault> {
        let shared = Arc::clone(&self.shared);
        let past = |deadline: Option<Instant>| deadline.is_some_and(|d| Instant::now() >= d);
        let stopped = || {
            Err(Fault::new(
                FaultKind::Stopped,
                "the run's time ran out while this request waited behind another",
            ))
        };
        // Written before the process is held: writing a batch keeps no
        // other lane from sending or reading its own.
        let mut prepared = Some(Prepared::new(self.info.format, requests, &mut self.written));
        loop {
            // Waiting for the process is waiting behind another lane.
            let (mut st, mut waited) = match shared.state.try_lock() {
                Ok(st) => (st, false),
                Err(std::sync::TryLockError::Poisoned(e)) => (e.into_inner(), false),
                Err(std::sync::TryLockError::WouldBlock) => (lock(&shared), true),
            };
            // (Batches sent to a process that is gone are not waited for:
            // they were lost with it, and their lanes send them again.)
            while st.solo
                && st.read != st.sent
                && st.start == st.subject.starts
                && st.subject.is_running()
            {
                st = shared.turn.wait(st).unwrap_or_else(|e| e.into_inner());
                waited = true;
            }
            if waited && past(self.deadline) {
                return stopped();
            }
            let idle =
                (st.read == st.sent && st.start == st.subject.starts) || !st.subject.is_running();
            let batch = prepared.take().unwrap_or_else(|| {
                Prepared::new(st.subject.info().format, requests, &mut self.written)
            });
            let sent = match st.subject.submit(requests, batch, idle) {
                Ok(sent) => sent,
                Err(f) => {
                    shared.turn.notify_all();
                    return Err(f);
                }
            };
            if st.subject.starts != st.start {
                // A new process: what was in flight died with the old one.
                st.start = st.subject.starts;
                st.sent = 0;
                st.read = 0;
                self.info = st.subject.info().clone();
                shared.turn.notify_all();
            }
            let ticket = st.sent;
            st.sent += 1;
            while st.subject.still_running(&sent) && st.read != ticket {
                st = shared.turn.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            let (st, replies) = read(&shared, st, requests, &sent, ticket, &self.written);
            let Some(replies) = replies else {
                // Lost with a process another batch's fault killed.
                drop(st);
                if past(self.deadline) {
                    return stopped();
                }
                continue;
            };
            drop(st);
            return replies;
        }
    }
}

/// Read the answers to `requests`, this lane's batch `ticket`, sent as
/// `sent`; `None` if the process they went to is gone. Between looks the
/// process is let go while this lane waits for the subject, and while it
/// reads an answer line, so that other lanes send their batches meanwhile
/// and the subject never waits for this lane's turn.
fn read<'a>(
    shared: &'a Shared,
    mut st: MutexGuard<'a, State>,
    requests: &[Request<'_>],
    sent: &Sent,
    ticket: u64,
    written: &Written,
) -> (MutexGuard<'a, State>, Option<Result<Vec<Reply>, Fault>>) {
    let format = st.subject.info().format;
    let mut replies = Vec::with_capacity(requests.len());
    for (n, req) in requests.iter().enumerate() {
        if !st.subject.still_running(sent) {
            return (st, None);
        }
        let until = st.subject.due();
        let mut block = false;
        let answer = loop {
            match st.subject.next_answer(until, block) {
                Ok(Some(a)) => break Ok(a),
                Err(f) => break Err(f),
                Ok(None) => match st.subject.waiter() {
                    Some(waiter) => {
                        drop(st);
                        waiter.wait(until.saturating_duration_since(Instant::now()).min(LOOK));
                        st = lock(shared);
                        if !st.subject.still_running(sent) {
                            return (st, None);
                        }
                        block = false;
                    }
                    // Requests wait for room in the pipe: only a holder
                    // writes them, so this one waits holding the process.
                    None => block = true,
                },
            }
        };
        let advanced = n + 1 == requests.len() && answer.is_ok();
        if advanced {
            // Every line of the batch is taken: the next batch's lane may
            // read while this one parses its last.
            st.read = ticket + 1;
            shared.turn.notify_all();
        }
        let reply = match answer {
            Ok(a) => {
                drop(st);
                let reply = a.reply(format, req, sent, n, written);
                st = lock(shared);
                reply
            }
            Err(f) => Err(f),
        };
        match reply {
            Ok(r) => replies.push(r),
            Err(f) => {
                let in_flight = st.sent > ticket + 1 || n + 1 < requests.len();
                let f = match st.subject.still_running(sent) {
                    true => st.subject.failed(f, in_flight),
                    false => f,
                };
                st.solo |= matches!(f.kind, FaultKind::Timeout | FaultKind::ClosedStdout);
                if !advanced {
                    st.read = ticket + 1;
                    shared.turn.notify_all();
                }
                return (st, Some(Err(f)));
            }
        }
    }
    (st, Some(Ok(replies)))
}

/// The longest a lane waits for answer bytes before it looks whether the
/// subject is still there and its answer still due.
const LOOK: std::time::Duration = std::time::Duration::from_millis(50);

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared.state.lock().unwrap_or_else(|e| e.into_inner())
}

impl Subject for Lane {
    super::protocol_subject!(run);

    fn stop_at(&mut self, deadline: Option<Instant>) {
        self.deadline = deadline;
    }

    fn traffic(&self) -> Option<Traffic> {
        if self.reports_traffic {
            self.lock().subject.traffic()
        } else {
            None
        }
    }
}
