/* SPDX-License-Identifier: MIT */
/* mthp_knob_write and friends against a fake host with kernel semantics. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mthp/actuator.h"
#include "mthp/journal.h"
#include "mthp/log.h"
#include "unit.h"

struct afix {
        struct fixture *f;
        struct mthp_actuator *a;
        unsigned n_changes, n_foreign;
        struct mthp_change last_change;
        char foreign_id[32], foreign_ours[MTHP_VALUE_MAX], foreign_theirs[MTHP_VALUE_MAX];
        char err[512];
};

static void on_change(void *user, const struct mthp_change *c) {
        struct afix *x = user;
        x->n_changes++;
        x->last_change = *c;
}

static void on_foreign(void *user, const struct mthp_knob *k, const char *ours, const char *theirs) {
        struct afix *x = user;
        x->n_foreign++;
        snprintf(x->foreign_id, sizeof(x->foreign_id), "%s", k->id);
        snprintf(x->foreign_ours, sizeof(x->foreign_ours), "%s", ours);
        snprintf(x->foreign_theirs, sizeof(x->foreign_theirs), "%s", theirs);
}

static int afix_setup_mode(void **state, bool observing) {
        void *fs;
        fixture_setup(&fs);
        struct afix *x = calloc(1, sizeof(*x));
        assert_non_null(x);
        x->f = fs;
        char run[PATH_MAX];
        if (snprintf(run, sizeof(run), "%s/run", x->f->dir) >= (int) sizeof(run))
                fail_msg("path too long");
        assert_int_equal(mkdir(run, 0755), 0);
        assert_ok(mthp_actuator_new(x->f->host, &x->f->caps, x->f->state_dir, observing, &x->a));
        mthp_actuator_set_hooks(x->a, on_change, on_foreign, x);
        *state = x;
        return 0;
}

static int afix_setup(void **state) {
        return afix_setup_mode(state, false);
}

static int afix_setup_dry(void **state) {
        return afix_setup_mode(state, true);
}

static int afix_teardown(void **state) {
        struct afix *x = *state;
        void *fs = x->f;
        mthp_actuator_free(x->a);
        free(x);
        return fixture_teardown(&fs);
}

static int knob_write(struct afix *x, const char *id, const char *value) {
        return mthp_knob_write(x->a, fixture_knob(x->f, id), value, "test reason", x->err, sizeof(x->err));
}

static bool journal_exists(const struct afix *x) {
        return access(x->f->journal, F_OK) == 0;
}

static void load_journal(const struct afix *x, struct mthp_journal *j) {
        char err[512];
        int r = mthp_journal_load(x->f->journal, j, err, sizeof(err));
        if (r < 0)
                fail_msg("journal %s: %s %s", x->f->journal, strerror(-r), err);
}

static void test_write(void **state) {
        struct afix *x = *state;
        struct mthp_journal j;
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_string_equal(x->err, "");
        assert_string_equal(fixture_file(x->f->dir, THP "/hugepages-64kB/enabled"), "[always] inherit madvise never\n");
        /* journaled: the original, and what mthpd wrote */
        load_journal(x, &j);
        assert_int_equal(j.n, 1);
        assert_string_equal(j.root, x->f->dir);
        assert_string_equal(j.e[0].id, "64K/anon");
        assert_string_equal(j.e[0].path, THP "/hugepages-64kB/enabled");
        assert_string_equal(j.e[0].original, "never");
        assert_string_equal(j.e[0].written, "always");
        assert_string_equal(j.e[0].previous, "never");
        assert_int_equal(j.e[0].state, MTHP_ENTRY_MANAGED);
        assert_int_equal(mthp_actuator_journal(x->a)->n, 1);
        /* recorded with its reason */
        assert_int_equal(mthp_actuator_n_history(x->a), 1);
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->id, "64K/anon");
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->old, "never");
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->new, "always");
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->reason, "test reason");
        assert_true(mthp_actuator_history(x->a, 0, NULL)->realtime_usec > 0);
        bool dry = true;
        (void) mthp_actuator_history(x->a, 0, &dry);
        assert_false(dry);   /* written, not observed */
        assert_int_equal(x->n_changes, 1);
        assert_string_equal(x->last_change.new, "always");

        /* a second change keeps the original and notes the previous value */
        assert_int_equal(knob_write(x, "64K/anon", "madvise"), 1);
        load_journal(x, &j);
        assert_int_equal(j.n, 1);
        assert_string_equal(j.e[0].original, "never");
        assert_string_equal(j.e[0].written, "madvise");
        assert_string_equal(j.e[0].previous, "always");
        assert_string_equal(mthp_actuator_history(x->a, 1, NULL)->old, "always");
        assert_int_equal(x->n_changes, 2);
}

