/* SPDX-License-Identifier: MIT */
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
#include "mthp/host.h"
#include "mthp/policy.h"
#include "mthp/safe-io.h"
#include "mthp/util.h"
#include "mthp-config.h"

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
#define K_DELEGATED _K_MAX /* in [Match] */
static const char *const policy_keys[_K_MAX] = { "Anon", "Shmem", "Sizes", "Priority", "MaxBloat", "MaxPressure",
                                                  "Collapse" };

struct parse {
        struct mthp_policy *p;
        unsigned line[_K_MAX + 1];      /* 0: not set */
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

static int valid_pattern(const char *v, bool path) {
        if (!*v)
                return -EINVAL;
        if (strlen(v) >= MTHP_POLICY_PATTERN_MAX)
                return -ENAMETOOLONG;
        if (path && v[0] != '/')
                return -EINVAL;
        if (!path && strchr(v, '/'))
                return -EINVAL;
        for (const char *c = v; *c; c++)
                if ((unsigned char) *c < 0x20 || *c == 0x7f)
                        return -EINVAL;
        return 0;
}

/* A section header: [Match] and [Policy], each once. */
static int section_header(struct mthp_ini *ini, struct parse *ps, const char *section) {
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

/* [Match]: Cgroup= and Unit= patterns (each at most MTHP_POLICY_MATCH_MAX,
 * none twice), Delegated= once. */
static int match_key(struct mthp_ini *ini, struct parse *ps, const char *key, const char *value) {
        struct mthp_policy *p = ps->p;
        bool cg = strcmp(key, "Cgroup") == 0;
        if (strcmp(key, "Delegated") == 0) {
                if (ps->line[K_DELEGATED]) {
                        mthp_ini_error(ini, "key '%s' in [Match]: already set at line %u", key,
                                       ps->line[K_DELEGATED]);
                        return -EINVAL;
                }
                ps->line[K_DELEGATED] = ini->line;
                return mthp_parse_boolean(value, &p->delegated) < 0 ? mthp_ini_bad(ini, "Match", key, value, "yes or no")
                                                                    : 0;
        }
        if (!cg && strcmp(key, "Unit") != 0) {
                mthp_ini_error(ini, "unknown key '%s' in [Match]: expected Cgroup=, Unit= or Delegated=",
                               key);
                return -EINVAL;
        }
        unsigned *n = cg ? &p->n_cgroup : &p->n_unit;
        char(*pat)[MTHP_POLICY_PATTERN_MAX] = cg ? p->cgroup : p->unit;
        unsigned *lines = cg ? p->cgroup_line : p->unit_line;
        int vr = valid_pattern(value, cg);
        if (vr == -ENAMETOOLONG) {
                mthp_ini_error(ini, "key '%s' in [Match]: pattern of %zu bytes is too long, expected at most %d",
                               key, strlen(value), MTHP_POLICY_PATTERN_MAX - 1);
                return -EINVAL;
        }
        if (vr < 0)
                return mthp_ini_bad(ini, "Match", key, value,
                                    cg ? "a cgroup path or glob starting with '/' (e.g. /system.slice/*.service)"
                                       : "a unit name or glob without '/' (e.g. redis.service)");
        for (unsigned i = 0; i < *n; i++)
                if (strcmp(pat[i], value) == 0) {
                        mthp_ini_error(ini, "key '%s' in [Match]: '%s' repeats line %u", key, value, lines[i]);
                        return -EINVAL;
                }
        if (*n >= MTHP_POLICY_MATCH_MAX)
                return mthp_ini_bad(ini, "Match", key, value, "at most 8 of these keys per file");
        mthp_strcpy(pat[*n], MTHP_POLICY_PATTERN_MAX, value);
        lines[(*n)++] = ini->line;
        return 0;
}

/* The keys of [Policy], in the order of policy_keys: each parser returns
 * 0 or < 0 for a bad value, and expected says what the error asks for. */
static int key_mode(struct mthp_policy *p, enum mthp_kind kind, const char *value) {
        for (unsigned m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
                if (strcmp(value, mode_names[m]) == 0) {
                        p->mode[kind] = (enum mthp_policy_mode) m;
                        return 0;
                }
        return -EINVAL;
}

static int key_anon(struct mthp_policy *p, const char *value) {
        return key_mode(p, MTHP_ANON, value);
}

static int key_shmem(struct mthp_policy *p, const char *value) {
        return key_mode(p, MTHP_SHMEM, value);
}

static int key_sizes(struct mthp_policy *p, const char *value) {
        unsigned lo, hi;
        if (strcasecmp(value, "none") == 0 || mthp_parse_size_range(value, &lo, &hi) < 0 || lo < 8 ||
            (lo & (lo - 1)) || (hi & (hi - 1)))
                return -EINVAL;
        p->min_kb = lo;
        p->max_kb = hi;
        return 0;
}

static int key_priority(struct mthp_policy *p, const char *value) {
        return mthp_parse_whole(value, 0, 100, &p->priority);
}

static int key_max_bloat(struct mthp_policy *p, const char *value) {
        return mthp_parse_max_bloat(value, &p->max_bloat);
}

static int key_max_pressure(struct mthp_policy *p, const char *value) {
        return mthp_parse_percent(value, &p->max_pressure);
}

static int key_collapse(struct mthp_policy *p, const char *value) {
        return mthp_parse_boolean(value, &p->collapse);
}

static const struct {
        int (*parse)(struct mthp_policy *p, const char *value);
        const char *expected;
} policy_parsers[_K_MAX] = {
        [K_ANON] = { key_anon, "auto, always, madvise or never" },
        [K_SHMEM] = { key_shmem, "auto, always, madvise or never" },
        [K_SIZES] = { key_sizes, "a size range like 16K-2M or one size like 64K (powers of two, 8K or more)" },
        [K_PRIORITY] = { key_priority, "a whole number from 0 to 100" },
        [K_MAXBLOAT] = { key_max_bloat, "a percentage of extra RSS, 0-10000 (e.g. 20%)" },
        [K_MAXPRESSURE] = { key_max_pressure, "a percentage (PSI some avg10, e.g. 10%)" },
        [K_COLLAPSE] = { key_collapse, "yes or no" },
};

/* [Policy]: each key once. */
static int policy_key(struct mthp_ini *ini, struct parse *ps, const char *key, const char *value) {
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
        return policy_parsers[k].parse(ps->p, value) < 0
                       ? mthp_ini_bad(ini, "Policy", key, value, policy_parsers[k].expected)
                       : 0;
}

static int handler(struct mthp_ini *ini, const char *section, const char *key, const char *value) {
        struct parse *ps = ini->user;

        ps->last_line = ini->line;
        if (!key)
                return section_header(ini, ps, section);
        if (strcmp(section, "Match") == 0)
                return match_key(ini, ps, key, value);
        if (strcmp(section, "Policy") != 0) {
                if (!*section)
                        mthp_ini_error(ini, "unknown section []: key '%s' must follow [Match] or [Policy]", key);
                return -EINVAL; /* unknown sections were reported at their header */
        }
        return policy_key(ini, ps, key, value);
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

/* Read one policy file the way a root daemon must (mthp_safe_read_text):
 * a regular file, owned by root (or by whoever runs us: a test or a fake
 * host), not writable by group or others, at most 64 KiB. In a directory
 * (dirfd >= 0) it is opened relative to the directory's fd with
 * O_NOFOLLOW: a symlink is read only when it names a file of the directory
 * itself ("a.policy", opened with O_NOFOLLOW again), so nothing resolved
 * once can be swapped for something outside between check and open. */
static int read_policy(int dirfd, const char *dir, const char *name, bool check_owner, char **text, char *why,
                       size_t whysz) {
        unsigned flags = check_owner ? MTHP_SAFE_OWNER : 0;
        if (dirfd < 0)
                return mthp_safe_read_text(AT_FDCWD, NULL, name, flags, MTHP_SAFE_CONFIG_MAX, text, NULL, why,
                                           whysz);
        if (!check_owner)
                return mthp_safe_read_text(dirfd, dir, name, 0, MTHP_SAFE_CONFIG_MAX, text, NULL, why, whysz);
        struct stat st;
        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                snprintf(why, whysz, "%s/%s: %s", dir, name, strerror(errno));
                return -errno;
        }
        const char *target = name;
        char link[NAME_MAX + 1];
        if (S_ISLNK(st.st_mode)) {
                ssize_t n = readlinkat(dirfd, name, link, sizeof(link) - 1);
                if (n < 0) {
                        snprintf(why, whysz, "%s/%s: %s", dir, name, strerror(errno));
                        return -errno;
                }
                link[n] = 0;
                if (strchr(link, '/') || strcmp(link, "..") == 0 || strcmp(link, ".") == 0) {
                        snprintf(why, whysz,
                                 "%s/%s: symbolic link to %s, outside %s (a link may name a file of the directory "
                                 "itself): refused",
                                 dir, name, link, dir);
                        return -EPERM;
                }
                target = link;
        }
        return mthp_safe_read_text(dirfd, dir, target, flags | MTHP_SAFE_NOFOLLOW, MTHP_SAFE_CONFIG_MAX, text, NULL,
                                   why, whysz);
}

static void name_of(const char *path, char *name, size_t size) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        mthp_strcpy(name, size, base);
        char *dot = strrchr(name, '.');
        if (dot && strcmp(dot, ".policy") == 0)
                *dot = 0;
}

/* path: for messages and names; dirfd >= 0: name is the file in dir. */
static int load_one(int dirfd, const char *dir, const char *path, const char *name, bool check_owner,
                    struct mthp_policy *out, char *err, size_t errsz) {
        char why[2 * PATH_MAX + 128];
        char *text = NULL;
        int r = read_policy(dirfd, dir, dirfd >= 0 ? name : path, check_owner, &text, why, sizeof(why));
        if (r < 0) {
                add_error(err, errsz, "%s", why);
                return r == -ENOMEM ? r : -EINVAL;
        }
        char pname[MTHP_POLICY_NAME_MAX];
        name_of(path, pname, sizeof(pname));
        r = load_text(path, pname, text, out, err, errsz);
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

/* paths[i] is in directory dirs[layer[i]] (opened as fds[layer[i]]; layer
 * NULL: all in dirs[0]); fds NULL: paths are opened as they are. */
static int load_paths(const int *fds, const char *const *dirs, const unsigned *layer, char **paths, size_t n,
                      bool check_owner, struct mthp_policy_set **ret, char *err, size_t errsz) {
        if (err && errsz)
                err[0] = 0;
        if (n > MTHP_POLICIES_MAX) {
                add_error(err, errsz, "%s: %zu policy files, expected at most %d", dirs ? dirs[0] : "policy", n,
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
                const char *base = strrchr(paths[i], '/');
                unsigned l = layer ? layer[i] : 0;
                int q = load_one(fds ? fds[l] : -1, fds ? dirs[l] : NULL, paths[i], base ? base + 1 : paths[i],
                                 check_owner, &s->p[s->n], err, errsz);
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

/* the default PolicyDirectory= and the two it overrides */
static const char *const default_dirs[] = { MTHP_SYSCONFDIR "/policy.d", MTHP_RUNDIR "/policy.d",
                                            MTHP_VENDORDIR "/policy.d", NULL };

int mthp_policy_load_dir(const char *dir, bool check_owner, struct mthp_policy_set **ret, char *err, size_t errsz) {
        const char *one[] = { dir, NULL };
        return mthp_policy_load_dirs(strcmp(dir, default_dirs[0]) == 0 ? default_dirs : one, check_owner, ret, err,
                                     errsz);
}

int mthp_policy_load_files(const char *const *files, size_t n, bool check_owner, struct mthp_policy_set **ret,
                           char *err, size_t errsz) {
        return load_paths(NULL, NULL, NULL, (char **) files, n, check_owner, ret, err, errsz);
}

int mthp_policy_load_dirs(const char *const *dirs, bool check_owner, struct mthp_policy_set **ret, char *err,
                          size_t errsz) {
        char why[PATH_MAX + 256];
        int fds[MTHP_POLICY_DIRS_MAX];
        size_t nd = 0, n = 0;
        char **paths = NULL;
        int r = 0;
        if (err && errsz)
                err[0] = 0;
        /* each directory as load_dir checks it; a missing one has no files */
        for (; dirs[nd] && nd < MTHP_POLICY_DIRS_MAX; nd++) {
                fds[nd] = mthp_safe_open_dir(dirs[nd], check_owner ? MTHP_SAFE_OWNER : 0, false, why, sizeof(why));
                if (fds[nd] < 0 && fds[nd] != -ENOENT && r == 0) {
                        r = fds[nd];
                        if (err && errsz)
                                snprintf(err, errsz, "%s\n", why);
                }
        }
        if (r == 0)
                r = mthp_conf_files_list(dirs, ".policy", &paths, &n, err, errsz);
        unsigned *layer = r == 0 ? calloc(n ? n : 1, sizeof(*layer)) : NULL;
        if (r == 0 && !layer)
                r = -ENOMEM;
        for (size_t i = 0; r == 0 && i < n; i++) {
                size_t len = (size_t) (strrchr(paths[i], '/') - paths[i]);
                while (layer[i] < nd && (strlen(dirs[layer[i]]) != len || strncmp(dirs[layer[i]], paths[i], len)))
                        layer[i]++;
        }
        if (r == 0)
                r = load_paths(fds, dirs, layer, paths, n, check_owner, ret, err, errsz);
        free(layer);
        mthp_conf_files_free(paths, n);
        for (size_t i = 0; i < nd; i++)
                if (fds[i] >= 0)
                        close(fds[i]);
        return r;
}

void mthp_policy_set_free(struct mthp_policy_set *s) {
        if (!s)
                return;
        free(s->p);
        free(s);
}

static bool matches_unit(const struct mthp_policy *p, const char *path) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        for (unsigned i = 0; i < p->n_unit; i++)
                if (*base && fnmatch(p->unit[i], base, 0) == 0)
                        return true;
        return false;
}

bool mthp_policy_cgroup_delegated(const struct mthp_policy_set *s, const char *cgroup) {
        /* an ancestor named user@*.service (the cgroup itself is the
         * manager's, still root's) */
        const char *p = cgroup;
        while ((p = strchr(p, '/'))) {
                const char *c = p + 1, *end = strchrnul(c, '/');
                if (!*end)
                        break; /* the last component */
                size_t n = (size_t) (end - c);
                if (n > 13 && strncmp(c, "user@", 5) == 0 && strncmp(end - 8, ".service", 8) == 0)
                        return true;
                p = end;
        }
        if (!s || !s->user_owned)
                return false;
        char buf[MTHP_PATH_MAX];
        if (mthp_strcpy(buf, sizeof(buf), cgroup) < 0)
                return true; /* cannot tell: do not attach */
        for (;;) {
                if (s->user_owned(s->user_owned_data, buf))
                        return true;
                char *slash = strrchr(buf, '/');
                if (!slash || slash == buf)
                        return false;
                *slash = 0;
        }
}

bool mthp_policy_matches(const struct mthp_policy *p, const char *path) {
        for (unsigned i = 0; i < p->n_cgroup; i++)
                if (fnmatch(p->cgroup[i], path, FNM_PATHNAME) == 0)
                        return true;
        return p->n_unit && matches_unit(p, path);
}

/* The same, and a Unit= match counts in a delegated subtree only with
 * Delegated=yes. */
static bool set_matches(const struct mthp_policy_set *s, const struct mthp_policy *p, const char *path) {
        for (unsigned i = 0; i < p->n_cgroup; i++)
                if (fnmatch(p->cgroup[i], path, FNM_PATHNAME) == 0)
                        return true;
        if (!p->n_unit || !matches_unit(p, path))
                return false;
        return p->delegated || !mthp_policy_cgroup_delegated(s, path);
}

bool mthp_policy_set_matches(const struct mthp_policy_set *s, unsigned i, const char *path) {
        return s && i < s->n && set_matches(s, &s->p[i], path);
}

bool mthp_cgroup_owned_by_user(const struct mthp_host *h, const struct mthp_caps *caps, const char *cgroup) {
        const char *mount = caps->cg_memory[0] ? caps->cg_memory : caps->cg_unified;
        char path[2 * MTHP_PATH_MAX];
        if (!mount[0] || snprintf(path, sizeof(path), "%s%s", mount, cgroup) >= (int) sizeof(path))
                return false;
        struct stat top, st;
        int fd = mthp_host_open_file(h, mount, O_PATH);
        if (fd < 0)
                return false;
        int r = fstat(fd, &top);
        close(fd);
        fd = mthp_host_open_file(h, path, O_PATH);
        if (fd < 0 || r < 0) {
                if (fd >= 0)
                        close(fd);
                return false;
        }
        r = fstat(fd, &st);
        close(fd);
        return r == 0 && st.st_uid != top.st_uid && st.st_uid != 0;
}

/* Has path a ".." component? /proc/PID/cgroup shows a cgroup outside the
 * reader's cgroup namespace (mthpd in an unprivileged container on cgroup
 * v2) as /../../NAME: that names no cgroup mthpd can read, and its last
 * component must not pass for a host unit of that name. */
static bool outside_namespace(const char *path) {
        for (const char *c = path; (c = strstr(c, "/..")); c += 3)
                if (c[3] == '/' || c[3] == 0)
                        return true;
        return false;
}

int mthp_policy_match(const struct mthp_policy_set *s, const char *path, char *managed, size_t size) {
        if (!s || !s->n || !path || path[0] != '/' || outside_namespace(path))
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
                        if (set_matches(s, &s->p[i], buf)) {
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
