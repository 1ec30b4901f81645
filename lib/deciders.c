/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "mthp/deciders.h"
#include "mthp/escape.h"
#include "mthp/log.h"
#include "mthp/safe-io.h"
#include "mthp/util.h"

#define TEXT_MAX 65536          /* a tuned.conf or unit file larger than this is cut */
#define DIR_ENTRIES_MAX 4096    /* per directory: bounded on any host */
#define INCLUDE_DEPTH_MAX 5

const char *mthp_decider_source_name(enum mthp_decider_source s) {
        static const char *const n[] = { "cmdline", "tuned", "unit", "tmpfiles", "sysfsutils", "udev", "rc.local" };
        return n[s];
}

static struct mthp_decider_setting *add(struct mthp_deciders *d, enum mthp_decider_source src, const char *origin,
                                        const char *text, size_t text_len, const char *value, uint64_t knobs) {
        if (d->n >= MTHP_DECIDERS_MAX)
                return NULL;
        struct mthp_decider_setting *s = &d->s[d->n++];
        memset(s, 0, sizeof(*s));
        s->source = src;
        /* unit and profile files, /proc/cmdline hold any byte: everything
         * here reaches the log, status and JSON (mthp/escape.h) */
        mthp_escape(s->origin, sizeof(s->origin), origin);
        mthp_escape_n(s->text, sizeof(s->text), text, text_len);
        mthp_escape(s->value, sizeof(s->value), value ? value : "");
        s->knobs = knobs;
        return s;
}

static uint64_t knobs_of_type(const struct mthp_caps *caps, enum mthp_knob_type type) {
        uint64_t m = 0;
        for (unsigned i = 0; i < caps->n_knobs && i < 64; i++)
                if (caps->knobs[i].type == type)
                        m |= 1ULL << i;
        return m;
}

/* "16K-64K,512K" of a thp_anon= group: the knobs of type whose size is in it. */
static uint64_t knobs_in_sizes(const struct mthp_caps *caps, enum mthp_knob_type type, const char *list) {
        uint64_t m = 0;
        char buf[128];
        if (mthp_strcpy(buf, sizeof(buf), list) < 0)
                return 0;
        for (char *save = NULL, *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
                unsigned lo, hi;
                char *dash = strchr(item, '-');
                if (dash)
                        *dash = 0;
                if (mthp_parse_size(item, &lo) < 0 || (dash && mthp_parse_size(dash + 1, &hi) < 0))
                        continue;
                if (!dash)
                        hi = lo;
                for (unsigned i = 0; i < caps->n_knobs && i < 64; i++)
                        if (caps->knobs[i].type == type && caps->knobs[i].size_kb >= lo && caps->knobs[i].size_kb <= hi)
                                m |= 1ULL << i;
        }
        return m;
}

