//! The real-history corpus, read at run time from a folder of history
//! files (`*.json`, any SPEC §8 history shape and wire format), searched
//! recursively and read in path order. The data is never copied into the
//! repository: by default it is `../shared/data/real-histories`, relative
//! to the current directory or to `$CARGO_MANIFEST_DIR` (set by `cargo
//! run`). Outside a workspace that has it, a run without `--corpus` goes on
//! without real histories and says so ([`resolve_corpus`]).

use std::path::{Path, PathBuf};

use super::CalibrateError;
use crate::input::{read_file, walk, Note};
use crate::model::{Document, Message};

/// Where the corpus is looked for when no folder is given, relative to the
/// current directory and to the crate's manifest directory.
pub const DEFAULT_CORPUS: &str = "../shared/data/real-histories";

/// One real history and the file it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    /// The file's path relative to the corpus folder, `/`-separated.
    pub name: String,
    pub messages: Vec<Message>,
}

/// The folders the default corpus is looked for in, in order. Only run-time
/// places: where the binary was built says nothing about where it runs.
pub fn default_corpus_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        out.push(cwd.join(DEFAULT_CORPUS));
    }
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        out.push(PathBuf::from(dir).join(DEFAULT_CORPUS));
    }
    out.dedup();
    out
}

/// The first default candidate that is a folder.
pub fn find_default_corpus() -> Result<PathBuf, CalibrateError> {
    let tried = default_corpus_candidates();
    tried
        .iter()
        .find(|p| p.is_dir())
        .cloned()
        .ok_or(CalibrateError::CorpusNotFound { tried })
}

/// The real histories a run uses: those of the folder given; else those of
/// the first default folder that exists; else none, with the line that
/// says why (`skipped`), so that `calibrate` and `compare-estimators` run
/// anywhere. A folder that was given must exist and hold histories.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub histories: Vec<History>,
    pub read: CorpusRead,
}

/// Which corpus a run read, as its report says: the folder, why there
/// was none, and what reading it followed or skipped.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CorpusRead {
    /// The folder read, as given or found; `None` when skipped.
    pub dir: Option<String>,
    /// Why there are no real histories, when no corpus was given or found.
    pub skipped: Option<String>,
    /// What reading it followed or skipped (symlinks, loops, FIFOs).
    pub notes: Vec<Note>,
}

/// Read the corpus `given`, or the default one when there is one (see [`Resolved`]).
pub fn resolve_corpus(given: Option<&Path>, cap: u64) -> Result<Resolved, CalibrateError> {
    let dir = match given {
        Some(dir) => dir.to_owned(),
        None => match find_default_corpus() {
            Ok(dir) => dir,
            Err(CalibrateError::CorpusNotFound { tried }) => {
                let tried: Vec<String> = tried.iter().map(|p| p.display().to_string()).collect();
                let skipped = format!(
                    "the real-histories set is skipped: no corpus found (looked in {}); pass --corpus DIR to include one",
                    tried.join(", ")
                );
                return Ok(Resolved {
                    histories: Vec::new(),
                    read: CorpusRead {
                        skipped: Some(skipped),
                        ..CorpusRead::default()
                    },
                });
            }
            Err(e) => return Err(e),
        },
    };
    let corpus = load_corpus(&dir, cap)?;
    let dir = dir.canonicalize().unwrap_or(dir);
    Ok(Resolved {
        histories: corpus.histories,
        read: CorpusRead {
            dir: Some(dir.display().to_string()),
            skipped: None,
            notes: corpus.notes,
        },
    })
}

/// The histories of a corpus folder, and what its walk followed or skipped
/// (a symlink loop, a FIFO: [`mod@crate::input::walk`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    pub histories: Vec<History>,
    pub notes: Vec<Note>,
}

/// Read every `*.json` history under `dir`, in path order, each at most
/// `cap` bytes (`--max-input-bytes`).
pub fn load_corpus(dir: &Path, cap: u64) -> Result<Corpus, CalibrateError> {
    let walked = walk(&[dir.to_owned()], &["json"]).map_err(CalibrateError::BadHistory)?;
    if walked.files.is_empty() {
        return Err(CalibrateError::EmptyCorpus(dir.to_owned()));
    }
    let histories = walked
        .files
        .into_iter()
        .map(|path| {
            let bytes = read_file(&path, "the history", cap).map_err(CalibrateError::BadHistory)?;
            let doc = Document::parse(&bytes, None)
                .map_err(|e| CalibrateError::BadHistory(e.in_file(path.display().to_string())))?;
            let name = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Ok(History {
                name,
                messages: doc.messages,
            })
        })
        .collect::<Result<_, CalibrateError>>()?;
    Ok(Corpus {
        histories,
        notes: walked.notes,
    })
}
