//! Choosing the subject: the built-in reference by default, or an external
//! program (`--subject 'PROGRAM ARGS…'`, or everything after `--`).

use clap::Args as ClapArgs;

use super::common::Failure;
use ctxgate::subject::defects::Defect;
use ctxgate::subject::{InProcess, Lane, ProcessOptions, ProcessSubject, Subject};

/// The smallest answer-line cap that leaves room for a hello.
const MIN_LINE_BYTES: usize = 1024;
/// The largest: 4 GiB.
const MAX_LINE_BYTES: usize = 4 << 30;

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

    /// The command as the user gave it (`None`: the reference).
    pub fn shown(&self) -> Option<String> {
        if !self.command.is_empty() {
            return Some(shell_words::join(&self.command));
        }
        self.subject.clone()
    }

    /// Start the subject.
    pub fn open(&self) -> Result<Box<dyn Subject + Send>, Failure> {
        Ok(self.open_lanes(1)?.remove(0))
    }

    /// Start the subject, as `lanes` workers' handles on one process when
    /// it is an external program (`subject::Lane`), or else as itself.
    pub fn open_lanes(&self, lanes: usize) -> Result<Vec<Box<dyn Subject + Send>>, Failure> {
        let subject = match self.start()? {
            Started::InProcess(s) => return Ok(vec![s]),
            Started::Process(p) => p,
        };
        Ok(if lanes <= 1 {
            vec![subject as Box<dyn Subject + Send>]
        } else {
            Lane::split(*subject, lanes)
                .into_iter()
                .map(|l| Box::new(l) as Box<dyn Subject + Send>)
                .collect()
        })
    }

    /// `jobs` subjects of `lanes` handles each, started at once (a
    /// subject that takes a second to say hello costs the run one second,
    /// not one a job); the first that fails to start is the error, and the
    /// others are stopped.
    pub fn open_jobs(
        &self,
        jobs: usize,
        lanes: usize,
    ) -> Result<Vec<Box<dyn Subject + Send>>, Failure> {
        if jobs <= 1 {
            return self.open_lanes(lanes);
        }
        let started: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..jobs)
                .map(|_| s.spawn(|| self.open_lanes(lanes)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("starting a subject does not panic"))
                .collect()
        });
        let mut out = Vec::with_capacity(jobs * lanes);
        for one in started {
            out.extend(one?);
        }
        Ok(out)
    }

    fn start(&self) -> Result<Started, Failure> {
        let argv = match (&self.subject, self.command.is_empty()) {
            (Some(_), false) => {
                return Err(Failure::bad_input(
                    "give the subject either with --subject or after --, not both",
                ))
            }
            (Some(cmd), true) => ProcessSubject::split_command(cmd).map_err(Failure::bad_input)?,
            (None, false) => self.command.clone(),
            (None, true) => {
                let built_in = self.built_in()?;
                if !self.trace {
                    return Ok(Started::InProcess(built_in));
                }
                // Traced, the built-in speaks the protocol as `ctxgate
                // serve`, so that its lines are there to print.
                let exe = std::env::current_exe().map_err(|e| {
                    Failure::failed(format!(
                        "cannot find ctxgate's own binary to trace the reference: {e}"
                    ))
                })?;
                let mut argv = vec![exe.display().to_string(), "serve".to_owned()];
                match (&self.defect, &self.estimator) {
                    (Some(d), _) => argv.extend(["--defect".to_owned(), d.clone()]),
                    (None, Some(e)) => argv.extend(["--estimator".to_owned(), e.clone()]),
                    (None, None) => {}
                }
                argv
            }
        };
        if argv.is_empty() {
            return Err(Failure::bad_input("the subject command is empty"));
        }
        let timeout = super::common::seconds("--timeout", self.timeout)?;
        if !(MIN_LINE_BYTES..=MAX_LINE_BYTES).contains(&self.max_line_bytes) {
            return Err(Failure::bad_input(format!(
                "--max-line-bytes must be from {MIN_LINE_BYTES} (a hello line fits) to {MAX_LINE_BYTES} (4 GiB), found {}",
                self.max_line_bytes
            )));
        }
        let options = ProcessOptions {
            timeout,
            max_line_bytes: self.max_line_bytes,
            trace: self.trace,
            ..ProcessOptions::default()
        };
        let subject = ProcessSubject::start(argv, options).map_err(|f| {
            let code_is_usage = f.kind == ctxgate::subject::FaultKind::Spawn;
            let msg = format!("the subject did not start: {f}");
            if code_is_usage {
                Failure::bad_input(msg)
            } else {
                Failure::failed(msg)
            }
        })?;
        Ok(Started::Process(Box::new(subject)))
    }
}

impl SubjectArgs {
    /// The built-in subject chosen: a defect, or the reference with its
    /// estimator.
    fn built_in(&self) -> Result<Box<dyn Subject + Send>, Failure> {
        if let Some(name) = &self.defect {
            let d = Defect::parse(name).ok_or_else(|| {
                let names: Vec<&str> = Defect::ALL.iter().map(|d| d.name()).collect();
                Failure::bad_input(format!(
                    "unknown defect {name:?}; the defects are: {}",
                    names.join(", ")
                ))
            })?;
            return Ok(Box::new(d.subject()));
        }
        Ok(match &self.estimator {
            None => Box::new(InProcess::reference()),
            Some(name) => {
                let e = ctxgate::estimate::by_name(name).ok_or_else(|| {
                    Failure::bad_input(format!(
                        "unknown estimator {name:?}; the estimators are: {}",
                        ctxgate::estimate::NAMES.join(", ")
                    ))
                })?;
                Box::new(InProcess::reference_with(e))
            }
        })
    }
}

/// A subject started: in process, or a program.
enum Started {
    InProcess(Box<dyn Subject + Send>),
    Process(Box<ProcessSubject>),
}
