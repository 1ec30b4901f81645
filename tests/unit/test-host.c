/* SPDX-License-Identifier: MIT */
/* Host root: every path resolves below it, symlinks included. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "unit.h"
#include "mthp/util.h"
#include "mthp/procfs.h"

static void link_in_tree(const struct fixture *f, const char *target, const char *linkpath) {
        char p[PATH_MAX];
        assert_ok(fakehost_path(f->dir, linkpath, p, sizeof(p)));
        if (symlink(target, p) < 0)
                fail_msg("symlink %s -> %s: %s", p, target, strerror(errno));
}

static void test_open_fake_root(void **state) {
        struct fixture *f = *state;
        assert_false(f->host->real);
        assert_string_equal(f->host->root, f->dir);
        assert_true(f->host->root_fd >= 0);
}

static void test_open_real_root(void **state) {
        (void) state;
        struct mthp_host *h;
        assert_ok(mthp_host_open(NULL, &h));
        assert_true(h->real);
        assert_string_equal(h->root, "/");
        mthp_host_free(h);
        assert_ok(mthp_host_open("/", &h));
        assert_true(h->real);
        mthp_host_free(h);
}

static void test_open_missing_root(void **state) {
        struct fixture *f = *state;
        char p[PATH_MAX + 16];
        struct mthp_host *h = NULL;
        snprintf(p, sizeof(p), "%s/nonexistent", f->dir);
        assert_int_equal(mthp_host_open(p, &h), -ENOENT);
        snprintf(p, sizeof(p), "%s/proc/vmstat", f->dir);
        assert_int_equal(mthp_host_open(p, &h), -ENOTDIR);
        assert_null(h);
}

static void test_read_resolves_under_root(void **state) {
        struct fixture *f = *state;
        char buf[16384];
        assert_ok(fakehost_set_counter(f->dir, "/proc/vmstat", "pgfault", 4242424242ULL));
        int n = mthp_host_read(f->host, "/proc/vmstat", buf, sizeof(buf));
        assert_true(n > 0);
        assert_string_equal(buf, fixture_file(f->dir, "/proc/vmstat"));
        assert_contains(buf, "\npgfault 4242424242\n");
        /* leading slashes and the root itself */
        assert_int_equal(mthp_host_read(f->host, "///proc/vmstat", buf, sizeof(buf)), n);
        assert_true(mthp_host_exists(f->host, "/"));
        assert_true(mthp_host_exists(f->host, THP "/hugepages-64kB/stats"));
        assert_false(mthp_host_exists(f->host, THP "/hugepages-8kB/enabled"));
        assert_int_equal(mthp_host_read(f->host, "/proc/nonexistent", buf, sizeof(buf)), -ENOENT);
}

static void test_absolute_symlink_stays_inside(void **state) {
        struct fixture *f = *state;
        char buf[16384];
        assert_ok(fakehost_set_counter(f->dir, "/proc/vmstat", "pgfault", 777));
        /* /sys is full of absolute-looking links; they must resolve in the fake */
        link_in_tree(f, "/proc/vmstat", "/sys/vmstat-link");
        assert_true(mthp_host_read(f->host, "/sys/vmstat-link", buf, sizeof(buf)) > 0);
        assert_contains(buf, "\npgfault 777\n");
        /* a directory link, then a path through it */
        link_in_tree(f, "/sys/kernel/mm", "/sys/mm-link");
        assert_true(mthp_host_read(f->host, "/sys/mm-link/transparent_hugepage/enabled", buf, sizeof(buf)) > 0);
        assert_string_equal(buf, "always [madvise] never\n");
        /* a target that exists only on the real host is not found */
        assert_int_equal(access("/etc/passwd", F_OK), 0);
        link_in_tree(f, "/etc/passwd", "/sys/passwd-link");
        assert_int_equal(mthp_host_read(f->host, "/sys/passwd-link", buf, sizeof(buf)), -ENOENT);
}

static void test_dotdot_stays_inside(void **state) {
        struct fixture *f = *state;
        char buf[16384];
        link_in_tree(f, "../../../../../../../../etc/passwd", "/sys/escape");
        assert_int_equal(mthp_host_read(f->host, "/sys/escape", buf, sizeof(buf)), -ENOENT);
        assert_int_equal(mthp_host_read(f->host, "/../../../../etc/passwd", buf, sizeof(buf)), -ENOENT);
        /* .. above the root is the root */
        assert_true(mthp_host_read(f->host, "/../../proc/meminfo", buf, sizeof(buf)) > 0);
        assert_contains(buf, "MemTotal:");
}

static void test_read_fd_truncates(void **state) {
        struct fixture *f = *state;
        char small[8];
        int fd = mthp_host_open_file(f->host, THP "/defrag", O_RDONLY);
        assert_true(fd >= 0);
        assert_int_equal(mthp_read_fd(fd, small, sizeof(small)), 7);
        assert_string_equal(small, "always ");
        /* preads from 0 each time, like a tick */
        assert_int_equal(mthp_read_fd(fd, small, sizeof(small)), 7);
        assert_string_equal(small, "always ");
        assert_int_equal(mthp_read_fd(fd, small, 0), -ENOBUFS);
        close(fd);
}

