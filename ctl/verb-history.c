/* SPDX-License-Identifier: MIT */
/* mthpctl history: the knob changes mthpd made, from the bus or the journal. */
#include <dirent.h>
#include <systemd/sd-journal.h>

#include "mthpctl.h"
#include "mthp/util.h"

struct history {
        const char *source;                   /* "bus" | "journal" */
        unsigned n, cap;
        struct mthp_change *c;
        bool *observing;                        /* observed, not written (bus: History's flag, journal: MTHP_DRY_RUN) */
        bool denied;                          /* journal files this user may not read */
};

static void history_add(struct history *h, const struct mthp_change *c, bool observing) {
        if (h->n == h->cap) {
                h->cap = h->cap ? 2 * h->cap : 64;
                h->c = xrealloc(h->c, h->cap * sizeof(*h->c));
                h->observing = xrealloc(h->observing, h->cap * sizeof(*h->observing));
        }
        h->c[h->n] = *c;
        h->observing[h->n++] = observing;
}

/* A field of the current entry, "NAME=value" in the journal, into buf
 * (truncated; up to an embedded NUL). 0, or -ENOENT if the entry lacks it. */
static int journal_field(sd_journal *j, const char *name, char *buf, size_t size) {
        const void *data;
        size_t len, nl = strlen(name);
        int r = sd_journal_get_data(j, name, &data, &len);
        if (r < 0)
                return r;
        const char *v = (const char *) data + nl + 1, *end = (const char *) data + len;
        size_t n = (size_t) (end - v) < size - 1 ? (size_t) (end - v) : size - 1;
        const char *nul = memchr(v, 0, n);
        if (nul)
                n = (size_t) (nul - v);
        memcpy(buf, v, n);
        buf[n] = 0;
        return 0;
}

/* The journal files below dir (depth 1: in it; 2: in its subdirectories)
 * and directories on the way this user cannot read: sd-journal skips them
 * without a word, and the history would look empty. Returns how many;
 * example gets the first. */
static unsigned denied_below(const char *dir, int depth, char *example, size_t size) {
        DIR *d = opendir(dir);
        if (!d) {
                if (errno != EACCES)
                        return 0;
                if (!example[0])
                        mthp_strcpy(example, size, dir);
                return 1;
        }
        unsigned denied = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                char path[MTHP_PATH_MAX];
                if (de->d_name[0] == '.' || mthp_path_join(path, sizeof(path), dir, de->d_name) < 0)
                        continue;
                if (depth > 1)
                        denied += denied_below(path, depth - 1, example, size);
                else if (strstr(de->d_name, ".journal") && access(path, R_OK) < 0 && errno == EACCES) {
                        if (!example[0])
                                mthp_strcpy(example, size, path);
                        denied++;
                }
        }
        closedir(d);
        return denied;
}

/* ...under ROOT/var/log/journal/MACHINE and ROOT/run/log/journal/MACHINE */
static unsigned journal_files_denied(const char *root, char *example, size_t size) {
        static const char *const tops[] = { "var/log/journal", "run/log/journal" };
        unsigned denied = 0;
        example[0] = 0;
        for (size_t t = 0; t < sizeof(tops) / sizeof(tops[0]); t++) {
                char top[MTHP_PATH_MAX];
                if (mthp_path_join(top, sizeof(top), root, tops[t]) == 0)
                        denied += denied_below(top, 2, example, size);
        }
        return denied;
}

/* Without the daemon: its change entries (MESSAGE_ID=MTHP_MESSAGE_CHANGE)
 * from the journal of the host root, read with sd-journal: the system's
 * journal for /, else ROOT/var/log/journal and ROOT/run/log/journal (as
 * journalctl --root). --since seeks; -n keeps the last N (cmd_history). */
static int history_from_journal(const struct ctl *c, struct history *h) {
        _cleanup_(sd_journal_closep) sd_journal *j = NULL;
        bool host = strcmp(c->root, "/") == 0;
        int r = host ? sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY)
                     : sd_journal_open_directory(&j, c->root, SD_JOURNAL_OS_ROOT);
        if (r < 0) {
                fprintf(stderr, "mthpctl: history: mthpd is not on the bus and the journal%s%s cannot be opened: %s\n",
                        host ? "" : " under ", host ? "" : c->root, mthp_errno_words(r));
                return r;
        }
        uint64_t bytes = 0;
        char example[MTHP_PATH_MAX];
        unsigned denied = journal_files_denied(c->root, example, sizeof(example));
        if (denied) {
                char clean[4 * MTHP_PATH_MAX];
                h->denied = true;
                fprintf(stderr, "mthpctl: warning: history: permission denied: uid %u cannot read %u of the "
                        "journal's files or directories (%s%s), which may hold mthpd's changes: run as root, or "
                        "as a member of the systemd-journal or adm group\n", (unsigned) geteuid(), denied,
                        mthp_escape(clean, sizeof(clean), example), denied > 1 ? ", ..." : "");
        } else if (sd_journal_get_usage(j, &bytes) >= 0 && bytes == 0)
                fprintf(stderr, "mthpctl: warning: history: no journal files%s%s (var/log/journal, run/log/journal)\n",
                        host ? "" : " under ", host ? "" : c->root);
        if ((r = sd_journal_add_match(j, "MESSAGE_ID=" MTHP_MESSAGE_CHANGE, 0)) < 0 ||
            (r = c->since_set ? sd_journal_seek_realtime_usec(j, c->since_usec) : sd_journal_seek_head(j)) < 0) {
                fprintf(stderr, "mthpctl: history: reading the journal: %s\n", mthp_errno_words(r));
                return r;
        }
        while ((r = sd_journal_next(j)) > 0) {
                struct mthp_change ch = { 0 };
                char dry[8] = "0";
                if (sd_journal_get_realtime_usec(j, &ch.realtime_usec) < 0 ||
                    journal_field(j, "MTHP_KNOB", ch.id, sizeof(ch.id)) < 0 || !ch.id[0] ||
                    ch.realtime_usec < c->since_usec)
                        continue;
                journal_field(j, "MTHP_OLD", ch.old, sizeof(ch.old));
                journal_field(j, "MTHP_NEW", ch.new, sizeof(ch.new));
                journal_field(j, "MTHP_REASON", ch.reason, sizeof(ch.reason));
                journal_field(j, "MTHP_DRY_RUN", dry, sizeof(dry));
                history_add(h, &ch, strcmp(dry, "1") == 0);
        }
        if (r < 0) {
                fprintf(stderr, "mthpctl: history: reading the journal: %s\n", mthp_errno_words(r));
                return r;
        }
        return 0;
}

