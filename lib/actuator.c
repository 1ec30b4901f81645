/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "mthp/actuator.h"
#include "mthp/log.h"
#include "mthp/safe-io.h"

int mthp_actuator_init(struct mthp_actuator *a, const struct mthp_host *h, const struct mthp_caps *caps,
                       const char *state_dir, bool dry_run) {
        memset(a, 0, sizeof(*a));
        a->host = h;
        a->caps = caps;
        a->dry_run = dry_run;
        /* never a cut path: a cut one saved "restore.jo", which restore never found */
        if (mthp_path_join(a->journal_file, sizeof(a->journal_file), state_dir, MTHP_JOURNAL_FILE) < 0)
                return -ENAMETOOLONG;
        snprintf(a->journal.root, sizeof(a->journal.root), "%s", h->root);
        if (dry_run)
                return 0;
        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static void record(struct mthp_actuator *a, const struct mthp_knob *k, const char *old, const char *new,
                   const char *reason) {
        struct mthp_change *c = &a->history[a->history_head];
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        memset(c, 0, sizeof(*c));
        c->realtime_usec = (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
        snprintf(c->id, sizeof(c->id), "%s", k->id);
        snprintf(c->old, sizeof(c->old), "%s", old);
        snprintf(c->new, sizeof(c->new), "%s", new);
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        a->history_head = (a->history_head + 1) % MTHP_HISTORY_MAX;
        if (a->n_history < MTHP_HISTORY_MAX)
                a->n_history++;
        mthp_log_change(c, a->dry_run);
        if (a->on_change)
                a->on_change(a->user, c);
}

bool mthp_actuator_is_foreign(const struct mthp_actuator *a, int knob) {
        const struct mthp_journal_entry *e =
                mthp_journal_find((struct mthp_journal *) &a->journal, a->caps->knobs[knob].path);
        return e && e->state == MTHP_ENTRY_FOREIGN;
}

int mthp_actuator_resume(struct mthp_actuator *a, int knob) {
        const struct mthp_knob *k = &a->caps->knobs[knob];
        struct mthp_journal_entry *e = mthp_journal_find(&a->journal, k->path);
        if (!e || e->state != MTHP_ENTRY_FOREIGN)
                return -ENOENT;
        struct mthp_journal_entry saved = *e;
        mthp_journal_remove(&a->journal, k->path);
        if (!a->dry_run) {
                int r = mthp_journal_save(a->journal_file, &a->journal);
                if (r < 0) {
                        /* keep memory and disk in agreement: still foreign */
                        a->journal.e[a->journal.n++] = saved;
                        return r;
                }
        }
        return 0;
}

/* Dry run: track what the knob would hold, so each would-be change is
 * logged once, like a real one. */
static int dry_run_write(struct mthp_actuator *a, int knob, const char *value, const char *reason, char *err,
                         size_t errsz) {
        const struct mthp_knob *k = &a->caps->knobs[knob];
        char cur[MTHP_VALUE_MAX];
        /* already what we would hold: no need to read the kernel each tick */
        if (strcmp(a->simulated[knob], value) == 0)
                return 0;
        int r = mthp_knob_read(a->host, k, cur);
        if (r < 0) {
                snprintf(err, errsz, "%s (%s): cannot read current value: %s", k->id, k->path, mthp_errno_words(r));
                return r;
        }
        const char *sim = a->simulated[knob][0] ? a->simulated[knob] : cur;
        const char *target = value[0] ? value : cur; /* "" = original: the real value */
        if (value[0] && !mthp_knob_allows(k, value)) {
                snprintf(err, errsz, "%s (%s): '%s' is not one of the values this kernel accepts", k->id, k->path,
                         value);
                return -EINVAL;
        }
        if (strcmp(sim, target) == 0)
                return 0;
        record(a, k, sim, target, reason);
        snprintf(a->simulated[knob], sizeof(a->simulated[knob]), "%s", value[0] ? target : "");
        return 0;
}

int mthp_actuator_batch(struct mthp_actuator *a, bool on) {
        a->batch = on;
        if (on || !a->batch_dirty || a->dry_run)
                return 0;
        a->batch_dirty = false;
        return mthp_journal_save(a->journal_file, &a->journal);
}

int mthp_knob_write(struct mthp_actuator *a, int knob, const char *value, const char *reason, char *err,
                    size_t errsz) {
        const struct mthp_knob *k = &a->caps->knobs[knob];
        struct mthp_journal_entry *e = mthp_journal_find(&a->journal, k->path);
        char cur[MTHP_VALUE_MAX], target[MTHP_VALUE_MAX], back[MTHP_VALUE_MAX];
        int r;

        if (err && errsz)
                err[0] = 0;
        if (a->dry_run)
                return dry_run_write(a, knob, value, reason, err, errsz);
        if (e && e->state == MTHP_ENTRY_FOREIGN)
                return 0; /* someone else owns it now */
        if (!value[0]) {
                if (!e)
                        return 0; /* never touched: it has its original value */
                value = e->original;
        }
        snprintf(target, sizeof(target), "%s", value);
        /* Already what we wrote: nothing to do, and no read of the kernel on
         * every tick (mthp_actuator_check_foreign compares each tick's
         * snapshot with what we wrote, so another writer is still seen). */
        if (e && strcmp(e->written, target) == 0)
                return 0;
        if (!mthp_knob_allows(k, target)) {
                char list[MTHP_VALUES_MAX * MTHP_VALUE_MAX] = "";
                for (unsigned i = 0; i < k->n_allowed; i++) {
                        strcat(list, i ? ", " : "");
                        strcat(list, k->allowed[i]);
                }
                snprintf(err, errsz, "%s (%s): '%s' is not one of the values this kernel accepts (%s)", k->id,
                         k->path, target, list);
                return -EINVAL;
        }
        r = mthp_knob_read(a->host, k, cur);
        if (r < 0) {
                snprintf(err, errsz, "%s (%s): cannot read current value: %s", k->id, k->path, mthp_errno_words(r));
                return r;
        }
        if (e && strcmp(cur, e->written) != 0) {
                /* changed behind our back since our last write */
                snprintf(err, errsz, "%s: someone else set '%s' over mthpd's '%s'", k->id, cur, e->written);
                return -EBUSY;
        }
        if (strcmp(cur, target) == 0)
                return 0;

        /* journal the original before the first write, durably */
        struct mthp_journal_entry saved = { 0 };
        bool had = e != NULL;
        if (had)
                saved = *e;
        else {
                if (a->journal.n >= MTHP_KNOBS_MAX)
                        return -E2BIG;
                e = &a->journal.e[a->journal.n++];
                memset(e, 0, sizeof(*e));
                snprintf(e->path, sizeof(e->path), "%s", k->path);
                snprintf(e->id, sizeof(e->id), "%s", k->id);
                snprintf(e->original, sizeof(e->original), "%s", cur);
        }
        /* One durable save before the write, holding the original and the
         * value we intend. If we die before the write lands, the kernel still
         * holds the original, and restore sees "not what we wrote, but the
         * original": nothing to do. */
        snprintf(e->previous, sizeof(e->previous), "%s", cur);
        snprintf(e->written, sizeof(e->written), "%s", target);
        /* Back to the original needs no save first: if we die after the
         * write, restore finds the original and has nothing to do. Skipping
         * it takes two fsyncs off a step-down (the limited-cgroup guard's:
         * 90 ms for the first size under load on this VM's ext4). */
        r = had && strcmp(target, e->original) == 0 ? 0 : mthp_journal_save(a->journal_file, &a->journal);
        if (r < 0) {
                if (had)
                        *e = saved;
                else
                        mthp_journal_remove(&a->journal, k->path);
                /* strerror: mthp_errno_words explains errors of /sys, not of the state directory */
                snprintf(err, errsz, "%s: not written: cannot save the restore journal %s: %s", k->id,
                         a->journal_file, strerror(-r));
                return r;
        }

        bool mismatch = false;
        back[0] = 0;
        r = mthp_host_write(a->host, k->path, target);
        if (r == 0) {
                r = mthp_knob_read(a->host, k, back);
                if (r == 0 && strcmp(back, target) != 0) {
                        mismatch = true;
                        r = -EIO;
                }
        }
        if (r < 0) {
                if (mismatch)
                        snprintf(err, errsz, "%s (%s): wrote '%s' but the kernel reads back '%s'", k->id, k->path,
                                 target, back);
                else
                        snprintf(err, errsz, "%s (%s): writing '%s' failed: %s", k->id, k->path, target,
                                 mthp_errno_words(r));
                /* the kernel kept the old value: make the journal say so again */
                char now[MTHP_VALUE_MAX];
                if (mthp_knob_read(a->host, k, now) == 0)
                        snprintf(e->written, sizeof(e->written), "%s", now);
                else
                        snprintf(e->written, sizeof(e->written), "%s", cur);
                snprintf(e->previous, sizeof(e->previous), "%s", e->written);
                if (strcmp(e->written, e->original) == 0)
                        mthp_journal_remove(&a->journal, k->path);
                (void) mthp_journal_save(a->journal_file, &a->journal);
                return r;
        }
        if (strcmp(target, e->original) == 0) {
                /* back where the admin had it: forget it */
                mthp_journal_remove(&a->journal, k->path);
                if (a->batch)
                        a->batch_dirty = true;
                else
                        (void) mthp_journal_save(a->journal_file, &a->journal);
        }
        record(a, k, cur, target, reason);
        return 1;
}

static bool cannot_write(int r) {
        return r == -EROFS || r == -EACCES || r == -EPERM;
}

int mthp_actuator_check_writable(const struct mthp_actuator *a, char *why, size_t size) {
        const char *root = strcmp(a->host->root, "/") == 0 ? "" : a->host->root; /* for messages */
        struct statvfs vfs;
        struct stat st;
        int fd = mthp_host_open_file(a->host, MTHP_THP_DIR, O_RDONLY | O_DIRECTORY);
        if (fd >= 0) {
                int r = fstatvfs(fd, &vfs);
                close(fd);
                if (r == 0 && (vfs.f_flag & ST_RDONLY)) {
                        snprintf(why, size, "%s" MTHP_THP_DIR " is mounted read-only (EROFS)", root);
                        return -EROFS;
                }
        }
        if (a->caps->n_knobs == 0)
                return 0;
        int k = mthp_caps_find_knob(a->caps, "global/defrag");
        const struct mthp_knob *knob = &a->caps->knobs[k >= 0 ? k : 0];
        /* a knob without write bits has no store method: kernfs refuses
         * O_WRONLY with EACCES even to root (who may open a fake tree's
         * plain file) */
        int r = fd = mthp_host_open_file(a->host, knob->path, O_RDONLY);
        if (fd >= 0) {
                r = fstat(fd, &st) < 0 ? -errno : !(st.st_mode & 0222) ? -EACCES : 0;
                close(fd);
        }
        /* Observing opens nothing for writing (the unit's sandbox and
         * sandbox-realhost hold it to that): the mount and the mode bits
         * are what it can tell. */
        if (r == 0 && !a->dry_run && (r = fd = mthp_host_open_file(a->host, knob->path, O_WRONLY)) >= 0) {
                close(fd);
                char cur[MTHP_VALUE_MAX];
                r = mthp_knob_read(a->host, knob, cur) < 0 ? 0 : mthp_host_write(a->host, knob->path, cur);
        }
        if (!cannot_write(r))
                return 0;
        /* root is refused too: "run as root" would not help */
        snprintf(why, size, "%s%s: %s", root, knob->path,
                 r == -EACCES && geteuid() == 0 ? "permission denied (EACCES), also to root"
                                                : mthp_errno_words(r));
        return r;
}

int mthp_actuator_check_foreign(struct mthp_actuator *a, const char current[][MTHP_VALUE_MAX]) {
        int found = 0;
        bool dirty = false, fresh[MTHP_KNOBS_MAX] = { false };

        for (unsigned i = 0; i < a->caps->n_knobs; i++) {
                const struct mthp_knob *k = &a->caps->knobs[i];
                struct mthp_journal_entry *e = mthp_journal_find(&a->journal, k->path);
                if (!e || e->state == MTHP_ENTRY_FOREIGN || !current[i][0])
                        continue;
                if (strcmp(current[i], e->written) == 0)
                        continue;
                e->state = MTHP_ENTRY_FOREIGN;
                snprintf(e->foreign_value, sizeof(e->foreign_value), "%s", current[i]);
                dirty = true;
                fresh[i] = true;
                found++;
        }
        /* durable first, then said: once the log (or D-Bus) reports another
         * writer, a kill -9 must not leave a journal that would restore
         * over it (tests/faults journal-bad caught the order) */
        if (dirty && !a->dry_run)
                (void) mthp_journal_save(a->journal_file, &a->journal);
        for (unsigned i = 0; dirty && i < a->caps->n_knobs; i++) {
                const struct mthp_knob *k = &a->caps->knobs[i];
                struct mthp_journal_entry *e = mthp_journal_find(&a->journal, k->path);
                if (!fresh[i] || !e)
                        continue;
                mthp_log_foreign(k, e->written, e->foreign_value);
                if (a->on_foreign)
                        a->on_foreign(a->user, k, e->written, e->foreign_value);
        }
        return found;
}

int mthp_actuator_restore(struct mthp_actuator *a) {
        if (a->dry_run)
                return 0;
        unsigned n = 0;
        int r = mthp_journal_restore(a->host, a->journal_file, &n);
        /* whatever is left on disk is what could not be restored */
        char err[256];
        if (mthp_journal_load(a->journal_file, &a->journal, err, sizeof(err)) < 0) {
                memset(&a->journal, 0, sizeof(a->journal));
                snprintf(a->journal.root, sizeof(a->journal.root), "%s", a->host->root);
        }
        return r;
}

const char *mthp_knob_owner(const struct mthp_journal *j, const struct mthp_knob *k, const char *current) {
        const struct mthp_journal_entry *e = mthp_journal_find((struct mthp_journal *) j, k->path);
        if (!e)
                return "original";
        if (e->state == MTHP_ENTRY_FOREIGN || strcmp(current, e->written) != 0)
                return strcmp(current, e->original) == 0 ? "original" : "other";
        return "mthpd";
}
