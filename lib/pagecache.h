/* SPDX-License-Identifier: MIT */
#pragma once

/* The page cache of a file another process maps (a shmem segment opened
 * through /proc/PID/map_files), for the density sampler and the
 * collapser's shmem repair. */
#include <stdbool.h>
#include <stdint.h>

/* CAP_FOWNER in our effective set (mincore tells us any file's page cache). */
bool mthp_cap_fowner(void);

/* mincore() of a file mapping tells the page cache only to the file's
 * owner, CAP_FOWNER or who may write it; anyone else reads every page
 * resident (mm/mincore.c can_do_mincore), which would be a lie. */
bool mthp_mincore_truthful(int fd, bool cap_fowner);

/* cachestat(2) (Linux 6.5): pages of [off, off + len) in fd's page cache.
 * 0, or -errno (-ENOSYS before 6.5; -EPERM under a seccomp filter that
 * does not know it, or from 6.14 on where mincore would not tell the truth
 * either: not the owner, no CAP_FOWNER, no write access). */
int mthp_cachestat(int fd, uint64_t off, uint64_t len, uint64_t *nr_cache);
