//! # KernelFilter
//!
//! KernelFilter(FILTERSPEC, ... \[, keyword IPTABLES_COMMAND])
//!
//! Blocks the kernel from handling packets.
//!
//! Ports: none.
//!
//! Installs filter rules in the Linux kernel that stop it from handling
//! certain packets, for use with FromDevice: the packets still reach
//! FromDevice (and tcpdump), but the kernel's own stack does not answer
//! them as well. KernelFilter runs iptables(8) to install the rules when
//! the router initializes, and removes them when the router is dropped
//! (at exit, or when a hot reconfiguration replaces it). If paraclick
//! ends uncleanly (`kill -9`), the rules stay and must be removed by
//! hand (`iptables -D INPUT -i DEVNAME -j DROP`).
//!
//! Only one form of FILTERSPEC is understood:
//! - `drop dev DEVNAME`: the kernel drops every packet arriving on
//!   DEVNAME (`iptables -A INPUT -i DEVNAME -j DROP`).
//!
//! iptables is `/sbin/iptables` or `/usr/sbin/iptables` unless
//! IPTABLES_COMMAND names another program. Without one, or if a rule
//! cannot be installed (iptables' message is quoted), the router does not
//! start; rules already installed are removed. `paraclick check` only
//! checks the arguments and that iptables is found (a program
//! IPTABLES_COMMAND names is not looked for until it runs).
//!
//! Keyword arguments:
//! - `IPTABLES_COMMAND` (string): the iptables program.
//!
//! Example:
//!
//!     FromDevice(eth0) -> ...;
//!     KernelFilter(drop dev eth0);

use paraclick_runtime::{ClassSpec, ConfigCx, Element, InitCx, Kind};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

pub struct KernelFilter {
    devices: Vec<String>,
    command: Option<String>,
    /// (program, device) of each rule installed, to remove at the end.
    installed: Mutex<Vec<(PathBuf, String)>>,
}

pub fn spec() -> ClassSpec {
    ClassSpec::element("KernelFilter", "0/0", "a", make)
        .stateless()
        .kind(Kind::Device)
}

fn make(cx: &mut ConfigCx<'_>) -> Result<KernelFilter, String> {
    let mut a = cx.args();
    let command = a.read::<String>("IPTABLES_COMMAND");
    let specs = a.rest();
    a.complete()?;
    if specs.is_empty() {
        return Err("expected at least one 'drop dev DEVNAME'".into());
    }
    let mut devices = Vec::new();
    for s in &specs {
        match s.split_whitespace().collect::<Vec<_>>()[..] {
            ["drop", "dev", name] => devices.push(name.to_string()),
            _ => {
                return Err(format!(
                    "arguments must follow 'drop dev DEVNAME', not '{}'",
                    s.trim()
                ))
            }
        }
    }
    Ok(KernelFilter {
        devices,
        command,
        installed: Mutex::new(Vec::new()),
    })
}

impl KernelFilter {
    fn program(&self) -> Result<PathBuf, String> {
        if let Some(c) = &self.command {
            return Ok(PathBuf::from(c));
        }
        ["/sbin/iptables", "/usr/sbin/iptables"]
            .iter()
            .map(Path::new)
            .find(|p| p.is_file())
            .map(Path::to_path_buf)
            .ok_or_else(|| "no iptables executable found (/sbin/iptables, /usr/sbin/iptables; or give IPTABLES_COMMAND)".into())
    }

    fn remove_all(&self) {
        let mut installed = self.installed.lock().unwrap_or_else(|e| e.into_inner());
        while let Some((prog, dev)) = installed.pop() {
            if let Err(e) = rule(&prog, "-D", &dev) {
                eprintln!("KernelFilter: {e}");
            }
        }
    }
}

