//! The real-history corpus, read at run time from a folder of history
//! files (`*.json`, any SPEC §8 history shape and wire format), searched
//! recursively and read in path order. The data is never copied into the
//! repository: by default it is `../shared/data/real-histories`, relative
//! to the current directory or to the crate's manifest directory.

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

/// The folders the default corpus is looked for in, in order.
pub fn default_corpus_candidates() -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(cwd) = std::env::current_dir() {
        out.push(cwd.join(DEFAULT_CORPUS));
    }
    if let Some(dir) = std::env::var_os("CARGO_MANIFEST_DIR") {
        out.push(PathBuf::from(dir).join(DEFAULT_CORPUS));
    }
    out.push(Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_CORPUS));
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

/// The histories of a corpus folder, and what its walk followed or skipped
/// (a symlink loop, a FIFO: [`crate::input::walk`]).
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
