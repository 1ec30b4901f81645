/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ini-util.h"
#include "mthp/journal.h"
#include "mthp/log.h"
#include "mthp/safe-io.h"
#include "mthp/types.h"

#define KNOB_PREFIX "knob "

struct load_ctx {
        struct mthp_journal *j;
        struct mthp_journal_entry *cur;
};

static int copy_value(struct mthp_ini *ini, const char *key, const char *value, char *dst, size_t size) {
        if (strlen(value) >= size || !*value) {
                mthp_ini_error(ini, "key '%s': expected a knob value of 1-%zu characters, got '%s'", key, size - 1,
                               value);
                return -EINVAL;
        }
        memcpy(dst, value, strlen(value) + 1);
        return 0;
}

static int load_handler(struct mthp_ini *ini, const char *section, const char *key, const char *value) {
        struct load_ctx *c = ini->user;
        struct mthp_journal *j = c->j;

        if (!key)
                return 0; /* section headers: checked with their keys */

        if (strcmp(section, "journal") == 0) {
                if (strcmp(key, "root") == 0)
                        return copy_value(ini, key, value, j->root, sizeof(j->root));
                mthp_ini_error(ini, "unknown key '%s' in [journal]", key);
                return -EINVAL;
        }
        if (strncmp(section, KNOB_PREFIX, strlen(KNOB_PREFIX)) != 0) {
                mthp_ini_error(ini, "unknown section [%s]: expected [journal] or [knob ID]", section);
                return -EINVAL;
        }
        /* inih truncates section names to 49 characters, so the section
         * names the knob by its short id and the path is a key */
        const char *id = section + strlen(KNOB_PREFIX);
        if (!c->cur || strcmp(c->cur->id, id) != 0) {
                if (j->n >= MTHP_KNOBS_MAX || !*id || strlen(id) >= sizeof(c->cur->id)) {
                        mthp_ini_error(ini, "section [%s]: expected [knob ID]", section);
                        return -EINVAL;
                }
                c->cur = &j->e[j->n++];
                memset(c->cur, 0, sizeof(*c->cur));
                memcpy(c->cur->id, id, strlen(id) + 1);
        }
        struct mthp_journal_entry *e = c->cur;
        if (strcmp(key, "path") == 0) {
                if (value[0] != '/')
                        return mthp_ini_error(ini, "key 'path': expected an absolute path, got '%s'", value), -EINVAL;
                /* restore writes there as root: only THP knobs, whatever the file says */
                if (strncmp(value, MTHP_THP_DIR "/", strlen(MTHP_THP_DIR "/")) != 0 || strstr(value, "/../") ||
                    strstr(value, "/./") || strstr(value, "//"))
                        return mthp_ini_error(ini, "key 'path': '%s' is not a knob below " MTHP_THP_DIR, value),
                               -EINVAL;
                return copy_value(ini, key, value, e->path, sizeof(e->path));
        }
        if (strcmp(key, "original") == 0)
                return copy_value(ini, key, value, e->original, sizeof(e->original));
        if (strcmp(key, "written") == 0)
                return copy_value(ini, key, value, e->written, sizeof(e->written));
        if (strcmp(key, "previous") == 0)
                return copy_value(ini, key, value, e->previous, sizeof(e->previous));
        if (strcmp(key, "foreign_value") == 0)
                return copy_value(ini, key, value, e->foreign_value, sizeof(e->foreign_value));
        if (strcmp(key, "state") == 0) {
                e->has_state = true;
                if (strcmp(value, "managed") == 0)
                        e->state = MTHP_ENTRY_MANAGED;
                else if (strcmp(value, "foreign") == 0)
                        e->state = MTHP_ENTRY_FOREIGN;
                else {
                        mthp_ini_error(ini, "key 'state': expected managed or foreign, got '%s'", value);
                        return -EINVAL;
                }
                return 0;
        }
        mthp_ini_error(ini, "unknown key '%s' in [%s]", key, section);
        return -EINVAL;
}

/* mthp_journal_save() ends every line with a newline and writes every key
 * of every entry: a journal that does not is cut short (a crash of the file
 * system, a copy that ran out of space), and its last value may be a prefix
 * of the real one ("defer" of "defer+madvise"). Returns the line count. */
