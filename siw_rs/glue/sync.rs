// SPDX-License-Identifier: GPL-2.0

//! Locks a socket callback can share with process context: a spinlock taken with bottom
//! halves off ([`SpinLockBh`]), bottom halves off for a scope ([`bh_off`]), and the socket
//! lock's scheme for state that a process holds across sleeping while softirq works on it
//! when no process does ([`OwnerLock`]).

use super::bindings;
use core::{
    cell::UnsafeCell,
    marker::PhantomPinned,
    ops::Deref,
    ops::DerefMut,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    prelude::*,
    sync::{
        lock::{Backend, Guard, Lock},
        LockClassKey, Mutex, MutexGuard,
    },
};

/// The backend of [`SpinLockBh`]: `spin_lock_bh()` and `spin_unlock_bh()`.
pub(crate) struct SpinLockBhBackend;

/// A spinlock taken with bottom halves off, so that softirq (a socket callback) and process
/// context can both take it.
pub(crate) type SpinLockBh<T> = Lock<T, SpinLockBhBackend>;

/// A [`SpinLockBh`] held.
pub(crate) type SpinLockBhGuard<'a, T> = Guard<'a, T, SpinLockBhBackend>;

// SAFETY: The kernel's `spinlock_t` makes the holder the only one; `relock` is the default,
// which takes the lock the same way as `lock`.
unsafe impl Backend for SpinLockBhBackend {
    type State = kernel::bindings::spinlock_t;
    type GuardState = ();

    unsafe fn init(
        ptr: *mut Self::State,
        name: *const kernel::ffi::c_char,
        key: *mut kernel::bindings::lock_class_key,
    ) {
        // SAFETY: By the caller's guarantee `ptr` is valid for writes and `name` and `key`
        // live forever.
        unsafe { kernel::bindings::__spin_lock_init(ptr, name, key) }
    }

    unsafe fn lock(ptr: *mut Self::State) -> Self::GuardState {
        // SAFETY: Initialised, by the caller's guarantee; the two bindings name the same C
        // type.
        unsafe { bindings::spin_lock_bh(ptr.cast()) }
    }

    unsafe fn try_lock(ptr: *mut Self::State) -> Option<Self::GuardState> {
        // SAFETY: As in `lock`.
        (unsafe { bindings::spin_trylock_bh(ptr.cast()) } != 0).then_some(())
    }

    unsafe fn unlock(ptr: *mut Self::State, _guard_state: &Self::GuardState) {
        // SAFETY: The caller holds the lock, taken by `lock` or `try_lock` with bottom
        // halves off.
        unsafe { bindings::spin_unlock_bh(ptr.cast()) }
    }

    // Called for every guard made (`Guard::new`). `lockdep_assert_held()` is nothing
    // without lockdep, but the call into the C helper that holds it is a call all the same,
    // in every lock taken on the data path: made only where it checks something.
    #[cfg_attr(not(CONFIG_LOCKDEP), allow(unused_variables))]
    unsafe fn assert_is_held(ptr: *mut Self::State) {
        #[cfg(CONFIG_LOCKDEP)]
        // SAFETY: Initialised, by the caller's guarantee.
        unsafe {
            kernel::bindings::spin_assert_is_held(ptr)
        }
    }
}

