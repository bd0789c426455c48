//! What `ctxgate probe-ceiling` shows of a probe: the limit found and the
//! answers, as lines for a person or one JSON object.

use std::path::Path;

use serde_json::{json, Value};

use super::{Limit, ProbeReport, Reception, Verdict};
use crate::config::Config;
use crate::model::text::group;

/// The summary after the probes' own lines: the limit, the answers, the
/// warnings, and — given the config file the ceiling came from — whether
/// its `transportMaxBodyBytes` is within the limit.
pub fn human(report: &ProbeReport, verdict: &Verdict, config_file: Option<&Path>) -> String {
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
pub fn to_json(
    url: &str,
    method: &str,
    config: &Config,
    config_file: Option<&Path>,
    report: &ProbeReport,
    verdict: &Verdict,
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
