/* SPDX-License-Identifier: MIT */
/* Issue 13: untrusted bytes, round 2. One test (or a few) per item of the
 * issue, named itemNN_...; each failed on the code before the fix (built
 * with -DON_MAIN, the tests that use only interfaces main already had).
 * Tests that hang on the old code (FIFOs) are cut by alarm(): a failure. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mthp/actuator.h"
#include "mthp/config.h"
#include "mthp/journal.h"
#include "mthp/policy.h"
#include "mthp/status.h"
#ifndef ON_MAIN
#include "mthp/escape.h"
#include "mthp/safe-io.h"
#endif
#include "unit.h"

static char *make_dir(void) {
        static char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/mthpd-test-untrusted-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        assert_non_null(mkdtemp(dir));
        return dir;
}

static void rm_dir(const char *dir) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void write_file(const char *path, const char *text, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        assert_int_equal(chmod(path, mode), 0);
}

static char *repeat(char c, size_t n) {
        static char buf[8][1024];
        static unsigned next;
        char *b = buf[next++ % 8];
        memset(b, c, n);
        b[n] = 0;
        return b;
}

/* ---- item 1: lines longer than inih's 200-byte buffer ---------------- */

static void item01_long_comment_not_parsed(void **state) {
        (void) state;
        /* a comment line whose byte 200 starts "Priority=100" */
        char text[2048];
        snprintf(text, sizeof(text), "[Match]\nUnit=x.service\n[Policy]\n# %sPriority=100\nAnon=always\n",
                 repeat('c', 197));
        struct mthp_policy p;
        char err[2048] = "";
        int r = mthp_policy_load_string("t.policy", text, &p, err, sizeof(err));
        assert_int_equal(r, 0);
        assert_int_equal(p.priority, 50); /* not applied */
}

static void item01_long_line_error_at_true_line(void **state) {
        (void) state;
        char text[2048];
        /* line 3 is 260 bytes, line 5 has a bad value: both at their lines */
        snprintf(text, sizeof(text), "[Match]\nUnit=x.service\nCgroup=/%s\n[Policy]\nPriority=high\n", repeat('a', 252));
        struct mthp_policy p;
        char err[2048] = "";
        assert_int_equal(mthp_policy_load_string("t.policy", text, &p, err, sizeof(err)), -EINVAL);
        assert_contains(err, "t.policy:3: line of 260 bytes, expected at most 199");
        assert_contains(err, "t.policy:5: key 'Priority'");

        struct mthp_config c;
        mthp_config_defaults(&c);
        snprintf(text, sizeof(text), "[Daemon]\n# ok: a long comment %s\nMode=%s\nInterval=bad\n", repeat('x', 300),
                 repeat('m', 250));
        assert_int_equal(mthp_config_load_string("c.conf", text, &c, err, sizeof(err)), -EINVAL);
        assert_contains(err, "c.conf:3: line of 255 bytes");
        assert_contains(err, "c.conf:4: key 'Interval'");
        assert_not_contains(err, "c.conf:2:");
}

static void item01_long_line_in_journal(void **state) {
        (void) state;
        char *dir = make_dir(), path[PATH_MAX], text[2048];
        snprintf(path, sizeof(path), "%s/restore.journal", dir);
        snprintf(text, sizeof(text),
                 "[journal]\nroot=/\n\n[knob x]\npath=/sys/kernel/mm/transparent_hugepage/%s\noriginal=never\n"
                 "written=always\nprevious=never\nstate=managed\n",
                 repeat('p', 220));
        write_file(path, text, 0600);
        struct mthp_journal j;
        char err[1024] = "";
        assert_true(mthp_journal_load(path, &j, err, sizeof(err)) < 0);
        assert_contains(err, "restore.journal:5: line of");
        rm_dir(dir);
}

/* ---- item 2: unknown sections of 64+ characters ---------------------- */

