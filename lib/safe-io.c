/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mthp/probe.h"
#include "mthp/safe-io.h"

static void say(char *why, size_t whysz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(char *why, size_t whysz, const char *fmt, ...) {
        if (!why || !whysz)
                return;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, whysz, fmt, ap);
        va_end(ap);
}

static const char *type_words(mode_t m) {
        switch (m & S_IFMT) {
        case S_IFREG: return "a regular file";
        case S_IFDIR: return "a directory";
        case S_IFIFO: return "a FIFO";
        case S_IFCHR: return "a character device";
        case S_IFBLK: return "a block device";
        case S_IFSOCK: return "a socket";
        case S_IFLNK: return "a symbolic link";
        default: return "not a regular file";
        }
}

int mthp_path_join(char *buf, size_t size, const char *dir, const char *name) {
        int n = snprintf(buf, size, "%s%s%s", dir ? dir : "", dir && *dir && dir[strlen(dir) - 1] != '/' ? "/" : "",
                         name);
        if (n < 0 || (size_t) n >= size) {
                if (size)
                        buf[0] = 0;
                return -ENAMETOOLONG;
        }
        return 0;
}

/* "dir/name" for messages (cut if it must: only messages) */
static const char *shown(char *buf, size_t size, const char *dir, const char *name) {
        if (!dir)
                snprintf(buf, size, "%s", name);
        else
                snprintf(buf, size, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
        return buf;
}

/* what: "" for a file, "directory " for a directory */
static int check_owner(const struct stat *st, const char *path, const char *what, char *why, size_t whysz) {
        if (st->st_uid != 0 && st->st_uid != geteuid()) {
                say(why, whysz,
                    "%s: %sowned by uid %u, expected root: whoever owns it can steer mthpd, which runs as root; "
                    "refused",
                    path, what, (unsigned) st->st_uid);
                return -EPERM;
        }
        if (st->st_mode & (S_IWGRP | S_IWOTH)) {
                say(why, whysz,
                    "%s: %swritable by %s (mode %04o), expected writable by its owner only: whoever can write it "
                    "can steer mthpd; refused",
                    path, what, (st->st_mode & S_IWOTH) ? "everyone" : "its group", (unsigned) (st->st_mode & 07777));
                return -EPERM;
        }
        return 0;
}

int mthp_safe_open_dir(const char *path, unsigned flags, bool create, char *why, size_t whysz) {
        if (strlen(path) >= MTHP_PATH_MAX) {
                say(why, whysz, "%.64s...: a path of %zu bytes, expected less than %d", path, strlen(path),
                    MTHP_PATH_MAX);
                return -ENAMETOOLONG;
        }
        if (create && mkdir(path, 0755) < 0 && errno != EEXIST) {
                int r = -errno;
                if (r == -ENOENT)
                        say(why, whysz, "cannot create directory %s: its parent directory does not exist", path);
                else
                        say(why, whysz, "cannot create directory %s: %s", path, strerror(-r));
                return r;
        }
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                int r = -errno;
                if (r == -ENOTDIR)
                        say(why, whysz, "%s: not a directory, expected a directory", path);
                else if (r == -ENOENT)
                        say(why, whysz, "%s: no such directory", path);
                else
                        say(why, whysz, "%s: cannot open directory: %s", path, strerror(-r));
                return r;
        }
        struct stat st;
        if (fstat(fd, &st) < 0) {
                int r = -errno;
                say(why, whysz, "%s: %s", path, strerror(-r));
                close(fd);
                return r;
        }
        if (flags & MTHP_SAFE_OWNER) {
                int r = check_owner(&st, path, "directory ", why, whysz);
                if (r < 0) {
                        close(fd);
                        return r;
                }
        }
        return fd;
}

static int check_file(int fd, const char *path, unsigned flags, size_t max_size, struct stat *st, char *why,
                      size_t whysz) {
        if (fstat(fd, st) < 0) {
                int r = -errno;
                say(why, whysz, "%s: %s", path, strerror(-r));
                return r;
        }
        if (!S_ISREG(st->st_mode)) {
                say(why, whysz, "%s: %s, expected a regular file; refused", path, type_words(st->st_mode));
                return S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL;
        }
        if (flags & MTHP_SAFE_OWNER) {
                int r = check_owner(st, path, "", why, whysz);
                if (r < 0)
                        return r;
        }
        if (max_size && (uint64_t) st->st_size > max_size) {
                say(why, whysz, "%s: %lld bytes, expected at most %zu", path, (long long) st->st_size, max_size);
                return -EFBIG;
        }
        return 0;
}

static int open_error(int r, const char *path, char *why, size_t whysz) {
        if (r == -ELOOP)
                say(why, whysz, "%s: a symbolic link, expected a regular file; refused", path);
        else if (r == -ENXIO)
                say(why, whysz, "%s: a FIFO or socket nobody serves, expected a regular file; refused", path);
        else
                say(why, whysz, "%s: cannot open: %s", path, strerror(-r));
        return r;
}

