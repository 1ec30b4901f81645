// SPDX-License-Identifier: MIT
/*
 * mthp-workload: page-fault workload generator for mTHP benchmarks.
 *
 * Each thread repeatedly maps a 2 MiB-aligned region (private anon or
 * anonymous shmem), writes one byte per 4K page (dense) or per --stride
 * (sparse), and unmaps it, in the spirit of will-it-scale page_fault1.
 * With --hold the region stays mapped and is re-touched, so a benchmark can
 * read the steady RSS of a long-lived process; with --once it is touched
 * once and then left alone (a program that allocates and stays alive).
 * --value picks the byte written (0: pages whose data is all zero, which
 * the kernel's THP shrinker can split and free; anything else: not).  The main thread prints a
 * line per second and a summary; a sampler thread tracks peak RSS because
 * VmHWM is of little use for a map/unmap loop.
 *
 * Exit status: 0 success (also when stopped by SIGINT/SIGTERM),
 * 1 runtime error, 2 usage error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define PROG "mthp-workload"
#define NSEC_PER_SEC 1000000000LL
#define ALIGN_2M (2UL << 20)
#define MAX_SECONDS 3600
#define MAX_THREADS 1024
#define MAX_SIZE (1ULL << 40) /* 1 TiB per thread: keeps size arithmetic far from overflow */
/* Touches between clock checks; the stop flag itself is checked per touch. */
#define TOUCH_BATCH 64
#define SAMPLE_STATUS_NS (10 * 1000 * 1000LL)  /* VmRSS is cheap to read */
#define SAMPLE_ROLLUP_EVERY 10                 /* smaps_rollup every 100 ms: it walks page tables */
#define MAIN_WAIT_SLICE_NS (50 * 1000 * 1000LL) /* notice a worker's early stop promptly */

enum kind { KIND_ANON, KIND_SHMEM };
enum pattern { PAT_DENSE, PAT_SPARSE, PAT_PHASED };
enum madv { MADV_OPT_NONE, MADV_OPT_HUGE, MADV_OPT_NOHUGE };

struct config {
	enum kind kind;
	enum pattern pattern;
	enum madv madv;
	bool thp_disable;       /* prctl(PR_SET_THP_DISABLE) before mapping: no large folio */
	size_t stride;
	size_t size;
	unsigned threads;
	unsigned seconds;
	unsigned phase_seconds;
	unsigned fill_seconds;  /* with --hold: spread the first touch over this long */
	bool hold;
	bool once;              /* with hold: one pass, then idle until the end */
	unsigned char value;    /* the byte written per touch */
	size_t hold_shmem;      /* shared memory mapped and filled before the run, kept (0: none) */
	bool quiet;
	bool json;
};

/* One cache line per worker so the counters don't false-share. */
struct worker {
	pthread_t tid;
	unsigned idx;
	_Atomic uint64_t pages; /* single writer (the worker), read by main */
	int err;                /* negative errno, valid after join */
	const char *err_op;
} __attribute__((aligned(64)));

struct second_rec {
	unsigned t;
	enum pattern phase;
	uint64_t pages_per_s;
	uint64_t rss_kb;
	uint64_t shmem_kb;
};

struct proc_mem {
	uint64_t vmrss_kb;
	uint64_t shmem_kb;
	uint64_t vmhwm_kb;
};

static struct config g_cfg;
static size_t g_page;
static atomic_bool g_stop;
static int64_t g_t0_ns;       /* written before workers are released */
static int64_t g_deadline_ns; /* likewise */

static pthread_mutex_t g_go_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_go_cond = PTHREAD_COND_INITIALIZER;
static bool g_go;

static _Atomic unsigned g_passes_done; /* --once: workers whose pass is complete */
static _Atomic uint64_t g_peak_vmrss_kb;
static _Atomic uint64_t g_peak_rollup_kb;

static const char *kind_name(enum kind k)
{
	return k == KIND_SHMEM ? "shmem" : "anon";
}

