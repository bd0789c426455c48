//! The real-history corpus, read at run time from a folder of history
//! files (`*.json`, any SPEC §8 history shape and wire format), searched
//! recursively and read in path order. The data is never copied into the
//! repository: by default it is `../shared/data/real-histories`, relative
//! to the current directory or to the crate's manifest directory.

use std::fs;
use std::path::{Path, PathBuf};

use super::CalibrateError;
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

/// Read every `*.json` history under `dir`, in path order.
pub fn load_corpus(dir: &Path) -> Result<Vec<History>, CalibrateError> {
    let mut files = Vec::new();
    collect_json(dir, &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err(CalibrateError::EmptyCorpus(dir.to_owned()));
    }
    files
        .into_iter()
        .map(|path| {
            let bytes = fs::read(&path).map_err(|source| CalibrateError::Io {
                path: path.clone(),
                source,
            })?;
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
        .collect()
}

fn collect_json(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), CalibrateError> {
    let io = |source| CalibrateError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            collect_json(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
    Ok(())
}