void mthp_deciders_parse_cmdline(const char *cmdline, const struct mthp_caps *caps, struct mthp_deciders *d) {
        static const char origin[] = "kernel command line";
        const char *p = cmdline;
        while (*p) {
                while (isspace((unsigned char) *p))
                        p++;
                size_t len = strcspn(p, " \t\n");
                if (!len)
                        break;
                if (len == 2 && strncmp(p, "--", 2) == 0)
                        break;          /* the rest is init's */
                char tok[256];
                snprintf(tok, sizeof(tok), "%.*s", (int) len, p);
                char *eq = strchr(tok, '=');
                if (eq) {
                        *eq = 0;
                        const char *val = eq + 1;
                        if (strcmp(tok, "transparent_hugepage") == 0)
                                add(d, MTHP_DECIDER_CMDLINE, origin, p, len, val, knobs_of_type(caps, MTHP_KNOB_ENABLED));
                        else if (strcmp(tok, "transparent_hugepage_shmem") == 0)
                                add(d, MTHP_DECIDER_CMDLINE, origin, p, len, val,
                                    knobs_of_type(caps, MTHP_KNOB_SHMEM_ENABLED));
                        else if (strcmp(tok, "transparent_hugepage_tmpfs") == 0)
                                add(d, MTHP_DECIDER_CMDLINE, origin, p, len, val, 0); /* tmpfs huge= default */
                        else if (strcmp(tok, "thp_anon") == 0 || strcmp(tok, "thp_shmem") == 0) {
                                enum mthp_knob_type type = tok[4] == 'a' ? MTHP_KNOB_SIZE_ANON : MTHP_KNOB_SIZE_SHMEM;
                                /* one setting per "SIZES:STATE" group */
                                char groups[256];
                                mthp_strcpy(groups, sizeof(groups), val);
                                for (char *save = NULL, *g = strtok_r(groups, ";", &save); g;
                                     g = strtok_r(NULL, ";", &save)) {
                                        char text[300];
                                        char *colon = strrchr(g, ':');
                                        snprintf(text, sizeof(text), "%s=%s", tok, g);
                                        if (!colon) {
                                                add(d, MTHP_DECIDER_CMDLINE, origin, text, strlen(text), "", 0);
                                                continue;
                                        }
                                        *colon = 0;
                                        add(d, MTHP_DECIDER_CMDLINE, origin, text, strlen(text), colon + 1,
                                            knobs_in_sizes(caps, type, g));
                                }
                        }
                }
                p += len;
        }
}

/* ---- tuned ---- */

static bool is_tuned_process(const struct mthp_host *h, const char *pid) {
        char path[300], buf[512];
        snprintf(path, sizeof(path), "/proc/%s/comm", pid);
        if (mthp_host_read(h, path, buf, sizeof(buf)) > 0 && strcmp(buf, "tuned\n") == 0)
                return true;
        /* python3 /usr/sbin/tuned: argv[0] or argv[1] */
        snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
        int n = mthp_host_read(h, path, buf, sizeof(buf));
        for (int off = 0, arg = 0; n > 0 && off < n && arg < 2; arg++) {
                const char *a = buf + off, *base = strrchr(a, '/');
                if (strcmp(base ? base + 1 : a, "tuned") == 0)
                        return true;
                off += (int) strlen(a) + 1;
        }
        return false;
}

