//! Subjects: the compactors under test. A subject answers `compact` (and,
//! optionally, `estimate`) requests; it never sees an oracle. The built-in
//! reference and the mutation suite's defective compactors run in process;
//! external programs speak the subject protocol (SPEC §6) over a process
//! boundary.

mod answer;
pub mod defects;
mod in_process;
mod lanes;
mod pipes;
mod process;
pub mod protocol;
pub mod reaper;
mod serve;
pub mod start;
mod written;

pub use answer::{CompactAnswer, EstimateAnswer, EstimateReply};
pub use in_process::{answer, estimator_fn, CompactFn, EstimateFn, InProcess};
pub use lanes::Lane;
/// The `answer` fuzz target's seam (src/fuzzing.rs).
pub(crate) use process::{Exchange, ReadBy};
pub use process::{ProcessOptions, ProcessSubject, DEFAULT_EXIT_GRACE};
pub use serve::serve;

use std::fmt;

use crate::config::Config;
use crate::invariant::{Invariant, InvariantSet};
use crate::model::{Message, WireFormat, WireFormats};

/// What a subject says of itself (the protocol's `hello`).
#[derive(Debug, Clone, PartialEq)]
pub struct SubjectInfo {
    pub name: String,
    pub version: String,
    /// Implements `estimate` (every subject implements `compact`).
    pub estimates: bool,
    /// The wire format it reads and writes.
    pub format: WireFormat,
    /// The invariants it claims; `None` means all that apply to its ops.
    pub invariants: Option<InvariantSet>,
    /// It keeps every JSON number exactly as written (`1.50` stays `1.50`,
    /// 2^64 keeps its digits): hello `"numbers": "exact"`. Such a subject
    /// is also sent numbers that stock JSON libraries re-spell or round
    /// (`model::value`); every other subject only portable ones.
    pub exact_numbers: bool,
    /// It takes content parts and images (SPEC §1.4, §6): hello
    /// `contentParts`, default `true`. A subject that says `false` takes
    /// text content only: it is sent no parts, and the report says how
    /// many image cases it was not sent.
    pub content_parts: bool,
    /// Its hello says `contentParts`, `true` or `false`: it chose. One that
    /// does not is sent content parts (the default), and a fault of its on
    /// a history that holds them says which hello field opts out
    /// ([`SubjectInfo::undeclared_parts`], [`CONTENT_PARTS_HINT`]).
    pub content_parts_declared: bool,
    /// Where it compacts, as a fraction of the trigger: hello `compactAt`,
    /// in (0, 1], default 1. A compactor that keeps a deliberate safety
    /// margin declares it (0.9: it compacts once its estimate is over 90%
    /// of the trigger), and `no-premature-compaction` and `progress` judge
    /// it against that point instead of the trigger itself
    /// (docs/contract-notes.md, note 31).
    pub compact_at: f64,
    /// The wire formats whose body it measures (SPEC §6): hello
    /// `wireFormats`, default all three. It is sent cases in these only;
    /// the report says how many were re-aimed or left out.
    pub wire_formats: WireFormats,
    /// What the hello said that ctxgate does not know (a misspelt field,
    /// an op it has no use for): told once, on stderr, and ignored.
    pub hello_notes: Vec<String>,
}

