//! What a run reads and what it writes, checked against each other before
//! anything is read or written: no output may be one of the run's own
//! inputs, or another output, or a file an input folder reads. A report
//! written over the config it was made under, a merge over one of its
//! shards, a plot over a history of the corpus is data lost for good, and a
//! run of an hour lost too when it is found only at its end. Every command
//! that writes a file names its paths here: one check for all.
//!
//! Two paths are the same file when they are the same regular file — the
//! same device and inode, so a symlink or a hard link is caught — or the
//! same canonical path; a file not there yet is its folder's canonical path
//! and its name (after following a dangling symlink, which writing it would
//! create). A FIFO or a device (`/dev/stdout`, `/dev/null`) is never one:
//! two reports to stdout are the user's choice, not a file overwritten.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::common::CliError;

/// A path as a flag gave it: `--out x.json`, `--also-report junit=x.xml`,
/// or `the input x.json` for a positional argument.
struct Named {
    /// How the message names it: `--config cfg.json`.
    shown: String,
    path: PathBuf,
}

/// A folder an input reads every file of, by extension, recursively.
struct Folder {
    named: Named,
    extensions: &'static [&'static str],
}

/// The files one run reads and writes.
#[derive(Default)]
pub struct RunFiles {
    inputs: Vec<Named>,
    folders: Vec<Folder>,
    outputs: Vec<Named>,
}

impl RunFiles {
    pub fn new() -> RunFiles {
        RunFiles::default()
    }

    /// A file the run reads, given by `flag` (`--config`, or a phrase for a
    /// positional one: `the input`). `-` (stdin) is no file.
    pub fn input(mut self, flag: &str, path: Option<&Path>) -> RunFiles {
        if let Some(path) = path.filter(|p| *p != Path::new("-")) {
            self.inputs
                .push(named(flag, &path.display().to_string(), path));
        }
        self
    }

    /// `--envelope`: a file unless it is inline JSON.
    pub fn envelope(self, arg: Option<&str>) -> RunFiles {
        let file = arg.filter(|a| !a.trim_start().starts_with(['{', '[']) && !a.trim().is_empty());
        self.input("--envelope", file.map(Path::new))
    }

    /// The files a command names (`--subject 'python3 my_subject.py'`,
    /// `--run …`): each word that is a regular file here is one the run
    /// needs, which no output may overwrite. Words that are not files (a
    /// program found on PATH, a flag) are no input; a command that does
    /// not split is left to the command's own check.
    pub fn command(mut self, flag: &str, words: &[String]) -> RunFiles {
        for word in words {
            let path = Path::new(word);
            if fs::metadata(path).is_ok_and(|m| m.is_file()) {
                self.inputs.push(named(flag, word, path));
            }
        }
        self
    }

    /// A folder the run reads every `*.EXT` file of, recursively (a corpus,
    /// a suite): no output may be one of them, nor a new one it would read.
    pub fn folder(
        mut self,
        flag: &str,
        dir: Option<&Path>,
        extensions: &'static [&'static str],
    ) -> RunFiles {
        if let Some(dir) = dir {
            let named = named(flag, &dir.display().to_string(), dir);
            self.folders.push(Folder { named, extensions });
        }
        self
    }

    /// A file the run writes, given by `flag`.
    pub fn output(mut self, flag: &str, path: Option<&Path>) -> RunFiles {
        if let Some(path) = path {
            self.outputs
                .push(named(flag, &path.display().to_string(), path));
        }
        self
    }

    /// `--out FILE` and each `--also-report FORM=FILE` (one that does not
    /// read is left to the report's own check, which says why).
    pub fn reports(mut self, out: Option<&Path>, also: &[String]) -> RunFiles {
        self = self.output("--out", out);
        for item in also {
            if let Some((_, path)) = item.split_once('=') {
                self.outputs
                    .push(named("--also-report", item, Path::new(path)));
            }
        }
        self
    }

    /// Bad usage (exit 2) when an output is an input, another output, or
    /// a file an input folder reads; nothing is opened.
    pub fn check(&self) -> Result<(), CliError> {
        let outputs: Vec<(&Named, Id)> = self.outputs.iter().map(|o| (o, id(&o.path))).collect();
        for (i, (out, out_id)) in outputs.iter().enumerate() {
            for input in &self.inputs {
                if out_id.same(&id(&input.path)) {
                    return Err(CliError::bad_input(format!(
                        "{} would write over {}, which this run reads: they are the same file",
                        out.shown, input.shown
                    ))
                    .with_hint("write the output to another file"));
                }
            }
            for (other, other_id) in &outputs[..i] {
                if out_id.same(other_id) {
                    return Err(CliError::bad_input(format!(
                        "{} and {} are the same file: one would overwrite the other",
                        other.shown, out.shown
                    ))
                    .with_hint("give each output a file of its own"));
                }
            }
            for folder in &self.folders {
                folder.clash(out, out_id)?;
            }
        }
        Ok(())
    }
}

