/* SPDX-License-Identifier: MIT */
/* The sd_notify contract of mthpd, checked the way systemd would see it: a
 * NOTIFY_SOCKET datagram socket in a temp dir, WATCHDOG_USEC/WATCHDOG_PID in
 * the environment, the real mthpd on a fake host. Checks READY=1 within 2 s,
 * a WATCHDOG=1 at least every WATCHDOG_USEC/2, STATUS= lines, RELOADING=1
 * with MONOTONIC_USEC= then READY=1 on SIGHUP, STOPPING=1 and exit 0 on
 * SIGTERM, and that every message comes from the main PID (NotifyAccess=main).
 * Prints every message and the measured intervals.
 * Usage: notify-contract MTHPD FAKEHOST FAKESYSFS */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WATCHDOG_USEC 1000000ULL
#define SEC 1000000ULL
#define WATCH_SPAN (4 * SEC) /* watch the pings this long between READY and SIGHUP */
#define MAX_PINGS 256

static char tmpdir[] = "/tmp/mthpd-notify.XXXXXX";
static int sock = -1;
static pid_t child = -1;
static uint64_t t0;
static uint64_t pings[MAX_PINGS];
static unsigned n_pings, n_status;
static char last_status[512];

static uint64_t now_usec(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * SEC + (uint64_t) ts.tv_nsec / 1000;
}

static int run(char *const argv[]) {
        pid_t p = fork();
        if (p < 0)
                return -errno;
        if (p == 0) {
                execv(argv[0], argv);
                _exit(127);
        }
        int st;
        if (waitpid(p, &st, 0) < 0)
                return -errno;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void cleanup(void) {
        if (child > 0) {
                kill(child, SIGKILL);
                waitpid(child, NULL, 0);
                child = -1;
        }
        if (sock >= 0)
                close(sock);
        char *rm[] = { "/bin/rm", "-rf", tmpdir, NULL };
        (void) run(rm);
}

static void dump_log(void) {
        char path[256], line[512];
        snprintf(path, sizeof(path), "%s/mthpd.log", tmpdir);
        FILE *f = fopen(path, "re");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                fprintf(stderr, "  log: %s", line);
        fclose(f);
}

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
        va_list ap;
        fprintf(stderr, "FAIL: ");
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        dump_log();
        cleanup();
        exit(1);
}

/* The value of KEY= in a notification (one assignment per line), or NULL. */
static const char *field(const char *msg, const char *key, char *val, size_t valsz) {
        size_t klen = strlen(key);
        for (const char *l = msg; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
                if (strncmp(l, key, klen) == 0 && l[klen] == '=') {
                        size_t n = strcspn(l + klen + 1, "\n");
                        if (n >= valsz)
                                n = valsz - 1;
                        memcpy(val, l + klen + 1, n);
                        val[n] = '\0';
                        return val;
                }
        }
        return NULL;
}

static bool has(const char *msg, const char *key, const char *value) {
        char v[512];
        return field(msg, key, v, sizeof(v)) && strcmp(v, value) == 0;
}

/* Receives one notification until deadline: 1 with msg/at filled, 0 on
 * timeout. Fails the test on a sender other than the main PID. */
static int receive(uint64_t deadline, char *msg, size_t msgsz, uint64_t *at) {
        for (;;) {
                uint64_t now = now_usec();
                if (now >= deadline)
                        return 0;
                struct pollfd pfd = { .fd = sock, .events = POLLIN };
                int r = poll(&pfd, 1, (int) ((deadline - now + 999) / 1000));
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        fail("poll on the notify socket: %s", strerror(errno));
                if (r == 0)
                        return 0;
                union {
                        struct cmsghdr h;
                        char buf[CMSG_SPACE(sizeof(struct ucred))];
                } control;
                struct iovec iov = { .iov_base = msg, .iov_len = msgsz - 1 };
                struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = &control,
                                     .msg_controllen = sizeof(control) };
                ssize_t n = recvmsg(sock, &mh, MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        continue;
                if (n < 0)
                        fail("recvmsg on the notify socket: %s", strerror(errno));
                msg[n] = '\0';
                *at = now_usec();
                struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
                if (!c || c->cmsg_type != SCM_CREDENTIALS)
                        fail("notification without sender credentials: '%s'", msg);
                struct ucred uc;
                memcpy(&uc, CMSG_DATA(c), sizeof(uc));
                if (uc.pid != child)
                        fail("notification from pid %d, not the main pid %d: '%s'", (int) uc.pid, (int) child, msg);
                char shown[1024];
                snprintf(shown, sizeof(shown), "%s", msg);
                for (char *p = shown; *p; p++)
                        if (*p == '\n')
                                *p = ' ';
                printf("  +%6.3fs %s\n", (double) (*at - t0) / 1e6, shown);
                if (has(msg, "WATCHDOG", "1") && n_pings < MAX_PINGS)
                        pings[n_pings++] = *at;
                char st[512];
                if (field(msg, "STATUS", st, sizeof(st))) {
                        n_status++;
                        snprintf(last_status, sizeof(last_status), "%s", st);
                }
                return 1;
        }
}

