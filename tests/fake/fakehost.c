/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fakehost.h"
#include "kernel-text.h"

#define TEXT_MAX 65536   /* largest file the fake handles (vmstat is ~5 kB) */

/* All file I/O here goes straight to the kernel: the fakesysfs interposer
 * must not see the fake's own bookkeeping writes. */
static ssize_t raw_pread(int fd, void *buf, size_t n, off_t off) {
        long r;
        do
                r = syscall(SYS_pread64, fd, buf, n, off);
        while (r < 0 && errno == EINTR);
        return (ssize_t) r;
}

static ssize_t raw_pwrite(int fd, const void *buf, size_t n, off_t off) {
        long r;
        do
                r = syscall(SYS_pwrite64, fd, buf, n, off);
        while (r < 0 && errno == EINTR);
        return (ssize_t) r;
}

static int mkdir_p(const char *path, mode_t mode) {
        if (mkdir(path, mode) == 0 || errno == EEXIST)
                return 0;
        if (errno != ENOENT)
                return -errno;
        char parent[PATH_MAX];
        if (snprintf(parent, sizeof(parent), "%s", path) >= (int) sizeof(parent))
                return -ENAMETOOLONG;
        char *slash = strrchr(parent, '/');
        if (!slash || slash == parent)
                return -ENOENT;
        *slash = 0;
        int r = mkdir_p(parent, mode);
        if (r < 0)
                return r;
        return mkdir(path, mode) == 0 || errno == EEXIST ? 0 : -errno;
}

static int mkdir_parent(const char *file) {
        char tmp[PATH_MAX];
        if (snprintf(tmp, sizeof(tmp), "%s", file) >= (int) sizeof(tmp))
                return -ENAMETOOLONG;
        char *slash = strrchr(tmp, '/');
        if (!slash || slash == tmp)
                return 0;
        *slash = 0;
        return mkdir_p(tmp, 0755);
}

/* Replace the content of file in place, creating it with mode if missing.
 * The new content is written over the old before the tail is cut, so a
 * reader never sees an empty counter file while it grows. */
static int put_file(const char *file, const char *content, mode_t mode) {
        mode_t set_mode = 0;
        struct stat st;
        int fd = open(file, O_WRONLY | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                (void) mkdir_parent(file);
                fd = open(file, O_WRONLY | O_CREAT | O_CLOEXEC, mode);
                set_mode = mode;        /* not what the umask left */
        } else if (fd < 0 && errno == EACCES && stat(file, &st) == 0 && chmod(file, st.st_mode | 0200) == 0) {
                fd = open(file, O_WRONLY | O_CLOEXEC);  /* read-only file, not root */
                set_mode = st.st_mode & 07777;
        }
        if (fd < 0)
                return -errno;
        size_t len = strlen(content);
        int r = 0;
        errno = 0;
        if (raw_pwrite(fd, content, len, 0) != (ssize_t) len || ftruncate(fd, (off_t) len) < 0)
                r = errno ? -errno : -EIO;
        else if (set_mode && fchmod(fd, set_mode) < 0)
                r = -errno;
        close(fd);
        return r;
}

