/* SPDX-License-Identifier: MIT */
/* Restore journal: file format, atomic save, and the restore rules. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mthp/actuator.h"
#include "mthp/journal.h"
#include "mthp/util.h"
#include "unit.h"

static void make_state_dir(const struct fixture *f) {
        char run[PATH_MAX];
        if (snprintf(run, sizeof(run), "%s/run", f->dir) >= (int) sizeof(run))
                fail_msg("path too long");
        if ((mkdir(run, 0755) < 0 && errno != EEXIST) || (mkdir(f->state_dir, 0755) < 0 && errno != EEXIST))
                fail_msg("mkdir %s: %s", f->state_dir, strerror(errno));
}

static void write_text(const char *file, const char *text) {
        FILE *fp = fopen(file, "we");
        assert_non_null(fp);
        fputs(text, fp);
        assert_int_equal(fclose(fp), 0);
}

static void add_entry(struct mthp_journal *j, const char *id, const char *path, const char *original,
                      const char *written, const char *previous) {
        struct mthp_journal_entry *e = &j->e[j->n++];
        memset(e, 0, sizeof(*e));
        snprintf(e->id, sizeof(e->id), "%s", id);
        snprintf(e->path, sizeof(e->path), "%s", path);
        snprintf(e->original, sizeof(e->original), "%s", original);
        snprintf(e->written, sizeof(e->written), "%s", written);
        snprintf(e->previous, sizeof(e->previous), "%s", previous ? previous : original);
}

static unsigned count_dir_entries(const char *dir, const char *must_not_contain) {
        DIR *d = opendir(dir);
        assert_non_null(d);
        unsigned n = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                if (must_not_contain && strstr(de->d_name, must_not_contain))
                        fail_msg("%s left in %s", de->d_name, dir);
                n++;
        }
        closedir(d);
        return n;
}

static void test_roundtrip(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 }, k;
        char err[512];
        make_state_dir(f);
        assert_ok(mthp_strcpy(j.root, sizeof(j.root), f->dir));
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "never", "always", "madvise");
        add_entry(&j, "global/defrag", THP "/defrag", "madvise", "defer+madvise", NULL);
        j.e[1].state = MTHP_ENTRY_FOREIGN;
        snprintf(j.e[1].foreign_value, sizeof(j.e[1].foreign_value), "never");
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
        assert_int_equal(mthp_journal_load(f->journal, &k, err, sizeof(err)), 0);
        assert_string_equal(k.root, f->dir);
        assert_int_equal(k.n, 2);
        for (unsigned i = 0; i < 2; i++) {
                assert_string_equal(k.e[i].id, j.e[i].id);
                assert_string_equal(k.e[i].path, j.e[i].path);
                assert_string_equal(k.e[i].original, j.e[i].original);
                assert_string_equal(k.e[i].written, j.e[i].written);
                assert_string_equal(k.e[i].previous, j.e[i].previous);
                assert_int_equal(k.e[i].state, j.e[i].state);
                assert_string_equal(k.e[i].foreign_value, j.e[i].foreign_value);
        }
        assert_string_equal(k.e[0].previous, "madvise");
        assert_int_equal(k.e[1].state, MTHP_ENTRY_FOREIGN);
        /* the file says what it is, for an admin who finds it */
        const char *text = fixture_file(NULL, f->journal);
        assert_true(strncmp(text, "# mthpd restore journal", 23) == 0);
        assert_contains(text, "64K/anon");
        assert_contains(text, THP "/hugepages-64kB/enabled");
        assert_contains(text, "\noriginal=never\nwritten=always\nprevious=madvise\nstate=managed\n");
        assert_contains(text, "\nprevious=madvise\n");
        assert_contains(text, "\nstate=foreign\nforeign_value=never\n");
}

