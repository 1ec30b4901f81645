/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/stat.h>

#include "mthp/status.h"

int mthp_status_file_write(const char *state_dir, const struct mthp_caps *caps, const struct mthp_snapshot *snap,
                           const struct mthp_decision *d, int n, bool dry_run, const char *not_writable,
                           uint64_t tick_usec) {
        char path[MTHP_PATH_MAX + 16], tmp[MTHP_PATH_MAX + 24];
        struct timespec ts;
        snprintf(path, sizeof(path), "%s/" MTHP_STATUS_FILE, state_dir);
        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        FILE *f = fopen(tmp, "we");
        if (!f)
                return -errno;
        /* for every user's mthpctl, whatever the service's UMask= */
        (void) fchmod(fileno(f), 0644);
        clock_gettime(CLOCK_REALTIME, &ts);
        fprintf(f, "[status]\npid=%d\ndry_run=%d\ntick=%llu\nupdated_usec=%llu\nfault_pages_rate=%.0f\ntick_usec=%llu\n",
                getpid(), dry_run, (unsigned long long) snap->tick,
                (unsigned long long) ts.tv_sec * 1000000ULL + (unsigned long long) ts.tv_nsec / 1000,
                snap->fault_pages_rate, (unsigned long long) tick_usec);
        if (not_writable && not_writable[0])
                fprintf(f, "not_writable=%s\n", not_writable); /* one line: no newline in the phrase */
        for (int i = 0; i < n; i++) {
                /* reasons are one line: they come from snprintf formats without newlines */
                fprintf(f, "\n[knob %s]\ndecision=%s\nreason=%s\n", caps->knobs[d[i].knob].id,
                        d[i].value[0] ? d[i].value : "original", d[i].reason);
        }
        int r = ferror(f) ? -EIO : 0;
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

void mthp_status_file_remove(const char *state_dir) {
        char path[MTHP_PATH_MAX + 16];
        snprintf(path, sizeof(path), "%s/" MTHP_STATUS_FILE, state_dir);
        unlink(path);
}

/* The status file is mthpd's own output, not a configuration file: reasons
 * run past inih's 200-character line limit, so it is read line by line. */
static void status_line(struct mthp_status *st, char *section, const char *key, const char *value) {
        if (strcmp(section, "status") == 0) {
                if (strcmp(key, "pid") == 0)
                        st->pid = atoi(value);
                else if (strcmp(key, "dry_run") == 0)
                        st->dry_run = atoi(value) != 0;
                else if (strcmp(key, "tick") == 0)
                        st->tick = strtoull(value, NULL, 10);
                else if (strcmp(key, "updated_usec") == 0)
                        st->updated_realtime_usec = strtoull(value, NULL, 10);
                else if (strcmp(key, "fault_pages_rate") == 0)
                        st->fault_pages_rate = strtod(value, NULL);
                else if (strcmp(key, "tick_usec") == 0)
                        st->tick_usec = strtoull(value, NULL, 10);
                else if (strcmp(key, "not_writable") == 0)
                        mthp_strcpy(st->not_writable, sizeof(st->not_writable), value);
                return;
        }
        if (strncmp(section, "knob ", 5) != 0)
                return; /* newer daemon, older mthpctl: ignore what we do not know */
        const char *id = section + 5;
        struct mthp_status_knob *k = st->n ? &st->k[st->n - 1] : NULL;
        if (!k || strcmp(k->id, id) != 0) {
                if (st->n >= MTHP_KNOBS_MAX)
                        return;
                k = &st->k[st->n++];
                mthp_strcpy(k->id, sizeof(k->id), id);
        }
        if (strcmp(key, "decision") == 0)
                mthp_strcpy(k->decision, sizeof(k->decision), value);
        else if (strcmp(key, "reason") == 0)
                mthp_strcpy(k->reason, sizeof(k->reason), value);
}

static int status_parse(FILE *f, struct mthp_status *st) {
        char *line = NULL, section[64] = "";
        size_t cap = 0;
        ssize_t len;
        while ((len = getline(&line, &cap, f)) >= 0) {
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = 0;
                if (line[0] == '[' && len > 1 && line[len - 1] == ']') {
                        line[len - 1] = 0;
                        mthp_strcpy(section, sizeof(section), line + 1);
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
        char path[MTHP_PATH_MAX + 16];
        memset(st, 0, sizeof(*st));
        snprintf(path, sizeof(path), "%s/" MTHP_STATUS_FILE, state_dir);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        int r = status_parse(f, st);
        fclose(f);
        if (r < 0)
                return r;
        if (st->pid <= 0 || (kill(st->pid, 0) < 0 && errno == ESRCH))
                return -ENOENT;
        return 0;
}
