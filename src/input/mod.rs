//! Reading what users hand us — histories, configs, envelopes, fixtures —
//! under one documented cap, applied while reading: an input past the cap
//! (`/dev/zero`, a runaway file) is an error naming the file as soon as the
//! cap is passed, never an out-of-memory abort.
//!
//! The cap is [`DEFAULT_MAX_INPUT_BYTES`] (256 MiB) unless the command line
//! says otherwise (`--max-input-bytes`). A history file is parsed as it is
//! read ([`read_document`]), so that the file's bytes and its parsed form
//! are never in memory at once. Only regular files are read
//! ([`open_regular`]): a FIFO or a device named as an input is an error,
//! never opened for reading. Folders are searched by [`mod@walk`].

pub mod config;
pub mod walk;

pub use walk::{walk, Note, Walked};

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use crate::error::{InputError, InputErrorKind};
use crate::model::{parse_json, Document, WireFormat};

/// The default cap on one input, in bytes: 256 MiB.
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 256 << 20;

/// A reader that counts what it hands over and stops one byte past `cap`,
/// so that a caller can tell "ended" from "too long".
pub struct Capped<R> {
    inner: R,
    cap: u64,
    read: u64,
}

impl<R: Read> Capped<R> {
    pub fn new(inner: R, cap: u64) -> Self {
        Capped {
            inner,
            cap,
            read: 0,
        }
    }

    /// More than `cap` bytes were offered.
    pub fn over(&self) -> bool {
        self.read > self.cap
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // One byte past the cap tells "over" (saturating: a cap of u64::MAX
        // is no cap, not an overflow to 0).
        let room = self.cap.saturating_add(1).saturating_sub(self.read);
        if room == 0 {
            return Ok(0);
        }
        let want = buf.len().min(room.min(usize::MAX as u64) as usize);
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        Ok(n)
    }
}

fn too_big(what: &str, cap: u64) -> InputError {
    InputError::new(
        InputErrorKind::TooLarge,
        format!("{what} is over the {cap}-byte cap on one input (--max-input-bytes)"),
    )
}

/// Read everything from `r`, at most `cap` bytes; `what` names the input
/// in errors ("the history", "the config").
pub fn read_all(r: impl Read, what: &str, cap: u64) -> Result<Vec<u8>, InputError> {
    let mut capped = Capped::new(r, cap);
    let mut bytes = Vec::new();
    capped
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::new(InputErrorKind::Io, format!("cannot read {what}: {e}")))?;
    if capped.over() {
        return Err(too_big(what, cap));
    }
    Ok(bytes)
}

/// Read the next line of `r` (through `\n`, which is dropped) into `line`,
/// at most `cap` bytes of it, the newline not counted: `false` at the end
/// of the input. A longer line is the too-large error, `what` naming it,
/// after no more than `cap + 1` of its bytes were read: a line of gigabytes
/// is never held whole.
pub fn read_line_capped(
    r: &mut impl BufRead,
    line: &mut Vec<u8>,
    what: &str,
    cap: u64,
) -> Result<bool, InputError> {
    line.clear();
    let n = (r.by_ref().take(cap.saturating_add(1)))
        .read_until(b'\n', line)
        .map_err(|e| InputError::new(InputErrorKind::Io, format!("cannot read {what}: {e}")))?;
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() as u64 > cap {
        return Err(too_big(what, cap));
    }
    Ok(n > 0)
}