/* A directory of the host (through its root) to read, or NULL. */
static DIR *host_opendir(const struct mthp_host *h, const char *path) {
        int fd = mthp_host_open_file(h, path, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return NULL;
        DIR *dir = fdopendir(fd);
        if (!dir)
                close(fd);
        return dir;
}

static int find_tuned(const struct mthp_host *h) {
        DIR *dir = host_opendir(h, "/proc");
        if (!dir)
                return 0;
        int found = 0;
        struct dirent *de;
        for (unsigned n = 0; !found && n < 1u << 20 && (de = readdir(dir)); n++)
                if (isdigit((unsigned char) de->d_name[0]) && is_tuned_process(h, de->d_name))
                        found = atoi(de->d_name);
        closedir(dir);
        return found;
}

static char *trim(char *s) {
        while (isspace((unsigned char) *s))
                s++;
        size_t n = strlen(s);
        while (n && isspace((unsigned char) s[n - 1]))
                s[--n] = 0;
        return s;
}

static uint64_t knobs_at_path(const struct mthp_caps *caps, const char *pattern) {
        uint64_t m = 0;
        for (unsigned i = 0; i < caps->n_knobs && i < 64; i++)
                if (strcmp(caps->knobs[i].path, pattern) == 0 || fnmatch(pattern, caps->knobs[i].path, 0) == 0)
                        m |= 1ULL << i;
        return m;
}

static int read_alloc(const struct mthp_host *h, const char *path, char **text) {
        *text = malloc(TEXT_MAX);
        if (!*text)
                return -ENOMEM;
        int r = mthp_host_read(h, path, *text, TEXT_MAX);
        if (r < 0) {
                free(*text);
                *text = NULL;
        }
        return r;
}

static void read_profile(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d,
                         const char *profile, int depth) {
        static const char *const dirs[] = { "/etc/tuned/profiles", "/etc/tuned", "/usr/lib/tuned/profiles",
                                            "/usr/lib/tuned" };
        char path[MTHP_PATH_MAX], origin[MTHP_DECIDER_TEXT_MAX];
        char *text = NULL;
        if (depth > INCLUDE_DEPTH_MAX || !*profile || strchr(profile, '/') || strstr(profile, ".."))
                return;
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !text; i++) {
                snprintf(path, sizeof(path), "%s/%s/tuned.conf", dirs[i], profile);
                (void) read_alloc(h, path, &text);
        }
        if (!text)
                return;
        snprintf(origin, sizeof(origin), "tuned profile '%.40s' (%.120s)", profile, path);
        char section[32] = "";
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *l = trim(line);
                if (*l == '#' || *l == ';' || !*l)
                        continue;
                if (*l == '[') {
                        snprintf(section, sizeof(section), "%.*s", (int) strcspn(l + 1, "]"), l + 1);
                        continue;
                }
                char *eq = strchr(l, '=');
                if (!eq)
                        continue;
                *eq = 0;
                char *key = trim(l), *val = trim(eq + 1);
                char shown[MTHP_DECIDER_TEXT_MAX];
                snprintf(shown, sizeof(shown), "[%s] %s=%s", section, key, val);
                if (strcmp(section, "main") == 0 && strcmp(key, "include") == 0) {
                        /* "include=a, b": the parents' settings, this one's win (listed after) */
                        char inc[256];
                        mthp_strcpy(inc, sizeof(inc), val);
                        for (char *s2 = NULL, *p = strtok_r(inc, ", ", &s2); p; p = strtok_r(NULL, ", ", &s2))
                                read_profile(h, caps, d, p, depth + 1);
                } else if (strcmp(section, "vm") == 0 &&
                           (strcmp(key, "transparent_hugepages") == 0 || strcmp(key, "transparent_hugepage") == 0))
                        add(d, MTHP_DECIDER_TUNED, origin, shown, strlen(shown), val,
                            knobs_of_type(caps, MTHP_KNOB_ENABLED));
                else if (strcmp(section, "vm") == 0 && strcmp(key, "transparent_hugepage.defrag") == 0)
                        add(d, MTHP_DECIDER_TUNED, origin, shown, strlen(shown), val,
                            knobs_of_type(caps, MTHP_KNOB_DEFRAG));
                else if (strcmp(section, "sysfs") == 0 && strncmp(key, MTHP_THP_DIR "/", strlen(MTHP_THP_DIR) + 1) == 0)
                        add(d, MTHP_DECIDER_TUNED, origin, shown, strlen(shown), val, knobs_at_path(caps, key));
                else if (strcmp(section, "bootloader") == 0 && strcmp(key, "cmdline") == 0 &&
                         strstr(val, "transparent_hugepage"))
                        add(d, MTHP_DECIDER_TUNED, origin, shown, strlen(shown), "", 0); /* next boot's */
        }
        free(text);
}

static void read_tuned(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d) {
        char buf[256];
        d->tuned_installed = mthp_host_exists(h, "/etc/tuned") || mthp_host_exists(h, "/usr/lib/tuned");
        d->tuned_pid = find_tuned(h);
        if (mthp_host_read(h, "/etc/tuned/active_profile", buf, sizeof(buf)) <= 0)
                return;
        mthp_escape(d->tuned_profile, sizeof(d->tuned_profile), trim(buf));
        /* "a b": tuned merges several profiles, later ones win */
        char list[sizeof(d->tuned_profile)];
        memcpy(list, d->tuned_profile, sizeof(list));
        for (char *save = NULL, *p = strtok_r(list, " ", &save); p; p = strtok_r(NULL, " ", &save))
                read_profile(h, caps, d, p, 0);
}

/* ---- systemd units ---- */

/* Each THP sysfs path a shell line writes ("echo VALUE > PATH", "echo
 * VALUE | tee PATH": the echo before the path gives the value), as one
 * setting "LABEL writes PATH". */
