// SPDX-License-Identifier: GPL-2.0
/*
 * Locking helpers: the bottom-half-safe variants the kernel crate does not wrap. As in
 * rust/helpers/, each rust_helper_NAME wraps the static inline function or macro NAME.
 */
#include <linux/bottom_half.h>
#include <linux/preempt.h>
#include <linux/spinlock.h>

#include "siw_rs_helpers.h"

void rust_helper_spin_lock_bh(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void rust_helper_spin_unlock_bh(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

int rust_helper_spin_trylock_bh(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

void rust_helper_local_bh_disable(void)
{
	local_bh_disable();
}

void rust_helper_local_bh_enable(void)
{
	local_bh_enable();
}

bool rust_helper_in_softirq(void)
{
	return in_softirq();
}
