/* SPDX-License-Identifier: MIT */
/* Cgroup monitor: see include/mthp/cgmon.h.
 *
 * Cost model (measured on Linux 6.18 by tests/bench/bench-cgroups): a tick
 * is one pread per file of each managed cgroup, and the kernel's side of
 * those reads (memory.stat above all) is nearly all of it; what we add is a
 * hand parser over a buffer we own and a top-N insertion, no allocation and
 * no stdio. Unmanaged cgroups cost nothing between walks: the monitor keeps
 * only the managed ones.
 *
 * The walk: on the real root the memory hierarchy's mount point comes from
 * libcgroup (and libcgroup's cgroup_walk_tree_* walker is available, see
 * mthp_cgmon_set_walker), but the periodic rescan uses our own walk over
 * directory fds: libcgroup walks with fts, which stats every file of every
 * cgroup (about 30 per v1 memory cgroup) and builds full path strings; ours
 * reads each directory once with getdents and descends only into children
 * whose link count says they have subdirectories (kernfs, tmpfs and ext4 all
 * keep st_nlink = 2 + subdirectories), so a leaf cgroup costs one fstatat.
 * The same walk serves fake trees in tests, so the tested code is the code
 * that runs. libcgroup 2.0.2 (Debian 12) maps a controller to the cgroup2
 * mount when that mount's cgroup.controllers lists it (checked here with
 * hugetlb, the one controller this hybrid host's unified tree has), so on a
 * pure v2 host cgroup_get_subsys_mount_point("memory") and the "memory" walk
 * both land on the unified tree, as on v1 they land on the memory mount.
 *
 * Measured with tests/bench/bench-cgroups (Linux 6.18, 2 vCPUs, hybrid,
 * 10,000 memory cgroups): memory.stat costs the kernel ~55 us a read and
 * memory.pressure ~11 us, usage ~3.5 us; the dirfd walk 64-100 ms wall
 * (~40 ms CPU), libcgroup's 6-10 s. Hence the two economies below: full
 * reads when usage moved (mthp_cgmon_set_full_interval) and walks when
 * the cgroup count moved (mthp_cgmon_set_rescan). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mthp/cgmon.h"
#include "mthp/log.h"
#include "mthp/util.h"
#include "mthp/procfs.h"

#define DEFAULT_RESCAN_USEC (30ULL * 1000000ULL)
#define DEFAULT_FULL_USEC (30ULL * 1000000ULL)
#define FORCED_WALK_RESCANS 10  /* walk at least every 10 rescan intervals */
/* mthp_cgmon_set_watch_new: a changed count walks at once when the last
 * walk cost at most 1/WALK_COST_FACTOR of the time since */
#define WALK_COST_FACTOR 100
#define STAT_BUF 8192   /* v2 memory.stat of 6.18 is ~1.6 KB, v1 ~1.3 KB */
/* v1 reports "no limit" as PAGE_COUNTER_MAX pages in bytes (9223372036854771712). */
#define V1_NO_LIMIT (1ULL << 62)

enum { F_STAT, F_USAGE, F_LIMIT, F_HIGH, F_PSI, _F_MAX };
#define DROPPED_MAX 16

struct cg {
        char path[MTHP_CGROUP_PATH_MAX];
        uint64_t ino;           /* identity of the directory: a recreated cgroup has a new one */
        int fd[_F_MAX];         /* -1: absent */
        bool have_prev;
        uint64_t prev_t, prev_pgfault;          /* at the last full read */
        bool have_usage;
        uint64_t usage_t, usage;                /* at the last tick */
        uint64_t full_usage, next_full_t;       /* usage at the last full read; its deadline */
        bool gone;
        /* no descriptors kept (the budget ran out when it was found):
         * its files are opened, read and closed each tick */
        bool transient;
        /* its appearance (mthp_cgroup_view.appeared_usec): found by the
         * monitor's first walk (since the predicate was set); sampled once;
         * empty when first sampled, waiting for a process */
        bool initial, sampled, await_populated;
        uint64_t appeared_t;
        struct mthp_cgroup_view view;
};

/* a cgroup found by a walk that the predicate selected */
struct found {
        char path[MTHP_CGROUP_PATH_MAX];
        uint64_t ino;
};

struct mthp_cgmon {
        const struct mthp_host *h;
        enum mthp_cg_layout layout;
        bool v2;                        /* v2 file names in the memory tree */
        char mem_root[MTHP_PATH_MAX];   /* host path of the memory hierarchy */
        char psi_root[MTHP_PATH_MAX];   /* host path of the tree with memory.pressure, "" none */
        enum mthp_cgmon_walker walker;
        mthp_cgmon_match_fn match;
        void *match_user;
        uint64_t rescan_usec, last_walk_t, last_check_t, full_usec;
        bool need_walk, walked;
        bool initial_walk;              /* the next walk is the first since the predicate was set */
        bool watch_new;                 /* check the cgroup count every tick */
        int count_fd;                   /* /proc/cgroups, -1 if absent */
        long walk_count;                /* the memory hierarchy's count at the last walk, -1 unknown */