/// Runs `PROG OP INPUT -i DEV -j DROP`; Err with its message if it fails.
fn rule(prog: &Path, op: &str, dev: &str) -> Result<(), String> {
    let args = [op, "INPUT", "-i", dev, "-j", "DROP"];
    let shown = format!("{} {}", prog.display(), args.join(" "));
    let out = Command::new(prog)
        .args(args)
        .output()
        .map_err(|e| format!("{shown}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let msg = String::from_utf8_lossy(&out.stderr);
    let msg = msg.trim();
    Err(if msg.is_empty() {
        format!("{shown}: {}", out.status)
    } else {
        format!("{shown}: {msg}")
    })
}

impl Element for KernelFilter {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        let prog = self.program()?;
        if ix.checking() {
            return Ok(());
        }
        for dev in &self.devices {
            if let Err(e) = rule(&prog, "-A", dev) {
                self.remove_all();
                return Err(e);
            }
            self.installed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((prog.clone(), dev.clone()));
        }
        Ok(())
    }
}

impl Drop for KernelFilter {
    fn drop(&mut self) {
        self.remove_all();
    }
}

#[cfg(test)]
mod tests {
    use paraclick_runtime::testing::{build_err, try_build};
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    fn reg() -> paraclick_runtime::Registry {
        crate::full_registry()
    }

    /// A fake iptables that logs its arguments to LOG and fails for the
    /// device "bad".
    fn fake(dir: &std::path::Path) -> (PathBuf, PathBuf) {
        let log = dir.join("log");
        let prog = dir.join("iptables");
        std::fs::write(
            &prog,
            format!(
                "#!/bin/sh\necho \"$@\" >> {}\ncase \"$*\" in *' bad '*) echo 'no such device' >&2; exit 1;; esac\n",
                log.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&prog, std::fs::Permissions::from_mode(0o755)).unwrap();
        (prog, log)
    }

    #[test]
    fn installs_rules_and_removes_them_when_dropped() {
        let d = tempfile::tempdir().unwrap();
        let (prog, log) = fake(d.path());
        let conf = format!(
            "KernelFilter(drop dev eth7, drop dev veth1, IPTABLES_COMMAND {})",
            prog.display()
        );
        let r = try_build(&reg(), &conf).unwrap();
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "-A INPUT -i eth7 -j DROP\n-A INPUT -i veth1 -j DROP\n"
        );
        drop(r);
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "-A INPUT -i eth7 -j DROP\n-A INPUT -i veth1 -j DROP\n\
             -D INPUT -i veth1 -j DROP\n-D INPUT -i eth7 -j DROP\n"
        );
    }

    #[test]
    fn a_failed_rule_is_an_error_and_undoes_the_others() {
        let d = tempfile::tempdir().unwrap();
        let (prog, log) = fake(d.path());
        let conf = format!(
            "KernelFilter(drop dev eth7, drop dev bad, IPTABLES_COMMAND {})",
            prog.display()
        );
        let e = build_err(&reg(), &conf);
        assert!(e.contains("-A INPUT -i bad -j DROP: no such device"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&log).unwrap(),
            "-A INPUT -i eth7 -j DROP\n-A INPUT -i bad -j DROP\n-D INPUT -i eth7 -j DROP\n"
        );
    }

    #[test]
    fn a_missing_program_and_bad_specs_are_clear_errors() {
        let e = build_err(
            &reg(),
            "KernelFilter(drop dev eth0, IPTABLES_COMMAND /nonexistent/iptables)",
        );
        assert!(
            e.contains("/nonexistent/iptables -A INPUT -i eth0 -j DROP: No such file"),
            "{e}"
        );
        let e = build_err(&reg(), "KernelFilter(accept dev eth0)");
        assert!(
            e.contains("arguments must follow 'drop dev DEVNAME', not 'accept dev eth0'"),
            "{e}"
        );
        let e = build_err(&reg(), "KernelFilter");
        assert!(
            e.contains("expected at least one 'drop dev DEVNAME'"),
            "{e}"
        );
    }
}
