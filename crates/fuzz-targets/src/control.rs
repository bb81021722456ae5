//! The control-socket protocol (Click's ControlSocket 1.3): a client's
//! bytes against a small router's handlers.

use paraclick_runtime::control::{session_over_bytes, ControlConfig};
use paraclick_runtime::{BuildOptions, Router};

/// A router with readable and writable handlers of several kinds (counts,
/// a capacity, a source's switches, the global handlers); nothing runs.
const CONF: &str = "s :: InfiniteSource(LENGTH 60, LIMIT 5, ACTIVE false)
  -> c :: Counter -> q :: Queue(10) -> u :: Unqueue(ACTIVE false)
  -> p :: Paint(3) -> d :: Discard;";

/// The input is what a client sends before closing. Checks that the
/// session never panics or hangs, that the server's bytes are exactly the
/// greeting and a sequence of well-formed replies (`CCC-` continuation
/// lines, a `CCC ` final line, then at most one `DATA n` line and n
/// bytes), and that there is at most one reply per line the client sent.
///
/// The router runs under `Hot` with `hotconfig` writable (`-R`), so an
/// input's `WRITEDATA hotconfig N` builds its configuration as a running
/// router's control socket would (expansion bounded at
/// `MAX_ELEMENTS`); the router is stopped afterwards.
pub fn control(data: &[u8]) {
    let src = paraclick_lang::Source {
        name: "control-fuzz".into(),
        text: CONF.into(),
    };
    let opts = BuildOptions {
        pin: false,
        max_elements: crate::MAX_ELEMENTS,
        ..BuildOptions::default()
    };
    let router = Router::build(&src, crate::registry(), &opts).expect("the fuzz router builds");
    let reg = std::sync::Arc::new(paraclick_io::full_registry());
    let hot = paraclick_runtime::hot::Hot::new(router, reg, opts, true);
    let runner = {
        let hot = hot.clone();
        std::thread::spawn(move || hot.run())
    };
    let cfg = ControlConfig {
        max_line: 4096,
        max_data: 1 << 16,
        ..ControlConfig::default()
    };
    let (out, _why) = session_over_bytes(data, &*hot.backend(), &cfg);
    hot.stop();
    runner.join().expect("the router's thread panicked");
    let replies = check_replies(&out);
    let lines = data.iter().filter(|&&b| b == b'\n' || b == b'\r').count() + 1;
    assert!(
        replies <= lines,
        "{replies} replies to {lines} lines of input"
    );
}

/// Parses the server's bytes; returns the number of replies.
fn check_replies(out: &[u8]) -> usize {
    let rest = out
        .strip_prefix(b"Click::ControlSocket/1.3\r\n".as_slice())
        .expect("the session starts with the greeting");
    let line_end = |i: usize| -> usize {
        rest[i..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| i + p)
            .unwrap_or_else(|| panic!("reply bytes end without CRLF: {:?}", &rest[i..]))
    };
    let mut i = 0;
    let mut replies = 0;
    while i < rest.len() {
        let end = line_end(i);
        let line = &rest[i..end];
        assert!(
            line.len() >= 4 && line[..3].iter().all(u8::is_ascii_digit),
            "not a reply line: {:?}",
            String::from_utf8_lossy(line)
        );
        assert!(
            matches!(line[3], b' ' | b'-'),
            "reply code not followed by ' ' or '-': {:?}",
            String::from_utf8_lossy(line)
        );
        i = end + 2;
        if line[3] == b' ' {
            replies += 1;
            if rest[i..].starts_with(b"DATA ") {
                let end = line_end(i);
                let n: usize = std::str::from_utf8(&rest[i + 5..end])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .expect("DATA length is a number");
                i = end + 2;
                assert!(i + n <= rest.len(), "DATA {n} but fewer bytes follow");
                i += n;
            }
        }
    }
    replies
}

#[cfg(test)]
mod tests {
    /// The target's router takes hotconfigs: a good one swaps in (200),
    /// a configuration past the chain bound is refused (520), and the
    /// session goes on to answer the next command either way.
    #[test]
    fn hotconfigs_reach_a_build() {
        let run = |conf: &str| -> String {
            let input = format!(
                "WRITEDATA hotconfig {}\r\n{conf}\r\nREAD c.count\r\nQUIT\r\n",
                conf.len()
            );
            let (out, _) = {
                let src = paraclick_lang::Source::new("t", super::CONF);
                let opts = paraclick_runtime::BuildOptions {
                    pin: false,
                    ..Default::default()
                };
                let router =
                    paraclick_runtime::Router::build(&src, crate::registry(), &opts).unwrap();
                let reg = std::sync::Arc::new(paraclick_io::full_registry());
                let hot = paraclick_runtime::hot::Hot::new(router, reg, opts, true);
                let runner = {
                    let hot = hot.clone();
                    std::thread::spawn(move || hot.run())
                };
                let r = super::session_over_bytes(
                    input.as_bytes(),
                    &*hot.backend(),
                    &super::ControlConfig::default(),
                );
                hot.stop();
                runner.join().unwrap();
                r
            };
            String::from_utf8_lossy(&out).into_owned()
        };
        let ok = run("s :: InfiniteSource(LIMIT 5) -> c :: Counter -> Discard;");
        assert!(ok.contains("\r\n200 "), "{ok}");
        let long = format!("Idle{} -> Discard;", " -> Null".repeat(2000));
        let refused = run(&long);
        assert!(
            refused.contains("520") && refused.contains("push chain too long"),
            "{refused}"
        );
        assert!(refused.contains("Goodbye"), "{refused}");
    }
}
