/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ini-util.h"

struct reader {
        struct mthp_ini *ini;
        FILE *f;                /* file, or */
        const char *p;          /* string */
        mthp_ini_handler h;
};

static char *read_line(char *buf, int size, void *stream) {
        struct reader *r = stream;
        char *ret;

        if (r->f)
                ret = fgets(buf, size, r->f);
        else {
                if (!*r->p)
                        return NULL;
                size_t len = strcspn(r->p, "\n");
                if (r->p[len] == '\n')
                        len++;
                if (len > (size_t) size - 1)
                        len = (size_t) size - 1;
                memcpy(buf, r->p, len);
                buf[len] = 0;
                r->p += len;
                ret = buf;
        }
        if (ret) {
                r->ini->line++;
                /* inih only reports keys: announce each section header, so an
                 * unknown section without keys is an error too */
                const char *p = ret + strspn(ret, " \t");
                const char *end = *p == '[' ? strchr(p, ']') : NULL;
                if (end && (size_t) (end - p - 1) < 64) {
                        char name[64];
                        memcpy(name, p + 1, (size_t) (end - p - 1));
                        name[end - p - 1] = 0;
                        (void) r->h(r->ini, name, NULL, NULL);
                }
        }
        return ret;
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

int mthp_ini_parse_file(const char *file, mthp_ini_handler h, void *user, char *err, size_t errsz) {
        struct mthp_ini ini = { .name = file, .err = err, .errsz = errsz, .user = user };
        if (err && errsz)
                err[0] = 0;
        FILE *f = fopen(file, "re");
        if (!f) {
                int e = errno;
                if (err)
                        snprintf(err, errsz, "%s: cannot open: %s\n", file, strerror(e));
                return -e;
        }
        struct reader r = { .ini = &ini, .f = f, .h = h };
        int ret = parse(&r);
        fclose(f);
        return ret;
}

int mthp_ini_parse_string(const char *name, const char *text, mthp_ini_handler h, void *user, char *err,
                          size_t errsz) {
        struct mthp_ini ini = { .name = name, .err = err, .errsz = errsz, .user = user };
        if (err && errsz)
                err[0] = 0;
        struct reader r = { .ini = &ini, .p = text, .h = h };
        return parse(&r);
}