static void shell_writes(const struct mthp_caps *caps, struct mthp_deciders *d, enum mthp_decider_source src,
                         const char *origin, const char *label, const char *line) {
        const char *p = line;
        while ((p = strstr(p, MTHP_THP_DIR "/"))) {
                size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./-*");
                char path[MTHP_PATH_MAX], value[MTHP_VALUE_MAX] = "";
                snprintf(path, sizeof(path), "%.*s", (int) len, p);
                const char *e = NULL;
                for (const char *q = line; (q = strstr(q, "echo ")) && q < p; q++)
                        e = q;
                if (e) {
                        e += 5;
                        while (*e == ' ' || *e == '\'' || *e == '"')
                                e++;
                        snprintf(value, sizeof(value), "%.*s", (int) strcspn(e, " '\";|>"), e);
                }
                char text[MTHP_DECIDER_TEXT_MAX];
                snprintf(text, sizeof(text), "%.40s writes %.*s", label, 140, path);
                add(d, src, origin, text, strlen(text), value, knobs_at_path(caps, path));
                p += len;
        }
}

static void unit_line(const struct mthp_caps *caps, struct mthp_deciders *d, const char *origin, const char *line) {
        if (strncmp(line, "MemoryTHP=", 10) == 0) {
                add(d, MTHP_DECIDER_UNIT, origin, line, strlen(line), line + 10, 0);
                return;
        }
        if (strncmp(line, "Exec", 4) != 0)
                return;
        char label[32];
        int kl = (int) strcspn(line, "=");
        snprintf(label, sizeof(label), "%.*s=", kl > 24 ? 24 : kl, line);
        shell_writes(caps, d, MTHP_DECIDER_UNIT, origin, label, line);
}

static void read_unit_file(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d,
                           const char *unit, const char *path) {
        char *text = NULL, origin[MTHP_DECIDER_TEXT_MAX];
        if (read_alloc(h, path, &text) < 0)
                return;
        d->n_units_scanned++;
        snprintf(origin, sizeof(origin), "%.60s (%.120s)", unit, path);
        for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
                unit_line(caps, d, origin, trim(line));
        free(text);
}

static void read_unit_dir(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d,
                          const char *dir, const char *unit) {
        DIR *dp = host_opendir(h, dir);
        if (!dp)
                return;
        struct dirent *de;
        for (unsigned n = 0; n < DIR_ENTRIES_MAX && (de = readdir(dp)); n++) {
                const char *name = de->d_name;
                size_t len = strlen(name);
                char path[MTHP_PATH_MAX];
                if (name[0] == '.' || snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int) sizeof(path))
                        continue;
                if (unit) {     /* a drop-in directory of unit */
                        if (len > 5 && strcmp(name + len - 5, ".conf") == 0)
                                read_unit_file(h, caps, d, unit, path);
                } else if (len > 8 && strcmp(name + len - 8, ".service") == 0) {
                        if (de->d_type != DT_LNK) /* an alias or an enablement link: its target is read */
                                read_unit_file(h, caps, d, name, path);
                } else if (len > 10 && strcmp(name + len - 10, ".service.d") == 0) {
                        char u[256];
                        snprintf(u, sizeof(u), "%.*s", (int) (len - 2), name);
                        read_unit_dir(h, caps, d, path, u);
                }
        }
        closedir(dp);
}

static void read_units(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d) {
        static const char *const dirs[] = { "/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system",
                                            "/lib/systemd/system" };
        for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
                /* merged /usr: /lib is /usr/lib, read it once */
                if (i == 3) {
                        char a[8];
                        int fd = mthp_host_open_file(h, "/lib", O_PATH | O_NOFOLLOW);
                        if (fd >= 0) {
                                bool link = readlinkat(fd, "", a, sizeof(a)) > 0;
                                close(fd);
                                if (link)
                                        continue;
                        }
                }
                read_unit_dir(h, caps, d, dirs[i], NULL);
        }
}

/* ---- boot-time writers: tmpfiles.d, sysfsutils, udev rules, rc.local ---- */

