/* SPDX-License-Identifier: MIT */
#pragma once

/* The guard: faster than a tick for memory-limited cgroups, so that no
 * process is OOM-killed for a size mthpd set.
 *
 * Each tick guard_scan() puts every memory-limited cgroup into the snapshot
 * (lib/limits.c) for the engine's invariant (every 4th tick only while
 * no decision could need them: scan_wanted); after the decisions are
 * applied, guard_arm() arms, while any size above 4K is "always", a usage
 * threshold per limited cgroup the engine counts at risk (empty ones too: a
 * program may start in one between ticks), at
 * usage + GuardHeadroom of its headroom:
 *   v1 (and hybrid): cgroup.event_control with an eventfd on
 *       memory.usage_in_bytes (the kernel checks every 128 charged pages);
 *   v2: memory.events polled for POLLPRI (high/max), and memory.current and
 *       memory.events read every GUARD_POLL_MS for the armed cgroups only.
 * A cgroup created between ticks (inotify on the hierarchy's directories)
 * gets a probe threshold at GUARD_NEW_KB, since its limit is usually
 * written after mkdir. When a threshold fires with a limit in force,
 * mthp_engine_guard() computes the step-down, the daemon writes it through
 * the one knob writer at once, logs the latency from the wake-up to the
 * last write, and runs a normal tick. */

struct daemon;
struct guard;

int guard_new(struct daemon *d, struct guard **ret);
void guard_free(struct guard *g);
void guard_scan(struct guard *g);
void guard_arm(struct guard *g);
/* "N trips, latency median X us, max Y us" for the log at exit */
/* Times the guard stepped sizes down since start (0 for NULL). */
uint64_t guard_trips(const struct guard *g);
void guard_describe(const struct guard *g, char *buf, size_t size);
/* What the last scan saw, into c's guard fields (guard_known false for
 * NULL or before the first scan). */
struct mthp_status_coverage;
void guard_coverage(const struct guard *g, struct mthp_status_coverage *c);