        struct cg *cg;                  /* managed, sorted by path */
        unsigned n_cg, cap_cg;
        /* cgroups dropped because a read failed (not gone): when a walk
         * finds one again it did not appear (ring, the last DROPPED_MAX) */
        struct found dropped[DROPPED_MAX];
        unsigned n_dropped;
        struct found *found;            /* scratch of a walk */
        unsigned n_found, cap_found;
        unsigned walk_seen;
        bool walk_truncated;
        /* the descriptor budget: the lowest fd number an open may return and
         * still leave MTHP_CGMON_FD_RESERVE free (from RLIMIT_NOFILE at each
         * walk); what was last said about it */
        int fd_ceiling;
        unsigned long long fd_limit;
        unsigned said_transient, said_unmonitored;

        struct mthp_cgmon_stats st;
        char buf[STAT_BUF];
};

/* ---- parsers ---- */

/* Decimal digits at *p; advances *p. Saturates instead of wrapping. */
static uint64_t parse_u64(const char **p) {
        const char *s = *p;
        uint64_t v = 0;
        while (*s >= '0' && *s <= '9') {
                unsigned d = (unsigned) (*s++ - '0');
                v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        }
        *p = s;
        return v;
}

enum { MS_PGFAULT, MS_PGMAJFAULT, MS_ANON, MS_SHMEM, MS_FILE, MS_ANON_THP, _MS_MAX };

/* memory.stat keys of both versions and where they go; v1's values other
 * than the pg* event counts are bytes, as are all of v2's. */
static const struct {
        const char *key;
        unsigned len;
        int field;
        bool bytes;
} memstat_keys[] = {
#define K(s, f, b) { s, sizeof(s) - 1, f, b }
        K("pgfault", MS_PGFAULT, false),
        K("pgmajfault", MS_PGMAJFAULT, false),
        K("anon", MS_ANON, true),        /* v2 */
        K("rss", MS_ANON, true),         /* v1: anonymous and swap cache */
        K("shmem", MS_SHMEM, true),
        K("file", MS_FILE, true),        /* v2: page cache including tmpfs/shmem */
        K("cache", MS_FILE, true),       /* v1: the same */
        K("anon_thp", MS_ANON_THP, true),
        K("rss_huge", MS_ANON_THP, true),
#undef K
};

int mthp_parse_memstat(const char *text, struct mthp_memstat *ms) {
        uint64_t local[_MS_MAX] = { 0 }, total[_MS_MAX] = { 0 };
        bool have_local[_MS_MAX] = { false }, have_total[_MS_MAX] = { false };
        const char *p = text;

        while (*p) {
                const char *key = p;
                while (*p && *p != ' ' && *p != '\n')
                        p++;
                size_t klen = (size_t) (p - key);
                bool is_total = false;
                /* cgroup v1 prints each counter twice: "pgfault" counts this
                 * cgroup's own tasks only, "total_pgfault" includes its
                 * descendants. cgroup v2's memory.stat is hierarchical, so we
                 * take the total_* value when there is one: a parent then
                 * counts its children on both versions. */
                if (klen > 6 && memcmp(key, "total_", 6) == 0) {
                        key += 6;
                        klen -= 6;
                        is_total = true;
                }
                int field = -1;
                bool bytes = false;
                for (size_t i = 0; i < sizeof(memstat_keys) / sizeof(memstat_keys[0]); i++)
                        if (memstat_keys[i].len == klen && memcmp(memstat_keys[i].key, key, klen) == 0) {
                                field = memstat_keys[i].field;
                                bytes = memstat_keys[i].bytes;
                                break;
                        }
                if (field >= 0 && *p == ' ') {
                        p++;
                        const char *num = p;
                        uint64_t v = parse_u64(&p);
                        if (p > num && (*p == '\n' || *p == 0)) {
                                if (bytes)
                                        v /= 1024;
                                if (is_total) {
                                        total[field] = v;
                                        have_total[field] = true;
                                } else {
                                        local[field] = v;
                                        have_local[field] = true;
                                }
                        }
                }
                while (*p && *p != '\n')
                        p++;
                if (*p)
                        p++;
        }
        uint64_t v[_MS_MAX];
        for (int i = 0; i < _MS_MAX; i++)
                v[i] = have_total[i] ? total[i] : local[i];
        *ms = (struct mthp_memstat) {
                .pgfault = v[MS_PGFAULT],
                .pgmajfault = v[MS_PGMAJFAULT],
                .anon_kb = v[MS_ANON],
                .shmem_kb = v[MS_SHMEM],
                .file_kb = v[MS_FILE],
                .anon_thp_kb = v[MS_ANON_THP],
        };
        return have_total[MS_PGFAULT] || have_local[MS_PGFAULT] ? 0 : -EBADMSG;
}

