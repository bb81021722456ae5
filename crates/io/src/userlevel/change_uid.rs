//! # ChangeUID
//!
//! ChangeUID
//!
//! Relinquishes root privilege.
//!
//! Ports: none.
//!
//! Sets the process's effective group and user IDs to its real group and
//! user IDs, giving up any set-user-ID-root privilege, when it
//! initializes. Elements initialize in the order they are declared, so
//! the elements declared before ChangeUID (put the privileged ones, such
//! as FromDevice and ToDevice, first) initialize with the privilege and
//! those after it without: a FromDump declared after it fails to
//! initialize if the real user cannot read its file. If the IDs cannot
//! be changed, the router does not start, with the system's reason.
//! `paraclick check` changes nothing. Set-user-ID-root programs are a bad
//! idea, and paraclick is no exception.
//!
//! Handlers: none.
//!
//! Example:
//!
//!     f1 :: FromDevice(eth0) -> ...;
//!     ChangeUID;
//!     f2 :: FromDump(/tmp/x) -> ...;

use paraclick_runtime::{ClassSpec, ConfigCx, Element, InitCx};
use std::io;

pub struct ChangeUID;

pub fn spec() -> ClassSpec {
    ClassSpec::element("ChangeUID", "0/0", "a", make).stateless()
}

fn make(cx: &mut ConfigCx<'_>) -> Result<ChangeUID, String> {
    cx.args().complete()?;
    Ok(ChangeUID)
}

/// The process's real (user, group) IDs.
fn real_ids() -> (u32, u32) {
    // SAFETY: getuid and getgid take no arguments and cannot fail.
    unsafe { (libc::getuid(), libc::getgid()) }
}

fn set_egid(g: u32) -> io::Result<()> {
    // SAFETY: setegid takes a plain integer; failure is reported by its
    // return value and errno, read right after.
    if unsafe { libc::setegid(g) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn set_euid(u: u32) -> io::Result<()> {
    // SAFETY: as set_egid.
    if unsafe { libc::seteuid(u) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets the effective group, then user, ID to the real ones (the group
/// first: without root, it could no longer be changed).
fn relinquish(
    (uid, gid): (u32, u32),
    set_gid: impl Fn(u32) -> io::Result<()>,
    set_uid: impl Fn(u32) -> io::Result<()>,
) -> Result<(), String> {
    set_gid(gid).map_err(|e| format!("cannot set the effective group ID to {gid}: {e}"))?;
    set_uid(uid).map_err(|e| format!("cannot set the effective user ID to {uid}: {e}"))
}

impl Element for ChangeUID {
    fn initialize(&self, ix: &mut InitCx<'_>) -> Result<(), String> {
        if ix.checking() {
            return Ok(());
        }
        relinquish(real_ids(), set_egid, set_euid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    #[test]
    fn sets_group_then_user_to_the_real_ids() {
        let calls = RefCell::new(Vec::new());
        relinquish(
            (1000, 100),
            |g| {
                calls.borrow_mut().push(("gid", g));
                Ok(())
            },
            |u| {
                calls.borrow_mut().push(("uid", u));
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(calls.into_inner(), vec![("gid", 100), ("uid", 1000)]);
    }

    #[test]
    fn a_refused_change_is_a_clear_error() {
        let e = relinquish(
            (1000, 100),
            |_| Ok(()),
            |_| Err(io::Error::from_raw_os_error(libc::EPERM)),
        )
        .unwrap_err();
        assert!(
            e.starts_with("cannot set the effective user ID to 1000: Operation not permitted"),
            "{e}"
        );
        let e = relinquish(
            (1, 2),
            |_| Err(io::Error::from_raw_os_error(libc::EINVAL)),
            |_| Ok(()),
        )
        .unwrap_err();
        assert!(
            e.starts_with("cannot set the effective group ID to 2"),
            "{e}"
        );
    }

    #[test]
    fn in_a_router_it_keeps_the_real_ids() {
        // The tests run with equal real and effective IDs: nothing changes.
        let before = (real_ids(), effective_ids());
        let r = paraclick_runtime::testing::try_build(&crate::full_registry(), "ChangeUID;");
        assert!(r.is_ok());
        assert_eq!((real_ids(), effective_ids()), before);
        assert!(
            paraclick_runtime::testing::try_build(&crate::full_registry(), "ChangeUID(1);")
                .is_err()
        );
    }

    fn effective_ids() -> (u32, u32) {
        // SAFETY: geteuid and getegid take no arguments and cannot fail.
        unsafe { (libc::geteuid(), libc::getegid()) }
    }
}
