/* SPDX-License-Identifier: MIT */
/* The other deciders of THP (mthp/deciders.h) as status shows them, in text
 * and JSON, and who most likely took each knob mthpd no longer manages. */
#include "mthpctl.h"
#include "mthp/deciders.h"
#include "mthp/escape.h"

static void knob_ids(FILE *f, const struct mthp_caps *caps, uint64_t mask, bool json) {
        bool first = true;
        for (unsigned i = 0; i < caps->n_knobs && i < 64; i++) {
                if (!(mask & (1ULL << i)))
                        continue;
                if (json) {
                        fputs(first ? "" : ",", f);
                        json_str(caps->knobs[i].id);
                } else
                        fprintf(f, "%s%s", first ? "" : " ", caps->knobs[i].id);
                first = false;
        }
}

static void print_source(FILE *f, const struct mthp_caps *caps, const struct mthp_deciders *d,
                         enum mthp_decider_source src, const char *none) {
        bool any = false;
        for (unsigned i = 0; i < d->n; i++) {
                const struct mthp_decider_setting *s = &d->s[i];
                if (s->source != src)
                        continue;
                fprintf(f, "    %s", s->text);
                if (src != MTHP_DECIDER_CMDLINE && src != MTHP_DECIDER_TUNED)
                        fprintf(f, "  [%s]", s->origin);
                if (s->knobs) {
                        fprintf(f, " -> ");
                        knob_ids(f, caps, s->knobs, false);
                } else if (strncmp(s->text, "MemoryTHP=", 10) == 0)
                        fprintf(f, " (per process: its memory ignores the knobs)");
                else if (strncmp(s->text, "transparent_hugepage_tmpfs=", 27) == 0)
                        fprintf(f, " (tmpfs mounts' default huge=, no knob)");
                fputc('\n', f);
                any = true;
        }
        if (!any && none)
                fprintf(f, "    %s\n", none);
}

void print_deciders(FILE *f, const struct mthp_caps *caps, const struct mthp_deciders *d) {
        fprintf(f, "other deciders of THP:\n  kernel command line:\n");
        print_source(f, caps, d, MTHP_DECIDER_CMDLINE,
                     "no THP parameter (transparent_hugepage=, thp_anon=, thp_shmem=, transparent_hugepage_shmem=, "
                     "transparent_hugepage_tmpfs=)");
        if (!d->tuned_installed && !d->tuned_pid && !d->tuned_profile[0])
                fprintf(f, "  tuned: not installed\n");
        else {
                fprintf(f, "  tuned: ");
                if (d->tuned_pid)
                        fprintf(f, "running (PID %d)", d->tuned_pid);
                else
                        fprintf(f, "not running");
                fprintf(f, ", active profile %s%s%s:\n", d->tuned_profile[0] ? "'" : "",
                        d->tuned_profile[0] ? d->tuned_profile : "none", d->tuned_profile[0] ? "'" : "");
                print_source(f, caps, d, MTHP_DECIDER_TUNED, "no THP setting in the profile");
        }
        fprintf(f, "  systemd units (%u unit files read):\n", d->n_units_scanned);
        print_source(f, caps, d, MTHP_DECIDER_UNIT, "none with MemoryTHP= or an Exec line writing a THP knob");
        fprintf(f, "  boot-time writers (%u tmpfiles.d, sysfs.conf, udev rule and rc.local files read):\n",
                d->n_boot_scanned);
        bool any = false;
        for (unsigned i = 0; i < d->n; i++)
                any = any || d->s[i].source >= MTHP_DECIDER_TMPFILES;
        if (!any)
                fprintf(f, "    none writing a THP knob\n");
        for (int src = MTHP_DECIDER_TMPFILES; any && src <= MTHP_DECIDER_RCLOCAL; src++)
                print_source(f, caps, d, (enum mthp_decider_source) src, NULL);
}

/* The administrator's THP off as mthpd finds it at its start
 * (mthp_deciders_thp_off), from the command line and global/enabled now. */
static void thp_off_of(const struct mthp_caps *caps, const struct mthp_snapshot *snap, const struct mthp_deciders *d,
                       struct mthp_engine_config *e) {
        int g = mthp_caps_find_knob(caps, "global/enabled");
        mthp_deciders_thp_off(d, caps, g >= 0 ? snap->knob[g] : NULL, e);
}

void print_thp_off(FILE *f, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                   const struct mthp_deciders *d) {
        static struct mthp_engine_config e;
        thp_off_of(caps, snap, d, &e);
        for (int k = 0; k < _MTHP_KIND_MAX; k++)
                if (e.thp_off[k][0])
                        fprintf(f, "note: THP off by the administrator (%s): mthpd holds %s at 4K and raises no %s "
                                "size, unless its configuration says OverrideThpOff=yes\n",
                                e.thp_off[k], mthp_kind_name(k), mthp_kind_name(k));
}

void json_thp_off(const struct mthp_caps *caps, const struct mthp_snapshot *snap, const struct mthp_deciders *d) {
        static struct mthp_engine_config e;
        thp_off_of(caps, snap, d, &e);
        printf("\"thp_off\":{");
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                printf("%s\"%s\":", k ? "," : "", mthp_kind_name(k));
                json_str_or_null(e.thp_off[k][0] ? e.thp_off[k] : NULL);
        }
        printf("}");
}

void json_deciders(const struct mthp_caps *caps, const struct mthp_deciders *d) {
        printf("\"deciders\":{\"tuned\":{\"installed\":%s,\"running\":%s,\"pid\":", d->tuned_installed ? "true" : "false",
               d->tuned_pid ? "true" : "false");
        if (d->tuned_pid)
                printf("%d", d->tuned_pid);
        else
                printf("null");
        printf(",\"profile\":");
        json_str_or_null(d->tuned_profile[0] ? d->tuned_profile : NULL);
        printf("},\"units_read\":%u,\"settings\":[", d->n_units_scanned);
        for (unsigned i = 0; i < d->n; i++) {
                const struct mthp_decider_setting *s = &d->s[i];
                printf("%s{\"source\":\"%s\",\"origin\":", i ? "," : "", mthp_decider_source_name(s->source));
                json_str(s->origin);
                printf(",\"setting\":");
                json_str(s->text);
                printf(",\"value\":");
                json_str_or_null(s->value[0] ? s->value : NULL);
                printf(",\"knobs\":[");
                knob_ids(stdout, caps, s->knobs, true);
                printf("]}");
        }
        printf("]}");
}

/* The knob's note in StateDirectory/foreign (when mthpd noticed and whom it
 * named then), or NULL. */
const struct mthp_foreign_note *foreign_note_find(const struct mthp_foreign_note *n, int nn, const char *id) {
        for (int i = 0; i < nn; i++)
                if (strcmp(n[i].id, id) == 0)
                        return &n[i];
        return NULL;
}

void likely_writer(const struct mthp_deciders *d, const struct mthp_foreign_note *note, int knob, const char *value,
                   char *buf, size_t size) {
        const struct mthp_decider_setting *s = mthp_deciders_likely_writer(d, knob, value);
        if (s)
                mthp_decider_describe(s, buf, size);
        else if (note && note->writer[0])
                mthp_escape(buf, size, note->writer);   /* a file in the state directory */
        else
                buf[0] = 0;
}