static const char *pattern_name(enum pattern p)
{
	switch (p) {
	case PAT_DENSE:
		return "dense";
	case PAT_SPARSE:
		return "sparse";
	default:
		return "phased";
	}
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static bool stopped(void)
{
	return atomic_load_explicit(&g_stop, memory_order_relaxed);
}

static void request_stop(void)
{
	atomic_store_explicit(&g_stop, true, memory_order_relaxed);
}

static void atomic_max_u64(_Atomic uint64_t *p, uint64_t v)
{
	uint64_t cur = atomic_load_explicit(p, memory_order_relaxed);

	while (v > cur &&
	       !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

/* Phase in effect at @t_ns after start; phased alternates dense/sparse every P s. */
static enum pattern phase_at(int64_t t_ns)
{
	int64_t p_ns;

	if (g_cfg.pattern != PAT_PHASED)
		return g_cfg.pattern;
	p_ns = (int64_t)g_cfg.phase_seconds * NSEC_PER_SEC;
	if (t_ns < 0)
		t_ns = 0;
	return (t_ns / p_ns) % 2 == 0 ? PAT_DENSE : PAT_SPARSE;
}

/* ---- argument parsing ---- */

/* Parses "<digits>[K|M|G|T][B|iB]" (binary units). Returns 0 or -EINVAL/-ERANGE. */
static int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	uint64_t mult = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	switch (*end) {
	case 'k': case 'K':
		mult = 1ULL << 10;
		end++;
		break;
	case 'm': case 'M':
		mult = 1ULL << 20;
		end++;
		break;
	case 'g': case 'G':
		mult = 1ULL << 30;
		end++;
		break;
	case 't': case 'T':
		mult = 1ULL << 40;
		end++;
		break;
	default:
		break;
	}
	if (mult != 1) {
		if (*end == 'i' && end[1] == 'B')
			end += 2;
		else if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end != '\0')
		return -EINVAL;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

/* Parses a decimal integer in [min, max]. Returns 0 or -EINVAL/-ERANGE. */
static int parse_uint(const char *s, unsigned long min, unsigned long max, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end != '\0')
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = (unsigned)v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: " PROG " --kind anon|shmem --pattern dense|sparse|phased [options]\n"
		"\n"
		"Page-fault workload for measuring multi-size THP settings. Each thread\n"
		"maps a 2 MiB-aligned region, writes to it, unmaps it, and repeats.\n"
		"\n"
		"  -k, --kind KIND          anon (MAP_PRIVATE|MAP_ANONYMOUS) or shmem\n"
		"                           (MAP_SHARED|MAP_ANONYMOUS, governed by shmem_enabled)\n"
		"  -p, --pattern PAT        dense: 1 byte per 4K page; sparse: 1 byte per stride;\n"
		"                           phased: dense P s, sparse P s, dense P s, ...\n"
		"  -S, --stride SIZE        sparse stride, multiple of the page size (default 64K)\n"
		"  -z, --size SIZE          region size per thread (default 128M)\n"
		"  -t, --threads N          worker threads, 1..%d (default 1)\n"
		"  -s, --seconds S          run time, 1..%d (default 10)\n"
		"  -P, --phase-seconds P    phase length for --pattern phased, 1..%d (default 20)\n"
		"  -H, --hold               map and touch once, keep mapped and re-touch\n"
		"  -F, --fill-seconds S     with --hold: grow into the region at an even pace\n"
		"                           over S seconds (memory use grows steadily)\n"
		"                           (no new faults after the first pass)\n"
		"  -1, --once               touch the region once, then keep it mapped without\n"
		"                           touching it until the run ends (implies --hold);\n"
		"                           the run lasts --seconds or until the pass is\n"
		"                           complete, whichever is later\n"
		"  -V, --value BYTE         the byte written per touch, 0..255 (default 1);\n"
		"                           0 leaves every page's data all zero\n"
		"  -m, --madvise ADV        hugepage or nohugepage: madvise() the region\n"
		"                           (default: none, the knobs alone decide)\n"
		"  -G, --hold-shmem SIZE    first map SIZE of MAP_SHARED|MAP_ANONYMOUS memory,\n"
		"                           write every page, and keep it to the end untouched:\n"
		"                           a process holding shared memory while it faults\n"
		"                           another kind (a database backend's buffers)\n"
		"  -D, --thp-disable        prctl(PR_SET_THP_DISABLE, 1) first, as Redis does:\n"
		"                           no large folio for this process whatever the knobs\n"
		"  -q, --quiet              no per-second lines\n"
		"  -j, --json               print the summary as one JSON object on stdout\n"
		"                           (per-second lines then go to stderr)\n"
		"  -h, --help               show this help\n"
		"\n"
		"SIZE takes an optional K, M, G or T suffix (powers of 1024).\n"
		"Per-second line: t=<s> phase=<dense|sparse> pages_per_s=<n> rss_kb=<VmRSS>\n"
		"                 rss_shmem_kb=<RssShmem>\n"
		"Summary: summary kind= pattern= threads= seconds= pages_per_s= peak_rss_kb=\n"
		"         vmhwm_kb= pages=\n"
		"Exit: 0 ok (also on SIGINT/SIGTERM), 1 runtime error, 2 usage error.\n",
		MAX_THREADS, MAX_SECONDS, MAX_SECONDS);
}

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROG ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
	return 2;
}