/* The last N of h, oldest first, as a table or JSON. */
static void history_print(const struct ctl *c, const struct history *h) {
        /* the last N, oldest first */
        unsigned from = c->lines && h->n > c->lines ? h->n - (unsigned) c->lines : 0;
        bool journal = strcmp(h->source, "journal") == 0;
        char since[64] = "";
        if (c->since_set)
                mthp_timestamp_format(c->since_usec, false, since, sizeof(since));
        if (c->json) {
                printf("{\"source\":\"%s\",\"changes\":[", h->source);
                for (unsigned i = from; i < h->n; i++) {
                        char t[64];
                        mthp_timestamp_format(h->c[i].realtime_usec, true, t, sizeof(t));
                        printf("%s{\"time_usec\":%llu,\"time\":\"%s\",\"id\":", i > from ? "," : "",
                               (unsigned long long) h->c[i].realtime_usec, t);
                        json_str(h->c[i].id);
                        printf(",\"old\":");
                        json_str(h->c[i].old);
                        printf(",\"new\":");
                        json_str(h->c[i].new);
                        printf(",\"reason\":");
                        json_str(h->c[i].reason);
                        printf(",\"dry_run\":%s", h->observing[i] ? "true" : "false");
                        printf("}");
                }
                printf("]}\n");
        } else if (from == h->n) {
                if (journal)
                        printf("mthpd is not on the bus, and the journal %sholds no knob changes by mthpd%s%s\n",
                               h->denied ? "this user may read " : "", since[0] ? " since " : "", since);
                else
                        printf("no knob changes%s%s (mthpd remembers its last %u)\n", since[0] ? " since " : "", since,
                               MTHP_HISTORY_MAX);
        } else {
                struct table t;
                if (journal)
                        printf("mthpd is not on the bus; its knob changes from the journal:\n");
                table_init(&t, "TIME", "KNOB", "OLD", "NEW", "REASON", NULL);
                for (unsigned i = from; i < h->n; i++) {
                        char tm[64];
                        mthp_timestamp_format(h->c[i].realtime_usec, false, tm, sizeof(tm));
                        table_cell(&t, "%s", tm);
                        table_cell(&t, "%s", h->c[i].id);
                        table_cell(&t, "%s", h->c[i].old);
                        table_cell(&t, "%s", h->c[i].new);
                        table_text_cell(&t, h->observing[i] ? "(dry run, not written) " : "", h->c[i].reason);
                }
                table_print(&t, stdout);
                table_free(&t);
        }
}

int cmd_history(struct ctl *c, int argc, char **argv) {
        struct history h = { 0 };
        int r;
        (void) argc;
        (void) argv;

        struct ctl_bus *bus = bus_open_for_read(false);
        if (bus) {
                /* all the daemon remembers when filtering by time, else the last N */
                uint32_t max = c->lines && !c->since_set ? (uint32_t) c->lines : UINT32_MAX;
                struct mthp_change *ch;
                bool *dry;
                unsigned n;
                struct ctl_bus_error e;
                r = ctl_bus_history(bus, max, &ch, &dry, &n, &e);
                ctl_bus_free(bus);
                if (r >= 0) {
                        h.source = "bus";
                        for (unsigned i = 0; i < n; i++)
                                if (ch[i].realtime_usec >= c->since_usec)
                                        history_add(&h, &ch[i], dry[i]);
                }
                free(ch);
                free(dry);
                if (r < 0 && r != -ESRCH) {
                        r = bus_fail(c, r, &e);
                        goto out;
                }
        }
        if (!h.source) {
                h.source = "journal";
                if (history_from_journal(c, &h) < 0) {
                        r = EXIT_FAIL;
                        goto out;
                }
        }
        history_print(c, &h);
        r = EXIT_OK;
out:
        free(h.c);
        free(h.observing);
        return r;
}