impl SubjectInfo {
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        SubjectInfo {
            name: name.into(),
            version: version.into(),
            estimates: true,
            format: WireFormat::Engine,
            invariants: None,
            exact_numbers: false,
            content_parts: true,
            content_parts_declared: false,
            compact_at: 1.0,
            wire_formats: WireFormats::ALL,
            hello_notes: Vec::new(),
        }
    }

    /// Whether `input` holds content parts this subject was sent without
    /// having said it takes them: its hello does not say `contentParts`.
    /// A fault on such a history may well be a compactor written for text
    /// content alone, and says so ([`CONTENT_PARTS_HINT`]).
    pub fn undeclared_parts(&self, input: &[Message]) -> bool {
        self.content_parts && !self.content_parts_declared && holds_content_parts(input)
    }

    /// The invariants the harness checks: the claimed set (default: all),
    /// without those it cannot judge on this subject ([`Self::unjudgeable`]).
    pub fn claimed(&self) -> InvariantSet {
        let mut claims = self.invariants.unwrap_or_else(InvariantSet::unnamed_claims);
        // A subject that estimates is timed by its own count wherever it
        // claims an invariant so timed (SPEC §6): the check of that count
        // comes with the claim, named in its claims or not.
        if Invariant::TIMED.iter().any(|i| claims.contains(*i)) {
            for inv in Invariant::DEFAULT_EXTENSIONS {
                claims.insert(inv);
            }
        }
        claims
            .iter()
            .filter(|i| self.unjudgeable(*i).is_none())
            .collect()
    }

    /// Why `inv` cannot be judged on this subject, claimed or not (what
    /// `check --claim` refuses): an estimate invariant of a subject that
    /// does not answer `estimate`, or the images' one of a subject that
    /// takes text only — it is sent no images, so a pass would be vacuous
    /// (the report lists it as not checked).
    pub fn unjudgeable(&self, inv: Invariant) -> Option<&'static str> {
        if inv.needs_estimate() && !self.estimates {
            return Some("it does not answer `estimate` (its hello's `ops`)");
        }
        if inv == Invariant::EstimateCoversImages && !self.content_parts {
            return Some(
                "it takes text only (its hello's `contentParts: false`), so it is sent no images",
            );
        }
        None
    }

    /// Why the subject does not claim `inv` (for a warning naming it): its
    /// hello leaves it out, or it cannot be judged on this subject.
    pub fn why_unclaimed(&self, inv: Invariant) -> &'static str {
        self.unjudgeable(inv)
            .unwrap_or("its hello's `invariants` leaves it out")
    }
}

/// End every subject of `subjects` at once, each on a thread of its own:
/// a process subject's end waits for it to exit (its exit grace, then
/// SIGTERM, then SIGKILL: `ProcessOptions::exit_grace`), and the subjects
/// of `--jobs N` wait side by side, not one after another.
pub fn end_all<S: Send>(subjects: impl IntoIterator<Item = S>) {
    std::thread::scope(|scope| {
        for subject in subjects {
            scope.spawn(move || drop(subject));
        }
    });
}

/// Whether some message of `input` has its content as an array of parts
/// (SPEC §1.4) — an empty one too, which shrinking leaves of an image's
/// and which a compactor that takes content for a string fails on alike.
pub fn holds_content_parts(input: &[Message]) -> bool {
    input
        .iter()
        .any(|m| matches!(m.content, crate::model::Content::Parts(_)))
}

/// What a subject's fault on a history holding content parts adds to its
/// detail when the subject's hello does not say `contentParts`
/// ([`SubjectInfo::undeclared_parts`]): the field that opts out, and where
/// the protocol says it.
pub const CONTENT_PARTS_HINT: &str = "the case holds content parts (images), which a subject is sent unless its hello says otherwise, and this one's does not say `contentParts`: a compactor that takes text content only says \"contentParts\": false in its hello and is sent none (docs/protocol.md, §5 \"Content parts and images\")";

/// How a subject failed to answer: a fault of the subject, never an answer.
/// In JSON, its [`name`](FaultKind::name).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum FaultKind {
    /// The process exited or the in-process compactor panicked.
    Crash,
    /// The process closed its stdout and went on running.
    ClosedStdout,
    /// A line the subject printed before it was asked for one.
    UnsolicitedLine,
    /// No answer within the per-request timeout.
    Timeout,
    /// A line that is not a JSON object of the protocol.
    MalformedLine,
    /// A line longer than the harness's cap.
    OversizedLine,
    /// An answer with another request's id.
    WrongId,
    /// An error answer of a kind other than `cannot_fit`, `invalid_input`
    /// and `library_error`.
    UnknownErrorKind,
    /// An error answer of kind `library_error`: what the Python and npm
    /// packages' `serve` answers when the compactor raised anything but
    /// their CannotFit or InvalidInput — the library under test threw.
    LibraryError,
    /// A well-formed line that breaks the protocol otherwise (a history that
    /// does not parse, a missing field, a failed hello).
    Protocol,
    /// The program could not be started.
    Spawn,
    /// Not the subject's fault, and never reported: the run's `--time`
    /// ran out while this request waited behind another lane's, whose
    /// fault took the process down (`Lane`); the case is not judged.
    Stopped,
}

