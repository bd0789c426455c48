//! The largest request body an endpoint accepts, to the byte.
//!
//! Every body sent is shaped like a real request — the config's envelope
//! with `messages` in its wire format: a system prompt, a user turn, an
//! assistant turn with a tool call and the tool's result, whose text is
//! padded to make the body exactly the size asked for (measured by
//! `body::body_bytes`, which is serde_json's length). The search:
//!
//! 1. gallop up from 1 KiB by ×16 until a body is refused (or `max` is
//!    accepted): five bodies reach 4 MiB, a sixth 64 MiB;
//! 2. inside that bracket, try the limits real stacks ship with
//!    ([`KNOWN_LIMITS`]: Express's 100 KB, nginx's 1m, Plug's 8 MB, …) —
//!    `L + 1` first, then `L` when `L + 1` is refused, so a stock limit is
//!    confirmed in two bodies and a wrong guess costs one and still
//!    narrows the bracket;
//! 3. bisect what is left, to the byte.
//!
//! At the default `max` (32 MiB) that is at most 5 + 4 + 25 = 34 bodies,
//! and 5 to 9 for the stock limits. Each size is sent once: a refused body
//! is never sent again, and the first body with no answer (no connection,
//! a timeout) ends the probe.

use serde_json::json;

use std::collections::BTreeMap;

use super::{Answer, Reception, Wire};
use crate::body::{body_bytes, body_value};
use crate::config::Config;
use crate::model::text::group;
use crate::model::{Message, ToolCall};

/// Request-body limits that real HTTP stacks ship with, in bytes: tried
/// first inside the bracket. Express/body-parser `100kb`; nginx
/// `client_max_body_size 1m`, Koa, Fastify and hapi `1mb`; Tomcat's and
/// Spring's 2 MB; Django's 2.5 MB; Plug's (Phoenix) 8,000,000; ADR 0098's
/// engine 8 MiB; the ADR's fix `10mb` (and API Gateway's 10 MB).
pub const KNOWN_LIMITS: [u64; 7] = [
    102_400, 1_048_576, 2_097_152, 2_621_440, 8_000_000, 8_388_608, 10_485_760,
];

/// The largest `max` a probe takes: 1 GiB (each body is built in memory).
pub const MAX_PROBE_BYTES: u64 = 1 << 30;

/// The first size tried, when the shape allows it.
const START: u64 = 1024;
/// The galloping factor.
const GALLOP: u64 = 16;

/// The tool result's text, repeated to pad the body: plain ASCII that JSON
/// does not escape, so each byte of it is one byte of the body.
const FILLER: &str =
    "apps/api/src/main.ts:12: app.use(express.json()) /* the implicit 100kb limit */ ";

/// The messages of a shaped body, the tool result's text `padding` bytes.
fn shaped_messages(padding: usize) -> Vec<Message> {
    let text: String = FILLER.chars().cycle().take(padding).collect();
    vec![
        Message::system("You are the QA gate."),
        Message::user("Review PR 412"),
        Message::assistant_calls(
            "",
            vec![ToolCall::new(
                "call_1",
                "read_file",
                json!({"path": "apps/api/src/main.ts"}),
            )],
        ),
        Message::tool("call_1", text),
    ]
}

/// The smallest shaped body under `config` (the tool result empty), in bytes.
pub fn smallest_shaped_body(config: &Config) -> u64 {
    body_bytes(config, &shaped_messages(0))
}

/// A request body of exactly `size` bytes, shaped like a real request
/// under `config`; `Err(smallest)` when `size` is below the smallest.
pub fn shaped_body(config: &Config, size: u64) -> Result<Vec<u8>, u64> {
    let smallest = smallest_shaped_body(config);
    if size < smallest {
        return Err(smallest);
    }
    let messages = shaped_messages((size - smallest) as usize);
    let bytes =
        serde_json::to_vec(&body_value(config, &messages)).expect("a JSON value always serialises");
    debug_assert_eq!(bytes.len() as u64, size, "a shaped body of the wrong size");
    Ok(bytes)
}

/// What to probe with.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// The envelope and wire format of the bodies.
    pub config: Config,
    /// The largest body tried.
    pub max: u64,
}

/// One body sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    pub bytes: u64,
    pub answer: Answer,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Limit {
    /// The largest body accepted; one byte more was refused.
    Exact { accepted: u64 },
    /// Every size tried was accepted, up to `max`: the limit, if any, is higher.
    AtLeast { accepted: u64 },
    /// Even the smallest shaped body was refused.
    BelowSmallest { refused: u64 },
    /// The endpoint gave no answer to a body of `at` bytes; the bracket
    /// known by then.
    NoAnswer {
        at: u64,
        error: String,
        accepted: Option<u64>,
        refused: Option<u64>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeReport {
    pub limit: Limit,
    /// Every body sent, in order.
    pub probes: Vec<Probe>,
    /// The smallest shaped body, in bytes.
    pub smallest: u64,
    pub max: u64,
}

/// The bracket so far: the largest size accepted and the smallest refused.
struct Search<'w> {
    wire: &'w dyn Wire,
    config: &'w Config,
    accepted: Option<u64>,
    refused: Option<u64>,
    probes: Vec<Probe>,
    on_probe: &'w mut dyn FnMut(&Probe),
}

/// Stop: the endpoint gave no answer.
struct Silent {
    at: u64,
    error: String,
}

impl Search<'_> {
    /// Send a body of `size` bytes once (a size already answered is not
    /// sent again) and move the bracket. `Ok(true)`: accepted.
    fn try_size(&mut self, size: u64) -> Result<bool, Silent> {
        if self.accepted.is_some_and(|a| size <= a) {
            return Ok(true);
        }
        if self.refused.is_some_and(|r| size >= r) {
            return Ok(false);
        }
        let body = shaped_body(self.config, size).expect("sizes tried are at least the smallest");
        let answer = self.wire.post(&body);
        drop(body);
        let probe = Probe {
            bytes: size,
            answer,
        };
        (self.on_probe)(&probe);
        let reception = probe.answer.reception();
        let error = match &probe.answer {
            Answer::NoAnswer { error } => Some(error.clone()),
            _ => None,
        };
        self.probes.push(probe);
        match reception {
            Reception::Accepted => {
                self.accepted = Some(size);
                Ok(true)
            }
            Reception::Refused => {
                self.refused = Some(size);
                Ok(false)
            }
            Reception::Unknown => Err(Silent {
                at: size,
                error: error.unwrap_or_default(),
            }),
        }
    }

    fn run(&mut self, smallest: u64, max: u64) -> Result<Limit, Silent> {
        // 1. Gallop.
        let mut size = START.clamp(smallest, max);
        loop {
            if !self.try_size(size)? {
                break;
            }
            if size == max {
                return Ok(Limit::AtLeast { accepted: max });
            }
            size = size.saturating_mul(GALLOP).min(max);
        }
        // The first size was refused: is the smallest accepted?
        if self.accepted.is_none() && (size == smallest || !self.try_size(smallest)?) {
            return Ok(Limit::BelowSmallest { refused: smallest });
        }
        // 2. The stock limits inside the bracket.
        for l in KNOWN_LIMITS {
            let (a, r) = self.bracket();
            if l <= a || l >= r {
                continue;
            }
            if l + 1 < r && self.try_size(l + 1)? {
                continue;
            }
            self.try_size(l)?;
            break;
        }
        // 3. Bisect.
        loop {
            let (a, r) = self.bracket();
            if r - a <= 1 {
                return Ok(Limit::Exact { accepted: a });
            }
            self.try_size(a + (r - a) / 2)?;
        }
    }

    fn bracket(&self) -> (u64, u64) {
        (
            self.accepted.expect("the bracket has an accepted size"),
            self.refused.expect("the bracket has a refused size"),
        )
    }
}

/// Find the largest body `wire` accepts, between the smallest shaped body
/// and `opts.max` (raised to the smallest when below it).
pub fn probe(
    wire: &dyn Wire,
    opts: &ProbeOptions,
    on_probe: &mut dyn FnMut(&Probe),
) -> ProbeReport {
    let smallest = smallest_shaped_body(&opts.config);
    let max = opts.max.max(smallest);
    let mut search = Search {
        wire,
        config: &opts.config,
        accepted: None,
        refused: None,
        probes: Vec::new(),
        on_probe,
    };
    let limit = match search.run(smallest, max) {
        Ok(limit) => limit,
        Err(Silent { at, error }) => Limit::NoAnswer {
            at,
            error,
            accepted: search.accepted,
            refused: search.refused,
        },
    };
    ProbeReport {
        limit,
        probes: search.probes,
        smallest,
        max,
    }
}

/// What a probe means for its user: its answers counted by kind, the
/// warnings it calls for, and whether the config's ceiling (`ceiling`, when
/// a config was given) is above the limit found.
pub struct ProbeSummary {
    pub answers: BTreeMap<String, u64>,
    pub warnings: Vec<String>,
    /// The config's ceiling is above the limit found.
    pub config_above: bool,
}

