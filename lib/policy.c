/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ini-util.h"
#include "mthp/config.h"
#include "mthp/policy.h"

static const char *const mode_names[] = {
        [MTHP_POLICY_AUTO] = "auto",
        [MTHP_POLICY_ALWAYS] = "always",
        [MTHP_POLICY_MADVISE] = "madvise",
        [MTHP_POLICY_NEVER] = "never",
};

const char *mthp_policy_mode_name(enum mthp_policy_mode m) {
        return (unsigned) m < sizeof(mode_names) / sizeof(mode_names[0]) ? mode_names[m] : "?";
}

/* Parser state for one file: what was set, and where, so that repeated keys
 * and contradictions can name their lines. */
enum { K_ANON, K_SHMEM, K_SIZES, K_PRIORITY, K_MAXBLOAT, K_MAXPRESSURE, K_COLLAPSE, _K_MAX };
static const char *const policy_keys[_K_MAX] = { "Anon", "Shmem", "Sizes", "Priority", "MaxBloat", "MaxPressure",
                                                  "Collapse" };

struct parse {
        struct mthp_policy *p;
        unsigned line[_K_MAX];          /* 0: not set */
        unsigned match_line;            /* line of [Match], 0: none */
        unsigned policy_line;
        unsigned last_line;
};

static void policy_defaults(struct mthp_policy *p, const char *name) {
        memset(p, 0, sizeof(*p));
        mthp_strcpy(p->name, sizeof(p->name), name);
        p->priority = 50;
        p->max_bloat = NAN;
        p->max_pressure = NAN;
}

#define BAD(what) \
        (mthp_ini_error(ini, "key '%s' in [%s]: expected %s, got '%s'", key, section, what, value), -EINVAL)

