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

/* The object another process maps at [start, end) (a shmem segment), read
 * through /proc/PID/map_files (CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE),
 * for the collapser's shmem repair. */
struct mthp_host;
struct mthp_pc_object {
        int fd;                 /* -1: none to read */
        bool tried;             /* open was asked for [start, end) (fd -1: it failed) */
        bool truthful;          /* mincore tells its page cache */
        bool no_cachestat;      /* cachestat refused for this object alone */
        uint64_t start, end;
        void *view;             /* [start, end) of it, PROT_READ, never touched: mincore */
};
void mthp_pc_object_init(struct mthp_pc_object *o);
void mthp_pc_object_close(struct mthp_pc_object *o);
/* Open pid's mapping [start, end); -errno (-EPERM: no capability for any
 * process; -EOPNOTSUPP: not a regular file). O_NOATIME where we may:
 * looking is not a use of a /dev/shm file. */
int mthp_pc_object_open(struct mthp_pc_object *o, const struct mthp_host *h, int pid, uint64_t start, uint64_t end,
                        bool cap_fowner);
/* Pages of the mapping's [addr, addr + len) (map_off: the mapping's file
 * offset) in the object's page cache: cachestat, else mincore of a view of
 * the mapping mapped once and never touched, only where mincore tells the
 * truth. Not fstat's st_blocks: it counts swapped pages, which a collapse
 * would swap in. cachestat is given up for good (*no_cachestat) only on
 * ENOSYS or a seccomp filter's EPERM (on an object mincore would tell us
 * about); the kernel's own refusal (6.14+, another user's file) is this
 * object's. The count, or -errno. */
int mthp_pc_object_count(struct mthp_pc_object *o, uint64_t map_off, uint64_t addr, uint64_t len, bool *no_cachestat);