/// A [`SpinLockBh`] initialiser with its own lock class.
macro_rules! new_spinlock_bh {
    ($inner:expr, $name:literal) => {
        $crate::glue::sync::SpinLockBh::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_spinlock_bh;

/// Bottom halves are off on this CPU while this lives (`local_bh_disable()`; nests).
pub(crate) struct BhOff {
    /// `local_bh_enable()` must run on the CPU that disabled them.
    _not_send: core::marker::PhantomData<*mut ()>,
}

/// Turns bottom halves off until the result is dropped: for taking a plain spinlock that
/// softirq also takes (an [`kernel::xarray::XArray`]'s).
pub(crate) fn bh_off() -> BhOff {
    // SAFETY: Callable from any context but hard interrupts, where nothing here runs; the
    // guard's drop re-enables on this CPU.
    unsafe { bindings::local_bh_disable() };
    BhOff {
        _not_send: core::marker::PhantomData,
    }
}

/// Bottom halves are off on this CPU (or a softirq runs): `in_softirq()`.
pub(crate) fn bh_disabled() -> bool {
    // SAFETY: Reads this CPU's preempt count; callable from any context.
    unsafe { bindings::in_softirq() }
}

/// As [`bh_off`], but `None` when bottom halves are already off (a socket callback in
/// softirq): turning them off and on again inside costs a `local_bh_enable()`, which checks
/// for pending softirqs, and changes nothing. Only for a scope that ends before whatever
/// turned them off ends: the result must not outlive the caller's frame.
pub(crate) fn bh_off_if_on() -> Option<BhOff> {
    (!bh_disabled()).then(bh_off)
}

impl Drop for BhOff {
    fn drop(&mut self) {
        // SAFETY: Paired with `bh_off`'s disable, on the same CPU (the guard is not `Send`).
        unsafe { bindings::local_bh_enable() };
    }
}

/// State that a process holds across sleeping (sending on a socket), and that softirq (a
/// socket callback) works on only when no process holds it: the socket lock's own scheme
/// (`lock_sock()` against `bh_lock_sock()` with `sock_owned_by_user()`).
///
/// A process owns it through [`OwnerLock::lock`]: a mutex among processes, and a flag set
/// under a [`SpinLockBh`]. Softirq gets it through [`OwnerLock::try_lock_bh`] only while
/// the flag is clear, holding the spinlock meanwhile; otherwise it leaves the work to the
/// owner (or to a work item it queues). The owner clears the flag without the spinlock
/// (a release store, which a softirq user's acquire load pairs with): a softirq user that
/// still sees it set leaves the work as if the owner were there, and one that sees it clear
/// sees all the owner wrote. So only taking ownership costs a spinlock round with bottom
/// halves off and on, not giving it back.
#[pin_data]
pub(crate) struct OwnerLock<T> {
    #[pin]
    owner: Mutex<()>,
    /// Held by a softirq user, and by a process while it sets `owned`.
    #[pin]
    slock: SpinLockBh<()>,
    /// Whether a process owns the data: set under `slock`, cleared without it.
    owned: AtomicBool,
    data: UnsafeCell<T>,
    #[pin]
    _pin: PhantomPinned,
}

// SAFETY: The data moves with the lock; it is `Send`.
unsafe impl<T: Send> Send for OwnerLock<T> {}
// SAFETY: Access to the data is exclusive (see the guards), so sharing the lock needs only
// that the data may be sent between threads.
unsafe impl<T: Send> Sync for OwnerLock<T> {}

impl<T> OwnerLock<T> {
    /// A lock around `data`; `owner` and `slock` are the lock classes of its two locks.
    pub(crate) fn new(
        data: T,
        name: &'static CStr,
        owner: Pin<&'static LockClassKey>,
        slock: Pin<&'static LockClassKey>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            owner <- Mutex::new((), name, owner),
            slock <- SpinLockBh::new((), name, slock),
            owned: AtomicBool::new(false),
            data: UnsafeCell::new(data),
            _pin: PhantomPinned,
        })
    }

    /// Owns the data from process context (may sleep, waiting for another owner or for a
    /// softirq user to finish).
    pub(crate) fn lock(&self) -> OwnerGuard<'_, T> {
        let m = self.owner.lock();
        // Under the spinlock: a softirq user holding it finishes first (and what it wrote is
        // seen through the lock), and any later one sees the flag.
        let g = self.slock.lock();
        self.owned.store(true, Ordering::Relaxed);
        drop(g);
        OwnerGuard { lock: self, _m: m }
    }

    /// The data for a softirq user, unless a process owns it (then `None`: the owner, or
    /// work the caller queues, must do what the caller meant to). Holds a spinlock with
    /// bottom halves off: the holder must not sleep.
    pub(crate) fn try_lock_bh(&self) -> Option<BhGuard<'_, T>> {
        let g = self.slock.lock();
        // Pairs with the owner's release store in `OwnerGuard::drop`.
        if self.owned.load(Ordering::Acquire) {
            return None;
        }
        Some(BhGuard { lock: self, _g: g })
    }
}

/// The data of an [`OwnerLock`], owned by a process.
pub(crate) struct OwnerGuard<'a, T> {
    lock: &'a OwnerLock<T>,
    /// Dropped after the flag is cleared (fields drop after `drop`).
    _m: MutexGuard<'a, ()>,
}

impl<T> Drop for OwnerGuard<'_, T> {
    fn drop(&mut self) {
        // Publishes what the owner wrote to a softirq user that sees the flag clear.
        self.lock.owned.store(false, Ordering::Release);
    }
}

impl<T> Deref for OwnerGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // While this guard lives, the flag is set (under the spinlock, after the mutex was
        // taken), so no other process holds a guard and no softirq user does: one that held
        // the spinlock before has let it go, and one taking it now finds the flag set.
        // SAFETY: By the above, this guard's access to the data is the only one.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for OwnerGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: As in `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

/// The data of an [`OwnerLock`], held by a softirq user (or a process in a socket callback).
pub(crate) struct BhGuard<'a, T> {
    lock: &'a OwnerLock<T>,
    _g: SpinLockBhGuard<'a, ()>,
}

impl<T> Deref for BhGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: The spinlock is held with the flag clear (an acquire load, after the last
        // owner's release store): no process owns the data (an owner sets the flag under
        // this spinlock first) and no other softirq user holds it.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for BhGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: As in `deref`; `&mut self` makes this the only reference through the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

/// An [`OwnerLock`] initialiser with its own lock classes.
macro_rules! new_owner_lock {
    ($inner:expr, $name:literal) => {
        $crate::glue::sync::OwnerLock::new(
            $inner,
            kernel::c_str!($name),
            kernel::static_lock_class!(),
            kernel::static_lock_class!(),
        )
    };
}
pub(crate) use new_owner_lock;