int mthp_safe_open_file(int dirfd, const char *dir_path, const char *name, unsigned flags, size_t max_size,
                        char *why, size_t whysz) {
        char p[MTHP_PATH_MAX + 64];
        shown(p, sizeof(p), dir_path, name);
        int fd = openat(dirfd, name,
                        O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | ((flags & MTHP_SAFE_NOFOLLOW) ? O_NOFOLLOW : 0));
        if (fd < 0)
                return open_error(-errno, p, why, whysz);
        struct stat st;
        int r = check_file(fd, p, flags, max_size, &st, why, whysz);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

int mthp_safe_read_text(int dirfd, const char *dir_path, const char *name, unsigned flags, size_t max_size,
                        char **text, size_t *len, char *why, size_t whysz) {
        char p[MTHP_PATH_MAX + 64];
        shown(p, sizeof(p), dir_path, name);
        int fd = mthp_safe_open_file(dirfd, dir_path, name, flags, max_size, why, whysz);
        if (fd < 0)
                return fd;
        size_t cap = max_size ? max_size + 1 : 1 << 20, n = 0;
        char *buf = malloc(cap + 1);
        if (!buf) {
                close(fd);
                return -ENOMEM;
        }
        /* the size may have changed since fstat: read at most cap */
        for (;;) {
                ssize_t k = read(fd, buf + n, cap - n);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        int r = -errno;
                        say(why, whysz, "%s: cannot read: %s", p, strerror(-r));
                        free(buf);
                        close(fd);
                        return r;
                }
                if (k == 0 || (n += (size_t) k) == cap)
                        break;
        }
        close(fd);
        if (max_size && n > max_size) {
                say(why, whysz, "%s: more than %zu bytes, expected at most %zu", p, max_size, max_size);
                free(buf);
                return -EFBIG;
        }
        if (memchr(buf, 0, n)) {
                say(why, whysz, "%s: contains a NUL byte, expected a text file", p);
                free(buf);
                return -EINVAL;
        }
        buf[n] = 0;
        *text = buf;
        if (len)
                *len = n;
        return 0;
}

int mthp_safe_write_atomic(int dirfd, const char *dir_path, const char *name, mode_t mode, const char *data,
                           size_t len, bool sync, char *why, size_t whysz) {
        char tmp[MTHP_PATH_MAX], p[MTHP_PATH_MAX + 64];
        shown(p, sizeof(p), dir_path, name);
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int) sizeof(tmp)) {
                say(why, whysz, "%s: name too long", p);
                return -ENAMETOOLONG;
        }
        /* a leftover, or a symlink someone planted: remove the name, never follow it */
        if (unlinkat(dirfd, tmp, 0) < 0 && errno != ENOENT) {
                int r = -errno;
                say(why, whysz, "%s.tmp: cannot remove the leftover: %s", p, strerror(-r));
                return r;
        }
        int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0) {
                int r = -errno;
                say(why, whysz, "%s.tmp: cannot create: %s", p, strerror(-r));
                return r;
        }
        /* for every user's mthpctl (status), whatever the service's UMask= */
        (void) fchmod(fd, mode);
        int r = 0;
        for (size_t off = 0; off < len;) {
                ssize_t k = write(fd, data + off, len - off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        r = k < 0 ? -errno : -EIO;
                        break;
                }
                off += (size_t) k;
        }
        if (r == 0 && sync && fsync(fd) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = -errno;
        if (r == 0 && sync && fsync(dirfd) < 0 && errno != EINVAL && errno != EBADF)
                r = -errno;
        if (r < 0) {
                say(why, whysz, "%s: cannot write: %s", p, strerror(-r));
                (void) unlinkat(dirfd, tmp, 0);
        }
        return r;
}

int mthp_safe_open_lock(int dirfd, const char *dir_path, const char *name, char *why, size_t whysz) {
        char p[MTHP_PATH_MAX + 64];
        shown(p, sizeof(p), dir_path, name);
        int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return open_error(-errno, p, why, whysz);
        struct stat st;
        int r = check_file(fd, p, MTHP_SAFE_OWNER, 0, &st, why, whysz);
        if (r < 0) {
                close(fd);
                return r;
        }
        return fd;
}

int mthp_safe_open_parent(const char *path, unsigned flags, const char **base, char *why, size_t whysz) {
        char dir[MTHP_PATH_MAX];
        size_t n = strlen(path);
        if (n >= MTHP_PATH_MAX) {
                say(why, whysz, "%.64s...: a path of %zu bytes, expected less than %d", path, n, MTHP_PATH_MAX);
                return -ENAMETOOLONG;
        }
        const char *slash = strrchr(path, '/');
        if (!slash) {
                *base = path;
                return mthp_safe_open_dir(".", flags, false, why, whysz);
        }
        if (!slash[1]) {
                say(why, whysz, "%s: expected a file name, got a directory path", path);
                return -EISDIR;
        }
        size_t dl = slash == path ? 1 : (size_t) (slash - path);
        memcpy(dir, path, dl);
        dir[dl] = 0;
        *base = slash + 1;
        return mthp_safe_open_dir(dir, flags, false, why, whysz);
}
