//! Click command-line helpers: the exit status from a handler (`-x`) and
//! the time report (`-t`). The flattened configuration (`-o`) is
//! `paraclick_lang::print_flat`.

use std::time::Duration;

/// Click's `-x` rule: an integer handler value is the exit status (0 to
/// 255); a boolean gives 0 for true and 1 for false.
pub fn exit_status(v: &str) -> Option<u8> {
    let v = v.trim();
    if let Ok(n) = v.parse::<i64>() {
        return Some((n & 0xff) as u8);
    }
    match v {
        "true" | "yes" | "t" | "y" | "on" => Some(0),
        "false" | "no" | "f" | "n" | "off" => Some(1),
        _ => None,
    }
}

/// Wall-clock, user and system time of the process so far.
pub fn time_report(wall: Duration) -> String {
    // SAFETY: getrusage only writes the rusage struct we pass.
    let (user, sys) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_SELF, &mut ru) == 0 {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
            (tv(ru.ru_utime), tv(ru.ru_stime))
        } else {
            (f64::NAN, f64::NAN)
        }
    };
    format!(
        "{:.3}s wall, {user:.3}s user, {sys:.3}s system",
        wall.as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_values() {
        assert_eq!(exit_status("3\n"), Some(3));
        assert_eq!(exit_status("true"), Some(0));
        assert_eq!(exit_status("false"), Some(1));
        assert_eq!(exit_status("maybe"), None);
    }
}