static void item02_long_unknown_section(void **state) {
        (void) state;
        char text[512], err[2048] = "";
        snprintf(text, sizeof(text), "[Daemon]\nMode=observe\n[%s]\nFoo=1\n", repeat('S', 70));
        struct mthp_config c;
        mthp_config_defaults(&c);
        assert_int_equal(mthp_config_load_string("c.conf", text, &c, err, sizeof(err)), -EINVAL);
        assert_contains(err, "c.conf:3: unknown section [SSSS");

        snprintf(text, sizeof(text), "[Match]\nUnit=x.service\n[Policy]\n[%s]\nPriority=1\n", repeat('P', 64));
        struct mthp_policy p;
        assert_int_equal(mthp_policy_load_string("t.policy", text, &p, err, sizeof(err)), -EINVAL);
        assert_contains(err, "t.policy:4: unknown section [PPPP");
}

/* ---- items 3, 4: what leaves the daemon is valid UTF-8, one line ----- */

static void item04_status_file_not_forged(void **state) {
        (void) state;
        char *dir = make_dir();
        static struct mthp_snapshot snap;
        static struct mthp_status_knob d[1];
        static struct mthp_status st;
        snprintf(d[0].id, sizeof(d[0].id), "64K/anon");
        snprintf(d[0].decision, sizeof(d[0].decision), "never");
        /* what a process named itself (comm) can put into a reason */
        snprintf(d[0].reason, sizeof(d[0].reason),
                 "process 'x\n\n[knob 2M/anon]\ndecision=always\nreason=forged' \x1b[2J faults \xff\xfe hard");
        assert_int_equal(mthp_status_file_write(dir, &snap, d, 1, false, "not\nwritable \x1b", 0, NULL, NULL), 0);
        assert_int_equal(mthp_status_file_read(dir, &st), 0);
        assert_int_equal(st.n, 1); /* no forged [knob 2M/anon] */
        assert_string_equal(st.k[0].id, "64K/anon");
        assert_string_equal(st.k[0].decision, "never");
        /* escaped in the file, read back as the text itself: mthpctl
         * escapes what it prints once (JSON: carries it as it is) */
        assert_string_equal(st.k[0].reason, d[0].reason);
        assert_string_equal(st.not_writable, "not\nwritable \x1b");
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/" MTHP_STATUS_FILE, dir);
        assert_null(strstr(fixture_file(NULL, path), "\n[knob 2M/anon]"));
        rm_dir(dir);
}

#ifndef ON_MAIN
/* The engine's fault cost and rates go from writer to reader; from an
 * mthpd that did not write them, written as no number, or one rate
 * without the other, they are unknown. */
static void status_file_rates(void **state) {
        (void) state;
        char *dir = make_dir();
        static struct mthp_snapshot snap;
        static struct mthp_status st;
        struct mthp_status_rates rates = { .fault_cost_ns = 10060.4, .raise = 2485.1, .lower = 248.5, .by_time = true };
        assert_int_equal(mthp_status_file_write(dir, &snap, NULL, 0, false, NULL, 0, &rates, NULL), 0);
        assert_int_equal(mthp_status_file_read(dir, &st), 0);
        assert_true(st.rates_known);
        assert_float_equal(st.rates.fault_cost_ns, 10060.4, 1e-9);
        assert_float_equal(st.rates.raise, 2485.1, 1e-9);
        assert_float_equal(st.rates.lower, 248.5, 1e-9);
        assert_true(st.rates.by_time);
        rates.by_time = false;
        assert_int_equal(mthp_status_file_write(dir, &snap, NULL, 0, false, NULL, 0, &rates, NULL), 0);
        assert_int_equal(mthp_status_file_read(dir, &st), 0);
        assert_true(st.rates_known);
        assert_false(st.rates.by_time);

        assert_int_equal(mthp_status_file_write(dir, &snap, NULL, 0, false, NULL, 0, NULL, NULL), 0);
        assert_int_equal(mthp_status_file_read(dir, &st), 0);
        assert_false(st.rates_known);

        char path[PATH_MAX], text[256];
        snprintf(path, sizeof(path), "%s/status", dir);
        snprintf(text, sizeof(text), "[status]\npid=%d\nraise_fault_rate=1e9x\nlower_fault_rate=nan\n"
                 "fault_cost_ns=-5\n", (int) getpid());
        write_file(path, text, 0644);
        assert_int_equal(mthp_status_file_read(dir, &st), 0);
        assert_false(st.rates_known);
        /* one rate alone would print "steps down below 0" */
        snprintf(text, sizeof(text), "[status]\npid=%d\nraise_fault_rate=2500\nfault_cost_ns=10000\n", (int) getpid());
        write_file(path, text, 0644);
        assert_int_equal(mthp_status_file_read(dir, &st), 0);
        assert_false(st.rates_known);
        assert_float_equal(st.rates.raise, 0, 0);
        rm_dir(dir);
}
#endif