typedef void (*line_fn)(const struct mthp_caps *caps, struct mthp_deciders *d, const char *origin, char *line);

/* Each line of path (through the host root) to fn, origin "PATH:LINE". */
static void read_lines(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d,
                       const char *path, line_fn fn) {
        char *text = NULL, origin[MTHP_DECIDER_TEXT_MAX];
        if (read_alloc(h, path, &text) < 0)
                return;
        d->n_boot_scanned++;
        unsigned no = 1;
        for (char *p = text, *nl; *p; p = nl ? nl + 1 : p + strlen(p), no++) {
                nl = strchr(p, '\n');
                if (nl)
                        *nl = 0;
                char *l = trim(p);
                if (!*l || *l == '#' || !strstr(l, "transparent_hugepage"))
                        continue;
                snprintf(origin, sizeof(origin), "%.150s:%u", path, no);
                fn(caps, d, origin, l);
                if (!nl)
                        break;
        }
        free(text);
}

/* Every file ending in suffix in each of dirs, in the order given, a
 * name read once (the first directory's file overrides the same name in
 * the later ones, as systemd-tmpfiles and udev take them). */
static void read_conf_dirs(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d,
                           const char *const *dirs, size_t n_dirs, const char *suffix, line_fn fn) {
        size_t sl = strlen(suffix);
        for (size_t i = 0; i < n_dirs; i++) {
                DIR *dp = host_opendir(h, dirs[i]);
                if (!dp)
                        continue;
                struct dirent *de;
                for (unsigned n = 0; n < DIR_ENTRIES_MAX && (de = readdir(dp)); n++) {
                        size_t len = strlen(de->d_name);
                        char path[MTHP_PATH_MAX];
                        if (de->d_name[0] == '.' || len <= sl || strcmp(de->d_name + len - sl, suffix) != 0)
                                continue;
                        bool shadowed = false;
                        for (size_t j = 0; j < i && !shadowed; j++) {
                                snprintf(path, sizeof(path), "%s/%s", dirs[j], de->d_name);
                                shadowed = mthp_host_exists(h, path);
                        }
                        if (shadowed || snprintf(path, sizeof(path), "%s/%s", dirs[i], de->d_name) >= (int) sizeof(path))
                                continue;
                        read_lines(h, caps, d, path, fn);
                }
                closedir(dp);
        }
}

/* tmpfiles.d(5): "w PATH MODE USER GROUP AGE ARGUMENT" (w+, w! and w-
 * too): ARGUMENT is written to PATH at boot. */
static void tmpfiles_line(const struct mthp_caps *caps, struct mthp_deciders *d, const char *origin, char *line) {
        char *f[6], *save = NULL;
        if (line[0] != 'w')
                return;
        for (int i = 0; i < 6; i++) {
                f[i] = strtok_r(i ? NULL : line, " \t", &save);
                if (!f[i])
                        return;
        }
        char *rest = save ? save : f[5] + strlen(f[5]);   /* the argument: the rest of the line */
        if (strncmp(f[1], MTHP_THP_DIR "/", strlen(MTHP_THP_DIR) + 1) != 0)
                return;
        char text[MTHP_DECIDER_TEXT_MAX];
        const char *value = trim(rest);
        snprintf(text, sizeof(text), "%.4s %.120s %.40s", f[0], f[1], value);
        add(d, MTHP_DECIDER_TMPFILES, origin, text, strlen(text), value, knobs_at_path(caps, f[1]));
}

/* sysfs.conf(5) of sysfsutils: "kernel/mm/transparent_hugepage/enabled =
 * never", the path under /sys ("mode ..." and "owner ..." lines set
 * permissions, not values). */