struct hook_seen {
        const char *journal;
        unsigned calls;
        char original[MTHP_VALUE_MAX], written[MTHP_VALUE_MAX];
        bool had_journal;
};

static int check_journal_hook(void *user, const char *host_path, const char *value) {
        struct hook_seen *h = user;
        struct mthp_journal j;
        char err[256];
        (void) host_path;
        (void) value;
        h->calls++;
        h->had_journal = mthp_journal_load(h->journal, &j, err, sizeof(err)) == 0 && j.n == 1;
        if (h->had_journal) {
                snprintf(h->original, sizeof(h->original), "%s", j.e[0].original);
                snprintf(h->written, sizeof(h->written), "%s", j.e[0].written);
        }
        return 0;
}

static void test_journal_before_write(void **state) {
        struct afix *x = *state;
        struct hook_seen h = { .journal = x->f->journal };
        fakehost_set_write_hook(check_journal_hook, &h);
        assert_int_equal(knob_write(x, "32K/shmem", "advise"), 1);
        /* when the kernel saw the write, the original was already on disk */
        assert_int_equal(h.calls, 1);
        assert_true(h.had_journal);
        assert_string_equal(h.original, "never");
        assert_string_equal(h.written, "advise");
}

static int ignore_write_hook(void *user, const char *host_path, const char *value) {
        (void) user;
        (void) host_path;
        (void) value;
        return 1;
}

static void test_read_back_mismatch(void **state) {
        struct afix *x = *state;
        fakehost_set_write_hook(ignore_write_hook, NULL);
        assert_int_equal(knob_write(x, "64K/anon", "always"), -EIO);
        assert_string_equal(x->err,
                            "64K/anon (" THP "/hugepages-64kB/enabled): wrote 'always' but the kernel reads back 'never'");
        /* the kernel kept the original: nothing to restore, nothing recorded */
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        assert_int_equal(mthp_actuator_n_history(x->a), 0);
        assert_int_equal(x->n_changes, 0);
}

/* The write lands, then the knob goes away (its size's directory moved
 * aside in the fake tree, so the fake cannot put the file back either): the
 * read-back fails. That is neither a failed write nor a mismatch. */
static int remove_after_write_hook(void *user, const char *host_path, const char *value) {
        const char *dir = user; /* host_path is the host's: move the fake tree's directory */
        char from[PATH_MAX], to[PATH_MAX + 8];
        (void) value;
        snprintf(from, sizeof(from), "%s%s", dir, host_path);
        char *slash = strrchr(from, '/');
        *slash = 0;
        snprintf(to, sizeof(to), "%s.gone", from);
        return rename(from, to) < 0 ? -errno : 1; /* 1: reported as written */
}

static void test_read_back_fails(void **state) {
        struct afix *x = *state;
        fakehost_set_write_hook(remove_after_write_hook, x->f->dir);
        int r = knob_write(x, "64K/anon", "always");
        fakehost_set_write_hook(NULL, NULL);
        assert_true(r < 0 && r != -EIO);
        assert_contains(x->err, "64K/anon (" THP "/hugepages-64kB/enabled): wrote 'always' but cannot read it back: ");
}

