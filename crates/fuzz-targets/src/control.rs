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
pub fn control(data: &[u8]) {
    let src = paraclick_lang::Source {
        name: "control-fuzz".into(),
        text: CONF.into(),
    };
    let router = Router::build(&src, crate::registry(), &BuildOptions::default())
        .expect("the fuzz router builds");
    let cfg = ControlConfig {
        max_line: 4096,
        max_data: 1 << 16,
        ..ControlConfig::default()
    };
    let (out, _why) = session_over_bytes(data, &router.handle(), &cfg);
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
