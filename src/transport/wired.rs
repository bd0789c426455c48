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

/// A subject whose ToolLoop bodies also go to a live endpoint.
pub struct Wired {
    inner: Box<dyn Subject + Send>,
    wire: Arc<dyn Wire>,
    log: Arc<TransportLog>,
}

impl Wired {
    pub fn new(
        inner: Box<dyn Subject + Send>,
        wire: Arc<dyn Wire>,
        log: Arc<TransportLog>,
    ) -> Self {
        Wired { inner, wire, log }
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
    fn deliver(&mut self, config: &Config, msgs: &[Message], measured: u64) -> Option<Delivery> {
        if self.log.stopped() {
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
