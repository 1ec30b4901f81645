/* SPDX-License-Identifier: MIT */
#pragma once

/* Parsers of /proc text: "key value" files (vmstat, meminfo, PID/status,
 * and a cgroup's memory.stat), /proc/PID/stat and /proc/PID/maps, and the
 * one reader of a whole /proc file of any length. Pure but for the reader;
 * the density sampler, the process scanner and the collapser use them. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "mthp/types.h"

#define MTHP_PROC_COMM_MAX 16
/* cap on a whole-file read (a maps file); a longer file is read by its prefix */
#define MTHP_PROC_TEXT_MAX (16u << 20)

/* Parse a "key value" (or "key: value kB") line-oriented file; calls cb per
 * line. Used for vmstat, meminfo and memory.stat. */
typedef void (*mthp_kv_cb)(void *user, const char *key, unsigned long long value);
void mthp_parse_kv(const char *text, mthp_kv_cb cb, void *user);

/* Read fd to its end into *text (grown as needed, *cap its size; reused
 * across calls), NUL-terminated. A file longer than MTHP_PROC_TEXT_MAX is
 * cut there, its partial last line dropped. 0 or -errno; *len the length. */
/* Every PID in the /proc directory proc_fd (left open, its offset moved)
 * into *pids (grown with mthp_grow), in directory order; *n of them. */
int mthp_proc_list_pids(int proc_fd, pid_t **pids, size_t *cap, size_t *n);
int mthp_proc_read_fd(int fd, char **text, size_t *cap, size_t *len);

struct mthp_proc_stat {
        pid_t pid;
        char comm[MTHP_PROC_COMM_MAX];  /* truncated if longer */
        char state;
        unsigned flags;
        uint64_t minflt;
        uint64_t starttime;           /* clock ticks since boot */
        uint64_t rss_pages;           /* field 24 (0 if the line stops before it) */
        bool thread;                  /* field 38 exit_signal is -1: a thread, not a process */
        uint64_t utime, stime;        /* fields 14 and 15: user and system CPU, clock ticks */
};
/* /proc/PID/stat: comm may hold spaces and ')'. 0 or -EBADMSG. */
int mthp_proc_parse_stat(const char *text, struct mthp_proc_stat *st);
struct mthp_host;
/* pid's start time (clock ticks since boot) from /proc/PID/stat through the
 * host root: what tells a process from a later one with its PID. 0, -ESRCH
 * (gone, a zombie), -EBADMSG or another negative errno. */
int mthp_proc_read_starttime(const struct mthp_host *h, pid_t pid, uint64_t *starttime);

struct mthp_mapping {
        uint64_t start, end, offset, inode;
        char perms[5];
        unsigned dev_major, dev_minor;
        const char *name;             /* points into the line; "" if none */
        size_t name_len;
};
/* One /proc/PID/maps line (len bytes, no newline needed). 0 or -EBADMSG. */
int mthp_proc_parse_maps_line(const char *line, size_t len, struct mthp_mapping *m);
/* MTHP_ANON (private anonymous: no name, [heap], [stack], [anon:*]),
 * MTHP_SHMEM (shared anonymous, SysV, memfd, /dev/shm, [anon_shmem:*]), or
 * -ENOENT for anything else (files, PROT_NONE reservations, [vdso]...). */
int mthp_proc_mapping_kind(const struct mthp_mapping *m);

/* The VmFlags that decide whether a mapping may get large folios (smaps'
 * "VmFlags: rd wr mr mw me ac hg" line): hg = MADV_HUGEPAGE (large folios
 * under "madvise" values too), nh = MADV_NOHUGEPAGE (none, whatever the
 * knobs say). */
#define MTHP_VMA_HUGEPAGE 1u
#define MTHP_VMA_NOHUGEPAGE 2u
/* The MTHP_VMA_* bits of a VmFlags value (the text after "VmFlags:", len
 * bytes, two-letter words separated by blanks). */
unsigned mthp_proc_parse_vmflags(const char *value, size_t len);