/// Open a regular file for reading; anything else — a FIFO, a device, a
/// socket, a folder — is an error naming what it is. The file is opened
/// without blocking (a FIFO would otherwise wait for a writer) and then
/// examined, so a file swapped for a FIFO after a check is refused too.
pub fn open_regular(path: &Path, what: &str) -> Result<File, InputError> {
    use std::os::unix::fs::OpenOptionsExt;
    let shown = path.display().to_string();
    let cannot = |e: io::Error| {
        InputError::new(InputErrorKind::Io, format!("cannot read {what}: {e}")).in_file(&shown)
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if meta.is_dir() {
        return Err(InputError::new(
            InputErrorKind::Io,
            format!("cannot read {what}: a folder, not a file"),
        )
        .in_file(&shown));
    }
    if let Some(kind) = walk::irregular_kind(meta.file_type()) {
        return Err(InputError::new(
            InputErrorKind::Io,
            format!("cannot read {what}: {kind}, not a regular file (never read)"),
        )
        .in_file(&shown));
    }
    Ok(file)
}

/// Read a whole regular file, at most `cap` bytes; errors name the file.
pub fn read_file(path: &Path, what: &str, cap: u64) -> Result<Vec<u8>, InputError> {
    let shown = path.display().to_string();
    let file = open_regular(path, what)?;
    read_all(file, what, cap).map_err(|e| e.in_file(&shown))
}

/// Read and parse a history from `path`, or from stdin when it is `-`;
/// errors name it as given (`-` for stdin).
pub fn read_history(
    path: &Path,
    format: Option<WireFormat>,
    cap: u64,
) -> Result<Document, InputError> {
    if path != Path::new("-") {
        return read_document(path, format, cap);
    }
    let bytes =
        read_all(std::io::stdin().lock(), "the history", cap).map_err(|e| e.in_file("-"))?;
    Document::parse(&bytes, format).map_err(|e| e.in_file("-"))
}

/// Read and parse a history file, at most `cap` bytes, parsing as it reads
/// and reading each message as it is parsed (`model::streamed`): neither
/// the file's bytes nor its JSON tree are ever in memory whole. Where that
/// gives up — an error, or a format settled only after the messages — the
/// file is read again, whole, for the precise message (line, column,
/// message index) that [`parse_json`] gives, or in the format settled.
pub fn read_document(
    path: &Path,
    format: Option<WireFormat>,
    cap: u64,
) -> Result<Document, InputError> {
    use crate::model::streamed::{self, Streamed};
    let shown = path.display().to_string();
    let file = open_regular(path, "the history")?;
    let mut capped = Capped::new(BufReader::with_capacity(1 << 16, file), cap);
    let read = streamed::read(
        &mut serde_json::Deserializer::from_reader(&mut capped),
        format,
    );
    if capped.over() {
        return Err(too_big("the history", cap).in_file(&shown));
    }
    match read {
        Streamed::Read(doc) => Ok(doc),
        Streamed::IllFormed(e) => Err(e.in_file(&shown)),
        Streamed::Again => {
            let bytes = read_file(path, "the history", cap)?;
            Document::parse_whole(&bytes, format).map_err(|e| e.in_file(&shown))
        }
    }
}

/// One case of a JSON-Lines stream (what `ctxgate gen` prints): a
/// `{"config", "messages"}` object, its messages in `format`, its config
/// over the defaults (not validated: the caller may still change it).
pub fn read_case(line: &[u8], format: WireFormat) -> Result<(crate::Config, Document), InputError> {
    let mut value = parse_json(line)?;
    let Some(config) = value.as_object_mut().map(|o| o.shift_remove("config")) else {
        return Err(InputError::shape(format!(
            "expected a {{\"config\", \"messages\"}} object, found {}",
            crate::error::json_type(&value)
        )));
    };
    let doc = Document::from_value(value, Some(format))?;
    let config = match config {
        Some(c) => crate::Config::from_value(c)?,
        None => crate::Config::default(),
    };
    Ok((config, doc))
}

/// A `T` read from `v`; an error names the field it is about
/// (`failures[0].invariant: unknown invariant "x"`).
pub(crate) fn from_value<T: serde::de::DeserializeOwned>(
    v: &serde_json::Value,
) -> Result<T, String> {
    from_value_at(v, "")
}

/// [`from_value`] of a value that sits at `prefix` (`script.`) in its
/// document, which the field named in an error starts with. A number the
/// field's type cannot hold (serde_json says only "invalid number") is
/// named with the range the field takes and the number as written:
/// "`cases` must be a whole number from 0 to 18446744073709551615, found -1".
pub(crate) fn from_value_at<T: serde::de::DeserializeOwned>(
    v: &serde_json::Value,
    prefix: &str,
) -> Result<T, String> {
    serde_path_to_error::deserialize(v).map_err(|e| {
        let path = e.path().to_string();
        let shown = match path.as_str() {
            "." if prefix.is_empty() => return e.inner().to_string(),
            "." => prefix.trim_end_matches('.').to_owned(),
            path => format!("{prefix}{path}"),
        };
        let at: Vec<&serde_path_to_error::Segment> = e.path().iter().collect();
        match number_at(v, &at) {
            Some(n) => number_problem::<T>(v, &at, &path, &shown, n),
            None => None,
        }
        .unwrap_or_else(|| format!("`{shown}`: {}", e.inner()))
    })
}

/// The number at `path` in `v`, if a number is there.
fn number_at<'v>(
    v: &'v serde_json::Value,
    path: &[&serde_path_to_error::Segment],
) -> Option<&'v serde_json::Number> {
    use serde_path_to_error::Segment;
    let mut at = v;
    for seg in path {
        at = match seg {
            Segment::Seq { index } => at.get(*index)?,
            Segment::Map { key } => at.get(key.as_str())?,
            _ => return None,
        };
    }
    at.as_number()
}