static void test_save_is_atomic(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        struct stat st;
        make_state_dir(f);
        add_entry(&j, "16K/anon", THP "/hugepages-16kB/enabled", "never", "always", NULL);
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
        assert_int_equal(stat(f->journal, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0600);
        ino_t first = st.st_ino;
        /* the next save replaces the file (rename), never rewrites it in place */
        snprintf(j.e[0].written, sizeof(j.e[0].written), "madvise");
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
        assert_int_equal(stat(f->journal, &st), 0);
        assert_true(st.st_ino != first);
        assert_contains(fixture_file(NULL, f->journal), "written=madvise\n");
        assert_int_equal(count_dir_entries(f->state_dir, ".tmp"), 1);
        /* an empty journal is no journal */
        j.n = 0;
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
        assert_int_equal(access(f->journal, F_OK), -1);
        assert_int_equal(count_dir_entries(f->state_dir, ".tmp"), 0);
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
}

static void test_save_fails_cleanly(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        char missing[PATH_MAX + 32];
        add_entry(&j, "16K/anon", THP "/hugepages-16kB/enabled", "never", "always", NULL);
        snprintf(missing, sizeof(missing), "%s/no/such/dir/" MTHP_JOURNAL_FILE, f->dir);
        assert_int_equal(mthp_journal_save(missing, &j), -ENOENT);
}

static void test_load_missing(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j;
        char err[256] = "";
        assert_int_equal(mthp_journal_load(f->journal, &j, err, sizeof(err)), -ENOENT);
        assert_int_equal(j.n, 0);
}

/* A valid journal of one knob, as mthp_journal_save writes it (the tests
 * below break it in one place, whatever the layout of the format is). */
static char good_text[4096];

static void save_good(const struct fixture *f) {
        struct mthp_journal j = { .n = 0 };
        make_state_dir(f);
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "never", "always", NULL);
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
        snprintf(good_text, sizeof(good_text), "%s", fixture_file(NULL, f->journal));
}

static unsigned line_of(const char *text, const char *what) {
        const char *p = strstr(text, what);
        if (!p)
                fail_msg("\"%s\" not in the journal", what);
        unsigned line = 1;
        for (const char *q = text; q < p; q++)
                line += *q == '\n';
        return line;
}

static unsigned n_lines(const char *text) {
        unsigned n = 0;
        for (; *text; text++)
                n += *text == '\n';
        return n;
}

/* Replace the line holding 'line_with' by 'replacement' (may be "" to drop
 * it, or hold several lines), or append it when line_with is NULL. */
static void write_variant(const struct fixture *f, const char *line_with, const char *replacement) {
        char text[8192];
        if (!line_with)
                snprintf(text, sizeof(text), "%s%s", good_text, replacement);
        else {
                const char *p = strstr(good_text, line_with);
                assert_non_null(p);
                const char *eol = strchr(p, '\n');
                assert_non_null(eol);
                snprintf(text, sizeof(text), "%.*s%s%s", (int) (p - good_text), good_text, replacement, eol + 1);
        }
        write_text(f->journal, text);
}

static void expect_bad(const struct fixture *f, unsigned line, const char *want) {
        struct mthp_journal j;
        char err[1024] = "", where[PATH_MAX + 64];
        int r = mthp_journal_load(f->journal, &j, err, sizeof(err));
        if (r != -EBADMSG)
                fail_msg("load of a bad journal returned %d, expected -EBADMSG (text:\n%s)", r,
                         fixture_file(NULL, f->journal));
        if (line)
                snprintf(where, sizeof(where), "%s:%u: %s", f->journal, line, want);
        else
                snprintf(where, sizeof(where), "%s: %s", f->journal, want);
        assert_contains(err, where);
}

