//! [`Wired`]: a subject deployed in front of a live endpoint. It answers as
//! the subject it wraps; in addition, every request body the harness's
//! simulated ToolLoop sends (`session-never-overflows`) is POSTed to the
//! endpoint, and the answer comes back to the oracle with the turn.
//!
//! A [`TransportLog`], shared by every worker of a run, tallies what the
//! endpoint answered and every disagreement between ctxgate's exact size
//! and the endpoint — shrinking included, so a run's summary accounts for
//! each body sent. The first body the endpoint gives no answer to (no
//! connection, a timeout) stops the sending for the whole run: the run
//! goes on without the transport, and the log says where it stopped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{Answer, Delivery, Reception, Transport, Wire};
use crate::body::body_value;
use crate::config::Config;
use crate::model::Message;
use crate::subject::{CompactAnswer, EstimateReply, Fault, Reply, Request, Subject, SubjectInfo};

/// A run's live endpoint (`check --transport`): every subject of the run
/// is [`Live::wrap`]ped, and one log tallies what the endpoint answered.
pub struct Live {
    url: String,
    wire: Arc<dyn Wire>,
    log: Arc<TransportLog>,
}

impl Live {
    /// `url` is the endpoint as shown (its secrets masked).
    pub fn new(url: String, wire: Arc<dyn Wire>) -> Live {
        let log = TransportLog::new();
        Live { url, wire, log }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// The subject, its ToolLoop bodies also sent to the endpoint.
    pub fn wrap(&self, subject: Box<dyn Subject + Send>) -> Box<dyn Subject + Send> {
        Box::new(Wired::new(subject, self.wire.clone(), self.log.clone()))
    }

    /// What the endpoint answered, in a few lines, and, when it stopped
    /// answering, why the run fails: the rest of it was not sent there.
    pub fn finish(&self) -> (String, Option<String>) {
        let s = self.log.summary();
        let stopped = s.stopped.as_ref().map(|(bytes, error)| {
            format!(
                "{}: no answer to a {}-byte body ({error}); nothing more was sent to it, so the rest of the run was not checked against the real transport",
                self.url,
                crate::model::text::group(*bytes)
            )
        });
        (super::shown::live_summary(&self.url, &s), stopped)
    }
}

/// A subject whose ToolLoop bodies also go to a live endpoint.
pub struct Wired {
    inner: Box<dyn Subject + Send>,
    wire: Arc<dyn Wire>,
    log: Arc<TransportLog>,
    /// [`Transport::hold`]: nothing is sent.
    held: bool,
}

impl Wired {
    pub fn new(
        inner: Box<dyn Subject + Send>,
        wire: Arc<dyn Wire>,
        log: Arc<TransportLog>,
    ) -> Self {
        let held = false;
        Wired {
            inner,
            wire,
            log,
            held,
        }
    }
}

impl Subject for Wired {
    fn info(&self) -> &SubjectInfo {
        self.inner.info()
    }

    fn compact(&mut self, config: &Config, msgs: &[Message]) -> Result<CompactAnswer, Fault> {
        self.inner.compact(config, msgs)
    }

    fn estimate(&mut self, config: &Config, msgs: &[Message]) -> Result<EstimateReply, Fault> {
        self.inner.estimate(config, msgs)
    }

    fn traffic(&self) -> Option<crate::subject::Traffic> {
        self.inner.traffic()
    }

    fn sees_spellings(&self) -> bool {
        self.inner.sees_spellings()
    }

    fn batch(&mut self, requests: &[Request<'_>]) -> Result<Vec<Reply>, Fault> {
        self.inner.batch(requests)
    }

    fn stop_at(&mut self, deadline: Option<std::time::Instant>) {
        self.inner.stop_at(deadline)
    }

    fn transport(&mut self) -> Option<&mut dyn Transport> {
        Some(self)
    }
}

impl Transport for Wired {
    fn hold(&mut self, held: bool) {
        self.held = held;
    }

    fn deliver(&mut self, config: &Config, msgs: &[Message], measured: u64) -> Option<Delivery> {
        if self.held || self.log.stopped() {
            return None;
        }
        let body =
            serde_json::to_vec(&body_value(config, msgs)).expect("a JSON value always serialises");
        let answer = self.wire.post(&body);
        let delivery = Delivery {
            sent: body.len() as u64,
            answer,
        };
        self.log
            .record(config.transport_max_body_bytes, measured, &delivery);
        Some(delivery)
    }
}

/// One disagreement between ctxgate's size verdict and the endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// ctxgate's exact size of the body.
    pub measured: u64,
    pub ceiling: u64,
    /// What was sent, in bytes.
    pub sent: u64,
    pub answer: Answer,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.sent != self.measured {
            return write!(
                f,
                "ctxgate measured {} bytes but sent {}: its exact size is wrong",
                self.measured, self.sent
            );
        }
        let side = if self.measured <= self.ceiling {
            "under"
        } else {
            "over"
        };
        write!(
            f,
            "a {}-byte body, {side} the {}-byte ceiling: {}",
            self.measured, self.ceiling, self.answer
        )
    }
}