static void test_value_not_offered(void **state) {
        struct afix *x = *state;
        assert_int_equal(knob_write(x, "64K/anon", "sometimes"), -EINVAL);
        assert_string_equal(x->err, "64K/anon (" THP "/hugepages-64kB/enabled): 'sometimes' is not one of the values "
                                    "this kernel accepts (always, inherit, madvise, never)");
        assert_int_equal(knob_write(x, "global/enabled", "inherit"), -EINVAL);
        assert_contains(x->err, "global/enabled (");
        assert_contains(x->err, "'inherit' is not one of the values this kernel accepts (always, madvise, never)");
        assert_int_equal(knob_write(x, "8K/shmem", "madvise"), -EINVAL);
        assert_contains(x->err, "(always, inherit, within_size, advise, never)");
        /* nothing written, nothing journaled */
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "never");
        assert_int_equal(mthp_actuator_n_history(x->a), 0);
}

static void test_kernel_rejects(void **state) {
        struct afix *x = *state;
        /* offered, but not while global shmem is "force" */
        assert_ok(fakehost_knob_set(x->f->dir, "global/shmem_enabled", "force"));
        assert_int_equal(knob_write(x, "64K/shmem", "inherit"), -EINVAL);
        assert_string_equal(x->err, "64K/shmem (" THP "/hugepages-64kB/shmem_enabled): writing 'inherit' failed: "
                                    "the kernel rejected the value (EINVAL)");
        assert_string_equal(fixture_knob_value(x->f, "64K/shmem"), "never");
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        /* the PMD size may inherit */
        assert_int_equal(knob_write(x, "2M/shmem", "never"), 1);
        assert_int_equal(knob_write(x, "2M/shmem", "inherit"), 1);
        assert_false(journal_exists(x));
}

static void test_injected_errors(void **state) {
        struct afix *x = *state;
        struct mthp_journal j;
        assert_ok(fakehost_knob_fail(x->f->dir, "16K/anon", "EACCES"));
        assert_int_equal(knob_write(x, "16K/anon", "always"), -EACCES);
        assert_contains(x->err, "16K/anon (" THP "/hugepages-16kB/enabled): writing 'always' failed: "
                                "permission denied (EACCES)");
        assert_contains(x->err, geteuid() == 0 ? "also to root" : ": run as root");
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        assert_string_equal(fixture_knob_value(x->f, "16K/anon"), "never");

        /* a knob mthpd already manages: the journal keeps the truth */
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_ok(fakehost_knob_fail(x->f->dir, "64K/anon", "EBUSY"));
        assert_int_equal(knob_write(x, "64K/anon", "madvise"), -EBUSY);
        assert_contains(x->err, "64K/anon (");
        assert_contains(x->err, "writing 'madvise' failed: busy (EBUSY)");
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "always");
        load_journal(x, &j);
        assert_int_equal(j.n, 1);
        assert_string_equal(j.e[0].original, "never");
        assert_string_equal(j.e[0].written, "always");
        assert_string_equal(j.e[0].previous, "always");
        assert_int_equal(mthp_actuator_n_history(x->a), 1);

        assert_ok(fakehost_knob_fail(x->f->dir, "64K/anon", NULL));
        assert_int_equal(knob_write(x, "64K/anon", ""), 1);
        assert_false(journal_exists(x));
}

static void test_restore_with_empty_value(void **state) {
        struct afix *x = *state;
        /* never touched: nothing to do */
        assert_int_equal(knob_write(x, "64K/anon", ""), 0);
        assert_false(journal_exists(x));
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_int_equal(knob_write(x, "128K/anon", "always"), 1);
        assert_int_equal(knob_write(x, "64K/anon", ""), 1);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "never");
        assert_int_equal(mthp_actuator_journal(x->a)->n, 1);
        assert_string_equal(mthp_actuator_journal(x->a)->e[0].id, "128K/anon");
        assert_int_equal(mthp_actuator_n_history(x->a), 3);
        assert_string_equal(mthp_actuator_history(x->a, 2, NULL)->old, "always");
        assert_string_equal(mthp_actuator_history(x->a, 2, NULL)->new, "never");
        /* the last one back: the journal goes away */
        assert_int_equal(knob_write(x, "128K/anon", ""), 1);
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        assert_false(journal_exists(x));
        /* writing the original value by name forgets the knob too */
        assert_int_equal(knob_write(x, "2M/anon", "always"), 1);
        assert_int_equal(knob_write(x, "2M/anon", "inherit"), 1);
        assert_false(journal_exists(x));
}

