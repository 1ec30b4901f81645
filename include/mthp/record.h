/* SPDX-License-Identifier: MIT */
#pragma once

#include <stddef.h>
#include "mthp/types.h"
#include "mthp/util.h"
#include "mthp/sample.h"

/* Record and replay: what mthpd sampled, tick by tick, in a text file that
 * replays through the engine with byte-identical decisions (mthpd --record,
 * mthpctl simulate, tests/engine/traces/).
 *
 * Format (version 1), one record per line, words separated by spaces; blank
 * lines and lines starting with '#' are ignored:
 *
 *   mthp-record 1
 *   caps pmd_kb=2048 psi=1 task_delayacct=0 cg_layout=hybrid cg_memory=PATH cg_unified=PATH
 *   knob id=16K/anon type=size_anon size_kb=16 path=PATH allowed=always,inherit,madvise,never
 *   ...                              (one per knob, in caps order: the index is the position)
 *   size kb=16 order=2 anon=0 shmem=1 stats=anon_fault_alloc,anon_fault_fallback,...
 *   ...                              (one per size, ascending; anon/shmem: knob index or -1)
 *   end
 *   tick 0 t_usec=123456789 dt=0 fault_cost_ns=X   (fault_cost_ns: FaultCost=, absent when unknown)
 *   vm pgfault=COUNTER ...           (named /proc/vmstat counters; absent ones left out)
 *   mem total=KB available=KB anon=KB shmem=KB anon_huge=KB shmem_huge=KB
 *   psi present=1 some_avg10=X full_avg10=X some_total=COUNTER full_total=COUNTER
 *   stat 16K COUNTER,COUNTER,...     (per size, in the order of its 'stats' list;
 *                                     sizes and trailing counters without data left out)
 *   knobs never never inherit ...    (every knob's selection, in caps order)
 *   rates fault_pages=X anon_pages=X shmem_pages=X anon_alloc=X shmem_alloc=X
 *         anon_fallback=X shmem_fallback=X            (on one line: the derived rates)
 *   density valid=1 usec=X
 *   proc pid=N comm=S fault_rate=X new=B rss_anon=KB rss_shmem=KB compact_ms=X thrash_ms=X
 *        reclaim_ms=X cgroup=S cg_usage=KB cg_limit=KB cov_anon=LIST zero_anon=LIST
 *        blocks_anon=LIST cov_shmem=LIST zero_shmem=LIST blocks_shmem=LIST
 *        thp_disabled=B nohuge_anon=KB hg_cov_anon=LIST hg_zero_anon=LIST
 *        hg_blocks_anon=LIST nohuge_shmem=KB hg_cov_shmem=LIST hg_zero_shmem=LIST
 *        hg_blocks_shmem=LIST zerod_anon=LIST zerod_shmem=LIST shm_reach=N
 *        shm_addr=N shm_bytes=N shm_align=KB shm_sampled=N shm_large=N
 *        shm_probe=N shm_repaired=KB fs_anon=N fs_shmem=N fs_other=N
 *                                                     (on one line; up to 8 per tick;
 *                                     the opt-outs, the MADV_HUGEPAGE part of each
 *                                     measure and the largest shmem mapping: reach
 *                                     0 none, 1 per-size, 2 tmpfs file, 3 SysV;
 *                                     shm_probe: how shm_large was told, 0
 *                                     kpageflags (in a large folio; absent in
 *                                     older recordings), 1 PMD-mapped;
 *                                     shm_repaired: kB of it the daemon collapsed;
 *                                     zerod: the zero share in windows that read
 *                                     data, absent where unknown and in older
 *                                     recordings; fs: sampled faults by kind)
 *   gone pid=N                       (a remembered process that had exited by this
 *                                     tick; up to 16 per tick; absent in older recordings)
 *   rate pid=N fault_rate=X          (a remembered process this tick did not sample:
 *                                     its faults/s as the /proc scan read them; up to 16)
 *   cgroup path=S fault_rate=X new=B anon=KB shmem=KB usage=KB limit=KB growth=X psi=B
 *          psi_some=X appeared=USEC  (one per managed cgroup, on one line; appeared:
 *                                     when the monitor saw it appear, 0 not seen)
 *   limits scanned=1                 (every memory-limited cgroup was scanned)
 *   limited path=S usage=KB limit=KB populated=B    (one per limited cgroup, up to 32)
 *   end
 *   tick 1 ...
 *
 * COUNTER is VALUE[/RATE][:FLAGS]: RATE 0 when left out; FLAGS 'r' = reset
 * this tick, 'a' = not present; an empty COUNTER in a 'stat' list is one
 * that was not present. LIST is one number per caps size, comma-separated;
 * a list that is all "nan" (no sample) is left out. Doubles are written with
 * %.15g, or %.16g/%.17g where that is needed to read back the same double
 * ("nan", "inf" included), so a replay sees exactly what the daemon saw. Strings escape
 * bytes outside '!'..'~' and '\' ',' '"' as \xHH; "" is the empty string.
 * Within a tick, lines come in any order, each once (but 'stat' and 'proc'); a
 * line that would hold only zeros, empty strings and absent counters is left
 * out, and reads back as such. Keys not written read as zero, except number
 * lists (NAN) and a size's anon=/shmem= (-1). Each tick is written in one
 * go, and cut back off if that fails, so the file holds whole ticks even
 * after a kill or a full disk. Readers reject what they do not know. */

#define MTHP_RECORD_VERSION 1

struct mthp_record_writer;
struct mthp_record_reader;

/* Create (truncate) path and write the header and caps. 0 or -errno. */
int mthp_record_open_write(const char *path, const struct mthp_caps *caps, struct mthp_record_writer **ret);
/* Append one tick; the data is in the file when this returns. 0 or -errno. */
int mthp_record_write(struct mthp_record_writer *w, const struct mthp_snapshot *snap);
/* 0 or the -errno of close(2). NULL is fine. */
int mthp_record_close_write(struct mthp_record_writer *w);

/* Open a recording and read its caps. On failure err gets one line naming
 * the file (and line, for malformed input: -EBADMSG) and what was expected. */
int mthp_record_open_read(const char *path, struct mthp_caps *caps, struct mthp_record_reader **ret, char *err,
                          size_t errsz);
/* The next tick: 1 (snap filled), 0 at the end of the recording, -EBADMSG
 * ("FILE:LINE: ...") for malformed input, other -errno on I/O errors. */
int mthp_record_read(struct mthp_record_reader *r, struct mthp_snapshot *snap, char *err, size_t errsz);
void mthp_record_close_read(struct mthp_record_reader *r);

