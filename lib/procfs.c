/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mthp/host.h"
#include "mthp/procfs.h"
#include "mthp/util.h"

void mthp_parse_kv(const char *text, mthp_kv_cb cb, void *user) {
        const char *p = text;

        while (*p) {
                const char *eol = strchrnul(p, '\n');
                char key[64];
                size_t klen = strcspn(p, ": \t\n");
                if (klen > 0 && klen < sizeof(key) && p + klen < eol) {
                        memcpy(key, p, klen);
                        key[klen] = 0;
                        const char *v = p + klen;
                        while (v < eol && (*v == ':' || *v == ' ' || *v == '\t'))
                                v++;
                        char *end;
                        errno = 0;
                        unsigned long long val = strtoull(v, &end, 10);
                        if (end != v && errno == 0)
                                cb(user, key, val);
                }
                p = *eol ? eol + 1 : eol;
        }
}

int mthp_proc_read_fd(int fd, char **text, size_t *cap, size_t *len) {
        size_t n = 0;

        for (;;) {
                if (n + 4096 + 1 > *cap) {
                        if (*cap >= MTHP_PROC_TEXT_MAX)
                                break;
                        size_t c = *cap ? *cap * 2 : 65536;
                        char *t = realloc(*text, c);
                        if (!t)
                                return -ENOMEM;
                        *text = t;
                        *cap = c;
                }
                ssize_t k = read(fd, *text + n, *cap - 1 - n);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        if (n + 4096 + 1 > *cap) {      /* cut at the cap: drop the partial last line */
                while (n > 0 && (*text)[n - 1] != '\n')
                        n--;
        }
        (*text)[n] = 0;
        *len = n;
        return 0;
}

int mthp_proc_parse_stat(const char *text, struct mthp_proc_stat *st) {
        const char *open = strchr(text, '('), *close = strrchr(text, ')');
        char *end;

        memset(st, 0, sizeof(*st));
        if (!open || !close || close < open)
                return -EBADMSG;
        errno = 0;
        long pid = strtol(text, &end, 10);
        if (end == text || errno || pid <= 0 || pid > INT32_MAX)
                return -EBADMSG;
        st->pid = (pid_t) pid;
        size_t len = (size_t) (close - open - 1);
        if (len >= sizeof(st->comm))
                len = sizeof(st->comm) - 1;
        memcpy(st->comm, open + 1, len);
        st->comm[len] = 0;

        /* Fields after comm, numbered as in proc(5): 3 state, 9 flags,
         * 10 minflt, 14 utime, 15 stime, 22 starttime. Some are signed
         * (tpgid, nice). */
        const char *p = close + 1;
        for (unsigned field = 3; field <= 22; field++) {
                while (*p == ' ')
                        p++;
                if (!*p || *p == '\n')
                        return -EBADMSG;
                if (field == 3)
                        st->state = *p;
                else if (field == 9 || field == 10 || field == 14 || field == 15 || field == 22) {
                        errno = 0;
                        unsigned long long v = strtoull(p, &end, 10);
                        if (end == p || errno || (*end != ' ' && *end != '\n' && *end))
                                return -EBADMSG;
                        if (field == 9)
                                st->flags = (unsigned) v;
                        else if (field == 10)
                                st->minflt = v;
                        else if (field == 14)
                                st->utime = v;
                        else if (field == 15)
                                st->stime = v;
                        else
                                st->starttime = v;
                }
                p += strcspn(p, " \n");
        }
        /* optional: 24 rss (for ranking), 38 exit_signal (-1 for a thread
         * that is not its group's leader: /proc/TID/stat of such a thread
         * answers with its whole process's figures) */
        for (unsigned field = 23; field <= 38; field++) {
                while (*p == ' ')
                        p++;
                if (!*p || *p == '\n')
                        return 0;
                if (field == 24)
                        st->rss_pages = strtoull(p, NULL, 10);
                else if (field == 38)
                        st->thread = p[0] == '-' && p[1] == '1' && (p[2] == ' ' || p[2] == '\n' || !p[2]);
                p += strcspn(p, " \n");
        }
        return 0;
}

static int parse_hex(const char **p, const char *end, uint64_t *v) {
        uint64_t x = 0;
        const char *q = *p;
        while (q < end) {
                int d;
                if (*q >= '0' && *q <= '9')
                        d = *q - '0';
                else if (*q >= 'a' && *q <= 'f')
                        d = *q - 'a' + 10;
                else if (*q >= 'A' && *q <= 'F')
                        d = *q - 'A' + 10;
                else
                        break;
                if (x >> 60)
                        return -EBADMSG;
                x = x << 4 | (uint64_t) d;
                q++;
        }
        if (q == *p)
                return -EBADMSG;
        *p = q;
        *v = x;
        return 0;
}

static int expect(const char **p, const char *end, char c) {
        if (*p >= end || **p != c)
                return -EBADMSG;
        (*p)++;
        return 0;
}

int mthp_proc_parse_maps_line(const char *line, size_t len, struct mthp_mapping *m) {
        const char *p = line, *end = line + len;
        uint64_t major, minor;

        memset(m, 0, sizeof(*m));
        while (end > p && (end[-1] == '\n' || end[-1] == '\0'))
                end--;
        if (parse_hex(&p, end, &m->start) < 0 || expect(&p, end, '-') < 0 ||
            parse_hex(&p, end, &m->end) < 0 || expect(&p, end, ' ') < 0 || m->end < m->start)
                return -EBADMSG;
        if (end - p < 5 || p[4] != ' ')
                return -EBADMSG;
        memcpy(m->perms, p, 4);
        p += 5;
        if (parse_hex(&p, end, &m->offset) < 0 || expect(&p, end, ' ') < 0 ||
            parse_hex(&p, end, &major) < 0 || expect(&p, end, ':') < 0 ||
            parse_hex(&p, end, &minor) < 0 || expect(&p, end, ' ') < 0)
                return -EBADMSG;
        m->dev_major = (unsigned) major;
        m->dev_minor = (unsigned) minor;
        const char *q = p;
        while (p < end && *p >= '0' && *p <= '9')
                m->inode = m->inode * 10 + (uint64_t) (*p++ - '0');
        if (p == q || (p < end && *p != ' '))
                return -EBADMSG;
        while (p < end && *p == ' ')
                p++;
        m->name = p;
        m->name_len = (size_t) (end - p);
        return 0;
}

static bool name_is(const struct mthp_mapping *m, const char *s) {
        return m->name_len == strlen(s) && memcmp(m->name, s, m->name_len) == 0;
}

static bool name_starts(const struct mthp_mapping *m, const char *s) {
        size_t n = strlen(s);
        return m->name_len >= n && memcmp(m->name, s, n) == 0;
}

int mthp_proc_mapping_kind(const struct mthp_mapping *m) {
        if (m->perms[0] != 'r')
                return -ENOENT;  /* PROT_NONE reservations and guard pages */
        if (m->perms[3] == 'p') {
                if (m->perms[1] != 'w')
                        return -ENOENT;
                /* a private /dev/zero mapping is plain anonymous memory */
                if ((m->name_len == 0 && m->inode == 0) || name_is(m, "[heap]") || name_is(m, "[stack]") ||
                    name_starts(m, "[anon:") || name_is(m, "/dev/zero"))
                        return MTHP_ANON;
                return -ENOENT;
        }
        if (m->perms[3] == 's' &&
            (name_is(m, "/dev/zero (deleted)") || name_starts(m, "/SYSV") || name_starts(m, "/memfd:") ||
             name_starts(m, "/dev/shm/") || name_starts(m, "[anon_shmem:")))
                return MTHP_SHMEM;
        return -ENOENT;
}

unsigned mthp_proc_parse_vmflags(const char *value, size_t len) {
        unsigned flags = 0;
        size_t i = 0;
        while (i < len) {
                while (i < len && (value[i] == ' ' || value[i] == '\t'))
                        i++;
                size_t w = i;
                while (i < len && value[i] != ' ' && value[i] != '\t' && value[i] != '\n')
                        i++;
                if (i - w == 2 && memcmp(value + w, "hg", 2) == 0)
                        flags |= MTHP_VMA_HUGEPAGE;
                else if (i - w == 2 && memcmp(value + w, "nh", 2) == 0)
                        flags |= MTHP_VMA_NOHUGEPAGE;
                if (i < len && value[i] == '\n')
                        break;
        }
        return flags;
}

int mthp_proc_read_starttime(const struct mthp_host *h, pid_t pid, uint64_t *starttime) {
        char path[48], buf[4096];
        struct mthp_proc_stat st;
        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        int r = mthp_host_read(h, path, buf, sizeof(buf));
        if (r == -ENOENT || r == -ESRCH)
                return -ESRCH;
        if (r < 0)
                return r;
        if (mthp_proc_parse_stat(buf, &st) < 0)
                return -EBADMSG;
        if (st.state == 'Z' || st.state == 'X')
                return -ESRCH;
        *starttime = st.starttime;
        return 0;
}

int mthp_proc_list_pids(int proc_fd, pid_t **pids, size_t *cap, size_t *n) {
        int fd = dup(proc_fd);
        if (fd < 0)
                return -errno;
        DIR *d = fdopendir(fd);
        if (!d) {
                int r = -errno;
                close(fd);
                return r;
        }
        rewinddir(d);   /* the dup shares proc_fd's offset */
        struct dirent *de;
        size_t k = 0;
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                if (*end || end == de->d_name || pid <= 0 || pid > INT32_MAX)
                        continue;
                int r = mthp_grow((void **) pids, cap, k + 1, sizeof(pid_t));
                if (r < 0) {
                        closedir(d);
                        return r;
                }
                (*pids)[k++] = (pid_t) pid;
        }
        closedir(d);
        *n = k;
        return 0;
}
