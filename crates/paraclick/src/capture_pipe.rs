//! `paraclick ctl capture E[PORT] - ...`: a live capture streamed to
//! standard output, so that `| tcpdump -r -` (or Wireshark) reads it as it
//! comes. The router keeps the capture's pcap bytes in a bounded buffer
//! (`capture_data`, in hexadecimal); this client reads it over the same
//! control connection until the capture is done and its buffer empty. If
//! standard output closes (the reader quit), the capture is stopped.

use crate::ctl::{read_reply, Conn};
use std::io::{BufReader, Write};
use std::time::Duration;

fn call(r: &mut BufReader<Box<dyn Conn>>, cmd: &str) -> Result<String, String> {
    r.get_mut()
        .write_all(cmd.as_bytes())
        .map_err(|e| e.to_string())?;
    let reply = read_reply(r, cmd.starts_with("READ"))?;
    if !(200..300).contains(&reply.code) {
        return Err(format!("{} {}", reply.code, reply.text.join(" ")));
    }
    Ok(String::from_utf8_lossy(&reply.data.unwrap_or_default()).into_owned())
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Streams the running capture to standard output; the exit status.
pub fn stream(r: &mut BufReader<Box<dyn Conn>>) -> u8 {
    let mut out = std::io::stdout().lock();
    loop {
        let chunk = match call(r, "READ capture_data\r\n") {
            Ok(d) => d,
            Err(e) => {
                eprintln!("paraclick ctl: capture_data: {e}");
                return 1;
            }
        };
        let Some(bytes) = unhex(&chunk) else {
            eprintln!("paraclick ctl: capture_data: not hexadecimal");
            return 1;
        };
        if !bytes.is_empty() {
            if out.write_all(&bytes).and_then(|_| out.flush()).is_err() {
                // The reader is gone: the capture has no one to go to.
                let _ = call(r, "WRITEDATA capture 4\r\nstop");
                return 0;
            }
            continue;
        }
        // Nothing buffered: done once the writer has finished and what it
        // wrote last was read.
        let state = call(r, "READ capture\r\n").unwrap_or_default();
        if !state
            .lines()
            .any(|l| l == "state running" || l == "state starting")
        {
            let last = call(r, "READ capture_data\r\n").unwrap_or_default();
            match unhex(&last) {
                Some(b) if !b.is_empty() => {
                    if out.write_all(&b).and_then(|_| out.flush()).is_err() {
                        return 0;
                    }
                    continue;
                }
                _ => {}
            }
            for l in state.lines().filter(|l| {
                l.starts_with("dropped") || l.starts_with("written") || l.starts_with("error")
            }) {
                eprintln!("paraclick ctl: capture {l}");
            }
            let _ = r.get_mut().write_all(b"QUIT\r\n");
            return 0;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
