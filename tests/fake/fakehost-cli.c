/* SPDX-License-Identifier: MIT */
/* fakehost: build and drive a fake host tree from shell-based tests.
 * Links fakesysfs, so "write" has kernel semantics like any foreign writer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakehost.h"

static void usage(FILE *f) {
        fputs("usage:\n"
              "  fakehost create DIR [--layout v2|hybrid|v1|none] [--no-psi] [--task-delayacct]\n"
              "                      [--kernel 6.18|6.1|6.8|6.11|7.2|arm64-16k|arm64-64k]\n"
              "  fakehost bump DIR [TARGET (--add N | --set N)]... [--pgfault N] [--psi-some PCT]\n"
              "                    [--psi-total USEC] [--mem-available-kb N]\n"
              "      TARGET: --vmstat KEY | --meminfo KEY | --size KB --stat NAME | --file PATH --key KEY\n"
              "  fakehost write DIR KNOB VALUE     write as another process would (kernel semantics)\n"
              "  fakehost read DIR KNOB            print the selected value (or the file, if plain)\n"
              "  fakehost fail DIR KNOB ERRNO|none make writes to KNOB fail (EINVAL, EBUSY, EACCES, EIO...)\n"
              "  fakehost cgroup DIR NAME          add a cgroup; prints its memory directory (host path)\n"
              "  fakehost rmcgroup DIR NAME        remove a cgroup from every hierarchy\n"
              "  fakehost remove DIR\n"
              "KNOB: host path (/sys/...), path below the THP dir (hugepages-64kB/enabled), or id (64K/anon,\n"
              "      2M/shmem, global/defrag).\n",
              f);
}

static int fail(const char *what, int r) {
        fprintf(stderr, "fakehost: %s: %s (%s)\n", what, strerror(-r), fakehost_errno_name(r));
        return 1;
}

static int parse_u64(const char *s, unsigned long long *v) {
        char *end;
        errno = 0;
        *v = strtoull(s, &end, 10);
        return end == s || *end || errno || *s == '-' ? -EINVAL : 0;
}

static int parse_i64(const char *s, long long *v) {
        char *end;
        errno = 0;
        *v = strtoll(s, &end, 10);
        return end == s || *end || errno ? -EINVAL : 0;
}

static int parse_kb(const char *s, unsigned *kb) {
        char *end;
        unsigned long v = strtoul(s, &end, 10);
        unsigned long mult = 1;
        if (*end == 'M')
                mult = 1024, end++;
        else if (*end == 'K' || *end == 'k')
                end++;
        if (*end == 'B')
                end++;
        if (end == s || *end || v == 0)
                return -EINVAL;
        *kb = (unsigned) (v * mult);
        return 0;
}

static int cmd_create(int argc, char **argv) {
        struct fakehost_opts o = { 0 };
        for (int i = 3; i < argc; i++) {
                if (strcmp(argv[i], "--layout") == 0 && i + 1 < argc) {
                        if (fakehost_parse_layout(argv[++i], &o.cg_layout) < 0) {
                                fprintf(stderr, "fakehost: unknown layout '%s'\n", argv[i]);
                                return 2;
                        }
                } else if (strcmp(argv[i], "--kernel") == 0 && i + 1 < argc) {
                        if (fakehost_parse_kernel(argv[++i], &o.kernel) < 0) {
                                fprintf(stderr, "fakehost: unknown kernel profile '%s'\n", argv[i]);
                                return 2;
                        }
                } else if (strcmp(argv[i], "--no-psi") == 0)
                        o.no_psi = true;
                else if (strcmp(argv[i], "--task-delayacct") == 0)
                        o.task_delayacct = true;
                else {
                        usage(stderr);
                        return 2;
                }
        }
        int r = fakehost_create(argv[2], &o);
        return r < 0 ? fail(argv[2], r) : 0;
}

struct target {
        enum { T_NONE, T_KV, T_SIZE } kind;
        const char *file, *key;
        unsigned kb;
};

static int apply(const char *dir, const struct target *t, bool add, const char *arg) {
        long long delta;
        unsigned long long value;
        int r = add ? parse_i64(arg, &delta) : parse_u64(arg, &value);
        if (r < 0)
                return r;
        if (t->kind == T_KV)
                return add ? fakehost_add_counter(dir, t->file, t->key, delta)
                           : fakehost_set_counter(dir, t->file, t->key, value);
        if (t->kind == T_SIZE)
                return add ? fakehost_add_size_stat(dir, t->kb, t->key, delta)
                           : fakehost_set_size_stat(dir, t->kb, t->key, value);
        return -EINVAL;
}

static int cmd_bump(int argc, char **argv) {
        const char *dir = argv[2];
        struct target t = { T_NONE, NULL, NULL, 0 };
        double psi_some = -1;
        long long psi_total = -1;
        int r = 0;

        for (int i = 3; i < argc && r >= 0; i++) {
                const char *opt = argv[i], *arg = i + 1 < argc ? argv[i + 1] : NULL;
                if (!arg) {
                        fprintf(stderr, "fakehost: %s needs an argument\n", opt);
                        return 2;
                }
                i++;
                if (strcmp(opt, "--vmstat") == 0)
                        t = (struct target) { T_KV, "/proc/vmstat", arg, 0 };
                else if (strcmp(opt, "--meminfo") == 0)
                        t = (struct target) { T_KV, "/proc/meminfo", arg, 0 };
                else if (strcmp(opt, "--file") == 0)
                        t = (struct target) { T_KV, arg, NULL, 0 };
                else if (strcmp(opt, "--key") == 0 && t.kind == T_KV)
                        t.key = arg;
                else if (strcmp(opt, "--size") == 0) {
                        t = (struct target) { T_SIZE, NULL, NULL, 0 };
                        if (parse_kb(arg, &t.kb) < 0) {
                                fprintf(stderr, "fakehost: bad size '%s'\n", arg);
                                return 2;
                        }
                } else if (strcmp(opt, "--stat") == 0 && t.kind == T_SIZE)
                        t.key = arg;
                else if ((strcmp(opt, "--add") == 0 || strcmp(opt, "--set") == 0) && t.kind != T_NONE && t.key) {
                        r = apply(dir, &t, opt[2] == 'a', arg);
                        if (r < 0) {
                                char what[256];
                                snprintf(what, sizeof(what), "%s %s %s", t.key, opt, arg);
                                return fail(what, r);
                        }
                } else if (strcmp(opt, "--pgfault") == 0)
                        r = apply(dir, &(struct target) { T_KV, "/proc/vmstat", "pgfault", 0 }, true, arg);
                else if (strcmp(opt, "--mem-available-kb") == 0)
                        r = apply(dir, &(struct target) { T_KV, "/proc/meminfo", "MemAvailable", 0 }, false, arg);
                else if (strcmp(opt, "--psi-some") == 0)
                        psi_some = strtod(arg, NULL);
                else if (strcmp(opt, "--psi-total") == 0) {
                        if (parse_i64(arg, &psi_total) < 0)
                                return 2;
                } else {
                        usage(stderr);
                        return 2;
                }
                if (r < 0)
                        return fail(opt, r);
        }
        if (psi_some >= 0 || psi_total >= 0) {
                char text[512];
                double a10 = 0;
                unsigned long long total = 0;
                r = fakehost_read_file(dir, "/proc/pressure/memory", text, sizeof(text));
                if (r < 0)
                        return fail("/proc/pressure/memory", r);
                if (sscanf(text, "some avg10=%lf avg60=%*f avg300=%*f total=%llu", &a10, &total) != 2)
                        return fail("/proc/pressure/memory", -EBADMSG);
                r = fakehost_set_psi(dir, psi_some >= 0 ? psi_some : a10,
                                     psi_total >= 0 ? (unsigned long long) psi_total : total);
                if (r < 0)
                        return fail("--psi-some", r);
        }
        return 0;
}

int main(int argc, char **argv) {
        if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
                usage(stdout);
                return 0;
        }
        if (argc < 3) {
                usage(stderr);
                return 2;
        }
        const char *cmd = argv[1], *dir = argv[2];
        int r;

        if (strcmp(cmd, "create") == 0)
                return cmd_create(argc, argv);
        if (strcmp(cmd, "bump") == 0)
                return cmd_bump(argc, argv);
        if (strcmp(cmd, "remove") == 0 && argc == 3) {
                r = fakehost_remove(dir);
                return r < 0 ? fail(dir, r) : 0;
        }
        if (strcmp(cmd, "write") == 0 && argc == 5) {
                r = fakehost_knob_write(dir, argv[3], argv[4]);
                if (r < 0) {
                        char what[512];
                        snprintf(what, sizeof(what), "write '%s' to %s", argv[4], argv[3]);
                        return fail(what, r);
                }
                return 0;
        }
        if (strcmp(cmd, "read") == 0 && argc == 4) {
                char value[64], path[4096], text[4096];
                r = fakehost_knob_read(dir, argv[3], value, sizeof(value));
                if (r == -EBADMSG) {  /* a plain file */
                        r = fakehost_knob_path(argv[3], path, sizeof(path));
                        if (r == 0)
                                r = fakehost_read_file(dir, path, text, sizeof(text));
                        if (r >= 0) {
                                fputs(text, stdout);
                                return 0;
                        }
                }
                if (r < 0)
                        return fail(argv[3], r);
                puts(value);
                return 0;
        }
        if (strcmp(cmd, "fail") == 0 && argc == 5) {
                r = fakehost_knob_fail(dir, argv[3], strcmp(argv[4], "none") == 0 ? NULL : argv[4]);
                return r < 0 ? fail(argv[3], r) : 0;
        }
        if (strcmp(cmd, "cgroup") == 0 && argc == 4) {
                char memdir[4096];
                r = fakehost_add_cgroup(dir, argv[3], memdir, sizeof(memdir));
                if (r < 0)
                        return fail(argv[3], r);
                puts(memdir);
                return 0;
        }
        if (strcmp(cmd, "rmcgroup") == 0 && argc == 4) {
                r = fakehost_remove_cgroup(dir, argv[3]);
                return r < 0 ? fail(argv[3], r) : 0;
        }
        usage(stderr);
        return 2;
}