impl FaultKind {
    pub const ALL: [FaultKind; 11] = [
        FaultKind::Crash,
        FaultKind::ClosedStdout,
        FaultKind::UnsolicitedLine,
        FaultKind::Timeout,
        FaultKind::MalformedLine,
        FaultKind::OversizedLine,
        FaultKind::WrongId,
        FaultKind::UnknownErrorKind,
        FaultKind::LibraryError,
        FaultKind::Protocol,
        FaultKind::Spawn,
    ];

    pub fn parse(name: &str) -> Option<FaultKind> {
        FaultKind::ALL.into_iter().find(|k| k.name() == name)
    }

    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Crash => "crash",
            FaultKind::ClosedStdout => "closed-stdout",
            FaultKind::UnsolicitedLine => "unsolicited-line",
            FaultKind::Timeout => "timeout",
            FaultKind::MalformedLine => "malformed-line",
            FaultKind::OversizedLine => "oversized-line",
            FaultKind::WrongId => "wrong-id",
            FaultKind::UnknownErrorKind => "unknown-error-kind",
            FaultKind::LibraryError => "library-error",
            FaultKind::Protocol => "protocol",
            FaultKind::Spawn => "spawn",
            FaultKind::Stopped => "stopped",
        }
    }
}

/// A subject's fault, with what it printed on stderr around it (in JSON,
/// these fields).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Fault {
    pub kind: FaultKind,
    #[serde(default)]
    pub detail: String,
    #[serde(default)]
    pub stderr: String,
}

impl Fault {
    pub fn new(kind: FaultKind, detail: impl Into<String>) -> Self {
        Fault {
            kind,
            detail: detail.into(),
            stderr: String::new(),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The detail on one line, and the stderr's lines indented under
        // it, control characters shown as escapes: what the subject wrote
        // (or a report read back) cannot forge a line of a report.
        let detail = crate::model::one_line(&self.detail);
        write!(f, "subject fault ({}): {detail}", self.kind.name())?;
        if !self.stderr.is_empty() {
            let stderr = crate::model::text::lines(self.stderr.trim_end());
            write!(f, "\n  stderr: {}", stderr.replace('\n', "\n          "))?;
        }
        Ok(())
    }
}

impl std::error::Error for Fault {}

/// What went over a process boundary: requests and bytes each way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Traffic {
    pub requests: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
}

impl std::ops::Add for Traffic {
    type Output = Traffic;
    fn add(self, o: Traffic) -> Traffic {
        Traffic {
            requests: self.requests + o.requests,
            bytes_sent: self.bytes_sent + o.bytes_sent,
            bytes_received: self.bytes_received + o.bytes_received,
        }
    }
}

/// One request to a subject, for [`Subject::batch`].
#[derive(Debug, Clone, Copy)]
pub enum Request<'a> {
    Compact(&'a Config, &'a [Message]),
    Estimate(&'a Config, &'a [Message]),
}

impl<'a> Request<'a> {
    /// The config the request carries.
    pub fn config(&self) -> &'a Config {
        match *self {
            Request::Compact(c, _) | Request::Estimate(c, _) => c,
        }
    }

    /// The history the request carries.
    pub fn messages(&self) -> &'a [Message] {
        match *self {
            Request::Compact(_, m) | Request::Estimate(_, m) => m,
        }
    }
}

/// The answer to one [`Request`].
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Compact(CompactAnswer),
    Estimate(EstimateReply),
}

impl Reply {
    pub fn into_compact(self) -> Option<CompactAnswer> {
        match self {
            Reply::Compact(a) => Some(a),
            Reply::Estimate(_) => None,
        }
    }

    pub fn into_estimate(self) -> Option<EstimateReply> {
        match self {
            Reply::Estimate(e) => Some(e),
            Reply::Compact(_) => None,
        }
    }
}

/// One request as a batch of one, for a subject whose `batch` is its own:
/// `Reply::into_compact` or `Reply::into_estimate` of its one reply.
fn by_batch<T>(
    s: &mut dyn Subject,
    request: Request<'_>,
    into: fn(Reply) -> Option<T>,
) -> Result<T, Fault> {
    let what = match request {
        Request::Compact(..) => "a compact",
        Request::Estimate(..) => "an estimate",
    };
    s.batch(&[request])?
        .into_iter()
        .next()
        .and_then(into)
        .ok_or_else(|| Fault::new(FaultKind::Protocol, format!("no answer to {what} request")))
}

