/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "mthp/escape.h"
#include "mthp/safe-io.h"
#include "mthp/status.h"
#include "mthp/util.h"

int mthp_status_file_write(const char *state_dir, const struct mthp_snapshot *snap, const struct mthp_status_knob *k,
                           unsigned n, bool observing, const char *not_writable, uint64_t tick_usec,
                           const struct mthp_status_rates *rates, const struct mthp_status_coverage *coverage) {
        char why[MTHP_PATH_MAX + 256];
        int dfd = mthp_safe_open_dir(state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why));
        if (dfd < 0)
                return dfd;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f) {
                close(dfd);
                return -ENOMEM;
        }
        uint64_t now = mthp_now_usec(CLOCK_REALTIME);
        fprintf(f, "[status]\npid=%d\ndry_run=%d\ntick=%llu\nupdated_usec=%llu\nfault_pages_rate=%.0f\ntick_usec=%llu\n",
                getpid(), observing, (unsigned long long) snap->tick,
                (unsigned long long) now,
                snap->fault_pages_rate, (unsigned long long) tick_usec);
        if (rates)
                fprintf(f, "fault_cost_ns=%.3f\nraise_fault_rate=%.3f\nlower_fault_rate=%.3f\nfault_rates_by=%s\n",
                        rates->fault_cost_ns, rates->raise, rates->lower,
                        rates->by_time ? "RaiseFaultTime" : "RaiseFaultRate");
        if (coverage && coverage->cgroups_known)
                fprintf(f, "cgroups_managed=%u\ncgroups_reopened=%u\ncgroups_unmonitored=%u\ncgroup_fds=%u\n"
                        "fd_limit=%llu\nfd_reserve=%u\n", coverage->managed, coverage->reopened, coverage->unmonitored,
                        coverage->fds, coverage->fd_limit, coverage->fd_reserve);
        if (coverage && coverage->guard_known)
                fprintf(f, "guard_scanned=%u\nguard_limited=%u\nguard_weighed=%u\nguard_unseen=%u\n"
                        "guard_scan_usec=%llu\n", coverage->scanned, coverage->limited, coverage->weighed,
                        coverage->unseen, coverage->scan_usec);
        /* every value on one line and valid UTF-8: a reason quotes process
         * (comm) and cgroup names, which anyone chooses; a newline in one
         * forged a decision line that 'mthpctl explain' believed */
        char clean[4 * MTHP_REASON_MAX];
        if (not_writable && not_writable[0])
                fprintf(f, "not_writable=%s\n", mthp_escape(clean, sizeof(clean), not_writable));
        for (unsigned i = 0; i < n; i++) {
                char id[4 * sizeof(k[i].id)], value[4 * MTHP_VALUE_MAX];
                fprintf(f, "\n[knob %s]\ndecision=%s\n", mthp_escape(id, sizeof(id), k[i].id),
                        mthp_escape(value, sizeof(value), k[i].decision[0] ? k[i].decision : "original"));
                fprintf(f, "reason=%s\n", mthp_escape(clean, sizeof(clean), k[i].reason));
                if (k[i].set_by[0])
                        fprintf(f, "set_by=%s\n", mthp_escape(value, sizeof(value), k[i].set_by));
                if (k[i].rule[0])
                        fprintf(f, "rule=%s\n", mthp_escape(value, sizeof(value), k[i].rule));
                if (k[i].size_rule[0])
                        fprintf(f, "size_rule=%s\n", mthp_escape(value, sizeof(value), k[i].size_rule));
                fprintf(f, "pinned=%d\n", k[i].pinned);
        }
        if (fclose(f) != 0) {
                free(text);
                close(dfd);
                return -ENOMEM;
        }
        int r = mthp_safe_write_atomic(dfd, state_dir, MTHP_STATUS_FILE, 0644, text, len, false, why, sizeof(why));
        free(text);
        close(dfd);
        return r;
}

