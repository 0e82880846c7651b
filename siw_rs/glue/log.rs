// SPDX-License-Identifier: GPL-2.0

//! Messages a peer or a process can cause: each names its device, each is rate-limited,
//! and debug messages are switched at run time (`/sys/module/siw_rs/parameters/debug`, or
//! `modprobe siw_rs debug=1`), on any kernel. `helpers/log.c` holds the switch and the
//! rate limits.

use super::bindings;
use core::fmt;

/// Whether debug messages are on (the `debug` parameter).
pub(crate) fn debug_on() -> bool {
    // SAFETY: Reads a module parameter; callable from any context.
    unsafe { bindings::siw_rs_debug_on() }
}

/// Prints `args` at `KERN_DEBUG`, unless the rate limit holds it back.
pub(crate) fn print_debug(args: fmt::Arguments<'_>) {
    // SAFETY: `args` outlives the call; `%pA` reads it as a `core::fmt::Arguments`, as
    // the kernel crate's printing does. Callable from any context.
    unsafe { bindings::siw_rs_log_debug(core::ptr::from_ref(&args).cast()) }
}

/// Prints `args` at `KERN_WARNING`, unless the rate limit holds it back.
pub(crate) fn print_warn(args: fmt::Arguments<'_>) {
    // SAFETY: As in `print_debug`.
    unsafe { bindings::siw_rs_log_warn(core::ptr::from_ref(&args).cast()) }
}

/// A device's name, as messages begin with it.
pub(crate) struct DevName {
    name: [u8; NAME_MAX],
    len: usize,
}

/// `IB_DEVICE_NAME_MAX`.
const NAME_MAX: usize = 64;

impl DevName {
    /// `name`, cut at [`NAME_MAX`] octets (the core allows no longer one).
    pub(crate) fn new(name: &[u8]) -> Self {
        let mut n = Self {
            name: [0; NAME_MAX],
            len: name.len().min(NAME_MAX),
        };
        n.name[..n.len].copy_from_slice(&name[..n.len]);
        n
    }
}

impl fmt::Display for DevName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A device name is printable ASCII (`rdma link add` checks it).
        for &c in &self.name[..self.len] {
            let c = if c.is_ascii_graphic() {
                char::from(c)
            } else {
                '?'
            };
            fmt::Write::write_char(f, c)?;
        }
        Ok(())
    }
}

/// A debug message of device `$dev` (a [`DevName`]), if debug messages are on.
macro_rules! debug {
    ($dev:expr, $($arg:tt)*) => {
        if $crate::glue::log::debug_on() {
            $crate::glue::log::print_debug(
                format_args!("{}: {}", $dev, format_args!($($arg)*)),
            )
        }
    };
}
pub(crate) use debug;

/// A warning of device `$dev`, rate-limited.
macro_rules! warning {
    ($dev:expr, $($arg:tt)*) => {
        $crate::glue::log::print_warn(format_args!("{}: {}", $dev, format_args!($($arg)*)))
    };
}
pub(crate) use warning;
