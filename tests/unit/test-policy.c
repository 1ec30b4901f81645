/* SPDX-License-Identifier: MIT */
/* Policy files (mthpd.policy(5)): keys, errors at FILE:LINE, contradictions,
 * overlaps across files, ownership and symlink checks, matching. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mthp/policy.h"
#include "unit.h"

static void load_ok(const char *text, struct mthp_policy *p) {
        char err[2048];
        int r = mthp_policy_load_string("t.policy", text, p, err, sizeof(err));
        if (r < 0)
                fail_msg("unexpected error %d: %s", r, err);
}

static void load_bad(const char *text, const char *expect) {
        struct mthp_policy p;
        char err[2048];
        memset(&p, 0x5a, sizeof(p));
        struct mthp_policy before = p;
        int r = mthp_policy_load_string("t.policy", text, &p, err, sizeof(err));
        assert_int_equal(r, -EINVAL);
        assert_contains(err, expect);
        assert_memory_equal(&p, &before, sizeof(p)); /* nothing half-applied */
}

static void test_every_key(void **state) {
        (void) state;
        struct mthp_policy p;
        load_ok("[Match]\nCgroup=/system.slice/db-*.service\nUnit=redis.service\nCgroup=/batch.slice\n"
                "[Policy]\nAnon=always\nShmem=madvise\nSizes=64K-2M\nPriority=90\nMaxPressure=5%\nCollapse=yes\n",
                &p);
        assert_string_equal(p.name, "t.policy");
        assert_int_equal(p.n_cgroup, 2);
        assert_string_equal(p.cgroup[1], "/batch.slice");
        assert_int_equal(p.cgroup_line[1], 4);
        assert_int_equal(p.n_unit, 1);
        assert_int_equal(p.mode[MTHP_ANON], MTHP_POLICY_ALWAYS);
        assert_int_equal(p.mode[MTHP_SHMEM], MTHP_POLICY_MADVISE);
        assert_int_equal(p.min_kb, 64);
        assert_int_equal(p.max_kb, 2048);
        assert_int_equal(p.priority, 90);
        assert_double_equal(p.max_pressure, 5);
        assert_true(isnan(p.max_bloat));
        assert_true(p.collapse);
}

static void test_defaults(void **state) {
        (void) state;
        struct mthp_policy p;
        load_ok("[Match]\nUnit=x.service\n[Policy]\n", &p);
        assert_int_equal(p.mode[MTHP_ANON], MTHP_POLICY_AUTO);
        assert_int_equal(p.mode[MTHP_SHMEM], MTHP_POLICY_AUTO);
        assert_int_equal(p.priority, 50);
        assert_int_equal(p.min_kb, 0);
        assert_int_equal(p.max_kb, 0);
        assert_true(isnan(p.max_bloat) && isnan(p.max_pressure));
        assert_false(p.collapse);
}

static void test_errors_name_line(void **state) {
        (void) state;
        load_bad("[Match]\nUnit=x.service\n[Policy]\nAnon=sometimes\n",
                 "t.policy:4: key 'Anon' in [Policy]: expected auto, always, madvise or never, got 'sometimes'");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nPriority=101\n", "t.policy:4: key 'Priority'");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nSizes=48K\n", "t.policy:4: key 'Sizes'");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nSizes=2M-64K\n", "t.policy:4: key 'Sizes'");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nMaxBloat=lots\n", "t.policy:4: key 'MaxBloat'");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nCollapse=maybe\n", "expected yes or no, got 'maybe'");
        load_bad("[Match]\nCgroup=system.slice\n[Policy]\n", "t.policy:2: key 'Cgroup' in [Match]: expected a cgroup path");
        load_bad("[Match]\nUnit=a/b.service\n[Policy]\n", "t.policy:2: key 'Unit'");
        load_bad("[Match]\nUnit=x.service\nColour=red\n[Policy]\n", "t.policy:3: unknown key 'Colour' in [Match]");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nSpeed=max\n", "t.policy:4: unknown key 'Speed' in [Policy]");
        load_bad("[Match]\nUnit=x.service\n[Policy]\n[Extra]\n", "t.policy:4: unknown section [Extra]");
        load_bad("Anon=always\n[Match]\nUnit=x.service\n[Policy]\n", "t.policy:1: unknown section []");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nAnon=always\nAnon=never\n",
                 "t.policy:5: key 'Anon' in [Policy]: already set at line 4");
        load_bad("[Match]\nUnit=x.service\nUnit=x.service\n[Policy]\n", "t.policy:3: key 'Unit' in [Match]: 'x.service' repeats line 2");
        load_bad("[Match]\n[Policy]\nAnon=always\n", "t.policy:1: [Match]: expected at least one Cgroup= or Unit=");
        load_bad("[Match]\nUnit=x.service\n", "expected a [Policy] section");
        load_bad("[Match]\nUnit=x.service\n[Policy]\n[Match]\n", "t.policy:4: section [Match] repeated");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nnot a key\n", "t.policy:4: syntax error");
}

