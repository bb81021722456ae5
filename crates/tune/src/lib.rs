//! Planning, modelling and measuring of paraclick configurations, as a
//! library: what `paraclick model`, `bench --mlffr` and `parallelize` do,
//! without the command line.
//!
//! The layers, lowest first (a module imports only those above it in this
//! list):
//!
//! - [`stats`]: medians and the reading of line timings.
//! - [`mod@bench`]: one configuration run to its end, with its figures.
//! - [`mlffr`]: the loss-free rate search (trials at offered rates).
//! - [`profile`]: a configuration's application profile on the runtime,
//!   the crossing queues' measured line terms (and their cache), and the
//!   model's answer for a configuration ([`profile::config_model`]).
//! - [`hop`]: the calibration of the model's crossing term.
//! - [`validate`]: the model's predictions against measurements.
//! - [`parallelize`]: the planner, which profiles, maps candidates onto
//!   the model, checks the best by running it, and writes the rewrite.
//!
//! The performance model itself is `paraclick_model`, which does not
//! depend on the runtime.

pub mod bench;
pub mod hop;
pub mod mlffr;
pub mod parallelize;
pub mod profile;
pub mod stats;
pub mod validate;

/// The registry the unit tests build with: every element class and device.
#[cfg(test)]
pub(crate) fn registry() -> paraclick_runtime::Registry {
    paraclick_io::full_registry()
}