static int check_complete(const char *file, const char *text, size_t len, char *err, size_t errsz) {
        int lines = 0;
        for (size_t i = 0; i < len; i++)
                lines += text[i] == '\n';
        if (len && text[len - 1] != '\n') {
                if (err)
                        snprintf(err, errsz, "%s:%d: the journal ends in the middle of a line: it was cut short; "
                                 "not applying any of it\n", file, lines + 1);
                return -EBADMSG;
        }
        return lines;
}

/* The journal's directory, checked (mthp_safe_open_dir: owned by root, not
 * writable by others), and its name in it. */
static int open_dir_of(const char *file, char *dir, size_t dirsz, const char **base, char *why, size_t whysz) {
        int fd = mthp_safe_open_parent(file, MTHP_SAFE_OWNER, base, why, whysz);
        if (fd < 0)
                return fd;
        size_t dl = (size_t) (*base - file);
        if (dl > 1)
                dl--; /* without the slash */
        if (dl == 0)
                snprintf(dir, dirsz, ".");
        else
                snprintf(dir, dirsz, "%.*s", (int) dl, file);
        return fd;
}

int mthp_journal_load(const char *file, struct mthp_journal *j, char *err, size_t errsz) {
        struct load_ctx c = { .j = j };
        char why[2 * MTHP_PATH_MAX + 256], dir[MTHP_PATH_MAX];
        const char *base;
        memset(j, 0, sizeof(*j));
        if (err && errsz)
                err[0] = 0;
        int dfd = open_dir_of(file, dir, sizeof(dir), &base, why, sizeof(why));
        char *text = NULL;
        size_t len = 0;
        int r = dfd;
        if (dfd >= 0) {
                /* a FIFO hung mthpd's start and 'mthpctl restore'; a journal
                 * anyone can write is anyone's say over the knobs */
                r = mthp_safe_read_text(dfd, dir, base, MTHP_SAFE_OWNER | MTHP_SAFE_NOFOLLOW, MTHP_SAFE_TEXT_MAX,
                                        &text, &len, why, sizeof(why));
                close(dfd);
        }
        if (r < 0) {
                if (err && errsz)
                        snprintf(err, errsz, "cannot read the restore journal: %s\n", why);
                /* not a regular file, or not text (a NUL byte): malformed */
                return r == -EINVAL ? -EBADMSG : r;
        }
        int lines = check_complete(file, text, len, err, errsz);
        if (lines < 0) {
                free(text);
                return lines;
        }
        r = mthp_ini_parse_string(file, text, load_handler, &c, err, errsz);
        free(text);
        if (r == -EINVAL)
                return -EBADMSG;
        if (r < 0)
                return r;
        if (!j->root[0]) {
                if (err)
                        snprintf(err, errsz, "%s:%d: no [journal] root= line: empty, cut short or not a restore "
                                 "journal; not applying it\n", file, lines > 0 ? lines : 1);
                return -EBADMSG;
        }
        for (unsigned i = 0; i < j->n; i++) {
                if (!j->e[i].path[0] || !j->e[i].original[0] || !j->e[i].written[0]) {
                        if (err)
                                snprintf(err, errsz, "%s: knob %s: path=, original= and written= are required\n", file,
                                         j->e[i].id);
                        return -EBADMSG;
                }
                /* mthpd always writes both: without them the entry was cut short */
                if (!j->e[i].previous[0] || !j->e[i].has_state) {
                        if (err)
                                snprintf(err, errsz, "%s: knob %s: previous= and state= are required (cut short?); "
                                         "not applying the journal\n", file, j->e[i].id);
                        return -EBADMSG;
                }
        }
        return 0;
}

