/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/escape.h"
#include "mthp/log.h"
#include "mthp/probe.h"
#include "mthp/util.h"

int mthp_knob_parse(const char *text, char selected[MTHP_VALUE_MAX], char allowed[][MTHP_VALUE_MAX],
                    unsigned *n_allowed) {
        const char *p = text;
        unsigned n = 0;
        bool found = false;

        while (*p) {
                while (isspace((unsigned char) *p))
                        p++;
                if (!*p)
                        break;
                /* words end at any space isspace() skips, or a value
                 * could hold a '\r' the kernel would refuse back */
                size_t len = strcspn(p, " \t\n\v\f\r");
                bool sel = len >= 2 && p[0] == '[' && p[len - 1] == ']';
                const char *w = sel ? p + 1 : p;
                size_t wlen = sel ? len - 2 : len;
                if (wlen == 0 || wlen >= MTHP_VALUE_MAX || memchr(w, '[', wlen) || memchr(w, ']', wlen))
                        return -EBADMSG;
                if (allowed) {
                        if (n >= MTHP_VALUES_MAX)
                                return -E2BIG;
                        memcpy(allowed[n], w, wlen);
                        allowed[n][wlen] = 0;
                }
                n++;
                if (sel) {
                        if (found)
                                return -EBADMSG;
                        memcpy(selected, w, wlen);
                        selected[wlen] = 0;
                        found = true;
                }
                p += len;
        }
        if (n_allowed)
                *n_allowed = n;
        return found ? 0 : -EBADMSG;
}

int mthp_number_parse(const char *text, char value[MTHP_VALUE_MAX]) {
        const char *p = text;
        while (isspace((unsigned char) *p))
                p++;
        size_t len = strspn(p, "0123456789");
        if (len == 0 || len > 9)
                return -EBADMSG;
        for (const char *q = p + len; *q; q++)
                if (!isspace((unsigned char) *q))
                        return -EBADMSG;
        memcpy(value, p, len);
        value[len] = 0;
        return 0;
}

int mthp_knob_value(const struct mthp_knob *k, const char *text, char value[MTHP_VALUE_MAX]) {
        if (k->type == MTHP_KNOB_NUMBER)
                return mthp_number_parse(text, value);
        return mthp_knob_parse(text, value, NULL, NULL);
}

int mthp_knob_read(const struct mthp_host *h, const struct mthp_knob *k, char value[MTHP_VALUE_MAX]) {
        char buf[256];
        int r = mthp_host_read(h, k->path, buf, sizeof(buf));
        if (r < 0)
                return r;
        return mthp_knob_value(k, buf, value);
}

/* page^2/8 = PMD: page = sqrt(8 * PMD), a power of two from 4K to 64K. */
static unsigned page_kb_from_pmd(unsigned pmd_kb) {
        for (unsigned kb = 4; kb <= 64; kb *= 2)
                if (kb * kb * 128 == pmd_kb)  /* (kb * 1024)^2 / 8 bytes */
                        return kb;
        return 0;
}

static int add_knob(const struct mthp_host *h, struct mthp_caps *caps, enum mthp_knob_type type, unsigned kb,
                    const char *path, const char *id) {
        char buf[256], sel[MTHP_VALUE_MAX];
        struct mthp_knob *k;

        if (caps->n_knobs >= MTHP_KNOBS_MAX)
                return -E2BIG;
        int r = mthp_host_read(h, path, buf, sizeof(buf));
        if (r < 0)
                return r;
        if ((size_t) r == sizeof(buf) - 1) {  /* maybe more: not a cut selection */
                mthp_log(type == MTHP_KNOB_NUMBER ? LOG_WARNING : LOG_ERR,
                         "%s: expected a selection or number file of less than %zu bytes", path, sizeof(buf) - 1);
                return -EBADMSG;
        }
        k = &caps->knobs[caps->n_knobs];
        memset(k, 0, sizeof(*k));
        r = type == MTHP_KNOB_NUMBER ? mthp_number_parse(buf, sel) : mthp_knob_parse(buf, sel, k->allowed, &k->n_allowed);
        if (r < 0) {
                size_t len = strlen(buf);
                while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
                        buf[--len] = 0;
                /* the caller stops on a selection file it cannot read (it
                 * would not know what to restore) and leaves a number alone */
                if (type == MTHP_KNOB_NUMBER)
                        mthp_log(LOG_WARNING, "%s: expected a plain unsigned number of at most 9 digits, got '%.64s': "
                                 "left alone", path, buf);
                else
                        mthp_log(LOG_ERR, "%s: expected a selection like 'always [madvise] never': one bracketed "
                                 "value among at most %d space-separated values of at most %d bytes, got '%.128s'",
                                 path, MTHP_VALUES_MAX, MTHP_VALUE_MAX - 1, buf);
                return r == -E2BIG ? -EBADMSG : r;
        }
        k->type = type;
        k->size_kb = kb;
        snprintf(k->path, sizeof(k->path), "%s", path);
        snprintf(k->id, sizeof(k->id), "%s", id);
        return (int) caps->n_knobs++;
}