static int valid_pattern(const char *v, bool path) {
        if (!*v || strlen(v) >= MTHP_POLICY_PATTERN_MAX)
                return -EINVAL;
        if (path && v[0] != '/')
                return -EINVAL;
        if (!path && strchr(v, '/'))
                return -EINVAL;
        for (const char *c = v; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return -EINVAL;
        return 0;
}

static int handler(struct mthp_ini *ini, const char *section, const char *key, const char *value) {
        struct parse *ps = ini->user;
        struct mthp_policy *p = ps->p;

        ps->last_line = ini->line;
        if (!key) {
                unsigned *seen = strcmp(section, "Match") == 0    ? &ps->match_line
                                 : strcmp(section, "Policy") == 0 ? &ps->policy_line
                                                                  : NULL;
                if (!seen) {
                        mthp_ini_error(ini, "unknown section [%s]: expected [Match] or [Policy]", section);
                        return -EINVAL;
                }
                if (*seen) {
                        mthp_ini_error(ini, "section [%s] repeated (first at line %u): expected each section once",
                                       section, *seen);
                        return -EINVAL;
                }
                *seen = ini->line;
                return 0;
        }

        if (strcmp(section, "Match") == 0) {
                bool cg = strcmp(key, "Cgroup") == 0;
                if (!cg && strcmp(key, "Unit") != 0) {
                        mthp_ini_error(ini, "unknown key '%s' in [Match]: expected Cgroup= or Unit=", key);
                        return -EINVAL;
                }
                unsigned *n = cg ? &p->n_cgroup : &p->n_unit;
                char(*pat)[MTHP_POLICY_PATTERN_MAX] = cg ? p->cgroup : p->unit;
                unsigned *lines = cg ? p->cgroup_line : p->unit_line;
                if (valid_pattern(value, cg) < 0)
                        return BAD(cg ? "a cgroup path or glob starting with '/' (e.g. /system.slice/*.service)"
                                      : "a unit name or glob without '/' (e.g. redis.service)");
                for (unsigned i = 0; i < *n; i++)
                        if (strcmp(pat[i], value) == 0) {
                                mthp_ini_error(ini, "key '%s' in [Match]: '%s' repeats line %u", key, value, lines[i]);
                                return -EINVAL;
                        }
                if (*n >= MTHP_POLICY_MATCH_MAX)
                        return BAD("at most 8 of these keys per file");
                mthp_strcpy(pat[*n], MTHP_POLICY_PATTERN_MAX, value);
                lines[(*n)++] = ini->line;
                return 0;
        }
        if (strcmp(section, "Policy") != 0) {
                if (!*section)
                        mthp_ini_error(ini, "unknown section []: key '%s' must follow [Match] or [Policy]", key);
                return -EINVAL; /* unknown sections were reported at their header */
        }

        int k;
        for (k = 0; k < _K_MAX; k++)
                if (strcmp(key, policy_keys[k]) == 0)
                        break;
        if (k == _K_MAX) {
                mthp_ini_error(ini,
                               "unknown key '%s' in [Policy]: expected Anon=, Shmem=, Sizes=, Priority=, MaxBloat=, "
                               "MaxPressure= or Collapse=",
                               key);
                return -EINVAL;
        }
        if (ps->line[k]) {
                mthp_ini_error(ini, "key '%s' in [Policy]: already set at line %u", key, ps->line[k]);
                return -EINVAL;
        }
        ps->line[k] = ini->line;

        switch (k) {
        case K_ANON:
        case K_SHMEM: {
                enum mthp_kind kind = k == K_ANON ? MTHP_ANON : MTHP_SHMEM;
                for (unsigned m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
                        if (strcmp(value, mode_names[m]) == 0) {
                                p->mode[kind] = (enum mthp_policy_mode) m;
                                return 0;
                        }
                return BAD("auto, always, madvise or never");
        }
        case K_SIZES: {
                unsigned lo, hi;
                if (strcasecmp(value, "none") == 0 || mthp_parse_size_range(value, &lo, &hi) < 0 || lo < 8 ||
                    (lo & (lo - 1)) || (hi & (hi - 1)))
                        return BAD("a size range like 16K-2M or one size like 64K (powers of two, 8K or more)");
                p->min_kb = lo;
                p->max_kb = hi;
                return 0;
        }
        case K_PRIORITY: {
                char *end;
                errno = 0;
                long v = strtol(value, &end, 10);
                if (end == value || *end || errno || v < 0 || v > 100)
                        return BAD("a whole number from 0 to 100");
                p->priority = (unsigned) v;
                return 0;
        }
        case K_MAXBLOAT: {
                char *end;
                double v = strtod(value, &end);
                if (end == value || (*end && strcmp(end, "%") != 0) || !(v >= 0 && v <= 10000))
                        return BAD("a percentage of extra RSS, 0-10000 (e.g. 20%)");
                p->max_bloat = v;
                return 0;
        }
        case K_MAXPRESSURE:
                return mthp_parse_percent(value, &p->max_pressure) < 0 ? BAD("a percentage (PSI some avg10, e.g. 10%)")
                                                                        : 0;
        case K_COLLAPSE:
                return mthp_parse_boolean(value, &p->collapse) < 0 ? BAD("yes or no") : 0;
        }
        return -EINVAL;
}

static void add_error(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void add_error(char *err, size_t errsz, const char *fmt, ...) {
        if (!err || !errsz)
                return;
        size_t len = strnlen(err, errsz);
        if (len >= errsz - 1)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + len, errsz - len, fmt, ap);
        va_end(ap);
        len = strnlen(err, errsz);
        if (len < errsz - 1) {
                err[len] = '\n';
                err[len + 1] = 0;
        }
}

/* Whole-file rules: something to match, and no contradictions. */
static int check_policy(const struct parse *ps, const char *file, char *err, size_t errsz) {
        const struct mthp_policy *p = ps->p;
        int r = 0;
        if (p->n_cgroup + p->n_unit == 0) {
                add_error(err, errsz, "%s:%u: [Match]: expected at least one Cgroup= or Unit=, got none", file,
                          ps->match_line ? ps->match_line : 1);
                r = -EINVAL;
        }
        if (!ps->policy_line) {
                add_error(err, errsz, "%s:%u: expected a [Policy] section, got none", file,
                          ps->last_line ? ps->last_line : 1);
                r = -EINVAL;
        }
        if (p->collapse && p->mode[MTHP_ANON] == MTHP_POLICY_NEVER) {
                add_error(err, errsz,
                          "%s:%u: key 'Collapse' in [Policy]: contradicts Anon=never (line %u): collapsing makes "
                          "huge pages; expected Collapse=no or another Anon=",
                          file, ps->line[K_COLLAPSE], ps->line[K_ANON]);
                r = -EINVAL;
        }
        if (ps->line[K_MAXBLOAT] && p->mode[MTHP_ANON] != MTHP_POLICY_AUTO && p->mode[MTHP_SHMEM] != MTHP_POLICY_AUTO) {
                add_error(err, errsz,
                          "%s:%u: key 'MaxBloat' in [Policy]: has no effect: it bounds Anon=auto and Shmem=auto, "
                          "but Anon=%s and Shmem=%s",
                          file, ps->line[K_MAXBLOAT], mode_names[p->mode[MTHP_ANON]], mode_names[p->mode[MTHP_SHMEM]]);
                r = -EINVAL;
        }
        bool no_sizes = true;
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                no_sizes = no_sizes && (p->mode[k] == MTHP_POLICY_NEVER || p->mode[k] == MTHP_POLICY_MADVISE);
        if (ps->line[K_SIZES] && no_sizes && !(p->mode[MTHP_ANON] == MTHP_POLICY_MADVISE ||
                                                p->mode[MTHP_SHMEM] == MTHP_POLICY_MADVISE)) {
                add_error(err, errsz,
                          "%s:%u: key 'Sizes' in [Policy]: has no effect when Anon=never and Shmem=never", file,
                          ps->line[K_SIZES]);
                r = -EINVAL;
        }
        return r;
}

static int load_text(const char *file, const char *name, const char *text, struct mthp_policy *out, char *err,
                     size_t errsz) {
        struct mthp_policy *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        policy_defaults(p, name);
        mthp_strcpy(p->file, sizeof(p->file), file);
        struct parse ps = { .p = p };
        size_t len = err ? strnlen(err, errsz) : 0;
        int r = mthp_ini_parse_string(file, text, handler, &ps, err ? err + len : NULL, err ? errsz - len : 0);
        int r2 = check_policy(&ps, file, err, errsz);
        if (r == 0)
                r = r2;
        if (r == 0)
                *out = *p;
        free(p);
        return r;
}

int mthp_policy_load_string(const char *name, const char *text, struct mthp_policy *out, char *err, size_t errsz) {
        if (err && errsz)
                err[0] = 0;
        return load_text(name, name, text, out, err, errsz);
}

#define POLICY_FILE_MAX (64 * 1024)

/* Open a policy file the way a root daemon must: a regular file, owned by
 * root (or by whoever runs us: a test or a fake host), not writable by group
 * or others; a symlink only if it stays inside dir. */
static int open_checked(const char *dir, const char *path, bool check_owner, char *why, size_t whysz) {
        struct stat st;
        if (lstat(path, &st) < 0) {
                snprintf(why, whysz, "%s", strerror(errno));
                return -errno;
        }
        if (S_ISLNK(st.st_mode) && dir && check_owner) {
                char rdir[PATH_MAX], rpath[PATH_MAX];
                if (!realpath(dir, rdir) || !realpath(path, rpath)) {
                        snprintf(why, whysz, "symbolic link that does not resolve: %s", strerror(errno));
                        return -ENOENT;
                }
                size_t n = strlen(rdir);
                if (strncmp(rpath, rdir, n) != 0 || rpath[n] != '/') {
                        snprintf(why, whysz, "symbolic link to %s, outside %s: refused", rpath, dir);
                        return -EPERM;
                }
        }
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                snprintf(why, whysz, "%s", strerror(errno));
                return -errno;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                snprintf(why, whysz, "not a regular file");
                close(fd);
                return -EINVAL;
        }
        if (check_owner && st.st_uid != 0 && st.st_uid != geteuid()) {
                snprintf(why, whysz, "owned by uid %u, expected root: whoever can write it can steer mthpd; refused",
                         (unsigned) st.st_uid);
                close(fd);
                return -EPERM;
        }
        if (check_owner && (st.st_mode & (S_IWGRP | S_IWOTH))) {
                snprintf(why, whysz, "writable by %s (mode %04o): whoever can write it can steer mthpd; refused",
                         (st.st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned) (st.st_mode & 07777));
                close(fd);
                return -EPERM;
        }
        if (st.st_size > POLICY_FILE_MAX) {
                snprintf(why, whysz, "%lld bytes, expected at most %d", (long long) st.st_size, POLICY_FILE_MAX);
                close(fd);
                return -EFBIG;
        }
        return fd;
}

static void name_of(const char *path, char *name, size_t size) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        mthp_strcpy(name, size, base);
        char *dot = strrchr(name, '.');
        if (dot && strcmp(dot, ".policy") == 0)
                *dot = 0;
}