static void test_same_value_is_noop(void **state) {
        struct afix *x = *state;
        assert_int_equal(knob_write(x, "64K/anon", "never"), 0);
        assert_int_equal(knob_write(x, "global/defrag", "madvise"), 0);
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_n_history(x->a), 0);
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_int_equal(knob_write(x, "64K/anon", "always"), 0);
        assert_int_equal(mthp_actuator_n_history(x->a), 1);
}

static void read_all(const struct afix *x, char cur[][MTHP_VALUE_MAX]) {
        for (unsigned i = 0; i < x->f->caps.n_knobs; i++)
                assert_ok(mthp_knob_read(x->f->host, &x->f->caps.knobs[i], cur[i]));
}

static void test_foreign(void **state) {
        struct afix *x = *state;
        char cur[MTHP_KNOBS_MAX][MTHP_VALUE_MAX];
        struct mthp_journal j;
        int k64 = fixture_knob(x->f, "64K/anon");
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_int_equal(knob_write(x, "32K/anon", "always"), 1);
        read_all(x, cur);
        assert_int_equal(mthp_actuator_check_foreign(x->a, (const char (*)[MTHP_VALUE_MAX]) cur), 0);
        assert_string_equal(mthp_knob_owner(mthp_actuator_journal(x->a), &x->f->caps.knobs[k64], cur[k64]), "mthpd");

        /* the admin sets 64K by hand */
        assert_ok(fakehost_knob_write(x->f->dir, "64K/anon", "madvise"));
        read_all(x, cur);
        assert_int_equal(mthp_actuator_check_foreign(x->a, (const char (*)[MTHP_VALUE_MAX]) cur), 1);
        assert_true(mthp_actuator_is_foreign(x->a, k64));
        assert_false(mthp_actuator_is_foreign(x->a, fixture_knob(x->f, "32K/anon")));
        assert_false(mthp_actuator_is_foreign(x->a, fixture_knob(x->f, "16K/anon")));
        assert_int_equal(x->n_foreign, 1);
        assert_string_equal(x->foreign_id, "64K/anon");
        assert_string_equal(x->foreign_ours, "always");
        assert_string_equal(x->foreign_theirs, "madvise");
        assert_string_equal(mthp_knob_owner(mthp_actuator_journal(x->a), &x->f->caps.knobs[k64], cur[k64]), "other");
        /* recorded durably */
        load_journal(x, &j);
        struct mthp_journal_entry *e = mthp_journal_find(&j, THP "/hugepages-64kB/enabled");
        assert_non_null(e);
        assert_int_equal(e->state, MTHP_ENTRY_FOREIGN);
        assert_string_equal(e->foreign_value, "madvise");
        assert_string_equal(e->original, "never");
        /* reported once */
        assert_int_equal(mthp_actuator_check_foreign(x->a, (const char (*)[MTHP_VALUE_MAX]) cur), 0);
        assert_int_equal(x->n_foreign, 1);
        /* and left alone from now on */
        assert_int_equal(knob_write(x, "64K/anon", "never"), 0);
        assert_int_equal(knob_write(x, "64K/anon", ""), 0);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "madvise");
        /* a clean stop restores what is ours only */
        assert_int_equal(mthp_actuator_restore(x->a), 0);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "madvise");
        assert_string_equal(fixture_knob_value(x->f, "32K/anon"), "never");
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
}

