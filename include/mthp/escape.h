/* SPDX-License-Identifier: MIT */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

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
 * sequence becomes "\xNN", and a backslash becomes "\\". So the escaping
 * is reversible (mthp_unescape) and two different names never print the
 * same: a cgroup named "a\x1b" (four characters) prints "a\\x1b", one
 * with the byte ESC prints "a\x1b". A systemd unit's own "\x2d" prints as
 * "\\x2d"; scripts that need names exactly read --json, whose strings
 * carry the names themselves (mthp_json_string).
 *
 * Not idempotent: escape a name once, where it leaves the program (the
 * bus, the status file, a log line, a terminal), and unescape text read
 * from such a place before escaping it again. */

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
/* Is s valid UTF-8 without control characters (safe to print as it is)? */
bool mthp_text_is_clean(const char *s);
/* Undo mthp_escape(): "\\" is a backslash, "\xNN" the byte NN (not 00).
 * dst may be src (the result is never longer). Returns the length, or
 * -EINVAL for a backslash followed by anything else, -ENOBUFS if dst is
 * too small. */
ssize_t mthp_unescape(char *dst, size_t size, const char *src);

/* src, a name or a text as it is (not escaped), as one JSON string
 * literal, quotes included, written to f: JSON's own escaping ('"', '\\',
 * "\n", "\t", other control characters as "\u00XX", C1 ones as
 * "\u0080".."\u009f"), valid UTF-8 copied. A byte that is not part of
 * valid UTF-8 (0x80..0xff) becomes the lone surrogate "\udcXX", as
 * Python's surrogateescape writes it: unambiguous, as valid UTF-8 never
 * holds a surrogate, and json.loads(s).encode("utf-8", "surrogateescape")
 * gives the original bytes back. */
void mthp_json_string(FILE *f, const char *src);

/* Does one line of an "FILE:LINE: message" error text (the format of
 * mthp_config_load() and mthp_policy_load_*()) belong to path? It does
 * when it starts with "path:" or, when path is a directory that was
 * loaded, with "path/NAME:" or "path:" (the directory's own errors).
 * For mthpctl check --json, which must list every error of a file or of a
 * directory. */
bool mthp_error_line_is_about(const char *line, size_t len, const char *path, bool is_dir);
