// SPDX-License-Identifier: GPL-2.0

//! The layout check: the bindings must lay out every C struct the glue builds, copies or
//! allocates, and every field it reads or writes, as the C compiler does.
//!
//! bindgen does not always manage: for this kernel's `struct sock` it comes out 64 bytes
//! short, so a field access through it would hit the wrong bytes (the glue reaches `struct
//! sock` through C helpers only, and the bindings keep it opaque). `include/siw_rs_layout.h`
//! names what the glue relies on; `helpers/layout.c` measures each entry in C, and the build
//! generates the same list measured on the bindings (`layout_generated.rs`). Module init
//! compares the two and refuses to load on any difference, naming it.

use super::bindings;
use core::mem::{
    offset_of,
    size_of, //
};
use kernel::prelude::*;

/// Each entry of `include/siw_rs_layout.h`, with its value on the Rust side.
const RUST: &[(&str, usize)] = &include!("layout_generated.rs");

/// Proof that [`check`] passed.
pub(crate) struct Checked(());

/// Compares the C and Rust layouts; `EINVAL` (after a message per difference) if any differ.
pub(crate) fn check() -> Result<Checked> {
    let mut ok = true;
    for (i, (what, rust)) in RUST.iter().enumerate() {
        let i = u32::try_from(i).map_err(|_| EINVAL)?;
        // SAFETY: A pure function of its argument.
        let c = unsafe { bindings::siw_rs_layout(i) };
        if c != *rust {
            pr_err!(
                "bindings disagree with C on {}: {} in Rust, {} in C\n",
                what,
                rust,
                c
            );
            ok = false;
        }
    }
    let len = u32::try_from(RUST.len()).map_err(|_| EINVAL)?;
    // SAFETY: As above.
    if unsafe { bindings::siw_rs_layout(len) } != !0 {
        pr_err!("the C layout list is longer than the Rust one\n");
        ok = false;
    }
    if ok {
        Ok(Checked(()))
    } else {
        Err(EINVAL)
    }
}