static void test_changed_behind_our_back(void **state) {
        struct afix *x = *state;
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_ok(fakehost_knob_write(x->f->dir, "64K/anon", "madvise"));
        assert_int_equal(knob_write(x, "64K/anon", "never"), -EBUSY);
        assert_string_equal(x->err, "64K/anon: someone else set 'madvise' over mthpd's 'always'");
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "madvise");
}

static void test_unreadable_knob(void **state) {
        struct afix *x = *state;
        assert_ok(fakehost_remove_file(x->f->dir, THP "/hugepages-64kB/enabled"));
        assert_int_equal(knob_write(x, "64K/anon", "always"), -ENOENT);
        assert_string_equal(x->err, "64K/anon (" THP "/hugepages-64kB/enabled): cannot read current value: "
                                    "no such file (ENOENT): this kernel does not have it");
        assert_false(journal_exists(x));
}

static void test_dry_run(void **state) {
        struct afix *x = *state;
        struct stat st;
        assert_true(mthp_actuator_observing(x->a));
        assert_int_equal(stat(x->f->state_dir, &st), -1);   /* not even created */
        assert_int_equal(knob_write(x, "64K/anon", "always"), 0);
        assert_int_equal(knob_write(x, "global/defrag", "never"), 0);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "never");
        assert_string_equal(fixture_knob_value(x->f, "global/defrag"), "madvise");
        assert_int_equal(stat(x->f->state_dir, &st), -1);
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        /* but what it would have done is recorded */
        assert_int_equal(mthp_actuator_n_history(x->a), 2);
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->old, "never");
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->new, "always");
        /* ...marked as observed: not written */
        bool dry = false;
        (void) mthp_actuator_history(x->a, 1, &dry);
        assert_true(dry);
        assert_int_equal(x->n_changes, 2);
        /* a bad value is still an error */
        assert_int_equal(knob_write(x, "64K/anon", "bogus"), -EINVAL);
        assert_int_equal(mthp_actuator_restore(x->a), 0);
}

static void test_actuator_restore(void **state) {
        struct afix *x = *state;
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_int_equal(knob_write(x, "16K/shmem", "advise"), 1);
        assert_int_equal(knob_write(x, "global/defrag", "never"), 1);
        assert_true(journal_exists(x));
        assert_int_equal(mthp_actuator_restore(x->a), 0);
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "never");
        assert_string_equal(fixture_knob_value(x->f, "16K/shmem"), "never");
        assert_string_equal(fixture_knob_value(x->f, "global/defrag"), "madvise");
        assert_false(journal_exists(x));
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        assert_string_equal(mthp_actuator_journal(x->a)->root, x->f->dir);
        /* and it can manage again afterwards */
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_true(journal_exists(x));
}

static void test_owner(void **state) {
        struct afix *x = *state;
        const struct mthp_knob *k = &x->f->caps.knobs[fixture_knob(x->f, "64K/anon")];
        assert_string_equal(mthp_knob_owner(mthp_actuator_journal(x->a), k, "never"), "original");
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_string_equal(mthp_knob_owner(mthp_actuator_journal(x->a), k, "always"), "mthpd");
        assert_string_equal(mthp_knob_owner(mthp_actuator_journal(x->a), k, "madvise"), "other");
        assert_string_equal(mthp_knob_owner(mthp_actuator_journal(x->a), k, "never"), "original");
}

static void test_journal_save_fails(void **state) {
        struct afix *x = *state;
        /* the state directory is not a directory: the journal cannot be saved */
        assert_int_equal(rmdir(x->f->state_dir), 0);
        assert_ok(fakehost_write_file(x->f->dir, "/run/mthpd", "not a directory\n"));
        assert_int_equal(knob_write(x, "64K/anon", "always"), -ENOTDIR);
        assert_contains(x->err, "64K/anon: not written: cannot save the restore journal ");
        assert_contains(x->err, "/run/mthpd/restore.journal");
        /* so the knob was not touched */
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "never");
        assert_int_equal(mthp_actuator_journal(x->a)->n, 0);
        assert_int_equal(mthp_actuator_n_history(x->a), 0);
}