void mthp_status_file_remove(const char *state_dir) {
        char why[MTHP_PATH_MAX + 256];
        int dfd = mthp_safe_open_dir(state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why));
        if (dfd < 0)
                return;
        (void) unlinkat(dfd, MTHP_STATUS_FILE, 0);
        close(dfd);
}

/* A number mthpctl prints: finite and not negative, or left alone. */
static void status_number(const char *value, double *x, bool *known) {
        char *end;
        double v = strtod(value, &end);
        if (end == value || *end || !isfinite(v) || v < 0)
                return;
        *x = v;
        if (known)
                *known = true;
}

/* The status file is mthpd's own output, not a configuration file: reasons
 * run past inih's 200-character line limit, so it is read line by line. */
/* A value as mthpd wrote it (mthp_escape) back to the text it stands for:
 * mthpctl escapes what it prints, once. Text that is not what mthp_escape
 * writes (a hand-edited file) is escaped instead, so it prints harmless. */
static void status_text(char *dst, size_t size, const char *value) {
        if (mthp_unescape(dst, size, value) < 0)
                mthp_escape(dst, size, value);
}

/* The coverage keys of [status]; false: not one of them. */
static bool status_coverage(struct mthp_status_coverage *c, const char *key, const char *value) {
        static const struct {
                const char *key;
                size_t offset;
                bool guard, ull;
        } keys[] = {
                { "cgroups_managed", offsetof(struct mthp_status_coverage, managed), false, false },
                { "cgroups_reopened", offsetof(struct mthp_status_coverage, reopened), false, false },
                { "cgroups_unmonitored", offsetof(struct mthp_status_coverage, unmonitored), false, false },
                { "cgroup_fds", offsetof(struct mthp_status_coverage, fds), false, false },
                { "fd_limit", offsetof(struct mthp_status_coverage, fd_limit), false, true },
                { "fd_reserve", offsetof(struct mthp_status_coverage, fd_reserve), false, false },
                { "guard_scanned", offsetof(struct mthp_status_coverage, scanned), true, false },
                { "guard_limited", offsetof(struct mthp_status_coverage, limited), true, false },
                { "guard_weighed", offsetof(struct mthp_status_coverage, weighed), true, false },
                { "guard_unseen", offsetof(struct mthp_status_coverage, unseen), true, false },
                { "guard_scan_usec", offsetof(struct mthp_status_coverage, scan_usec), true, true },
        };
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                if (strcmp(key, keys[i].key) != 0)
                        continue;
                char *end;
                errno = 0;
                unsigned long long v = strtoull(value, &end, 10);
                if (end == value || *end || errno || value[0] == '-' || (!keys[i].ull && v > UINT_MAX))
                        return true; /* not a number mthpd writes: ignored */
                if (keys[i].ull)
                        *(unsigned long long *) ((char *) c + keys[i].offset) = v;
                else
                        *(unsigned *) ((char *) c + keys[i].offset) = (unsigned) v;
                if (keys[i].guard)
                        c->guard_known = true;
                else
                        c->cgroups_known = true;
                return true;
        }
        return false;
}

