//! `check --transport URL`: the flags, and the summary of what the live
//! endpoint answered. Every subject of the run is wrapped in a
//! `transport::Wired`, whose ToolLoop bodies also go to the endpoint.

use std::sync::Arc;

use clap::Args as ClapArgs;

use super::common::{group, Failure};
use super::probe_ceiling::{open_wire, parse_headers};
use ctxgate::subject::Subject;
use ctxgate::transport::{shown, HttpOptions, TransportLog, Wire, Wired};
use ctxgate::Config;

#[derive(Debug, ClapArgs)]
#[command(next_help_heading = "The real transport")]
pub struct TransportArgs {
    /// Also send every request body of session-never-overflows' simulated
    /// ToolLoop to this live endpoint; a body it refuses fails the session,
    /// with its answer. Needs the endpoint's ceiling in the config
    /// (--config FILE or --transport-max-body-bytes). Loopback only, unless
    /// --allow-remote
    #[arg(long, value_name = "URL")]
    pub transport: Option<String>,

    /// A header sent with every body (`Authorization: Bearer …`); repeatable
    #[arg(long = "transport-header", value_name = "K:V", requires = "transport")]
    pub transport_headers: Vec<String>,

    /// Seconds the endpoint may take to answer one body; the first body it
    /// does not answer stops the sending, and the run fails
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub transport_timeout: f64,

    /// Send to a host that is not loopback (127.0.0.0/8, ::1, localhost)
    #[arg(long, requires = "transport")]
    pub allow_remote: bool,
}

/// The endpoint of a run, and its tally.
pub struct Live {
    url: String,
    wire: Arc<dyn Wire>,
    log: Arc<TransportLog>,
}

impl TransportArgs {
    /// The endpoint, when `--transport` was given: checked against the
    /// loopback rule before anything runs. `fixed` is the config every case
    /// runs under, which must carry the endpoint's ceiling.
    pub fn open(&self, fixed: Option<&Config>) -> Result<Option<Live>, Failure> {
        let Some(url) = &self.transport else {
            return Ok(None);
        };
        let options = HttpOptions {
            headers: parse_headers("--transport-header", &self.transport_headers)?,
            timeout: super::common::seconds("--transport-timeout", self.transport_timeout)?,
            keep_alive: true,
            ..HttpOptions::default()
        };
        let wire = open_wire(url, self.allow_remote, &options)?;
        // From here on the URL is shown with its secrets masked.
        let url = &wire.target().shown.clone();
        if fixed.is_none() {
            return Err(Failure::bad_input(
                "--transport needs the endpoint's ceiling: every case must run under the config your compactor runs with, not a generated one",
            )
            .with_hint(format!(
                "measure it with `ctxgate probe-ceiling {url}`, then pass --config FILE (its transportMaxBodyBytes) or --transport-max-body-bytes BYTES"
            )));
        }
        Ok(Some(Live {
            url: url.clone(),
            wire: Arc::new(wire),
            log: TransportLog::new(),
        }))
    }
}

impl Live {
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The subject, its ToolLoop bodies also sent to the endpoint.
    pub fn wrap(&self, subject: Box<dyn Subject + Send>) -> Box<dyn Subject + Send> {
        Box::new(Wired::new(subject, self.wire.clone(), self.log.clone()))
    }

    /// What the endpoint answered, in a few lines; a failure when it
    /// stopped answering (the rest of the run was not sent to it).
    pub fn finish(&self) -> (String, Option<Failure>) {
        let s = self.log.summary();
        let text = shown::live_summary(&self.url, &s);
        let failure = s.stopped.as_ref().map(|(bytes, error)| {
            Failure::failed(format!(
                "{}: no answer to a {}-byte body ({error}); nothing more was sent to it, so the rest of the run was not checked against the real transport",
                self.url,
                group(*bytes)
            ))
            .with_hint("is the server up, and does it answer within --transport-timeout?")
        });
        (text, failure)
    }
}
