/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
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

/* A file of the cgroup directory dfd, whole in one pread; relative to the
 * directory, which was opened through the host root, so the path is walked
 * once a cgroup, not once a file. */
static int read_at(int dfd, const char *name, char *buf, size_t size) {
        _cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        return mthp_read_fd_whole(fd, buf, size);
}

/* a cgroup's one-value file */
static int read_u64(int dfd, const char *name, uint64_t *v, bool *unlimited) {
        char buf[64];
        int r = read_at(dfd, name, buf, sizeof(buf));
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
static int read_limit(int dfd, bool v1, uint64_t *limit) {
        uint64_t v;
        bool unl = false;
        *limit = 0;
        if (v1) {
                int r = read_u64(dfd, "memory.limit_in_bytes", &v, NULL);
                if (r < 0)
                        return r;
                if (v < V1_UNLIMITED)
                        *limit = v;
                return 0;
        }
        static const char *const names[] = { "memory.max", "memory.high" };
        int ok = -ENOENT;
        for (unsigned i = 0; i < 2; i++) {
                if (read_u64(dfd, names[i], &v, &unl) < 0)
                        continue;
                ok = 0;
                if (!unl && (!*limit || v < *limit))
                        *limit = v;
        }
        return ok;
}

static int read_usage(int dfd, bool v1, uint64_t *usage) {
        return read_u64(dfd, v1 ? "memory.usage_in_bytes" : "memory.current", usage, NULL);
}

/* The host path of a cgroup; -ENAMETOOLONG beyond PATH_MAX (no call can
 * name it). */
static int host_dir(char *buf, size_t size, const char *base, const char *rel, bool root) {
        int w = snprintf(buf, size, "%s%s", base, root ? "" : rel);
        return w < 0 || (size_t) w >= size ? -ENAMETOOLONG : 0;
}

int mthp_limits_read(const struct mthp_host *h, const struct mthp_caps *caps, const char *path, uint64_t *usage_kb,
                     uint64_t *limit_kb) {
        bool v1;
        const char *base = mthp_limits_base(caps, &v1);
        if (!base)
                return -ENOENT;
        char dir[PATH_MAX];
        path = mthp_limits_resolve(path);
        if (host_dir(dir, sizeof(dir), base, path, strcmp(path, "/") == 0) < 0)
                return -ENAMETOOLONG;
        _cleanup_close_ int dfd = mthp_host_open_file(h, dir, O_RDONLY | O_DIRECTORY);
        if (dfd < 0)
                return dfd;
        uint64_t l, u;
        int r = read_limit(dfd, v1, &l);
        if (r < 0)
                return r;
        r = read_usage(dfd, v1, &u);
        if (r < 0)
                return r;
        *usage_kb = u / 1024;
        *limit_kb = l / 1024;
        return 0;
}

static bool has_procs(int dfd, bool v1) {
        char buf[256];
        if (v1) {
                /* one byte of one pread says it (the kernel builds the whole PID
                 * list once an open, whatever is read of it) */
                _cleanup_close_ int fd = openat(dfd, "cgroup.procs", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                return fd >= 0 && pread(fd, buf, 1, 0) > 0;
        }
        if (read_at(dfd, "cgroup.events", buf, sizeof(buf)) < 0)
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

/* Could the cgroup directory dfd have child cgroups? On kernfs an fstat
 * answers for a leaf, against fcntl (fdopendir), two getdents and close to
 * list it. */
static bool may_have_children(int dfd, bool kernfs) {
        struct stat st;
        if (!kernfs || fstat(dfd, &st) < 0)
                return true;
        return !S_ISDIR(st.st_mode) || st.st_nlink != 2;
}

/* ---- long paths: a short alias in the snapshot ---- */

/* A limited cgroup whose path does not fit a snapshot's
 * MTHP_CGROUP_PATH_MAX (kubelet's systemd driver names a container
 * /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/
 * cri-containerd-<64 hex>.scope, ~190 characters) is carried under an alias:
 * its first characters, "…", its last ones and a hash of the whole path, so
 * the same cgroup gets the same alias at every scan (the engine knows it by
 * path) and two cgroups do not share one. The engine finds no sampled process
 * inside an alias (their paths are the full ones, or cut), so it weighs the
 * cgroup as sparse: it holds sizes back rather than guess. The guard reads
 * it through mthp_limits_read and mthp_limits_resolve, which map the alias
 * back to the path by this table of the aliases the last scans handed out. */
#define ALIAS_KEEP (4 * MTHP_SNAP_LIMITED)
#define ALIAS_HEAD 48
#define ALIAS_TAIL 56

static struct alias {
        char alias[MTHP_CGROUP_PATH_MAX];
        char *path;
        uint64_t used;          /* the scan that last handed it out */
} aliases[ALIAS_KEEP];
static uint64_t alias_scan;

static uint32_t path_hash(const char *p) {
        uint32_t h = 2166136261u;
        for (; *p; p++)
                h = (h ^ (uint8_t) *p) * 16777619u;
        return h;
}

/* n bytes of s, fewer if that would cut a UTF-8 sequence; from the end
 * when tail */
static size_t utf8_cut(const char *s, size_t len, size_t n, bool tail) {
        if (n >= len)
                return len;
        if (tail) {
                while (n > 0 && ((uint8_t) s[len - n] & 0xC0) == 0x80)
                        n--;
        } else {
                while (n > 0 && ((uint8_t) s[n] & 0xC0) == 0x80)
                        n--;
        }
        return n;
}

static void make_alias(const char *path, size_t len, char *out, size_t size) {
        size_t h = utf8_cut(path, len, ALIAS_HEAD, false), t = utf8_cut(path, len, ALIAS_TAIL, true);
        snprintf(out, size, "%.*s\u2026%.*s#%08x", (int) h, path, (int) t, path + len - t, path_hash(path));
}

/* Remember alias -> path; the least recently handed out goes first. */
static void alias_keep(const char *alias, const char *path) {
        struct alias *slot = NULL;
        for (unsigned i = 0; i < ALIAS_KEEP && !slot; i++)
                if (aliases[i].path && strcmp(aliases[i].alias, alias) == 0)
                        slot = &aliases[i];
        if (!slot) {
                slot = &aliases[0];
                for (unsigned i = 1; i < ALIAS_KEEP; i++)
                        if (aliases[i].used < slot->used)
                                slot = &aliases[i];
                char *p = strdup(path);
                if (!p)
                        return;
                free(slot->path);
                slot->path = p;
                mthp_strcpy(slot->alias, sizeof(slot->alias), alias);
        }
        slot->used = alias_scan;
}

const char *mthp_limits_resolve(const char *path) {
        if (!strstr(path, "\u2026"))
                return path;
        for (unsigned i = 0; i < ALIAS_KEEP; i++)
                if (aliases[i].path && strcmp(aliases[i].alias, path) == 0)
                        return aliases[i].path;
        return path;
}

/* ---- the scan ---- */

/* Every cgroup directory the scan visits, breadth-first; their relative
 * paths in one growing arena (offsets: the arena moves). */
struct scan_dir {
        size_t rel;            /* offset in the arena; "/" for the root */
        unsigned len;
        unsigned parent;
        bool procs;            /* v1: own cgroup.procs not empty; v2: cgroup.events populated */
        bool limited;
        bool under_limit;      /* it or an ancestor is limited */
        uint64_t usage, limit;
};

struct scan {
        struct scan_dir *d;
        unsigned n;
        size_t cap;
        char *arena;
        size_t used, size;
};

static const char *rel_of(const struct scan *sc, unsigned i) {
        return sc->arena + sc->d[i].rel;
}

static int scan_add(struct scan *sc, size_t plen, const char *name, unsigned parent_i) {
        size_t nlen = strlen(name), len = plen + 1 + nlen;
        int r = mthp_grow((void **) &sc->d, &sc->cap, sc->n + 1, sizeof(*sc->d));
        if (r < 0 || (r = mthp_grow((void **) &sc->arena, &sc->size, sc->used + len + 1, 1)) < 0)
                return r;
        char *p = sc->arena + sc->used;
        if (plen)
                memcpy(p, sc->arena + sc->d[parent_i].rel, plen);
        p[plen] = '/';
        memcpy(p + plen + 1, name, nlen + 1);
        sc->d[sc->n] = (struct scan_dir) { .rel = sc->used, .len = (unsigned) len, .parent = parent_i };
        sc->used += len + 1;
        sc->n++;
        return 0;
}

struct ranked {
        unsigned i;
        uint64_t headroom;     /* bytes */
        bool populated;
};

static const struct scan *rank_scan; /* qsort has no user pointer */

/* Least headroom in bytes first (what a size's bloat eats is bytes, not a
 * share of the limit); equals: populated first, then path order. */
static int cmp_ranked(const void *a, const void *b) {
        const struct ranked *x = a, *y = b;
        if (x->headroom != y->headroom)
                return x->headroom < y->headroom ? -1 : 1;
        if (x->populated != y->populated)
                return x->populated ? -1 : 1;
        return strcmp(rel_of(rank_scan, x->i), rel_of(rank_scan, y->i));
}

/* The limited cgroups of a finished scan, least headroom in bytes first,
 * into the snapshot as far as it holds them; st counts what was and was not
 * carried. */
static int carry_ranked(struct scan *sc, struct mthp_snapshot *snap, struct mthp_limits_stats *st) {
        struct ranked *all = calloc(sc->n, sizeof(*all));
        if (!all)
                return -ENOMEM;
        unsigned m = 0;
        for (unsigned i = 1; i < sc->n; i++)
                if (sc->d[i].limited)
                        all[m++] = (struct ranked) { .i = i, .populated = sc->d[i].procs,
                                                     .headroom = sc->d[i].limit > sc->d[i].usage
                                                                         ? sc->d[i].limit - sc->d[i].usage : 0 };
        rank_scan = sc;
        qsort(all, m, sizeof(*all), cmp_ranked);
        rank_scan = NULL;
        st->limited = m;
        alias_scan++;
        for (unsigned k = 0; k < m && snap->n_limited < MTHP_SNAP_LIMITED; k++) {
                const struct scan_dir *d = &sc->d[all[k].i];
                struct mthp_limited_cgroup *c = &snap->limited[snap->n_limited++];
                const char *rel = rel_of(sc, all[k].i);
                if (d->len < sizeof(c->path))
                        memcpy(c->path, rel, d->len + 1);
                else {
                        make_alias(rel, d->len, c->path, sizeof(c->path));
                        alias_keep(c->path, rel);
                        st->aliased++;
                }
                c->usage_kb = d->usage / 1024;
                c->limit_kb = d->limit / 1024;
                c->populated = d->procs;
        }
        st->carried = snap->n_limited;
        if (m > snap->n_limited)
                st->least_uncarried_kb = all[snap->n_limited].headroom / 1024;
        free(all);
        return 0;
}

int mthp_limits_scan_ex(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_snapshot *snap,
                        mthp_limits_dir_fn fn, void *user, struct mthp_limits_stats *stats) {
        bool v1;
        const char *base = mthp_limits_base(caps, &v1);
        struct mthp_limits_stats st = { 0 };
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        snap->n_limited = 0;
        snap->limited_valid = false;
        if (stats)
                *stats = st;
        if (!base)
                return -ENOENT;
        struct scan sc = { 0 };
        int r = scan_add(&sc, 0, "", 0);
        if (r < 0)
                return r;
        bool kernfs = on_kernfs(h, base);
        for (unsigned i = 0; i < sc.n; i++) {
                char dir[PATH_MAX];
                struct scan_dir *d = &sc.d[i];
                if (host_dir(dir, sizeof(dir), base, rel_of(&sc, i), i == 0) < 0) {
                        st.unseen++;    /* and its subtree, which no path can name either */
                        continue;
                }
                if (fn)
                        fn(dir, user);
                int dfd = mthp_host_open_file(h, dir, O_RDONLY | O_DIRECTORY);
                if (dfd < 0)
                        continue;       /* removed under us */
                bool under = i > 0 && sc.d[d->parent].under_limit;
                if (i > 0 && read_limit(dfd, v1, &d->limit) == 0 && d->limit) {
                        d->limited = true;
                        (void) read_usage(dfd, v1, &d->usage);
                        d->procs = has_procs(dfd, v1);
                } else if (i > 0 && v1 && under)
                        /* only a limited ancestor's populated state needs it:
                         * reading cgroup.procs builds the whole PID list (3 ms
                         * for 5,000 processes, whatever is read of it) */
                        d->procs = has_procs(dfd, v1);
                d->under_limit = d->limited || under;
                if (!may_have_children(dfd, kernfs)) {
                        close(dfd);
                        continue;
                }
                DIR *dh = fdopendir(dfd);
                if (!dh) {
                        close(dfd);
                        continue;
                }
                struct dirent *de;
                size_t plen = i == 0 ? 0 : sc.d[i].len;
                while ((de = readdir(dh))) {
                        if (de->d_type != DT_DIR || de->d_name[0] == '.')
                                continue;
                        if ((r = scan_add(&sc, plen, de->d_name, i)) < 0)
                                break;
                }
                closedir(dh);
                if (r < 0)
                        goto out;
        }
        st.dirs = sc.n;
        /* v1: a cgroup is populated when it or a descendant has a process
         * (children come after their parents in breadth-first order) */
        if (v1)
                for (unsigned i = sc.n; i-- > 1;)
                        if (sc.d[i].procs && sc.d[i].parent > 0)
                                sc.d[sc.d[i].parent].procs = true;
        if ((r = carry_ranked(&sc, snap, &st)) < 0)
                goto out;
        snap->limited_valid = true;
        r = 0;
out:
        st.usec = mthp_now_usec(CLOCK_MONOTONIC) - t0;
        if (stats)
                *stats = st;
        free(sc.d);
        free(sc.arena);
        return r;
}

int mthp_limits_scan(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_snapshot *snap,
                     mthp_limits_dir_fn fn, void *user) {
        return mthp_limits_scan_ex(h, caps, snap, fn, user, NULL);
}

int mthp_limits_arm_v1(const struct mthp_host *h, const struct mthp_caps *caps, const char *path,
                       uint64_t threshold_bytes) {
        bool v1;
        const char *base = mthp_limits_base(caps, &v1);
        if (!base || !v1)
                return -EOPNOTSUPP;
        char dir[PATH_MAX], f[PATH_MAX + 32];
        path = mthp_limits_resolve(path);
        if (host_dir(dir, sizeof(dir), base, path, strcmp(path, "/") == 0) < 0)
                return -ENAMETOOLONG;
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