static void sysfsutils_line(const struct mthp_caps *caps, struct mthp_deciders *d, const char *origin, char *line) {
        char *eq = strchr(line, '=');
        if (!eq || strncmp(line, "mode ", 5) == 0 || strncmp(line, "owner ", 6) == 0)
                return;
        *eq = 0;
        char *attr = trim(line), *value = trim(eq + 1), path[MTHP_PATH_MAX], text[MTHP_DECIDER_TEXT_MAX];
        snprintf(path, sizeof(path), "%s%s", attr[0] == '/' ? "" : "/sys/", attr);
        if (strncmp(path, MTHP_THP_DIR "/", strlen(MTHP_THP_DIR) + 1) != 0)
                return;
        snprintf(text, sizeof(text), "%.120s = %.40s", attr, value);
        add(d, MTHP_DECIDER_SYSFSUTILS, origin, text, strlen(text), value, knobs_at_path(caps, path));
}

/* udev rules: ATTR{/sys/kernel/mm/transparent_hugepage/...}="VALUE" (an
 * absolute path), or a RUN+= whose command writes a THP knob. */
static void udev_line(const struct mthp_caps *caps, struct mthp_deciders *d, const char *origin, char *line) {
        const char *p = line;
        bool attr = false;
        while ((p = strstr(p, "ATTR{" MTHP_THP_DIR "/"))) {
                const char *path = p + 5, *end = strchr(path, '}');
                if (!end)
                        break;
                char pth[MTHP_PATH_MAX], value[MTHP_VALUE_MAX] = "", text[MTHP_DECIDER_TEXT_MAX];
                snprintf(pth, sizeof(pth), "%.*s", (int) (end - path), path);
                /* an assignment ("=", not the match "==") */
                if (end[1] == '=' && end[2] != '=') {
                        const char *v = end + 2 + (end[2] == '"');
                        snprintf(value, sizeof(value), "%.*s", (int) strcspn(v, "\","), v);
                        snprintf(text, sizeof(text), "ATTR{%.120s}=%.40s", pth, value);
                        add(d, MTHP_DECIDER_UDEV, origin, text, strlen(text), value, knobs_at_path(caps, pth));
                        attr = true;
                }
                p = end;
        }
        if (!attr && strstr(line, "RUN"))
                shell_writes(caps, d, MTHP_DECIDER_UDEV, origin, "RUN", line);
}

static void rclocal_line(const struct mthp_caps *caps, struct mthp_deciders *d, const char *origin, char *line) {
        shell_writes(caps, d, MTHP_DECIDER_RCLOCAL, origin, "rc.local", line);
}

static void read_boot_writers(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d) {
        static const char *const tmpfiles[] = { "/etc/tmpfiles.d", "/run/tmpfiles.d", "/usr/lib/tmpfiles.d" };
        static const char *const sysfs[] = { "/etc/sysfs.d" };
        static const char *const udev[] = { "/etc/udev/rules.d", "/run/udev/rules.d", "/usr/lib/udev/rules.d" };
        read_conf_dirs(h, caps, d, tmpfiles, sizeof(tmpfiles) / sizeof(tmpfiles[0]), ".conf", tmpfiles_line);
        read_lines(h, caps, d, "/etc/sysfs.conf", sysfsutils_line);
        read_conf_dirs(h, caps, d, sysfs, 1, ".conf", sysfsutils_line);
        read_conf_dirs(h, caps, d, udev, sizeof(udev) / sizeof(udev[0]), ".rules", udev_line);
        read_lines(h, caps, d, "/etc/rc.local", rclocal_line);
}

int mthp_deciders_read(const struct mthp_host *h, const struct mthp_caps *caps, struct mthp_deciders *d) {
        char buf[4096];
        memset(d, 0, sizeof(*d));
        if (mthp_host_read(h, "/proc/cmdline", buf, sizeof(buf)) > 0)
                mthp_deciders_parse_cmdline(buf, caps, d);
        read_tuned(h, caps, d);
        read_units(h, caps, d);
        read_boot_writers(h, caps, d);
        return 0;
}

