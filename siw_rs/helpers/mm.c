// SPDX-License-Identifier: GPL-2.0
/*
 * Memory helpers: vmalloc, pages, CPUs.
 *
 * As in rust/helpers/: each rust_helper_NAME wraps a static inline function or macro that
 * Rust cannot call, and the bindings name it NAME (siw_rs/gen-bindings.sh). Each does exactly
 * what its name says; every decision is made in Rust.
 */
#include <linux/cpumask.h>
#include <linux/mm.h>
#include <linux/vmalloc.h>

#include "siw_rs_helpers.h"

void *rust_helper_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

void *rust_helper_vzalloc(unsigned long size)
{
	return vzalloc(size);
}

void *rust_helper_page_address(struct page *page)
{
	return page_address(page);
}

struct page *rust_helper_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
}

bool rust_helper_virt_addr_valid(const void *addr)
{
	return virt_addr_valid(addr);
}

unsigned int rust_helper_num_possible_cpus(void)
{
	return num_possible_cpus();
}
