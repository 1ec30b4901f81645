/* SPDX-License-Identifier: MIT */
/* Replay: the reader of recordings (mthp/record.h), walking the same
 * tables of fields as the writer in record.c (record-fields.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp-config.h"
#include "mthp/record.h"
#include "mthp/util.h"
#include "record-fields.h"
/* ---- reading ---- */

/* The longest line read: what mthpd writes stays far below (its longest
 * lines, a process's reason or a cgroup's path escaped, are a few KiB). */
#define RECORD_LINE_MAX 65536

struct mthp_record_reader {
        FILE *f;
        char *path;
        unsigned line_no;
        char *line;
        size_t line_size;
        struct mthp_caps caps;
        bool have_tick;
        uint64_t last_tick;
        char *err;         /* of the call in progress */
        size_t errsz;
};

static int bad(struct mthp_record_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct mthp_record_reader *r, const char *fmt, ...) {
        va_list ap;
        if (!r->errsz)
                return -EBADMSG;
        int n = snprintf(r->err, r->errsz, "%s:%u: ", r->path, r->line_no);
        if (n >= 0 && (size_t) n < r->errsz) {
                va_start(ap, fmt);
                vsnprintf(r->err + n, r->errsz - (size_t) n, fmt, ap);
                va_end(ap);
        }
        return -EBADMSG;
}

/* One line into r->line, at most RECORD_LINE_MAX bytes: a file without
 * newlines (/dev/zero) is refused at its first line instead of read into
 * memory without end. Its length, -1 at end of file, or -errno. */
static ssize_t read_line(struct mthp_record_reader *r) {
        size_t len = 0;
        int ch = EOF;
        if (!r->line) {
                r->line_size = RECORD_LINE_MAX + 2;
                if (!(r->line = malloc(r->line_size)))
                        return -ENOMEM;
        }
        errno = 0;
        while (len <= RECORD_LINE_MAX && (ch = getc_unlocked(r->f)) != EOF) {
                r->line[len++] = (char) ch;
                if (ch == '\n')
                        break;
        }
        r->line[len] = 0;
        if (ch == EOF && ferror(r->f))
                return errno ? -errno : -EIO;
        if (len == 0)
                return -1;
        return (ssize_t) len;
}

/* The next line that is not blank or a comment, split into words.
 * 1, 0 at end of file, or -errno. */