static void status_line(struct mthp_status *st, char *section, const char *key, const char *value) {
        if (strcmp(section, "status") == 0) {
                if (status_coverage(&st->coverage, key, value))
                        return;
                if (strcmp(key, "pid") == 0)
                        st->pid = atoi(value);
                else if (strcmp(key, "dry_run") == 0)
                        st->observing = atoi(value) != 0;
                else if (strcmp(key, "tick") == 0)
                        st->tick = strtoull(value, NULL, 10);
                else if (strcmp(key, "updated_usec") == 0)
                        st->updated_realtime_usec = strtoull(value, NULL, 10);
                else if (strcmp(key, "fault_pages_rate") == 0)
                        st->fault_pages_rate = strtod(value, NULL);
                else if (strcmp(key, "tick_usec") == 0)
                        st->tick_usec = strtoull(value, NULL, 10);
                else if (strcmp(key, "fault_cost_ns") == 0)
                        status_number(value, &st->rates.fault_cost_ns, NULL);
                else if (strcmp(key, "raise_fault_rate") == 0)
                        status_number(value, &st->rates.raise, &st->rates_known);
                else if (strcmp(key, "lower_fault_rate") == 0)
                        status_number(value, &st->rates.lower, &st->lower_known);
                else if (strcmp(key, "fault_rates_by") == 0)
                        st->rates.by_time = strcmp(value, "RaiseFaultTime") == 0;
                else if (strcmp(key, "not_writable") == 0) {
                        status_text(st->not_writable, sizeof(st->not_writable), value);
                }
                return;
        }
        if (strncmp(section, "knob ", 5) != 0)
                return; /* newer daemon, older mthpctl: ignore what we do not know */
        char id[sizeof(st->k[0].id)];
        status_text(id, sizeof(id), section + 5);
        struct mthp_status_knob *k = st->n ? &st->k[st->n - 1] : NULL;
        if (!k || strcmp(k->id, id) != 0) {
                if (st->n >= MTHP_KNOBS_MAX)
                        return;
                k = &st->k[st->n++];
                mthp_strcpy(k->id, sizeof(k->id), id);
        }
        if (strcmp(key, "decision") == 0)
                status_text(k->decision, sizeof(k->decision), value);
        else if (strcmp(key, "reason") == 0)
                status_text(k->reason, sizeof(k->reason), value);
        else if (strcmp(key, "set_by") == 0)
                status_text(k->set_by, sizeof(k->set_by), value);
        else if (strcmp(key, "pinned") == 0)
                k->pinned = atoi(value) != 0;
        else if (strcmp(key, "rule") == 0)
                status_text(k->rule, sizeof(k->rule), value);
        else if (strcmp(key, "size_rule") == 0)
                status_text(k->size_rule, sizeof(k->size_rule), value);
}

static int status_parse(FILE *f, struct mthp_status *st) {
        /* room for "knob " and an id escaped whole (4 bytes a byte) */
        char *line = NULL, section[8 + 4 * sizeof(st->k[0].id)] = "";
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) >= 0) {
                if (memchr(line, 0, (size_t) len))
                        continue; /* not a line of text: ignore */
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = 0;
                if (line[0] == '[' && len > 1 && line[len - 1] == ']') {
                        line[len - 1] = 0;
                        if (mthp_strcpy(section, sizeof(section), line + 1) < 0)
                                mthp_strcpy(section, sizeof(section), "?"); /* not ours: its keys ignored, never cut */
                        continue;
                }
                char *eq = strchr(line, '=');
                if (!eq || line[0] == '#')
                        continue;
                *eq = 0;
                status_line(st, section, line, eq + 1);
        }
        free(line);
        return 0;
}

int mthp_status_file_read(const char *state_dir, struct mthp_status *st) {
        char why[MTHP_PATH_MAX + 256];
        memset(st, 0, sizeof(*st));
        int dfd = mthp_safe_open_dir(state_dir, MTHP_SAFE_OWNER, false, why, sizeof(why));
        if (dfd < 0)
                return dfd;
        int fd = mthp_safe_open_file(dfd, state_dir, MTHP_STATUS_FILE, MTHP_SAFE_OWNER | MTHP_SAFE_NOFOLLOW,
                                     MTHP_SAFE_TEXT_MAX, why, sizeof(why));
        close(dfd);
        if (fd < 0)
                return fd;
        FILE *f = fdopen(fd, "re");
        if (!f) {
                int r = -errno;
                close(fd);
                return r;
        }
        int r = status_parse(f, st);
        fclose(f);
        /* both rates or none: "steps down below 0" would be a lie */
        st->rates_known = st->rates_known && st->lower_known;
        if (!st->rates_known)
                st->rates = (struct mthp_status_rates) { 0 };
        if (r < 0)
                return r;
        if (st->pid <= 0 || (kill(st->pid, 0) < 0 && errno == ESRCH))
                return -ENOENT;
        return 0;
}
