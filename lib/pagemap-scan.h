/* SPDX-License-Identifier: MIT */
#pragma once

/* PAGEMAP_SCAN (uapi since Linux 6.7, include/uapi/linux/fs.h), for the
 * density sampler and the collapser: older headers lack it. */
#include <errno.h>
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

/* One PAGEMAP_SCAN of [start, end) for the pages in any category of anyof
 * that are not the shared zero page: up to vec_len regions and max_pages
 * pages (0: no limit) into vec, each with its categories of return_mask.
 * The kernel walks to end unless vec or max_pages fills first; *walk_end
 * (may be NULL) is where it stopped. Returns the number of regions, or
 * -errno (-ENOTTY: a kernel without PAGEMAP_SCAN). */
static inline int mthp_pagemap_scan(int fd, uint64_t start, uint64_t end, struct page_region *vec,
                                    uint64_t vec_len, uint64_t max_pages, uint64_t anyof, uint64_t return_mask,
                                    uint64_t *walk_end) {
        struct pm_scan_arg a = {
                .size = sizeof(a),
                .start = start,
                .end = end,
                .vec = (uint64_t) (uintptr_t) vec,
                .vec_len = vec_len,
                .max_pages = max_pages,
                .category_inverted = PAGE_IS_PFNZERO,
                .category_mask = PAGE_IS_PFNZERO,
                .category_anyof_mask = anyof,
                .return_mask = return_mask,
        };
        int r = ioctl(fd, PAGEMAP_SCAN, &a);
        if (r < 0)
                return -errno;
        if (walk_end)
                *walk_end = a.walk_end;
        return r;
}