impl ProbeSummary {
    /// Why the probe of `url` fails, if it does — the endpoint gave no
    /// answer, refused even the smallest body, or the config's ceiling is
    /// above its limit — and what the user might do about it.
    pub fn problem(&self, report: &ProbeReport, url: &str) -> Option<(String, Option<String>)> {
        Some(match &report.limit {
            Limit::NoAnswer { at, error, .. } => (
                format!(
                    "{url}: no answer to a {}-byte body ({error}); the probe stopped there",
                    group(*at)
                ),
                Some("is the server up, and does it answer within --timeout?".to_owned()),
            ),
            Limit::BelowSmallest { refused } => (
                format!(
                    "{url}: refused even the smallest request body ({} bytes)",
                    group(*refused)
                ),
                None,
            ),
            _ if self.config_above => (
                "the config's transportMaxBodyBytes is above the endpoint's limit".to_owned(),
                None,
            ),
            _ => return None,
        })
    }

    pub fn of(report: &ProbeReport, ceiling: Option<u64>) -> ProbeSummary {
        let mut answers = BTreeMap::new();
        for p in &report.probes {
            *answers.entry(p.answer.label()).or_insert(0) += 1;
        }
        let mut warnings = Vec::new();
        let largest = match report.limit {
            Limit::Exact { accepted } => Some(accepted),
            Limit::BelowSmallest { .. } => Some(0),
            _ => None,
        };
        let config_above = matches!((ceiling, largest), (Some(c), Some(l)) if c > l);
        if let (true, Some(c), Some(l)) = (config_above, ceiling, largest) {
            warnings.push(format!(
                "the config's transportMaxBodyBytes is {}, above this endpoint's limit of {} bytes: your compactor will send bodies this server refuses; set it to at most {} (less, for headroom)",
                group(c),
                group(l),
                group(l)
            ));
        }
        if let (Some(c), Limit::AtLeast { accepted }) = (ceiling, &report.limit) {
            if c > *accepted {
                warnings.push(format!(
                    "the config's transportMaxBodyBytes ({}) is above --max ({}): bodies that large were not tried",
                    group(c),
                    group(*accepted)
                ));
            }
        }
        let not_2xx: Vec<String> = report
            .probes
            .iter()
            .filter_map(|p| match p.answer {
                Answer::Status { code, .. }
                    if p.answer.reception() == Reception::Accepted
                        && !(200..300).contains(&code) =>
                {
                    Some(code.to_string())
                }
                _ => None,
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !not_2xx.is_empty() {
            warnings.push(format!(
                "{} counted as accepted (the server answered about something else than the size); a server that answers before it reads the body — authentication, a wrong path or method — was not measured: check the URL, --method and --header",
                not_2xx.join(", ")
            ));
        }
        if report
            .probes
            .iter()
            .any(|p| p.answer.status().is_some_and(|c| c >= 500))
        {
            warnings.push(
                "a 5xx counted as a refusal: it may not be about the body's size (an upstream down?); check the server's log"
                    .to_owned(),
            );
        }
        if report
            .probes
            .iter()
            .any(|p| matches!(p.answer, Answer::Closed { .. }))
        {
            warnings.push(
                "a connection closed or reset without an answer counted as a refusal".to_owned(),
            );
        }
        ProbeSummary {
            answers,
            warnings,
            config_above,
        }
    }

    pub fn answers_line(&self) -> String {
        self.answers
            .iter()
            .map(|(k, n)| format!("{k} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::WireFormat;
    use std::sync::Mutex;

    #[test]
    fn a_probe_fails_on_no_answer_on_refusing_everything_and_on_a_config_above_the_limit() {
        let report = |limit| ProbeReport {
            limit,
            probes: Vec::new(),
            smallest: 300,
            max: 1 << 20,
        };
        let url = "http://127.0.0.1:9/x";
        let no_answer = report(Limit::NoAnswer {
            at: 2048,
            error: "timed out".into(),
            accepted: Some(1024),
            refused: None,
        });
        let (why, hint) = ProbeSummary::of(&no_answer, None)
            .problem(&no_answer, url)
            .unwrap();
        assert_eq!(why, "http://127.0.0.1:9/x: no answer to a 2,048-byte body (timed out); the probe stopped there");
        assert!(hint.unwrap().contains("--timeout"));

        let refused = report(Limit::BelowSmallest { refused: 300 });
        let (why, hint) = ProbeSummary::of(&refused, None)
            .problem(&refused, url)
            .unwrap();
        assert!(
            why.ends_with("refused even the smallest request body (300 bytes)"),
            "{why}"
        );
        assert_eq!(hint, None);

        let exact = report(Limit::Exact { accepted: 100_000 });
        let above = ProbeSummary::of(&exact, Some(102_400)).problem(&exact, url);
        assert!(above.unwrap().0.contains("above the endpoint's limit"));
        assert_eq!(
            ProbeSummary::of(&exact, Some(100_000)).problem(&exact, url),
            None
        );
        assert_eq!(ProbeSummary::of(&exact, None).problem(&exact, url), None);
    }

    /// A server with a body limit, counting what it was sent.
    struct Limited {
        limit: u64,
        sizes: Mutex<Vec<u64>>,
        silent_above: Option<u64>,
    }

    impl Limited {
        fn new(limit: u64) -> Self {
            Limited {
                limit,
                sizes: Mutex::new(Vec::new()),
                silent_above: None,
            }
        }
    }

    impl Wire for Limited {
        fn post(&self, body: &[u8]) -> Answer {
            let n = body.len() as u64;
            self.sizes.lock().unwrap().push(n);
            serde_json::from_slice::<serde_json::Value>(body).expect("a shaped body is JSON");
            if self.silent_above.is_some_and(|s| n > s) {
                return Answer::NoAnswer {
                    error: "timed out".into(),
                };
            }
            let code = if n <= self.limit { 200 } else { 413 };
            Answer::Status {
                code,
                excerpt: String::new(),
            }
        }
        fn describe(&self) -> String {
            format!("a server limited to {} bytes", self.limit)
        }
    }

    fn run(wire: &Limited, max: u64) -> ProbeReport {
        let opts = ProbeOptions {
            config: Config::default(),
            max,
        };
        probe(wire, &opts, &mut |_| {})
    }

    #[test]
    fn shaped_bodies_have_the_exact_size_in_every_format() {
        let envelope =
            json!({"model": "gpt-x", "sessionId": "s-412", "tools": [{"name": "read_file"}]});
        let mut config = Config {
            envelope: envelope.as_object().unwrap().clone(),
            ..Config::default()
        };
        for format in WireFormat::ALL {
            config.wire_format = format;
            let smallest = smallest_shaped_body(&config);
            assert_eq!(shaped_body(&config, smallest - 1), Err(smallest));
            for size in [smallest, smallest + 1, 1000, 102_400, 102_401, 1_048_577] {
                let body = shaped_body(&config, size).unwrap();
                assert_eq!(body.len() as u64, size, "{format} {size}");
                let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(v["model"], "gpt-x");
                let doc = crate::Document::parse(&body, Some(format)).unwrap();
                assert_eq!(doc.messages.len(), 4, "{format}: a real request's shape");
            }
        }
    }

    #[test]
    fn finds_stock_limits_exactly_in_few_requests() {
        for limit in KNOWN_LIMITS {
            let wire = Limited::new(limit);
            let report = run(&wire, 32 << 20);
            assert_eq!(report.limit, Limit::Exact { accepted: limit });
            assert!(
                report.probes.len() <= 10,
                "{limit}: {} requests",
                report.probes.len()
            );
        }
    }

    #[test]
    fn finds_any_limit_to_the_byte_within_the_bound_and_never_resends() {
        for limit in [
            300, 1023, 1024, 1025, 12_345, 102_399, 102_402, 999_999, 5_000_001, 33_554_431,
        ] {
            let wire = Limited::new(limit);
            let report = run(&wire, 32 << 20);
            assert_eq!(report.limit, Limit::Exact { accepted: limit }, "{limit}");
            let sizes = wire.sizes.lock().unwrap().clone();
            assert!(sizes.len() <= 34, "{limit}: {} requests", sizes.len());
            let mut unique = sizes.clone();
            unique.sort();
            unique.dedup();
            assert_eq!(
                unique.len(),
                sizes.len(),
                "{limit}: a size was sent twice: {sizes:?}"
            );
        }
    }

    #[test]
    fn ends_of_the_range() {
        let wire = Limited::new(u64::MAX);
        let report = run(&wire, 5_000_000);
        assert_eq!(
            report.limit,
            Limit::AtLeast {
                accepted: 5_000_000
            }
        );
        let wire = Limited::new(10);
        let report = run(&wire, 5_000_000);
        assert_eq!(
            report.limit,
            Limit::BelowSmallest {
                refused: report.smallest
            }
        );
        assert_eq!(report.probes.len(), 2, "{:?}", report.probes);
    }

    #[test]
    fn no_answer_ends_the_probe_at_once() {
        let mut wire = Limited::new(102_400);
        wire.silent_above = Some(20_000);
        let report = run(&wire, 32 << 20);
        match report.limit {
            Limit::NoAnswer {
                at,
                accepted,
                refused,
                ..
            } => {
                assert!(at > 20_000);
                assert_eq!(accepted, Some(16_384));
                assert_eq!(refused, None);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(report.probes.len(), 3);
    }
}
