// SPDX-License-Identifier: GPL-2.0
/*
 * Logging: the run-time switch of debug messages, and the rate limits of every message a
 * peer or a process can cause.
 *
 * In C because a Rust module's parameters never appear in sysfs (rust/macros/module.rs
 * gives them permission 0), and `debug` must be writable while the module runs, on a
 * production kernel too (most have no CONFIG_DYNAMIC_DEBUG for Rust call sites: Rust's
 * pr_debug! is compiled out without CONFIG_RUST_DEBUG_ASSERTIONS).
 */
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/printk.h>
#include <linux/ratelimit.h>

#include "siw_rs_helpers.h"

static bool debug = IS_ENABLED(CONFIG_RUST_DEBUG_ASSERTIONS);
module_param(debug, bool, 0644);
MODULE_PARM_DESC(debug, "Log debug messages, rate-limited (default: on if the kernel has Rust debug assertions)");

/* Debug messages come in bursts (a connection's end logs a few per QP): a generous burst. */
static DEFINE_RATELIMIT_STATE(siw_rs_debug_rs, 5 * HZ, 200);
static DEFINE_RATELIMIT_STATE(siw_rs_warn_rs, 5 * HZ, 10);

bool siw_rs_debug_on(void)
{
	return READ_ONCE(debug);
}

/* `args` is a Rust core::fmt::Arguments, which %pA prints (as rust/kernel/print.rs does). */
void siw_rs_log_debug(const void *args)
{
	if (__ratelimit(&siw_rs_debug_rs))
		printk(KERN_DEBUG KBUILD_MODNAME ": %pA", args);
}

void siw_rs_log_warn(const void *args)
{
	if (__ratelimit(&siw_rs_warn_rs))
		printk(KERN_WARNING KBUILD_MODNAME ": %pA", args);
}
