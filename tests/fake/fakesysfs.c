/* SPDX-License-Identifier: MIT */
/* Kernel write semantics for fake host trees: interposes write(2) and
 * pwrite(2) (and the read side, for removed files) of the whole process.
 * Linked statically into unit tests (link_whole) and preloaded into real
 * binaries (LD_PRELOAD=libfakesysfs.so). Files outside a fake tree, and
 * plain files inside one, go straight to the kernel.
 *
 * Names must be the real symbols: no 64-bit offset redirection (pread ->
 * pread64) and no fortify inline wrappers here. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fakehost.h"

static int fd_path(int fd, char *buf, size_t size) {
        char link[64];
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, buf, size - 1);
        if (n < 0)
                return -errno;
        buf[n] = 0;
        return 0;
}

/* Returns true (and the result in *ret, errno set) if the fake handled it. */
static bool fake_write(int fd, const void *buf, size_t n, ssize_t *ret) {
        struct stat st;
        char path[PATH_MAX];
        int saved = errno;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fd_path(fd, path, sizeof(path)) < 0) {
                errno = saved;
                return false;
        }
        bool handled;
        long r = fakehost_sysfs_write(path, buf, n, &handled);
        if (!handled) {
                errno = saved;
                return false;
        }
        if (r < 0) {
                errno = (int) -r;
                *ret = -1;
        } else {
                errno = saved;
                *ret = (ssize_t) r;
        }
        return true;
}

/* kernfs returns ENODEV for reads of an attribute that was removed; a plain
 * unlinked file would keep serving its last content. Only files with no
 * links left take the slow path. */
static bool fake_read_gone(int fd) {
        struct stat st;
        char path[PATH_MAX];
        int saved = errno;

        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_nlink > 0 || fd_path(fd, path, sizeof(path)) < 0) {
                errno = saved;
                return false;
        }
        int r = fakehost_sysfs_read_check(path);
        if (r == 0) {
                errno = saved;
                return false;
        }
        errno = -r;
        return true;
}

ssize_t write(int fd, const void *buf, size_t n) {
        ssize_t r;
        if (fake_write(fd, buf, n, &r))
                return r;
        return (ssize_t) syscall(SYS_write, fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
        ssize_t r;
        if (fake_write(fd, buf, n, &r))
                return r;   /* sysfs attributes ignore the offset */
        return (ssize_t) syscall(SYS_pwrite64, fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off64_t off) {
        return pwrite(fd, buf, n, (off_t) off);
}

ssize_t read(int fd, void *buf, size_t n) {
        if (fake_read_gone(fd))
                return -1;
        return (ssize_t) syscall(SYS_read, fd, buf, n);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off) {
        if (fake_read_gone(fd))
                return -1;
        return (ssize_t) syscall(SYS_pread64, fd, buf, n, off);
}

ssize_t pread64(int fd, void *buf, size_t n, off64_t off) {
        return pread(fd, buf, n, (off_t) off);
}

/* What _FORTIFY_SOURCE builds (e.g. Ubuntu's default) call instead. */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen);

ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen) {
        if (n > buflen)
                abort();    /* what __chk_fail would do */
        return read(fd, buf, n);
}

ssize_t __pread_chk(int fd, void *buf, size_t n, off_t off, size_t buflen) {
        if (n > buflen)
                abort();
        return pread(fd, buf, n, off);
}

ssize_t __pread64_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen) {
        if (n > buflen)
                abort();
        return pread(fd, buf, n, (off_t) off);
}
