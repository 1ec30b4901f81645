/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "mthp/limits.h"
#include "mthp/util.h"

/* v1 reports "no limit" as PAGE_COUNTER_MAX pages rounded: anything this
 * large is none */
#define V1_UNLIMITED (1ULL << 60)

const char *mthp_limits_base(const struct mthp_caps *caps, bool *v1) {
        bool is_v1 = caps->cg_layout == MTHP_CG_V1 || caps->cg_layout == MTHP_CG_HYBRID;
        if (v1)
                *v1 = is_v1;
        const char *b = is_v1 ? caps->cg_memory : caps->cg_unified;
        return b[0] ? b : NULL;
}

/* a cgroup's one-value file: one pread (mthp_host_read_whole) */
static int read_u64(const struct mthp_host *h, const char *file, uint64_t *v, bool *unlimited) {
        char buf[64];
        int r = mthp_host_read_whole(h, file, buf, sizeof(buf));
        if (r < 0)
                return r;
        if (unlimited)
                *unlimited = strncmp(buf, "max", 3) == 0;
        if (unlimited && *unlimited) {
                *v = 0;
                return 0;
        }
        char *end;
        errno = 0;
        unsigned long long x = strtoull(buf, &end, 10);
        if (end == buf || errno)
                return -EBADMSG;
        *v = x;
        return 0;
}

/* limit in bytes, 0 none */
static int read_limit(const struct mthp_host *h, const char *dir, bool v1, uint64_t *limit) {
        char f[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX + 32];
        uint64_t v;
        bool unl = false;
        *limit = 0;
        if (v1) {
                snprintf(f, sizeof(f), "%s/memory.limit_in_bytes", dir);
                int r = read_u64(h, f, &v, NULL);
                if (r < 0)
                        return r;
                if (v < V1_UNLIMITED)
                        *limit = v;
                return 0;
        }
        static const char *const names[] = { "memory.max", "memory.high" };
        int ok = -ENOENT;
        for (unsigned i = 0; i < 2; i++) {
                snprintf(f, sizeof(f), "%s/%s", dir, names[i]);
                if (read_u64(h, f, &v, &unl) < 0)
                        continue;
                ok = 0;
                if (!unl && (!*limit || v < *limit))
                        *limit = v;
        }
        return ok;
}

static int read_usage(const struct mthp_host *h, const char *dir, bool v1, uint64_t *usage) {
        char f[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX + 32];
        snprintf(f, sizeof(f), "%s/%s", dir, v1 ? "memory.usage_in_bytes" : "memory.current");
        return read_u64(h, f, usage, NULL);
}

int mthp_limits_read(const struct mthp_host *h, const struct mthp_caps *caps, const char *path, uint64_t *usage_kb,
                     uint64_t *limit_kb) {
        bool v1;
        const char *base = mthp_limits_base(caps, &v1);
        if (!base)
                return -ENOENT;
        char dir[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX];
        snprintf(dir, sizeof(dir), "%s%s", base, strcmp(path, "/") == 0 ? "" : path);
        uint64_t l, u;
        int r = read_limit(h, dir, v1, &l);
        if (r < 0)
                return r;
        r = read_usage(h, dir, v1, &u);
        if (r < 0)
                return r;
        *usage_kb = u / 1024;
        *limit_kb = l / 1024;
        return 0;
}

struct scan_dir {
        char rel[MTHP_CGROUP_PATH_MAX];
        int parent;
        bool procs;            /* v1: own cgroup.procs not empty; v2: cgroup.events populated */
        bool limited;
        bool under_limit;      /* it or an ancestor is limited */
        uint64_t usage, limit;
};

static bool has_procs(const struct mthp_host *h, const char *dir, bool v1) {
        char f[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX + 32], buf[256];
        if (v1) {
                /* one byte of one pread says it (the kernel builds the whole PID
                 * list once an open, whatever is read of it) */
                snprintf(f, sizeof(f), "%s/cgroup.procs", dir);
                _cleanup_close_ int fd = mthp_host_open_file(h, f, O_RDONLY);
                return fd >= 0 && pread(fd, buf, 1, 0) > 0;
        }
        snprintf(f, sizeof(f), "%s/cgroup.events", dir);
        if (mthp_host_read_whole(h, f, buf, sizeof(buf)) < 0)
                return true; /* unknown: assume it is */
        return strstr(buf, "populated 1") != NULL;
}

/* Is base on a cgroup filesystem of the real host? There (kernfs) a
 * directory's link count is 2 plus its subdirectories (kernfs_refresh_inode),
 * so a leaf cgroup, most of a host's, needs no listing. A fake host tree is
 * listed: not every filesystem counts links so (btrfs gives a directory 1). */
static bool on_kernfs(const struct mthp_host *h, const char *base) {
        struct statfs sf;
        if (!h->real)
                return false;
        _cleanup_close_ int fd = mthp_host_open_file(h, base, O_PATH | O_DIRECTORY);
        if (fd < 0 || fstatfs(fd, &sf) < 0)
                return false;
        return sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC;
}

/* Could the cgroup dir have child cgroups? On kernfs one fstatat answers
 * for a leaf, against open, fstat and fcntl (fdopendir), two getdents and
 * close to list it. */