/// What is wrong with number `n` at `path`, which `T` refused: the range
/// the field takes, found by trying what it accepts there (the largest
/// whole number of 64, 32, 16 or 8 bits; a fraction). `None` where it
/// takes no number (a number where text goes: serde's words say that).
fn number_problem<T: serde::de::DeserializeOwned>(
    v: &serde_json::Value,
    path: &[&serde_path_to_error::Segment],
    raw_path: &str,
    shown: &str,
    n: &serde_json::Number,
) -> Option<String> {
    use serde_path_to_error::Segment;
    let takes = |candidate: serde_json::Value| -> bool {
        let mut probe = v.clone();
        let mut at = &mut probe;
        for seg in path {
            at = match seg {
                Segment::Seq { index } => &mut at[*index],
                Segment::Map { key } => &mut at[key.as_str()],
                _ => return false,
            };
        }
        *at = candidate;
        match serde_path_to_error::deserialize::<_, T>(&probe) {
            Ok(_) => true,
            Err(e) => e.path().to_string() != raw_path,
        }
    };
    let max = [u64::MAX, u32::MAX as u64, u16::MAX as u64, u8::MAX as u64]
        .into_iter()
        .find(|m| takes((*m).into()));
    match max {
        Some(max) => {
            // `32000.0` and `1e5` are whole in value: the spelling is what
            // is refused (as in a config file).
            let spelled = n.to_string().contains(['.', 'e', 'E']);
            let spelling = match n.as_f64() {
                Some(f) if spelled && f.fract() == 0.0 && f >= 0.0 && f < max as f64 + 1.0 => {
                    " written in digits only (no fraction, no exponent)"
                }
                _ => "",
            };
            Some(format!(
                "`{shown}` must be a whole number{spelling} from 0 to {max}, found {n}"
            ))
        }
        None if takes(serde_json::json!(0.5)) => Some(format!(
            "`{shown}` must be a number a 64-bit float holds, found {n}"
        )),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_is_applied_while_reading() {
        let zeros = io::repeat(0).take(10_000);
        let e = read_all(zeros, "the history", 1_000).unwrap_err();
        assert!(e.problem.contains("1000-byte cap"), "{}", e.problem);
        assert_eq!(read_all(&b"[1]"[..], "it", 3).unwrap(), b"[1]");
        assert!(read_all(&b"[1] "[..], "it", 3).is_err());
        assert_eq!(read_all(&b"[1]"[..], "it", u64::MAX).unwrap(), b"[1]");
    }

    #[test]
    fn a_case_line_is_its_config_over_the_defaults_and_its_messages() {
        let line = br#"{"config":{"keepRecent":7},"messages":[{"role":"user","content":"hi"}]}"#;
        let (config, doc) = read_case(line, WireFormat::Engine).unwrap();
        assert_eq!(config.keep_recent, 7);
        assert_eq!(config.threshold, crate::Config::default().threshold);
        assert_eq!(doc.messages.len(), 1);
        let (config, _) = read_case(br#"{"messages":[]}"#, WireFormat::Engine).unwrap();
        assert_eq!(config, crate::Config::default());
        let e = read_case(b"[1]", WireFormat::Engine).unwrap_err();
        assert!(e.problem.contains("found an array"), "{}", e.problem);
        let e = read_case(
            br#"{"config":{"keepRecent":"x"},"messages":[]}"#,
            WireFormat::Engine,
        );
        assert!(e.unwrap_err().problem.contains("keepRecent"));
    }
}
