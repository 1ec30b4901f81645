/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ini-util.h"
#include "mthp/probe.h"
#include "mthp/safe-io.h"

struct reader {
        struct mthp_ini *ini;
        const char *p;          /* the rest of the text */
        mthp_ini_handler h;
};

/* inih's own line buffer is INI_MAX_LINE (200 in Debian's r55, no realloc):
 * a longer line came in pieces, and the tail of a comment was parsed as a
 * key at a line number one off. So every line is read here whole, and inih
 * (still the parser) gets it only when it fits: a longer comment becomes an
 * empty comment, any other long line an error at its true line. */
static char *read_line(char *buf, int size, void *stream) {
        struct reader *r = stream;
        if (!*r->p)
                return NULL;
        const char *line = r->p;
        size_t len = strcspn(line, "\n");
        r->p += len + (line[len] == '\n');
        r->ini->line++;
        while (len > 0 && line[len - 1] == '\r')
                len--;
        /* where inih sees the line start: after a UTF-8 byte order mark on
         * line 1 (INI_ALLOW_BOM) and any isspace() */
        const char *start = line;
        if (r->ini->line == 1 && len >= 3 && memcmp(line, "\xEF\xBB\xBF", 3) == 0)
                start += 3;
        const char *p = start + strspn(start, " \t\v\f\r");
        size_t skip = (size_t) (p - line);
        if ((size_t) size < 2)
                return NULL;
        if (len >= (size_t) size) {
                if (skip < len && (*p == '#' || *p == ';')) {
                        buf[0] = '#';
                        buf[1] = 0;
                        return buf;
                }
                mthp_ini_error(r->ini, "line of %zu bytes, expected at most %d: not parsed", len, size - 1);
                buf[0] = 0; /* an empty line: the next one keeps its number */
                return buf;
        }
        memcpy(buf, line, len);
        buf[len] = 0;
        /* inih only reports keys: announce each section header (its whole
         * name: inih keeps 49 characters of it), so that an unknown section
         * without keys, or with a long name, is an error too */
        if (skip < len && *p == '[') {
                const char *end = memchr(p, ']', len - skip);
                if (end) {
                        char name[256];
                        size_t n = (size_t) (end - p - 1);
                        memcpy(name, p + 1, n); /* n < size <= 256: the line fitted */
                        name[n] = 0;
                        (void) r->h(r->ini, name, NULL, NULL);
                }
        }
        return buf;
}

void mthp_ini_error(struct mthp_ini *ini, const char *fmt, ...) {
        va_list ap;
        ini->n_errors++;
        if (!ini->err || ini->errlen + 1 >= ini->errsz)
                return;
        int n = snprintf(ini->err + ini->errlen, ini->errsz - ini->errlen, "%s:%u: ", ini->name, ini->line);
        if (n > 0)
                ini->errlen = ini->errlen + (size_t) n < ini->errsz ? ini->errlen + (size_t) n : ini->errsz - 1;
        va_start(ap, fmt);
        n = vsnprintf(ini->err + ini->errlen, ini->errsz - ini->errlen, fmt, ap);
        va_end(ap);
        if (n > 0)
                ini->errlen = ini->errlen + (size_t) n < ini->errsz ? ini->errlen + (size_t) n : ini->errsz - 1;
        if (ini->errlen + 1 < ini->errsz) {
                ini->err[ini->errlen++] = '\n';
                ini->err[ini->errlen] = 0;
        }
}

static int handler(void *user, const char *section, const char *name, const char *value) {
        struct reader *r = user;
        (void) r->h(r->ini, section, name, value);
        return 1; /* keep going: all errors of a file in one report */
}

static int parse(struct reader *r) {
        int ret = ini_parse_stream(read_line, r, handler, r);
        if (ret > 0) {
                /* a syntax error inih found itself (no '=' or ']'): it gives the line */
                unsigned save = r->ini->line;
                r->ini->line = (unsigned) ret;
                mthp_ini_error(r->ini, "syntax error: expected '[Section]' or 'Key=Value'");
                r->ini->line = save;
        } else if (ret < 0)
                return -ENOMEM;
        return r->ini->n_errors ? -EINVAL : 0;
}

