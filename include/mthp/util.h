/* SPDX-License-Identifier: MIT */
#pragma once

/* Small things every module uses: scope-bound cleanup (_cleanup_ and a
 * *_freep for every library object), the one clock, the log-once flag and a
 * string copy that says when it cut. Depends on nothing else in mthp/. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
void mthp_closep(int *fd);
void mthp_freep(void *p);
#define _cleanup_close_ _cleanup_(mthp_closep)
#define _cleanup_free_ _cleanup_(mthp_freep)

/* type *p _cleanup_(name) = NULL: free_fn(p) at scope exit unless NULL. */
#define MTHP_DEFINE_FREEP(type, free_fn, name)                                                                      \
        type;                                                                                                       \
        void free_fn(type *p);                                                                                      \
        static inline void name(type **p) {                                                                         \
                if (*p)                                                                                             \
                        free_fn(*p);                                                                                \
        }
MTHP_DEFINE_FREEP(struct mthp_host, mthp_host_free, mthp_host_freep)
MTHP_DEFINE_FREEP(struct mthp_sampler, mthp_sampler_free, mthp_sampler_freep)
MTHP_DEFINE_FREEP(struct mthp_cgmon, mthp_cgmon_free, mthp_cgmon_freep)
MTHP_DEFINE_FREEP(struct mthp_density_sampler, mthp_density_free, mthp_density_freep)
MTHP_DEFINE_FREEP(struct mthp_procinfo, mthp_procinfo_free, mthp_procinfo_freep)
MTHP_DEFINE_FREEP(struct mthp_collapser, mthp_collapser_free, mthp_collapser_freep)
MTHP_DEFINE_FREEP(struct mthp_policy_set, mthp_policy_set_free, mthp_policy_set_freep)
MTHP_DEFINE_FREEP(struct mthp_taskstats, mthp_taskstats_close, mthp_taskstats_closep)
MTHP_DEFINE_FREEP(struct mthp_record_reader, mthp_record_close_read, mthp_record_close_readp)
MTHP_DEFINE_FREEP(struct mthp_actuator, mthp_actuator_free, mthp_actuator_freep)

/* The one clock: CLOCK_MONOTONIC for intervals and deadlines,
 * CLOCK_REALTIME for what a person reads (history, status, pins). */
uint64_t mthp_now_nsec(clockid_t clock);
uint64_t mthp_now_usec(clockid_t clock);

/* Log once until it clears: a failure that repeats every tick is logged
 * when it starts and, if wanted, when it stops. mthp_once_set() is true the
 * first time after the flag was clear (log then); mthp_once_clear() is true
 * when the flag was set (log "works again" then). */
static inline bool mthp_once_set(bool *flag) {
        if (*flag)
                return false;
        *flag = true;
        return true;
}
static inline bool mthp_once_clear(bool *flag) {
        if (!*flag)
                return false;
        *flag = false;
        return true;
}

/* Make *p hold at least need elements of elem bytes; *cap counts them and
 * doubles from 16. 0 or -ENOMEM (then *p is untouched). */
int mthp_grow(void **p, size_t *cap, size_t need, size_t elem);

/* Copy with truncation check: 0, or -ENAMETOOLONG (dst then holds a prefix). */
int mthp_strcpy(char *dst, size_t size, const char *src);