/* "123\n" -> 0 and *v; "max\n" -> 0 and UINT64_MAX. */
static int parse_limit(const char *text, uint64_t *v) {
        const char *p = text;
        if (strncmp(p, "max", 3) == 0 && (p[3] == '\n' || p[3] == 0)) {
                *v = UINT64_MAX;
                return 0;
        }
        *v = parse_u64(&p);
        return p > text && (*p == '\n' || *p == 0) ? 0 : -EBADMSG;
}

/* avg10 of the "some" line of a PSI file, in percent. */
static int parse_psi_some_avg10(const char *text, double *avg10) {
        const char *p = strstr(text, "some avg10=");
        if (!p)
                return -EBADMSG;
        p += 11;
        const char *start = p;
        double v = (double) parse_u64(&p);
        if (p == start)
                return -EBADMSG;
        if (*p == '.') {
                p++;
                double scale = 0.1;
                while (*p >= '0' && *p <= '9') {
                        v += (*p++ - '0') * scale;
                        scale /= 10;
                }
        }
        *avg10 = v;
        return 0;
}

/* ---- managed cgroups ---- */

static void cg_close(struct cg *c) {
        for (int i = 0; i < _F_MAX; i++)
                if (c->fd[i] >= 0) {
                        close(c->fd[i]);
                        c->fd[i] = -1;
                }
}

/* The descriptor budget. open(2) returns the lowest free number, so an fd
 * at or above the ceiling means fewer than MTHP_CGMON_FD_RESERVE numbers
 * below the soft RLIMIT_NOFILE are left: the knob writes, the restore
 * journal and the restore must always find one. */
static void fd_budget_update(struct mthp_cgmon *m) {
        struct rlimit rl;
        rlim_t cur = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 1024;
        if (cur == RLIM_INFINITY || cur > INT32_MAX)
                cur = INT32_MAX;
        m->fd_limit = (unsigned long long) cur;
        m->fd_ceiling = cur > MTHP_CGMON_FD_RESERVE ? (int) (cur - MTHP_CGMON_FD_RESERVE) : 0;
}

/* A descriptor a cgroup keeps must also leave room for the open-read-close
 * of one cgroup (its directory and 5 files) and a walk's directories. */
#define FD_TRANSIENT_ROOM 16

static bool fd_over_budget(const struct mthp_cgmon *m, int fd, bool keep) {
        return fd >= m->fd_ceiling - (keep ? FD_TRANSIENT_ROOM : 0);
}

/* "/sys/fs/cgroup/memory" + "/a/b" (or "/") */
static int join(char *buf, size_t size, const char *root, const char *rel) {
        int n = snprintf(buf, size, "%s%s", root, strcmp(rel, "/") == 0 ? "" : rel);
        return n < 0 || (size_t) n >= size ? -ENAMETOOLONG : 0;
}

static int open_psi(struct mthp_cgmon *m, struct cg *c) {
        char p[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX + 32];
        if (!m->psi_root[0] || c->fd[F_PSI] >= 0)
                return 0;
        if (join(p, sizeof(p) - 16, m->psi_root, c->path) < 0)
                return -ENAMETOOLONG;
        strcat(p, "/memory.pressure");
        int fd = mthp_host_open_file(m->h, p, O_RDONLY | O_NOFOLLOW);
        if (fd_over_budget(m, fd, !c->transient)) {
                close(fd);
                return -EMFILE;
        }
        if (fd >= 0)
                c->fd[F_PSI] = fd;
        return fd < 0 ? fd : 0;
}

/* Open a managed cgroup's files. memory.stat must be there (else it is not
 * a memory cgroup, e.g. a v2 child whose parent does not delegate memory);
 * usage and limits are absent on the v2 root. -EMFILE: opening them would
 * have eaten into the descriptor reserve (nothing is left open). */
