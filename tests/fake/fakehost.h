/* SPDX-License-Identifier: MIT */
#pragma once

/* A fake host tree for hermetic tests: the /sys and /proc files mthpd reads,
 * laid out and formatted like Linux 6.18 (copied from a real x86-64 host),
 * under any directory. Point libmthp at it with mthp_host_open(dir).
 *
 * Plain files cannot say EINVAL, so kernel write semantics come from
 * fakesysfs (fakesysfs.c): an interposer of write(2) and pwrite(2) that,
 * for selection files ("always [madvise] never") below a fake tree, accepts
 * only offered values, enforces the shmem inherit/force rules, and moves the
 * bracket; other attributes store what is written, read-only ones fail with
 * EACCES (root included); any of them fails on request (<file>.fail holding
 * an errno name). Files outside /sys and /proc are left alone. Unit tests
 * link it statically (fakehost_dep); other binaries get it with
 * LD_PRELOAD=libfakesysfs.so.
 *
 * It sees write(2)/pwrite(2) calls made through the PLT, which is how
 * libmthp writes; stdio (fprintf to a knob, a shell's echo) goes through
 * glibc internals it cannot see, so shell tests use `fakehost write`.
 * Writers may open knobs with O_TRUNC (libmthp does; sysfs ignores it): the
 * fake keeps the last good content of every /sys and /proc file in a shadow
 * tree (FAKEHOST_SHADOW) and puts it back when a write does not replace it.
 * Reads of a removed file fail with ENODEV, as kernfs does (a plain file
 * would keep serving its last content to an open fd).
 *
 * Every function returns 0 (or a count) on success and a negative errno on
 * failure. "dir" is the tree root; "path" is a host path ("/proc/vmstat").
 * Files are always updated in place (pwrite + ftruncate on the same inode),
 * never by rename: the sampler keeps fds open and preads them. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKEHOST_MARKER ".mthp-fakehost"       /* file at the tree root */
#define FAKEHOST_SHADOW ".mthp-fakehost.d"     /* last good content of /sys and /proc files */
#define FAKEHOST_THP "/sys/kernel/mm/transparent_hugepage"
#define FAKEHOST_PMD_KB 2048u

enum fakehost_cg_layout {
        FAKEHOST_CG_V2,      /* cgroup2 at /sys/fs/cgroup, memory controller enabled */
        FAKEHOST_CG_HYBRID,  /* v1 memory at /sys/fs/cgroup/memory + cgroup2 at /sys/fs/cgroup/unified */
        FAKEHOST_CG_V1,      /* v1 memory only */
        FAKEHOST_CG_NONE,    /* no cgroup mounts */
};

/* Kernel profiles: what the THP sysfs tree of each looks like (sizes, which
 * per-size knobs and stats exist, base page and PMD size). Modelled on the
 * kernels' Documentation/admin-guide/mm/transhuge.rst and the commits that
 * added each file; mthpd must probe all of it, never infer it from a version.
 *   6.1        no per-size knobs at all (Debian 12's stock kernel): the
 *              global knobs and khugepaged only
 *   6.8        per-size anon knobs only (orders 2..PMD), stats anon_fault_*,
 *              anon_swpout*; no shrink_underused
 *   6.11       per-size shmem_enabled too; stats without shmem_* counters
 *   6.18       this machine (default)
 *   7.2        6.18 + khugepaged mTHP collapse: per-size stats/collapse_*
 *   arm64-16k  6.18 with 16K base pages: PMD 32M, sizes 32K (shmem) .. 32M
 *   arm64-64k  6.18 with 64K base pages: PMD 512M, sizes 128K (shmem) .. 512M */
enum fakehost_kernel {
        FAKEHOST_K_6_18,
        FAKEHOST_K_6_8,
        FAKEHOST_K_6_11,
        FAKEHOST_K_7_2,
        FAKEHOST_K_ARM64_16K,
        FAKEHOST_K_ARM64_64K,
        FAKEHOST_K_6_1,
        _FAKEHOST_K_MAX,
};
const char *fakehost_kernel_name(enum fakehost_kernel k);
int fakehost_parse_kernel(const char *s, enum fakehost_kernel *k);

struct fakehost_opts {
        enum fakehost_cg_layout cg_layout;   /* 0 = v2 */
        enum fakehost_kernel kernel;         /* 0 = 6.18 */
        bool no_psi;                         /* no /proc/pressure (CONFIG_PSI=n) */
        bool task_delayacct;                 /* kernel.task_delayacct = 1 (default 0, as here) */
};

const char *fakehost_layout_name(enum fakehost_cg_layout l);
int fakehost_parse_layout(const char *s, enum fakehost_cg_layout *l);

/* Build the tree under dir (created if missing). opts may be NULL. */
int fakehost_create(const char *dir, const struct fakehost_opts *opts);
/* mkdtemp under $TMPDIR (else /dev/shm, else /tmp) and create a tree there. */
int fakehost_create_temp(const struct fakehost_opts *opts, char *dir, size_t size);
/* Remove the whole tree. Refuses (-EPERM) a directory without the marker. */
int fakehost_remove(const char *dir);