static int get_file(const char *file, char *buf, size_t size) {
        if (size == 0)
                return -ENOBUFS;
        int fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        size_t len = 0;
        while (len < size - 1) {
                ssize_t n = raw_pread(fd, buf + len, size - 1 - len, (off_t) len);
                if (n < 0) {
                        int r = -errno;
                        close(fd);
                        return r;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        close(fd);
        buf[len] = 0;
        return (int) len;
}

int fakehost_path(const char *dir, const char *path, char *buf, size_t size) {
        while (*path == '/')
                path++;
        int n = snprintf(buf, size, "%s/%s", dir, path);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static int shadow_path(const char *dir, const char *path, char *buf, size_t size) {
        while (*path == '/')
                path++;
        int n = snprintf(buf, size, "%s/" FAKEHOST_SHADOW "/%s", dir, path);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

const char *fakehost_layout_name(enum fakehost_cg_layout l) {
        static const char *const n[] = { "v2", "hybrid", "v1", "none" };
        return (unsigned) l < 4 ? n[l] : "?";
}

int fakehost_parse_layout(const char *s, enum fakehost_cg_layout *l) {
        for (int i = FAKEHOST_CG_V2; i <= FAKEHOST_CG_NONE; i++)
                if (strcmp(s, fakehost_layout_name((enum fakehost_cg_layout) i)) == 0) {
                        *l = (enum fakehost_cg_layout) i;
                        return 0;
                }
        return -EINVAL;
}

/* ---- selection files ---- */

static bool is_word_char(char c) {
        return isalnum((unsigned char) c) || c == '_' || c == '+' || c == '-';
}

int fakehost_sel_parse(const char *text, struct fakehost_sel *s) {
        const char *p = text;
        memset(s, 0, sizeof(*s));
        s->selected = -1;
        for (;;) {
                while (*p == ' ' || *p == '\t' || *p == '\n')
                        p++;
                if (!*p)
                        break;
                bool sel = *p == '[';
                if (sel)
                        p++;
                size_t len = 0;
                while (is_word_char(p[len]))
                        len++;
                if (len == 0 || len >= FAKEHOST_WORD_MAX || s->n >= FAKEHOST_SEL_MAX)
                        return -EBADMSG;
                memcpy(s->word[s->n], p, len);
                s->word[s->n][len] = 0;
                p += len;
                if (sel) {
                        if (*p != ']' || s->selected >= 0)
                                return -EBADMSG;
                        p++;
                        s->selected = (int) s->n;
                }
                if (*p && *p != ' ' && *p != '\t' && *p != '\n')
                        return -EBADMSG;
                s->n++;
        }
        return s->selected >= 0 ? 0 : -EBADMSG;
}

int fakehost_sel_format(const struct fakehost_sel *s, char *buf, size_t size) {
        size_t off = 0;
        for (unsigned i = 0; i < s->n; i++) {
                bool sel = (int) i == s->selected;
                int n = snprintf(buf + off, size - off, "%s%s%s%s", i ? " " : "", sel ? "[" : "", s->word[i],
                                 sel ? "]" : "");
                if (n < 0 || (size_t) n >= size - off)
                        return -ENOBUFS;
                off += (size_t) n;
        }
        if (off + 2 > size)
                return -ENOBUFS;
        buf[off++] = '\n';
        buf[off] = 0;
        return 0;
}

int fakehost_sel_find(const struct fakehost_sel *s, const char *word) {
        for (unsigned i = 0; i < s->n; i++)
                if (strcmp(s->word[i], word) == 0)
                        return (int) i;
        return -ENOENT;
}

/* Kernel files are what lies below /sys and /proc of a tree; anything else
 * there (the fake's bookkeeping, a state directory) is an ordinary file. */
static bool is_kernel_path(const char *host) {
        size_t len = strlen(host);
        if (len > 5 && strcmp(host + len - 5, ".fail") == 0)
                return false;
        return strncmp(host, "/sys/", 5) == 0 || strncmp(host, "/proc/", 6) == 0;
}

/* Content of a kernel file: the file itself or, when a writer opened it
 * with O_TRUNC (libmthp and shells do; sysfs ignores it, a plain file does
 * not), its last good content, kept in the shadow tree. *truncated tells
 * the caller to put that content back unless the write replaces it. */
static int get_kfile(const char *root, const char *host, char *buf, size_t size, bool *truncated) {
        char file[PATH_MAX];
        int r = fakehost_path(root, host, file, sizeof(file));
        if (r < 0)
                return r;
        r = get_file(file, buf, size);
        if (r < 0)
                return r;
        if (truncated)
                *truncated = r == 0;
        if (r > 0 || shadow_path(root, host, file, sizeof(file)) < 0)
                return r;
        r = get_file(file, buf, size);
        if (r < 0)
                buf[0] = 0;
        return r < 0 ? 0 : r;
}

/* Write a file of the tree in place; kernel files also update the shadow. */
static int put(const char *root, const char *host, const char *content, mode_t mode) {
        char file[PATH_MAX];
        int r = fakehost_path(root, host, file, sizeof(file));
        if (r == 0)
                r = put_file(file, content, mode);
        if (r == 0 && is_kernel_path(host) && (r = shadow_path(root, host, file, sizeof(file))) == 0)
                r = put_file(file, content, 0644);
        return r;
}

static int read_sel(const char *root, const char *host, struct fakehost_sel *s) {
        char buf[512];
        int r = get_kfile(root, host, buf, sizeof(buf), NULL);
        return r < 0 ? r : fakehost_sel_parse(buf, s);
}

static int write_sel(const char *root, const char *host, const struct fakehost_sel *s) {
        char text[FAKEHOST_SEL_MAX * (FAKEHOST_WORD_MAX + 3) + 2];
        int r = fakehost_sel_format(s, text, sizeof(text));
        return r < 0 ? r : put(root, host, text, 0644);
}

/* ---- tree ---- */

static int put_dir(const char *dir, const char *path) {
        char d[PATH_MAX];
        int r = fakehost_path(dir, path, d, sizeof(d));
        return r < 0 ? r : mkdir_p(d, 0755);
}

/* A copy of a "key value" text with every value 0 (a fresh cgroup). */
static char *zero_values(const char *text) {
        char *out = malloc(strlen(text) + 1), *o = out;
        if (!out)
                return NULL;
        for (const char *p = text; *p;) {
                const char *sp = strchr(p, ' '), *eol = strchrnul(p, '\n');
                if (sp && sp < eol) {
                        memcpy(o, p, (size_t) (sp - p) + 1);
                        o += sp - p + 1;
                        *o++ = '0';
                } else {
                        memcpy(o, p, (size_t) (eol - p));
                        o += eol - p;
                }
                if (*eol)
                        *o++ = '\n';
                p = *eol ? eol + 1 : eol;
        }
        *o = 0;
        return out;
}

struct kernel_profile {
        const char *name, *release;
        unsigned page_kb, pmd_kb;
        bool order1;            /* an order-1 directory (shmem only) */
        bool shmem_sizes;       /* per-size shmem_enabled (6.11+) */
        bool shrink_underused;  /* 6.12+ */
        const char *const *stats;
        bool no_sizes;          /* no hugepages-<N>kB directory (before 6.8) */
};

/* hugepages-<N>kB/stats of 6.18: order 1 has no anon folios, so no anon_*
 * counters, nr_anon* or split_deferred there. */
static const char *const stats_6_18[] = {
        "anon_fault_alloc", "anon_fault_declined", "anon_fault_fallback", "anon_fault_fallback_charge",
        "nr_anon", "nr_anon_partially_mapped", "shmem_alloc", "shmem_fallback", "shmem_fallback_charge",
        "split", "split_deferred", "split_failed", "swpin", "swpin_fallback", "swpin_fallback_charge",
        "swpout", "swpout_fallback", "zswpout", NULL,
};
static const char *const stats_6_8[] = {
        "anon_fault_alloc", "anon_fault_fallback", "anon_fault_fallback_charge", "anon_swpout",
        "anon_swpout_fallback", NULL,
};
static const char *const stats_6_11[] = {
        "anon_fault_alloc", "anon_fault_fallback", "anon_fault_fallback_charge", "split", "split_deferred",
        "split_failed", "swpout", "swpout_fallback", NULL,
};
static const char *const stats_7_2[] = {
        "anon_fault_alloc", "anon_fault_declined", "anon_fault_fallback", "anon_fault_fallback_charge",
        "collapse_alloc", "collapse_alloc_failed", "collapse_exceed_none_pte", "collapse_exceed_shared_pte",
        "collapse_exceed_swap_pte", "nr_anon", "nr_anon_partially_mapped", "shmem_alloc", "shmem_fallback",
        "shmem_fallback_charge", "split", "split_deferred", "split_failed", "swpin", "swpin_fallback",
        "swpin_fallback_charge", "swpout", "swpout_fallback", "zswpout", NULL,
};

static const struct kernel_profile profiles[_FAKEHOST_K_MAX] = {
        [FAKEHOST_K_6_18] = { "6.18", "6.18.0", 4, 2048, true, true, true, stats_6_18 },
        [FAKEHOST_K_6_8] = { "6.8", "6.8.0", 4, 2048, false, false, false, stats_6_8 },
        [FAKEHOST_K_6_11] = { "6.11", "6.11.0", 4, 2048, false, true, false, stats_6_11 },
        [FAKEHOST_K_7_2] = { "7.2", "7.2.0", 4, 2048, true, true, true, stats_7_2 },
        [FAKEHOST_K_ARM64_16K] = { "arm64-16k", "6.18.0", 16, 32768, true, true, true, stats_6_18 },
        [FAKEHOST_K_ARM64_64K] = { "arm64-64k", "6.18.0", 64, 524288, true, true, true, stats_6_18 },
        [FAKEHOST_K_6_1] = { "6.1", "6.1.0-28-amd64", 4, 2048, false, false, false, stats_6_8, true },
};

const char *fakehost_kernel_name(enum fakehost_kernel k) {
        return (unsigned) k < _FAKEHOST_K_MAX ? profiles[k].name : "?";
}

int fakehost_parse_kernel(const char *s, enum fakehost_kernel *k) {
        for (int i = 0; i < _FAKEHOST_K_MAX; i++)
                if (strcmp(s, profiles[i].name) == 0) {
                        *k = (enum fakehost_kernel) i;
                        return 0;
                }
        return -EINVAL;
}

static bool stat_is_anon_only(const char *name) {
        return strncmp(name, "anon_", 5) == 0 || strncmp(name, "nr_anon", 7) == 0 ||
               strcmp(name, "split_deferred") == 0 || strncmp(name, "collapse_", 9) == 0;
}

static const char psi_zero[] = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
                               "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";

static int create_thp(const char *dir, const struct kernel_profile *kp) {
        char p[PATH_MAX], v[64];
        int r;
#define PUT(path, text, mode) \
        do { if ((r = put(dir, path, text, mode)) < 0) return r; } while (0)
        PUT(FAKEHOST_THP "/enabled", "always [madvise] never\n", 0644);
        PUT(FAKEHOST_THP "/defrag", "always defer defer+madvise [madvise] never\n", 0644);
        PUT(FAKEHOST_THP "/shmem_enabled", "always within_size advise [never] deny force\n", 0644);
        snprintf(v, sizeof(v), "%llu\n", (unsigned long long) kp->pmd_kb * 1024);
        PUT(FAKEHOST_THP "/hpage_pmd_size", v, 0444);
        PUT(FAKEHOST_THP "/use_zero_page", "1\n", 0644);
        if (kp->shrink_underused)
                PUT(FAKEHOST_THP "/shrink_underused", "1\n", 0644);
        unsigned ptes = kp->pmd_kb / kp->page_kb;
        char none[16], shared[16], swap[16], scan[16];
        snprintf(none, sizeof(none), "%u\n", ptes - 1);
        snprintf(shared, sizeof(shared), "%u\n", ptes / 2);
        snprintf(swap, sizeof(swap), "%u\n", ptes / 8);
        snprintf(scan, sizeof(scan), "%u\n", ptes * 8);
        const char *const khugepaged[][2] = {
                { "alloc_sleep_millisecs", "60000\n" }, { "defrag", "1\n" }, { "full_scans", "0\n" },
                { "max_ptes_none", none }, { "max_ptes_shared", shared }, { "max_ptes_swap", swap },
                { "pages_collapsed", "0\n" }, { "pages_to_scan", scan }, { "scan_sleep_millisecs", "10000\n" },
        };
        for (size_t i = 0; i < sizeof(khugepaged) / sizeof(khugepaged[0]); i++) {
                snprintf(p, sizeof(p), FAKEHOST_THP "/khugepaged/%s", khugepaged[i][0]);
                PUT(p, khugepaged[i][1], 0644);
        }
        for (unsigned kb = 2 * kp->page_kb; !kp->no_sizes && kb <= kp->pmd_kb; kb *= 2) {
                bool pmd = kb == kp->pmd_kb, order1 = kb == 2 * kp->page_kb;
                if (order1 && !kp->order1)
                        continue;
                if (!order1) {  /* anon folios start at order 2 */
                        snprintf(p, sizeof(p), FAKEHOST_THP "/hugepages-%ukB/enabled", kb);
                        PUT(p, pmd ? "always [inherit] madvise never\n" : "always inherit madvise [never]\n", 0644);
                }
                if (kp->shmem_sizes) {
                        snprintf(p, sizeof(p), FAKEHOST_THP "/hugepages-%ukB/shmem_enabled", kb);
                        PUT(p, pmd ? "always [inherit] within_size advise never\n"
                                   : "always inherit within_size advise [never]\n", 0644);
                }
                for (size_t j = 0; kp->stats[j]; j++) {
                        if (order1 && stat_is_anon_only(kp->stats[j]))
                                continue;
                        snprintf(p, sizeof(p), FAKEHOST_THP "/hugepages-%ukB/stats/%s", kb, kp->stats[j]);
                        PUT(p, "0\n", 0444);
                }
        }
        snprintf(p, sizeof(p), "%s\n", kp->release);
        PUT("/proc/sys/kernel/osrelease", p, 0444);
        PUT("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz root=/dev/vda1 ro quiet\n", 0444);
        return 0;
}

static int create_cgroups(const char *dir, const struct fakehost_opts *o) {
        int r;
        switch (o->cg_layout) {
        case FAKEHOST_CG_V2:
                PUT("/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n", 0444);
                PUT("/sys/fs/cgroup/cgroup.subtree_control", "cpu io memory pids\n", 0644);
                PUT("/sys/fs/cgroup/cgroup.procs", "1\n", 0644);
                PUT("/sys/fs/cgroup/cgroup.max.depth", "max\n", 0644);
                PUT("/sys/fs/cgroup/memory.stat", memcg_v2_stat_text, 0444);
                PUT("/sys/fs/cgroup/memory.reclaim", "", 0200);
                if (!o->no_psi) {
                        PUT("/sys/fs/cgroup/memory.pressure", psi_zero, 0644);
                        PUT("/sys/fs/cgroup/cgroup.pressure", "1\n", 0644);
                }
                return 0;
        case FAKEHOST_CG_HYBRID:
                /* like this VM: systemd's hybrid mode; cgroup2 carries only
                 * what no v1 hierarchy took (hugetlb here) and PSI */
                PUT("/sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n", 0444);
                PUT("/sys/fs/cgroup/unified/cgroup.subtree_control", "", 0644);
                PUT("/sys/fs/cgroup/unified/cgroup.procs", "1\n", 0644);
                if (!o->no_psi)
                        PUT("/sys/fs/cgroup/unified/memory.pressure", psi_zero, 0644);
                PUT("/sys/fs/cgroup/systemd/cgroup.procs", "1\n", 0644);
                __attribute__((fallthrough)); /* plus the v1 memory hierarchy */
        case FAKEHOST_CG_V1:
                PUT("/sys/fs/cgroup/memory/memory.stat", memcg_v1_stat_text, 0444);
                PUT("/sys/fs/cgroup/memory/memory.usage_in_bytes", "243732480\n", 0444);
                PUT("/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n", 0644);
                PUT("/sys/fs/cgroup/memory/memory.use_hierarchy", "1\n", 0644);
                PUT("/sys/fs/cgroup/memory/cgroup.procs", "1\n", 0644);
                PUT("/sys/fs/cgroup/memory/tasks", "1\n", 0644);
                return 0;
        case FAKEHOST_CG_NONE:
                return put_dir(dir, "/sys/fs/cgroup");
        }
        return -EINVAL;
}

int fakehost_create(const char *dir, const struct fakehost_opts *opts) {
        static const struct fakehost_opts defaults = { 0 };
        const struct fakehost_opts *o = opts ? opts : &defaults;
        char marker[PATH_MAX + 128];
        int r;

        if ((unsigned) o->cg_layout > FAKEHOST_CG_NONE || (unsigned) o->kernel >= _FAKEHOST_K_MAX)
                return -EINVAL;
        r = mkdir_p(dir, 0755);
        if (r < 0)
                return r;
        snprintf(marker, sizeof(marker), "mthp fake host tree (tests/fake)\nlayout=%s\npsi=%d\nkernel=%s\n",
                 fakehost_layout_name(o->cg_layout), !o->no_psi, fakehost_kernel_name(o->kernel));
        PUT("/" FAKEHOST_MARKER, marker, 0644);
        r = create_thp(dir, &profiles[o->kernel]);
        if (r < 0)
                return r;
        PUT("/proc/vmstat", vmstat_text, 0444);
        PUT("/proc/meminfo", meminfo_text, 0444);
        PUT("/proc/sys/kernel/task_delayacct", o->task_delayacct ? "1\n" : "0\n", 0644);
        if (!o->no_psi) {
                PUT("/proc/pressure/memory", psi_zero, 0644);
                PUT("/proc/pressure/io", psi_zero, 0644);
                PUT("/proc/pressure/cpu", psi_zero, 0644);
        }
        return create_cgroups(dir, o);
}
#undef PUT

int fakehost_create_temp(const struct fakehost_opts *opts, char *dir, size_t size) {
        /* tmpfs when there is one: a tree is ~400 files, and creating them on
         * a journaling disk file system costs more than the tests */
        const char *tmp = getenv("TMPDIR");
        struct stat st;
        if (!tmp || !*tmp)
                tmp = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm"
                                                                                                     : "/tmp";
        int n = snprintf(dir, size, "%s/mthp-fake-XXXXXX", tmp);
        if (n < 0 || (size_t) n >= size)
                return -ENAMETOOLONG;
        if (!mkdtemp(dir))
                return -errno;
        int r = fakehost_create(dir, opts);
        if (r < 0)
                (void) fakehost_remove(dir);
        return r;
}

static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) ftw;
        return (type == FTW_DP ? rmdir(path) : unlink(path)) < 0 ? -1 : 0;
}

int fakehost_remove(const char *dir) {
        char marker[PATH_MAX];
        int r = fakehost_path(dir, FAKEHOST_MARKER, marker, sizeof(marker));
        if (r < 0)
                return r;
        if (access(marker, F_OK) < 0)
                return errno == ENOENT ? -EPERM : -errno;
        return nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

int fakehost_write_file(const char *dir, const char *path, const char *content) {
        return put(dir, path, content, 0644);
}

int fakehost_read_file(const char *dir, const char *path, char *buf, size_t size) {
        char file[PATH_MAX];
        int r = fakehost_path(dir, path, file, sizeof(file));
        return r < 0 ? r : get_file(file, buf, size);
}

int fakehost_remove_file(const char *dir, const char *path) {
        char file[PATH_MAX];
        int r = fakehost_path(dir, path, file, sizeof(file));
        if (r < 0)
                return r;
        if (unlink(file) < 0)
                return -errno;
        if (shadow_path(dir, path, file, sizeof(file)) == 0)
                (void) unlink(file);
        return 0;
}

/* ---- counters ---- */

/* Find key's line, apply the change, keep the line's layout (meminfo right-
 * aligns its numbers). Returns the new value in *out. */
static int kv_update(const char *dir, const char *file, const char *key, bool write, bool add, int64_t delta,
                     uint64_t value, uint64_t *out) {
        char path[PATH_MAX];
        size_t klen = strlen(key);
        int r = fakehost_path(dir, file, path, sizeof(path));
        if (r < 0)
                return r;
        char *text = malloc(TEXT_MAX), *res = NULL;
        if (!text)
                return -ENOMEM;
        r = get_file(path, text, TEXT_MAX);
        if (r < 0)
                goto out;
        r = -ENOENT;
        for (char *line = text; *line;) {
                char *eol = strchrnul(line, '\n');
                if (strncmp(line, key, klen) == 0 && (line[klen] == ':' || line[klen] == ' ' || line[klen] == '\t')) {
                        char *sep = line + klen, *num = sep;
                        while (*num == ':' || *num == ' ' || *num == '\t')
                                num++;
                        char *end;
                        uint64_t old = strtoull(num, &end, 10);
                        if (end == num) {
                                r = -EBADMSG;
                                goto out;
                        }
                        uint64_t v = value;
                        if (add)
                                v = delta < 0 && (uint64_t) -delta > old ? 0 : old + (uint64_t) delta;
                        if (out)
                                *out = write ? v : old;
                        if (!write) {
                                r = 0;
                                goto out;
                        }
                        char field[64];
                        if (sep[0] == ':')
                                /* meminfo: "Key:" padded to 16 columns, value %8 */
                                snprintf(field, sizeof(field), "%-*s%8llu", 16 - (int) klen, ":",
                                         (unsigned long long) v);
                        else
                                snprintf(field, sizeof(field), "%.*s%llu", (int) (num - sep), sep,
                                         (unsigned long long) v);
                        res = malloc(TEXT_MAX + 64);
                        if (!res) {
                                r = -ENOMEM;
                                goto out;
                        }
                        int n = snprintf(res, TEXT_MAX + 64, "%.*s%s%s", (int) (sep - text), text, field, end);
                        r = n >= TEXT_MAX ? -E2BIG : put(dir, file, res, 0444);
                        goto out;
                }
                line = *eol ? eol + 1 : eol;
        }
out:
        free(res);
        free(text);
        return r;
}

int fakehost_add_counter(const char *dir, const char *file, const char *key, int64_t delta) {
        return kv_update(dir, file, key, true, true, delta, 0, NULL);
}

int fakehost_set_counter(const char *dir, const char *file, const char *key, uint64_t value) {
        return kv_update(dir, file, key, true, false, 0, value, NULL);
}

int fakehost_get_counter(const char *dir, const char *file, const char *key, uint64_t *value) {
        return kv_update(dir, file, key, false, false, 0, 0, value);
}

static int size_stat_path(unsigned kb, const char *stat, char *buf, size_t size) {
        int n = snprintf(buf, size, FAKEHOST_THP "/hugepages-%ukB/stats/%s", kb, stat);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int fakehost_set_size_stat(const char *dir, unsigned kb, const char *stat, uint64_t value) {
        char p[PATH_MAX], v[32];
        int r = size_stat_path(kb, stat, p, sizeof(p));
        if (r < 0)
                return r;
        snprintf(v, sizeof(v), "%llu\n", (unsigned long long) value);
        return put(dir, p, v, 0444);
}

int fakehost_get_size_stat(const char *dir, unsigned kb, const char *stat, uint64_t *value) {
        char p[PATH_MAX], v[32], *end;
        int r = size_stat_path(kb, stat, p, sizeof(p));
        if (r == 0)
                r = fakehost_read_file(dir, p, v, sizeof(v));
        if (r < 0)
                return r;
        *value = strtoull(v, &end, 10);
        return end == v ? -EBADMSG : 0;
}

int fakehost_add_size_stat(const char *dir, unsigned kb, const char *stat, int64_t delta) {
        uint64_t v;
        int r = fakehost_get_size_stat(dir, kb, stat, &v);
        if (r < 0)
                return r;
        v = delta < 0 && (uint64_t) -delta > v ? 0 : v + (uint64_t) delta;
        return fakehost_set_size_stat(dir, kb, stat, v);
}

int fakehost_set_meminfo(const char *dir, const char *key, uint64_t kb) {
        return fakehost_set_counter(dir, "/proc/meminfo", key, kb);
}

int fakehost_set_psi(const char *dir, double some_avg10, uint64_t some_total_usec) {
        char text[512], out[512];
        double a10, a60 = 0, a300 = 0, f10 = 0, f60 = 0, f300 = 0;
        unsigned long long total, ftotal = 0;
        int r = fakehost_read_file(dir, "/proc/pressure/memory", text, sizeof(text));
        if (r < 0)
                return r;
        const char *full = strstr(text, "full ");
        if (sscanf(text, "some avg10=%lf avg60=%lf avg300=%lf total=%llu", &a10, &a60, &a300, &total) != 4 ||
            (full && sscanf(full, "full avg10=%lf avg60=%lf avg300=%lf total=%llu", &f10, &f60, &f300, &ftotal) != 4))
                return -EBADMSG;
        snprintf(out, sizeof(out),
                 "some avg10=%.2f avg60=%.2f avg300=%.2f total=%llu\nfull avg10=%.2f avg60=%.2f avg300=%.2f total=%llu\n",
                 some_avg10, a60, a300, (unsigned long long) some_total_usec, f10, f60, f300, ftotal);
        return put(dir, "/proc/pressure/memory", out, 0644);
}

/* ---- knobs ---- */

int fakehost_knob_path(const char *knob, char *buf, size_t size) {
        int n;
        const char *slash = strchr(knob, '/');
        if (knob[0] == '/')
                n = snprintf(buf, size, "%s", knob);
        else if (strncmp(knob, "global/", 7) == 0)
                n = snprintf(buf, size, FAKEHOST_THP "/%s", knob + 7);
        else if (slash && (strcmp(slash, "/anon") == 0 || strcmp(slash, "/shmem") == 0)) {
                char *end;
                unsigned long v = strtoul(knob, &end, 10);
                unsigned long mult = *end == 'M' ? 1024 : *end == 'G' ? 1024 * 1024 : *end == 'K' ? 1 : 0;
                if (end == knob || !mult || end + 1 != slash)
                        return -EINVAL;
                n = snprintf(buf, size, FAKEHOST_THP "/hugepages-%lukB/%s", v * mult,
                             strcmp(slash, "/anon") == 0 ? "enabled" : "shmem_enabled");
        } else
                n = snprintf(buf, size, FAKEHOST_THP "/%s", knob);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

int fakehost_knob_read(const char *dir, const char *knob, char *value, size_t size) {
        char host[PATH_MAX];
        struct fakehost_sel s;
        int r = fakehost_knob_path(knob, host, sizeof(host));
        if (r == 0)
                r = read_sel(dir, host, &s);
        if (r < 0)
                return r;
        return snprintf(value, size, "%s", s.word[s.selected]) >= (int) size ? -ENOBUFS : 0;
}

int fakehost_knob_set(const char *dir, const char *knob, const char *value) {
        char host[PATH_MAX];
        struct fakehost_sel s;
        int r = fakehost_knob_path(knob, host, sizeof(host));
        if (r == 0)
                r = read_sel(dir, host, &s);
        if (r < 0)
                return r;
        int i = fakehost_sel_find(&s, value);
        if (i < 0)
                return -EINVAL;
        s.selected = i;
        return write_sel(dir, host, &s);
}

int fakehost_knob_write(const char *dir, const char *knob, const char *value) {
        char host[PATH_MAX], file[PATH_MAX], real[PATH_MAX];
        int r = fakehost_knob_path(knob, host, sizeof(host));
        if (r == 0)
                r = fakehost_path(dir, host, file, sizeof(file));
        if (r < 0)
                return r;
        if (!realpath(file, real))
                return -errno;
        bool handled;
        long n = fakehost_sysfs_write(real, value, strlen(value), &handled);
        if (!handled) {
                /* not a selection file: the kernel would just take it */
                char text[256];
                snprintf(text, sizeof(text), "%s\n", value);
                return put_file(file, text, 0644);
        }
        return n < 0 ? (int) n : 0;
}

int fakehost_knob_fail(const char *dir, const char *knob, const char *errname) {
        char host[PATH_MAX], file[PATH_MAX + 8];
        int r = fakehost_knob_path(knob, host, sizeof(host));
        if (r == 0)
                r = fakehost_path(dir, host, file, sizeof(file) - 8);
        if (r < 0)
                return r;
        strcat(file, ".fail");
        if (!errname)
                return unlink(file) < 0 && errno != ENOENT ? -errno : 0;
        if (fakehost_errno_from_name(errname) <= 0)
                return -EINVAL;
        char text[32];
        snprintf(text, sizeof(text), "%s\n", errname);
        return put_file(file, text, 0644);
}

static const struct {
        int err;
        const char *name;
} errnames[] = {
        { EINVAL, "EINVAL" }, { EBUSY, "EBUSY" }, { EACCES, "EACCES" }, { EIO, "EIO" },     { EPERM, "EPERM" },
        { EROFS, "EROFS" },   { ENODEV, "ENODEV" }, { ENOENT, "ENOENT" }, { ENOSPC, "ENOSPC" }, { ENOMEM, "ENOMEM" },
};

int fakehost_errno_from_name(const char *name) {
        size_t len = strcspn(name, " \t\n");
        for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
                if (strlen(errnames[i].name) == len && strncmp(name, errnames[i].name, len) == 0)
                        return errnames[i].err;
        return -EINVAL;
}

const char *fakehost_errno_name(int err) {
        if (err < 0)
                err = -err;
        for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
                if (errnames[i].err == err)
                        return errnames[i].name;
        return "E?";
}

/* ---- cgroups ---- */

static int tree_layout(const char *dir, enum fakehost_cg_layout *l, bool *psi) {
        char text[256];
        int r = fakehost_read_file(dir, "/" FAKEHOST_MARKER, text, sizeof(text));
        if (r < 0)
                return r;
        char *p = strstr(text, "layout="), *q = strstr(text, "psi=");
        if (!p || !q)
                return -EBADMSG;
        p += 7;
        p[strcspn(p, "\n")] = 0;
        *psi = q[4] == '1';
        return fakehost_parse_layout(p, l);
}

int fakehost_add_cgroup(const char *dir, const char *name, char *memdir, size_t size) {
        enum fakehost_cg_layout l;
        bool psi;
        char base[PATH_MAX], p[PATH_MAX + 32];
        int r = tree_layout(dir, &l, &psi);
        if (r < 0)
                return r;
        if (l == FAKEHOST_CG_NONE)
                return -EOPNOTSUPP;
        const char *v1 = l == FAKEHOST_CG_V2 ? NULL : "/sys/fs/cgroup/memory";
        const char *v2 = l == FAKEHOST_CG_V2 ? "/sys/fs/cgroup" : l == FAKEHOST_CG_HYBRID ? "/sys/fs/cgroup/unified" : NULL;
        char *zero = zero_values(v1 ? memcg_v1_stat_text : memcg_v2_stat_text);
        if (!zero)
                return -ENOMEM;
#define PUTF(fmt, text, mode)                                         \
        do {                                                          \
                snprintf(p, sizeof(p), fmt, base);                    \
                if ((r = put(dir, p, text, mode)) < 0)                \
                        goto out;                                     \
        } while (0)
        if (v2) {
                snprintf(base, sizeof(base), "%s/%s", v2, name);
                PUTF("%s/cgroup.procs", "", 0644);
                PUTF("%s/cgroup.controllers", l == FAKEHOST_CG_V2 ? "cpu io memory pids\n" : "", 0444);
                if (psi)
                        PUTF("%s/memory.pressure", psi_zero, 0644);
                if (l == FAKEHOST_CG_V2) {
                        PUTF("%s/memory.stat", zero, 0444);
                        PUTF("%s/memory.current", "0\n", 0444);
                        PUTF("%s/memory.peak", "0\n", 0644);
                        PUTF("%s/memory.min", "0\n", 0644);
                        PUTF("%s/memory.low", "0\n", 0644);
                        PUTF("%s/memory.high", "max\n", 0644);
                        PUTF("%s/memory.max", "max\n", 0644);
                        PUTF("%s/memory.events", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\noom_group_kill 0\n", 0444);
                }
        }
        if (v1) {
                snprintf(base, sizeof(base), "%s/%s", v1, name);
                PUTF("%s/cgroup.procs", "", 0644);
                PUTF("%s/tasks", "", 0644);
                PUTF("%s/memory.stat", zero, 0444);
                PUTF("%s/memory.usage_in_bytes", "0\n", 0444);
                PUTF("%s/memory.limit_in_bytes", "9223372036854771712\n", 0644);
        }
#undef PUTF
        r = 0;
        if (memdir && snprintf(memdir, size, "%s/%s", v1 ? v1 : v2, name) >= (int) size)
                r = -ENAMETOOLONG;
out:
        free(zero);
        return r;
}

static int remove_tree(const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0)
                return -errno;
        return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

int fakehost_remove_cgroup(const char *dir, const char *name) {
        enum fakehost_cg_layout l;
        bool psi;
        char host[PATH_MAX], p[PATH_MAX];
        int r = tree_layout(dir, &l, &psi), found = 0;
        if (r < 0)
                return r;
        if (l == FAKEHOST_CG_NONE)
                return -EOPNOTSUPP;
        if (!*name || strcmp(name, "/") == 0 || strstr(name, ".."))
                return -EINVAL;
        static const char *const roots[] = { "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
        for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
                if ((i == 2) != (l == FAKEHOST_CG_V2) || (i == 1 && l != FAKEHOST_CG_HYBRID))
                        continue;
                if (snprintf(host, sizeof(host), "%s/%s", roots[i], name) >= (int) sizeof(host))
                        return -ENAMETOOLONG;
                /* the shadow copies go too, so a recreated cgroup starts fresh */
                if (shadow_path(dir, host, p, sizeof(p)) == 0)
                        (void) remove_tree(p);
                if ((r = fakehost_path(dir, host, p, sizeof(p))) < 0)
                        return r;
                r = remove_tree(p);
                if (r == 0)
                        found++;
                else if (r != -ENOENT)
                        return r;
        }
        return found ? 0 : -ENOENT;
}

/* ---- kernel semantics (used by the fakesysfs interposer) ---- */

static fakehost_write_hook write_hook;
static void *write_hook_user;

void fakehost_set_write_hook(fakehost_write_hook hook, void *user) {
        write_hook = hook;
        write_hook_user = user;
}

/* Copy path without a " (deleted)" tail; returns whether it had one. */
static bool strip_deleted(const char *in, char *out, size_t size) {
        static const char tail[] = " (deleted)";
        snprintf(out, size, "%s", in);
        size_t len = strlen(out), tl = sizeof(tail) - 1;
        if (len > tl && strcmp(out + len - tl, tail) == 0) {
                out[len - tl] = 0;
                return true;
        }
        return false;
}

/* Length of the fake-tree root that path lies below, or 0. */
static size_t find_root(const char *path) {
        char dir[PATH_MAX + sizeof(FAKEHOST_MARKER) + 1];
        snprintf(dir, PATH_MAX, "%s", path);
        for (;;) {
                char *slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        return 0;
                *slash = 0;
                size_t len = (size_t) (slash - dir);
                strcpy(slash, "/" FAKEHOST_MARKER);
                if (access(dir, F_OK) == 0)
                        return len;
                *slash = 0;
        }
}

static unsigned pmd_kb(const char *root) {
        char v[32];
        if (fakehost_read_file(root, FAKEHOST_THP "/hpage_pmd_size", v, sizeof(v)) <= 0)
                return FAKEHOST_PMD_KB;
        return (unsigned) (strtoull(v, NULL, 10) / 1024);
}

/* Cross-knob rules of mm/shmem.c (6.18). */
static int shmem_rules(const char *root, const char *host, const char *word) {
        unsigned kb, pmd = pmd_kb(root);
        char file[64];
        struct fakehost_sel s;

        if (strcmp(host, FAKEHOST_THP "/shmem_enabled") == 0 && strcmp(word, "force") == 0) {
                /* "Do not override huge allocation policy with non-PMD sized
                 * mTHP": force needs the per-size inherit set to be exactly
                 * the PMD size */
                char thp[PATH_MAX];
                bool pmd_inherits = false;
                if (fakehost_path(root, FAKEHOST_THP, thp, sizeof(thp)) < 0)
                        return -ENAMETOOLONG;
                DIR *d = opendir(thp);
                if (!d)
                        return -errno;
                struct dirent *de;
                int r = 0;
                while (r == 0 && (de = readdir(d))) {
                        char tail[4], h[PATH_MAX];
                        if (sscanf(de->d_name, "hugepages-%ukB%3s", &kb, tail) != 1)
                                continue;
                        snprintf(h, sizeof(h), FAKEHOST_THP "/%s/shmem_enabled", de->d_name);
                        if (read_sel(root, h, &s) < 0 || strcmp(s.word[s.selected], "inherit") != 0)
                                continue;
                        if (kb == pmd)
                                pmd_inherits = true;
                        else
                                r = -EINVAL;
                }
                closedir(d);
                return r < 0 ? r : pmd_inherits ? 0 : -EINVAL;
        }
        if (sscanf(host, FAKEHOST_THP "/hugepages-%ukB/%63s", &kb, file) == 2 && strcmp(file, "shmem_enabled") == 0 &&
            strcmp(word, "inherit") == 0 && kb != pmd) {
                if (read_sel(root, FAKEHOST_THP "/shmem_enabled", &s) == 0 &&
                    strcmp(s.word[s.selected], "force") == 0)
                        return -EINVAL;
        }
        return 0;
}

long fakehost_sysfs_write(const char *fdpath, const void *buf, size_t n, bool *handled) {
        char path[PATH_MAX], root[PATH_MAX], failfile[PATH_MAX + 8], text[64];
        struct fakehost_sel cur;
        bool truncated = false;
        long r;

        *handled = false;
        bool deleted = strip_deleted(fdpath, path, sizeof(path));
        size_t rl = find_root(path);
        if (!rl)
                return 0;
        memcpy(root, path, rl);
        root[rl] = 0;
        const char *host = path + rl;
        if (!is_kernel_path(host))
                return 0;
        *handled = true;
        if (deleted)
                return -ENODEV;   /* kernfs: the attribute is gone */

        char *prev = malloc(TEXT_MAX);
        if (!prev)
                return -ENOMEM;
        if (get_kfile(root, host, prev, TEXT_MAX, &truncated) < 0)
                prev[0] = 0;
        bool is_sel = fakehost_sel_parse(prev, &cur) == 0;

        snprintf(failfile, sizeof(failfile), "%s.fail", path);
        if (get_file(failfile, text, sizeof(text)) > 0) {
                int e = fakehost_errno_from_name(text);
                r = -(e > 0 ? e : EIO);
                goto fail;
        }
        struct stat st;
        if (stat(path, &st) == 0 && !(st.st_mode & 0222)) {
                r = -EACCES;      /* no store method: open(O_WRONLY) fails */
                goto fail;
        }
        if (n == 0) {
                r = 0;            /* sysfs: an empty write stores nothing */
                goto fail;
        }
        if (!is_sel) {
                /* a plain attribute: each write(2) stores its value */
                if (n >= TEXT_MAX - 1 || memchr(buf, 0, n)) {
                        r = -EINVAL;
                        goto fail;
                }
                memcpy(prev, buf, n);
                prev[n] = 0;
                if (prev[n - 1] != '\n')
                        strcat(prev, "\n");
                r = put(root, host, prev, 0644);
                free(prev);
                return r < 0 ? r : (long) n;
        }

        /* sysfs_streq() and shmem_enabled_store(): one trailing newline */
        size_t len = n;
        if (((const char *) buf)[len - 1] == '\n')
                len--;
        char word[FAKEHOST_WORD_MAX];
        if (len == 0 || len >= sizeof(word) || memchr(buf, 0, len)) {
                r = -EINVAL;
                goto fail;
        }
        memcpy(word, buf, len);
        word[len] = 0;
        int i = fakehost_sel_find(&cur, word);
        if (i < 0 || shmem_rules(root, host, word) < 0) {
                r = -EINVAL;
                goto fail;
        }
        if (write_hook) {
                int h = write_hook(write_hook_user, host, word);
                if (h != 0) {
                        r = h < 0 ? h : (long) n;
                        goto fail;
                }
        }
        cur.selected = i;
        r = write_sel(root, host, &cur);
        free(prev);
        return r < 0 ? r : (long) n;

fail:
        /* the value did not change: undo the O_TRUNC of the writer's open */
        if (truncated)
                (void) put(root, host, prev, 0644);
        free(prev);
        return r;
}

int fakehost_sysfs_read_check(const char *fdpath) {
        char path[PATH_MAX];
        if (!strip_deleted(fdpath, path, sizeof(path)))
                return 0;
        size_t rl = find_root(path);
        return rl && is_kernel_path(path + rl) ? -ENODEV : 0;
}