static int cmp_size(const void *a, const void *b) {
        const struct mthp_size *x = a, *y = b;
        return (x->kb > y->kb) - (x->kb < y->kb);
}

/* Which stats a size keeps when it has more than MTHP_STATS_MAX: the ones
 * mthpd reads every tick, then collapse_* (what tells khugepaged's mTHP
 * collapse), then by name. */
static int stat_rank(const char *name) {
        return mthp_stat_is_hot(name) ? 0 : strncmp(name, "collapse_", 9) == 0 ? 1 : 2;
}

static int cmp_stat_rank(const void *a, const void *b) {
        const char *x = *(const char *const *) a, *y = *(const char *const *) b;
        int rx = stat_rank(x), ry = stat_rank(y);
        return rx != ry ? rx - ry : strcmp(x, y);
}

/* A size's stats/ files, sorted by name. Beyond MTHP_STATS_MAX (the
 * sampler keeps one open file each: the kernel has 18 today) or with a
 * name of MTHP_STAT_NAME_MAX bytes or more, a stat is not read: its name
 * goes into skipped (", "-separated, each once) for the caller's one log
 * line, and counts in *n_skipped. */
static int probe_stats(const struct mthp_host *h, struct mthp_size *sz, char *skipped, size_t skipped_size,
                       unsigned *n_skipped) {
        char path[MTHP_PATH_MAX];
        snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/stats", sz->kb);
        int fd = mthp_host_open_file(h, path, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return fd == -ENOENT ? 0 : fd;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        char **names = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (n == cap) {
                        cap = cap ? 2 * cap : 32;
                        char **nn = realloc(names, cap * sizeof(*names));
                        if (!nn) {
                                r = -ENOMEM;
                                break;
                        }
                        names = nn;
                }
                if (!(names[n] = strdup(de->d_name))) {
                        r = -ENOMEM;
                        break;
                }
                n++;
        }
        closedir(d);
        if (n > 1)
                qsort(names, n, sizeof(*names), cmp_stat_rank);
        for (size_t i = 0; i < n; i++) {
                if (r == 0 && sz->n_stats < MTHP_STATS_MAX && strlen(names[i]) < MTHP_STAT_NAME_MAX)
                        mthp_strcpy(sz->stats[sz->n_stats++], MTHP_STAT_NAME_MAX, names[i]);
                else if (r == 0) {
                        ++*n_skipped;
                        size_t len = strlen(skipped), nl = strlen(names[i]);
                        bool seen = false;
                        for (const char *p = skipped; (p = strstr(p, names[i])) && !seen; p += nl)
                                seen = (p == skipped || p[-1] == ' ') && (!p[nl] || p[nl] == ',');
                        if (!seen && len + nl + 3 < skipped_size)
                                snprintf(skipped + len, skipped_size - len, "%s%s", len ? ", " : "", names[i]);
                }
                free(names[i]);
        }
        free(names);
        qsort(sz->stats, sz->n_stats, MTHP_STAT_NAME_MAX, (int (*)(const void *, const void *)) strcmp);
        return r;
}

static bool is_cgroup2_dir(const struct mthp_host *h, const char *dir) {
        char p[MTHP_PATH_MAX + 32];
        if (strlen(dir) >= MTHP_PATH_MAX)
                return false;
        mthp_strcpy(p, sizeof(p), dir);
        strcat(p, "/cgroup.controllers");
        return mthp_host_exists(h, p);
}

/* On the real host ask libcgroup where the hierarchies are mounted; a fake
 * tree has no mount table, so look in the places the kernel docs and
 * systemd use. The same readers then work on both. */
