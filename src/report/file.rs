//! A file a report goes to (`check --out`, `--also-report`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A file a report goes to (`--out`, `--also-report`): opened before any
/// work, so that a path that cannot be written is bad usage then, not a
/// lost run — but not emptied until the report is written. A run that ends
/// before its report (a subject that does not start, bad input found late)
/// leaves what was there, and when there was nothing, nothing: not an
/// empty file a CI step would read as a report.
pub struct ReportFile {
    path: PathBuf,
    /// Until the report is written.
    file: Option<std::fs::File>,
    /// The file did not exist before: removed if no report comes.
    created: bool,
}

impl ReportFile {
    pub fn open(path: &Path) -> io::Result<ReportFile> {
        let created = !path.exists();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(ReportFile {
            path: path.to_path_buf(),
            file: Some(file),
            created,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replace the file's contents with `text`.
    pub fn write(mut self, text: &str) -> io::Result<()> {
        let mut file = self.file.take().expect("written once");
        file.set_len(0)?;
        file.write_all(text.as_bytes())?;
        file.flush()
    }
}

impl Drop for ReportFile {
    fn drop(&mut self) {
        if self.file.take().is_some() && self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
