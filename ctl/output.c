/* SPDX-License-Identifier: MIT */
/* mthpctl's output: aligned tables and JSON strings. */
#include "mthpctl.h"

void json_fstr(FILE *f, const char *s) {
        /* valid UTF-8 without control characters, whatever s holds */
        mthp_json_string(f, s);
}

void json_str(const char *s) {
        json_fstr(stdout, s);
}

void json_str_or_null(const char *s) {
        if (s)
                json_str(s);
        else
                printf("null");
}

void json_u64_or_null(bool known, uint64_t v) {
        if (known)
                printf("%llu", (unsigned long long) v);
        else
                printf("null");
}

/* Errors of files ("FILE:LINE: ...", one a line) on stderr: they quote
 * the files' bytes and name files anyone may have named. */
void print_errors(const char *err) {
        size_t n = strlen(err) * 4 + 1; /* a byte becomes at most "\xNN" */
        char *clean = xrealloc(NULL, n);
        fputs(mthp_escape_lines(clean, n, err), stderr);
        free(clean);
}

void *xrealloc(void *p, size_t n) {
        p = realloc(p, n);
        if (!p) {
                fprintf(stderr, "mthpctl: out of memory\n");
                exit(EXIT_FAIL);
        }
        return p;
}

/* An aligned text table: cells are added row by row, widths come from the
 * widest cell; a header starting with '>' right-aligns its column
 * (numbers); the last column is not padded. */
#define TABLE_COLS_MAX 10
void table_cell(struct table *t, const char *fmt, ...) {
        va_list ap;
        char *s;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        /* cells show cgroup paths, comms in reasons, journal entries: what
         * anyone can name reaches the terminal escaped */
        char *clean = r < 0 ? NULL : mthp_escape_dup(s);
        if (r >= 0)
                free(s);
        if (!clean) {
                fprintf(stderr, "mthpctl: out of memory\n");
                exit(EXIT_FAIL);
        }
        s = clean;
        t->cells = xrealloc(t->cells, (t->n_cells + 1) * sizeof(*t->cells));
        t->cells[t->n_cells++] = s;
}

/* A text mthpd composed, a reason: the engine escaped every name it quotes
 * in it (mthp_escape through its quoting) when it wrote it, so escaping it
 * again here doubled each backslash of a name ("\\x2d" for a unit's
 * "\x2d"). Printed as it is when it is clean text; anything else (raw
 * bytes from an mthpd that did not escape) is escaped. */
const char *composed_text(char *buf, size_t size, const char *s) {
        if (mthp_text_is_clean(s)) {
                mthp_strcpy(buf, size, s);
                return buf;
        }
        return mthp_escape(buf, size, s);
}

void table_text_cell(struct table *t, const char *prefix, const char *s) {
        if (!mthp_text_is_clean(s)) {
                table_cell(t, "%s%s", prefix, s);
                return;
        }
        size_t n = strlen(prefix) + strlen(s) + 1;
        char *cell = xrealloc(NULL, n);
        snprintf(cell, n, "%s%s", prefix, s);
        t->cells = xrealloc(t->cells, (t->n_cells + 1) * sizeof(*t->cells));
        t->cells[t->n_cells++] = cell;
}

/* headers..., NULL */
void table_init(struct table *t, ...) {
        va_list ap;
        const char *h;
        memset(t, 0, sizeof(*t));
        va_start(ap, t);
        while ((h = va_arg(ap, const char *)) && t->n_cols < TABLE_COLS_MAX) {
                t->right[t->n_cols++] = h[0] == '>';
                table_cell(t, "%s", h + (h[0] == '>'));
        }
        va_end(ap);
}

void table_print(const struct table *t, FILE *f) {
        size_t w[TABLE_COLS_MAX] = { 0 };
        for (unsigned i = 0; i < t->n_cells; i++) {
                size_t l = strlen(t->cells[i]);
                if (l > w[i % t->n_cols])
                        w[i % t->n_cols] = l;
        }
        for (unsigned i = 0; i < t->n_cells; i++) {
                unsigned col = i % t->n_cols;
                bool last = col == t->n_cols - 1;
                if (col)
                        fputs("  ", f);
                if (t->right[col])
                        fprintf(f, "%*s", (int) w[col], t->cells[i]);
                else if (last)
                        fputs(t->cells[i], f);
                else
                        fprintf(f, "%-*s", (int) w[col], t->cells[i]);
                if (last)
                        fputc('\n', f);
        }
}

void table_free(struct table *t) {
        for (unsigned i = 0; i < t->n_cells; i++)
                free(t->cells[i]);
        free(t->cells);
}
