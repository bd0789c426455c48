//! Real histories as seeds (`check --corpus DIR`): a folder of history
//! files — `*.json` in any SPEC §8 shape and wire format, as `compact`
//! reads them (`input::read_document`), or `*.jsonl` with one such
//! history a line — read recursively, in path order.
//!
//! [`load`] reads them; [`Seeds`] turns them into cases ([`crate::check::
//! CaseSource`]): each history is sent as a ToolLoop session (the harness
//! replays its prefixes at iteration boundaries) under ceilings and
//! triggers placed around its real body sizes, and, after the first round,
//! mutated (`mutate`): tool results grown to the 32 KiB cap and past it,
//! content classes swapped, parallel calls added, call ids reused.
//!
//! What it does not do: judge anything, or copy the histories anywhere —
//! a fixture holds only the shrunk case, and its `see` names the file.

mod mutate;

use std::path::Path;

pub use mutate::Seeds;

use crate::error::{InputError, InputErrorKind};
use crate::input::{read_document, read_file, walk, Note};
use crate::model::{parse_json, Document, Message, WireFormat};

/// One real history and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Seed {
    /// The file, relative to the corpus folder (`/`-separated), and the
    /// line for a JSON Lines file: `swe-agent/001.json`, `logs.jsonl:12`.
    pub name: String,
    pub format: WireFormat,
    pub messages: Vec<Message>,
}

/// A corpus's histories, and what reading its folder followed or skipped
/// ([`mod@crate::input::walk`]: symlinks, loops, FIFOs, devices — by name).
#[derive(Debug, Clone, PartialEq)]
pub struct Corpus {
    pub seeds: Vec<Seed>,
    pub notes: Vec<Note>,
}

/// Read every `*.json` and `*.jsonl` history under `dir`, in path order,
/// at most `cap` bytes a file. A file that does not parse is an error
/// naming it (and the line of a JSON Lines file); so is a folder with no
/// history in it.
pub fn load(dir: &Path, cap: u64) -> Result<Corpus, InputError> {
    let shown = dir.display().to_string();
    if !dir.is_dir() {
        return Err(InputError::new(
            InputErrorKind::Io,
            "the corpus (--corpus) must be a folder of history files (*.json, *.jsonl)",
        )
        .in_file(shown));
    }
    let walked = walk(&[dir.to_owned()], &["json", "jsonl"])?;
    let mut seeds = Vec::new();
    for path in walked.files {
        let name = relative(dir, &path);
        if path.extension().is_some_and(|e| e == "jsonl") {
            seeds.extend(read_lines(&path, &name, cap)?);
        } else {
            let doc = read_document(&path, None, cap)?;
            seeds.push(Seed {
                name,
                format: doc.format,
                messages: doc.messages,
            });
        }
    }
    if seeds.is_empty() {
        return Err(InputError::new(
            InputErrorKind::Empty,
            "the corpus (--corpus) holds no history: no *.json or *.jsonl file under it",
        )
        .in_file(shown));
    }
    Ok(Corpus {
        seeds,
        notes: walked.notes,
    })
}

/// The histories of a JSON Lines file, one a non-blank line.
fn read_lines(path: &Path, name: &str, cap: u64) -> Result<Vec<Seed>, InputError> {
    let shown = path.display().to_string();
    let bytes = read_file(path, "the corpus file", cap)?;
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Where: the file, its line, then the message in that line's
        // history ("line 3: message 0: …", not "message 0: line 3: …").
        let at = |mut e: InputError| {
            let message = e
                .message
                .take()
                .map(|m| format!("message {m}: "))
                .unwrap_or_default();
            e.problem = format!("line {}: {message}{}", i + 1, e.problem);
            e.in_file(shown.as_str())
        };
        let value = parse_json(line).map_err(at)?;
        let doc = Document::from_value(value, None).map_err(at)?;
        out.push(Seed {
            name: format!("{name}:{}", i + 1),
            format: doc.format,
            messages: doc.messages,
        });
    }
    Ok(out)
}

fn relative(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}