#ifndef ON_MAIN
static void item03_escape(void **state) {
        (void) state;
        char out[256];
        assert_string_equal(mthp_escape(out, sizeof(out), "plain text, Grüße, 日本"), "plain text, Grüße, 日本");
        assert_string_equal(mthp_escape(out, sizeof(out), "a\xff" "b"), "a\\xffb");
        assert_string_equal(mthp_escape(out, sizeof(out), "\x1b[2J\n\t\x7f"), "\\x1b[2J\\x0a\\x09\\x7f");
        assert_string_equal(mthp_escape(out, sizeof(out), "\xc2\x85"), "\\xc2\\x85"); /* C1 NEL */
        assert_string_equal(mthp_escape(out, sizeof(out), "\xed\xa0\x80"), "\\xed\\xa0\\x80"); /* surrogate */
        assert_string_equal(mthp_escape(out, sizeof(out), "\xe6\x97"), "\\xe6\\x97");          /* cut short */
        assert_string_equal(mthp_escape(out, sizeof(out), "\xc0\xaf"), "\\xc0\\xaf");          /* overlong */
        /* reversible: the escape character is escaped, so two names never
         * print the same */
        char again[256];
        mthp_escape(out, sizeof(out), "x\xff\x1b\\");
        assert_string_equal(out, "x\\xff\\x1b\\\\");
        assert_int_equal(mthp_unescape(again, sizeof(again), out), 4);
        assert_string_equal(again, "x\xff\x1b\\");
        assert_true(mthp_text_is_clean(out));
        assert_false(mthp_text_is_clean("x\xff"));
        /* never cut inside an escape or a character */
        assert_string_equal(mthp_escape(out, 6, "ab\xff"), "ab");
        assert_int_equal(mthp_escape_n(out, 5, "\xe6\x97\xa5\xe6\x97\xa5", 6), 6);
        assert_string_equal(out, "\xe6\x97\xa5");
        assert_string_equal(mthp_escape_lines(out, sizeof(out), "a:1: x\xff\nb:2: \x1b\n"), "a:1: x\\xff\nb:2: \\x1b\n");
}

static void item09_json_and_check_lines(void **state) {
        (void) state;
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_non_null(f);
        mthp_json_string(f, "a\"b\\c\n\xff");
        fclose(f);
        /* the text itself, JSON's escaping; 0xff as Python's surrogateescape */
        assert_string_equal(buf, "\"a\\\"b\\\\c\\n\\udcff\"");
        free(buf);
        const char *l = "/etc/p.d/a.policy:3: bad";
        assert_true(mthp_error_line_is_about(l, strlen(l), "/etc/p.d", true));
        assert_true(mthp_error_line_is_about(l, strlen(l), "/etc/p.d/", true));
        assert_false(mthp_error_line_is_about(l, strlen(l), "/etc/p.d", false));
        assert_true(mthp_error_line_is_about(l, strlen(l), "/etc/p.d/a.policy", false));
        l = "/etc/p.d: directory writable by everyone";
        assert_true(mthp_error_line_is_about(l, strlen(l), "/etc/p.d", true));
        l = "/etc/p.d/sub/x.policy:1: y";
        assert_false(mthp_error_line_is_about(l, strlen(l), "/etc/p.d", true));
        l = "/etc/p.dx/a.policy:1: y";
        assert_false(mthp_error_line_is_about(l, strlen(l), "/etc/p.d", true));
}
#endif

