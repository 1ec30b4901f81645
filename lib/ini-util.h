/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* inih with line numbers: Debian's libinih is built without
 * INI_HANDLER_LINENO, so count lines in our own reader callback. */
struct mthp_ini {
        const char *name;       /* file name for messages */
        unsigned line;          /* line of the current key */
        char *err;              /* accumulated "FILE:LINE: ..." messages */
        size_t errsz, errlen;
        unsigned n_errors;
        void *user;
};

/* The handler is also called once per section header with key == NULL and
 * value == NULL, so it can reject unknown sections that have no keys.
 * Handler returns 0 to go on, negative to count an error (it has already
 * called mthp_ini_error). The parse always goes to the end so that every
 * error of a file is reported at once. */
typedef int (*mthp_ini_handler)(struct mthp_ini *ini, const char *section, const char *key, const char *value);

/* file is read with mthp_safe_read_text(flags): a regular file of at most
 * MTHP_SAFE_CONFIG_MAX bytes, never a FIFO or device. */
int mthp_ini_parse_file(const char *file, unsigned flags, mthp_ini_handler h, void *user, char *err, size_t errsz);
int mthp_ini_parse_string(const char *name, const char *text, mthp_ini_handler h, void *user, char *err,
                          size_t errsz);
void mthp_ini_error(struct mthp_ini *ini, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A bad value, said the one way: "key 'K' in [S]: expected WHAT, got 'V'".
 * Returns -EINVAL. */
int mthp_ini_bad(struct mthp_ini *ini, const char *section, const char *key, const char *value, const char *what);

/* Drop-in files as systemd lists them (systemd.unit(5), "drop-in"): every
 * FILE ending in suffix (not starting with '.') of the directories dirs[]
 * (NULL-terminated, the first one wins: /etc before /run before /usr/lib),
 * sorted by file name whatever directory holds it. A name in an earlier
 * directory masks the same name in every later one; a masking file that is
 * a symlink to /dev/null or empty drops the name altogether. A directory
 * that does not exist has no files; one that cannot be read is an error
 * ("DIR: why", in err). *paths (malloc'd, *n of them; free with
 * mthp_conf_files_free) are "DIR/FILE". */
int mthp_conf_files_list(const char *const *dirs, const char *suffix, char ***paths, size_t *n, char *err,
                         size_t errsz);
void mthp_conf_files_free(char **paths, size_t n);
/* path is a symlink to /dev/null (or /dev/null itself), or with empty an
 * empty file: a masked name (1), else 0; -errno when it cannot be looked
 * at (ENOENT included). */
int mthp_conf_file_masked(const char *path, bool empty);