static int load_one(const char *dir, const char *path, bool check_owner, struct mthp_policy *out, char *err,
                    size_t errsz) {
        char why[PATH_MAX + 128];
        int fd = open_checked(dir, path, check_owner, why, sizeof(why));
        if (fd < 0) {
                add_error(err, errsz, "%s: %s", path, why);
                return fd;
        }
        char *text = malloc(POLICY_FILE_MAX + 1);
        if (!text) {
                close(fd);
                return -ENOMEM;
        }
        int n = mthp_read_fd(fd, text, POLICY_FILE_MAX + 1);
        close(fd);
        if (n < 0) {
                add_error(err, errsz, "%s: %s", path, strerror(-n));
                free(text);
                return n;
        }
        if (memchr(text, 0, (size_t) n)) {
                add_error(err, errsz, "%s: contains a NUL byte: expected a text file", path);
                free(text);
                return -EINVAL;
        }
        char name[MTHP_POLICY_NAME_MAX];
        name_of(path, name, sizeof(name));
        int r = load_text(path, name, text, out, err, errsz);
        free(text);
        return r;
}

/* The same pattern in two files (or, already caught, twice in one) would
 * make the outcome depend on file names: an error naming both places. */
static int check_overlaps(const struct mthp_policy_set *s, char *err, size_t errsz) {
        int r = 0;
        for (unsigned a = 0; a < s->n; a++)
                for (unsigned b = a + 1; b < s->n; b++) {
                        const struct mthp_policy *pa = &s->p[a], *pb = &s->p[b];
                        for (unsigned i = 0; i < pb->n_cgroup; i++)
                                for (unsigned j = 0; j < pa->n_cgroup; j++)
                                        if (strcmp(pb->cgroup[i], pa->cgroup[j]) == 0) {
                                                add_error(err, errsz,
                                                          "%s:%u: key 'Cgroup' in [Match]: '%s' is already "
                                                          "matched by %s:%u: expected each cgroup in one file",
                                                          pb->file, pb->cgroup_line[i], pb->cgroup[i], pa->file,
                                                          pa->cgroup_line[j]);
                                                r = -EINVAL;
                                        }
                        for (unsigned i = 0; i < pb->n_unit; i++)
                                for (unsigned j = 0; j < pa->n_unit; j++)
                                        if (strcmp(pb->unit[i], pa->unit[j]) == 0) {
                                                add_error(err, errsz,
                                                          "%s:%u: key 'Unit' in [Match]: '%s' is already matched "
                                                          "by %s:%u: expected each unit in one file",
                                                          pb->file, pb->unit_line[i], pb->unit[i], pa->file,
                                                          pa->unit_line[j]);
                                                r = -EINVAL;
                                        }
                }
        return r;
}

