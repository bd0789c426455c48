//! `check --transport URL`: the flags, and the summary of what the live
//! endpoint answered. Every subject of the run is wrapped in a
//! `transport::Wired`, whose ToolLoop bodies also go to the endpoint.

use std::sync::Arc;

use clap::Args as ClapArgs;

use super::common::CliError;
use super::probe_ceiling::{open_wire, parse_headers};
use ctxgate::transport::{HttpOptions, Live};
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

impl TransportArgs {
    /// The endpoint, when `--transport` was given: checked against the
    /// loopback rule before anything runs. `fixed` is the config every case
    /// runs under, which must carry the endpoint's ceiling.
    pub fn open(&self, fixed: Option<&Config>) -> Result<Option<Live>, CliError> {
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
            return Err(CliError::bad_input(
                "--transport needs the endpoint's ceiling: every case must run under the config your compactor runs with, not a generated one",
            )
            .with_hint(format!(
                "measure it with `ctxgate probe-ceiling {url}`, then pass --config FILE (its transportMaxBodyBytes) or --transport-max-body-bytes BYTES"
            )));
        }
        Ok(Some(Live::new(url.clone(), Arc::new(wire))))
    }
}

/// What the endpoint answered, and a failure when it stopped answering.
pub fn finish(live: &Live) -> (String, Option<CliError>) {
    let (summary, stopped) = live.finish();
    let hint = "is the server up, and does it answer within --transport-timeout?";
    (
        summary,
        stopped.map(|why| CliError::failed(why).with_hint(hint)),
    )
}