/* dir + path */
int fakehost_path(const char *dir, const char *path, char *buf, size_t size);
/* Raw file access, bypassing kernel semantics (test setup); writing a /sys
 * or /proc file also records it as its last good content. Missing parent
 * directories are created. */
int fakehost_write_file(const char *dir, const char *path, const char *content);
int fakehost_read_file(const char *dir, const char *path, char *buf, size_t size);
int fakehost_remove_file(const char *dir, const char *path);

/* Counters in "key value" files (/proc/vmstat, memory.stat) and
 * "Key:   value kB" files (/proc/meminfo); the line keeps its layout.
 * -ENOENT if the file or the key does not exist. Values clamp at 0. */
int fakehost_add_counter(const char *dir, const char *file, const char *key, int64_t delta);
int fakehost_set_counter(const char *dir, const char *file, const char *key, uint64_t value);
int fakehost_get_counter(const char *dir, const char *file, const char *key, uint64_t *value);
/* hugepages-<kb>kB/stats/<stat>; set creates the file if it is missing. */
int fakehost_set_size_stat(const char *dir, unsigned kb, const char *stat, uint64_t value);
int fakehost_add_size_stat(const char *dir, unsigned kb, const char *stat, int64_t delta);
int fakehost_get_size_stat(const char *dir, unsigned kb, const char *stat, uint64_t *value);
int fakehost_set_meminfo(const char *dir, const char *key, uint64_t kb);
/* /proc/pressure/memory "some" line; -ENOENT on a tree without PSI. */
int fakehost_set_psi(const char *dir, double some_avg10, uint64_t some_total_usec);

/* Knobs are named by host path ("/sys/kernel/mm/..."), by path relative to
 * the THP directory ("hugepages-64kB/enabled", "defrag"), or by mthp id
 * ("64K/anon", "8K/shmem", "2M/shmem", "global/enabled"). */
int fakehost_knob_path(const char *knob, char *buf, size_t size);
/* The selected value. */
int fakehost_knob_read(const char *dir, const char *knob, char *value, size_t size);
/* Select an offered value without kernel checks (test setup); -EINVAL if
 * the file does not offer it. */
int fakehost_knob_set(const char *dir, const char *knob, const char *value);
/* Write like another process would (echo VALUE > knob): kernel semantics. */
int fakehost_knob_write(const char *dir, const char *knob, const char *value);
/* Make writes to a knob fail with errname ("EINVAL", "EBUSY", "EACCES",
 * "EIO", "EPERM", "EROFS", "ENODEV"); NULL clears it. */
int fakehost_knob_fail(const char *dir, const char *knob, const char *errname);

/* A child cgroup NAME (may be nested: "a/b") in the tree's layout, with the
 * memory files of that layout; memdir gets the host path of its memory
 * directory. -EOPNOTSUPP on a tree without cgroups. */
int fakehost_add_cgroup(const char *dir, const char *name, char *memdir, size_t size);
/* Remove cgroup NAME from every hierarchy of the tree (rmdir of a real
 * cgroup): fds still open on its files then read ENODEV. -ENOENT if it is in
 * none of them. */
int fakehost_remove_cgroup(const char *dir, const char *name);

/* Test hook, called for every write fakesysfs accepts, before the file
 * changes: return 0 to go on, a negative errno to fail the write with it,
 * or 1 to report success but leave the value (a kernel that ignores it). */
typedef int (*fakehost_write_hook)(void *user, const char *host_path, const char *value);
void fakehost_set_write_hook(fakehost_write_hook hook, void *user);

/* Selection files, as the kernel prints them. */
#define FAKEHOST_SEL_MAX 16
#define FAKEHOST_WORD_MAX 32
struct fakehost_sel {
        unsigned n;
        int selected;
        char word[FAKEHOST_SEL_MAX][FAKEHOST_WORD_MAX];
};
int fakehost_sel_parse(const char *text, struct fakehost_sel *s);
int fakehost_sel_format(const struct fakehost_sel *s, char *buf, size_t size);
int fakehost_sel_find(const struct fakehost_sel *s, const char *word);

/* errno <-> "EINVAL" */
int fakehost_errno_from_name(const char *name);
const char *fakehost_errno_name(int err);

/* The kernel side of a write(2)/read(2) on a file, used by the fakesysfs
 * interposer. path is the fd's path as /proc/self/fd shows it (possibly
 * with " (deleted)"). Sets *handled = false for files outside fake trees
 * and plain files the kernel would just store; otherwise returns the byte
 * count or -errno. */
long fakehost_sysfs_write(const char *path, const void *buf, size_t n, bool *handled);
/* -ENODEV for an fd on a removed file below a fake tree (kernfs does that;
 * a plain file would keep serving stale data), else 0. */
int fakehost_sysfs_read_check(const char *path);