static bool may_have_children(const struct mthp_host *h, const char *dir, bool kernfs) {
        struct stat st;
        if (!kernfs || fstatat(h->root_fd, dir[0] == '/' ? dir + 1 : dir, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return true;
        return !S_ISDIR(st.st_mode) || st.st_nlink != 2;
}

static int cmp_limited(const void *a, const void *b) {
        const struct mthp_limited_cgroup *x = a, *y = b;
        if (x->populated != y->populated)
                return x->populated ? -1 : 1;
        double hx = x->limit_kb > x->usage_kb ? (double) (x->limit_kb - x->usage_kb) / (double) x->limit_kb : 0;
        double hy = y->limit_kb > y->usage_kb ? (double) (y->limit_kb - y->usage_kb) / (double) y->limit_kb : 0;
        return hx < hy ? -1 : hx > hy ? 1 : strcmp(x->path, y->path);
}

int mthp_limits_scan(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_snapshot *snap,
                     mthp_limits_dir_fn fn, void *user) {
        bool v1;
        const char *base = mthp_limits_base(caps, &v1);
        snap->n_limited = 0;
        snap->limited_valid = false;
        if (!base)
                return -ENOENT;
        struct scan_dir *d = calloc(MTHP_LIMITS_DIRS, sizeof(*d));
        if (!d)
                return -ENOMEM;
        bool kernfs = on_kernfs(h, base);
        unsigned n = 1;
        snprintf(d[0].rel, sizeof(d[0].rel), "/");
        d[0].parent = -1;
        for (unsigned i = 0; i < n; i++) {
                char dir[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX];
                snprintf(dir, sizeof(dir), "%s%s", base, i == 0 ? "" : d[i].rel);
                if (fn)
                        fn(dir, user);
                if (i > 0 && read_limit(h, dir, v1, &d[i].limit) == 0 && d[i].limit) {
                        d[i].limited = true;
                        (void) read_usage(h, dir, v1, &d[i].usage);
                        d[i].procs = has_procs(h, dir, v1);
                } else if (i > 0 && v1 && d[d[i].parent].under_limit)
                        /* only a limited ancestor's populated state needs it:
                         * reading cgroup.procs builds the whole PID list (3 ms
                         * for 5,000 processes, whatever is read of it) */
                        d[i].procs = has_procs(h, dir, v1);
                d[i].under_limit = d[i].limited || (i > 0 && d[d[i].parent].under_limit);
                if (!may_have_children(h, dir, kernfs))
                        continue;
                int dfd = mthp_host_open_file(h, dir, O_RDONLY | O_DIRECTORY);
                if (dfd < 0)
                        continue;
                DIR *dh = fdopendir(dfd);
                if (!dh) {
                        close(dfd);
                        continue;
                }
                struct dirent *de;
                while ((de = readdir(dh)) && n < MTHP_LIMITS_DIRS) {
                        if (de->d_type != DT_DIR || de->d_name[0] == '.')
                                continue;
                        int w = snprintf(d[n].rel, sizeof(d[n].rel), "%s/%s", i == 0 ? "" : d[i].rel, de->d_name);
                        if (w < 0 || w >= (int) sizeof(d[n].rel))
                                continue;
                        d[n].parent = (int) i;
                        n++;
                }
                closedir(dh);
        }
        /* v1: a cgroup is populated when it or a descendant has a process
         * (children come after their parents in breadth-first order) */
        if (v1)
                for (unsigned i = n; i-- > 1;)
                        if (d[i].procs && d[i].parent > 0)
                                d[d[i].parent].procs = true;
        struct mthp_limited_cgroup *all = calloc(n, sizeof(*all));
        unsigned m = 0;
        for (unsigned i = 1; all && i < n; i++) {
                if (!d[i].limited)
                        continue;
                struct mthp_limited_cgroup *c = &all[m++];
                mthp_strcpy(c->path, sizeof(c->path), d[i].rel);
                c->usage_kb = d[i].usage / 1024;
                c->limit_kb = d[i].limit / 1024;
                c->populated = d[i].procs;
        }
        if (all) {
                qsort(all, m, sizeof(*all), cmp_limited);
                for (unsigned i = 0; i < m && i < MTHP_SNAP_LIMITED; i++)
                        snap->limited[snap->n_limited++] = all[i];
        }
        free(all);
        free(d);
        snap->limited_valid = true;
        return 0;
}

int mthp_limits_arm_v1(const struct mthp_host *h, const struct mthp_caps *caps, const char *path,
                       uint64_t threshold_bytes) {
        bool v1;
        const char *base = mthp_limits_base(caps, &v1);
        if (!base || !v1)
                return -EOPNOTSUPP;
        char dir[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX], f[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX + 32];
        snprintf(dir, sizeof(dir), "%s%s", base, strcmp(path, "/") == 0 ? "" : path);
        snprintf(f, sizeof(f), "%s/memory.usage_in_bytes", dir);
        _cleanup_close_ int ufd = mthp_host_open_file(h, f, O_RDONLY | O_CLOEXEC);
        if (ufd < 0)
                return ufd;
        snprintf(f, sizeof(f), "%s/cgroup.event_control", dir);
        _cleanup_close_ int cfd = mthp_host_open_file(h, f, O_WRONLY | O_CLOEXEC);
        if (cfd < 0)
                return cfd;
        int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (efd < 0)
                return -errno;
        char line[96];
        int len = snprintf(line, sizeof(line), "%d %d %" PRIu64, efd, ufd, threshold_bytes);
        if (write(cfd, line, (size_t) len) != len) {
                int r = -errno;
                close(efd);
                return r ? r : -EIO;
        }
        return efd;
}

int mthp_parse_memory_events(const char *text, uint64_t *high, uint64_t *max) {
        bool seen = false;
        *high = *max = 0;
        for (const char *l = text; l && *l;) {
                unsigned long long v;
                if (sscanf(l, "high %llu", &v) == 1)
                        *high = v, seen = true;
                else if (sscanf(l, "max %llu", &v) == 1)
                        *max = v, seen = true;
                l = strchr(l, '\n');
                if (l)
                        l++;
        }
        return seen ? 0 : -EBADMSG;
}
