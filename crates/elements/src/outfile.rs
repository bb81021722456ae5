//! Output files opened only once the router runs.
//!
//! An element that writes a file (IPPrint's OUTFILE, ToDump, ...) must
//! not create or truncate it while its configuration is only checked
//! (`paraclick check`) or built and then rejected (a `hotconfig` with an
//! error in another element): the file an operator keeps would be lost to
//! a configuration that never ran. Such an element checks the path when
//! it is configured ([`check_path`]: no file is touched), schedules a timer
//! at zero in `initialize` (timers run only once the router runs, after a
//! hot swap has committed) and opens the file there, or at its first
//! write if packets come first ([`Deferred::lock_open`]).

use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// Checks an output path without touching the file: `-` (standard output)
/// or a path whose directory exists and which is not itself a directory.
pub fn check_path(path: &str) -> Result<(), String> {
    if path == "-" {
        return Ok(());
    }
    if path.is_empty() {
        return Err("empty file name".into());
    }
    let p = Path::new(path);
    if p.is_dir() {
        return Err(format!("{path}: is a directory"));
    }
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!("{path}: no directory {}", dir.display()));
    }
    Ok(())
}

/// The state of a deferred output.
pub enum Out<W> {
    /// Not opened yet.
    Unopened,
    Open(W),
    /// Failed to open, or closed after a write error: nothing more is
    /// written.
    Closed,
}

impl<W> Out<W> {
    /// The writer, if open.
    pub fn as_mut(&mut self) -> Option<&mut W> {
        match self {
            Out::Open(w) => Some(w),
            _ => None,
        }
    }

    /// Stops writing (after an error).
    pub fn close(&mut self) {
        *self = Out::Closed;
    }
}

/// A writer opened on first use (see the module's documentation).
pub struct Deferred<W> {
    state: Mutex<Out<W>>,
}

impl<W> Default for Deferred<W> {
    fn default() -> Self {
        Deferred {
            state: Mutex::new(Out::Unopened),
        }
    }
}

impl<W> Deferred<W> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The state, locked, without opening.
    pub fn lock(&self) -> MutexGuard<'_, Out<W>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The state, locked, after opening the file with `open` if this is
    /// its first use. If `open` fails its error goes to `failed` (once) and
    /// the output stays closed.
    pub fn lock_open(
        &self,
        open: impl FnOnce() -> Result<W, String>,
        failed: impl FnOnce(&str),
    ) -> MutexGuard<'_, Out<W>> {
        let mut g = self.lock();
        if matches!(*g, Out::Unopened) {
            *g = match open() {
                Ok(w) => Out::Open(w),
                Err(e) => {
                    failed(&e);
                    Out::Closed
                }
            };
        }
        g
    }

    /// Whether the file was opened (and has not failed since).
    pub fn is_open(&self) -> bool {
        matches!(*self.lock(), Out::Open(_))
    }
}

/// Opens `path` for writing: truncated (or appended to, with `append`).
pub fn open_file(path: &str, append: bool) -> Result<std::fs::File, String> {
    std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append)
        .truncate(!append)
        .open(path)
        .map_err(|e| format!("{path}: {e}"))
}

/// A text output file of a printing element (IPPrint's OUTFILE, ...):
/// the path is checked when configured, the file opened when the router
/// starts ([`OutFile::start`], from a timer scheduled at zero) or at the
/// first line. A failure is reported once on standard error; the lines
/// are then dropped.
pub struct OutFile {
    path: String,
    append: bool,
    out: Deferred<std::fs::File>,
}

impl OutFile {
    pub fn new(path: String, append: bool) -> Result<OutFile, String> {
        check_path(&path).map_err(|e| format!("OUTFILE: {e}"))?;
        Ok(OutFile {
            path,
            append,
            out: Deferred::new(),
        })
    }

    fn lock(&self, who: &str) -> MutexGuard<'_, Out<std::fs::File>> {
        self.out.lock_open(
            || open_file(&self.path, self.append),
            |e| eprintln!("{who}: OUTFILE {e}"),
        )
    }

    /// Opens the file (the router has started), if not yet open.
    pub fn start(&self, who: &str) {
        drop(self.lock(who));
    }

    /// Writes `bytes`, opening the file first if needed.
    pub fn write(&self, who: &str, bytes: &[u8]) {
        use std::io::Write;
        let mut g = self.lock(who);
        if let Some(f) = g.as_mut() {
            if let Err(e) = f.write_all(bytes) {
                eprintln!(
                    "{who}: OUTFILE {}: {e}; no more lines are written",
                    self.path
                );
                g.close();
            }
        }
    }

    /// Whether the file is open.
    pub fn is_open(&self) -> bool {
        self.out.is_open()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paraclick_runtime::testing::assert_err;

    #[test]
    fn paths_are_checked_without_touching_files() {
        let dir = std::env::temp_dir().join(format!("paraclick-outfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("keep.txt");
        std::fs::write(&f, "kept").unwrap();
        assert!(check_path(f.to_str().unwrap()).is_ok());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "kept");
        assert!(check_path("-").is_ok());
        assert_err(check_path(""), "empty file name");
        assert_err(check_path(dir.to_str().unwrap()), ": is a directory");
        let missing = dir.join("no/such/file");
        let e = check_path(missing.to_str().unwrap()).unwrap_err();
        assert!(e.contains("no directory"), "{e}");
        assert!(!dir.join("no").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn opens_once_on_first_use() {
        let d: Deferred<u32> = Deferred::new();
        assert!(!d.is_open());
        let mut opened = 0;
        for _ in 0..3 {
            let mut g = d.lock_open(
                || {
                    opened += 1;
                    Ok(7)
                },
                |_| panic!("no error"),
            );
            assert_eq!(g.as_mut(), Some(&mut 7));
        }
        assert_eq!(opened, 1);
        let d: Deferred<u32> = Deferred::new();
        let mut errors = Vec::new();
        for _ in 0..2 {
            let mut g = d.lock_open(|| Err("nope".into()), |e| errors.push(e.to_string()));
            assert!(g.as_mut().is_none());
        }
        assert_eq!(errors, ["nope"]);
    }
}
