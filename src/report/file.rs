//! The files a report goes to (`check --out`, `--also-report`).

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;

use super::render::{Outcome, ReportKind};

/// Every file a run's report goes to: `--out` in the run's form, and each
/// `--also-report FORM=FILE` in its own. All are opened before any work is
/// done, so that one that cannot be written is bad usage at once.
pub struct ReportFiles {
    /// `--out`, written in the form the run names when it is written.
    pub out: Option<ReportFile>,
    pub also: Vec<(ReportKind, ReportFile)>,
}

impl ReportFiles {
    /// Open `out` and each `FORM=FILE` of `also`; an error names the flag's
    /// value and the problem.
    pub fn open(out: Option<&Path>, also: &[String]) -> Result<ReportFiles, String> {
        let cannot = |path: &Path, e: io::Error| {
            format!("{}: cannot write the report there: {e}", path.display())
        };
        let out = out.map(|p| ReportFile::open(p).map_err(|e| cannot(p, e)));
        let also = also.iter().map(|item| {
            let bad = |why: String| format!("--also-report {item:?}: {why}");
            let (form, path) = item
                .split_once('=')
                .ok_or_else(|| bad("give FORM=FILE, e.g. junit=ctxgate-junit.xml".into()))?;
            let kind = ReportKind::from_str(form, true).map_err(|_| {
                bad(format!(
                    "unknown form {form:?}; the forms are human, json, junit, markdown"
                ))
            })?;
            let file = ReportFile::open(Path::new(path))
                .map_err(|e| bad(format!("cannot write the report there: {e}")))?;
            Ok((kind, file))
        });
        Ok(ReportFiles {
            out: out.transpose()?,
            also: also.collect::<Result<_, String>>()?,
        })
    }

    /// Write `outcome` to `--out` in `kind`'s form and to each
    /// `--also-report` file in its own; the first write error, if any.
    pub fn write(self, kind: ReportKind, outcome: &Outcome) -> Option<String> {
        crate::subject::reaper::wait_if_interrupted();
        let mut error = None;
        for (kind, file) in self
            .out
            .map(|file| (kind, file))
            .into_iter()
            .chain(self.also)
        {
            let path = file.path().display().to_string();
            if let Err(e) = file.write(&outcome.render(kind)) {
                error.get_or_insert(format!("{path}: cannot write the report: {e}"));
            }
        }
        error
    }
}

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

    /// Replace the file's contents with `text`, whole or not at all: a
    /// regular file is written beside itself and renamed over (through a
    /// symlink, its target), so that a full disk leaves the report that was
    /// there — or, when there was none, none — rather than half of one. A
    /// pipe or a terminal (`--out /dev/stdout`) is written as it is.
    pub fn write(mut self, text: &str) -> io::Result<()> {
        let mut file = self.file.take().expect("written once");
        if !file.metadata()?.is_file() {
            file.write_all(text.as_bytes())?;
            return file.flush();
        }
        drop(file);
        let target = std::fs::canonicalize(&self.path)?;
        let name = target.file_name().map(|n| n.to_string_lossy().into_owned());
        let temp = target.with_file_name(format!(
            ".{}.ctxgate-{}.tmp",
            name.unwrap_or_default(),
            std::process::id()
        ));
        let written = std::fs::File::create(&temp).and_then(|mut t| {
            t.write_all(text.as_bytes())?;
            t.sync_all()
        });
        let renamed = written.and_then(|()| std::fs::rename(&temp, &target));
        if renamed.is_err() {
            let _ = std::fs::remove_file(&temp);
            if self.created {
                let _ = std::fs::remove_file(&self.path);
            }
        }
        renamed
    }
}

impl Drop for ReportFile {
    fn drop(&mut self) {
        if self.file.take().is_some() && self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A report replaces the one there whole, through a symlink into its
    /// target (the link stays a link), and leaves no temporary file.
    #[test]
    fn a_report_replaces_the_file_whole_and_writes_through_a_link() {
        let dir = std::env::temp_dir().join(format!("ctxgate-report-file-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("r.json");
        std::fs::write(&path, "an old report, longer than the new one").unwrap();
        ReportFile::open(&path).unwrap().write("new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let link = dir.join("link.json");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        ReportFile::open(&link).unwrap().write("through").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "through");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // Opened and never written: a file it created is removed.
        drop(ReportFile::open(&dir.join("none.json")).unwrap());
        assert!(!dir.join("none.json").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