/* ---- item 5: FIFOs and devices never hang a reader ------------------- */

static void item05_special_files(void **state) {
        (void) state;
        char *dir = make_dir(), fifo[PATH_MAX], err[1024];
        snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        alarm(5); /* the old code blocks in open() forever */
        struct mthp_config c;
        mthp_config_defaults(&c);
        assert_true(mthp_config_load(fifo, &c, err, sizeof(err)) < 0);
        assert_contains(err, "a FIFO, expected a regular file");
        assert_true(mthp_config_load("/dev/zero", &c, err, sizeof(err)) < 0);
        assert_contains(err, "/dev/zero: a character device, expected a regular file");
        /* a FIFO restore journal */
        char journal[PATH_MAX];
        snprintf(journal, sizeof(journal), "%s/restore.journal", dir);
        assert_int_equal(mkfifo(journal, 0600), 0);
        struct mthp_journal j;
        assert_true(mthp_journal_load(journal, &j, err, sizeof(err)) < 0);
        assert_contains(err, "a FIFO, expected a regular file");
        /* a FIFO status file */
        char status[PATH_MAX];
        snprintf(status, sizeof(status), "%s/status", dir);
        assert_int_equal(mkfifo(status, 0644), 0);
        static struct mthp_status st;
        assert_true(mthp_status_file_read(dir, &st) < 0);
        alarm(0);
        rm_dir(dir);
}

/* ---- item 6: the state directory is not trusted blindly -------------- */

static void item06_symlinks_in_state_dir(void **state) {
        (void) state;
        char *dir = make_dir(), victim[PATH_MAX], link[PATH_MAX], journal[PATH_MAX];
        snprintf(victim, sizeof(victim), "%s.victim", dir);
        write_file(victim, "precious\n", 0644);
        snprintf(link, sizeof(link), "%s/restore.journal.tmp", dir);
        assert_int_equal(symlink(victim, link), 0);
        snprintf(journal, sizeof(journal), "%s/restore.journal", dir);
        struct mthp_journal j = { .n = 1 };
        snprintf(j.root, sizeof(j.root), "/");
        snprintf(j.e[0].id, sizeof(j.e[0].id), "64K/anon");
        snprintf(j.e[0].path, sizeof(j.e[0].path), MTHP_THP_DIR "/hugepages-64kB/enabled");
        snprintf(j.e[0].original, sizeof(j.e[0].original), "never");
        snprintf(j.e[0].written, sizeof(j.e[0].written), "always");
        (void) mthp_journal_save(journal, &j);
        assert_string_equal(fixture_file(NULL, victim), "precious\n");
        struct stat st;
        assert_int_equal(lstat(journal, &st), 0);
        assert_true(S_ISREG(st.st_mode));

        /* status.tmp likewise */
        snprintf(link, sizeof(link), "%s/status.tmp", dir);
        assert_int_equal(symlink(victim, link), 0);
        static struct mthp_snapshot snap;
        (void) mthp_status_file_write(dir, &snap, NULL, 0, false, NULL, 0, NULL, NULL);
        assert_string_equal(fixture_file(NULL, victim), "precious\n");
        unlink(victim);
        rm_dir(dir);
}