static void test_write_has_kernel_semantics(void **state) {
        struct fixture *f = *state;
        const char *knob = THP "/hugepages-64kB/enabled";
        assert_int_equal(mthp_host_write(f->host, knob, "always"), 0);
        assert_string_equal(fixture_file(f->dir, knob), "[always] inherit madvise never\n");
        assert_int_equal(mthp_host_write(f->host, knob, "sometimes"), -EINVAL);
        assert_string_equal(fixture_file(f->dir, knob), "[always] inherit madvise never\n");
        /* plain attribute files just take the value */
        assert_int_equal(mthp_host_write(f->host, THP "/use_zero_page", "0\n"), 0);
        assert_string_equal(fixture_file(f->dir, THP "/use_zero_page"), "0\n");
        /* read-only attribute */
        assert_int_equal(mthp_host_write(f->host, THP "/hpage_pmd_size", "4096"), -EACCES);
        assert_string_equal(fixture_file(f->dir, THP "/hpage_pmd_size"), "2097152\n");
        assert_int_equal(mthp_host_write(f->host, THP "/nonexistent", "x"), -ENOENT);
}

/* A knob holds its old value until the write lands, as sysfs does: a
 * writer killed between its open and its write (kill -9) must not leave a
 * knob that reads empty. mthpd's open used O_TRUNC, which a fake tree's
 * plain file obeys: the next mthpd then refused to start (faults storm). */
struct mid_write {
        const char *dir;
        char seen[256];
        unsigned calls;
};

static int read_mid_write(void *user, const char *host_path, const char *value) {
        struct mid_write *m = user;
        (void) value;
        m->calls++;
        snprintf(m->seen, sizeof(m->seen), "%s", fixture_file(m->dir, host_path));
        return 0;
}

static void test_write_never_empties_the_knob(void **state) {
        struct fixture *f = *state;
        const char *knob = THP "/hugepages-64kB/enabled";
        struct mid_write m = { .dir = f->dir };
        const char *before = "always inherit madvise [never]\n";
        assert_string_equal(fixture_file(f->dir, knob), before);
        fakehost_set_write_hook(read_mid_write, &m);
        int r = mthp_host_write(f->host, knob, "always");
        fakehost_set_write_hook(NULL, NULL);
        assert_int_equal(r, 0);
        assert_int_equal(m.calls, 1);
        assert_string_equal(m.seen, before);
        assert_string_equal(fixture_file(f->dir, knob), "[always] inherit madvise never\n");
}

struct kv {
        unsigned n;
        char key[8][32];
        unsigned long long value[8];
};

static void kv_collect(void *user, const char *key, unsigned long long value) {
        struct kv *kv = user;
        if (kv->n < 8) {
                snprintf(kv->key[kv->n], sizeof(kv->key[0]), "%s", key);
                kv->value[kv->n++] = value;
        }
}

static void test_parse_kv(void **state) {
        (void) state;
        struct kv kv = { 0 };
        mthp_parse_kv("pgfault 123\n"
                      "MemAvailable:   24220344 kB\n"
                      "HugePages_Total:       0\n"
                      "no_value\n"
                      "bad x\n"
                      "\n"
                      "a_key_that_is_far_too_long_to_fit_in_the_sixty_four_byte_key_buffer_x 1\n"
                      "tab\t9\n"
                      "last 18446744073709551615",
                      kv_collect, &kv);
        assert_int_equal(kv.n, 5);
        assert_string_equal(kv.key[0], "pgfault");
        assert_int_equal(kv.value[0], 123);
        assert_string_equal(kv.key[1], "MemAvailable");
        assert_int_equal(kv.value[1], 24220344);
        assert_string_equal(kv.key[2], "HugePages_Total");
        assert_int_equal(kv.value[2], 0);
        assert_string_equal(kv.key[3], "tab");
        assert_int_equal(kv.value[3], 9);
        assert_string_equal(kv.key[4], "last");
        assert_true(kv.value[4] == 18446744073709551615ULL);
}

static void test_parse_kv_real_files(void **state) {
        struct fixture *f = *state;
        struct kv kv = { 0 };
        char buf[16384];
        assert_ok(fakehost_set_meminfo(f->dir, "MemTotal", 1000));
        assert_true(mthp_host_read(f->host, "/proc/meminfo", buf, sizeof(buf)) > 0);
        mthp_parse_kv(buf, kv_collect, &kv);
        assert_int_equal(kv.n, 8);
        assert_string_equal(kv.key[0], "MemTotal");
        assert_int_equal(kv.value[0], 1000);
        assert_string_equal(kv.key[1], "MemFree");
}

static void test_strcpy(void **state) {
        (void) state;
        char buf[6];
        assert_int_equal(mthp_strcpy(buf, sizeof(buf), "hello"), 0);
        assert_string_equal(buf, "hello");
        assert_int_equal(mthp_strcpy(buf, sizeof(buf), "hello!"), -ENAMETOOLONG);
        assert_string_equal(buf, "hello");
        assert_int_equal(mthp_strcpy(buf, 0, "x"), -ENAMETOOLONG);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_open_fake_root, fixture_setup, fixture_teardown),
                cmocka_unit_test(test_open_real_root),
                cmocka_unit_test_setup_teardown(test_open_missing_root, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_read_resolves_under_root, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_absolute_symlink_stays_inside, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_dotdot_stays_inside, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_read_fd_truncates, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_write_never_empties_the_knob, fixture_setup, fixture_teardown),
                cmocka_unit_test_setup_teardown(test_write_has_kernel_semantics, fixture_setup, fixture_teardown),
                cmocka_unit_test(test_parse_kv),
                cmocka_unit_test_setup_teardown(test_parse_kv_real_files, fixture_setup, fixture_teardown),
                cmocka_unit_test(test_strcpy),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
