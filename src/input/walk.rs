//! The one folder walker: every folder ctxgate reads — fixtures
//! (`replay`), suites (`--with-suite`), corpora (`check --corpus`,
//! `calibrate`, `compare-estimators`) — is searched by [`walk`], and every
//! file in it is opened by [`open_regular`](super::open_regular) and read
//! under the input cap.
//!
//! The contract:
//! - a folder is searched recursively, entries in name order; the files
//!   taken are those with one of the asked-for extensions, sorted;
//! - only regular files are taken. A FIFO, a device or a socket is never
//!   opened (opening a FIFO blocks; `/dev/zero` never ends): it is skipped
//!   and named, with the reason;
//! - a symlink is followed — to a regular file or a folder — and named
//!   ([`Note::Followed`]); one that leads back into a folder being searched
//!   (a loop, `l1 → .`) or to a folder or file already taken is skipped
//!   and named; a dangling one is skipped and named;
//! - a path given by the user (not found in a folder) is taken whatever
//!   its extension, but must exist and be a regular file or a folder: a
//!   FIFO or device given by name is an error, not a skip.
//!
//! Nothing is skipped silently: the caller shows [`Walked::notes`].

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, FileType, Metadata};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::error::{InputError, InputErrorKind};

/// What a walk found: the files to read, and what it followed or skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Walked {
    /// Regular files, sorted, each real file once.
    pub files: Vec<PathBuf>,
    /// Every symlink followed and every entry skipped, in the order met.
    pub notes: Vec<Note>,
}

/// One thing a walk did that the user should know of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// A symlink was followed to a regular file or a folder.
    Followed { link: PathBuf, to: PathBuf },
    /// An entry was not read.
    Skipped { path: PathBuf, why: Skip },
}

/// Why an entry was not read.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skip {
    /// A symlink into a folder that is being searched: following it would
    /// never end.
    Loop { to: PathBuf },
    /// A folder or file already searched or taken under another name.
    AlreadyTaken { as_: PathBuf },
    /// Not a regular file: a FIFO, a device or a socket — never opened.
    NotRegular { kind: &'static str },
    /// A symlink to nothing.
    Dangling,
    /// It could not be examined or listed.
    Unreadable { error: String },
    /// A fixture of the other mode: an agent fixture where compactor
    /// fixtures are played, or the other way round.
    OtherMode { play_with: &'static str },
}

impl Note {
    /// An agent fixture set aside by a command that plays compactor ones.
    pub fn agent_fixture(path: PathBuf) -> Note {
        Note::Skipped {
            path,
            why: Skip::OtherMode {
                play_with: "an agent fixture: play it with `ctxgate agent replay`",
            },
        }
    }

    /// A compactor fixture set aside by `agent replay`.
    pub fn compactor_fixture(path: PathBuf) -> Note {
        Note::Skipped {
            path,
            why: Skip::OtherMode {
                play_with: "a compactor fixture: play it with `ctxgate replay`",
            },
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Followed { link, to } => write!(
                f,
                "followed the symlink {} → {}",
                link.display(),
                to.display()
            ),
            Note::Skipped { path, why } => {
                write!(f, "skipped {}: ", path.display())?;
                match why {
                    Skip::Loop { to } => write!(
                        f,
                        "a symlink loop (it leads back to {}, which is being searched)",
                        to.display()
                    ),
                    Skip::AlreadyTaken { as_ } => {
                        write!(f, "the same file or folder as {}", as_.display())
                    }
                    Skip::NotRegular { kind } => {
                        write!(f, "{kind}, not a regular file (never opened)")
                    }
                    Skip::Dangling => write!(f, "a symlink to nothing"),
                    Skip::Unreadable { error } => write!(f, "cannot be read ({error})"),
                    Skip::OtherMode { play_with } => f.write_str(play_with),
                }
            }
        }
    }
}

/// What a file type is, for messages: `None` for a regular file or folder.
pub(crate) fn irregular_kind(t: FileType) -> Option<&'static str> {
    if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else if t.is_file() || t.is_dir() {
        None
    } else {
        Some("not a file")
    }
}

/// A real file or folder: its device and inode.
type Identity = (u64, u64);

fn identity(m: &Metadata) -> Identity {
    (m.dev(), m.ino())
}

struct Walker<'a> {
    exts: &'a [&'a str],
    out: Walked,
    /// Folders on the current path from the root: a symlink into one is a loop.
    searching: Vec<(Identity, PathBuf)>,
    /// Every folder searched and file taken, by identity.
    taken: HashMap<Identity, PathBuf>,
}