static void item06_foreign_journal_refused(void **state) {
        (void) state;
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: chown to another uid needs root\n");
                skip();
        }
        char *dir = make_dir(), journal[PATH_MAX], err[1024] = "";
        snprintf(journal, sizeof(journal), "%s/restore.journal", dir);
        write_file(journal,
                   "[journal]\nroot=/\n\n[knob 64K/anon]\npath=" MTHP_THP_DIR "/hugepages-64kB/enabled\n"
                   "original=never\nwritten=always\nprevious=never\nstate=managed\n",
                   0666);
        assert_int_equal(chown(journal, 65534, 65534), 0);
        struct mthp_journal j;
        assert_true(mthp_journal_load(journal, &j, err, sizeof(err)) < 0);
        assert_contains(err, "owned by uid 65534, expected root");
        /* root's, but writable by everyone */
        assert_int_equal(chown(journal, 0, 0), 0);
        assert_true(mthp_journal_load(journal, &j, err, sizeof(err)) < 0);
        assert_contains(err, "writable by everyone (mode 0666)");
        /* a fine file in a directory anyone can write */
        assert_int_equal(chmod(journal, 0600), 0);
        assert_int_equal(mthp_journal_load(journal, &j, err, sizeof(err)), 0);
        assert_int_equal(chmod(dir, 0777), 0);
        assert_true(mthp_journal_load(journal, &j, err, sizeof(err)) < 0);
        assert_contains(err, "directory writable by everyone");
        assert_int_equal(chmod(dir, 0755), 0);
        assert_int_equal(chown(dir, 65534, 65534), 0);
        assert_true(mthp_journal_load(journal, &j, err, sizeof(err)) < 0);
        assert_contains(err, "directory owned by uid 65534");
        rm_dir(dir);
}

/* ---- item 7: long paths are errors, never cut ------------------------ */

static void item07_long_state_dir(void **state) {
        struct fixture *f = *state;
        char dir[300];
        snprintf(dir, sizeof(dir), "/%s", repeat('d', 243)); /* 244 characters */
        struct mthp_actuator *a = NULL;
        assert_int_equal(mthp_actuator_new(f->host, &f->caps, dir, true, &a), -ENAMETOOLONG);
        assert_null(a);
#ifndef ON_MAIN
        struct mthp_config c;
        mthp_config_defaults(&c);
        assert_int_equal(mthp_config_set_state_dir(&c, dir), -ENAMETOOLONG);
        assert_string_equal(c.state_dir, "/run/mthpd");
        char path[600];
        snprintf(path, sizeof(path), "/%s", repeat('p', 256));
        assert_int_equal(mthp_config_set_policy_dir(&c, path), -ENAMETOOLONG);
        char buf[16];
        assert_int_equal(mthp_path_join(buf, sizeof(buf), "/run/mthpd", "restore.journal"), -ENAMETOOLONG);
#endif
        char text[400], err[1024];
        struct mthp_config c2;
        mthp_config_defaults(&c2);
        snprintf(text, sizeof(text), "[Daemon]\nStateDirectory=%s\n", dir);
        assert_int_equal(mthp_config_load_string("c.conf", text, &c2, err, sizeof(err)), -EINVAL);
}

/* ---- item 8: Unit= stays out of delegated subtrees ------------------- */

#ifndef ON_MAIN
static bool owned_below_home(void *user, const char *cgroup) {
        (void) user;
        return strncmp(cgroup, "/home.slice", 11) == 0;
}
#endif

static void item08_unit_not_in_user_subtree(void **state) {
        (void) state;
        char *dir = make_dir(), path[PATH_MAX], err[2048];
        snprintf(path, sizeof(path), "%s/db.policy", dir);
        write_file(path, "[Match]\nUnit=postgresql@*.service\n[Policy]\nAnon=always\nPriority=90\nCollapse=yes\n",
                   0644);
        struct mthp_policy_set *s = NULL;
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), 0);
        const char *user = "/user.slice/user-1000.slice/user@1000.service/app.slice/postgresql@x.service";
        assert_int_equal(mthp_policy_match(s, user, NULL, 0), -1);
        assert_int_equal(mthp_policy_match(s, "/system.slice/postgresql@main.service", NULL, 0), 0);
