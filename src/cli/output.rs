//! Where a run's report goes, for `check` and `report merge` alike: the
//! form `--report` names, to stdout or to `--out FILE` (a human summary
//! then still on stdout), and each `--also-report FORM=FILE`. Every file
//! is opened before any work is done: one that cannot be written is bad
//! usage at once, not a run lost at its end.

use std::path::PathBuf;

use clap::Args as ClapArgs;

use super::common::CliError;
use ctxgate::report::file::ReportFiles;
use ctxgate::report::render::{Outcome, ReportKind};

#[derive(Debug, ClapArgs)]
pub struct ReportArgs {
    /// The report's form
    #[arg(long, value_enum, default_value_t = ReportKind::Human)]
    pub report: ReportKind,

    /// Write the report to FILE (a human summary still goes to stdout)
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Also write the report in another form to FILE (repeatable), e.g.
    /// `--also-report junit=ctxgate-junit.xml --also-report
    /// markdown=summary.md`: every form a CI job needs from one run
    #[arg(long, value_name = "FORM=FILE")]
    pub also_report: Vec<String>,
}

impl ReportArgs {
    /// `--out` and every `--also-report` file, as outputs of `files`.
    pub fn files(&self, files: super::files::RunFiles) -> super::files::RunFiles {
        files.reports(self.out.as_deref(), &self.also_report)
    }

    /// Open `--out` and every `--also-report` file.
    pub fn open(&self) -> Result<Opened, CliError> {
        let files = ReportFiles::open(self.out.as_deref(), &self.also_report);
        Ok(Opened(files.map_err(CliError::bad_input)?))
    }
}

/// The report files, open and still empty.
pub struct Opened(ReportFiles);

impl Opened {
    /// The report in `--report`'s form to `--out` (a human summary, then
    /// `extra`, to stdout) or to stdout, and each `--also-report`; the
    /// first write error, said on stderr.
    pub fn write(self, kind: ReportKind, outcome: &Outcome, extra: &str) -> Option<String> {
        let to_file = self.0.out.is_some();
        let error = self.0.write(kind, outcome);
        match kind {
            _ if to_file => out!("{}{extra}", outcome.render(ReportKind::Human)),
            ReportKind::Human => out!("{}{extra}", outcome.render(kind)),
            _ => {
                out!("{}", outcome.render(kind));
                super::common::err(format_args!("{extra}"));
            }
        }
        if let Some(e) = &error {
            errln!("ctxgate: ERROR: {e}");
        }
        error
    }
}

/// Exit as the outcome says: failed (1) when it found something (`more`'s
/// message added: an endpoint that stopped answering); else bad usage (2)
/// when a report could not be written; else `more`, if any. `lead` opens
/// the failure's message.
pub fn exit(
    outcome: &Outcome,
    write_error: Option<String>,
    more: Option<CliError>,
    lead: &str,
) -> Result<(), CliError> {
    let mut why = outcome.problems();
    if why.is_empty() {
        return match (write_error, more) {
            (Some(e), _) => Err(CliError::bad_input(e)),
            (None, Some(f)) => Err(f),
            (None, None) => Ok(()),
        };
    }
    why.extend(more.map(|f| f.message));
    let (why, seed) = (why.join("; "), outcome.seed());
    Err(CliError::failed(format!("{lead}{why} (seed {seed})")))
}
