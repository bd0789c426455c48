//! Starting the subject a run names: the built-in reference (with another
//! estimator, or as one of the mutation defects), or an external program —
//! as one handle, as `lanes` workers' handles on one process
//! ([`Lane`]), or as `jobs` such processes started at once.

use super::defects::Defect;
use super::{FaultKind, InProcess, Lane, ProcessOptions, ProcessSubject, Subject};

/// The smallest answer-line cap that leaves room for a hello.
pub const MIN_LINE_BYTES: usize = 1024;
/// The largest: 4 GiB.
pub const MAX_LINE_BYTES: usize = 4 << 30;

/// Which subject to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// The built-in reference, with the estimator named (`None`: its own).
    Reference { estimator: Option<String> },
    /// One of the mutation suite's defective compactors, by name.
    Defect(String),
    /// A program and its arguments.
    Program(Vec<String>),
}

/// Why a subject did not start: bad usage (an unknown name, an empty
/// command, a program that cannot be spawned) or a subject that failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartError {
    pub usage: bool,
    pub message: String,
}

impl StartError {
    fn usage(message: impl Into<String>) -> Self {
        StartError {
            usage: true,
            message: message.into(),
        }
    }
}

/// Started, once: the built-in in process, else a program. `serve` is the
/// command that speaks the protocol for a built-in when it is traced
/// (`options.trace`: its lines are there to print only over the protocol).
fn start(
    choice: &Choice,
    options: &ProcessOptions,
    serve: impl FnOnce() -> Result<Vec<String>, String>,
) -> Result<Started, StartError> {
    let argv = match choice {
        Choice::Program(argv) => argv.clone(),
        built_in if !options.trace => return Ok(Started::InProcess(built_in_subject(built_in)?)),
        built_in => {
            built_in_subject(built_in)?;
            let mut argv = serve().map_err(|message| StartError {
                usage: false,
                message,
            })?;
            match built_in {
                Choice::Defect(d) => argv.extend(["--defect".to_owned(), d.clone()]),
                Choice::Reference { estimator: Some(e) } => {
                    argv.extend(["--estimator".to_owned(), e.clone()])
                }
                _ => {}
            }
            argv
        }
    };
    if argv.is_empty() {
        return Err(StartError::usage("the subject command is empty"));
    }
    if !(MIN_LINE_BYTES..=MAX_LINE_BYTES).contains(&options.max_line_bytes) {
        return Err(StartError::usage(format!(
            "--max-line-bytes must be from {MIN_LINE_BYTES} (a hello line fits) to {MAX_LINE_BYTES} (4 GiB), found {}",
            options.max_line_bytes
        )));
    }
    let subject = ProcessSubject::start(argv, *options).map_err(|f| StartError {
        usage: f.kind == FaultKind::Spawn,
        message: format!("the subject did not start: {f}"),
    })?;
    Ok(Started::Process(Box::new(subject)))
}

/// The built-in subject chosen: a defect, or the reference with its
/// estimator.
fn built_in_subject(choice: &Choice) -> Result<Box<dyn Subject + Send>, StartError> {
    match choice {
        Choice::Defect(name) => {
            let d = Defect::parse(name).ok_or_else(|| {
                let names: Vec<&str> = Defect::ALL.iter().map(|d| d.name()).collect();
                StartError::usage(format!(
                    "unknown defect {name:?}; the defects are: {}",
                    names.join(", ")
                ))
            })?;
            Ok(Box::new(d.subject()))
        }
        Choice::Reference { estimator: None } => Ok(Box::new(InProcess::reference())),
        Choice::Reference {
            estimator: Some(name),
        } => {
            let e = crate::estimate::by_name(name).ok_or_else(|| {
                StartError::usage(format!(
                    "unknown estimator {name:?}; the estimators are: {}",
                    crate::estimate::NAMES.join(", ")
                ))
            })?;
            Ok(Box::new(InProcess::reference_with(e)))
        }
        Choice::Program(_) => unreachable!("a program is not built in"),
    }
}

/// A subject started: in process, or a program.
enum Started {
    InProcess(Box<dyn Subject + Send>),
    Process(Box<ProcessSubject>),
}

/// Start the subject as `lanes` workers' handles on one process when it is
/// a program, or else as itself (one handle).
pub fn open_lanes(
    choice: &Choice,
    options: &ProcessOptions,
    serve: impl FnOnce() -> Result<Vec<String>, String>,
    lanes: usize,
) -> Result<Vec<Box<dyn Subject + Send>>, StartError> {
    let subject = match start(choice, options, serve)? {
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

/// `jobs` subjects of `lanes` handles each, started at once (a subject that
/// takes a second to say hello costs the run one second, not one a job);
/// the first that fails to start is the error, and the others are stopped.
pub fn open_jobs(
    choice: &Choice,
    options: &ProcessOptions,
    serve: impl Fn() -> Result<Vec<String>, String> + Sync,
    jobs: usize,
    lanes: usize,
) -> Result<Vec<Box<dyn Subject + Send>>, StartError> {
    if jobs <= 1 {
        return open_lanes(choice, options, serve, lanes);
    }
    let started: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..jobs)
            .map(|_| s.spawn(|| open_lanes(choice, options, &serve, lanes)))
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
