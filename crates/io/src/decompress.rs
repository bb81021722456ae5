//! Compressed trace input, as Click's FromFile: a file beginning with the
//! gzip or bzip2 magic is read through `zcat` or `bzcat`. Not an element.

use std::io::Read;
use std::process::{Child, Command, Stdio};

/// A decompressor's output; the child is reaped when this is dropped.
pub(crate) struct Piped {
    child: Child,
}

impl Read for Piped {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.child.stdout.as_mut() {
            Some(o) => o.read(buf),
            None => Ok(0),
        }
    }
}

impl Drop for Piped {
    fn drop(&mut self) {
        // Closing the pipe ends a decompressor still writing; then reap it.
        drop(self.child.stdout.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The program that uncompresses a file starting with `head`, if any.
pub(crate) fn decompressor(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(&[0x1f, 0x8b]) {
        Some("zcat")
    } else if head.starts_with(b"BZh") {
        Some("bzcat")
    } else {
        None
    }
}

/// Opens FILENAME for reading, uncompressing it when it is gzip or bzip2
/// data; `-` is the standard input (never uncompressed). Returns the
/// reader and the file's size on disk.
pub(crate) fn open_maybe_compressed(
    name: &str,
) -> Result<(Box<dyn Read + Send>, Option<u64>), String> {
    let (mut r, size) = crate::common::open_input(name)?;
    if name == "-" {
        return Ok((r, size));
    }
    let mut head = [0u8; 3];
    let mut n = 0;
    while n < head.len() {
        match r.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(format!("{name}: {e}")),
        }
    }
    match decompressor(&head[..n]) {
        Some(prog) => {
            let child = Command::new(prog)
                .arg(name)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("{name}: cannot run {prog}: {e}"))?;
            Ok((Box::new(Piped { child }), size))
        }
        None => {
            let head = head[..n].to_vec();
            Ok((Box::new(std::io::Cursor::new(head).chain(r)), size))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_numbers() {
        assert_eq!(decompressor(&[0x1f, 0x8b, 8]), Some("zcat"));
        assert_eq!(decompressor(b"BZh9"), Some("bzcat"));
        assert_eq!(decompressor(b"12:"), None);
        assert_eq!(decompressor(b""), None);
    }

    #[test]
    fn plain_files_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        for text in ["", "a", "ab", "abc", "abcdef\n"] {
            let p = dir.path().join("x");
            std::fs::write(&p, text).unwrap();
            let (mut r, size) = open_maybe_compressed(p.to_str().unwrap()).unwrap();
            let mut s = String::new();
            r.read_to_string(&mut s).unwrap();
            assert_eq!((s.as_str(), size), (text, Some(text.len() as u64)));
        }
    }
}