static int cmp_str(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int load_paths(const char *dir, char **paths, size_t n, bool check_owner, struct mthp_policy_set **ret,
                      char *err, size_t errsz) {
        if (err && errsz)
                err[0] = 0;
        if (n > MTHP_POLICIES_MAX) {
                add_error(err, errsz, "%s: %zu policy files, expected at most %d", dir ? dir : "policy", n,
                          MTHP_POLICIES_MAX);
                return -E2BIG;
        }
        struct mthp_policy_set *s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        s->p = calloc(n ? n : 1, sizeof(*s->p));
        if (!s->p) {
                free(s);
                return -ENOMEM;
        }
        int r = 0;
        for (size_t i = 0; i < n; i++) {
                int q = load_one(dir, paths[i], check_owner, &s->p[s->n], err, errsz);
                if (q == -ENOMEM) {
                        r = q;
                        break;
                }
                if (q < 0)
                        r = -EINVAL;
                else
                        s->n++;
        }
        /* among the files that parsed too: every error at once */
        if (r != -ENOMEM && check_overlaps(s, err, errsz) < 0)
                r = -EINVAL;
        if (r < 0) {
                mthp_policy_set_free(s);
                return r;
        }
        *ret = s;
        return 0;
}

int mthp_policy_load_dir(const char *dir, bool check_owner, struct mthp_policy_set **ret, char *err, size_t errsz) {
        DIR *d = opendir(dir);
        if (!d) {
                if (errno == ENOENT) {
                        if (err && errsz)
                                err[0] = 0;
                        return load_paths(dir, NULL, 0, check_owner, ret, err, errsz);
                }
                int e = errno;
                if (err && errsz)
                        snprintf(err, errsz, "%s: %s\n", dir, strerror(e));
                return -e;
        }
        char **paths = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                size_t len = strlen(de->d_name);
                if (len <= 7 || strcmp(de->d_name + len - 7, ".policy") != 0 || de->d_name[0] == '.')
                        continue;
                if (n == cap) {
                        cap = cap ? cap * 2 : 16;
                        char **np = realloc(paths, cap * sizeof(*paths));
                        if (!np) {
                                r = -ENOMEM;
                                break;
                        }
                        paths = np;
                }
                if (asprintf(&paths[n], "%s/%s", dir, de->d_name) < 0) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);
        if (r == 0) {
                qsort(paths, n, sizeof(*paths), cmp_str);
                r = load_paths(dir, paths, n, check_owner, ret, err, errsz);
        }
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
        return r;
}