static void probe_cgroups(const struct mthp_host *h, struct mthp_caps *caps) {
        caps->cg_memory[0] = caps->cg_unified[0] = 0;
        if (h->real && cgroup_init() == 0) {
                void *handle = NULL;
                struct cgroup_mount_point m;
                int r = cgroup_get_controller_begin(&handle, &m);
                while (r == 0) {
                        if (strlen(m.path) >= MTHP_PATH_MAX)
                                ; /* not a path we can use */
                        else if (is_cgroup2_dir(h, m.path)) {
                                if (!caps->cg_unified[0])
                                        mthp_strcpy(caps->cg_unified, sizeof(caps->cg_unified), m.path);
                        } else if (strcmp(m.name, "memory") == 0 && !caps->cg_memory[0])
                                mthp_strcpy(caps->cg_memory, sizeof(caps->cg_memory), m.path);
                        r = cgroup_get_controller_next(&handle, &m);
                }
                cgroup_get_controller_end(&handle);
                /* libcgroup may not list a cgroup2 mount that has no controllers */
                if (!caps->cg_unified[0]) {
                        static const char *const guess[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
                        for (size_t i = 0; i < 2; i++)
                                if (is_cgroup2_dir(h, guess[i])) {
                                        snprintf(caps->cg_unified, sizeof(caps->cg_unified), "%s", guess[i]);
                                        break;
                                }
                }
        } else {
                if (is_cgroup2_dir(h, "/sys/fs/cgroup"))
                        snprintf(caps->cg_unified, sizeof(caps->cg_unified), "/sys/fs/cgroup");
                else if (is_cgroup2_dir(h, "/sys/fs/cgroup/unified"))
                        snprintf(caps->cg_unified, sizeof(caps->cg_unified), "/sys/fs/cgroup/unified");
                if (mthp_host_exists(h, "/sys/fs/cgroup/memory/memory.stat"))
                        snprintf(caps->cg_memory, sizeof(caps->cg_memory), "/sys/fs/cgroup/memory");
        }

        bool v2_memory = false;
        if (caps->cg_unified[0]) {
                char p[MTHP_PATH_MAX + 32], buf[512];
                snprintf(p, sizeof(p), "%s/cgroup.controllers", caps->cg_unified);
                if (mthp_host_read(h, p, buf, sizeof(buf)) >= 0) {
                        for (char *t = strtok(buf, " \n"); t; t = strtok(NULL, " \n"))
                                if (strcmp(t, "memory") == 0)
                                        v2_memory = true;
                }
        }
        if (v2_memory) {
                caps->cg_layout = MTHP_CG_V2;
                snprintf(caps->cg_memory, sizeof(caps->cg_memory), "%s", caps->cg_unified);
        } else if (caps->cg_memory[0])
                caps->cg_layout = caps->cg_unified[0] ? MTHP_CG_HYBRID : MTHP_CG_V1;
        else
                caps->cg_layout = MTHP_CG_NONE;
}

/* The size directories hugepages-NkB, ascending. */
static int probe_sizes(const struct mthp_host *h, struct mthp_caps *caps) {
        int fd = mthp_host_open_file(h, MTHP_THP_DIR, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return fd;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -errno;
        }
        struct dirent *de;
        while ((de = readdir(d))) {
                unsigned kb;
                if (strncmp(de->d_name, "hugepages-", 10) != 0)
                        continue;
                if (mthp_sysfs_size_parse(de->d_name, &kb) < 0) {
                        mthp_log(LOG_WARNING, MTHP_THP_DIR "/%s: ignored: not a size directory of the form "
                                 "hugepages-<N>kB (N in decimal without a leading zero, a power of two from 8)",
                                 de->d_name);
                        continue;
                }
                /* a folio is a power-of-two number of base pages, order >= 1 */
                if (kb < 2 * caps->page_kb || kb % caps->page_kb) {
                        mthp_log(LOG_WARNING, MTHP_THP_DIR "/%s: ignored: not a folio size of %ukB base pages "
                                 "(at least two pages)", de->d_name, caps->page_kb);
                        continue;
                }
                if (caps->n_sizes >= MTHP_SIZES_MAX) {
                        mthp_log(LOG_WARNING, MTHP_THP_DIR "/%s: ignored: more than %d sizes", de->d_name,
                                 MTHP_SIZES_MAX);
                        continue;
                }
                struct mthp_size *sz = &caps->sizes[caps->n_sizes++];
                sz->kb = kb;
                sz->order = __builtin_ctz(kb / caps->page_kb);
        }
        closedir(d);
        qsort(caps->sizes, caps->n_sizes, sizeof(caps->sizes[0]), cmp_size);
        return 0;
}

/* Each size's enabled and shmem_enabled knobs and its stats. */
static int probe_size_knobs(const struct mthp_host *h, struct mthp_caps *caps) {
        int r;
        char skipped[1024] = "";
        unsigned n_skipping = 0;
        /* per-size knobs first: restore order and status tables follow caps order */
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                struct mthp_size *sz = &caps->sizes[i];
                char path[MTHP_PATH_MAX], id[32], sname[16];
                mthp_format_size(sz->kb, sname, sizeof(sname));
                for (int kind = 0; kind < _MTHP_KIND_MAX; kind++) {
                        snprintf(path, sizeof(path), MTHP_THP_DIR "/hugepages-%ukB/%s", sz->kb,
                                 kind == MTHP_ANON ? "enabled" : "shmem_enabled");
                        snprintf(id, sizeof(id), "%s/%s", sname, mthp_kind_name(kind));
                        r = add_knob(h, caps, kind == MTHP_ANON ? MTHP_KNOB_SIZE_ANON : MTHP_KNOB_SIZE_SHMEM, sz->kb,
                                     path, id);
                        if (r < 0 && r != -ENOENT)  /* -ENOENT: e.g. 8kB has no anon knob */
                                return r;
                        sz->knob[kind] = r >= 0 ? r : -1;
                }
                unsigned n_skipped = 0;
                r = probe_stats(h, sz, skipped, sizeof(skipped), &n_skipped);
                if (r < 0)
                        return r;
                n_skipping += n_skipped > 0;
                for (unsigned j = 0; j < sz->n_stats; j++)
                        if (strncmp(sz->stats[j], "collapse_", 9) == 0)
                                caps->mthp_collapse = true;
        }
        if (n_skipping)
                mthp_log(LOG_WARNING, "%u size(s) have stats mthpd does not read (at most %d per size, names "
                         "under %d bytes; the fault counters are kept first): %s", n_skipping, MTHP_STATS_MAX,
                         MTHP_STAT_NAME_MAX, skipped);
        return 0;
}