int mthp_ini_parse_file(const char *file, unsigned flags, mthp_ini_handler h, void *user, char *err, size_t errsz) {
        char *text = NULL;
        if (err && errsz)
                err[0] = 0;
        char why[MTHP_PATH_MAX + 256];
        int r = mthp_safe_read_text(AT_FDCWD, NULL, file, flags, MTHP_SAFE_CONFIG_MAX, &text, NULL, why, sizeof(why));
        if (r < 0) {
                if (err && errsz)
                        snprintf(err, errsz, "%s\n", why);
                return r;
        }
        r = mthp_ini_parse_string(file, text, h, user, err, errsz);
        free(text);
        return r;
}

int mthp_ini_parse_string(const char *name, const char *text, mthp_ini_handler h, void *user, char *err,
                          size_t errsz) {
        struct mthp_ini ini = { .name = name, .err = err, .errsz = errsz, .user = user };
        if (err && errsz)
                err[0] = 0;
        struct reader r = { .ini = &ini, .p = text, .h = h };
        return parse(&r);
}

int mthp_ini_bad(struct mthp_ini *ini, const char *section, const char *key, const char *value, const char *what) {
        mthp_ini_error(ini, "key '%s' in [%s]: expected %s, got '%s'", key, section, what, value);
        return -EINVAL;
}

int mthp_conf_file_masked(const char *path, bool empty) {
        struct stat st;
        if (stat(path, &st) < 0)
                return -errno;
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3))
                return 1;
        return empty && S_ISREG(st.st_mode) && st.st_size == 0;
}

void mthp_conf_files_free(char **paths, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(paths[i]);
        free(paths);
}

static int cmp_base(const void *a, const void *b) {
        const char *x = *(char *const *) a, *y = *(char *const *) b;
        return strcmp(strrchr(x, '/') + 1, strrchr(y, '/') + 1);
}

int mthp_conf_files_list(const char *const *dirs, const char *suffix, char ***paths, size_t *n, char *err,
                         size_t errsz) {
        char **p = NULL;
        size_t np = 0, cap = 0, slen = strlen(suffix);
        int r = 0;
        if (err && errsz)
                err[0] = 0;
        for (size_t i = 0; dirs[i] && r == 0; i++) {
                DIR *d = opendir(dirs[i]);
                if (!d) {
                        if (errno == ENOENT)
                                continue;
                        r = -errno;
                        if (err && errsz)
                                snprintf(err, errsz, "%s: %s, expected a directory of *%s files\n", dirs[i],
                                         strerror(errno), suffix);
                        break;
                }
                struct dirent *de;
                while ((de = readdir(d))) {
                        size_t len = strlen(de->d_name);
                        if (de->d_name[0] == '.' || len <= slen || strcmp(de->d_name + len - slen, suffix) != 0)
                                continue;
                        bool seen = false; /* an earlier directory has the name: it masks this one */
                        for (size_t j = 0; j < np && !seen; j++)
                                seen = strcmp(strrchr(p[j], '/') + 1, de->d_name) == 0;
                        if (seen)
                                continue;
                        if (np == cap) {
                                cap = cap ? cap * 2 : 16;
                                char **q = realloc(p, cap * sizeof(*p));
                                if (!q) {
                                        r = -ENOMEM;
                                        break;
                                }
                                p = q;
                        }
                        if (asprintf(&p[np], "%s/%s", dirs[i], de->d_name) < 0) {
                                r = -ENOMEM;
                                break;
                        }
                        np++;
                }
                closedir(d);
        }
        /* masked names held their place above; drop them now */
        size_t k = 0;
        for (size_t i = 0; i < np; i++) {
                if (r == 0 && mthp_conf_file_masked(p[i], true) == 1)
                        free(p[i]);
                else
                        p[k++] = p[i];
        }
        np = k;
        if (r < 0) {
                mthp_conf_files_free(p, np);
                return r;
        }
        if (np > 1)
                qsort(p, np, sizeof(*p), cmp_base);
        *paths = p;
        *n = np;
        return 0;
}