/* Waits up to timeout for a notification with KEY=VALUE; returns when it
 * came (its text in msg) or fails with what. */
static uint64_t expect(const char *key, const char *value, uint64_t timeout, char *msg, size_t msgsz,
                       const char *what) {
        uint64_t at, deadline = now_usec() + timeout;
        while (receive(deadline, msg, msgsz, &at))
                if (has(msg, key, value))
                        return at;
        fail("no %s=%s within %.1f s: %s", key, value, (double) timeout / 1e6, what);
}

static void start_mthpd(char **argv, const char *fakesysfs) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char notify[sizeof(sa.sun_path)], conf[200], root[200], state[200], logf[200];
        snprintf(notify, sizeof(notify), "%s/notify", tmpdir);
        snprintf(conf, sizeof(conf), "%s/mthpd.conf", tmpdir);
        snprintf(root, sizeof(root), "%s/root", tmpdir);
        snprintf(state, sizeof(state), "%s/state", tmpdir);
        snprintf(logf, sizeof(logf), "%s/mthpd.log", tmpdir);

        FILE *f = fopen(conf, "we");
        if (!f || fputs("[Daemon]\nInterval=1s\n", f) < 0 || fclose(f) != 0)
                fail("cannot write %s: %s", conf, strerror(errno));
        char *create[] = { argv[2], "create", root, NULL };
        int r = run(create);
        if (r != 0)
                fail("%s create %s exited %d", argv[2], root, r);

        sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        memcpy(sa.sun_path, notify, sizeof(notify));
        int one = 1;
        if (sock < 0 || bind(sock, (struct sockaddr *) &sa, sizeof(sa)) < 0 ||
            setsockopt(sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) < 0)
                fail("cannot bind the notify socket %s: %s", notify, strerror(errno));

        t0 = now_usec();
        child = fork();
        if (child < 0)
                fail("fork: %s", strerror(errno));
        if (child == 0) {
                char pid[32], usec[32];
                snprintf(pid, sizeof(pid), "%d", (int) getpid());
                snprintf(usec, sizeof(usec), "%llu", (unsigned long long) WATCHDOG_USEC);
                setenv("NOTIFY_SOCKET", notify, 1);
                setenv("WATCHDOG_USEC", usec, 1);
                setenv("WATCHDOG_PID", pid, 1);
                setenv("LD_PRELOAD", fakesysfs, 1);
                /* under ASan the preload would come before its runtime */
                const char *asan = getenv("ASAN_OPTIONS");
                char opts[512];
                snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", asan ? asan : "", asan ? ":" : "");
                setenv("ASAN_OPTIONS", opts, 1);
                if (!freopen(logf, "we", stderr))
                        _exit(126);
                char *args[] = { argv[1], "--root", root, "--state-dir", state, "--no-bus", "-c", conf, NULL };
                execv(args[0], args);
                _exit(127);
        }
}