fn named(flag: &str, value: &str, path: &Path) -> Named {
    Named {
        shown: format!("{flag} {value}"),
        path: path.to_owned(),
    }
}

impl Folder {
    /// `out` is a file this folder's reader takes, or would take once
    /// written.
    fn clash(&self, out: &Named, out_id: &Id) -> Result<(), CliError> {
        let dir = &self.named.path;
        let exts = self.extensions.iter().map(|e| format!("*.{e}"));
        let reads = exts.collect::<Vec<_>>().join(" and ");
        // What the folder's reader takes, symlinks followed (a walk that
        // fails is the reader's to report, later).
        let walked = ctxgate::input::walk(std::slice::from_ref(dir), self.extensions);
        let files = walked.map(|w| w.files).unwrap_or_default();
        if let Some(file) = files.iter().find(|f| out_id.same(&id(f))) {
            return Err(CliError::bad_input(format!(
                "{} would write over {}, one of the files {} reads: they are the same file",
                out.shown,
                file.display(),
                self.named.shown
            ))
            .with_hint("write the output outside the folder"));
        }
        // A new file, or one the walk did not take, that the reader would
        // take: under the folder, with one of its extensions.
        let (Some(at), Ok(root)) = (out_id.canonical(), fs::canonicalize(dir)) else {
            return Ok(());
        };
        let taken = (at.extension())
            .is_some_and(|e| self.extensions.iter().any(|x| e == std::ffi::OsStr::new(x)));
        if taken && at.starts_with(&root) {
            return Err(CliError::bad_input(format!(
                "{} is inside {}, which reads every {reads} file under it: the run would read what it writes, or write over what it reads",
                out.shown, self.named.shown
            ))
            .with_hint("write the output outside the folder"));
        }
        Ok(())
    }
}

/// What a path is, as far as "the same file" goes.
enum Id {
    /// A regular file: its device, inode and canonical path.
    File {
        dev: u64,
        ino: u64,
        canonical: PathBuf,
    },
    /// Not there yet: its folder's canonical path and its name.
    New(PathBuf),
    /// A folder, a FIFO, a device, or a path that cannot be examined:
    /// the same as nothing (opening it says what is wrong, if anything).
    Other,
}

impl Id {
    fn same(&self, other: &Id) -> bool {
        match (self, other) {
            (
                Id::File {
                    dev,
                    ino,
                    canonical,
                },
                Id::File {
                    dev: d,
                    ino: i,
                    canonical: c,
                },
            ) => (dev, ino) == (d, i) || canonical == c,
            (Id::New(a), Id::New(b)) => a == b,
            _ => false,
        }
    }

    fn canonical(&self) -> Option<&Path> {
        match self {
            Id::File { canonical, .. } | Id::New(canonical) => Some(canonical),
            Id::Other => None,
        }
    }
}

fn id(path: &Path) -> Id {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Id::File {
            dev: meta.dev(),
            ino: meta.ino(),
            canonical: fs::canonicalize(path).unwrap_or_else(|_| path.to_owned()),
        },
        Ok(_) => Id::Other,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            new_file(path).map_or(Id::Other, Id::New)
        }
        Err(_) => Id::Other,
    }
}

/// Where writing `path`, which is not there, creates a file: a dangling
/// symlink followed (a few times at most), then the canonical folder and
/// the name. `None` when the folder is not there either: nothing can be
/// written, and opening says so.
fn new_file(path: &Path) -> Option<PathBuf> {
    let mut path = path.to_owned();
    for _ in 0..40 {
        let Ok(target) = fs::read_link(&path) else {
            break;
        };
        path = match path.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
    }
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some(fs::canonicalize(parent).ok()?.join(name))
}

