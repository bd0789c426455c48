//! `ctxgate agent --run CMD …`: ctxgate plays the model for an agent and
//! judges every request it sends (SPEC §9); `ctxgate agent replay PATH…
//! --run CMD` plays agent fixtures again.

use std::path::PathBuf;

use clap::{Args as ClapArgs, Subcommand};

use super::common::CliError;
use ctxgate::agent::case::Launch;
use ctxgate::agent::play::{Stage, SummaryMatcher};
use ctxgate::agent::report::{invariant_list, replay_text};
use ctxgate::agent::run::{default_gen, AgentOptions};
use ctxgate::agent::tools::ToolSpec;
use ctxgate::agent::{AgentFixture, AgentInvariant, Dialect, Gateway, Settings};
use ctxgate::report::file::ReportFiles;
use ctxgate::report::render::ReportKind;

#[derive(Debug, ClapArgs)]
#[command(args_conflicts_with_subcommands = true)]
#[command(after_help = "\
Each case starts the agent once, in a fresh workspace folder, with
OPENAI_BASE_URL and ANTHROPIC_BASE_URL pointing at ctxgate, dummy API keys,
the task in CTXGATE_AGENT_PROMPT and CTXGATE_AGENT_PROMPT_FILE, and the
case's index in CTXGATE_AGENT_CASE; {prompt} and {prompt_file} in the
command are replaced by the task and that file's path. Credentials and
proxies of your environment are not passed on.

Exit codes: 0 every checked invariant held and each was exercised; 1 an
invariant failed (or failed only now and then: flaky), or nothing was
judged; 2 bad usage: an agent command that does not start (not found, not
executable), or no tool the agent advertises reads a file.")]
pub struct Args {
    #[command(subcommand)]
    pub command: Option<Sub>,

    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Sub {
    /// Play agent fixtures again and judge them
    Replay(ReplayArgs),
}

/// How to start the agent, and what ctxgate plays.
#[derive(Debug, Clone, ClapArgs)]
pub struct AgentArgs {
    /// The agent: one string, a program and its arguments, split as a
    /// POSIX shell splits words and run without a shell (or everything
    /// after `--`)
    #[arg(long, value_name = "CMD")]
    pub run: Option<String>,

    /// The agent's settings: SPEC §2's config (the window, threshold and
    /// ceiling it was configured with) plus `toolOutputMaxBytes` and
    /// `earlyTolerance`
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// Answer only this dialect: openai-chat, openai-responses, anthropic
    /// [default: whichever a request uses]
    #[arg(long, value_name = "D")]
    pub dialect: Option<String>,

    /// A tool that reads a file: NAME:ARG[=TEMPLATE], {path} (absolute) or
    /// {file} (in the workspace) in TEMPLATE [default: the usual names,
    /// e.g. read_file:path, Read:file_path, bash:command='cat {file}']
    #[arg(long = "tool", value_name = "NAME:ARG[=TEMPLATE]")]
    pub tools: Vec<String>,

    /// A regex that tells a summary request (matched against the model's
    /// name, the system prompt and the last user message) [default: the
    /// common wordings: summarize, summary, compact, condense, …]
    #[arg(long, value_name = "REGEX")]
    pub summary_match: Option<String>,

    /// Who answers a body over the ceiling with 413: express, nginx,
    /// openai, anthropic
    #[arg(long, value_name = "G", default_value = "express")]
    pub gateway: String,

    /// The model `GET /v1/models` lists
    #[arg(long, value_name = "NAME", default_value = "ctxgate-model")]
    pub model: String,

    /// Seconds one case may take (the agent is stopped then)
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub timeout: f64,

    /// An environment variable for the agent, NAME=VALUE (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,

    /// Keep each case's folder (workspace, task, the agent's stdout and
    /// stderr) under --work-dir
    #[arg(long)]
    pub keep_folders: bool,

    /// Where case folders are made [default: the system's temporary folder]
    #[arg(long, value_name = "DIR")]
    pub work_dir: Option<PathBuf>,

    /// The agent command, as everything after `--`
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    pub command: Vec<String>,

    /// No command: the program that started ctxgate plays each case with
    /// an agent in its own process, told each case on stdout as a JSON line
    /// and answering `{"done": {"exitCode": N}}` on stdin; the report comes
    /// last, as `{"report": …}` (the Python and JS helpers speak this)
    #[arg(long, conflicts_with = "run")]
    pub driven: bool,
}

#[derive(Debug, ClapArgs)]
pub struct RunArgs {
    #[command(flatten)]
    pub agent: AgentArgs,

