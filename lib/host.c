/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "mthp/host.h"
#include "mthp/util.h"

int mthp_host_open(const char *root, struct mthp_host **ret) {
        struct mthp_host *h;

        if (!root || !*root)
                root = "/";
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->root = strdup(root);
        if (!h->root) {
                free(h);
                return -ENOMEM;
        }
        h->root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (h->root_fd < 0) {
                int r = -errno;
                free(h->root);
                free(h);
                return r;
        }
        struct stat a, b;
        h->real = fstat(h->root_fd, &a) == 0 && stat("/", &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
        *ret = h;
        return 0;
}

void mthp_host_free(struct mthp_host *h) {
        if (!h)
                return;
        if (h->root_fd >= 0)
                close(h->root_fd);
        free(h->root);
        free(h);
}

int mthp_host_open_file(const struct mthp_host *h, const char *path, int flags) {
        while (*path == '/')
                path++;
        if (!*path)
                path = ".";
        /* RESOLVE_IN_ROOT keeps absolute symlinks (common in /sys) inside the
         * fake tree instead of escaping to the real host. */
        struct open_how how = { .flags = (uint64_t) (flags | O_CLOEXEC), .resolve = h->real ? 0 : RESOLVE_IN_ROOT };
        int fd = (int) syscall(SYS_openat2, h->root_fd, path, &how, sizeof(how));
        if (fd < 0 && errno == ENOSYS)
                fd = openat(h->root_fd, path, flags | O_CLOEXEC);
        return fd < 0 ? -errno : fd;
}

bool mthp_host_exists(const struct mthp_host *h, const char *path) {
        int fd = mthp_host_open_file(h, path, O_PATH);
        if (fd < 0)
                return false;
        close(fd);
        return true;
}

int mthp_read_fd(int fd, char *buf, size_t size) {
        size_t len = 0;

        if (size == 0)
                return -ENOBUFS;
        for (;;) {
                ssize_t n = pread(fd, buf + len, size - 1 - len, (off_t) len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len == size - 1)
                        break;
        }
        buf[len] = 0;
        return (int) len;
}

int mthp_read_fd_whole(int fd, char *buf, size_t size) {
        ssize_t n;

        if (size == 0)
                return -ENOBUFS;
        do
                n = pread(fd, buf, size - 1, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n == size - 1)
                return mthp_read_fd(fd, buf, size);   /* full: maybe more, read as usual */
        buf[n] = 0;
        return (int) n;
}

int mthp_host_read(const struct mthp_host *h, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = mthp_host_open_file(h, path, O_RDONLY);
        if (fd < 0)
                return fd;
        return mthp_read_fd(fd, buf, size);
}

int mthp_host_read_whole(const struct mthp_host *h, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = mthp_host_open_file(h, path, O_RDONLY);
        if (fd < 0)
                return fd;
        return mthp_read_fd_whole(fd, buf, size);
}

int mthp_host_write(const struct mthp_host *h, const char *path, const char *value) {
        /* No O_TRUNC: sysfs ignores it, and on a fake tree (whose kernel
         * files are plain files; tests/fake/fakesysfs.c gives their writes
         * the kernel's semantics) it emptied the file between open and
         * write, so a kill -9 in that window left a knob that read empty
         * and the next mthpd refused to start (faults storm under ASan). */
        _cleanup_close_ int fd = mthp_host_open_file(h, path, O_WRONLY);
        if (fd < 0)
                return fd;
        size_t len = strlen(value);
        ssize_t n = write(fd, value, len);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        return 0;
}