int mthp_journal_save(const char *file, const struct mthp_journal *j) {
        char why[2 * MTHP_PATH_MAX + 256], dir[MTHP_PATH_MAX];
        const char *base;
        int dfd = open_dir_of(file, dir, sizeof(dir), &base, why, sizeof(why));
        if (dfd < 0) {
                mthp_log(LOG_ERR, "%s", why);
                return dfd;
        }
        int r;
        if (j->n == 0) {
                r = unlinkat(dfd, base, 0) < 0 && errno != ENOENT ? -errno : 0;
                if (r == 0 && fsync(dfd) < 0)
                        r = -errno;
                close(dfd);
                return r;
        }
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f) {
                close(dfd);
                return -ENOMEM;
        }
        fprintf(f, "# mthpd restore journal: the values THP knobs had before mthpd changed them.\n"
                   "# 'mthpctl restore' puts them back. Written by mthpd; do not edit.\n"
                   "[journal]\nroot=%s\n",
                j->root[0] ? j->root : "/");
        for (unsigned i = 0; i < j->n; i++) {
                const struct mthp_journal_entry *e = &j->e[i];
                fprintf(f, "\n[" KNOB_PREFIX "%s]\npath=%s\noriginal=%s\nwritten=%s\nprevious=%s\nstate=%s\n",
                        e->id, e->path, e->original, e->written, e->previous[0] ? e->previous : e->original,
                        e->state == MTHP_ENTRY_FOREIGN ? "foreign" : "managed");
                if (e->state == MTHP_ENTRY_FOREIGN && e->foreign_value[0])
                        fprintf(f, "foreign_value=%s\n", e->foreign_value);
        }
        if (fclose(f) != 0) {
                free(text);
                close(dfd);
                return -ENOMEM;
        }
        r = mthp_safe_write_atomic(dfd, dir, base, 0600, text, len, true, why, sizeof(why));
        free(text);
        close(dfd);
        return r;
}

/* "hugepages-<kB>kB/" in the kernel's own spelling: decimal without a
 * leading zero, a power of two of at least 4 that fits 32 bits. Returns the
 * length of the prefix, 0 if it is not one. */
static size_t size_dir(const char *s, unsigned *kb) {
        if (strncmp(s, "hugepages-", 10) != 0 || s[10] < '1' || s[10] > '9')
                return 0;
        uint64_t v = 0;
        size_t i = 10;
        for (; s[i] >= '0' && s[i] <= '9'; i++) {
                v = v * 10 + (uint64_t) (s[i] - '0');
                if (v > UINT32_MAX)
                        return 0;
        }
        if (strncmp(s + i, "kB/", 3) != 0 || v < 4 || (v & (v - 1)))
                return 0;
        *kb = (unsigned) v;
        return i + 3;
}

int mthp_journal_entry_check(const struct mthp_journal_entry *e, char *why, size_t whysz) {
        static const struct {
                const char *file, *id;
        } globals[] = {
                { "enabled", "global/enabled" },
                { "defrag", "global/defrag" },
                { "shmem_enabled", "global/shmem_enabled" },
                { "khugepaged/max_ptes_none", "khugepaged/max_ptes_none" },
                { "shrink_underused", "global/shrink_underused" },
        };
        const char *prefix = MTHP_THP_DIR "/";
        char id[sizeof(e->id)] = "";
        if (strncmp(e->path, prefix, strlen(prefix)) == 0) {
                const char *rest = e->path + strlen(prefix);
                unsigned kb;
                size_t n = size_dir(rest, &kb);
                if (n && (strcmp(rest + n, "enabled") == 0 || strcmp(rest + n, "shmem_enabled") == 0)) {
                        char sz[16];
                        mthp_format_size(kb, sz, sizeof(sz));
                        snprintf(id, sizeof(id), "%s/%s", sz, rest[n] == 'e' ? "anon" : "shmem");
                }
                for (size_t i = 0; !n && i < sizeof(globals) / sizeof(globals[0]); i++)
                        if (strcmp(rest, globals[i].file) == 0)
                                snprintf(id, sizeof(id), "%s", globals[i].id);
        }
        if (!id[0]) {
                snprintf(why, whysz, "%s is not a knob mthpd manages", e->path);
                return -EPERM;
        }
        if (strcmp(id, e->id) != 0) {
                snprintf(why, whysz, "%s is the knob %s, not %s", e->path, id, e->id);
                return -EPERM;
        }
        return 0;
}

struct mthp_journal_entry *mthp_journal_find(struct mthp_journal *j, const char *path) {
        for (unsigned i = 0; i < j->n; i++)
                if (strcmp(j->e[i].path, path) == 0)
                        return &j->e[i];
        return NULL;
}

void mthp_journal_remove(struct mthp_journal *j, const char *path) {
        for (unsigned i = 0; i < j->n; i++)
                if (strcmp(j->e[i].path, path) == 0) {
                        memmove(&j->e[i], &j->e[i + 1], (j->n - i - 1) * sizeof(j->e[0]));
                        j->n--;
                        return;
                }
}