void mthp_deciders_thp_off(const struct mthp_deciders *d, const struct mthp_caps *caps, const char *enabled_now,
                           struct mthp_engine_config *e) {
        const struct mthp_decider_setting *thp = NULL, *shmem = NULL;
        for (int k = 0; k < _MTHP_KIND_MAX; k++) {
                e->thp_off[k][0] = 0;
                e->thp_off_kb[k] = 0;
        }
        for (unsigned i = 0; i < d->n; i++) {
                const struct mthp_decider_setting *s = &d->s[i];
                if (s->source != MTHP_DECIDER_CMDLINE)
                        continue;
                if (strncmp(s->text, "transparent_hugepage=", 21) == 0)
                        thp = s;        /* the kernel takes the last one */
                else if (strncmp(s->text, "transparent_hugepage_shmem=", 27) == 0)
                        shmem = s;
                else if (strncmp(s->text, "thp_anon=", 9) == 0 || strncmp(s->text, "thp_shmem=", 10) == 0) {
                        enum mthp_kind kind = s->text[4] == 'a' ? MTHP_ANON : MTHP_SHMEM;
                        for (unsigned j = 0; j < caps->n_knobs && j < 64; j++) {
                                unsigned kb = caps->knobs[j].size_kb;
                                if (!(s->knobs & (1ULL << j)) || !kb)
                                        continue;
                                if (strcmp(s->value, "never") == 0)
                                        e->thp_off_kb[kind] |= 1ULL << __builtin_ctz(kb);
                                else
                                        e->thp_off_kb[kind] &= ~(1ULL << __builtin_ctz(kb));
                        }
                }
        }
        if (thp && strcmp(thp->value, "never") == 0)
                snprintf(e->thp_off[MTHP_ANON], sizeof(e->thp_off[MTHP_ANON]), "the kernel command line: %.120s",
                         thp->text);
        else if (!thp && enabled_now && strcmp(enabled_now, "never") == 0)
                snprintf(e->thp_off[MTHP_ANON], sizeof(e->thp_off[MTHP_ANON]),
                         "global/enabled was never when mthpd started");
        if (shmem && (strcmp(shmem->value, "never") == 0 || strcmp(shmem->value, "deny") == 0))
                snprintf(e->thp_off[MTHP_SHMEM], sizeof(e->thp_off[MTHP_SHMEM]), "the kernel command line: %.120s",
                         shmem->text);
}

const struct mthp_decider_setting *mthp_deciders_likely_writer(const struct mthp_deciders *d, int knob,
                                                                const char *value) {
        const struct mthp_decider_setting *best = NULL;
        int best_score = -1;
        if (knob < 0 || knob >= 64)
                return NULL;
        for (unsigned i = 0; i < d->n; i++) {
                const struct mthp_decider_setting *s = &d->s[i];
                if (!(s->knobs & (1ULL << knob)))
                        continue;
                /* the value it reads now first; then who writes at run time:
                 * a running tuned, a unit; the command line acts at boot only.
                 * Later settings win ties (a profile's own lines after its
                 * includes'). */
                int score = (value && strcmp(s->value, value) == 0) * 8 +
                            (s->source == MTHP_DECIDER_TUNED ? (d->tuned_pid ? 4 : 1)
                             : s->source == MTHP_DECIDER_UNIT ? 2 : 0);
                if (score >= best_score) {
                        best = s;
                        best_score = score;
                }
        }
        return best;
}

void mthp_decider_describe(const struct mthp_decider_setting *s, char *buf, size_t size) {
        snprintf(buf, size, "%s: %s", s->origin, s->text);
}

/* ---- StateDirectory/foreign ---- */

static int parse_note(char *line, struct mthp_foreign_note *n) {
        char *f[4];
        for (int i = 0; i < 4; i++) {
                f[i] = strsep(&line, "\t");
                if (!f[i])
                        return -EBADMSG;
        }
        memset(n, 0, sizeof(*n));
        if (mthp_strcpy(n->id, sizeof(n->id), f[0]) < 0)
                return -EBADMSG;
        n->usec = strtoull(f[1], NULL, 10);
        mthp_strcpy(n->value, sizeof(n->value), f[2]);
        mthp_strcpy(n->writer, sizeof(n->writer), f[3]);
        return 0;
}

