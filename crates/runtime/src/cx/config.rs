//! [`ConfigCx`]: what a class's constructor (`configure`) receives.

use crate::args::{ArgEnv, Args};
use crate::registry::{allowed_file, click_messages, warnings_enabled};
use std::cell::RefCell;

thread_local! {
    /// `FILE:LINE` of the element being configured on this thread, for
    /// messages in Click's form.
    static LANDMARK: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Sets the landmark of the element about to be configured.
pub(crate) fn set_landmark(landmark: String) {
    LANDMARK.with(|l| *l.borrow_mut() = landmark);
}
use paraclick_lang::check::PortKind;

/// What `configure` sees: the element's name, class, configuration string,
/// its connected port counts and kinds, the thread count, and the named
/// addresses of AddressInfo elements.
pub struct ConfigCx<'a> {
    pub name: &'a str,
    pub class: &'a str,
    pub config: &'a str,
    pub ninputs: usize,
    pub noutputs: usize,
    pub input_kinds: &'a [PortKind],
    pub output_kinds: &'a [PortKind],
    pub nthreads: usize,
    pub env: &'a mut ArgEnv,
}

impl ConfigCx<'_> {
    /// Prints a configuration warning about this element on standard
    /// error (`NAME :: CLASS: warning: MESSAGE`), unless warnings are off
    /// (`-w`, [`crate::registry::set_warnings`]).
    pub fn warn(&self, message: &str) {
        if warnings_enabled() && click_messages() {
            self.message(&format!("warning: {message}"));
        } else if warnings_enabled() {
            // Warnings quote configuration text: no terminal controls.
            let esc = paraclick_lang::span::escape;
            eprintln!(
                "{} :: {}: warning: {}",
                esc(self.name),
                esc(self.class),
                esc(message)
            );
        }
    }

    /// Prints MESSAGE about this element on standard error: `NAME:
    /// MESSAGE`, or in Click's form (see
    /// [`crate::registry::set_click_messages`]) `FILE:LINE: While
    /// configuring 'NAME :: CLASS':` and the message indented.
    pub fn message(&self, message: &str) {
        let esc = paraclick_lang::span::escape;
        if click_messages() {
            let at = LANDMARK.with(|l| l.borrow().clone());
            eprintln!(
                "{}While configuring '{} :: {}':\n  {}",
                esc(&at),
                esc(self.name),
                esc(self.class),
                esc(message)
            );
        } else {
            eprintln!("{}: {}", esc(self.name), esc(message));
        }
    }

    /// The configuration, split into arguments.
    pub fn args(&self) -> Args<'_> {
        Args::new(self.config, self.env)
    }

    pub fn input_is_pull(&self, port: usize) -> bool {
        self.input_kinds.get(port) == Some(&PortKind::Pull)
    }

    pub fn output_is_push(&self, port: usize) -> bool {
        self.output_kinds.get(port) == Some(&PortKind::Push)
    }

    /// Whether the configuration may read the file `path` (a trace to
    /// replay, say): the path to open, or the error to return. An element
    /// that reads a file named in its configuration calls this before it
    /// opens it: `cx.allowed_file(&filename)?;`.
    ///
    /// The operator's configuration reads any file; one written through a
    /// control socket (`hotconfig`) only files under the directories the
    /// operator allows (see [`paraclick_lang::files`]), and not standard
    /// input (`-`).
    pub fn allowed_file(&self, path: &str) -> Result<std::path::PathBuf, String> {
        allowed_file(&self.env.files, path)
    }
}
