// SPDX-License-Identifier: GPL-2.0

//! Raw bindings to the C API siw_rs uses, generated at build time.
//!
//! `siw_rs/Kbuild` runs bindgen over `include/siw_rs_bindings.h` with the C flags the
//! kernel in `KDIR` used for its own `rust/bindings`, so the layouts match that kernel's
//! configuration. This module may not be used outside [`crate::glue`]: abstract or re-export
//! what is needed in the parent module instead.

#![allow(
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr,
    clippy::as_underscore,
    clippy::cast_lossless,
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    unnecessary_transmutes
)]

use kernel::ffi;
use pin_init::{
    MaybeZeroable,
    Zeroable, //
};

// Manual definitions for the types `rust/bindgen_parameters` blocklists.
type __kernel_size_t = usize;
type __kernel_ssize_t = isize;
type __kernel_ptrdiff_t = isize;

// SAFETY: `__BindgenBitfieldUnit<Storage>` is a newtype around `Storage`, so it is zeroable
// whenever `Storage` is (the same impl as the kernel's own bindings crate).
unsafe impl<Storage> Zeroable for __BindgenBitfieldUnit<Storage> where Storage: Zeroable {}

// SAFETY: `__BindgenUnionField<T>` is a zero-sized marker (`PhantomData<T>`): nothing to be
// invalid.
unsafe impl<T> Zeroable for __BindgenUnionField<T> {}
// SAFETY: `__BindgenOpaqueArray8<T>` is a newtype around `T`, zeroable whenever `T` is.
unsafe impl<T> Zeroable for __BindgenOpaqueArray8<T> where T: Zeroable {}

include!("bindings_generated.rs");
