/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Every /sys, /proc and cgroup path is resolved below a host root, so the
 * whole library can run against a fake host tree in tests. Paths passed to
 * these helpers are absolute host paths ("/proc/vmstat"). */
struct mthp_host {
        int root_fd;      /* O_PATH directory fd of the root */
        char *root;       /* as given, for messages */
        bool real;        /* root is "/" (libcgroup discovery is possible) */
};

int mthp_host_open(const char *root, struct mthp_host **ret);
void mthp_host_free(struct mthp_host *h);

/* Returns an fd or a negative errno. Absolute symlinks stay inside the root. */
int mthp_host_open_file(const struct mthp_host *h, const char *path, int flags);
bool mthp_host_exists(const struct mthp_host *h, const char *path);

/* pread() from offset 0 into buf (NUL-terminated); returns bytes read or -errno. */
int mthp_read_fd(int fd, char *buf, size_t size);
/* The same for a file the kernel produces in one piece (a sysfs attribute,
 * /proc/meminfo, /proc/pressure/memory: one show, not a sequence of records) or
 * a regular file: a read that does not fill buf is the whole file, so the
 * usual second read that returns 0 is saved. Not for /proc/vmstat and the
 * like, whose reads end at a page of records. */
int mthp_read_fd_whole(int fd, char *buf, size_t size);
int mthp_host_read(const struct mthp_host *h, const char *path, char *buf, size_t size);
/* mthp_host_read() of a file the kernel produces in one piece (see
 * mthp_read_fd_whole): one pread instead of two. */
int mthp_host_read_whole(const struct mthp_host *h, const char *path, char *buf, size_t size);
/* Writes value as one write(2), as sysfs expects; returns 0 or -errno. */
int mthp_host_write(const struct mthp_host *h, const char *path, const char *value);
