/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Every string that leaves mthpd or mthpctl (D-Bus, the status file, log
 * MESSAGE=, JSON, a terminal) passes through mthp_escape(), because parts
 * of them are chosen by anyone: a process names itself (comm, 15 bytes of
 * anything but NUL), a delegated user names cgroups, an administrator's
 * file may hold any byte. sd-bus refuses invalid UTF-8 (a Reload whose
 * error quoted byte 0xff never replied), a newline in a comm forged a line
 * of the status file, ESC[2J in a comm reached the admin's terminal.
 *
 * The output is valid UTF-8 without control characters: bytes of valid
 * UTF-8 sequences are copied, C0 controls, DEL and the C1 controls
 * (U+0080..U+009F) become "\xNN" (of their bytes), each byte of an invalid
 * sequence becomes "\xNN". A backslash is copied as it is: cgroup names of
 * systemd units carry "\x2d" themselves and must stay copy-pastable; the
 * escaping exists to make the text harmless, not reversible.
 *
 * Idempotent: escaping escaped text gives the same text. */

/* Escape len bytes of src (a NUL ends it early) into dst of size bytes,
 * always NUL-terminated (size > 0). Never cuts an escape or a UTF-8
 * sequence in half. Returns the length the whole result needs (without the
 * NUL), like snprintf: >= size means it was cut. */
size_t mthp_escape_n(char *dst, size_t size, const char *src, size_t len);
/* The same for a NUL-terminated src; returns dst. */
char *mthp_escape(char *dst, size_t size, const char *src);
/* The same, but '\n' stays: for texts of several lines (the errors of a
 * reload, one per line), each line escaped. */
char *mthp_escape_lines(char *dst, size_t size, const char *src);
/* A malloc'd escaped copy (NULL on ENOMEM). */
char *mthp_escape_dup(const char *src);
/* Is s already what mthp_escape() would give (valid UTF-8, no controls)? */
bool mthp_text_is_clean(const char *s);

/* src as one JSON string literal, quotes included, written to f: the
 * escaped text, with '"' and '\\' as JSON wants them. */
void mthp_json_string(FILE *f, const char *src);

/* Does one line of an "FILE:LINE: message" error text (the format of
 * mthp_config_load() and mthp_policy_load_*()) belong to path? It does
 * when it starts with "path:" or, when path is a directory that was
 * loaded, with "path/NAME:" or "path:" (the directory's own errors).
 * For mthpctl check --json, which must list every error of a file or of a
 * directory. */
bool mthp_error_line_is_about(const char *line, size_t len, const char *path, bool is_dir);