static int next_line(struct mthp_record_reader *r, char **tok, unsigned *n_tok) {
        for (;;) {
                ssize_t len = read_line(r);
                if (len < -1) {
                        int e = (int) len;
                        snprintf(r->err, r->errsz, "%s: read error after line %u: %s", r->path, r->line_no,
                                 strerror(-e));
                        return e;
                }
                if (len < 0)
                        return 0;
                if (r->line_no == UINT_MAX)
                        return bad(r, "more than %u lines: not a recording mthpd writes", UINT_MAX - 1);
                r->line_no++;
                if ((size_t) len > RECORD_LINE_MAX)
                        return bad(r, "line longer than %d bytes: not a recording mthpd writes", RECORD_LINE_MAX);
                if ((size_t) len != strlen(r->line))
                        return bad(r, "NUL byte in the line: not a text recording");
                while (len > 0 && (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
                        r->line[--len] = 0;
                *n_tok = 0;
                for (char *save = NULL, *t = strtok_r(r->line, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                        if (*n_tok == MAX_TOKENS)
                                return bad(r, "more than %d words in a line", MAX_TOKENS);
                        tok[(*n_tok)++] = t;
                }
                if (*n_tok == 0 || tok[0][0] == '#')
                        continue;
                return 1;
        }
}

static int parse_u64(const char *s, uint64_t *v) {
        char *end;
        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        unsigned long long x = strtoull(s, &end, 10);
        if (errno || *end)
                return -EINVAL;
        *v = x;
        return 0;
}

static int parse_double(const char *s, double *v) {
        char *end;
        errno = 0;
        double x = strtod(s, &end);
        if (end == s || *end || (errno == ERANGE && isinf(x)))
                return -EINVAL;
        *v = x;
        return 0;
}

/* Undo put_string into dst[size]. */
static int parse_string(const char *s, char *dst, size_t size) {
        size_t n = 0;
        if (strcmp(s, "\"\"") == 0) {
                dst[0] = 0;
                return 0;
        }
        if (!*s)
                return -EINVAL;
        for (; *s; s++) {
                char ch = *s;
                if (ch == '\\') {
                        static const char digits[] = "0123456789abcdef";
                        const char *hi, *lo;
                        if (s[1] != 'x' || !s[2] || !s[3] || !(hi = strchr(digits, tolower(s[2]))) ||
                            !(lo = strchr(digits, tolower(s[3]))) || (hi == digits && lo == digits))
                                return -EINVAL;
                        ch = (char) ((hi - digits) << 4 | (lo - digits));
                        s += 3;
                }
                if (n + 1 >= size)
                        return -ENAMETOOLONG;
                dst[n++] = ch;
        }
        dst[n] = 0;
        return 0;
}

/* VALUE[/RATE][:FLAGS] */
static int parse_counter(const char *s, struct mthp_counter *c) {
        char buf[64], *rate, *flags;
        memset(c, 0, sizeof(*c));
        if (!*s)
                return 0; /* left out: not present */
        if (strlen(s) >= sizeof(buf))
                return -EINVAL;
        strcpy(buf, s);
        flags = strchr(buf, ':');
        if (flags)
                *flags++ = 0;
        rate = strchr(buf, '/');
        if (rate)
                *rate++ = 0;
        if (parse_u64(buf, &c->value) < 0 || (rate && parse_double(rate, &c->rate) < 0))
                return -EINVAL;
        c->present = true;
        for (; flags && *flags; flags++) {
                if (*flags == 'r')
                        c->reset = true;
                else if (*flags == 'a')
                        c->present = false;
                else
                        return -EINVAL;
        }
        return 0;
}

/* Calls cb for each comma-separated item of s ("" is no item); stops at the
 * first error. */
static int for_each_item(char *s, int (*cb)(void *user, unsigned i, const char *item), void *user) {
        unsigned i = 0;
        if (!*s)
                return 0;
        for (char *item = s;; i++) {
                char *comma = strchr(item, ',');
                if (comma)
                        *comma = 0;
                int r = cb(user, i, item);
                if (r < 0)
                        return r;
                if (!comma)
                        return (int) i + 1;
                item = comma + 1;
        }
}

static int string_item(void *user, unsigned i, const char *item) {
        const struct field *f = user;
        if (i >= f->max)
                return -E2BIG;
        return parse_string(item, (char *) f->p + i * f->size, f->size);
}

static int double_item(void *user, unsigned i, const char *item) {
        const struct field *f = user;
        if (i >= f->max)
                return -E2BIG;
        return parse_double(item, &((double *) f->p)[i]);
}

static int parse_value(struct mthp_record_reader *r, const char *keyword, const struct field *f, char *v) {
        uint64_t u;
        long long i;
        char *end;
        int n;

        switch (f->type) {
        case FIELD_U64:
                if (parse_u64(v, &u) < 0)
                        break;
                *(uint64_t *) f->p = u;
                return 0;
        case FIELD_UNSIGNED:
                if (parse_u64(v, &u) < 0 || u > UINT_MAX)
                        break;
                *(unsigned *) f->p = (unsigned) u;
                return 0;
        case FIELD_INT:
                errno = 0;
                i = strtoll(v, &end, 10);
                if (end == v || *end || errno || i < INT_MIN || i > INT_MAX)
                        break;
                *(int *) f->p = (int) i;
                return 0;
        case FIELD_BOOL:
                if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
                        break;
                *(bool *) f->p = v[0] == '1';
                return 0;
        case FIELD_DOUBLE:
                if (parse_double(v, f->p) < 0)
                        break;
                return 0;
        case FIELD_COUNTER:
                if (!*v || parse_counter(v, f->p) < 0)
                        break;
                return 0;
        case FIELD_STRING:
                n = parse_string(v, f->p, f->size);
                if (n == -ENAMETOOLONG)
                        return bad(r, "'%s' line: %s=%s: longer than %zu bytes", keyword, f->key, v, f->size - 1);
                if (n < 0)
                        break;
                return 0;
        case FIELD_STRINGS:
                n = for_each_item(v, string_item, (void *) f);
                if (n == -E2BIG || n == -ENAMETOOLONG)
                        return bad(r, "'%s' line: %s=: more than %u items or one longer than %zu bytes", keyword,
                                   f->key, f->max, f->size - 1);
                if (n < 0)
                        break;
                *f->count = (unsigned) n;
                return 0;
        case FIELD_DOUBLES:
                n = for_each_item(v, double_item, (void *) f);
                if (n >= 0 && (unsigned) n == f->max)
                        return 0;
                return bad(r, "'%s' line: %s=: expected %u comma-separated numbers (one per size, \"nan\" for no "
                           "sample)%s", keyword, f->key, f->max, n < 0 && n != -E2BIG ? ", got a bad one" : "");
        case FIELD_ENUM: {
                char list[128] = "";
                for (unsigned k = 0; k < f->n_names; k++) {
                        if (strcmp(v, f->names[k]) == 0) {
                                int e = (int) k;
                                memcpy(f->p, &e, sizeof(e));
                                return 0;
                        }
                        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "",
                                 f->names[k]);
                }
                return bad(r, "'%s' line: %s=%s: expected one of %s", keyword, f->key, v, list);
        }
        }
        static const char *const expected[] = {
                [FIELD_U64] = "an unsigned integer",
                [FIELD_UNSIGNED] = "an unsigned integer",
                [FIELD_INT] = "an integer",
                [FIELD_BOOL] = "0 or 1",
                [FIELD_DOUBLE] = "a number",
                [FIELD_COUNTER] = "a counter VALUE[/RATE][:FLAGS]",
                [FIELD_STRING] = "a string (\\xHH escapes, \"\" for empty)",
                [FIELD_STRINGS] = "comma-separated strings",
        };
        return bad(r, "'%s' line: %s=%s: expected %s", keyword, f->key, v, expected[f->type]);
}

/* The KEY=VALUE words of a line against its fields; fields not given keep
 * their value, except number lists, which become NAN (no sample). */
static int parse_fields(struct mthp_record_reader *r, const char *keyword, char **words, unsigned n_words,
                        const struct field *fl, unsigned n) {
        bool seen[MAX_FIELDS] = { false };
        for (unsigned t = 0; t < n_words; t++) {
                char *eq = strchr(words[t], '=');
                if (!eq)
                        return bad(r, "'%s' line: expected KEY=VALUE, got '%s'", keyword, words[t]);
                *eq = 0;
                unsigned i = 0;
                while (i < n && strcmp(fl[i].key, words[t]) != 0)
                        i++;
                if (i == n)
                        return bad(r, "'%s' line: unknown key '%s'", keyword, words[t]);
                if (seen[i])
                        return bad(r, "'%s' line: key '%s' given twice", keyword, words[t]);
                seen[i] = true;
                int e = parse_value(r, keyword, &fl[i], eq + 1);
                if (e < 0)
                        return e;
        }
        for (unsigned i = 0; i < n; i++)
                if (!seen[i] && fl[i].type == FIELD_DOUBLES)
                        for (unsigned j = 0; j < fl[i].max; j++)
                                ((double *) fl[i].p)[j] = NAN;
        return 0;
}

static int read_size_line(struct mthp_record_reader *r, char **tok, unsigned n_tok) {
        struct mthp_caps *c = &r->caps;
        struct field fl[MAX_FIELDS];
        if (c->n_sizes == MTHP_SIZES_MAX)
                return bad(r, "more than %d 'size' lines", MTHP_SIZES_MAX);
        struct mthp_size *sz = &c->sizes[c->n_sizes];
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                sz->knob[k] = -1;
        int e = parse_fields(r, "size", tok + 1, n_tok - 1, fl, record_size_fields(sz, fl));
        if (e < 0)
                return e;
        if (sz->kb == 0)
                return bad(r, "'size' line without kb=");
        if (c->n_sizes > 0 && sz->kb <= c->sizes[c->n_sizes - 1].kb)
                return bad(r, "size %ukB after %ukB: sizes must be ascending", sz->kb, c->sizes[c->n_sizes - 1].kb);
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                int i = sz->knob[k];
                enum mthp_knob_type want = k == MTHP_ANON ? MTHP_KNOB_SIZE_ANON : MTHP_KNOB_SIZE_SHMEM;
                if (i < -1 || i >= (int) c->n_knobs)
                        return bad(r, "'size' line: %s=%d: expected -1 or the index of one of the %u knob lines "
                                   "above", mthp_kind_name(k), i, c->n_knobs);
                if (i >= 0 && (c->knobs[i].type != want || c->knobs[i].size_kb != sz->kb))
                        return bad(r, "'size' line: %s=%d: knob %s is not the %s knob of %ukB", mthp_kind_name(k), i,
                                   c->knobs[i].id, mthp_kind_name(k), sz->kb);
        }
        c->n_sizes++;
        return 0;
}

static int read_caps(struct mthp_record_reader *r) {
        struct mthp_caps *c = &r->caps;
        struct field fl[MAX_FIELDS];
        char *tok[MAX_TOKENS];
        unsigned n_tok;
        int e;

        memset(c, 0, sizeof(*c));
        e = next_line(r, tok, &n_tok);
        if (e <= 0)
                return e < 0 ? e : bad(r, "expected the 'caps' line after the version, got the end of the file");
        if (strcmp(tok[0], "caps") != 0)
                return bad(r, "expected the 'caps' line after the version, got '%s'", tok[0]);
        e = parse_fields(r, "caps", tok + 1, n_tok - 1, fl, record_caps_fields(c, fl));
        if (e < 0)
                return e;
        for (;;) {
                e = next_line(r, tok, &n_tok);
                if (e < 0)
                        return e;
                if (e == 0)
                        return bad(r, "the recording ends inside its caps: expected 'knob', 'size' or 'end'");
                if (strcmp(tok[0], "end") == 0 && n_tok == 1)
                        break;
                if (strcmp(tok[0], "knob") == 0) {
                        if (c->n_sizes)
                                return bad(r, "'knob' line after a 'size' line: knobs come first");
                        if (c->n_knobs == MTHP_KNOBS_MAX)
                                return bad(r, "more than %d 'knob' lines", MTHP_KNOBS_MAX);
                        struct mthp_knob *k = &c->knobs[c->n_knobs];
                        e = parse_fields(r, "knob", tok + 1, n_tok - 1, fl, record_knob_fields(k, fl));
                        if (e < 0)
                                return e;
                        if (!k->id[0] || !k->path[0])
                                return bad(r, "'knob' line without id= or path=");
                        if ((k->type == MTHP_KNOB_SIZE_ANON || k->type == MTHP_KNOB_SIZE_SHMEM) != (k->size_kb > 0))
                                return bad(r, "'knob' line: size_kb=%u does not fit type=%s", k->size_kb,
                                           record_knob_type_names[k->type]);
                        c->n_knobs++;
                } else if (strcmp(tok[0], "size") == 0) {
                        e = read_size_line(r, tok, n_tok);
                        if (e < 0)
                                return e;
                } else
                        return bad(r, "unknown line '%s' in the caps: expected 'knob', 'size' or 'end'", tok[0]);
        }
        return 0;
}

int mthp_record_open_read(const char *path, struct mthp_caps *caps, struct mthp_record_reader **ret, char *err,
                          size_t errsz) {
        struct mthp_record_reader *r = calloc(1, sizeof(*r));
        char *tok[MAX_TOKENS];
        unsigned n_tok;
        int e;

        if (errsz)
                err[0] = 0;
        if (!r || !(r->path = strdup(path))) {
                free(r);
                return -ENOMEM;
        }
        r->err = err;
        r->errsz = errsz;
        r->f = fopen(path, "re");
        if (!r->f) {
                e = -errno;
                snprintf(err, errsz, "%s: cannot open: %s", path, strerror(-e));
                mthp_record_close_read(r);
                return e;
        }
        e = next_line(r, tok, &n_tok);
        if (e == 0) {
                r->line_no = 1;
                e = bad(r, "empty file: expected '" RECORD_MAGIC " %d'", MTHP_RECORD_VERSION);
        }
        else if (e > 0 && (r->line_no != 1 || strcmp(tok[0], RECORD_MAGIC) != 0 || n_tok != 2))
                e = bad(r, "not an mthpd recording: expected '" RECORD_MAGIC " %d' on the first line",
                        MTHP_RECORD_VERSION);
        else if (e > 0 && strcmp(tok[1], "1") != 0)
                e = bad(r, "recording format version %.16s: this build reads version %d", tok[1],
                        MTHP_RECORD_VERSION);
        if (e >= 0)
                e = read_caps(r);
        if (e < 0) {
                mthp_record_close_read(r);
                return e;
        }
        *caps = r->caps;
        *ret = r;
        return 0;
}

struct stat_items {
        const struct mthp_size *size;
        struct mthp_size_stats *stats;
};

static int stat_item(void *user, unsigned i, const char *item) {
        const struct stat_items *s = user;
        if (i >= s->size->n_stats)
                return -E2BIG;
        return parse_counter(item, &s->stats->stat[i]);
}

static int read_stat_line(struct mthp_record_reader *r, char **tok, unsigned n_tok, struct mthp_snapshot *snap) {
        unsigned kb;
        int i;
        if (n_tok < 2 || n_tok > 3)
                return bad(r, "expected 'stat SIZE COUNTER,...'");
        if (mthp_parse_size(tok[1], &kb) < 0 || (i = mthp_caps_find_size(&r->caps, kb)) < 0)
                return bad(r, "'stat' line: '%s' is not one of the recording's sizes", tok[1]);
        struct stat_items items = { &r->caps.sizes[i], &snap->size[i] };
        int n = n_tok == 3 ? for_each_item(tok[2], stat_item, &items) : 0;
        if (n == -E2BIG)
                return bad(r, "'stat' line: more counters than the %u stats of %s", items.size->n_stats, tok[1]);
        if (n < 0)
                return bad(r, "'stat' line: expected a counter VALUE[/RATE][:FLAGS] or nothing for each of %s's "
                           "stats", tok[1]);
        return 0;
}

static int read_knobs_line(struct mthp_record_reader *r, char **tok, unsigned n_tok, struct mthp_snapshot *snap) {
        if (n_tok - 1 != r->caps.n_knobs)
                return bad(r, "'knobs' line: expected %u values (one per knob), got %u", r->caps.n_knobs, n_tok - 1);
        for (unsigned i = 0; i < r->caps.n_knobs; i++)
                if (parse_string(tok[i + 1], snap->knob[i], sizeof(snap->knob[i])) < 0)
                        return bad(r, "'knobs' line: value %u '%s' (%s): expected a value of at most %d bytes", i + 1,
                                   tok[i + 1], r->caps.knobs[i].id, MTHP_VALUE_MAX - 1);
        return 0;
}

int mthp_record_read(struct mthp_record_reader *r, struct mthp_snapshot *snap, char *err, size_t errsz) {
        struct field fl[MAX_FIELDS];
        char *tok[MAX_TOKENS];
        unsigned n_tok;
        bool seen[RECORD_TICK_LINES] = { false };
        int e;

        r->err = err;
        r->errsz = errsz;
        if (errsz)
                err[0] = 0;
        memset(snap, 0, sizeof(*snap));
        e = next_line(r, tok, &n_tok);
        if (e <= 0)
                return e;
        if (strcmp(tok[0], "tick") != 0 || n_tok < 2 || parse_u64(tok[1], &snap->tick) < 0)
                return bad(r, "expected 'tick N ...' to start a tick, got '%s'", tok[0]);
        if (r->have_tick && snap->tick <= r->last_tick)
                return bad(r, "tick %llu after tick %llu: ticks must increase", (unsigned long long) snap->tick,
                           (unsigned long long) r->last_tick);
        e = parse_fields(r, "tick", tok + 2, n_tok - 2, fl, record_tick_fields(snap, fl));
        if (e < 0)
                return e;
        for (;;) {
                e = next_line(r, tok, &n_tok);
                if (e < 0)
                        return e;
                if (e == 0)
                        return bad(r, "the recording ends inside tick %llu (no 'end' line)",
                                   (unsigned long long) snap->tick);
                if (strcmp(tok[0], "end") == 0 && n_tok == 1)
                        break;
                size_t l = 0;
                while (l < RECORD_TICK_LINES && strcmp(tok[0], record_tick_lines[l].keyword) != 0)
                        l++;
                if (l < RECORD_TICK_LINES) {
                        if (seen[l])
                                return bad(r, "second '%s' line in tick %llu", tok[0], (unsigned long long) snap->tick);
                        seen[l] = true;
                        e = parse_fields(r, tok[0], tok + 1, n_tok - 1, fl, record_tick_lines[l].fields(snap, fl));
                } else if (strcmp(tok[0], "stat") == 0)
                        e = read_stat_line(r, tok, n_tok, snap);
                else if (strcmp(tok[0], "knobs") == 0)
                        e = read_knobs_line(r, tok, n_tok, snap);
                else if (strcmp(tok[0], "proc") == 0) {
                        if (snap->density.n_procs == MTHP_DENSITY_PROCS)
                                return bad(r, "more than %d 'proc' lines in tick %llu", MTHP_DENSITY_PROCS,
                                           (unsigned long long) snap->tick);
                        e = parse_fields(r, "proc", tok + 1, n_tok - 1, fl,
                                         record_proc_fields(&snap->density.proc[snap->density.n_procs++], r->caps.n_sizes,
                                                     fl));
                } else if (strcmp(tok[0], "gone") == 0) {
                        if (snap->density.n_gone == MTHP_DENSITY_GONE_MAX)
                                return bad(r, "more than %d 'gone' lines in tick %llu", MTHP_DENSITY_GONE_MAX,
                                           (unsigned long long) snap->tick);
                        int *pid = &snap->density.gone[snap->density.n_gone++];
                        struct field gf[1] = { SCALAR("pid", FIELD_INT, pid) };
                        e = parse_fields(r, "gone", tok + 1, n_tok - 1, gf, 1);
                        if (e == 0 && *pid <= 0)
                                return bad(r, "'gone' line in tick %llu: pid=%d, expected a process ID above 0",
                                           (unsigned long long) snap->tick, *pid);
                } else if (strcmp(tok[0], "rate") == 0) {
                        if (snap->density.n_rates == MTHP_DENSITY_GONE_MAX)
                                return bad(r, "more than %d 'rate' lines in tick %llu", MTHP_DENSITY_GONE_MAX,
                                           (unsigned long long) snap->tick);
                        struct mthp_proc_rate *pr = &snap->density.rates[snap->density.n_rates++];
                        pr->fault_rate = NAN;   /* a line without it is an error, not 0 */
                        struct field rf[2] = { SCALAR("pid", FIELD_INT, &pr->pid),
                                               SCALAR("fault_rate", FIELD_DOUBLE, &pr->fault_rate) };
                        e = parse_fields(r, "rate", tok + 1, n_tok - 1, rf, 2);
                        if (e == 0 && (pr->pid <= 0 || !(pr->fault_rate >= 0) || !isfinite(pr->fault_rate)))
                                return bad(r, "'rate' line in tick %llu: pid=%d fault_rate=%g, expected a process ID "
                                           "above 0 and a rate of 0 or more", (unsigned long long) snap->tick, pr->pid,
                                           pr->fault_rate);
                } else if (strcmp(tok[0], "cgroup") == 0) {
                        if (snap->n_cgroups == MTHP_SNAP_CGROUPS)
                                return bad(r, "more than %d 'cgroup' lines in tick %llu", MTHP_SNAP_CGROUPS,
                                           (unsigned long long) snap->tick);
                        e = parse_fields(r, "cgroup", tok + 1, n_tok - 1, fl,
                                         record_cgroup_fields(&snap->cgroup[snap->n_cgroups++], fl));
                } else if (strcmp(tok[0], "limits") == 0) {
                        e = parse_fields(r, "limits", tok + 1, n_tok - 1, fl, record_limits_fields(snap, fl));
                } else if (strcmp(tok[0], "limited") == 0) {
                        if (snap->n_limited == MTHP_SNAP_LIMITED)
                                return bad(r, "more than %d 'limited' lines in tick %llu", MTHP_SNAP_LIMITED,
                                           (unsigned long long) snap->tick);
                        e = parse_fields(r, "limited", tok + 1, n_tok - 1, fl,
                                         record_limited_fields(&snap->limited[snap->n_limited++], fl));
                } else
                        return bad(r, "unknown line '%s' in tick %llu: expected vm, mem, psi, stat, knobs, rates, "
                                   "density, proc, gone, rate, cgroup, limits, limited or end", tok[0],
                                   (unsigned long long) snap->tick);
                if (e < 0)
                        return e;
        }
        r->have_tick = true;
        r->last_tick = snap->tick;
        return 1;
}

void mthp_record_close_read(struct mthp_record_reader *r) {
        if (!r)
                return;
        if (r->f)
                fclose(r->f);
        free(r->line);
        free(r->path);
        free(r);
}