/* inih skips a UTF-8 byte order mark on line 1 and any isspace() before a
 * header: the section headers mthp_ini announces must be the same ones, or
 * a misspelt first section (and its keys) passes silently and a second
 * [Match] goes unnoticed. */
static void test_header_after_bom(void **state) {
        (void) state;
        struct mthp_policy p;
        load_ok("\xEF\xBB\xBF[Match]\nUnit=x.service\n[Policy]\nAnon=never\n", &p);
        assert_int_equal(p.mode[MTHP_ANON], MTHP_POLICY_NEVER);
        load_bad("\xEF\xBB\xBF[Mtach]\nUnit=y.service\n[Match]\nUnit=x.service\n[Policy]\n",
                 "t.policy:1: unknown section [Mtach]");
        load_bad("\xEF\xBB\xBF[Match]\nUnit=x.service\n[Policy]\n[Match]\n",
                 "t.policy:4: section [Match] repeated (first at line 1)");
        load_bad("[Match]\nUnit=x.service\n[Policy]\n\f[Extra]\nAnon=never\n", "t.policy:4: unknown section [Extra]");
}

static void test_contradictions(void **state) {
        (void) state;
        load_bad("[Match]\nUnit=x.service\n[Policy]\nAnon=never\nCollapse=yes\n",
                 "t.policy:5: key 'Collapse' in [Policy]: contradicts Anon=never (line 4)");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nAnon=always\nShmem=never\nMaxBloat=10%\n",
                 "t.policy:6: key 'MaxBloat' in [Policy]: has no effect");
        load_bad("[Match]\nUnit=x.service\n[Policy]\nAnon=never\nShmem=never\nSizes=64K\n",
                 "t.policy:6: key 'Sizes' in [Policy]: has no effect");
        struct mthp_policy p;
        load_ok("[Match]\nUnit=x.service\n[Policy]\nAnon=madvise\nShmem=never\nSizes=64K\n", &p);
        load_ok("[Match]\nUnit=x.service\n[Policy]\nAnon=always\nShmem=auto\nMaxBloat=50\n", &p);
}

static void test_several_errors_at_once(void **state) {
        (void) state;
        struct mthp_policy p;
        char err[2048];
        assert_int_equal(mthp_policy_load_string("t.policy", "[Match]\nUnit=x.service\n[Policy]\nAnon=x\nShmem=y\nPriority=-1\n",
                                                 &p, err, sizeof(err)),
                         -EINVAL);
        assert_contains(err, "t.policy:4:");
        assert_contains(err, "t.policy:5:");
        assert_contains(err, "t.policy:6:");
}

static void write_file(const char *dir, const char *name, const char *text, mode_t mode) {
        char path[PATH_MAX];
        snprintf(path, sizeof(path), "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, text, strlen(text)), (ssize_t) strlen(text));
        close(fd);
        assert_int_equal(chmod(path, mode), 0);
}

static char *make_dir(void) {
        static char dir[PATH_MAX];
        snprintf(dir, sizeof(dir), "%s/mthpd-test-policy-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        assert_non_null(mkdtemp(dir));
        return dir;
}

static void rm_dir(const char *dir) {
        char cmd[PATH_MAX + 16];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
}

static void test_dir_all_or_nothing(void **state) {
        (void) state;
        char *dir = make_dir();
        char err[4096];
        struct mthp_policy_set *s = NULL;
        write_file(dir, "20-b.policy", "[Match]\nCgroup=/b\n[Policy]\nAnon=never\nPriority=80\n", 0644);
        write_file(dir, "10-a.policy", "[Match]\nCgroup=/a/*\n[Policy]\nAnon=always\n", 0644);
        write_file(dir, "README", "not a policy", 0644);
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), 0);
        assert_int_equal(s->n, 2);
        assert_string_equal(s->p[0].name, "10-a"); /* file-name order */
        assert_string_equal(s->p[1].name, "20-b");
        mthp_policy_set_free(s);

        /* one bad file: nothing is loaded, and the good ones stay unread */
        write_file(dir, "30-c.policy", "[Match]\nCgroup=/c\n[Policy]\nPriority=high\n", 0644);
        s = (struct mthp_policy_set *) 0x1;
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
        assert_ptr_equal(s, (struct mthp_policy_set *) 0x1);
        assert_contains(err, "/30-c.policy:4: key 'Priority' in [Policy]: expected a whole number from 0 to 100, got 'high'");
        unlink(strcat(strcpy(err, dir), "/30-c.policy"));

        /* the same pattern in two files: both places named */
        write_file(dir, "40-d.policy", "[Match]\nUnit=u.service\nCgroup=/b\n[Policy]\n", 0644);
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
        assert_contains(err, "/40-d.policy:3: key 'Cgroup' in [Match]: '/b' is already matched by ");
        assert_contains(err, "/20-b.policy:2");
        rm_dir(dir);
}

