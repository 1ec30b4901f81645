/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mthp/host.h"
#include "pagecache.h"

#define PAGE 4096u

bool mthp_cap_fowner(void) {
        struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct data[2];
        if (syscall(SYS_capget, &hdr, data) < 0)
                return false;
        return data[0].effective & (1u << CAP_FOWNER);
}

bool mthp_mincore_truthful(int fd, bool cap_fowner) {
        struct stat st;
        char path[40];
        if (fstat(fd, &st) < 0)
                return false;
        if (cap_fowner || st.st_uid == geteuid())
                return true;
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        return faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) == 0;
}

#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct cachestat_range_ {
        uint64_t off, len;
};
struct cachestat_ {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

int mthp_cachestat(int fd, uint64_t off, uint64_t len, uint64_t *nr_cache) {
        struct cachestat_range_ cr = { off, len };
        struct cachestat_ cs;
        if (syscall(__NR_cachestat, fd, &cr, &cs, 0) < 0)
                return -errno;
        *nr_cache = cs.nr_cache;
        return 0;
}

void mthp_pc_object_init(struct mthp_pc_object *o) {
        *o = (struct mthp_pc_object) { .fd = -1 };
}

void mthp_pc_object_close(struct mthp_pc_object *o) {
        if (o->view)
                munmap(o->view, o->end - o->start);
        if (o->fd >= 0)
                close(o->fd);
        mthp_pc_object_init(o);
}

int mthp_pc_object_open(struct mthp_pc_object *o, const struct mthp_host *h, int pid, uint64_t start, uint64_t end,
                        bool cap_fowner) {
        char path[80];
        struct stat st;
        mthp_pc_object_close(o);
        o->tried = true;
        o->start = start;
        o->end = end;
        snprintf(path, sizeof(path), "/proc/%d/map_files/%llx-%llx", pid, (unsigned long long) start,
                 (unsigned long long) end);
        int fd = mthp_host_open_file(h, path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return -EOPNOTSUPP;
        }
        if (cap_fowner || st.st_uid == geteuid())
                (void) fcntl(fd, F_SETFL, O_NOATIME);
        o->fd = fd;
        o->truthful = mthp_mincore_truthful(fd, cap_fowner);
        return 0;
}

int mthp_pc_object_count(struct mthp_pc_object *o, uint64_t map_off, uint64_t addr, uint64_t len, bool *no_cachestat) {
        if (o->fd < 0)
                return -EOPNOTSUPP;
        uint64_t n;
        if (!*no_cachestat && !o->no_cachestat) {
                int r = mthp_cachestat(o->fd, map_off + (addr - o->start), len, &n);
                if (r == 0)
                        return (int) (n < len / PAGE ? n : len / PAGE);
                if (r == -ENOSYS || (r == -EPERM && o->truthful))
                        *no_cachestat = true;
                else
                        o->no_cachestat = true;
        }
        if (!o->truthful)
                return -EOPNOTSUPP;
        if (!o->view) {
                void *v = mmap(NULL, o->end - o->start, PROT_READ, MAP_SHARED, o->fd, (off_t) map_off);
                if (v == MAP_FAILED) {
                        o->truthful = false;   /* not again while open */
                        return -errno;
                }
                o->view = v;
        }
        unsigned char vec[512];
        unsigned k = 0;
        for (uint64_t at = 0; at < len; at += sizeof(vec) * PAGE) {
                size_t l = len - at < sizeof(vec) * PAGE ? len - at : sizeof(vec) * PAGE;
                if (mincore((char *) o->view + (addr - o->start) + at, l, vec) < 0) {
                        o->truthful = false;
                        return -errno;
                }
                for (size_t i = 0; i < l / PAGE; i++)
                        k += vec[i] & 1;
        }
        return (int) k;
}
