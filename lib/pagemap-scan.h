/* SPDX-License-Identifier: MIT */
#pragma once

/* PAGEMAP_SCAN (uapi since Linux 6.7, include/uapi/linux/fs.h), for the
 * density sampler and the collapser: older headers lack it. */
#include <linux/fs.h>
#include <stdint.h>
#include <sys/ioctl.h>

#ifndef PAGEMAP_SCAN
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE (1 << 6)
struct page_region {
        uint64_t start, end, categories;
};
struct pm_scan_arg {
        uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
        uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif
