//! `ctxgate probe-ceiling URL`: the largest JSON request body a real
//! endpoint accepts, to the byte (`transport::probe`), and whether a
//! config's `transportMaxBodyBytes` is above it.
//!
//! Exit codes: 0 the limit was measured (or every size up to `--max` was
//! accepted) and the config, if given, is not above it; 1 the config is
//! above it, the endpoint refused even the smallest body, or it gave no
//! answer; 2 bad usage — a URL that is not loopback without
//! `--allow-remote` (nothing is sent), a bad header, a bad config.

use std::path::PathBuf;
use std::sync::Arc;

use super::common::{format_parser, group, CliError, ConfigArgs};
use clap::Args as ClapArgs;
use ctxgate::transport::{
    probe, shown, smallest_shaped_body, HttpOptions, HttpWire, Probe, ProbeOptions, ProbeSummary,
    Target, Wire, MAX_PROBE_BYTES,
};
use ctxgate::WireFormat;

/// Measure the largest JSON request body an endpoint accepts, to the byte
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The endpoint, e.g. http://127.0.0.1:3000/internal/sessions/s1/llm-turn
    /// (loopback only, unless --allow-remote)
    #[arg(value_name = "URL")]
    pub url: String,

    /// A header sent with every body (`Authorization: Bearer …`); repeatable
    #[arg(long = "header", value_name = "K:V")]
    pub headers: Vec<String>,

    /// POST, PUT or PATCH
    #[arg(long, default_value = "POST")]
    pub method: String,

    /// The bodies' wire format [default: the config's, else engine]
    #[arg(long, value_name = "F", value_parser = format_parser())]
    pub wire_format: Option<WireFormat>,

    /// The largest body tried, in bytes (at most 1 GiB)
    #[arg(long, value_name = "BYTES", default_value_t = 32 << 20)]
    pub max: u64,

    /// Print one JSON object instead of the human summary
    #[arg(long)]
    pub json: bool,

    /// A config (SPEC §2): the bodies use its envelope and wire format, and
    /// its `transportMaxBodyBytes` is checked against the limit found
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Send to a host that is not loopback (127.0.0.0/8, ::1, localhost)
    #[arg(long)]
    pub allow_remote: bool,

    /// Seconds one request may take, connecting included
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,
}

/// `K:V` (or `K: V`) into a header name and value.
pub fn parse_headers(flag: &str, headers: &[String]) -> Result<Vec<(String, String)>, CliError> {
    headers
        .iter()
        .enumerate()
        .map(|(i, h)| match h.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.trim().to_owned())),
            // Not shown: a header that lost its colon may still hold a secret.
            _ => Err(CliError::bad_input(format!(
                "{flag} #{}: expected NAME:VALUE, e.g. 'Authorization: Bearer …' (its text is not shown: it may hold a secret)",
                i + 1
            ))),
        })
        .collect()
}

/// The loopback rule first: a URL it refuses is bad usage, and nothing is
/// sent or resolved.
pub fn open_wire(
    url: &str,
    allow_remote: bool,
    options: &HttpOptions,
) -> Result<HttpWire, CliError> {
    let target =
        Target::parse(url, allow_remote).map_err(|e| CliError::bad_input(e.to_string()))?;
    if target.remote {
        errln!(
            "ctxgate: note: {target} is not loopback: request bodies go to another machine (--allow-remote)"
        );
    }
    HttpWire::new(target, options).map_err(|e| CliError::bad_input(e.to_string()))
}

pub fn run(args: Args) -> Result<(), CliError> {
    let options = HttpOptions {
        method: args.method.clone(),
        headers: parse_headers("--header", &args.headers)?,
        timeout: super::common::seconds("--timeout", args.timeout)?,
        keep_alive: false,
    };
    let wire = Arc::new(open_wire(&args.url, args.allow_remote, &options)?);
    // The URL as shown from here on: its userinfo and credentials masked.
    let url = wire.target().shown.clone();
    let config = ConfigArgs {
        config: args.config.clone(),
        wire_format: args.wire_format,
        ..ConfigArgs::default()
    }
    .resolve(WireFormat::Engine)?;
    let smallest = smallest_shaped_body(&config);
    if args.max < smallest || args.max > MAX_PROBE_BYTES {
        return Err(CliError::bad_input(format!(
            "--max {}: bodies of this shape are {} bytes at least, and --max is at most {} (1 GiB)",
            args.max, smallest, MAX_PROBE_BYTES
        )));
    }
    let opts = ProbeOptions {
        config: config.clone(),
        max: args.max,
    };
    if !args.json {
        outln!(
            "ctxgate probe-ceiling: {} with {} request bodies (system, user, a tool call and its result), {} to {} bytes",
            wire.describe(),
            config.wire_format,
            group(smallest.min(args.max)),
            group(args.max)
        );
    }
    let human = !args.json;
    let report = probe(wire.as_ref(), &opts, &mut |p: &Probe| {
        if human {
            outln!("  {:>13} bytes: {}", group(p.bytes), p.answer);
        }
    });
    let file_ceiling = args
        .config
        .as_ref()
        .map(|_| config.transport_max_body_bytes);
    let verdict = ProbeSummary::of(&report, file_ceiling);
    let file = args.config.as_deref();
    if args.json {
        let shown = shown::probe_json(&url, &args.method, &config, file, &report, &verdict);
        super::common::print_json(&shown)?;
    } else {
        out!("{}", shown::probe_human(&report, &verdict, file));
    }
    match verdict.problem(&report, &url) {
        Some((why, hint)) => Err(CliError {
            hint,
            ..CliError::failed(why)
        }),
        None => Ok(()),
    }
}
