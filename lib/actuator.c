/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "mthp/actuator.h"
#include "mthp/probe.h"
#include "mthp/log.h"
#include "mthp/safe-io.h"
#include "mthp/util.h"

struct mthp_actuator {
        const struct mthp_host *host;
        const struct mthp_caps *caps;
        char journal_file[MTHP_PATH_MAX];
        struct mthp_journal journal;
        bool observing;
        /* dry run: the value each knob would have now ("" = untouched) */
        char simulated[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        mthp_change_cb on_change;
        mthp_foreign_cb on_foreign;
        void *user;
        unsigned n_history, history_head;
        struct mthp_change history[MTHP_HISTORY_MAX];
        bool history_observed[MTHP_HISTORY_MAX];   /* observing: a change it would have made */
        /* mthp_actuator_batch(): writes back to the original value leave the
         * journal file to one save at the end */
        bool batch, batch_dirty;
};

static int actuator_init(struct mthp_actuator *a, const struct mthp_host *h, const struct mthp_caps *caps,
                         const char *state_dir, bool observing) {
        memset(a, 0, sizeof(*a));
        a->host = h;
        a->caps = caps;
        a->observing = observing;
        /* never a cut path: a cut one saved "restore.jo", which restore never found */
        if (mthp_path_join(a->journal_file, sizeof(a->journal_file), state_dir, MTHP_JOURNAL_FILE) < 0)
                return -ENAMETOOLONG;
        snprintf(a->journal.root, sizeof(a->journal.root), "%s", h->root);
        if (observing)
                return 0;
        if (mkdir(state_dir, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

int mthp_actuator_new(const struct mthp_host *h, const struct mthp_caps *caps, const char *state_dir, bool observing,
                      struct mthp_actuator **ret) {
        struct mthp_actuator *a = malloc(sizeof(*a));
        if (!a)
                return -ENOMEM;
        int r = actuator_init(a, h, caps, state_dir, observing);
        if (r < 0) {
                free(a);
                return r;
        }
        *ret = a;
        return 0;
}

void mthp_actuator_free(struct mthp_actuator *a) {
        free(a);
}

void mthp_actuator_set_hooks(struct mthp_actuator *a, mthp_change_cb on_change, mthp_foreign_cb on_foreign,
                             void *user) {
        a->on_change = on_change;
        a->on_foreign = on_foreign;
        a->user = user;
}

bool mthp_actuator_observing(const struct mthp_actuator *a) {
        return a->observing;
}

void mthp_actuator_set_observing(struct mthp_actuator *a, bool observing) {
        a->observing = observing;
}

void mthp_actuator_forget_simulated(struct mthp_actuator *a) {
        memset(a->simulated, 0, sizeof(a->simulated));
}

const char *mthp_actuator_journal_file(const struct mthp_actuator *a) {
        return a->journal_file;
}

const struct mthp_journal *mthp_actuator_journal(const struct mthp_actuator *a) {
        return &a->journal;
}

unsigned mthp_actuator_n_history(const struct mthp_actuator *a) {
        return a->n_history;
}

const struct mthp_change *mthp_actuator_history(const struct mthp_actuator *a, unsigned i, bool *observing) {
        unsigned oldest = (a->history_head + MTHP_HISTORY_MAX - a->n_history) % MTHP_HISTORY_MAX;
        if (observing)
                *observing = a->history_observed[(oldest + i) % MTHP_HISTORY_MAX];
        return &a->history[(oldest + i) % MTHP_HISTORY_MAX];
}

static void record(struct mthp_actuator *a, const struct mthp_knob *k, const char *old, const char *new,
                   const char *reason) {
        struct mthp_change *c = &a->history[a->history_head];
        memset(c, 0, sizeof(*c));
        c->realtime_usec = mthp_now_usec(CLOCK_REALTIME);
        snprintf(c->id, sizeof(c->id), "%s", k->id);
        snprintf(c->old, sizeof(c->old), "%s", old);
        snprintf(c->new, sizeof(c->new), "%s", new);
        snprintf(c->reason, sizeof(c->reason), "%s", reason);
        a->history_observed[a->history_head] = a->observing;
        a->history_head = (a->history_head + 1) % MTHP_HISTORY_MAX;
        if (a->n_history < MTHP_HISTORY_MAX)
                a->n_history++;
        mthp_log_change(c, a->observing);
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
        if (!a->observing) {
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
static int observe_write(struct mthp_actuator *a, int knob, const char *value, const char *reason, char *err,
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

/* Which step of knob_put failed: the write itself, reading the knob back,
 * or the comparison. Three different things to tell the administrator; a
 * write failing with EIO must not read as a mismatch (the return value
 * alone cannot say which, as the mismatch returns -EIO too). */
enum put_step { PUT_WRITE, PUT_READ_BACK, PUT_MISMATCH };

/* The one place a knob is written: one write(2), then read the knob back
 * and compare. 0; the write's or the read's -errno; or -EIO when the kernel
 * reads back something else (back then holds it). *step says which. */
static int knob_put(const struct mthp_host *h, const struct mthp_knob *k, const char *value,
                    char back[MTHP_VALUE_MAX], enum put_step *step) {
        back[0] = 0;
        *step = PUT_WRITE;
        int r = mthp_host_write(h, k->path, value);
        if (r < 0)
                return r;
        *step = PUT_READ_BACK;
        r = mthp_knob_read(h, k, back);
        if (r < 0) {
                back[0] = 0;
                return r;
        }
        *step = PUT_MISMATCH;
        return strcmp(back, value) != 0 ? -EIO : 0;
}

static int check_allowed(const struct mthp_knob *k, const char *target, char *err, size_t errsz) {
        if (mthp_knob_allows(k, target))
                return 0;
        char list[MTHP_VALUES_MAX * MTHP_VALUE_MAX] = "";
        for (unsigned i = 0; i < k->n_allowed; i++) {
                strcat(list, i ? ", " : "");
                strcat(list, k->allowed[i]);
        }
        snprintf(err, errsz, "%s (%s): '%s' is not one of the values this kernel accepts (%s)", k->id, k->path,
                 target, list);
        return -EINVAL;
}

/* Journal the original before the first write, durably: one save before
 * the write, holding the original and the value we intend. If we die before
 * the write lands, the kernel still holds the original, and restore sees
 * "not what we wrote, but the original": nothing to do. On failure the
 * journal in memory is as before. *ep: the knob's entry (made if NULL). */
static int journal_intent(struct mthp_actuator *a, const struct mthp_knob *k, struct mthp_journal_entry **ep,
                          const char *cur, const char *target, char *err, size_t errsz) {
        struct mthp_journal_entry *e = *ep, saved = { 0 };
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
        snprintf(e->previous, sizeof(e->previous), "%s", cur);
        snprintf(e->written, sizeof(e->written), "%s", target);
        /* Back to the original needs no save first: if we die after the
         * write, restore finds the original and has nothing to do. Skipping
         * it takes two fsyncs off a step-down (the limited-cgroup guard's:
         * 90 ms for the first size under load on this VM's ext4). */
        int r = had && strcmp(target, e->original) == 0 ? 0 : mthp_journal_save(a->journal_file, &a->journal);
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
        *ep = e;
        return 0;
}

/* A write failed and the kernel kept the old value: make the journal say
 * so again (cur: the value before the write, if the knob cannot be read). */
static void journal_resync(struct mthp_actuator *a, const struct mthp_knob *k, struct mthp_journal_entry *e,
                           const char *cur) {
        char now[MTHP_VALUE_MAX];
        if (mthp_knob_read(a->host, k, now) == 0)
                snprintf(e->written, sizeof(e->written), "%s", now);
        else
                snprintf(e->written, sizeof(e->written), "%s", cur);
        snprintf(e->previous, sizeof(e->previous), "%s", e->written);
        if (strcmp(e->written, e->original) == 0)
                mthp_journal_remove(&a->journal, k->path);
        (void) mthp_journal_save(a->journal_file, &a->journal);
}

int mthp_actuator_batch(struct mthp_actuator *a, bool on) {
        a->batch = on;
        if (on || !a->batch_dirty || a->observing)
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
        if (a->observing)
                return observe_write(a, knob, value, reason, err, errsz);
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
        r = check_allowed(k, target, err, errsz);
        if (r < 0)
                return r;
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

        r = journal_intent(a, k, &e, cur, target, err, errsz);
        if (r < 0)
                return r;

        enum put_step step;
        r = knob_put(a->host, k, target, back, &step);
        if (r < 0) {
                if (step == PUT_MISMATCH)
                        snprintf(err, errsz, "%s (%s): wrote '%s' but the kernel reads back '%s'", k->id, k->path,
                                 target, back);
                else if (step == PUT_READ_BACK)
                        snprintf(err, errsz, "%s (%s): wrote '%s' but cannot read it back: %s", k->id, k->path,
                                 target, mthp_errno_words(r));
                else
                        snprintf(err, errsz, "%s (%s): writing '%s' failed: %s", k->id, k->path, target,
                                 mthp_errno_words(r));
                journal_resync(a, k, e, cur);
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
        if (r == 0 && !a->observing && (r = fd = mthp_host_open_file(a->host, knob->path, O_WRONLY)) >= 0) {
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
        if (dirty && !a->observing)
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

static bool is_global(const char *path) {
        return !strstr(path, "/hugepages-");
}

/* Restore one journal entry on this pass; last_try: failures count (and
 * are logged). 1 restored, 0 left for another pass or not ours any more
 * (e->path cleared), -1 failed on the last try. */
static int restore_entry(const struct mthp_host *h, const char *file, struct mthp_journal_entry *e,
                         bool last_try) {
        struct mthp_knob k = { 0 };
        snprintf(k.path, sizeof(k.path), "%s", e->path);
        snprintf(k.id, sizeof(k.id), "%s", e->id);
        char cur[MTHP_VALUE_MAX], text[256];
        int r = mthp_host_read(h, e->path, text, sizeof(text));
        if (r >= 0)
                r = mthp_knob_parse(text, cur, k.allowed, &k.n_allowed);
        if (r == -EBADMSG && mthp_number_parse(text, cur) == 0) {
                k.type = MTHP_KNOB_NUMBER; /* khugepaged/max_ptes_none, shrink_underused */
                r = 0;
        }
        if (r == -ENOENT && last_try) {
                /* the knob may come back (a size's directory, a remount):
                 * the entry stays, and the administrator gets the next step */
                mthp_log_knob(LOG_ERR, e->id, "restore %s: %s does not exist on this kernel (ENOENT); the journal "
                              "%s keeps its original '%s': once the knob is back, 'mthpctl restore' puts it back; "
                              "if this kernel will not have it, there is nothing to put back: delete the "
                              "[knob %s] section from the journal (the file, if it names no other knob)", e->id,
                              e->path, file, e->original, e->id);
                return -1;
        }
        if (r < 0) {
                if (last_try) {
                        mthp_log_knob(LOG_ERR, e->id, "restore %s: cannot read %s: %s", e->id,
                                      e->path, mthp_errno_words(r));
                        return -1;
                }
                return 0;
        }
        bool ours = strcmp(cur, e->written) == 0 || (e->previous[0] && strcmp(cur, e->previous) == 0);
        if (e->state == MTHP_ENTRY_FOREIGN || !ours) {
                if (strcmp(cur, e->original) != 0)
                        mthp_log(LOG_NOTICE,
                                 "restore %s: left at '%s': someone else changed it after mthpd "
                                 "wrote '%s' (original was '%s')",
                                 e->id, cur, e->written, e->original);
                e->path[0] = 0; /* not ours any more */
                return 0;
        }
        if (!mthp_knob_allows(&k, e->original)) {
                /* a damaged journal: never write what the kernel does not offer */
                if (last_try) {
                        mthp_log_knob(LOG_ERR, e->id,
                                      "restore %s: the journal %s holds original '%s', which %s "
                                      "does not offer ('%s'); not writing it", e->id, file,
                                      e->original, e->path, text[0] ? strtok(text, "\n") : "");
                        return -1;
                }
                return 0;
        }
        char back[MTHP_VALUE_MAX];
        enum put_step step;
        r = knob_put(h, &k, e->original, back, &step);
        if (r < 0) {
                if (last_try) {
                        if (step == PUT_MISMATCH)
                                mthp_log_knob(LOG_ERR, e->id, "restore %s: wrote '%s' to %s but the kernel reads "
                                              "back '%s'", e->id, e->original, e->path, back);
                        else if (step == PUT_READ_BACK)
                                mthp_log_knob(LOG_ERR, e->id, "restore %s: wrote '%s' to %s but cannot read it "
                                              "back: %s", e->id, e->original, e->path, mthp_errno_words(r));
                        else
                                mthp_log_knob(LOG_ERR, e->id, "restore %s: writing '%s' to %s failed: %s", e->id,
                                              e->original, e->path, mthp_errno_words(r));
                        return -1;
                }
                return 0;
        }
        /* a knob write like any other: the change's MESSAGE_ID and MTHP_*
         * fields, which mthpctl history reads from the journal */
        struct mthp_change c = { .realtime_usec = mthp_now_usec(CLOCK_REALTIME) };
        mthp_strcpy(c.id, sizeof(c.id), e->id);
        mthp_strcpy(c.old, sizeof(c.old), cur);
        mthp_strcpy(c.new, sizeof(c.new), e->original);
        snprintf(c.reason, sizeof(c.reason), "from the restore journal %s", file);
        mthp_log_restored(&c);
        e->path[0] = 0;
        return 1;
}

int mthp_actuator_restore_file(const struct mthp_host *h, const char *file, unsigned *n_restored) {
        struct mthp_journal j;
        char err[1024];
        unsigned failed = 0, restored = 0;

        if (n_restored)
                *n_restored = 0;
        int r = mthp_journal_load(file, &j, err, sizeof(err));
        if (r == -ENOENT) {
                if (n_restored)
                        *n_restored = 0;
                return 0;
        }
        if (r < 0) {
                mthp_log(LOG_ERR, "%s", err[0] ? err : "cannot read the restore journal");
                return r;
        }
        /* A journal belongs to the host root it was written for: never apply
         * a fake tree's journal to the real host, or the other way round. */
        struct stat want, have;
        if (stat(j.root[0] ? j.root : "/", &want) < 0 || fstat(h->root_fd, &have) < 0 ||
            want.st_dev != have.st_dev || want.st_ino != have.st_ino) {
                mthp_log(LOG_ERR, "restore journal %s was written for host root %s, not %s: not applying it "
                         "(the journal is kept)", file, j.root[0] ? j.root : "/", h->root);
                return -EXDEV;
        }
        /* only knobs mthpd manages: a journal that names another file of
         * the THP tree (khugepaged/pages_to_scan, use_zero_page...) is not
         * mthpd's to write; such an entry is said and dropped */
        for (unsigned i = 0; i < j.n; i++) {
                char why[2 * MTHP_PATH_MAX];
                if (mthp_journal_entry_check(&j.e[i], why, sizeof(why)) == 0)
                        continue;
                mthp_log(LOG_WARNING, "restore journal %s: entry [knob %s]: %s: skipped, nothing written to it "
                         "(the entry, original '%s', leaves the journal)", file, j.e[i].id, why, j.e[i].original);
                j.e[i].path[0] = 0;
        }
        /* Per-size knobs, then global ones, then per-size again: a per-size
         * shmem 'inherit' is refused while global shmem is 'force', and
         * global 'force' is refused while a non-PMD size inherits, so either
         * order can be the one that works. Failures count on the last try. */
        for (int pass = 0; pass < 3; pass++)
                for (unsigned i = 0; i < j.n; i++) {
                        struct mthp_journal_entry *e = &j.e[i];
                        if (is_global(e->path) != (pass == 1) || !e->path[0])
                                continue;
                        int k = restore_entry(h, file, e, pass >= 1);
                        if (k > 0)
                                restored++;
                        else if (k < 0)
                                failed++;
                }
        /* keep only what could not be restored, so a retry still knows it */
        struct mthp_journal left = { .n = 0 };
        memcpy(left.root, j.root, sizeof(left.root));
        for (unsigned i = 0; i < j.n; i++)
                if (j.e[i].path[0])
                        left.e[left.n++] = j.e[i];
        if (n_restored)
                *n_restored = restored;
        r = mthp_journal_save(file, &left);
        if (r < 0) {
                /* strerror: an error of the state directory, not of /sys */
                mthp_log(LOG_ERR, "restored %u knob(s), but cannot update the restore journal %s: %s", restored,
                         file, strerror(-r));
                return r;
        }
        return (int) failed;
}

int mthp_actuator_restore(struct mthp_actuator *a) {
        if (a->observing)
                return 0;
        unsigned n = 0;
        int r = mthp_actuator_restore_file(a->host, a->journal_file, &n);
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