/// What the endpoint answered over a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransportSummary {
    /// Bodies sent.
    pub sent: u64,
    pub accepted: u64,
    pub refused: u64,
    /// How often each answer came (`200`, `413`, `reset`, `no answer`).
    pub answers: BTreeMap<String, u64>,
    /// Refused although ctxgate measured them under the ceiling (the
    /// ceiling is above the endpoint's real limit), the first kept.
    pub refused_under_ceiling: u64,
    pub first_refused_under_ceiling: Option<Disagreement>,
    /// Accepted although ctxgate measured them over the ceiling (the
    /// ceiling is below the endpoint's), the first kept.
    pub accepted_over_ceiling: u64,
    pub first_accepted_over_ceiling: Option<Disagreement>,
    /// Sent with another length than ctxgate measured (a bug of ctxgate's).
    pub size_mismatches: u64,
    pub first_size_mismatch: Option<Disagreement>,
    /// The body the endpoint gave no answer to, which stopped the sending.
    pub stopped: Option<(u64, String)>,
}

impl TransportSummary {
    /// ctxgate's size verdict and the endpoint agreed on every body.
    pub fn agreed(&self) -> bool {
        self.refused_under_ceiling == 0
            && self.accepted_over_ceiling == 0
            && self.size_mismatches == 0
    }
}

/// The run's tally of what the endpoint answered; shared by its workers.
#[derive(Debug, Default)]
pub struct TransportLog {
    state: Mutex<TransportSummary>,
    stopped: std::sync::atomic::AtomicBool,
}

impl TransportLog {
    pub fn new() -> Arc<TransportLog> {
        Arc::new(TransportLog::default())
    }

