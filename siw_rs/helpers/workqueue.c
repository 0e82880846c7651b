// SPDX-License-Identifier: GPL-2.0
/*
 * Workqueue helpers.
 *
 * As in rust/helpers/: each rust_helper_NAME wraps a static inline function or macro that
 * Rust cannot call, and the bindings name it NAME (siw_rs/gen-bindings.sh). Each does exactly
 * what its name says; every decision is made in Rust.
 */
#include <linux/workqueue.h>

#include "siw_rs_helpers.h"

/* alloc_workqueue() is a variadic macro: this one takes the name as a plain string. */
struct workqueue_struct *rust_helper_alloc_workqueue(const char *name, unsigned int flags,
						     int max_active)
{
	return alloc_workqueue("%s", flags, max_active, name);
}

bool rust_helper_cancel_delayed_work_item(struct work_struct *work)
{
	return cancel_delayed_work(to_delayed_work(work));
}