static void test_malformed(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j;
        char err[512];
        save_good(f);
        assert_int_equal(mthp_journal_load(f->journal, &j, err, sizeof(err)), 0);
        unsigned written = line_of(good_text, "\nwritten=") + 1, state_line = line_of(good_text, "\nstate=") + 1;
        unsigned original = line_of(good_text, "\noriginal=") + 1, end = n_lines(good_text);

        write_variant(f, "written=always", "written=always\ncolour=blue\n");
        expect_bad(f, written + 1, "unknown key 'colour'");
        write_variant(f, "state=managed", "state=lost\n");
        expect_bad(f, state_line, "key 'state': expected managed or foreign, got 'lost'");
        write_variant(f, "original=never", "original=\n");
        expect_bad(f, original, "key 'original'");
        write_variant(f, "written=always", "written=abcdefghijklmnopqrstuvwxyz\n");
        expect_bad(f, written, "key 'written'");
        write_variant(f, NULL, "[mystery]\nkey=1\n");
        expect_bad(f, end + 2, "unknown section [mystery]");
        write_variant(f, NULL, "this line has no equals sign\n");
        expect_bad(f, end + 1, "syntax error");
        write_variant(f, "written=always", "");
        expect_bad(f, 0, "knob ");
        assert_int_equal(mthp_journal_load(f->journal, &j, err, sizeof(err)), -EBADMSG);
        assert_contains(err, "written= are required");
        write_variant(f, "[journal]", "[journal]\nroot=/\nmood=good\n");
        expect_bad(f, line_of(good_text, "[journal]") + 2, "unknown key 'mood' in [journal]");
}

/* The journal mthpd would have left: knobs set as written. */
static void leave_journal(const struct fixture *f, struct mthp_journal *j) {
        make_state_dir(f);
        assert_ok(mthp_strcpy(j->root, sizeof(j->root), f->dir));
        assert_int_equal(mthp_journal_save(f->journal, j), 0);
}

static void test_restore(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        unsigned n = 99;
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "never", "always", NULL);
        add_entry(&j, "16K/shmem", THP "/hugepages-16kB/shmem_enabled", "never", "advise", NULL);
        assert_ok(fakehost_knob_set(f->dir, "64K/anon", "always"));
        assert_ok(fakehost_knob_set(f->dir, "16K/shmem", "advise"));
        leave_journal(f, &j);
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "never");
        assert_string_equal(fixture_knob_value(f, "16K/shmem"), "never");
        assert_int_equal(access(f->journal, F_OK), -1);
        /* nothing to do the second time */
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 0);
}

static void test_restore_per_size_before_global(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        unsigned n;
        /* Originally global shmem was "force" (so no non-PMD size could
         * inherit). mthpd set it to "never", then 64K shmem to "inherit".
         * Global first would be rejected: force while 64K inherits. */
        assert_ok(fakehost_knob_set(f->dir, "global/shmem_enabled", "force"));
        assert_ok(fakehost_knob_write(f->dir, "global/shmem_enabled", "never"));
        assert_ok(fakehost_knob_write(f->dir, "64K/shmem", "inherit"));
        add_entry(&j, "global/shmem_enabled", THP "/shmem_enabled", "force", "never", NULL);
        add_entry(&j, "64K/shmem", THP "/hugepages-64kB/shmem_enabled", "never", "inherit", NULL);
        leave_journal(f, &j);
        /* the fake is strict, as the kernel is */
        assert_int_equal(fakehost_knob_write(f->dir, "global/shmem_enabled", "force"), -EINVAL);
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(fixture_knob_value(f, "global/shmem_enabled"), "force");
        assert_string_equal(fixture_knob_value(f, "64K/shmem"), "never");
        assert_int_equal(access(f->journal, F_OK), -1);
}

static void test_restore_leaves_foreign_changes(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        unsigned n;
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "never", "always", NULL);
        add_entry(&j, "32K/anon", THP "/hugepages-32kB/enabled", "never", "always", NULL);
        add_entry(&j, "128K/anon", THP "/hugepages-128kB/enabled", "never", "always", NULL);
        j.e[2].state = MTHP_ENTRY_FOREIGN;   /* already known to be someone else's */
        assert_ok(fakehost_knob_set(f->dir, "64K/anon", "always"));
        assert_ok(fakehost_knob_set(f->dir, "32K/anon", "always"));
        assert_ok(fakehost_knob_set(f->dir, "128K/anon", "always"));
        leave_journal(f, &j);
        /* the admin changed 32K after mthpd */
        assert_ok(fakehost_knob_write(f->dir, "32K/anon", "madvise"));
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "never");
        assert_string_equal(fixture_knob_value(f, "32K/anon"), "madvise");
        assert_string_equal(fixture_knob_value(f, "128K/anon"), "always");
        /* not ours any more: the journal is done */
        assert_int_equal(access(f->journal, F_OK), -1);
}