int main(int argc, char **argv) {
        char msg[4096], v[64];
        if (argc != 4) {
                fprintf(stderr, "usage: %s MTHPD FAKEHOST FAKESYSFS\n", argv[0]);
                return 2;
        }
        if (!mkdtemp(tmpdir)) {
                perror("mkdtemp");
                return 1;
        }
        setvbuf(stdout, NULL, _IOLBF, 0);
        start_mthpd(argv, argv[3]);

        /* 1. READY=1 within 2 s of the start */
        uint64_t ready = expect("READY", "1", 2 * SEC, msg, sizeof(msg), "mthpd never said it is ready");
        printf("ok - READY=1 after %.3f s\n", (double) (ready - t0) / 1e6);

        /* 2. pings at least every WATCHDOG_USEC/2, and STATUS= lines */
        uint64_t at, until = ready + WATCH_SPAN;
        unsigned first = n_pings;
        while (receive(until, msg, sizeof(msg), &at))
                ;
        if (n_pings - first < WATCH_SPAN / (WATCHDOG_USEC / 2))
                fail("%u WATCHDOG=1 in %.1f s; expected at least %llu", n_pings - first, (double) WATCH_SPAN / 1e6,
                     WATCH_SPAN / (WATCHDOG_USEC / 2));
        uint64_t max_gap = pings[first] - ready, sum = 0;
        for (unsigned i = first + 1; i < n_pings; i++) {
                uint64_t gap = pings[i] - pings[i - 1];
                sum += gap;
                if (gap > max_gap)
                        max_gap = gap;
        }
        printf("watchdog: WATCHDOG_USEC=%.3f s; %u pings in %.1f s; first %.3f s after READY; mean gap %.3f s; "
               "max gap %.3f s (limit %.3f s)\n",
               (double) WATCHDOG_USEC / 1e6, n_pings - first, (double) WATCH_SPAN / 1e6,
               (double) (pings[first] - ready) / 1e6,
               n_pings - first > 1 ? (double) sum / (n_pings - first - 1) / 1e6 : 0.0, (double) max_gap / 1e6,
               (double) WATCHDOG_USEC / 2 / 1e6);
        if (max_gap > WATCHDOG_USEC / 2)
                fail("a WATCHDOG=1 came %.3f s after the one before: more than WATCHDOG_USEC/2",
                     (double) max_gap / 1e6);
        printf("ok - WATCHDOG=1 at least every WATCHDOG_USEC/2\n");
        if (n_status == 0)
                fail("no STATUS= in %.1f s of running", (double) WATCH_SPAN / 1e6);
        if (strncmp(last_status, "managing:", 9) != 0)
                fail("STATUS= does not say mthpd is managing: '%s'", last_status);
        printf("ok - %u STATUS= lines, the last: %s\n", n_status, last_status);

        /* 3. SIGHUP: RELOADING=1 with MONOTONIC_USEC= of the moment, then READY=1 */
        uint64_t hup = now_usec();
        kill(child, SIGHUP);
        uint64_t reloading = expect("RELOADING", "1", 2 * SEC, msg, sizeof(msg), "SIGHUP did not start a reload");
        if (!field(msg, "MONOTONIC_USEC", v, sizeof(v)))
                fail("RELOADING=1 without MONOTONIC_USEC= (systemd >= 253 needs it): '%s'", msg);
        uint64_t mono = strtoull(v, NULL, 10);
        if (mono < hup || mono > reloading)
                fail("MONOTONIC_USEC=%s is not CLOCK_MONOTONIC between the SIGHUP (%llu) and its receipt (%llu)", v,
                     (unsigned long long) hup, (unsigned long long) reloading);
        uint64_t reready = expect("READY", "1", 2 * SEC, msg, sizeof(msg), "reload never finished");
        printf("ok - SIGHUP: RELOADING=1 after %.3f s (MONOTONIC_USEC %.3f s after the signal), READY=1 %.3f s "
               "later\n",
               (double) (reloading - hup) / 1e6, (double) (mono - hup) / 1e6, (double) (reready - reloading) / 1e6);

        /* 4. SIGTERM: STOPPING=1, then exit 0 */
        uint64_t term = now_usec();
        kill(child, SIGTERM);
        uint64_t stopping = expect("STOPPING", "1", 2 * SEC, msg, sizeof(msg), "SIGTERM did not stop mthpd");
        int st = 0;
        pid_t w = 0;
        for (uint64_t deadline = now_usec() + 5 * SEC; w == 0 && now_usec() < deadline; usleep(10000))
                w = waitpid(child, &st, WNOHANG);
        if (w != child)
                fail("mthpd still running 5 s after SIGTERM");
        child = -1;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
                fail("mthpd ended with %s %d after SIGTERM, not exit 0", WIFEXITED(st) ? "exit" : "signal",
                     WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
        printf("ok - SIGTERM: STOPPING=1 after %.3f s, exit 0 after %.3f s\n", (double) (stopping - term) / 1e6,
               (double) (now_usec() - term) / 1e6);
        cleanup();
        return 0;
}