/// Every regular file under `paths` with one of `exts` (without the dot),
/// sorted: folders searched recursively, files given by name taken as
/// they are. Errors name the path: one that does not exist, a folder that
/// cannot be listed, a path given by name that is not a regular file.
pub fn walk(paths: &[PathBuf], exts: &[&str]) -> Result<Walked, InputError> {
    let mut w = Walker {
        exts,
        out: Walked::default(),
        searching: Vec::new(),
        taken: HashMap::new(),
    };
    for p in paths {
        let shown = p.display().to_string();
        let meta = fs::metadata(p).map_err(|e| {
            let problem = if e.kind() == std::io::ErrorKind::NotFound {
                "no such file or folder".to_owned()
            } else {
                format!("cannot read: {e}")
            };
            InputError::new(InputErrorKind::Io, problem).in_file(&shown)
        })?;
        if meta.is_dir() {
            w.folder(p, &meta).map_err(|e| {
                InputError::new(InputErrorKind::Io, format!("cannot list: {e}")).in_file(&shown)
            })?;
        } else if let Some(kind) = irregular_kind(meta.file_type()) {
            return Err(InputError::new(
                InputErrorKind::Io,
                format!("{kind}, not a regular file: ctxgate reads files and folders"),
            )
            .in_file(&shown));
        } else if w.taken.insert(identity(&meta), p.clone()).is_none() {
            w.out.files.push(p.clone());
        }
    }
    w.out.files.sort();
    Ok(w.out)
}

impl Walker<'_> {
    fn folder(&mut self, dir: &Path, meta: &Metadata) -> std::io::Result<()> {
        let id = identity(meta);
        if let Some((_, root)) = self.searching.iter().find(|(s, _)| *s == id) {
            let to = root.clone();
            self.skip(dir, Skip::Loop { to });
            return Ok(());
        }
        if let Some(as_) = self.taken.get(&id) {
            let as_ = as_.clone();
            self.skip(dir, Skip::AlreadyTaken { as_ });
            return Ok(());
        }
        self.taken.insert(id, dir.to_owned());
        self.searching.push((id, dir.to_owned()));
        let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?;
        entries.sort();
        for path in entries {
            self.entry(&path);
        }
        self.searching.pop();
        Ok(())
    }

    fn entry(&mut self, path: &Path) {
        let own = match fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) => {
                let error = e.to_string();
                return self.skip(path, Skip::Unreadable { error });
            }
        };
        let link = own.file_type().is_symlink();
        // What the entry is, a symlink followed: what it names.
        let meta = if link {
            match fs::metadata(path) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    return self.skip(path, Skip::Dangling)
                }
                Err(e) => {
                    let error = e.to_string();
                    return self.skip(path, Skip::Unreadable { error });
                }
            }
        } else {
            own
        };
        if meta.is_dir() {
            if link && !self.leads_into_search(&meta) && !self.taken.contains_key(&identity(&meta))
            {
                self.followed(path);
            }
            if let Err(e) = self.folder(path, &meta) {
                let error = e.to_string();
                self.skip(path, Skip::Unreadable { error });
            }
            return;
        }
        if !self.wanted(path) {
            return;
        }
        if let Some(kind) = irregular_kind(meta.file_type()) {
            return self.skip(path, Skip::NotRegular { kind });
        }
        if let Some(as_) = self.taken.get(&identity(&meta)) {
            let as_ = as_.clone();
            return self.skip(path, Skip::AlreadyTaken { as_ });
        }
        if link {
            self.followed(path);
        }
        self.taken.insert(identity(&meta), path.to_owned());
        self.out.files.push(path.to_owned());
    }

    fn leads_into_search(&self, meta: &Metadata) -> bool {
        self.searching.iter().any(|(s, _)| *s == identity(meta))
    }

    fn wanted(&self, path: &Path) -> bool {
        path.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| self.exts.contains(&e))
    }

    fn followed(&mut self, link: &Path) {
        let to = fs::canonicalize(link).unwrap_or_else(|_| link.to_owned());
        self.out.notes.push(Note::Followed {
            link: link.to_owned(),
            to,
        });
    }

    fn skip(&mut self, path: &Path, why: Skip) {
        self.out.notes.push(Note::Skipped {
            path: path.to_owned(),
            why,
        });
    }
}