static int cg_open(struct mthp_cgmon *m, struct cg *c) {
        char p[MTHP_PATH_MAX + MTHP_CGROUP_PATH_MAX];
        int r = join(p, sizeof(p), m->mem_root, c->path);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = mthp_host_open_file(m->h, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (dfd < 0)
                return dfd;
        static const char *const v1_names[_F_MAX] = { "memory.stat", "memory.usage_in_bytes",
                                                      "memory.limit_in_bytes", NULL, NULL };
        static const char *const v2_names[_F_MAX] = { "memory.stat", "memory.current", "memory.max",
                                                      "memory.high", "memory.pressure" };
        const char *const *names = m->v2 ? v2_names : v1_names;
        for (int i = 0; i < _F_MAX; i++)
                c->fd[i] = -1;
        for (int i = 0; i < _F_MAX; i++) {
                if (!names[i])
                        continue;
                c->fd[i] = openat(dfd, names[i], O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (c->fd[i] < 0 && i == F_STAT) {
                        r = -errno;
                        cg_close(c);
                        return r;
                }
                if (fd_over_budget(m, c->fd[i], !c->transient) || fd_over_budget(m, dfd, !c->transient)) {
                        cg_close(c);
                        return -EMFILE;
                }
        }
        if (!m->v2 && open_psi(m, c) == -EMFILE) {
                cg_close(c);
                return -EMFILE;
        }
        return 0;
}

/* ---- walks ---- */

static int found_add(struct mthp_cgmon *m, const char *path, size_t len, uint64_t ino) {
        if (len >= MTHP_CGROUP_PATH_MAX) {
                /* a view cannot name it; say so once per walk */
                if (!m->walk_truncated)
                        mthp_log(LOG_DEBUG, "cgroup monitor: %.*s... is longer than %d characters, not managed",
                                 60, path, MTHP_CGROUP_PATH_MAX - 1);
                m->walk_truncated = true;
                return 0;
        }
        if (m->n_found == m->cap_found) {
                unsigned cap = m->cap_found ? m->cap_found * 2 : 64;
                struct found *f = realloc(m->found, cap * sizeof(*f));
                if (!f)
                        return -ENOMEM;
                m->found = f;
                m->cap_found = cap;
        }
        struct found *f = &m->found[m->n_found++];
        memcpy(f->path, path, len);
        f->path[len] = 0;
        f->ino = ino;
        return 0;
}

static void consider(struct mthp_cgmon *m, const char *path, size_t len, uint64_t ino, int *err) {
        m->walk_seen++;
        if (m->match(path, m->match_user)) {
                int r = found_add(m, path, len, ino);
                if (r < 0 && !*err)
                        *err = r;
        }
}

/* The children of the directory dfd (path, len chars, "" for the root).
 * Takes ownership of dfd. */
#define WALK_PATH_MAX 4096
static void walk_dir(struct mthp_cgmon *m, int dfd, char *path, size_t len, unsigned depth, int *err) {
        DIR *d = fdopendir(dfd);
        if (!d) {
                close(dfd);
                return;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
                        continue;
                if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
                        continue;
                size_t nlen = strlen(de->d_name);
                if (len + 1 + nlen >= WALK_PATH_MAX)
                        continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                        continue;       /* removed under us, or not a cgroup */
                path[len] = '/';
                memcpy(path + len + 1, de->d_name, nlen + 1);
                consider(m, path, len + 1 + nlen, (uint64_t) st.st_ino, err);
                /* nlink 2: no subdirectories; < 2: a file system that does not
                 * count them, so look */
                if (st.st_nlink != 2 && depth < 64) {
                        int cfd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (cfd >= 0)
                                walk_dir(m, cfd, path, len + 1 + nlen, depth + 1, err);
                }
                path[len] = 0;
        }
        closedir(d);
}

static int walk_dirfd(struct mthp_cgmon *m) {
        int err = 0;
        int dfd = mthp_host_open_file(m->h, m->mem_root, O_RDONLY | O_DIRECTORY);
        if (dfd < 0)
                return dfd;
        struct stat st;
        if (fstat(dfd, &st) < 0) {
                int r = -errno;
                close(dfd);
                return r;
        }
        consider(m, "/", 1, (uint64_t) st.st_ino, &err);
        char *path = malloc(WALK_PATH_MAX);
        if (!path) {
                close(dfd);
                return -ENOMEM;
        }
        path[0] = 0;
        walk_dir(m, dfd, path, 0, 0, &err);
        free(path);
        return err;
}

/* libcgroup's walker (real root only): pre-order over every entry of the
 * hierarchy, files included. */
static int walk_libcgroup(struct mthp_cgmon *m) {
        void *handle = NULL;
        struct cgroup_file_info info;
        int base_level = 0, err = 0;
        size_t root_len = 0;
        int r = cgroup_walk_tree_begin("memory", "/", 0, &handle, &info, &base_level);
        if (r != 0) {
                if (handle)
                        cgroup_walk_tree_end(&handle);
                return r == ECGEOF ? 0 : -ENOENT;
        }
        bool first = true;
        while (r == 0) {
                if (info.type == CGROUP_FILE_TYPE_DIR && info.full_path) {
                        const char *fp = info.full_path;
                        size_t fl = strlen(fp);
                        while (fl > 1 && fp[fl - 1] == '/')
                                fl--;
                        if (first) {
                                root_len = fl;
                                first = false;
                        }
                        if (fl >= root_len) {
                                char rel[WALK_PATH_MAX];
                                size_t rl = fl - root_len;
                                if (rl == 0) {
                                        rel[0] = '/';
                                        rl = 1;
                                } else if (rl < sizeof(rel))
                                        memcpy(rel, fp + root_len, rl);
                                else
                                        rl = 0;
                                if (rl) {
                                        rel[rl] = 0;
                                        /* identity of a match only: a stat per managed cgroup */
                                        uint64_t ino = 0;
                                        struct stat st;
                                        m->walk_seen++;
                                        if (m->match(rel, m->match_user)) {
                                                if (stat(fp, &st) == 0)
                                                        ino = (uint64_t) st.st_ino;
                                                int e = found_add(m, rel, rl, ino);
                                                if (e < 0 && !err)
                                                        err = e;
                                        }
                                }
                        }
                }
                r = cgroup_walk_tree_next(0, &handle, &info, base_level);
        }
        cgroup_walk_tree_end(&handle);
        return err;
}

static int cmp_found(const void *a, const void *b) {
        return strcmp(((const struct found *) a)->path, ((const struct found *) b)->path);
}

static bool was_dropped(const struct mthp_cgmon *m, const struct found *f) {
        for (unsigned i = 0; i < DROPPED_MAX && i < m->n_dropped; i++)
                if (m->dropped[i].ino == f->ino && strcmp(m->dropped[i].path, f->path) == 0)
                        return true;
        return false;
}

/* Merge the walk's matches into the managed set (both sorted by path):
 * same path and identity: keep (fds, previous counters); new identity: a
 * recreated cgroup, start over; missing: close. */
static int merge(struct mthp_cgmon *m) {
        if (m->n_found)   /* found is NULL before the first match: qsort wants a pointer */
                qsort(m->found, m->n_found, sizeof(*m->found), cmp_found);
        struct cg *next = calloc(m->n_found ? m->n_found : 1, sizeof(*next));
        if (!next)
                return -ENOMEM;
        unsigned i = 0, j = 0, n = 0;
        int r;
        while (j < m->n_found) {
                const struct found *f = &m->found[j];
                int c = i < m->n_cg ? strcmp(m->cg[i].path, f->path) : 1;
                if (c < 0) {    /* gone or no longer matched */
                        cg_close(&m->cg[i++]);
                        continue;
                }
                if (j + 1 < m->n_found && strcmp(f->path, m->found[j + 1].path) == 0) {
                        j++;    /* duplicate from a racing walk */
                        continue;
                }
                if (c == 0 && !m->cg[i].gone && (m->cg[i].ino == f->ino || !f->ino)) {
                        next[n] = m->cg[i++];
                        /* read by open-read-close: descriptors again if
                         * the budget has room now */
                        if (next[n].transient) {
                                next[n].transient = false;
                                next[n].transient = cg_open(m, &next[n]) < 0;
                        }
                        if (!next[n].transient)
                                (void) open_psi(m, &next[n]);   /* hybrid: it may have appeared since */
                        n++;
                        j++;
                        continue;
                }
                if (c == 0)     /* recreated under the same path */
                        cg_close(&m->cg[i++]);
                struct cg *cg = &next[n];
                memcpy(cg->path, f->path, sizeof(cg->path));
                cg->ino = f->ino;
                cg->initial = m->initial_walk || was_dropped(m, f);
                for (int k = 0; k < _F_MAX; k++)
                        cg->fd[k] = -1;
                r = cg_open(m, cg);
                cg->transient = r == -EMFILE;
                if (r == 0 || cg->transient)
                        n++;
                j++;
        }
        while (i < m->n_cg)
                cg_close(&m->cg[i++]);
        free(m->cg);
        m->cg = next;
        m->n_cg = n;
        m->cap_cg = m->n_found ? m->n_found : 1;
        return 0;
}

/* The memory hierarchy's num_cgroups in /proc/cgroups (dying ones
 * included), or -errno. One small read instead of a walk. */
static long cgroup_count(struct mthp_cgmon *m) {
        if (m->count_fd < 0)
                return -ENOENT;
        int r = mthp_read_fd(m->count_fd, m->buf, sizeof(m->buf));
        if (r < 0)
                return r;
        for (const char *p = m->buf; *p;) {
                if (strncmp(p, "memory\t", 7) == 0) {
                        p += 7;
                        (void) parse_u64(&p);           /* hierarchy id */
                        if (*p++ != '\t')
                                break;
                        const char *q = p;
                        uint64_t v = parse_u64(&p);
                        return p > q ? (long) v : -EBADMSG;
                }
                p = strchrnul(p, '\n');
                if (*p)
                        p++;
        }
        return -EBADMSG;
}

/* The descriptors the managed cgroups hold, and how many have none; said
 * when that changes. */
static void fd_budget_count(struct mthp_cgmon *m) {
        unsigned fds = 0, transient = 0;
        for (unsigned i = 0; i < m->n_cg; i++) {
                transient += m->cg[i].transient;
                for (int k = 0; k < _F_MAX; k++)
                        fds += m->cg[i].fd[k] >= 0;
        }
        m->st.fds = fds;
        m->st.n_transient = transient;
        if (transient == m->said_transient)
                return;
        if (transient)
                mthp_log(LOG_WARNING,
                         "cgroup monitor: %u of %u managed cgroups have no descriptors of their own (soft "
                         "RLIMIT_NOFILE %llu, %u held by the others, %d kept in reserve): their files are opened "
                         "and closed each tick",
                         transient, m->n_cg, m->fd_limit, fds, MTHP_CGMON_FD_RESERVE);
        else
                mthp_log(LOG_INFO, "cgroup monitor: every managed cgroup has its descriptors again (%u)", fds);
        m->said_transient = transient;
}

static int walk(struct mthp_cgmon *m, uint64_t t_usec) {
        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        /* before the walk: a cgroup made during it counts at the next check */
        m->walk_count = cgroup_count(m);
        m->n_found = 0;
        m->walk_seen = 0;
        m->walk_truncated = false;
        int r = 0;
        if (m->match)
                r = m->walker == MTHP_CGMON_WALK_LIBCGROUP ? walk_libcgroup(m) : walk_dirfd(m);
        if (r < 0) {
                mthp_log(LOG_WARNING, "cgroup monitor: cannot walk the memory cgroups at %s: %s",
                         m->mem_root, mthp_errno_words(-r));
                /* keep what we have; try again at the next rescan */
        } else {
                fd_budget_update(m);
                r = merge(m);
                m->st.n_cgroups = m->walk_seen;
                if (r == 0)
                        m->initial_walk = false;
        }
        m->need_walk = false;
        m->walked = true;
        m->last_walk_t = m->last_check_t = t_usec;
        m->st.walks++;
        m->st.walk_usec = mthp_now_usec(CLOCK_MONOTONIC) - t0;
        m->st.n_managed = m->n_cg;
        fd_budget_count(m);
        return r;
}

/* ---- public ---- */

int mthp_cgmon_new(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_cgmon **ret) {
        if (caps->cg_layout == MTHP_CG_NONE || !caps->cg_memory[0])
                return -EOPNOTSUPP;
        struct mthp_cgmon *m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->h = h;
        m->layout = caps->cg_layout;
        m->v2 = caps->cg_layout == MTHP_CG_V2;
        m->rescan_usec = DEFAULT_RESCAN_USEC;
        m->full_usec = DEFAULT_FULL_USEC;
        m->count_fd = mthp_host_open_file(h, "/proc/cgroups", O_RDONLY);
        m->walk_count = -1;
        m->walker = MTHP_CGMON_WALK_DIRFD;
        mthp_strcpy(m->mem_root, sizeof(m->mem_root), caps->cg_memory);
        /* On the real root, ask libcgroup where the memory controller is
         * (the probe did too; this also readies its walker). */
        if (h->real && cgroup_init() == 0) {
                char *mnt = NULL;
                if (cgroup_get_subsys_mount_point("memory", &mnt) == 0 && mnt && strlen(mnt) < sizeof(m->mem_root))
                        mthp_strcpy(m->mem_root, sizeof(m->mem_root), mnt);
                free(mnt);
        }
        if (m->layout == MTHP_CG_V2)
                mthp_strcpy(m->psi_root, sizeof(m->psi_root), m->mem_root);
        else if (m->layout == MTHP_CG_HYBRID)
                mthp_strcpy(m->psi_root, sizeof(m->psi_root), caps->cg_unified);
        m->need_walk = true;
        m->initial_walk = true;
        fd_budget_update(m);
        *ret = m;
        return 0;
}

void mthp_cgmon_free(struct mthp_cgmon *m) {
        if (!m)
                return;
        for (unsigned i = 0; i < m->n_cg; i++)
                cg_close(&m->cg[i]);
        free(m->cg);
        free(m->found);
        if (m->count_fd >= 0)
                close(m->count_fd);
        free(m);
}

void mthp_cgmon_set_match(struct mthp_cgmon *m, mthp_cgmon_match_fn fn, void *user) {
        m->match = fn;
        m->match_user = user;
        m->need_walk = true;
        m->initial_walk = true;
}

void mthp_cgmon_set_watch_new(struct mthp_cgmon *m, bool on) {
        m->watch_new = on;
}

void mthp_cgmon_set_rescan(struct mthp_cgmon *m, uint64_t usec) {
        m->rescan_usec = usec ? usec : DEFAULT_RESCAN_USEC;
}

void mthp_cgmon_set_full_interval(struct mthp_cgmon *m, uint64_t usec) {
        m->full_usec = usec;
}

int mthp_cgmon_set_walker(struct mthp_cgmon *m, enum mthp_cgmon_walker w) {
        if (w == MTHP_CGMON_WALK_LIBCGROUP && !m->h->real)
                return -EOPNOTSUPP;
        if (w != MTHP_CGMON_WALK_LIBCGROUP && w != MTHP_CGMON_WALK_DIRFD)
                return -EINVAL;
        m->walker = w;
        m->need_walk = true;
        return 0;
}

int mthp_cgmon_walk(struct mthp_cgmon *m, uint64_t t_usec) {
        return walk(m, t_usec);
}

/* Read file i of c into m->buf: bytes, or -errno. One pread: cgroup files
 * are generated whole on the first read of an open file (seq_file), so a
 * short read is all of it and asking again for EOF would only double the
 * syscalls; a full buffer falls back to reading on. */
static int cg_read(struct mthp_cgmon *m, struct cg *c, int i) {
        m->st.files_read++;
        ssize_t n;
        do
                n = pread(c->fd[i], m->buf, sizeof(m->buf) - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n == sizeof(m->buf) - 1)
                return mthp_read_fd(c->fd[i], m->buf, sizeof(m->buf));
        m->buf[n] = 0;
        return (int) n;
}

static bool vanished(int r) {
        return r == -ENODEV || r == -ENOENT;
}

/* A spread deadline for the next forced full read: somewhere in the second
 * half of the interval, by a hash of the path, so cgroups found by one walk
 * do not all come due on the same tick. */
static uint64_t next_full(const struct mthp_cgmon *m, const struct cg *c, uint64_t t_usec, bool first) {
        if (!first)
                return t_usec + m->full_usec;
        uint32_t hash = 2166136261u;
        for (const char *p = c->path; *p; p++)
                hash = (hash ^ (uint8_t) *p) * 16777619u;
        return t_usec + m->full_usec / 2 + (m->full_usec / 2) * (hash % 1024) / 1024;
}

static void cg_gone(struct mthp_cgmon *m, struct cg *c, const char *file, int r) {
        if (vanished(r))
                mthp_log(LOG_DEBUG, "cgroup monitor: %s is gone", c->path);
        else {
                mthp_log(LOG_WARNING, "cgroup monitor: cannot read %s%s/%s: %s; dropped until the next walk",
                         m->mem_root, strcmp(c->path, "/") ? c->path : "", file, mthp_errno_words(-r));
                struct found *f = &m->dropped[m->n_dropped++ % DROPPED_MAX];
                memcpy(f->path, c->path, sizeof(f->path));
                f->ino = c->ino;
        }
        c->gone = true;
}

static void cg_sample(struct mthp_cgmon *m, struct cg *c, uint64_t t_usec) {
        struct mthp_cgroup_view *v = &c->view;
        int r;

        /* usage, every tick */
        uint64_t usage = 0;
        bool have_usage = false;
        if (c->fd[F_USAGE] >= 0) {
                r = cg_read(m, c, F_USAGE);
                if (r >= 0 && parse_limit(m->buf, &usage) == 0 && usage != UINT64_MAX)
                        have_usage = true;
                else if (r < 0 && vanished(r)) {
                        cg_gone(m, c, m->v2 ? "memory.current" : "memory.usage_in_bytes", r);
                        return;
                }
        }
        v->growth_kb_s = 0;
        if (have_usage && c->have_usage && t_usec > c->usage_t)
                v->growth_kb_s = ((double) usage - (double) c->usage) / 1024.0 / ((double) (t_usec - c->usage_t) / 1e6);
        v->usage_kb = have_usage ? usage / 1024 : 0;
        /* its appearance: at first sight, unless the first walk found it
         * (its start was not seen); again when it was empty then and a
         * process has since moved in (v1 and v2 both charge a new cgroup
         * nothing until then) */
        if (!c->sampled) {
                c->sampled = true;
                c->appeared_t = c->initial ? 0 : t_usec ? t_usec : 1;
                c->await_populated = have_usage && usage == 0;
        } else if (c->await_populated && have_usage && usage > 0) {
                c->appeared_t = t_usec ? t_usec : 1;
                c->await_populated = false;
        }
        v->appeared_usec = c->appeared_t;
        c->have_usage = have_usage;
        c->usage = usage;
        c->usage_t = t_usec;

        /* the rest only when something moved or it is due */
        if (c->have_prev && m->full_usec && have_usage && usage == c->full_usage && t_usec < c->next_full_t &&
            t_usec >= c->prev_t) {
                v->new_cgroup = false;
                /* usage has not moved: no evidence of faults this tick. The
                 * next full read averages over the whole gap, so a cgroup
                 * that faults and frees alike loses nothing over time, and
                 * one that stopped faulting does not keep its old rate (and
                 * its say over the knobs) for up to the full-read interval. */
                v->fault_rate = 0;
                return;
        }
        m->st.full_reads++;
        struct mthp_memstat ms;
        r = cg_read(m, c, F_STAT);
        if (r >= 0)
                r = mthp_parse_memstat(m->buf, &ms);
        if (r < 0) {
                cg_gone(m, c, "memory.stat", r);
                return;
        }
        uint64_t limit = UINT64_MAX;
        for (int i = F_LIMIT; i <= F_HIGH; i++) {
                uint64_t l;
                if (c->fd[i] >= 0 && cg_read(m, c, i) >= 0 && parse_limit(m->buf, &l) == 0 && l < limit)
                        limit = l;
        }
        if (!m->v2 && limit >= V1_NO_LIMIT)
                limit = UINT64_MAX;

        v->psi_present = false;
        v->psi_some_avg10 = 0;
        if (c->fd[F_PSI] >= 0) {
                r = cg_read(m, c, F_PSI);
                if (r >= 0 && parse_psi_some_avg10(m->buf, &v->psi_some_avg10) == 0)
                        v->psi_present = true;
                else if (r < 0) {
                        /* hybrid: the unified twin went away, or PSI is off
                         * (EOPNOTSUPP); the memory side lives on */
                        close(c->fd[F_PSI]);
                        c->fd[F_PSI] = -1;
                }
        }

        memcpy(v->path, c->path, sizeof(v->path));
        v->anon_kb = ms.anon_kb;
        v->shmem_kb = ms.shmem_kb;
        v->limit_kb = limit == UINT64_MAX ? 0 : limit / 1024;
        v->fault_rate = 0;
        v->new_cgroup = !c->have_prev;
        /* a counter that went backwards (reset): no rate this time */
        if (c->have_prev && t_usec > c->prev_t && ms.pgfault >= c->prev_pgfault)
                v->fault_rate = (double) (ms.pgfault - c->prev_pgfault) / ((double) (t_usec - c->prev_t) / 1e6);
        c->next_full_t = next_full(m, c, t_usec, !c->have_prev);
        c->have_prev = true;
        c->prev_t = t_usec;
        c->prev_pgfault = ms.pgfault;
        c->full_usage = usage;
}

int mthp_cgmon_tick(struct mthp_cgmon *m, uint64_t t_usec, struct mthp_cgroup_view *out, unsigned n_out,
                    unsigned *n) {
        *n = 0;
        bool rescan = t_usec - m->last_check_t >= m->rescan_usec;
        if (m->need_walk || !m->walked || t_usec < m->last_check_t)
                (void) walk(m, t_usec);
        else if (rescan || m->watch_new) {
                long count = cgroup_count(m);
                uint64_t since = t_usec - m->last_walk_t;
                bool changed = count >= 0 && count != m->walk_count;
                /* watching for new cgroups: a changed count walks at once
                 * while walks stay cheap against the time between them */
                if ((rescan && (count < 0 || changed)) || since >= FORCED_WALK_RESCANS * m->rescan_usec ||
                    (changed && since >= WALK_COST_FACTOR * m->st.walk_usec))
                        (void) walk(m, t_usec);
                else if (rescan) {
                        m->last_check_t = t_usec;
                        m->st.checks++;
                }
        }

        uint64_t t0 = mthp_now_usec(CLOCK_MONOTONIC);
        m->st.files_read = 0;
        m->st.full_reads = 0;
        unsigned k = 0, w = 0, unmonitored = 0;
        for (unsigned i = 0; i < m->n_cg; i++) {
                struct cg *c = &m->cg[i];
                bool skip = false;
                if (c->transient) {
                        int r = cg_open(m, c);
                        if (r == -EMFILE) {
                                /* not even for a moment: the reserve is the
                                 * knob writes' */
                                unmonitored++;
                                skip = true;
                        } else if (r < 0)
                                cg_gone(m, c, "memory.stat", r);
                }
                if (!skip && !c->gone)
                        cg_sample(m, c, t_usec);
                if (c->transient)
                        cg_close(c);
                if (c->gone) {
                        cg_close(c);
                        m->need_walk = true;
                        continue;
                }
                if (w != i)
                        m->cg[w] = *c;
                c = &m->cg[w++];
                if (skip)
                        continue;
                /* top n_out by fault rate; equal rates keep path order
                 * because cgroups come in path order and go after equals */
                if (n_out == 0 || (k == n_out && c->view.fault_rate <= out[k - 1].fault_rate))
                        continue;
                unsigned pos = k < n_out ? k++ : n_out - 1;   /* when full, the last one drops */
                while (pos > 0 && out[pos - 1].fault_rate < c->view.fault_rate) {
                        out[pos] = out[pos - 1];
                        pos--;
                }
                out[pos] = c->view;
        }
        m->n_cg = w;
        m->st.n_managed = w;
        m->st.n_unmonitored = unmonitored;
        if (unmonitored != m->said_unmonitored) {
                if (unmonitored)
                        mthp_log(LOG_WARNING,
                                 "cgroup monitor: %u of %u managed cgroups not monitored: fewer than %d descriptors "
                                 "would remain under the soft RLIMIT_NOFILE (kept for the knob writes)",
                                 unmonitored, w, MTHP_CGMON_FD_RESERVE);
                else
                        mthp_log(LOG_INFO, "cgroup monitor: every managed cgroup is monitored again");
                m->said_unmonitored = unmonitored;
        }
        *n = k;
        m->st.tick_usec = mthp_now_usec(CLOCK_MONOTONIC) - t0;
        return 0;
}

void mthp_cgmon_get_stats(const struct mthp_cgmon *m, struct mthp_cgmon_stats *st) {
        *st = m->st;
}

unsigned long long mthp_cgmon_fd_limit(const struct mthp_cgmon *m) {
        return m->fd_limit;
}