static void test_restore_after_crash_before_write(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        unsigned n;
        /* mthpd had set 64K to "always", saved the journal for its next
         * write ("madvise") and died before the write: the kernel still
         * holds "always" (previous=), which is still mthpd's to undo. */
        assert_ok(fakehost_knob_set(f->dir, "64K/anon", "always"));
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "never", "madvise", "always");
        /* first write of a knob: the kernel still holds the original */
        assert_ok(fakehost_knob_set(f->dir, "16K/anon", "never"));
        add_entry(&j, "16K/anon", THP "/hugepages-16kB/enabled", "never", "always", "never");
        leave_journal(f, &j);
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "never");
        assert_string_equal(fixture_knob_value(f, "16K/anon"), "never");
        assert_int_equal(access(f->journal, F_OK), -1);
}

static void test_restore_failure_keeps_entry(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 }, k;
        unsigned n;
        char err[256];
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "never", "always", NULL);
        add_entry(&j, "16K/anon", THP "/hugepages-16kB/enabled", "never", "always", NULL);
        assert_ok(fakehost_knob_set(f->dir, "64K/anon", "always"));
        assert_ok(fakehost_knob_set(f->dir, "16K/anon", "always"));
        leave_journal(f, &j);
        assert_ok(fakehost_knob_fail(f->dir, "64K/anon", "EIO"));
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 1);
        assert_int_equal(n, 1);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "always");
        assert_string_equal(fixture_knob_value(f, "16K/anon"), "never");
        /* the journal keeps what is still to do, so a retry can finish */
        assert_int_equal(mthp_journal_load(f->journal, &k, err, sizeof(err)), 0);
        assert_int_equal(k.n, 1);
        assert_string_equal(k.e[0].id, "64K/anon");
        assert_string_equal(k.e[0].original, "never");
        assert_string_equal(k.root, f->dir);
        assert_ok(fakehost_knob_fail(f->dir, "64K/anon", NULL));
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(fixture_knob_value(f, "64K/anon"), "never");
        assert_int_equal(access(f->journal, F_OK), -1);
}

static void test_restore_bad_journal(void **state) {
        struct fixture *f = *state;
        unsigned n = 99;
        make_state_dir(f);
        write_text(f->journal, "[knob " THP "/enabled]\nid=global/enabled\nbogus\n");
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), -EBADMSG);
        /* a journal it cannot read is left for the admin */
        assert_int_equal(access(f->journal, F_OK), 0);
}

static void test_find_remove(void **state) {
        (void) state;
        struct mthp_journal j = { .n = 0 };
        add_entry(&j, "a", "/a", "x", "y", NULL);
        add_entry(&j, "b", "/b", "x", "y", NULL);
        add_entry(&j, "c", "/c", "x", "y", NULL);
        assert_ptr_equal(mthp_journal_find(&j, "/b"), &j.e[1]);
        assert_null(mthp_journal_find(&j, "/d"));
        mthp_journal_remove(&j, "/b");
        assert_int_equal(j.n, 2);
        assert_string_equal(j.e[0].id, "a");
        assert_string_equal(j.e[1].id, "c");
        mthp_journal_remove(&j, "/nope");
        assert_int_equal(j.n, 2);
        mthp_journal_remove(&j, "/c");
        mthp_journal_remove(&j, "/a");
        assert_int_equal(j.n, 0);
}

/* A journal naming THP-tree files mthpd never manages (a crafted or
 * damaged one): restore writes none of them, says so and drops them, and
 * still restores the knobs that are mthpd's. An id that is not its path's
 * knob is skipped the same way. */