    /// An endpoint gave no answer: nothing more is sent.
    pub fn stopped(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn summary(&self) -> TransportSummary {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn record(&self, ceiling: u64, measured: u64, d: &Delivery) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.sent += 1;
        *s.answers.entry(d.answer.label()).or_default() += 1;
        let disagreement = || Disagreement {
            measured,
            ceiling,
            sent: d.sent,
            answer: d.answer.clone(),
        };
        if d.sent != measured {
            s.size_mismatches += 1;
            s.first_size_mismatch.get_or_insert_with(disagreement);
        }
        match d.answer.reception() {
            Reception::Accepted => {
                s.accepted += 1;
                if measured > ceiling {
                    s.accepted_over_ceiling += 1;
                    s.first_accepted_over_ceiling
                        .get_or_insert_with(disagreement);
                }
            }
            Reception::Refused => {
                s.refused += 1;
                if measured <= ceiling {
                    s.refused_under_ceiling += 1;
                    s.first_refused_under_ceiling
                        .get_or_insert_with(disagreement);
                }
            }
            Reception::Unknown => {
                if let Answer::NoAnswer { error } = &d.answer {
                    s.stopped.get_or_insert((d.sent, error.clone()));
                }
                self.stopped
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{case_from_seed, GenConfig};
    use crate::harness::simulate_session;
    use crate::oracle::{session_never_overflows, SessionTurn, TurnOutcome};
    use crate::subject::defects::Defect;
    use crate::subject::InProcess;

    /// A server with a body limit (413 above it), or one that never
    /// answers; it keeps the length of every body it was sent.
    struct Server {
        limit: Option<u64>,
        sizes: Mutex<Vec<u64>>,
    }

    impl Wire for Server {
        fn post(&self, body: &[u8]) -> Answer {
            let n = body.len() as u64;
            self.sizes.lock().unwrap().push(n);
            serde_json::from_slice::<serde_json::Value>(body).expect("a ToolLoop body is JSON");
            match self.limit {
                Some(limit) if n > limit => Answer::Status {
                    code: 413,
                    excerpt: "request entity too large".into(),
                },
                Some(_) => Answer::Status {
                    code: 200,
                    excerpt: String::new(),
                },
                None => Answer::NoAnswer {
                    error: "nothing within the 1 s timeout".into(),
                },
            }
        }

        fn describe(&self) -> String {
            "a test server".into()
        }
    }

    struct Run {
        server: Arc<Server>,
        log: Arc<TransportLog>,
        /// Every session's turns, with its config.
        sessions: Vec<(Config, Vec<SessionTurn>)>,
    }

    /// Simulate the ToolLoop of `cases` seeded cases at `ceiling`, the
    /// subject wired to a server limited to `limit` bytes (`None`: silent).
    fn run(subject: InProcess, ceiling: u64, limit: Option<u64>, cases: u64) -> Run {
        let server = Arc::new(Server {
            limit,
            sizes: Mutex::new(Vec::new()),
        });
        let log = TransportLog::new();
        let mut wired = Wired::new(Box::new(subject), server.clone(), log.clone());
        let g = GenConfig::default();
        let sessions = (0..cases)
            .map(|i| {
                let mut case = case_from_seed(17, i, &g);
                case.config.transport_max_body_bytes = ceiling;
                let turns = simulate_session(&mut wired, &case.config, &case.messages, None)
                    .expect("an in-process subject does not fault");
                (case.config, turns)
            })
            .collect();
        Run {
            server,
            log,
            sessions,
        }
    }

    fn sent_turns(r: &Run) -> impl Iterator<Item = (u64, &Delivery)> + '_ {
        r.sessions.iter().flat_map(|(_, turns)| {
            turns
                .iter()
                .filter_map(|t| match (&t.outcome, &t.delivery) {
                    (TurnOutcome::Sent { body, .. }, Some(d)) => Some((*body, d)),
                    _ => None,
                })
        })
    }

    #[test]
    fn every_body_sent_goes_to_the_endpoint_at_ctxgates_exact_size() {
        let r = run(InProcess::reference(), 20_000, Some(20_000), 60);
        let mut delivered = 0u64;
        for (_, turns) in &r.sessions {
            for t in turns {
                assert_eq!(
                    matches!(t.outcome, TurnOutcome::Sent { .. }),
                    t.delivery.is_some(),
                    "turn {}: a body sent and nothing delivered, or the reverse",
                    t.turn
                );
            }
        }
        for (body, d) in sent_turns(&r) {
            delivered += 1;
            assert_eq!(
                d.sent, body,
                "the wire carried another length than measured"
            );
            assert_eq!(d.answer.reception(), Reception::Accepted, "{body} bytes");
        }
        assert!(
            delivered > 100,
            "only {delivered} bodies: the cases did not exercise the transport"
        );
        assert_eq!(r.server.sizes.lock().unwrap().len() as u64, delivered);
        let s = r.log.summary();
        assert_eq!((s.sent, s.accepted, s.refused), (delivered, delivered, 0));
        assert_eq!(s.answers.get("200"), Some(&delivered));
        assert!(s.agreed() && s.stopped.is_none(), "{s:?}");
        for (config, turns) in &r.sessions {
            assert!(session_never_overflows(config, turns).is_empty());
        }
    }

    #[test]
    fn a_compactor_that_ignores_the_ceiling_is_refused_and_the_oracle_says_so() {
        let r = run(
            Defect::WindowIgnoresCeiling.subject(),
            20_000,
            Some(20_000),
            60,
        );
        let refused: Vec<_> = sent_turns(&r).filter(|(b, _)| *b > 20_000).collect();
        assert!(
            !refused.is_empty(),
            "the defect never sent a body over 20,000"
        );
        for (_, d) in &refused {
            assert_eq!(d.answer.status(), Some(413));
        }
        let s = r.log.summary();
        assert_eq!(s.refused, refused.len() as u64);
        assert!(
            s.agreed(),
            "over the ceiling and refused is an agreement: {s:?}"
        );
        let violations: Vec<_> = r
            .sessions
            .iter()
            .flat_map(|(c, t)| session_never_overflows(c, t))
            .collect();
        assert_eq!(violations.len(), refused.len());
        for v in &violations {
            assert!(
                v.detail.contains("the live endpoint refused it too: 413 Payload Too Large (body: request entity too large)"),
                "{v}"
            );
        }
    }

    #[test]
    fn a_ceiling_above_the_endpoints_limit_is_a_disagreement() {
        let r = run(InProcess::reference(), 20_000, Some(8_000), 60);
        let s = r.log.summary();
        assert!(s.refused_under_ceiling > 0, "{s:?}");
        assert_eq!(s.refused_under_ceiling, s.refused);
        assert!(!s.agreed());
        let first = s.first_refused_under_ceiling.expect("the first is kept");
        assert!(
            first.measured > 8_000 && first.measured <= 20_000,
            "{first}"
        );
        assert!(
            first
                .to_string()
                .contains("under the 20000-byte ceiling: 413"),
            "{first}"
        );
        let violations: usize = r
            .sessions
            .iter()
            .map(|(c, t)| session_never_overflows(c, t).len())
            .sum();
        assert_eq!(violations as u64, s.refused_under_ceiling);
    }

    #[test]
    fn the_first_body_without_an_answer_stops_the_sending() {
        let r = run(InProcess::reference(), 20_000, None, 20);
        assert_eq!(
            r.server.sizes.lock().unwrap().len(),
            1,
            "a silent endpoint was sent more than one body"
        );
        assert!(r.log.stopped());
        let s = r.log.summary();
        assert_eq!((s.sent, s.accepted, s.refused), (1, 0, 0));
        let (size, error) = s.stopped.expect("where it stopped is kept");
        assert!(size > 0 && error.contains("timeout"), "{size} {error}");
        let delivered: Vec<_> = sent_turns(&r).collect();
        assert_eq!(delivered.len(), 1, "only the first turn carries an answer");
        for (config, turns) in &r.sessions {
            assert!(
                session_never_overflows(config, turns).is_empty(),
                "no answer judges nothing"
            );
        }
    }
}