/* Returns 0 to run, 2 on usage error, -1 if --help was printed. */
static int parse_args(int argc, char **argv, struct config *c)
{
	static const struct option opts[] = {
		{ "kind", required_argument, NULL, 'k' },
		{ "pattern", required_argument, NULL, 'p' },
		{ "stride", required_argument, NULL, 'S' },
		{ "size", required_argument, NULL, 'z' },
		{ "threads", required_argument, NULL, 't' },
		{ "seconds", required_argument, NULL, 's' },
		{ "phase-seconds", required_argument, NULL, 'P' },
		{ "hold", no_argument, NULL, 'H' },
		{ "fill-seconds", required_argument, NULL, 'F' },
		{ "once", no_argument, NULL, '1' },
		{ "value", required_argument, NULL, 'V' },
		{ "madvise", required_argument, NULL, 'm' },
		{ "thp-disable", no_argument, NULL, 'D' },
		{ "hold-shmem", required_argument, NULL, 'G' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool have_kind = false, have_pattern = false;
	uint64_t v;
	unsigned u;
	int o;

	*c = (struct config){
		.stride = 64 << 10,
		.size = 128 << 20,
		.threads = 1,
		.seconds = 10,
		.phase_seconds = 20,
		.value = 1,
	};

	opterr = 0; /* we print our own, clearer messages */
	while ((o = getopt_long(argc, argv, ":k:p:S:z:t:s:P:HF:1V:m:DG:qjh", opts, NULL)) != -1) {
		switch (o) {
		case 'k':
			if (!strcmp(optarg, "anon"))
				c->kind = KIND_ANON;
			else if (!strcmp(optarg, "shmem"))
				c->kind = KIND_SHMEM;
			else
				return usage_error("invalid --kind '%s' (expected anon or shmem)", optarg);
			have_kind = true;
			break;
		case 'p':
			if (!strcmp(optarg, "dense"))
				c->pattern = PAT_DENSE;
			else if (!strcmp(optarg, "sparse"))
				c->pattern = PAT_SPARSE;
			else if (!strcmp(optarg, "phased"))
				c->pattern = PAT_PHASED;
			else
				return usage_error("invalid --pattern '%s' (expected dense, sparse or phased)",
						   optarg);
			have_pattern = true;
			break;
		case 'S':
			if (parse_size(optarg, &v) || v == 0 || v > MAX_SIZE)
				return usage_error("invalid --stride '%s' (expected SIZE like 64K, up to 1T)",
						   optarg);
			if (v % g_page)
				return usage_error("--stride '%s' must be a multiple of the page size", optarg);
			c->stride = (size_t)v;
			break;
		case 'z':
			if (parse_size(optarg, &v) || v == 0 || v > MAX_SIZE)
				return usage_error("invalid --size '%s' (expected SIZE like 128M, up to 1T)",
						   optarg);
			if (v % g_page)
				return usage_error("--size '%s' must be a multiple of the page size", optarg);
			c->size = (size_t)v;
			break;
		case 't':
			if (parse_uint(optarg, 1, MAX_THREADS, &c->threads))
				return usage_error("invalid --threads '%s' (expected 1..1024)", optarg);
			break;
		case 's':
			if (parse_uint(optarg, 1, MAX_SECONDS, &c->seconds))
				return usage_error("invalid --seconds '%s' (expected whole seconds 1..3600)",
						   optarg);
			break;
		case 'P':
			if (parse_uint(optarg, 1, MAX_SECONDS, &c->phase_seconds))
				return usage_error("invalid --phase-seconds '%s' (expected 1..3600)", optarg);
			break;
		case 'F':
			if (parse_uint(optarg, 1, MAX_SECONDS, &c->fill_seconds))
				return usage_error("--fill-seconds: expected 1..%u, got '%s'", MAX_SECONDS, optarg);
			c->hold = true;
			break;
		case 'H':
			c->hold = true;
			break;
		case '1':
			c->once = true;
			c->hold = true;
			break;
		case 'V':
			if (parse_uint(optarg, 0, 255, &u))
				return usage_error("invalid --value '%s' (expected 0..255)", optarg);
			c->value = (unsigned char)u;
			break;
		case 'm':
			if (!strcmp(optarg, "hugepage"))
				c->madv = MADV_OPT_HUGE;
			else if (!strcmp(optarg, "nohugepage"))
				c->madv = MADV_OPT_NOHUGE;
			else if (!strcmp(optarg, "none"))
				c->madv = MADV_OPT_NONE;
			else
				return usage_error("invalid --madvise '%s' (expected hugepage, nohugepage or none)",
						   optarg);
			break;
		case 'D':
			c->thp_disable = true;
			break;
		case 'G':
			if (parse_size(optarg, &v) || v == 0 || v % g_page)
				return usage_error("invalid --hold-shmem '%s' (expected a size, a multiple of the page size)",
						   optarg);
			c->hold_shmem = (size_t)v;
			break;
		case 'q':
			c->quiet = true;
			break;
		case 'j':
			c->json = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		case ':':
			return usage_error("option '%s' requires an argument", argv[optind - 1]);
		default:
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'", argv[optind]);
	if (!have_kind)
		return usage_error("--kind is required (anon or shmem)");
	if (!have_pattern)
		return usage_error("--pattern is required (dense, sparse or phased)");
	return 0;
}

/* ---- /proc readers ---- */

/* Reads a small /proc file into @buf. Returns 0 or negative errno. */
static int read_small_file(const char *path, char *buf, size_t len)
{
	size_t got = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got < len - 1) {
		n = read(fd, buf + got, len - 1 - got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	return 0;
}

/* Value in kB of the "<key>" line (key includes the colon), or 0 if absent. */
static uint64_t field_kb(const char *buf, const char *key)
{
	size_t klen = strlen(key);
	const char *p = buf;

	while (p && *p) {
		if (!strncmp(p, key, klen))
			return strtoull(p + klen, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return 0;
}

static int read_status(struct proc_mem *m)
{
	char buf[8192];
	int rc = read_small_file("/proc/self/status", buf, sizeof(buf));

	if (rc)
		return rc;
	m->vmrss_kb = field_kb(buf, "VmRSS:");
	m->shmem_kb = field_kb(buf, "RssShmem:");
	m->vmhwm_kb = field_kb(buf, "VmHWM:");
	return 0;
}

static int read_rollup_rss(uint64_t *kb)
{
	char buf[4096];
	int rc = read_small_file("/proc/self/smaps_rollup", buf, sizeof(buf));

	if (rc)
		return rc;
	*kb = field_kb(buf, "Rss:");
	return 0;
}

static void sample_status_peak(struct proc_mem *out)
{
	struct proc_mem m = { 0 };

	if (read_status(&m) == 0)
		atomic_max_u64(&g_peak_vmrss_kb, m.vmrss_kb);
	if (out)
		*out = m;
}

static void sample_rollup_peak(void)
{
	uint64_t kb;

	if (read_rollup_rss(&kb) == 0)
		atomic_max_u64(&g_peak_rollup_kb, kb);
}

/* Sampler: VmRSS every 10 ms, smaps_rollup Rss every 100 ms, until stop. */
static void *sampler_main(void *arg)
{
	struct timespec ts;
	int64_t next = now_ns();
	unsigned i = 0;

	(void)arg;
	while (!stopped()) {
		sample_status_peak(NULL);
		if (i++ % SAMPLE_ROLLUP_EVERY == 0)
			sample_rollup_peak();
		next += SAMPLE_STATUS_NS;
		ts.tv_sec = next / NSEC_PER_SEC;
		ts.tv_nsec = next % NSEC_PER_SEC;
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	return NULL;
}

/* ---- workers ---- */

struct region {
	void *resv; /* whole reservation, unmapped in one call */
	size_t resv_len;
	char *work; /* 2 MiB-aligned working area of g_cfg.size bytes */
};

/*
 * Reserve size+2M with PROT_NONE, then map the real region MAP_FIXED at the
 * aligned address.  Mapping shmem directly and using an aligned slice would
 * leave the shmem file offset unaligned to the virtual address, which rules
 * out large folios; mapping at the aligned address gives offset 0 there.
 * Returns 0 or negative errno; *op names the failing call.
 */
static int map_region(struct region *r, const char **op)
{
	int flags = g_cfg.kind == KIND_SHMEM ? MAP_SHARED : MAP_PRIVATE;
	uintptr_t aligned;
	void *p;
	int err;

	r->resv_len = g_cfg.size + ALIGN_2M;
	r->resv = mmap(NULL, r->resv_len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r->resv == MAP_FAILED) {
		*op = "mmap(reserve)";
		return -errno;
	}
	aligned = ((uintptr_t)r->resv + ALIGN_2M - 1) & ~(uintptr_t)(ALIGN_2M - 1);
	p = mmap((void *)aligned, g_cfg.size, PROT_READ | PROT_WRITE,
		 flags | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		munmap(r->resv, r->resv_len);
		*op = g_cfg.kind == KIND_SHMEM ? "mmap(shmem)" : "mmap(anon)";
		return err;
	}
	r->work = p;
	if (g_cfg.madv != MADV_OPT_NONE &&
	    madvise(p, g_cfg.size,
		    g_cfg.madv == MADV_OPT_HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
		err = -errno;
		munmap(r->resv, r->resv_len);
		*op = "madvise";
		return err;
	}
	return 0;
}

static int unmap_region(struct region *r, const char **op)
{
	if (munmap(r->resv, r->resv_len)) {
		*op = "munmap";
		return -errno;
	}
	return 0;
}

/*
 * One pass over the region with @phase's step.  Returns early on stop, at the
 * deadline, or when the phase changes (so the next pass uses the new one).
 */
static void touch_pass(struct worker *w, volatile char *base, enum pattern phase,
		       uint64_t *pages, bool fill)
{
	size_t step = phase == PAT_DENSE ? g_page : g_cfg.stride;
	size_t size = g_cfg.size;
	size_t off = 0;
	int64_t fill_ns = fill ? (int64_t)g_cfg.fill_seconds * 1000000000LL : 0;
	int64_t fill_t0 = now_ns();

	while (off < size) {
		size_t batch_end = off + step * TOUCH_BATCH;
		int64_t now;

		if (batch_end > size)
			batch_end = size;
		for (; off < batch_end; off += step) {
			/* Per touch: one fault can cost ~100 us with 2M folios. */
			if (stopped())
				goto out;
			base[off] = (char)g_cfg.value;
			(*pages)++;
		}
		atomic_store_explicit(&w->pages, *pages, memory_order_relaxed);
		now = now_ns();
		/* --fill-seconds: no further than the even pace allows (bounded sleeps) */
		while (fill_ns && !stopped() && now < g_deadline_ns &&
		       (double)off > (double)size * (double)(now - fill_t0) / (double)fill_ns) {
			struct timespec ts = { 0, 2000000 };
			nanosleep(&ts, NULL);
			now = now_ns();
		}
		/* --once: the pass always completes (main waits for it) */
		if (now >= g_deadline_ns && !g_cfg.once) {
			request_stop();
			break;
		}
		if (phase_at(now - g_t0_ns) != phase)
			break;
	}
out:
	atomic_store_explicit(&w->pages, *pages, memory_order_relaxed);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct region r = { 0 };
	uint64_t pages = 0;
	int rc = 0;

	pthread_mutex_lock(&g_go_lock);
	while (!g_go)
		pthread_cond_wait(&g_go_cond, &g_go_lock);
	pthread_mutex_unlock(&g_go_lock);

	if (g_cfg.hold) {
		rc = map_region(&r, &w->err_op);
		if (rc)
			goto fail;
	}
	bool first = true;
	while (!stopped()) {
		if (!g_cfg.hold) {
			rc = map_region(&r, &w->err_op);
			if (rc)
				goto fail;
		}
		if (g_cfg.once && !first) {
			/* --once: mapped, untouched, until main stops the run */
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			atomic_fetch_add(&g_passes_done, 1);
			while (!stopped())
				nanosleep(&ts, NULL);
			break;
		}
		touch_pass(w, r.work, phase_at(now_ns() - g_t0_ns), &pages, first && g_cfg.fill_seconds);
		first = false;
		if (!g_cfg.hold) {
			rc = unmap_region(&r, &w->err_op);
			if (rc)
				goto fail;
		}
	}
	if (g_cfg.hold) {
		rc = unmap_region(&r, &w->err_op);
		if (rc)
			goto fail;
	}
	return NULL;
fail:
	w->err = rc;
	request_stop();
	return NULL;
}

/* ---- main ---- */

static uint64_t total_pages(struct worker *ws, unsigned n)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < n; i++)
		sum += atomic_load_explicit(&ws[i].pages, memory_order_relaxed);
	return sum;
}

/*
 * Sleeps until @tick_ns, a worker's stop, or a signal in @set.
 * Returns the signal number or 0.
 */
static int wait_until(int64_t tick_ns, const sigset_t *set)
{
	while (!stopped()) {
		int64_t rem = tick_ns - now_ns();
		struct timespec ts;
		int sig;

		if (rem <= 0)
			return 0;
		if (rem > MAIN_WAIT_SLICE_NS)
			rem = MAIN_WAIT_SLICE_NS;
		ts.tv_sec = rem / NSEC_PER_SEC;
		ts.tv_nsec = rem % NSEC_PER_SEC;
		sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0)
			return sig;
	}
	return 0;
}

static void release_workers(void)
{
	pthread_mutex_lock(&g_go_lock);
	g_go = true;
	pthread_cond_broadcast(&g_go_cond);
	pthread_mutex_unlock(&g_go_lock);
}

static void print_second(FILE *f, const struct second_rec *s)
{
	fprintf(f, "t=%u phase=%s pages_per_s=%" PRIu64 " rss_kb=%" PRIu64
		" rss_shmem_kb=%" PRIu64 "\n",
		s->t, pattern_name(s->phase), s->pages_per_s, s->rss_kb, s->shmem_kb);
	fflush(f);
}

int main(int argc, char **argv)
{
	static struct second_rec secs[MAX_SECONDS];
	unsigned nsecs = 0, started = 0;
	struct worker *ws = NULL;
	pthread_t sampler;
	bool sampler_up = false, interrupted = false;
	uint64_t pages = 0, prev_pages = 0, peak, avg, vmhwm_kb;
	int64_t prev_ns, end_ns;
	struct proc_mem pm;
	double elapsed;
	sigset_t sigs;
	int rc, ret = 0;

	g_page = (size_t)sysconf(_SC_PAGESIZE);
	rc = parse_args(argc, argv, &g_cfg);
	if (rc == -1)
		return 0;
	if (rc)
		return rc;
	if (g_cfg.thp_disable && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0) {
		fprintf(stderr, PROG ": prctl(PR_SET_THP_DISABLE): %s\n", strerror(errno));
		return 1;
	}

	if (g_cfg.hold_shmem) {
		unsigned char *h = mmap(NULL, g_cfg.hold_shmem, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (h == MAP_FAILED) {
			fprintf(stderr, PROG ": mmap --hold-shmem: %s\n", strerror(errno));
			return 1;
		}
		for (size_t off = 0; off < g_cfg.hold_shmem; off += g_page)
			h[off] = 1;
	}

	/* Block before creating threads so only sigtimedwait() in main sees them. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	ws = aligned_alloc(64, sizeof(*ws) * g_cfg.threads);
	if (!ws) {
		fprintf(stderr, PROG ": out of memory\n");
		return 1;
	}
	memset(ws, 0, sizeof(*ws) * g_cfg.threads);

	for (started = 0; started < g_cfg.threads; started++) {
		ws[started].idx = started;
		rc = pthread_create(&ws[started].tid, NULL, worker_main, &ws[started]);
		if (rc) {
			fprintf(stderr, PROG ": pthread_create: %s\n", strerror(rc));
			ret = 1;
			break;
		}
	}

	/* Start the clock just before releasing the workers so all share it. */
	g_t0_ns = now_ns();
	g_deadline_ns = g_t0_ns + (int64_t)g_cfg.seconds * NSEC_PER_SEC;
	if (ret)
		request_stop();
	else if ((rc = pthread_create(&sampler, NULL, sampler_main, NULL)) != 0) {
		fprintf(stderr, PROG ": pthread_create: %s\n", strerror(rc));
		ret = 1;
		request_stop();
	} else {
		sampler_up = true;
	}
	release_workers();

	prev_ns = g_t0_ns;
	end_ns = g_deadline_ns;
	for (unsigned k = 1; !ret && k <= g_cfg.seconds; k++) {
		int64_t tick = g_t0_ns + (int64_t)k * NSEC_PER_SEC;
		int64_t now;
		struct second_rec *s;
		int sig = wait_until(tick, &sigs);

		now = now_ns();
		if (sig || (stopped() && now < tick)) {
			/* Signal or worker error: drop the partial second. */
			interrupted = sig != 0;
			end_ns = now < g_deadline_ns ? now : g_deadline_ns;
			request_stop();
			pages = total_pages(ws, g_cfg.threads);
			break;
		}
		pages = total_pages(ws, g_cfg.threads);
		sample_status_peak(&pm);
		s = &secs[nsecs++];
		s->t = k;
		s->phase = phase_at((int64_t)(k - 1) * NSEC_PER_SEC);
		s->pages_per_s = (uint64_t)((double)(pages - prev_pages) * NSEC_PER_SEC /
					    (double)(now - prev_ns) + 0.5);
		s->rss_kb = pm.vmrss_kb;
		s->shmem_kb = pm.shmem_kb;
		prev_pages = pages;
		prev_ns = now;
		if (!g_cfg.quiet)
			print_second(g_cfg.json ? stderr : stdout, s);
	}
	/* --once: the run lasts until every worker's pass is complete too */
	while (g_cfg.once && !ret && !interrupted && !stopped() &&
	       atomic_load(&g_passes_done) < g_cfg.threads) {
		struct timespec ts = { 0, MAIN_WAIT_SLICE_NS };

		if (sigtimedwait(&sigs, NULL, &ts) > 0)
			interrupted = true;
		end_ns = now_ns();
		pages = total_pages(ws, g_cfg.threads);
	}
	request_stop();

	for (unsigned i = 0; i < started; i++)
		pthread_join(ws[i].tid, NULL);
	if (sampler_up)
		pthread_join(sampler, NULL);

	for (unsigned i = 0; i < started; i++) {
		if (ws[i].err) {
			fprintf(stderr, PROG ": thread %u: %s of %zu bytes failed: %s\n", i,
				ws[i].err_op, g_cfg.size, strerror(-ws[i].err));
			ret = 1;
		}
	}
	if (ret) {
		free(ws);
		return ret;
	}

	memset(&pm, 0, sizeof(pm));
	read_status(&pm);
	vmhwm_kb = pm.vmhwm_kb;
	peak = atomic_load(&g_peak_vmrss_kb);
	if (atomic_load(&g_peak_rollup_kb) > peak)
		peak = atomic_load(&g_peak_rollup_kb);
	elapsed = (double)(end_ns - g_t0_ns) / NSEC_PER_SEC;
	avg = elapsed > 0 ? (uint64_t)((double)pages / elapsed + 0.5) : 0;

	if (g_cfg.json) {
		printf("{\"kind\":\"%s\",\"pattern\":\"%s\",\"threads\":%u,\"seconds\":%.3f,"
		       "\"pages_per_s\":%" PRIu64 ",\"peak_rss_kb\":%" PRIu64
		       ",\"vmhwm_kb\":%" PRIu64 ",\"pages\":%" PRIu64 ","
		       "\"peak_vmrss_kb\":%" PRIu64 ",\"peak_smaps_rss_kb\":%" PRIu64 ","
		       "\"size_bytes\":%zu,\"stride_bytes\":%zu,\"phase_seconds\":%u,"
		       "\"requested_seconds\":%u,\"hold\":%s,\"once\":%s,\"value\":%u,"
		       "\"interrupted\":%s,\"per_second\":[",
		       kind_name(g_cfg.kind), pattern_name(g_cfg.pattern), g_cfg.threads, elapsed,
		       avg, peak, vmhwm_kb, pages, atomic_load(&g_peak_vmrss_kb),
		       atomic_load(&g_peak_rollup_kb), g_cfg.size, g_cfg.stride,
		       g_cfg.phase_seconds, g_cfg.seconds, g_cfg.hold ? "true" : "false",
		       g_cfg.once ? "true" : "false", (unsigned)g_cfg.value, interrupted ? "true" : "false");
		for (unsigned i = 0; i < nsecs; i++)
			printf("%s{\"t\":%u,\"phase\":\"%s\",\"pages_per_s\":%" PRIu64
			       ",\"rss_kb\":%" PRIu64 ",\"rss_shmem_kb\":%" PRIu64 "}",
			       i ? "," : "", secs[i].t, pattern_name(secs[i].phase),
			       secs[i].pages_per_s, secs[i].rss_kb, secs[i].shmem_kb);
		printf("]}\n");
	} else {
		printf("summary kind=%s pattern=%s threads=%u seconds=%.3f pages_per_s=%" PRIu64
		       " peak_rss_kb=%" PRIu64 " vmhwm_kb=%" PRIu64 " pages=%" PRIu64 "\n",
		       kind_name(g_cfg.kind), pattern_name(g_cfg.pattern), g_cfg.threads, elapsed,
		       avg, peak, vmhwm_kb, pages);
	}
	free(ws);
	if (fflush(stdout)) {
		fprintf(stderr, PROG ": writing output: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}