int mthp_policy_load_files(const char *const *files, size_t n, bool check_owner, struct mthp_policy_set **ret,
                           char *err, size_t errsz) {
        return load_paths(NULL, (char **) files, n, check_owner, ret, err, errsz);
}

void mthp_policy_set_free(struct mthp_policy_set *s) {
        if (!s)
                return;
        free(s->p);
        free(s);
}

bool mthp_policy_matches(const struct mthp_policy *p, const char *path) {
        for (unsigned i = 0; i < p->n_cgroup; i++)
                if (fnmatch(p->cgroup[i], path, FNM_PATHNAME) == 0)
                        return true;
        if (p->n_unit) {
                const char *base = strrchr(path, '/');
                base = base ? base + 1 : path;
                for (unsigned i = 0; i < p->n_unit; i++)
                        if (*base && fnmatch(p->unit[i], base, 0) == 0)
                                return true;
        }
        return false;
}

int mthp_policy_match(const struct mthp_policy_set *s, const char *path, char *managed, size_t size) {
        if (!s || !s->n || !path || path[0] != '/')
                return -1;
        char buf[MTHP_PATH_MAX];
        if (mthp_strcpy(buf, sizeof(buf), path) < 0)
                return -1;
        /* the cgroup itself, then each ancestor up to the root "/" */
        for (;;) {
                size_t len = strlen(buf);
                while (len > 1 && buf[len - 1] == '/')
                        buf[--len] = 0;
                for (unsigned i = 0; i < s->n; i++)
                        if (mthp_policy_matches(&s->p[i], buf)) {
                                if (managed)
                                        mthp_strcpy(managed, size, buf);
                                return (int) i;
                        }
                char *slash = strrchr(buf, '/');
                if (!slash || len <= 1)
                        return -1;
                if (slash == buf)
                        buf[1] = 0;
                else
                        *slash = 0;
        }
}