/* The global selection files and the THP shrinker's numbers. */
static int probe_global_knobs(const struct mthp_host *h, struct mthp_caps *caps) {
        static const struct {
                enum mthp_knob_type type;
                const char *file, *id;
        } globals[] = {
                { MTHP_KNOB_ENABLED, "enabled", "global/enabled" },
                { MTHP_KNOB_DEFRAG, "defrag", "global/defrag" },
                { MTHP_KNOB_SHMEM_ENABLED, "shmem_enabled", "global/shmem_enabled" },
        };
        int r;
        for (size_t i = 0; i < sizeof(globals) / sizeof(globals[0]); i++) {
                char path[MTHP_PATH_MAX];
                snprintf(path, sizeof(path), MTHP_THP_DIR "/%s", globals[i].file);
                r = add_knob(h, caps, globals[i].type, 0, path, globals[i].id);
                if (r < 0 && r != -ENOENT)
                        return r;
        }
        /* The THP shrinker's knobs, for the safety net under 2M (engine.c):
         * it splits, under reclaim, PMD folios with more zero subpages than
         * max_ptes_none. Kernels whose khugepaged collapses to mTHP sizes
         * (collapse_* stats below the PMD size, 7.2+) accept only 0 or 511
         * there for that collapse: mthpd leaves max_ptes_none alone on them. */
        bool mthp_collapse = false;
        for (unsigned i = 0; i < caps->n_sizes; i++)
                for (unsigned j = 0; caps->sizes[i].kb < caps->pmd_kb && j < caps->sizes[i].n_stats; j++)
                        mthp_collapse = mthp_collapse || strncmp(caps->sizes[i].stats[j], "collapse_", 9) == 0;
        if (!mthp_collapse) {
                r = add_knob(h, caps, MTHP_KNOB_NUMBER, 0, MTHP_THP_DIR "/khugepaged/max_ptes_none",
                             "khugepaged/max_ptes_none");
                if (r < 0 && r != -ENOENT && r != -EBADMSG)
                        return r;
        }
        r = add_knob(h, caps, MTHP_KNOB_NUMBER, 0, MTHP_THP_DIR "/shrink_underused", "global/shrink_underused");
        if (r < 0 && r != -ENOENT && r != -EBADMSG)
                return r;
        return 0;
}

int mthp_probe(const struct mthp_host *h, struct mthp_caps *caps) {
        char buf[256];
        int r;

        memset(caps, 0, sizeof(*caps));
        if (mthp_host_read(h, MTHP_THP_DIR "/enabled", buf, sizeof(buf)) < 0)
                return -ENOENT;
        if (mthp_host_read(h, MTHP_THP_DIR "/hpage_pmd_size", buf, sizeof(buf)) >= 0)
                caps->pmd_kb = (unsigned) (strtoull(buf, NULL, 10) / 1024);
        caps->page_kb = page_kb_from_pmd(caps->pmd_kb);
        if (!caps->page_kb)
                caps->page_kb = h->real ? (unsigned) sysconf(_SC_PAGESIZE) / 1024 : 4;

        if ((r = probe_sizes(h, caps)) < 0 || (r = probe_size_knobs(h, caps)) < 0 ||
            (r = probe_global_knobs(h, caps)) < 0)
                return r;

        caps->psi = mthp_host_read(h, "/proc/pressure/memory", buf, sizeof(buf)) > 0;
        caps->task_delayacct = mthp_host_read(h, "/proc/sys/kernel/task_delayacct", buf, sizeof(buf)) > 0 &&
                               buf[0] == '1';
        probe_cgroups(h, caps);
        return 0;
}

