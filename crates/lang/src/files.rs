//! Which files a configuration may read: the libraries it requires
//! (`require(library FILE)`) and the traces its elements read (FromDump,
//! FromIPSummaryDump, FromTcpdump).
//!
//! A configuration the operator gives on the command line may read any
//! file the router's user can ([`FilePolicy::Any`]). A configuration that
//! arrives through a control socket (`hotconfig`) comes from whoever can
//! write to that socket, and reads only files under the directories the
//! operator allows ([`FilePolicy::under`]): the CLICKPATH (`-C`) and the
//! running configuration's own directory, unless the operator says
//! otherwise (`--hotconfig-files any`). Paths are canonicalized first, so
//! neither `..` nor a symbolic link leads outside those directories.

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Which files a configuration may read (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FilePolicy {
    /// Any file (a configuration the operator gave).
    #[default]
    Any,
    /// Only files under these directories (canonical paths).
    Under(Arc<Vec<PathBuf>>),
}

impl FilePolicy {
    /// Only files under `dirs`. Directories that do not exist are left
    /// out (nothing is under them).
    pub fn under<I, P>(dirs: I) -> FilePolicy
    where
        I: IntoIterator<Item = P>,
        P: AsRef<Path>,
    {
        let mut v: Vec<PathBuf> = dirs
            .into_iter()
            .filter_map(|d| d.as_ref().canonicalize().ok())
            .filter(|d| d.is_dir())
            .collect();
        v.sort();
        v.dedup();
        FilePolicy::Under(Arc::new(v))
    }

    /// Whether any file may be read.
    pub fn is_any(&self) -> bool {
        matches!(self, FilePolicy::Any)
    }

    /// The path to open for reading `path`, or why it may not be read.
    ///
    /// Under [`FilePolicy::Any`], `path` itself (not canonicalized, so a
    /// FIFO or `/dev/stdin` works as before). Otherwise its canonical
    /// path, if that is under an allowed directory; a file that does not
    /// exist gets the same answer as one outside them, so the answer does
    /// not tell which files exist elsewhere.
    pub fn allowed(&self, path: &Path) -> Result<PathBuf, String> {
        let dirs = match self {
            FilePolicy::Any => return Ok(path.to_path_buf()),
            FilePolicy::Under(d) => d,
        };
        if let Ok(c) = path.canonicalize() {
            if dirs.iter().any(|d| c.starts_with(d)) {
                return Ok(c);
            }
        }
        Err(format!(
            "{}: not a file under the directories a configuration from a control socket may read ({}); the operator allows more with -C DIR, or any file with --hotconfig-files any",
            crate::span::escape(&path.display().to_string()),
            self.describe_dirs()
        ))
    }

    fn describe_dirs(&self) -> String {
        match self {
            FilePolicy::Any => "any".into(),
            FilePolicy::Under(d) if d.is_empty() => "none".into(),
            FilePolicy::Under(d) => d
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A directory under the target directory's `tmp` (beside the test
    /// binary), removed when dropped.
    pub(crate) struct TmpDir(pub PathBuf);

    impl TmpDir {
        pub(crate) fn new(name: &str) -> TmpDir {
            let exe = std::env::current_exe().unwrap();
            let base = exe
                .ancestors()
                .nth(3)
                .map(|t| t.join("tmp"))
                .filter(|t| t.is_dir())
                .unwrap_or_else(std::env::temp_dir);
            let d = base.join(format!("paraclick-lang-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            TmpDir(d)
        }
    }

    impl Drop for TmpDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn only_files_under_the_directories_no_dotdot_or_symlink_escape() {
        let tmp = TmpDir::new("policy");
        let d = &tmp.0;
        let inside = d.join("in");
        std::fs::create_dir(&inside).unwrap();
        std::fs::write(inside.join("ok.click"), "x").unwrap();
        std::fs::write(d.join("secret"), "s").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("secret"), inside.join("link")).unwrap();
        let p = FilePolicy::under([&inside]);
        assert!(p.allowed(&inside.join("ok.click")).is_ok());
        assert_eq!(
            p.allowed(&inside.join("ok.click")).unwrap(),
            inside.join("ok.click").canonicalize().unwrap()
        );
        let e = p.allowed(&inside.join("../secret")).unwrap_err();
        assert!(e.contains("not a file under"), "{e}");
        #[cfg(unix)]
        {
            let e = p.allowed(&inside.join("link")).unwrap_err();
            assert!(e.contains("/in/link: not a file under"), "{e}");
        }
        // missing and forbidden files get the same answer
        let missing = p.allowed(&inside.join("nope")).unwrap_err();
        assert!(missing.contains("not a file under"), "{missing}");
        let e = p.allowed(Path::new("/etc/passwd")).unwrap_err();
        assert!(e.starts_with("/etc/passwd: not a file under"), "{e}");
        assert!(FilePolicy::Any.allowed(Path::new("/etc/passwd")).is_ok());
        let e = FilePolicy::under(Vec::<PathBuf>::new())
            .allowed(&inside.join("ok.click"))
            .unwrap_err();
        assert!(e.contains("ok.click: not a file under the directories a configuration from a control socket may read (none)"), "{e}");
    }
}