static void test_history_ring(void **state) {
        struct afix *x = *state;
        for (unsigned i = 0; i < MTHP_HISTORY_MAX + 10; i++)
                assert_int_equal(knob_write(x, "64K/anon", i % 2 ? "madvise" : "always"), 1);
        assert_int_equal(mthp_actuator_n_history(x->a), MTHP_HISTORY_MAX);
        /* the newest last, the oldest kept the 11th write */
        assert_string_equal(mthp_actuator_history(x->a, MTHP_HISTORY_MAX - 1, NULL)->new, "madvise");
        assert_string_equal(mthp_actuator_history(x->a, MTHP_HISTORY_MAX - 1, NULL)->old, "always");
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->new, "always");
        assert_string_equal(mthp_actuator_history(x->a, 0, NULL)->old, "madvise");
        assert_int_equal(x->n_changes, MTHP_HISTORY_MAX + 10);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, afix_setup, afix_teardown)

/* Known bug (lib/actuator.c, mthp_knob_write): a write(2) that fails with
 * EIO is reported as a read-back mismatch ("wrote ... but the kernel reads
 * back '<uninitialised buffer>'"), because -EIO doubles as the mismatch code. */
static void known_bug_write_eio(void **state) {
        struct afix *x = *state;
        assert_int_equal(knob_write(x, "64K/anon", "always"), 1);
        assert_ok(fakehost_knob_fail(x->f->dir, "64K/anon", "EIO"));
        assert_int_equal(knob_write(x, "64K/anon", "madvise"), -EIO);
        assert_string_equal(x->err, "64K/anon (" THP "/hugepages-64kB/enabled): writing 'madvise' failed: "
                                    "Input/output error");
        assert_string_equal(fixture_knob_value(x->f, "64K/anon"), "always");
}

/* The hints of a refused write: "run as root" only to whoever is not
 * root, and never a capability mthpd.service does not grant (CAP_SYS_ADMIN,
 * CAP_DAC_OVERRIDE: its CapabilityBoundingSet= lacks them). A user's words
 * are checked in a child that drops to uid 65534. */
static void test_errno_hints(void **state) {
        (void) state;
        static const char *const not_granted[] = { "CAP_SYS_ADMIN", "with CAP_DAC_OVERRIDE" };
        for (size_t i = 0; i < 2; i++) {
                const char *w = mthp_errno_words(i ? -EPERM : -EACCES);
                for (size_t j = 0; j < sizeof(not_granted) / sizeof(not_granted[0]); j++)
                        if (strstr(w, not_granted[j]))
                                fail_msg("'%s' asks for %s, which mthpd.service does not grant", w, not_granted[j]);
                if (geteuid() == 0 && strstr(w, "run as root"))
                        fail_msg("root is told '%s'", w);
        }
        if (geteuid() != 0)
                return;
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(2);
                _exit(strstr(mthp_errno_words(-EACCES), "run as root") && strstr(mthp_errno_words(-EPERM),
                                                                                  "run as root") ? 0 : 1);
        }
        int st;
        assert_int_equal(waitpid(pid, &st, 0), pid);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
}

static const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errno_hints),
        T(test_write),
        T(test_journal_before_write),
        T(test_read_back_mismatch),
        T(test_read_back_fails),
        T(test_value_not_offered),
        T(test_kernel_rejects),
        T(test_injected_errors),
        T(test_restore_with_empty_value),
        T(test_same_value_is_noop),
        T(test_foreign),
        T(test_changed_behind_our_back),
        T(test_unreadable_knob),
        cmocka_unit_test_setup_teardown(test_dry_run, afix_setup_dry, afix_teardown),
        T(test_actuator_restore),
        T(test_owner),
        T(test_journal_save_fails),
        T(test_history_ring),
};

static const struct CMUnitTest known_bugs[] = {
        T(known_bug_write_eio),
};

UNIT_MAIN(tests, known_bugs)