int mthp_foreign_notes_load(const char *state_dir, struct mthp_foreign_note *n, unsigned max) {
        char path[MTHP_PATH_MAX + 16], line[1024];
        snprintf(path, sizeof(path), "%s/" MTHP_DECIDERS_FOREIGN_FILE, state_dir);
        FILE *f = fopen(path, "re");
        if (!f)
                return -errno;
        unsigned k = 0;
        while (k < max && fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = 0;
                if (parse_note(line, &n[k]) == 0)
                        k++;
        }
        fclose(f);
        return (int) k;
}

static void clean_field(char *s) {
        for (; *s; s++)
                if (*s == '\t' || *s == '\n')
                        *s = ' ';
}

int mthp_foreign_note_save(const char *state_dir, const struct mthp_foreign_note *note) {
        struct mthp_foreign_note old[MTHP_KNOBS_MAX], nn = *note;
        int n = mthp_foreign_notes_load(state_dir, old, MTHP_KNOBS_MAX);
        if (n < 0)
                n = 0;
        clean_field(nn.id);
        clean_field(nn.value);
        clean_field(nn.writer);
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        if (!f)
                return -errno;
        for (int i = 0; i < n; i++)
                if (strcmp(old[i].id, nn.id) != 0)
                        fprintf(f, "%s\t%llu\t%s\t%s\n", old[i].id, (unsigned long long) old[i].usec, old[i].value,
                                old[i].writer);
        fprintf(f, "%s\t%llu\t%s\t%s\n", nn.id, (unsigned long long) nn.usec, nn.value, nn.writer);
        if (fclose(f) != 0)
                return -ENOMEM;
        /* the state directory's own atomic write: a leftover .tmp (or a
         * link planted there) is removed, never followed */
        _cleanup_close_ int dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        char why[256];
        return mthp_safe_write_atomic(dfd, state_dir, MTHP_DECIDERS_FOREIGN_FILE, 0644, text, len, false, why,
                                      sizeof(why));
}

void mthp_deciders_log(const struct mthp_host *h, const struct mthp_caps *caps) {
        static struct mthp_deciders d;
        (void) mthp_deciders_read(h, caps, &d);
        if (d.tuned_pid)
                mthp_log(LOG_INFO, "neighbours: tuned is running (PID %d), active profile '%s'", d.tuned_pid,
                         d.tuned_profile[0] ? d.tuned_profile : "none");
        for (unsigned i = 0; i < d.n; i++)
                mthp_log(LOG_INFO, "neighbours: %s: %s", d.s[i].origin, d.s[i].text);
        if (!d.n && !d.tuned_pid)
                mthp_log(LOG_INFO, "neighbours: no THP setting on the kernel command line, no tuned, no unit "
                                   "with MemoryTHP= or writing THP knobs, no boot-time writer (%u unit files, %u "
                                   "tmpfiles.d, sysfs.conf, udev rule and rc.local files read)", d.n_units_scanned,
                         d.n_boot_scanned);
}

int mthp_deciders_foreign_noticed(const struct mthp_host *h, const struct mthp_caps *caps, const char *state_dir,
                                  const struct mthp_knob *k, const char *value) {
        static struct mthp_deciders d;
        struct mthp_foreign_note n = { 0 };
        (void) mthp_deciders_read(h, caps, &d);
        int knob = (int) (k - caps->knobs);
        const struct mthp_decider_setting *s = mthp_deciders_likely_writer(&d, knob, value);
        mthp_strcpy(n.id, sizeof(n.id), k->id);
        mthp_strcpy(n.value, sizeof(n.value), value);
        n.usec = mthp_now_usec(CLOCK_REALTIME);
        if (s) {
                mthp_decider_describe(s, n.writer, sizeof(n.writer));
                mthp_log(LOG_NOTICE, "%s: likely writer: %s", k->id, n.writer);
        } else
                mthp_log(LOG_NOTICE, "%s: no tuned profile, unit or command line setting writes it: writer unknown",
                         k->id);
        return mthp_foreign_note_save(state_dir, &n);
}