static void test_dir_permissions(void **state) {
        (void) state;
        char *dir = make_dir();
        char err[4096], path[PATH_MAX], outside[PATH_MAX];
        struct mthp_policy_set *s = NULL;
        write_file(dir, "a.policy", "[Match]\nCgroup=/a\n[Policy]\n", 0664);
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
        assert_contains(err, "/a.policy: writable by its group (mode 0664)");
        assert_int_equal(mthp_policy_load_dir(dir, false, &s, err, sizeof(err)), 0); /* check off */
        mthp_policy_set_free(s);
        write_file(dir, "a.policy", "[Match]\nCgroup=/a\n[Policy]\n", 0646);
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
        assert_contains(err, "writable by everyone");
        write_file(dir, "a.policy", "[Match]\nCgroup=/a\n[Policy]\n", 0644);

        /* a symlink out of the directory is refused; one inside is fine */
        snprintf(outside, sizeof(outside), "%s.outside", dir);
        int fd = open(outside, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(write(fd, "[Match]\nCgroup=/z\n[Policy]\n", 27), 27);
        close(fd);
        snprintf(path, sizeof(path), "%s/z.policy", dir);
        assert_int_equal(symlink(outside, path), 0);
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
        assert_contains(err, "/z.policy: symbolic link to ");
        assert_contains(err, "outside");
        unlink(path);
        unlink(outside);
        assert_int_equal(symlink("a.policy", path), 0); /* inside, but the same patterns twice */
        assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
        assert_contains(err, "is already matched by");
        unlink(path);

        /* owned by someone else (only root can make such a file) */
        if (geteuid() == 0) {
                snprintf(path, sizeof(path), "%s/a.policy", dir);
                assert_int_equal(chown(path, 65534, 65534), 0);
                assert_int_equal(mthp_policy_load_dir(dir, true, &s, err, sizeof(err)), -EINVAL);
                assert_contains(err, "/a.policy: owned by uid 65534, expected root");
        }
        rm_dir(dir);

        /* no directory at all: no policies */
        assert_int_equal(mthp_policy_load_dir("/nonexistent/mthpd-policy.d", true, &s, err, sizeof(err)), 0);
        assert_int_equal(s->n, 0);
        mthp_policy_set_free(s);
}

static void test_match(void **state) {
        (void) state;
        struct mthp_policy p[3];
        load_ok("[Match]\nCgroup=/system.slice/db-*.service\n[Policy]\n", &p[0]);
        load_ok("[Match]\nUnit=redis.service\n[Policy]\n", &p[1]);
        load_ok("[Match]\nCgroup=/batch.slice\n[Policy]\n", &p[2]);
        struct mthp_policy_set s = { .n = 3, .p = p };
        char m[256];
        assert_int_equal(mthp_policy_match(&s, "/system.slice/db-1.service", m, sizeof(m)), 0);
        assert_string_equal(m, "/system.slice/db-1.service");
        /* '*' does not cross '/' ... */
        assert_int_equal(mthp_policy_match(&s, "/system.slice/db-x/y.service", m, sizeof(m)), -1);
        /* ... but a process in a child cgroup belongs to the nearest matching ancestor */
        assert_int_equal(mthp_policy_match(&s, "/system.slice/db-1.service/worker", m, sizeof(m)), 0);
        assert_string_equal(m, "/system.slice/db-1.service");
        assert_int_equal(mthp_policy_match(&s, "/a.slice/b.slice/redis.service", m, sizeof(m)), 1);
        assert_string_equal(m, "/a.slice/b.slice/redis.service");
        assert_int_equal(mthp_policy_match(&s, "/batch.slice/job-7.scope", m, sizeof(m)), 2);
        assert_string_equal(m, "/batch.slice");
        assert_int_equal(mthp_policy_match(&s, "/", m, sizeof(m)), -1);
        assert_int_equal(mthp_policy_match(&s, "/user.slice", m, sizeof(m)), -1);
        assert_int_equal(mthp_policy_match(&s, "", m, sizeof(m)), -1);
        assert_int_equal(mthp_policy_match(NULL, "/batch.slice", m, sizeof(m)), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_every_key),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_errors_name_line),
        cmocka_unit_test(test_header_after_bom),
                cmocka_unit_test(test_contradictions),
                cmocka_unit_test(test_several_errors_at_once),
                cmocka_unit_test(test_dir_all_or_nothing),
                cmocka_unit_test(test_dir_permissions),
                cmocka_unit_test(test_match),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
