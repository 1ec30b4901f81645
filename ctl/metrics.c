/* SPDX-License-Identifier: MIT */
/* mthpctl's metric model and its two printers (see metrics.h). */
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "mthpctl.h"

struct metric_family *metric_family_add(struct metric_set *set, const char *name, const char *type,
                                        const char *help) {
        if (set->n == set->cap) {
                set->cap = set->cap ? 2 * set->cap : 16;
                set->f = xrealloc(set->f, set->cap * sizeof(set->f[0]));
        }
        struct metric_family *f = &set->f[set->n++];
        *f = (struct metric_family) { .name = name, .type = type, .help = help };
        return f;
}

struct metric_sample *metric_sample_add(struct metric_family *f) {
        if (f->n == f->cap) {
                f->cap = f->cap ? 2 * f->cap : 8;
                f->s = xrealloc(f->s, f->cap * sizeof(f->s[0]));
        }
        struct metric_sample *s = &f->s[f->n++];
        memset(s, 0, sizeof(*s));
        return s;
}

static char *xstrdup(const char *s) {
        size_t l = strlen(s) + 1;
        return memcpy(xrealloc(NULL, l), s, l);
}

void metric_label(struct metric_sample *s, const char *name, const char *value) {
        if (s->n_labels == METRIC_LABELS_MAX)
                abort(); /* a programming error: METRIC_LABELS_MAX is too small */
        s->label_name[s->n_labels] = xstrdup(name);
        s->label_value[s->n_labels++] = xstrdup(value);
}

void metric_set_uint(struct metric_sample *s, unsigned long long v) {
        s->is_double = false;
        s->u = v;
}

void metric_set_double(struct metric_sample *s, double v, int decimals) {
        s->is_double = true;
        s->d = v;
        s->decimals = decimals;
}

void metric_set_free(struct metric_set *set) {
        for (unsigned i = 0; i < set->n; i++) {
                for (unsigned j = 0; j < set->f[i].n; j++)
                        for (unsigned l = 0; l < set->f[i].s[j].n_labels; l++) {
                                free(set->f[i].s[j].label_name[l]);
                                free(set->f[i].s[j].label_value[l]);
                        }
                free(set->f[i].s);
        }
        free(set->f);
        *set = (struct metric_set) { 0 };
}

static void print_value(FILE *f, const struct metric_sample *s) {
        if (s->is_double)
                fprintf(f, "%.*f", s->decimals, s->d);
        else
                fprintf(f, "%llu", s->u);
}

/* A label value in the exposition format (UTF-8): mthp_escape()'s text (a
 * cgroup's name is anyone's), then \\ and \" escaped. */
static void label_value(FILE *f, const char *v) {
        char *clean = mthp_escape_dup(v);
        fputc('"', f);
        for (const char *s = clean ? clean : ""; *s; s++) {
                if (*s == '\\' || *s == '"')
                        fprintf(f, "\\%c", *s);
                else if (*s == '\n')
                        fputs("\\n", f);
                else
                        fputc(*s, f);
        }
        fputc('"', f);
        free(clean);
}

int metrics_print_text(FILE *f, const struct metric_set *set) {
        for (unsigned i = 0; i < set->n; i++) {
                const struct metric_family *fam = &set->f[i];
                fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", fam->name, fam->help, fam->name, fam->type);
                for (unsigned j = 0; j < fam->n; j++) {
                        const struct metric_sample *s = &fam->s[j];
                        fputs(fam->name, f);
                        for (unsigned l = 0; l < s->n_labels; l++) {
                                fprintf(f, "%s%s=", l ? "," : "{", s->label_name[l]);
                                label_value(f, s->label_value[l]);
                        }
                        fputs(s->n_labels ? "} " : " ", f);
                        print_value(f, s);
                        fputc('\n', f);
                }
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

int metrics_print_json(FILE *f, const struct metric_set *set) {
        fputs("{\"metrics\":[", f);
        for (unsigned i = 0; i < set->n; i++) {
                const struct metric_family *fam = &set->f[i];
                fprintf(f, "%s{\"name\":", i ? "," : "");
                json_fstr(f, fam->name);
                fputs(",\"type\":", f);
                json_fstr(f, fam->type);
                fputs(",\"help\":", f);
                json_fstr(f, fam->help);
                fputs(",\"samples\":[", f);
                for (unsigned j = 0; j < fam->n; j++) {
                        const struct metric_sample *s = &fam->s[j];
                        fprintf(f, "%s{\"labels\":{", j ? "," : "");
                        for (unsigned l = 0; l < s->n_labels; l++) {
                                fputs(l ? "," : "", f);
                                json_fstr(f, s->label_name[l]);
                                fputc(':', f);
                                json_fstr(f, s->label_value[l]);
                        }
                        fputs("},\"value\":", f);
                        print_value(f, s);
                        fputc('}', f);
                }
                fputs("]}", f);
        }
        fputs("]}\n", f);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}
