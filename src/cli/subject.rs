//! Choosing the subject: the built-in reference by default, or an external
//! program (`--subject 'PROGRAM ARGS…'`, or everything after `--`).

use clap::Args as ClapArgs;

use super::common::CliError;
use ctxgate::subject::start::{self, Choice};
use ctxgate::subject::{ProcessOptions, ProcessSubject, Subject};

#[derive(Debug, Clone, ClapArgs)]
pub struct SubjectArgs {
    /// The compactor under test: one string, a program and its arguments,
    /// split as a POSIX shell splits words and run without a shell
    /// [default: the built-in reference]
    #[arg(long, value_name = "CMD")]
    pub subject: Option<String>,

    /// Seconds a subject may take to answer one request
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub timeout: f64,

    /// Seconds a subject has to exit by itself once its stdin closes at
    /// the end of the run (its exit hooks, a coverage tool around it), before
    /// its process group is sent SIGTERM, and SIGKILL 1 s after that
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub exit_grace: f64,

    /// The longest answer line accepted from a subject, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20)]
    pub max_line_bytes: usize,

    /// Run one of the mutation suite's defective compactors in process
    /// instead (for testing ctxgate itself)
    #[arg(long, value_name = "NAME", hide = true, conflicts_with = "subject")]
    pub defect: Option<String>,

    /// The built-in reference's estimator (adr-0098, content-only,
    /// safe-classwise, tiktoken-cl100k, tiktoken-o200k); built-in subject only
    #[arg(long, value_name = "NAME", conflicts_with_all = ["subject", "defect"])]
    pub estimator: Option<String>,

    /// The subject command, as everything after `--`
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    pub command: Vec<String>,

    /// Print every protocol line sent and received (set by `replay
    /// --trace`; the built-in subject then runs as `ctxgate serve`)
    #[arg(skip)]
    pub trace: bool,
}

impl SubjectArgs {
    /// The subject is an external program (not the reference or a defect).
    pub fn is_external(&self) -> bool {
        self.subject.is_some() || !self.command.is_empty()
    }

    /// The flags that choose this subject again, for replay lines.
    pub fn replay_hint(&self) -> ctxgate::report::ReplayHint {
        let flags = match (self.shown(), &self.defect, &self.estimator) {
            (Some(cmd), _, _) => vec!["--subject".to_owned(), cmd],
            (None, Some(d), _) => vec!["--defect".to_owned(), d.clone()],
            (None, None, Some(e)) => vec!["--estimator".to_owned(), e.clone()],
            (None, None, None) => Vec::new(),
        };
        ctxgate::report::ReplayHint { flags }
    }

    /// Another program under the same limits (the gate's baseline).
    pub fn program(&self, cmd: &str) -> SubjectArgs {
        SubjectArgs {
            subject: Some(cmd.to_owned()),
            defect: None,
            estimator: None,
            command: Vec::new(),
            trace: false,
            ..self.clone()
        }
    }

    /// The command as the user gave it (`None`: the reference).
    pub fn shown(&self) -> Option<String> {
        if !self.command.is_empty() {
            return Some(shell_words::join(&self.command));
        }
        self.subject.clone()
    }

    /// The subject program's words (`--subject`, split, or after `--`),
    /// for the run's own-files check; none for the reference, or a command
    /// that does not split (its own error comes when it is started).
    pub fn words(&self) -> Vec<String> {
        match (&self.subject, self.command.is_empty()) {
            (_, false) => self.command.clone(),
            (Some(cmd), true) => ProcessSubject::split_command(cmd).unwrap_or_default(),
            (None, true) => Vec::new(),
        }
    }

    /// Which subject the flags name.
    fn choice(&self) -> Result<Choice, CliError> {
        Ok(match (&self.subject, self.command.is_empty()) {
            (Some(_), false) => {
                return Err(CliError::bad_input(
                    "give the subject either with --subject or after --, not both",
                ))
            }
            (Some(cmd), true) => {
                Choice::Program(ProcessSubject::split_command(cmd).map_err(CliError::bad_input)?)
            }
            (None, false) => Choice::Program(self.command.clone()),
            (None, true) => match &self.defect {
                Some(d) => Choice::Defect(d.clone()),
                None => Choice::Reference {
                    estimator: self.estimator.clone(),
                },
            },
        })
    }

    fn options(&self) -> Result<ProcessOptions, CliError> {
        Ok(ProcessOptions {
            timeout: super::common::seconds("--timeout", self.timeout)?,
            exit_grace: exit_grace(self.exit_grace)?,
            max_line_bytes: self.max_line_bytes,
            trace: self.trace,
            ..ProcessOptions::default()
        })
    }

    /// Start the subject.
    pub fn open(&self) -> Result<Box<dyn Subject + Send>, CliError> {
        Ok(self.open_jobs(1, 1)?.remove(0))
    }

    /// `jobs` subjects of `lanes` handles each (`subject::start`).
    pub fn open_jobs(
        &self,
        jobs: usize,
        lanes: usize,
    ) -> Result<Vec<Box<dyn Subject + Send>>, CliError> {
        start::open_jobs(&self.choice()?, &self.options()?, serve_argv, jobs, lanes).map_err(|e| {
            match e.usage {
                true => CliError::bad_input(e.message),
                false => CliError::failed(e.message),
            }
        })
    }
}

/// Traced, the built-in speaks the protocol as `ctxgate serve`, so that
/// its lines are there to print.
fn serve_argv() -> Result<Vec<String>, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find ctxgate's own binary to trace the reference: {e}"))?;
    Ok(vec![exe.display().to_string(), "serve".to_owned()])
}

/// `--exit-grace`: 0 (SIGTERM as soon as stdin is closed) up to a minute.
fn exit_grace(secs: f64) -> Result<std::time::Duration, CliError> {
    match (0.0..=60.0).contains(&secs) {
        true => Ok(std::time::Duration::from_secs_f64(secs)),
        false => Err(CliError::bad_input(format!(
            "--exit-grace must be a number of seconds from 0 to 60, found {secs:?}"
        ))),
    }
}
