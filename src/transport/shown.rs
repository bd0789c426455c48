//! What the commands show of a real transport: a probe's limit and answers
//! (`ctxgate probe-ceiling`, as lines for a person or one JSON object), and
//! what a live endpoint answered during a run (`check --transport`).

use std::path::Path;

use serde_json::{json, Value};

use super::{Limit, ProbeReport, ProbeSummary, Reception, TransportSummary};
use crate::config::Config;
use crate::model::text::group;

/// The summary after the probes' own lines: the limit, the answers, the
/// warnings, and — given the config file the ceiling came from — whether
/// its `transportMaxBodyBytes` is within the limit.
pub fn probe_human(
    report: &ProbeReport,
    verdict: &ProbeSummary,
    config_file: Option<&Path>,
) -> String {
    let mut out = match &report.limit {
        Limit::Exact { accepted } => {
            let refused = report
                .probes
                .iter()
                .find(|p| p.bytes == accepted + 1)
                .map(|p| format!(" ({})", p.answer.label()))
                .unwrap_or_default();
            format!(
                "limit: {} bytes — the largest body accepted; {} bytes refused{refused}\n",
                group(*accepted),
                group(accepted + 1)
            )
        }
        Limit::AtLeast { accepted } => format!(
            "limit: none found — every size up to --max ({} bytes) was accepted\n",
            group(*accepted)
        ),
        Limit::BelowSmallest { refused } => format!(
            "limit: below {} bytes — even the smallest body was refused\n",
            group(*refused)
        ),
        Limit::NoAnswer {
            at,
            accepted,
            refused,
            ..
        } => format!(
            "limit: not found — no answer to {} bytes (largest accepted so far: {}, smallest refused: {})\n",
            group(*at),
            accepted.map_or("none".to_owned(), group),
            refused.map_or("none".to_owned(), group),
        ),
    };
    out += &format!(
        "{} requests; answers: {}\n",
        report.probes.len(),
        verdict.answers_line()
    );
    for w in &verdict.warnings {
        out += &format!("warning: {w}\n");
    }
    if let (Some(path), false) = (config_file, verdict.config_above) {
        if matches!(report.limit, Limit::Exact { .. }) {
            out += &format!(
                "{}: transportMaxBodyBytes is within the limit\n",
                path.display()
            );
        }
    }
    out
}

/// The `--json` object: the limit, every probe, and the config's check.
pub fn probe_json(
    url: &str,
    method: &str,
    config: &Config,
    config_file: Option<&Path>,
    report: &ProbeReport,
    verdict: &ProbeSummary,
) -> Value {
    let (kind, accepted, refused) = match &report.limit {
        Limit::Exact { accepted } => ("exact", Some(*accepted), Some(accepted + 1)),
        Limit::AtLeast { accepted } => ("at-least", Some(*accepted), None),
        Limit::BelowSmallest { refused } => ("below-smallest", None, Some(*refused)),
        Limit::NoAnswer {
            accepted, refused, ..
        } => ("no-answer", *accepted, *refused),
    };
    let probes: Vec<Value> = report
        .probes
        .iter()
        .map(|p| {
            json!({
                "bytes": p.bytes,
                "status": p.answer.status(),
                "accepted": match p.answer.reception() {
                    Reception::Accepted => Some(true),
                    Reception::Refused => Some(false),
                    Reception::Unknown => None,
                },
                "answer": p.answer.to_string(),
            })
        })
        .collect();
    json!({
        "url": url,
        "method": method.to_ascii_uppercase(),
        "wireFormat": config.wire_format.as_str(),
        "smallest": report.smallest,
        "max": report.max,
        "limit": if kind == "exact" { accepted.map(Value::from) } else { None }.unwrap_or(Value::Null),
        "kind": kind,
        "largestAccepted": accepted,
        "smallestRefused": refused,
        "requests": report.probes.len(),
        "answers": verdict.answers,
        "probes": probes,
        "config": config_file.map(|p| json!({
            "file": p.display().to_string(),
            "transportMaxBodyBytes": config.transport_max_body_bytes,
            "aboveLimit": verdict.config_above,
        })),
        "warnings": verdict.warnings,
    })
}

/// What a live endpoint answered during a run, in a few lines: the tally,
/// every disagreement with ctxgate's exact size, and where it stopped.
pub fn live_summary(url: &str, s: &TransportSummary) -> String {
    let answers: Vec<String> = s
        .answers
        .iter()
        .map(|(k, n)| format!("{k} ×{}", group(*n)))
        .collect();
    let mut out = format!(
        "transport {url}: {} request bodies sent (shrinking included): {} accepted, {} refused; answers: {}\n",
        group(s.sent),
        group(s.accepted),
        group(s.refused),
        if answers.is_empty() { "none".to_owned() } else { answers.join(", ") }
    );
    if s.agreed() && s.accepted + s.refused > 0 {
        out.push_str("transport: ctxgate's exact size and the endpoint agreed on every body answered (each one refused was over the ceiling, each one accepted under it)\n");
    }
    let lines = [
        (
            s.refused_under_ceiling,
            &s.first_refused_under_ceiling,
            "refused although ctxgate measured them under the ceiling — the ceiling is above this endpoint's real limit",
        ),
        (
            s.accepted_over_ceiling,
            &s.first_accepted_over_ceiling,
            "accepted although ctxgate measured them over the ceiling — the ceiling is below this endpoint's limit",
        ),
        (
            s.size_mismatches,
            &s.first_size_mismatch,
            "sent with another length than ctxgate measured — ctxgate's exact size is wrong",
        ),
    ];
    for (n, first, what) in lines {
        if n > 0 {
            out.push_str(&format!("DISAGREEMENT: {} bodies {what}", group(n)));
            if let Some(d) = first {
                out.push_str(&format!("; the first: {d}"));
            }
            out.push('\n');
        }
    }
    if let Some((bytes, error)) = &s.stopped {
        out.push_str(&format!(
            "transport: STOPPED at a {}-byte body that got no answer ({error})\n",
            group(*bytes)
        ));
    }
    out
}
