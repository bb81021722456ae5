//! A running `paraclick` process, its standard output and error collected
//! by threads, killed when dropped.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary under test: `PARACLICK_BIN` names another build (an older
/// one, to see a test fail on it, or a baseline to measure against).
pub fn bin() -> String {
    std::env::var("PARACLICK_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_paraclick").to_string())
}

/// Text read from a pipe until it closes.
pub fn collect(mut r: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let s = Arc::new(Mutex::new(String::new()));
    let s2 = s.clone();
    std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        while let Ok(n) = r.read(&mut b) {
            if n == 0 {
                break;
            }
            s2.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&b[..n]));
        }
    });
    s
}

pub struct Proc {
    pub child: Child,
    pub err: Arc<Mutex<String>>,
    pub out: Arc<Mutex<String>>,
}

impl Proc {
    /// `paraclick ARGS --no-pin`, stdin closed.
    pub fn start(args: &[&str]) -> Proc {
        let mut cmd = Command::new(bin());
        cmd.args(args).arg("--no-pin");
        Proc::spawn(cmd)
    }

    /// Spawns `cmd` with stdin closed and its output collected.
    pub fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start paraclick");
        let err = collect(child.stderr.take().unwrap());
        let out = collect(child.stdout.take().unwrap());
        Proc { child, err, out }
    }

    /// Standard error so far.
    pub fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    /// The rest of the stderr line after `prefix`, waiting up to 20 s.
    pub fn wait_line(&self, prefix: &str) -> String {
        let t0 = Instant::now();
        loop {
            {
                let e = self.err.lock().unwrap();
                if let Some(i) = e.find(prefix) {
                    if let Some(l) = e[i + prefix.len()..].split_once('\n') {
                        return l.0.trim().to_string();
                    }
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no '{prefix}' on stderr: {}",
                self.err.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// The loopback port printed after `prefix` (`ADDR:PORT`).
    pub fn port(&self, prefix: &str) -> u16 {
        let a = self.wait_line(prefix);
        let (ip, port) = a.rsplit_once(':').unwrap();
        assert_eq!(ip, "127.0.0.1", "listens on loopback only");
        port.parse().unwrap()
    }

    /// The port of the control socket `-p 0` opened.
    pub fn control_port(&self) -> u16 {
        self.port("control socket listening on ")
    }

    /// Waits up to `secs` for the process to exit; its status code.
    pub fn wait_exit(&mut self, secs: u64) -> i32 {
        let t0 = Instant::now();
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                // Let the collector threads take the last output.
                std::thread::sleep(Duration::from_millis(100));
                return s.code().unwrap_or(-1);
            }
            assert!(
                t0.elapsed() < Duration::from_secs(secs),
                "router did not exit"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the process still runs.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// The value printed for `-h NAME` after the run.
    pub fn printed(&self, name: &str) -> u64 {
        let out = self.out.lock().unwrap();
        let key = format!("{name}:\n");
        let i = out
            .find(&key)
            .unwrap_or_else(|| panic!("no {name} in output: {out}"));
        out[i + key.len()..]
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
