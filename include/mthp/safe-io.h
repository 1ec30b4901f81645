/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Opening the files mthpd and mthpctl read and write: mthpd.conf, policy
 * files, the restore journal, the status file and the lock. Root opens
 * them, and their names can be chosen by others (-c, --state-dir,
 * StateDirectory=, mthpctl check ARG), so every open here:
 *  - is relative to a directory fd that was checked once (no path is
 *    resolved twice: a swap between check and use changes nothing);
 *  - uses O_NOFOLLOW for the file itself in a state or policy directory
 *    (a symlink named restore.journal.tmp, status.tmp or lock made root
 *    write anywhere) and O_EXCL for new files;
 *  - uses O_NONBLOCK and takes regular files only (a FIFO journal hung
 *    mthpd's start, 'mthpctl check /dev/zero' never returned);
 *  - with MTHP_SAFE_OWNER, refuses a directory or file that is not owned
 *    by root (or by whoever runs us: tests, a fake host) or that group or
 *    others can write (whoever can write it can steer a root daemon);
 *  - caps the size it reads.
 * Failures return a negative errno and, in why, one sentence that names the
 * path and what was expected ("/x/lock: a symbolic link, expected a regular
 * file; refused"). */

enum {
        MTHP_SAFE_OWNER = 1 << 0,    /* owned by root or us, not group/other-writable */
        MTHP_SAFE_NOFOLLOW = 1 << 1, /* the file itself may not be a symlink */
};

#define MTHP_SAFE_TEXT_MAX (1024 * 1024) /* journal, status file */
#define MTHP_SAFE_CONFIG_MAX (64 * 1024) /* mthpd.conf, policy files */

/* Open a directory (O_DIRECTORY, following symlinks on the way) and check
 * it. create: mkdir it first (0755) when missing; a missing parent is said
 * as such. Returns the fd. */
int mthp_safe_open_dir(const char *path, unsigned flags, bool create, char *why, size_t whysz);

/* Open dir_path/name (dirfd is its fd; AT_FDCWD with dir_path NULL: name is
 * the path) read-only and check it: regular file, flags, at most max_size
 * bytes (0: no cap). Returns the fd. */
int mthp_safe_open_file(int dirfd, const char *dir_path, const char *name, unsigned flags, size_t max_size,
                        char *why, size_t whysz);

/* The whole file as NUL-terminated text (malloc'd into *text, length in
 * *len if len): a NUL byte in it is an error (not a text file). */
int mthp_safe_read_text(int dirfd, const char *dir_path, const char *name, unsigned flags, size_t max_size,
                        char **text, size_t *len, char *why, size_t whysz);

/* Replace dir/name atomically: name.tmp is unlinked if left over (a symlink
 * is removed, never followed), created with O_EXCL|O_NOFOLLOW and mode,
 * written, fsync'd if sync, renamed over name. */
int mthp_safe_write_atomic(int dirfd, const char *dir_path, const char *name, mode_t mode, const char *data,
                           size_t len, bool sync, char *why, size_t whysz);

/* Open or create dir/name (O_RDWR, O_NOFOLLOW, regular, our own) for flock. */
int mthp_safe_open_lock(int dirfd, const char *dir_path, const char *name, char *why, size_t whysz);

/* Split an absolute or relative path into its directory (opened with
 * mthp_safe_open_dir(flags), returned) and its last component (*base
 * points into path). -ENAMETOOLONG for a path of MTHP_PATH_MAX or more. */
int mthp_safe_open_parent(const char *path, unsigned flags, const char **base, char *why, size_t whysz);

/* Join dir and name into buf: -ENAMETOOLONG if it does not fit, never a
 * truncated path. */
int mthp_path_join(char *buf, size_t size, const char *dir, const char *name);