    /// How many cases to run
    #[arg(long, value_name = "N", default_value_t = 20)]
    pub cases: u64,

    /// Stop after this many seconds, whatever --cases says
    #[arg(long, value_name = "SECS")]
    pub time: Option<f64>,

    /// The generator's seed [default: random; always printed]
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,

    /// Comma-separated agent invariants to judge [default: all nine]
    #[arg(long, value_name = "LIST")]
    pub invariants: Option<String>,

    /// The generator's settings (a GenConfig JSON file, as for check); agent
    /// mode's default has no images — `imagesPercent` here turns them on,
    /// each image result a PNG file the agent's tool reads
    #[arg(long, value_name = "FILE")]
    pub gen_config: Option<PathBuf>,

    /// Folder where each failure's shrunk script is saved as a fixture
    #[arg(long, value_name = "DIR", default_value = "ctxgate-failures")]
    pub save: PathBuf,

    /// At most this many agent runs to shrink one failure
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub shrink_runs: usize,

    /// Re-runs that must fail again before a failure is shrunk (else it is
    /// reported flaky)
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub confirm_runs: usize,

    /// At most this many cases a run are played again as ceiling probes: a
    /// tool result grown until the request that carries it would be one
    /// byte over the ceiling (an agent's off-by-one; 0: none)
    #[arg(long, value_name = "N", default_value_t = 2)]
    pub ceiling_probes: usize,

    /// The report's form on stdout (or in --out)
    #[arg(long, value_enum, default_value = "human")]
    pub report: ReportKind,

    /// Write the report to FILE instead of stdout
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,

    /// Also write the report in another form, FORM=FILE (repeatable)
    #[arg(long, value_name = "FORM=FILE")]
    pub also_report: Vec<String>,

    /// Print the nine agent invariants and what each means, and exit
    #[arg(long)]
    pub list_invariants: bool,
}

#[derive(Debug, ClapArgs)]
pub struct ReplayArgs {
    /// Agent fixture files, or folders searched for *.json
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Every fixture must still fail (a bug kept against the release it
    /// was found on)
    #[arg(long)]
    pub expect_failures: bool,

    #[command(flatten)]
    pub agent: AgentArgs,
}

pub fn run(args: Args) -> Result<(), CliError> {
    match args.command {
        Some(Sub::Replay(r)) => replay(r),
        None => run_cases(args.run),
    }
}

impl AgentArgs {
    fn argv(&self) -> Result<Vec<String>, CliError> {
        if self.driven {
            if !self.command.is_empty() {
                return Err(CliError::bad_input(
                    "--driven runs no command: drop the one after --",
                ));
            }
            return Ok(Vec::new());
        }
        let argv = match (&self.run, self.command.is_empty()) {
            (Some(_), false) => {
                return Err(CliError::bad_input(
                    "give the agent either with --run or after --, not both",
                ))
            }
            (Some(cmd), true) => {
                ctxgate::subject::ProcessSubject::split_command(cmd).map_err(CliError::bad_input)?
            }
            (None, false) => self.command.clone(),
            (None, true) => {
                return Err(CliError::bad_input(
                    "name the agent to run: --run 'CMD' or -- CMD",
                ))
            }
        };
        Ok(argv)
    }

    fn settings(&self) -> Result<Settings, CliError> {
        let Some(path) = &self.config else {
            return Ok(Settings::default());
        };
        let shown = path.display().to_string();
        let bytes =
            ctxgate::input::read_file(path, "the config", super::common::max_input_bytes())?;
        let value = ctxgate::model::parse_json_expecting(&bytes, "a config, a JSON object")
            .map_err(|e| e.in_file(&shown))?;
        let serde_json::Value::Object(obj) = value else {
            return Err(CliError::bad_input(format!(
                "{shown}: a config is a JSON object"
            )));
        };
        Ok(Settings::from_object(obj).map_err(|e| e.in_file(&shown))?)
    }

