//! What a run says on the terminal while it runs, on stderr: the banner
//! before it starts, then its progress (a bar on a terminal, a plain line
//! every 10% otherwise). The report comes after, from `report`.

use std::io::IsTerminal;

use super::{CheckOptions, Progress};
use crate::model::one_line;
use crate::subject::SubjectInfo;

/// What a run is about to do, for stderr before it starts: the subject
/// (and the baseline), the seed, the cases, the live endpoint, the suite
/// first.
pub fn banner(
    subject: &SubjectInfo,
    baseline: Option<&SubjectInfo>,
    opts: &CheckOptions,
    live: Option<&str>,
) -> String {
    // The names are the subjects' own, the folder and the URL the user's:
    // each on one line.
    let against = baseline.map(|b| {
        let (name, version) = (one_line(&b.name), one_line(&b.version));
        format!(" against baseline {name} {version}")
    });
    let cases = match opts.shard {
        Some(s) if s.one_case => format!("case {} alone", s.case()),
        _ => format!("up to {} cases", opts.cases),
    };
    let mut out = format!(
        "ctxgate check: subject {} {}{}, seed {}, {cases}{}{}",
        one_line(&subject.name),
        one_line(&subject.version),
        against.unwrap_or_default(),
        opts.seed,
        opts.time
            .map(|t| format!(" or {:.0} s", t.as_secs_f64()))
            .unwrap_or_default(),
        live.map(|url| format!(", every ToolLoop body also sent to {}", one_line(url)))
            .unwrap_or_default()
    );
    if let Some(suite) = &opts.suite {
        let (dir, n) = (
            one_line(&suite.dir.display().to_string()),
            suite.fixtures.len(),
        );
        let sides = if baseline.is_some() {
            ", on both sides"
        } else {
            ""
        };
        out += &format!("\nctxgate check: the suite {dir} first{sides} ({n} fixture(s))");
    }
    out
}

/// A progress bar on a terminal; a plain line every 10% otherwise.
pub fn printer(total: u64) -> Box<dyn FnMut(Progress)> {
    if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(total);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {pos}/{len} cases, {msg} [{elapsed_precise}]",
            )
            .expect("a valid template"),
        );
        Box::new(move |p: Progress| {
            bar.set_position(p.done);
            bar.set_message(format!("{} failure(s), {} fault(s)", p.failures, p.faults));
            if p.done == p.total {
                bar.finish_and_clear();
            }
        })
    } else {
        let mut next = total.div_ceil(10).max(1);
        let step = next;
        Box::new(move |p: Progress| {
            if p.done >= next {
                eprintln!(
                    "  {}/{} cases, {} failure(s), {} fault(s)",
                    p.done, p.total, p.failures, p.faults
                );
                next += step;
            }
        })
    }
}