static void test_restore_only_managed_knobs(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        unsigned n = 99;
        char v[64];
        assert_ok(fakehost_write_file(f->dir, THP "/khugepaged/pages_to_scan", "512\n"));
        assert_ok(fakehost_write_file(f->dir, THP "/khugepaged/scan_sleep_millisecs", "20\n"));
        assert_ok(fakehost_write_file(f->dir, THP "/use_zero_page", "0\n"));
        add_entry(&j, "khugepaged/pages_to_scan", THP "/khugepaged/pages_to_scan", "1", "512", NULL);
        add_entry(&j, "khugepaged/scan_sleep_millisecs", THP "/khugepaged/scan_sleep_millisecs", "1", "20", NULL);
        add_entry(&j, "16K/shmem", THP "/use_zero_page", "1", "0", NULL);     /* a managed id, another file */
        add_entry(&j, "64K/anon", THP "/hugepages-064kB/enabled", "never", "always", NULL); /* not the kernel's name */
        add_entry(&j, "16K/anon", THP "/hugepages-16kB/enabled", "never", "always", NULL);
        assert_ok(fakehost_knob_set(f->dir, "16K/anon", "always"));
        leave_journal(f, &j);
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 1);
        assert_string_equal(fixture_knob_value(f, "16K/anon"), "never");
        assert_ok(fakehost_read_file(f->dir, THP "/khugepaged/pages_to_scan", v, sizeof(v)));
        assert_string_equal(v, "512\n");
        assert_ok(fakehost_read_file(f->dir, THP "/khugepaged/scan_sleep_millisecs", v, sizeof(v)));
        assert_string_equal(v, "20\n");
        assert_ok(fakehost_read_file(f->dir, THP "/use_zero_page", v, sizeof(v)));
        assert_string_equal(v, "0\n");
        /* nothing of it is left to try again */
        assert_int_equal(access(f->journal, F_OK), -1);
}

/* A knob this kernel lacks (a size it does not offer, a directory that
 * went away): the entry stays for a retry once the knob is back, the others
 * are restored, and the error says what to do next. */
static void test_restore_knob_kernel_lacks(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 }, k;
        unsigned n = 99;
        char err[256], log[4096] = "";
        add_entry(&j, "16M/anon", THP "/hugepages-16384kB/enabled", "never", "always", NULL);
        add_entry(&j, "16K/anon", THP "/hugepages-16kB/enabled", "never", "always", NULL);
        assert_ok(fakehost_knob_set(f->dir, "16K/anon", "always"));
        leave_journal(f, &j);
        /* what restore logs (stderr here), read back */
        FILE *cap = tmpfile();
        assert_non_null(cap);
        int saved = dup(STDERR_FILENO);
        fflush(stderr);
        dup2(fileno(cap), STDERR_FILENO);
        int r = mthp_actuator_restore_file(f->host, f->journal, &n);
        fflush(stderr);
        dup2(saved, STDERR_FILENO);
        close(saved);
        rewind(cap);
        size_t len = fread(log, 1, sizeof(log) - 1, cap);
        log[len] = 0;
        fclose(cap);
        assert_int_equal(r, 1);
        assert_int_equal(n, 1);
        assert_string_equal(fixture_knob_value(f, "16K/anon"), "never");
        assert_int_equal(mthp_journal_load(f->journal, &k, err, sizeof(err)), 0);
        assert_int_equal(k.n, 1);
        assert_string_equal(k.e[0].id, "16M/anon");
        assert_contains(log, "hugepages-16384kB/enabled does not exist on this kernel");
        assert_contains(log, "'mthpctl restore' puts it back");
        assert_contains(log, "delete the [knob 16M/anon] section from the journal");
}

static void test_entry_check(void **state) {
        (void) state;
        struct mthp_journal j = { .n = 0 };
        char why[256];
        add_entry(&j, "2M/shmem", THP "/hugepages-2048kB/shmem_enabled", "never", "always", NULL);
        add_entry(&j, "global/defrag", THP "/defrag", "madvise", "defer", NULL);
        add_entry(&j, "khugepaged/max_ptes_none", THP "/khugepaged/max_ptes_none", "511", "0", NULL);
        for (unsigned i = 0; i < j.n; i++)
                assert_int_equal(mthp_journal_entry_check(&j.e[i], why, sizeof(why)), 0);
        static const char *const bad[][2] = {
                { "64K/anon", THP "/hugepages-64/enabled" },
                { "64K/anon", THP "/hugepages--4294967232kB/enabled" },
                { "64K/anon", THP "/hugepages-4294967360kB/enabled" },
                { "64K/anon", THP "/hugepages-48kB/enabled" },
                { "64K/anon", THP "/hugepages-64kB/stats/nr_anon" },
                { "global/enabled", THP "/use_zero_page" },
                { "64K/anon", THP "/hugepages-32kB/enabled" },
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                j.n = 0;
                add_entry(&j, bad[i][0], bad[i][1], "never", "always", NULL);
                assert_int_equal(mthp_journal_entry_check(&j.e[0], why, sizeof(why)), -EPERM);
                assert_contains(why, bad[i][1]);
        }
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, fixture_setup, fixture_teardown)