#[cfg(feature = "calibrate")]
impl super::common::CorpusArg {
    /// The corpus folder the run reads (the one given, else the default
    /// if there is one), as a folder of [`RunFiles`].
    pub fn files(&self, files: RunFiles) -> RunFiles {
        match &self.corpus {
            Some(dir) => files.folder("--corpus", Some(dir), &["json"]),
            None => {
                let default = ctxgate::calibrate::corpus::find_default_corpus().ok();
                files.folder("the default corpus", default.as_deref(), &["json"])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ctxgate-files-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn message(files: RunFiles) -> Option<String> {
        files.check().err().map(|e| e.message)
    }

    #[test]
    fn an_output_over_an_input_is_refused_by_name_symlink_and_hard_link() {
        let dir = tmp("links");
        let cfg = dir.join("cfg.json");
        fs::write(&cfg, "{}").unwrap();
        std::os::unix::fs::symlink(&cfg, dir.join("sym.json")).unwrap();
        fs::hard_link(&cfg, dir.join("hard.json")).unwrap();
        for out in ["cfg.json", "sym.json", "hard.json", "./sub/../cfg.json"] {
            fs::create_dir_all(dir.join("sub")).unwrap();
            let files = RunFiles::new()
                .input("--config", Some(&cfg))
                .output("--out", Some(&dir.join(out)));
            let m = message(files).unwrap_or_else(|| panic!("{out} not refused"));
            assert!(m.contains("--out") && m.contains("--config"), "{m}");
            assert!(m.contains(&cfg.display().to_string()), "{m}");
        }
        let other = RunFiles::new()
            .input("--config", Some(&cfg))
            .output("--out", Some(&dir.join("report.json")));
        assert_eq!(message(other), None);
    }

    /// The subject's own program file is an input: `--out s.py` under
    /// `--subject 'python3 s.py'` would write the report over it.
    #[test]
    fn a_file_the_command_names_is_an_input() {
        let dir = tmp("command");
        let script = dir.join("s.py");
        fs::write(&script, "print()").unwrap();
        let words = vec![
            "python3".to_owned(),
            script.display().to_string(),
            "--flag".to_owned(),
        ];
        let m = message(
            RunFiles::new()
                .command("--subject", &words)
                .output("--out", Some(&script)),
        )
        .expect("refused");
        assert!(m.contains("--subject") && m.contains("s.py"), "{m}");
        let fine = RunFiles::new()
            .command("--subject", &words)
            .output("--out", Some(&dir.join("report.json")));
        assert_eq!(message(fine), None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn two_outputs_on_one_new_file_are_refused_and_devices_are_not() {
        let dir = tmp("outs");
        let new = dir.join("new.xml");
        let also = [format!("junit={}", new.display())];
        let m = message(RunFiles::new().reports(Some(&new), &also)).unwrap();
        assert!(
            m.contains("--out") && m.contains("--also-report junit="),
            "{m}"
        );
        // A dangling symlink is the file writing it creates.
        std::os::unix::fs::symlink(&new, dir.join("link.xml")).unwrap();
        let files = RunFiles::new().reports(Some(&dir.join("link.xml")), &also);
        assert!(message(files).is_some());
        // Devices are never compared: /dev/null three times is no clash.
        // (Not /dev/stdout: where the test's output goes to a file, that
        // is the file, and two outputs to it would overwrite each other.)
        let null = Path::new("/dev/null");
        let twice = ["json=/dev/null".to_owned(), "junit=/dev/null".to_owned()];
        let files = RunFiles::new()
            .input("--config", Some(null))
            .reports(Some(null), &twice);
        assert_eq!(message(files), None);
    }

    #[test]
    fn an_output_a_folder_reads_is_refused() {
        let dir = tmp("corpus");
        fs::create_dir_all(dir.join("deep")).unwrap();
        fs::write(dir.join("deep/001.json"), "[]").unwrap();
        let corpus = |out: &str| {
            RunFiles::new()
                .folder("--corpus", Some(&dir), &["json", "jsonl"])
                .output("--plot", Some(&dir.join(out)))
        };
        for out in ["deep/001.json", "new.jsonl", "deep/new.json"] {
            let m = message(corpus(out)).unwrap_or_else(|| panic!("{out} not refused"));
            assert!(m.contains("--plot") && m.contains("--corpus"), "{m}");
        }
        assert_eq!(message(corpus("plot.svg")), None);
    }
}
