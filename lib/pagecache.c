/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pagecache.h"

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
