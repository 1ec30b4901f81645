/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/taskstats.h>
#include <netlink/attr.h>
#include <netlink/errno.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/handlers.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mthp/taskstats.h"
#include "mthp/util.h"

/* struct taskstats only ever grows at its end, so a field is present when the
 * payload covers it and the version is at least the one that added it.
 * v14 appended irq_count and irq_delay_total right after wpcopy; build
 * headers older than v14 lack them, so their offsets are derived. */
#define TS_IRQ_COUNT_OFF (offsetof(struct taskstats, wpcopy_delay_total) + sizeof(__u64))
#if TASKSTATS_VERSION >= 14
_Static_assert(offsetof(struct taskstats, irq_count) == TS_IRQ_COUNT_OFF, "taskstats v14 layout");
#endif
/* Everything up to here exists in every version (v1). */
#define TS_V1_END (offsetof(struct taskstats, cpu_run_virtual_total) + sizeof(__u64))

#define DELAY_FIELD(kname, field, since_version)                                \
        { kname, offsetof(struct taskstats, field##_count),                     \
          offsetof(struct taskstats, field##_delay_total), since_version }

static const struct delay_field {
        const char *name;
        size_t count_off;
        size_t total_off;
        uint16_t since; /* struct taskstats version that added the pair */
} delay_fields[_MTHP_DELAY_KIND_MAX] = {
        [MTHP_DELAY_CPU] = DELAY_FIELD("cpu", cpu, 1),
        [MTHP_DELAY_BLKIO] = DELAY_FIELD("blkio", blkio, 1),
        [MTHP_DELAY_SWAPIN] = DELAY_FIELD("swapin", swapin, 1),
        [MTHP_DELAY_RECLAIM] = DELAY_FIELD("reclaim", freepages, 7),
        [MTHP_DELAY_THRASHING] = DELAY_FIELD("thrashing", thrashing, 9),
        [MTHP_DELAY_COMPACT] = DELAY_FIELD("compact", compact, 11),
        [MTHP_DELAY_WPCOPY] = DELAY_FIELD("wpcopy", wpcopy, 13),
        [MTHP_DELAY_IRQ] = { "irq", TS_IRQ_COUNT_OFF, TS_IRQ_COUNT_OFF + sizeof(__u64), 14 },
};

struct mthp_taskstats {
        struct nl_sock *sock;
        struct nl_cb *cb;
        int family;
        int delayacct_fd; /* /proc/sys/kernel/task_delayacct, or -1 */
        struct {          /* the one query in flight */
                uint32_t seq;
                uint32_t tgid;
                bool done;
                int error;
                struct mthp_delays *out;
        } q;
};

const char *mthp_delay_kind_to_string(enum mthp_delay_kind kind) {
        if ((unsigned) kind >= _MTHP_DELAY_KIND_MAX)
                return NULL;
        return delay_fields[kind].name;
}

/* The payload is only 4-byte aligned inside a netlink message. */
static uint64_t load_u64(const uint8_t *p, size_t off) {
        uint64_t v;
        memcpy(&v, p + off, sizeof(v));
        return v;
}

int mthp_taskstats_parse_stats(const void *stats, size_t len, struct mthp_delays *out) {
        const uint8_t *p = stats;
        uint16_t version;

        if (!p || !out || len < TS_V1_END)
                return -EBADMSG;
        memcpy(&version, p + offsetof(struct taskstats, version), sizeof(version));
        if (version == 0)
                return -EBADMSG;

        out->version = version;
        out->present = 0;
        out->cpu_run_ns = load_u64(p, offsetof(struct taskstats, cpu_run_virtual_total));
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++) {
                const struct delay_field *f = &delay_fields[k];
                if (version < f->since || len < f->total_off + sizeof(uint64_t)) {
                        out->delay[k] = (struct mthp_delay) { 0 };
                        continue;
                }
                out->delay[k].count = load_u64(p, f->count_off);
                out->delay[k].total_ns = load_u64(p, f->total_off);
                out->present |= 1u << k;
        }
        return 0;
}

int mthp_taskstats_parse_reply(const void *attrs, size_t len, uint32_t tgid, struct mthp_delays *out) {
        const struct nlattr *a, *n;
        bool have_tgid = false, have_stats = false;
        int rem, nrem, r;

        if (!attrs || !out || len > INT_MAX)
                return -EBADMSG;
        nla_for_each_attr(a, attrs, (int) len, rem) {
                if (nla_type(a) != TASKSTATS_TYPE_AGGR_TGID)
                        continue;
                /* Other members (TASKSTATS_TYPE_NULL alignment padding) are skipped. */
                nla_for_each_nested(n, a, nrem) {
                        switch (nla_type(n)) {
                        case TASKSTATS_TYPE_TGID:
                                if (nla_len(n) < (int) sizeof(uint32_t) || nla_get_u32(n) != tgid)
                                        return -EBADMSG;
                                have_tgid = true;
                                break;
                        case TASKSTATS_TYPE_STATS:
                                r = mthp_taskstats_parse_stats(nla_data(n), (size_t) nla_len(n), out);
                                if (r < 0)
                                        return r;
                                have_stats = true;
                                break;
                        }
                }
        }
        if (!have_tgid || !have_stats)
                return -EBADMSG;
        out->tgid = tgid;
        return 0;
}

int mthp_delays_rates(const struct mthp_delays *prev, const struct mthp_delays *cur, struct mthp_delay_rates *out) {
        if (!prev || !cur || !out || cur->sampled_ns <= prev->sampled_ns)
                return -EINVAL;
        if (prev->tgid != cur->tgid)
                return -ESTALE;

        double secs = (double) (cur->sampled_ns - prev->sampled_ns) / 1e9;
        *out = (struct mthp_delay_rates) { .present = prev->present & cur->present, .interval_sec = secs };
        for (unsigned k = 0; k < _MTHP_DELAY_KIND_MAX; k++) {
                const struct mthp_delay *a = &prev->delay[k], *b = &cur->delay[k];
                if (!(out->present & (1u << k)) || b->count < a->count || b->total_ns < a->total_ns)
                        continue;
                out->rate[k].events_per_sec = (double) (b->count - a->count) / secs;
                out->rate[k].ms_per_sec = (double) (b->total_ns - a->total_ns) / 1e6 / secs;
        }
        return 0;
}

/* libnl reports its own error codes; callers of this library get errno. */
static int errno_from_nlerr(int nlerr) {
        switch (nlerr < 0 ? -nlerr : nlerr) {
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_AGAIN:
                return -ETIMEDOUT; /* SO_RCVTIMEO expired */
        case NLE_INTR:
                return -EINTR;
        case NLE_PERM:
        case NLE_NOACCESS:
                return -EPERM;
        case NLE_OBJ_NOTFOUND:
                return -ENOENT;
        case NLE_AF_NOSUPPORT:
                return -EAFNOSUPPORT;
        case NLE_MSG_TRUNC:
        case NLE_MSG_TOOSHORT:
        case NLE_MSG_OVERFLOW:
        case NLE_PARSE_ERR:
                return -EBADMSG;
        default:
                return -EIO;
        }
}

/* Replies to an earlier, timed-out query may still be queued: skip them. */
static int on_seq_check(struct nl_msg *msg, void *arg) {
        struct mthp_taskstats *ts = arg;
        return nlmsg_hdr(msg)->nlmsg_seq == ts->q.seq ? NL_OK : NL_SKIP;
}

static int on_reply(struct nl_msg *msg, void *arg) {
        struct mthp_taskstats *ts = arg;
        struct nlmsghdr *nlh = nlmsg_hdr(msg);

        ts->q.done = true;
        if (nlh->nlmsg_type != ts->family || !genlmsg_valid_hdr(nlh, 0)) {
                ts->q.error = -EBADMSG;
                return NL_STOP;
        }
        const struct genlmsghdr *g = nlmsg_data(nlh);
        if (g->cmd != TASKSTATS_CMD_NEW) {
                ts->q.error = -EBADMSG;
                return NL_STOP;
        }
        ts->q.error = mthp_taskstats_parse_reply(genlmsg_attrdata(g, 0), (size_t) genlmsg_attrlen(g, 0),
                                                 ts->q.tgid, ts->q.out);
        ts->q.out->sampled_ns = mthp_now_nsec(CLOCK_MONOTONIC);
        return NL_STOP;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg) {
        struct mthp_taskstats *ts = arg;
        (void) who;
        ts->q.done = true;
        /* The kernel answers -ESRCH for a gone process, -EPERM without CAP_NET_ADMIN. */
        ts->q.error = e->error < 0 ? e->error : -EBADMSG;
        return NL_STOP;
}

void mthp_taskstats_close(struct mthp_taskstats *ts) {
        if (!ts)
                return;
        if (ts->cb)
                nl_cb_put(ts->cb);
        if (ts->sock)
                nl_socket_free(ts->sock); /* closes the socket */
        if (ts->delayacct_fd >= 0)
                close(ts->delayacct_fd);
        free(ts);
}

static void taskstats_closep(struct mthp_taskstats **ts) {
        mthp_taskstats_close(*ts);
}

int mthp_taskstats_open_at(const struct mthp_host *host, struct mthp_taskstats **ret) {
        _cleanup_(taskstats_closep) struct mthp_taskstats *ts = NULL;
        const struct timeval tv = { .tv_usec = MTHP_TASKSTATS_TIMEOUT_MS * 1000 };
        int r;

        if (!ret)
                return -EINVAL;
        ts = calloc(1, sizeof(*ts));
        if (!ts)
                return -ENOMEM;
        ts->delayacct_fd = -1;
        ts->sock = nl_socket_alloc();
        if (!ts->sock)
                return -ENOMEM;
        r = genl_connect(ts->sock);
        if (r < 0)
                return errno_from_nlerr(r);
        /* Bounds every receive, including the family lookup below. */
        if (setsockopt(nl_socket_get_fd(ts->sock), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        r = genl_ctrl_resolve(ts->sock, TASKSTATS_GENL_NAME);
        if (r < 0)
                return errno_from_nlerr(r);
        ts->family = r;
        /* A query is answered by exactly one message, the reply or an error;
         * without an ACK behind each reply nothing is left queued. */
        nl_socket_disable_auto_ack(ts->sock);

        ts->cb = nl_cb_alloc(NL_CB_DEFAULT);
        if (!ts->cb)
                return -ENOMEM;
        if (nl_cb_set(ts->cb, NL_CB_VALID, NL_CB_CUSTOM, on_reply, ts) < 0 ||
            nl_cb_set(ts->cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, on_seq_check, ts) < 0 ||
            nl_cb_err(ts->cb, NL_CB_CUSTOM, on_error, ts) < 0)
                return -EINVAL;

        if (host) {
                /* Absent before Linux 5.14; then the reply alone decides. */
                int fd = mthp_host_open_file(host, "/proc/sys/kernel/task_delayacct", O_RDONLY);
                ts->delayacct_fd = fd >= 0 ? fd : -1;
        }

        *ret = ts;
        ts = NULL;
        return 0;
}

int mthp_taskstats_open(struct mthp_taskstats **ret) {
        struct mthp_host *host;
        int r = mthp_host_open("/", &host);
        if (r < 0)
                return r;
        r = mthp_taskstats_open_at(host, ret);
        mthp_host_free(host);
        return r;
}

static bool delay_accounting_on(const struct mthp_taskstats *ts, const struct mthp_delays *d) {
        char buf[16];

        if (ts->delayacct_fd >= 0 && mthp_read_fd(ts->delayacct_fd, buf, sizeof(buf)) > 0 &&
            (buf[0] == '0' || buf[0] == '1') && (buf[1] == '\n' || buf[1] == 0))
                return buf[0] == '1';
        /* Without the sysctl (before 5.14, or CONFIG_TASK_DELAY_ACCT=n) the
         * kernel filled even the CPU fields only with accounting on; any task
         * that has run once has been switched in at least once. */
        return d->cpu_run_ns != 0 || d->delay[MTHP_DELAY_CPU].count != 0;
}

static void nlmsg_freep(struct nl_msg **m) {
        if (*m)
                nlmsg_free(*m);
}

/* Waits for the reply to the query in ts->q, at most until deadline. */
static int receive_reply(struct mthp_taskstats *ts, uint64_t deadline) {
        struct pollfd pfd = { .fd = nl_socket_get_fd(ts->sock), .events = POLLIN };

        while (!ts->q.done) {
                uint64_t now = mthp_now_nsec(CLOCK_MONOTONIC);
                if (now >= deadline)
                        return -ETIMEDOUT;
                int ms = (int) ((deadline - now + 999999) / 1000000);
                int n = poll(&pfd, 1, ms);
                if (n < 0 && errno != EINTR)
                        return -errno;
                if (n <= 0)
                        continue;
                int r = nl_recvmsgs(ts->sock, ts->cb);
                if (r < 0 && !ts->q.done)
                        return errno_from_nlerr(r);
        }
        return ts->q.error;
}

int mthp_taskstats_query_tgid(struct mthp_taskstats *ts, pid_t pid, struct mthp_delays *out) {
        _cleanup_(nlmsg_freep) struct nl_msg *msg = NULL;
        int r;

        if (!ts || !out || pid <= 0)
                return -EINVAL;
        msg = nlmsg_alloc();
        if (!msg)
                return -ENOMEM;
        if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, ts->family, 0, 0, TASKSTATS_CMD_GET,
                         TASKSTATS_GENL_VERSION) ||
            nla_put_u32(msg, TASKSTATS_CMD_ATTR_TGID, (uint32_t) pid) < 0)
                return -ENOMEM;

        uint64_t deadline = mthp_now_nsec(CLOCK_MONOTONIC) + (uint64_t) MTHP_TASKSTATS_TIMEOUT_MS * 1000000u;
        r = nl_send_auto(ts->sock, msg);
        if (r < 0)
                return errno_from_nlerr(r);

        *out = (struct mthp_delays) { 0 };
        ts->q.seq = nlmsg_hdr(msg)->nlmsg_seq;
        ts->q.tgid = (uint32_t) pid;
        ts->q.done = false;
        ts->q.error = 0;
        ts->q.out = out;
        r = receive_reply(ts, deadline);
        ts->q.out = NULL;
        if (r < 0)
                return r;
        return delay_accounting_on(ts, out) ? 0 : -EOPNOTSUPP;
}