#ifndef ON_MAIN
        /* a cgroup owned by a user (delegated by a system service) */
        s->user_owned = owned_below_home;
        assert_int_equal(mthp_policy_match(s, "/home.slice/x/postgresql@y.service", NULL, 0), -1);
        assert_false(mthp_policy_set_matches(s, 0, "/home.slice/x/postgresql@y.service"));
        assert_int_equal(mthp_policy_match(s, "/system.slice/postgresql@main.service", NULL, 0), 0);
        mthp_policy_set_free(s);
        /* unless the policy says so */
        write_file(path,
                   "[Match]\nUnit=postgresql@*.service\nDelegated=yes\n[Policy]\nAnon=always\nPriority=90\n", 0644);
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), 0);
        assert_int_equal(mthp_policy_match(s, user, NULL, 0), 0);
#endif
        mthp_policy_set_free(s);
        rm_dir(dir);
}

/* ---- item 10: mthpd.conf as strict as policy files ------------------- */

static void item10_config_strict(void **state) {
        (void) state;
        static const char *const bad[] = {
                "[Daemon]\nInterval=0x10\n",        "[Daemon]\nInterval=0x1p3s\n", "[Engine]\nMaxBloat=0x10%\n",
                "[Engine]\nPressureMax=0x10\n",     "[Engine]\nAnonSizes=3K-5K\n",  "[Engine]\nShmemSizes=96K\n",
                "[Engine]\nRaiseFaultRate=1e5\n",   "[Engine]\nConfirmTicks=+3\n",
                "[Engine]\nMinAvailable=inf\n",     "[Engine]\nUnmeasuredMaxSize=3K\n",
                "[Daemon]\nMode=observe\nMode=manage\n",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                struct mthp_config c;
                char err[1024] = "";
                mthp_config_defaults(&c);
                if (mthp_config_load_string("c.conf", bad[i], &c, err, sizeof(err)) != -EINVAL)
                        fail_msg("accepted: %s", bad[i]);
        }
        struct mthp_config c;
        char err[1024] = "";
        mthp_config_defaults(&c);
        assert_int_equal(mthp_config_load_string("c.conf", "[Daemon]\nMode=observe\nMode=manage\n", &c, err, sizeof(err)),
                         -EINVAL);
        assert_contains(err, "c.conf:3: key 'Mode' in [Daemon]: already set at line 2");
        /* still fine */
        assert_int_equal(mthp_config_load_string("c.conf", "[Daemon]\nInterval=1.5s\n[Engine]\nMaxBloat=12.5%\n"
                                                 "AnonSizes=16K-2M\nRaiseFaultRate=30k\n",
                                                 &c, err, sizeof(err)),
                         0);
        /* policy files share the strict numbers */
        struct mthp_policy p;
        assert_int_equal(mthp_policy_load_string("t.policy", "[Match]\nUnit=x.service\n[Policy]\nPriority=+5\n", &p,
                                                 err, sizeof(err)),
                         -EINVAL);
        assert_int_equal(mthp_policy_load_string("t.policy", "[Match]\nUnit=x.service\n[Policy]\nMaxBloat=0x10\n", &p,
                                                 err, sizeof(err)),
                         -EINVAL);
        /* -c DIRECTORY */
        assert_true(mthp_config_load("/tmp", &c, err, sizeof(err)) < 0);
        assert_contains(err, "/tmp: a directory, expected a regular file");
}

/* ---- item 11: the policy directory itself is checked ----------------- */

static void item11_policy_dir_checked(void **state) {
        (void) state;
        char *dir = make_dir(), path[PATH_MAX], err[2048] = "";
        snprintf(path, sizeof(path), "%s/a.policy", dir);
        write_file(path, "[Match]\nCgroup=/a\n[Policy]\n", 0644);
        struct mthp_policy_set *s = NULL;
        assert_int_equal(chmod(dir, 0777), 0);
        assert_true(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)) < 0);
        assert_contains(err, "directory writable by everyone (mode 0777)");
        assert_int_equal(chmod(dir, 0700), 0);
        if (geteuid() == 0) {
                assert_int_equal(chown(dir, 65534, 65534), 0);
                assert_true(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)) < 0);
                assert_contains(err, "directory owned by uid 65534, expected root");
                assert_int_equal(chown(dir, 0, 0), 0);
        }
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), 0);
        mthp_policy_set_free(s);
        /* a link to a subdirectory's file: not a file of the directory itself */
        char sub[PATH_MAX], link[PATH_MAX];
        snprintf(sub, sizeof(sub), "%s/sub", dir);
        assert_int_equal(mkdir(sub, 0755), 0);
        snprintf(path, sizeof(path), "%s/sub/b.policy", dir);
        write_file(path, "[Match]\nCgroup=/b\n[Policy]\n", 0644);
        snprintf(link, sizeof(link), "%s/b.policy", dir);
        assert_int_equal(symlink("sub/b.policy", link), 0);
        assert_true(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)) < 0);
        assert_contains(err, "b.policy: symbolic link to sub/b.policy, outside");
        rm_dir(dir);
}

