// SPDX-License-Identifier: GPL-2.0

//! The module's own workqueue (unbound, usable for memory reclaim), which runs its
//! connections' work. Destroying it at module exit waits for every work item, so no work
//! outlives the code.

use super::bindings;
use core::sync::atomic::{
    AtomicPtr,
    AtomicUsize,
    Ordering, //
};
use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{
        HasDelayedWork,
        HasWork,
        Queue,
        Work,
        WorkItem, //
    },
};

static WQ: AtomicPtr<bindings::workqueue_struct> = AtomicPtr::new(core::ptr::null_mut());

/// Delayed work whose timer may still be pending: the workqueue must outlive it.
static TIMERS: AtomicUsize = AtomicUsize::new(0);

/// A delayed work item is about to be queued.
pub(crate) fn timer_armed() {
    TIMERS.fetch_add(1, Ordering::AcqRel);
}

/// A delayed work item ran (or was not queued after all).
pub(crate) fn timer_done() {
    TIMERS.fetch_sub(1, Ordering::AcqRel);
}

/// Cancels the timer of `this`'s delayed work `ID` (queued with `enqueue_delayed` after
/// [`timer_armed`]) if it has not fired yet, giving back the reference it held; returns
/// whether it was pending. A run already under way is not waited for.
pub(crate) fn cancel_delayed<T, const ID: u64>(this: &Arc<T>) -> bool
where
    T: HasDelayedWork<T, ID> + WorkItem<ID, Pointer = Arc<T>>,
{
    let ptr = Arc::as_ptr(this);
    // SAFETY: `ptr` points to a live `T` (we hold `this`), so the work item inside it is valid.
    let work = unsafe { <T as HasWork<T, ID>>::raw_get_work(ptr.cast_mut()) };
    // SAFETY: `work` is a valid `Work<T, ID>`, which wraps a `work_struct`.
    let raw = unsafe { Work::<T, ID>::raw_get(work) };
    // SAFETY: `HasDelayedWork` promises the `work_struct` is the `work` field of a
    // `delayed_work`; cancelling only takes the workqueue's own locks.
    let pending = unsafe { bindings::cancel_delayed_work_item(raw.cast()) };
    if pending {
        // SAFETY: A pending item queued from an `Arc<T>` owns the reference `Arc::into_raw` gave
        // it, to be taken back by its run; cancelled, it will not run, so the reference is ours.
        drop(unsafe { Arc::from_raw(ptr) });
        timer_done();
    }
    pending
}

/// Allocates the workqueue `name` (module init).
fn init(name: &'static CStr) -> Result {
    // Unbound (connections' work need not stay on the CPU that queued it) and with a rescuer
    // (connection teardown may be needed to free memory).
    let flags = bindings::wq_flags_WQ_UNBOUND | bindings::wq_flags_WQ_MEM_RECLAIM;
    // SAFETY: Plain allocation; the name is copied.
    let wq = unsafe { bindings::alloc_workqueue(name.as_char_ptr(), flags, 0) };
    if wq.is_null() {
        return Err(ENOMEM);
    }
    WQ.store(wq, Ordering::Release);
    Ok(())
}

/// Drains and frees the workqueue (module exit, after every device is gone).
fn exit() {
    let wq = WQ.swap(core::ptr::null_mut(), Ordering::AcqRel);
    if !wq.is_null() {
        // SAFETY: Allocated by `init`, and no longer reachable through `WQ`.
        unsafe { bindings::destroy_workqueue(wq) };
    }
}

/// The workqueue, between `init` and `exit`.
pub(crate) fn queue() -> Option<&'static Queue> {
    let wq = WQ.load(Ordering::Acquire);
    if wq.is_null() {
        return None;
    }
    // SAFETY: `wq` stays valid until `exit`, which runs after every user is gone (module
    // exit, after the devices and their connections).
    Some(unsafe { Queue::from_raw(wq.cast()) })
}

/// Owns the workqueue for the module's lifetime.
pub(crate) struct Guard(());

impl Guard {
    /// Allocates the workqueue, called `name`.
    pub(crate) fn new(name: &'static CStr) -> Result<Self> {
        init(name)?;
        Ok(Self(()))
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // A pending timer would queue onto a freed workqueue: wait for them (each fires
        // within the longest MPA timeout, and its work finds its endpoint closed).
        while TIMERS.load(Ordering::Acquire) != 0 {
            kernel::time::delay::fsleep(kernel::time::Delta::from_millis(50));
        }
        exit();
    }
}