/// The identities of `paths`' real files, for tests.
#[cfg(test)]
fn real(paths: &[PathBuf]) -> std::collections::HashSet<PathBuf> {
    paths.iter().map(|p| fs::canonicalize(p).unwrap()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Removes its folder when dropped — when the test fails too — unless
    /// `CTXGATE_KEEP_TEST_DIRS=1` (as the integration tests' folders).
    struct Removed(PathBuf);

    impl Drop for Removed {
        fn drop(&mut self) {
            if std::env::var_os("CTXGATE_KEEP_TEST_DIRS").is_some_and(|v| v == "1") {
                eprintln!("kept {} (CTXGATE_KEEP_TEST_DIRS=1)", self.0.display());
            } else {
                let _ = fs::remove_dir_all(&self.0);
            }
        }
    }

    /// A fresh folder of a few files under the temp dir: its guard (keep
    /// it while the folder is in use) and its path.
    fn tree(name: &str) -> (Removed, PathBuf) {
        let dir = std::env::temp_dir().join(format!("ctxgate-walk-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("a.json"), "[]").unwrap();
        fs::write(dir.join("sub/b.json"), "[]").unwrap();
        fs::write(dir.join("notes.txt"), "").unwrap();
        (Removed(dir.clone()), dir)
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[test]
    fn loops_fifos_devices_and_dangling_links_are_skipped_by_name() {
        let (_removed, dir) = tree("hostile");
        symlink(".", dir.join("l1")).unwrap();
        symlink("..", dir.join("sub/up")).unwrap();
        symlink("/dev/zero", dir.join("zero.json")).unwrap();
        symlink("nowhere.json", dir.join("dangling.json")).unwrap();
        mkfifo(&dir.join("fifo.json"));
        let w = walk(std::slice::from_ref(&dir), &["json"]).unwrap();
        assert_eq!(w.files, vec![dir.join("a.json"), dir.join("sub/b.json")]);
        let shown: Vec<String> = w.notes.iter().map(|n| n.to_string()).collect();
        let has = |what: &str, s: &str| {
            assert!(
                shown.iter().any(|n| n.contains(what) && n.contains(s)),
                "{what} / {s}: {shown:#?}"
            )
        };
        has("l1", "a symlink loop");
        has("up", "a symlink loop");
        has("zero.json", "a character device, not a regular file");
        has("fifo.json", "a FIFO, not a regular file");
        has("dangling.json", "a symlink to nothing");
        assert_eq!(w.notes.len(), 5, "{shown:#?}");
    }

    #[test]
    fn symlinks_to_files_and_folders_are_followed_and_named_and_taken_once() {
        let (_removed, dir) = tree("links");
        let (_removed_other, other) = tree("links-other");
        symlink(other.join("a.json"), dir.join("linked.json")).unwrap();
        symlink(&other, dir.join("elsewhere")).unwrap();
        symlink("a.json", dir.join("again.json")).unwrap();
        let w = walk(std::slice::from_ref(&dir), &["json"]).unwrap();
        // Five names, four real files: again.json is a.json.
        assert_eq!(w.files.len(), 4, "{:#?}", w.files);
        assert_eq!(real(&w.files).len(), 4);
        let shown: Vec<String> = w.notes.iter().map(|n| n.to_string()).collect();
        assert!(
            shown
                .iter()
                .any(|n| n.starts_with("followed the symlink") && n.contains("elsewhere")),
            "{shown:#?}"
        );
        assert!(
            shown
                .iter()
                .any(|n| n.contains("again.json") && n.contains("the same file")),
            "{shown:#?}"
        );
        // linked.json and elsewhere/a.json are one file: one is taken.
        assert!(
            shown.iter().any(|n| n.contains("the same file")),
            "{shown:#?}"
        );
    }

    #[test]
    fn paths_given_by_name_must_exist_and_be_files_or_folders() {
        let (_removed, dir) = tree("named");
        mkfifo(&dir.join("fifo"));
        let w = walk(&[dir.join("notes.txt")], &["json"]).unwrap();
        assert_eq!(w.files, vec![dir.join("notes.txt")]);
        let e = walk(&[dir.join("fifo")], &["json"]).unwrap_err();
        assert!(e.to_string().contains("a FIFO, not a regular file"), "{e}");
        let e = walk(&[PathBuf::from("/dev/zero")], &["json"]).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
        let e = walk(&[dir.join("missing")], &["json"]).unwrap_err();
        assert!(e.to_string().contains("no such file or folder"), "{e}");
    }
}