/* Known bug (lib/actuator.c, mthp_actuator_restore_file): per-size knobs are
 * always restored before global ones. When mthpd itself had set global
 * shmem_enabled to "force" (after taking a size off "inherit"), the size
 * cannot get "inherit" back while the global value is still "force"; the
 * global knob has to go first. A retry of what failed after the global pass
 * restores both. */
static void known_bug_restore_global_force(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        unsigned n;
        assert_ok(fakehost_knob_set(f->dir, "global/shmem_enabled", "advise"));
        assert_ok(fakehost_knob_set(f->dir, "64K/shmem", "inherit"));
        assert_ok(fakehost_knob_write(f->dir, "64K/shmem", "never"));
        assert_ok(fakehost_knob_write(f->dir, "global/shmem_enabled", "force"));
        add_entry(&j, "64K/shmem", THP "/hugepages-64kB/shmem_enabled", "inherit", "never", NULL);
        add_entry(&j, "global/shmem_enabled", THP "/shmem_enabled", "advise", "force", NULL);
        leave_journal(f, &j);
        assert_int_equal(mthp_actuator_restore_file(f->host, f->journal, &n), 0);
        assert_int_equal(n, 2);
        assert_string_equal(fixture_knob_value(f, "global/shmem_enabled"), "advise");
        assert_string_equal(fixture_knob_value(f, "64K/shmem"), "inherit");
        assert_int_equal(access(f->journal, F_OK), -1);
}

/* Known bug (lib/actuator.c, mthp_actuator_restore_file): the journal records the
 * host root its paths belong to (root=), but restore never compares it with
 * the host it is given. A journal left in the state directory by a run with
 * --root FAKE gets applied to the real host by the next plain mthpd start
 * (wherever a knob happens to hold the fake's written= or previous= value). */
static void known_bug_restore_other_root(void **state) {
        struct fixture *f = *state;
        struct mthp_journal j = { .n = 0 };
        char other[PATH_MAX];
        unsigned n = 0;
        assert_ok(fakehost_create_temp(NULL, other, sizeof(other)));
        add_entry(&j, "64K/anon", THP "/hugepages-64kB/enabled", "madvise", "always", "never");
        make_state_dir(f);
        assert_ok(mthp_strcpy(j.root, sizeof(j.root), other));
        assert_int_equal(mthp_journal_save(f->journal, &j), 0);
        int r = mthp_actuator_restore_file(f->host, f->journal, &n);
        const char *value = fixture_knob_value(f, "64K/anon");
        assert_ok(fakehost_remove(other));
        assert_true(r < 0);
        assert_int_equal(n, 0);
        assert_string_equal(value, "never");
        assert_int_equal(access(f->journal, F_OK), 0);
}

static const struct CMUnitTest tests[] = {
        T(test_roundtrip),
        T(test_save_is_atomic),
        T(test_save_fails_cleanly),
        T(test_load_missing),
        T(test_malformed),
        T(test_restore),
        T(test_restore_per_size_before_global),
        T(test_restore_leaves_foreign_changes),
        T(test_restore_after_crash_before_write),
        T(test_restore_failure_keeps_entry),
        T(test_restore_bad_journal),
        T(test_restore_only_managed_knobs),
        T(test_restore_knob_kernel_lacks),
        cmocka_unit_test(test_entry_check),
        cmocka_unit_test(test_find_remove),
};

static const struct CMUnitTest known_bugs[] = {
        T(known_bug_restore_global_force),
        T(known_bug_restore_other_root),
};

UNIT_MAIN(tests, known_bugs)