/* ---- item 12: no qsort(NULL, 0) (UBSan halts on the old code) --------- */

static void item12_empty_policy_dir(void **state) {
        (void) state;
        char *dir = make_dir(), err[256];
        struct mthp_policy_set *s = NULL;
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), 0);
        assert_int_equal(s->n, 0);
        mthp_policy_set_free(s);
        rm_dir(dir);
}

/* ---- item 14: messages that say what happened ------------------------ */

static void item14_messages(void **state) {
        (void) state;
        char *dir = make_dir(), file[PATH_MAX], journal[PATH_MAX + 32], err[1024] = "";
        /* unreadable: not "invalid journal" but why */
        snprintf(file, sizeof(file), "%s/plain", dir);
        write_file(file, "x", 0644);
        snprintf(journal, sizeof(journal), "%s/restore.journal", file);
        struct mthp_journal j;
        int r = mthp_journal_load(journal, &j, err, sizeof(err));
        assert_true(r < 0 && r != -ENOENT);
        assert_contains(err, "not a directory");
        /* a pattern that is too long says so */
        char text[512];
        snprintf(text, sizeof(text), "[Match]\nCgroup=/%s\n[Policy]\n", repeat('a', 191));
        struct mthp_policy p;
        assert_int_equal(mthp_policy_load_string("t.policy", text, &p, err, sizeof(err)), -EINVAL);
        assert_contains(err, "t.policy:2: key 'Cgroup' in [Match]: pattern of 192 bytes is too long, expected at most 191");
#ifndef ON_MAIN
        /* a state directory whose parent is missing */
        char missing[PATH_MAX], why[512];
        snprintf(missing, sizeof(missing), "%s/no/such", dir);
        assert_true(mthp_safe_open_dir(missing, MTHP_SAFE_OWNER, true, why, sizeof(why)) < 0);
        assert_contains(why, "its parent directory does not exist");
#endif
        rm_dir(dir);
}

int main(int argc, char **argv) {
        (void) argc;
        (void) argv;
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(item01_long_comment_not_parsed),
                cmocka_unit_test(item01_long_line_error_at_true_line),
                cmocka_unit_test(item01_long_line_in_journal),
                cmocka_unit_test(item02_long_unknown_section),
#ifndef ON_MAIN
                cmocka_unit_test(item03_escape),
                cmocka_unit_test(item09_json_and_check_lines),
#endif
                cmocka_unit_test(item04_status_file_not_forged),
#ifndef ON_MAIN
                cmocka_unit_test(status_file_rates),
#endif
                cmocka_unit_test(item05_special_files),
                cmocka_unit_test(item06_symlinks_in_state_dir),
                cmocka_unit_test(item06_foreign_journal_refused),
                cmocka_unit_test_setup_teardown(item07_long_state_dir, fixture_setup, fixture_teardown),
                cmocka_unit_test(item08_unit_not_in_user_subtree),
                cmocka_unit_test(item10_config_strict),
                cmocka_unit_test(item11_policy_dir_checked),
                cmocka_unit_test(item12_empty_policy_dir),
                cmocka_unit_test(item14_messages),
        };
        if (argc > 1)
                cmocka_set_test_filter(argv[1]);
        return cmocka_run_group_tests(tests, NULL, NULL);
}