bool mthp_probe_no_mthp(const struct mthp_host *h, const struct mthp_caps *caps, char *why, size_t size) {
        char rel[128] = "", esc[4 * sizeof(rel)];
        if (caps->n_sizes)
                return false;
        if (mthp_host_read(h, "/proc/sys/kernel/osrelease", rel, sizeof(rel)) > 0)
                rel[strcspn(rel, "\n")] = 0;
        /* per-size anon knobs came in 6.8, per-size shmem_enabled in 6.11
         * (Documentation/admin-guide/mm/transhuge.rst of each) */
        snprintf(why, size, "kernel %s has no per-size mTHP knobs (" MTHP_THP_DIR "/hugepages-<N>kB/enabled: "
                 "Linux 6.8 or later; per-size shmem_enabled from 6.11), so mthpd has nothing to manage; kernels "
                 "that have them: Debian 13 (6.12), Debian 12 with the bookworm-backports kernel, Ubuntu 24.04 "
                 "(6.8)", rel[0] ? mthp_escape(esc, sizeof(esc), rel) : "(release unknown)");
        return true;
}

int mthp_caps_describe(const struct mthp_caps *caps, char *buf, size_t size) {
        size_t off = 0;
#define OUT(...)                                                                             \
        do {                                                                                 \
                int _n = snprintf(buf + off, off < size ? size - off : 0, __VA_ARGS__);      \
                if (_n > 0)                                                                  \
                        off += (size_t) _n;                                                  \
        } while (0)
        char s[16];
        mthp_format_size(caps->pmd_kb, s, sizeof(s));
        char pg[16];
        mthp_format_size(mthp_caps_page_kb(caps), pg, sizeof(pg));
        OUT("PMD size %s; %u mTHP sizes:", s, caps->n_sizes);
        for (unsigned i = 0; i < caps->n_sizes; i++) {
                const struct mthp_size *sz = &caps->sizes[i];
                mthp_format_size(sz->kb, s, sizeof(s));
                OUT(" %s(%s%s%s)", s, sz->knob[MTHP_ANON] >= 0 ? "anon" : "",
                    sz->knob[MTHP_ANON] >= 0 && sz->knob[MTHP_SHMEM] >= 0 ? "+" : "",
                    sz->knob[MTHP_SHMEM] >= 0 ? "shmem" : "");
        }
        OUT("\n");
        for (unsigned i = 0; i < caps->n_knobs; i++) {
                const struct mthp_knob *k = &caps->knobs[i];
                if (k->type == MTHP_KNOB_SIZE_ANON || k->type == MTHP_KNOB_SIZE_SHMEM)
                        continue;
                OUT("%s accepts:", k->id);
                for (unsigned j = 0; j < k->n_allowed; j++)
                        OUT(" %s", k->allowed[j]);
                OUT("\n");
        }
        if (caps->n_sizes)
                OUT("per-size stats: %u counters (e.g. %s)\n", caps->sizes[0].n_stats,
                    caps->sizes[0].n_stats ? caps->sizes[0].stats[0] : "none");
        unsigned ptes = caps->pmd_kb / mthp_caps_page_kb(caps);
        if (caps->mthp_collapse)
                OUT("base page %s; khugepaged mTHP collapse: yes (max_ptes_none 0 or %u only)\n", pg,
                    ptes ? ptes - 1 : 0);
        else
                OUT("base page %s; khugepaged mTHP collapse: no (PMD only)\n", pg);
        OUT("PSI memory: %s; task delay accounting: %s\n", caps->psi ? "yes" : "absent",
            caps->task_delayacct ? "on" : "off");
        OUT("cgroups: %s (memory at %s, cgroup2 at %s)", mthp_cg_layout_name(caps->cg_layout),
            caps->cg_memory[0] ? caps->cg_memory : "-", caps->cg_unified[0] ? caps->cg_unified : "-");
#undef OUT
        return off < size ? 0 : -ENOBUFS;
}