/// The `Subject` methods of a subject over the protocol (a process, a
/// lane), inside its `impl Subject`: `info` from its `info` field, `batch`
/// by its own method `$batch`, `compact` and `estimate` as batches of one
/// ([`by_batch`]), and `sees_spellings` unless it speaks the engine format.
macro_rules! protocol_subject {
    ($batch:ident) => {
        fn info(&self) -> &$crate::subject::SubjectInfo {
            &self.info
        }
        fn batch(
            &mut self,
            rs: &[$crate::subject::Request<'_>],
        ) -> Result<Vec<$crate::subject::Reply>, $crate::subject::Fault> {
            self.$batch(rs)
        }
        fn compact(
            &mut self,
            c: &$crate::config::Config,
            m: &[$crate::model::Message],
        ) -> Result<$crate::subject::CompactAnswer, $crate::subject::Fault> {
            $crate::subject::by_batch(
                self,
                $crate::subject::Request::Compact(c, m),
                $crate::subject::Reply::into_compact,
            )
        }
        fn estimate(
            &mut self,
            c: &$crate::config::Config,
            m: &[$crate::model::Message],
        ) -> Result<$crate::subject::EstimateReply, $crate::subject::Fault> {
            $crate::subject::by_batch(
                self,
                $crate::subject::Request::Estimate(c, m),
                $crate::subject::Reply::into_estimate,
            )
        }
        fn sees_spellings(&self) -> bool {
            self.info.format != $crate::model::WireFormat::Engine
        }
    };
}
use protocol_subject;

/// A compactor under test.
pub trait Subject {
    fn info(&self) -> &SubjectInfo;

    /// Ask the subject to compact `msgs` under `config`.
    fn compact(&mut self, config: &Config, msgs: &[Message]) -> Result<CompactAnswer, Fault>;

    /// Ask the subject for its estimate; only called when `info().estimates`.
    fn estimate(&mut self, config: &Config, msgs: &[Message]) -> Result<EstimateReply, Fault>;

    /// [`compact`](Subject::compact), but `None` when the subject hands
    /// the history back unchanged and can say so without copying it
    /// (the reference can): `ctxgate serve` then answers with the JSON the
    /// history came as. By default, `compact`'s answer.
    fn compact_unless_unchanged(
        &mut self,
        config: &Config,
        msgs: &[Message],
    ) -> Result<Option<CompactAnswer>, Fault> {
        self.compact(config, msgs).map(Some)
    }

    /// What this subject's protocol carried so far (`None` in process).
    fn traffic(&self) -> Option<Traffic> {
        None
    }

    /// Whether the subject sees a history's messages as they were read,
    /// spellings included (`Message::wire`: an `openai` call's `arguments`
    /// text as written). In process it does; over the protocol in the
    /// engine format it cannot (engine messages carry values), so the
    /// harness judges such a subject on the history as sent
    /// (`harness::run_case`).
    fn sees_spellings(&self) -> bool {
        true
    }

    /// When the run ends (`--time`): past it, a subject may end a request
    /// with a [`FaultKind::Stopped`] instead of starting it again.
    fn stop_at(&mut self, _deadline: Option<std::time::Instant>) {}

    /// The live endpoint this subject's ToolLoop bodies are also sent to
    /// (`check --transport`; `transport::Wired`), if any.
    fn transport(&mut self) -> Option<&mut dyn crate::transport::Transport> {
        None
    }

    /// Requests that do not depend on each other's answers, answered in
    /// order. A process subject sends them all before reading the first
    /// answer (SPEC §6 allows several in flight); the first fault ends the
    /// batch.
    fn batch(&mut self, requests: &[Request<'_>]) -> Result<Vec<Reply>, Fault> {
        requests
            .iter()
            .map(|r| match *r {
                Request::Compact(c, m) => self.compact(c, m).map(Reply::Compact),
                Request::Estimate(c, m) => self.estimate(c, m).map(Reply::Estimate),
            })
            .collect()
    }
}