    fn stage(&self, settings: Settings) -> Result<Stage, CliError> {
        let dialect = self
            .dialect
            .as_deref()
            .map(|d| {
                Dialect::parse(d).ok_or_else(|| {
                    CliError::bad_input(format!(
                        "--dialect {d:?}: one of openai-chat, openai-responses, anthropic"
                    ))
                })
            })
            .transpose()?;
        let gateway = Gateway::parse(&self.gateway).ok_or_else(|| {
            CliError::bad_input(format!(
                "--gateway {:?}: one of express, nginx, openai, anthropic",
                self.gateway
            ))
        })?;
        let tools = self
            .tools
            .iter()
            .map(|t| t.parse::<ToolSpec>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(CliError::bad_input)?;
        let summary =
            SummaryMatcher::new(self.summary_match.as_deref()).map_err(CliError::bad_input)?;
        Ok(Stage {
            settings,
            gateway,
            dialect,
            tools,
            summary,
            model: self.model.clone(),
        })
    }

    fn launch(&self) -> Result<Launch, CliError> {
        let env = self
            .env
            .iter()
            .map(|kv| {
                kv.split_once('=')
                    .filter(|(k, _)| !k.is_empty())
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .ok_or_else(|| CliError::bad_input(format!("--env {kv:?}: give NAME=VALUE")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Absolute: the agent runs in its case's workspace, and the task
        // file's path it is handed must still name the file from there.
        let root = match &self.work_dir {
            Some(d) => std::path::absolute(d)
                .map_err(|e| CliError::bad_input(format!("--work-dir {}: {e}", d.display())))?,
            None => std::env::temp_dir().join(format!("ctxgate-agent-{}", std::process::id())),
        };
        if !ctxgate::agent::case::pads_paths_under(&root) {
            errln!(
                "note: the work folder {} is long: the workspace paths in the tool calls will be longer than the {} bytes every run's are padded to, so request sizes (and a verdict near the ceiling) can differ from a run elsewhere",
                root.display(),
                ctxgate::agent::case::WORKSPACE_PATH_BYTES
            );
        }
        Ok(Launch {
            argv: ctxgate::agent::case::absolute_words(&self.argv()?),
            deadline: super::common::seconds("--timeout", self.timeout)?,
            root,
            keep_folders: self.keep_folders,
            env,
            driver: self
                .driven
                .then(|| std::sync::Arc::new(ctxgate::agent::driver::Driver::stdio())),
        })
    }
}

/// The run's folder of case folders: removed at the end unless kept or
/// given.
struct WorkDir {
    path: PathBuf,
    remove: bool,
}

impl WorkDir {
    /// The run's folder, removed when dropped — or, when ctxgate dies of a
    /// signal first, by the signal handler — unless `remove` is false.
    fn new(path: PathBuf, remove: bool) -> WorkDir {
        if remove {
            ctxgate::subject::reaper::remove_on_signal(&path);
        }
        WorkDir { path, remove }
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
            ctxgate::subject::reaper::forget_on_signal(&self.path);
        }
    }
}

fn run_cases(args: RunArgs) -> Result<(), CliError> {
    if args.list_invariants {
        out!("{}", invariant_list());
        return Ok(());
    }
    super::files::RunFiles::new()
        .input("--config", args.agent.config.as_deref())
        .input("--gen-config", args.gen_config.as_deref())
        .command("--run", &args.agent.argv().unwrap_or_default())
        .reports(args.out.as_deref(), &args.also_report)
        .check()?;
    let settings = args.agent.settings()?;
    let stage = args.agent.stage(settings)?;
    let launch = args.agent.launch()?;
    if args.cases == 0 {
        return Err(CliError::bad_input("--cases must be at least 1"));
    }
    let invariants = match &args.invariants {
        None => AgentInvariant::ALL.to_vec(),
        Some(list) => {
            let names: Vec<&str> = list
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            if names.is_empty() {
                return Err(CliError::bad_input("--invariants names no invariant"));
            }
            names
                .iter()
                .map(|n| n.parse::<AgentInvariant>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(CliError::bad_input)?
        }
    };
    let gen = match &args.gen_config {
        Some(p) => ctxgate::input::config::read_gen_config(p, super::common::max_input_bytes())?,
        None => default_gen(),
    };
    let files =
        ReportFiles::open(args.out.as_deref(), &args.also_report).map_err(CliError::bad_input)?;
    let seed = args.seed.unwrap_or_else(ctxgate::run::random_seed);
    let time = args
        .time
        .map(|t| super::common::seconds("--time", t))
        .transpose()?;
    let _work = WorkDir::new(
        launch.root.clone(),
        args.agent.work_dir.is_none() && !launch.keep_folders,
    );
    let opts = AgentOptions {
        stage,
        launch: launch.clone(),
        cases: args.cases,
        time,
        seed,
        invariants,
        save: Some(args.save.clone()),
        gen,
        shrink_runs: args.shrink_runs,
        confirm_runs: args.confirm_runs,
        ceiling_probes: args.ceiling_probes,
    };
    errln!(
        "ctxgate agent: {} case(s), seed {seed}, agent {}",
        args.cases,
        match &launch.driver {
            Some(_) => "driven over stdin and stdout".into(),
            None => ctxgate::model::one_line(&launch.argv.join(" ")),
        }
    );
    let report = ctxgate::agent::run::run(&opts, |line| {
        errln!("{}", ctxgate::model::one_line(line));
    })
    .map_err(CliError::failed)?;
    let mut report = report;
    report.agent = match &launch.driver {
        Some(_) => ctxgate::agent::run::DRIVEN.into(),
        None => shell_words::join(&launch.argv),
    };
    // Every form's text is guarded as a log's is: a human report in a
    // file is read in a terminal or a CI log too.
    let render =
        |kind: ReportKind| ctxgate::model::text::for_log(&report.render(kind)).into_owned();
    let text = render(args.report);
    let mut failure = None;
    match (files.out, &launch.driver) {
        (Some(file), _) => {
            if let Err(e) = file.write(&text) {
                failure = Some(format!("cannot write the report: {e}"));
            }
        }
        (None, None) => out!("{text}"),
        (None, Some(_)) => {}
    }
    if let Some(driver) = &launch.driver {
        // The driver's channel: the report, as JSON, last.
        let _ = driver.send(&serde_json::json!({"report": report.to_json()}));
    }
    for (kind, file) in files.also {
        let path = file.path().display().to_string();
        if let Err(e) = file.write(&render(kind)) {
            failure.get_or_insert(format!("{path}: cannot write the report: {e}"));
        }
    }
    if let Some(why) = failure {
        return Err(CliError::failed(why));
    }
    match report.exit_code() {
        0 => Ok(()),
        2 => Err(CliError::bad_input(format!(
            "the script cannot be played: {}",
            ctxgate::model::one_line(report.unplayable.as_deref().unwrap_or("?"))
        ))),
        _ => Err(CliError::failed(
            "an agent invariant failed or was never exercised (above)",
        )),
    }
}

fn replay(args: ReplayArgs) -> Result<(), CliError> {
    let walked = ctxgate::fixture::collect(&args.paths)?;
    if walked.files.is_empty() {
        return Err(CliError::bad_input(
            "no fixture files (*.json) under the given paths",
        ));
    }
    let (mut fixtures, mut others) = (Vec::new(), Vec::new());
    for p in &walked.files {
        match AgentFixture::load(p, super::common::max_input_bytes()) {
            Ok(f) => fixtures.push((p.clone(), f)),
            Err(e) if e.kind == ctxgate::error::InputErrorKind::AgentFixture => {
                others.push(ctxgate::input::Note::compactor_fixture(p.clone()))
            }
            Err(e) => return Err(e.into()),
        }
    }
    super::common::show_notes(&others);
    if fixtures.is_empty() {
        return Err(CliError::bad_input(
            "no agent fixture under the given paths (compactor fixtures are for `ctxgate replay`)",
        ));
    }
    let stage = args.agent.stage(Settings::default())?;
    let launch = args.agent.launch()?;
    let _work = WorkDir::new(
        launch.root.clone(),
        args.agent.work_dir.is_none() && !launch.keep_folders,
    );
    let replayed =
        ctxgate::agent::run::replay(fixtures, &stage, &launch).map_err(CliError::failed)?;
    let (text, code) = replay_text(&replayed, args.expect_failures);
    out!("{text}");
    match code {
        0 => Ok(()),
        2 => Err(CliError::bad_input("a fixture was not played (above)")),
        _ => Err(CliError::failed(if args.expect_failures {
            "a fixture was not seen to fail as expected: it held, or nothing of it was judged (above)"
        } else {
            "a fixture failed, or nothing was judged"
        })),
    }
}
