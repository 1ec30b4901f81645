/* SPDX-License-Identifier: MIT */
#pragma once

/* Timespans and timestamps as systemd writes them (systemd.time(7)), the
 * one grammar of every duration: mthpd.conf's keys (Interval=,
 * StartGrace=, MaxCompactionStall=), mthpd --interval and every mthpctl
 * option that takes a duration or a time.
 *
 * Timespan: numbers with units, summed: "90" (a bare number is seconds),
 * "90s", "1sec", "500ms", "5min", "1h30min", "1h 30m", "2d", "1w"; units
 * usec/us, msec/ms, seconds/second/sec/s, minutes/minute/min/m,
 * hours/hour/hr/h, days/day/d, weeks/week/w. Numbers are decimal digits
 * with an optional fraction ("1.5s", rounded to the microsecond); signs,
 * exponents, hex, inf and nan are not numbers. Below 1e18 us.
 *
 * Timestamp (as journalctl --since takes them), local time: "now", "today",
 * "yesterday", "tomorrow", "-1h" / "+30min" / "1h ago" (relative to now),
 * "@EPOCH", "YYYY-MM-DD [HH:MM[:SS]]" (also with a 'T'), "HH:MM[:SS]"
 * (today).
 *
 * Pure functions of their input (and of now, passed in, and the local time
 * zone): unit-tested in tests/unit/test-timespan.c, fuzzed by
 * tests/fuzz/fuzz-timespan.c. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 0, -EINVAL (not a timespan) or -ERANGE (1e18 us or more); *usec is
 * untouched on error. */
int mthp_timespan_parse(const char *s, uint64_t *usec);
/* now: CLOCK_REALTIME in usec. 0 or -EINVAL; *usec is CLOCK_REALTIME. */
int mthp_timestamp_parse(const char *s, uint64_t now, uint64_t *usec);

/* "2d 3h", "1h 5min", "2min 30s", "45s": seconds resolution. */
void mthp_timespan_format(uint64_t usec, char *buf, size_t size);
/* Local time, "2025-11-30 07:01:02" or, rfc3339, "2025-11-30T07:01:02+01:00". */
void mthp_timestamp_format(uint64_t usec, bool rfc3339, char *buf, size_t size);
