/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "mthp/escape.h"
#include "mthp/log.h"

static bool use_journal;
static bool log_verbose;
static const char *log_ident = "mthp";

/* Same test systemd uses: JOURNAL_STREAM names the device and inode of our
 * stderr when the service manager connected it to journald. */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;
        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == dev && st.st_ino == ino;
}

void mthp_log_init(const char *ident, bool verbose) {
        log_ident = ident;
        log_verbose = verbose;
        use_journal = stderr_is_journal();
}

static const char *prio_word(int prio) {
        switch (prio) {
        case LOG_EMERG: case LOG_ALERT: case LOG_CRIT: case LOG_ERR: return "error";
        case LOG_WARNING: return "warning";
        case LOG_NOTICE: return "notice";
        case LOG_INFO: return "info";
        default: return "debug";
        }
}

void mthp_log_at(const char *code_file, const char *code_line, const char *func, const char *knob_id, int prio,
                 const char *fmt, ...) {
        char raw[4096], msg[4096];
        va_list ap;
        if (prio == LOG_DEBUG && !log_verbose)
                return;
        int e = errno;
        va_start(ap, fmt);
        vsnprintf(raw, sizeof(raw), fmt, ap);
        va_end(ap);
        /* names in messages (comm, cgroups, file contents) are anyone's:
         * one line of valid UTF-8, whatever they hold */
        size_t len = strlen(raw);
        while (len > 0 && raw[len - 1] == '\n')
                raw[--len] = 0;
        mthp_escape(msg, sizeof(msg), raw);
        if (use_journal && knob_id)
                sd_journal_send_with_location(code_file, code_line, func, "MESSAGE=%s", msg, "PRIORITY=%d", prio,
                                              "SYSLOG_IDENTIFIER=%s", log_ident,
                                              "MESSAGE_ID=" MTHP_MESSAGE_KNOB_FAILED, "MTHP_KNOB=%s", knob_id, NULL);
        else if (use_journal)
                sd_journal_send_with_location(code_file, code_line, func, "MESSAGE=%s", msg, "PRIORITY=%d", prio,
                                              "SYSLOG_IDENTIFIER=%s", log_ident, NULL);
        else
                fprintf(stderr, "%s: %s: %s\n", log_ident, prio_word(prio), msg);
        errno = e;
}

/* A knob change's entry: MESSAGE_ID=MTHP_MESSAGE_CHANGE and the MTHP_*
 * fields mthpctl history reads, whoever wrote the knob. A restore from the
 * journal reads "restored ID: OLD -> NEW (REASON)" (an info line on stderr),
 * the rest "set ..." or "would set ...". */
static void log_change(const char *code_file, const char *code_line, const char *func, const struct mthp_change *c,
                       bool observing, bool restored) {
        struct mthp_change clean = *c;
        mthp_escape(clean.id, sizeof(clean.id), c->id);
        mthp_escape(clean.old, sizeof(clean.old), c->old);
        mthp_escape(clean.new, sizeof(clean.new), c->new);
        mthp_escape(clean.reason, sizeof(clean.reason), c->reason);
        c = &clean;
        const char *slash = strchr(c->id, '/');
        char size[16] = "", msg[4096];
        if (slash && (size_t) (slash - c->id) < sizeof(size))
                memcpy(size, c->id, (size_t) (slash - c->id));
        if (restored)
                snprintf(msg, sizeof(msg), "restored %s: %s -> %s (%s)", c->id, c->old, c->new, c->reason);
        else
                snprintf(msg, sizeof(msg), "%s %s: %s -> %s: %s", observing ? "would set" : "set", c->id, c->old,
                         c->new, c->reason);
        if (use_journal) {
                sd_journal_send_with_location(
                        code_file, code_line, func, "MESSAGE=%s", msg, "MESSAGE_ID=" MTHP_MESSAGE_CHANGE,
                        "PRIORITY=%d", restored ? LOG_INFO : LOG_NOTICE, "SYSLOG_IDENTIFIER=%s", log_ident,
                        "MTHP_KNOB=%s", c->id, "MTHP_SIZE=%s", size, "MTHP_KIND=%s", slash ? slash + 1 : "",
                        "MTHP_OLD=%s", c->old, "MTHP_NEW=%s", c->new, "MTHP_REASON=%s", c->reason,
                        "MTHP_DRY_RUN=%d", observing, NULL);
                return;
        }
        fprintf(stderr, "%s: %s%s\n", log_ident, restored ? "info: " : "", msg);
}

void mthp_log_change_at(const char *code_file, const char *code_line, const char *func, const struct mthp_change *c,
                        bool observing) {
        log_change(code_file, code_line, func, c, observing, false);
}

void mthp_log_restored_at(const char *code_file, const char *code_line, const char *func,
                          const struct mthp_change *c) {
        log_change(code_file, code_line, func, c, false, true);
}

void mthp_log_foreign_at(const char *code_file, const char *code_line, const char *func, const struct mthp_knob *k,
                         const char *ours, const char *theirs) {
        const char *fmt = "%s was changed by someone else (mthpd wrote '%s', it now reads '%s'): "
                          "mthpd stops managing it and will not restore it";
        if (use_journal) {
                char msg[512];
                snprintf(msg, sizeof(msg), fmt, k->id, ours, theirs);
                sd_journal_send_with_location(code_file, code_line, func, "MESSAGE=%s", msg,
                                              "MESSAGE_ID=" MTHP_MESSAGE_FOREIGN, "PRIORITY=%d", LOG_WARNING,
                                              "SYSLOG_IDENTIFIER=%s", log_ident, "MTHP_KNOB=%s", k->id,
                                              "MTHP_OURS=%s", ours, "MTHP_THEIRS=%s", theirs, NULL);
                return;
        }
        fprintf(stderr, "%s: warning: ", log_ident);
        fprintf(stderr, fmt, k->id, ours, theirs);
        fputc('\n', stderr);
}

/* Whether this process holds capability cap in its effective set
 * (/proc/self/status CapEff). */
static bool cap_effective(unsigned cap) {
        FILE *f = fopen("/proc/self/status", "re");
        unsigned long long eff = 0;
        bool found = false;
        char line[256];
        while (f && !found && fgets(line, sizeof(line), f))
                found = sscanf(line, "CapEff: %llx", &eff) == 1;
        if (f)
                fclose(f);
        return found && cap < 64 && (eff >> cap) & 1;
}

const char *mthp_errno_words(int err) {
        if (err < 0)
                err = -err;
        /* "run as root" only to whoever is not; root is told what else
         * refuses it, naming no capability mthpd.service does not grant
         * (its CapabilityBoundingSet= has no CAP_DAC_OVERRIDE or
         * CAP_SYS_ADMIN; THP knobs need neither: they are root's, mode 0644) */
        bool root = geteuid() == 0;
        switch (err) {
        case EINVAL: return "the kernel rejected the value (EINVAL)";
        case EACCES:
                if (!root)
                        return "permission denied (EACCES): run as root";
                return cap_effective(1 /* CAP_DAC_OVERRIDE */)
                               ? "permission denied (EACCES), also to root: a security module (SELinux, AppArmor) "
                                 "or the file's own rules refuse it"
                               : "permission denied (EACCES), also to root: the file's mode bits or a security "
                                 "module refuse it (root here lacks CAP_DAC_OVERRIDE, as under mthpd.service)";
        case EPERM:
                if (!root)
                        return "operation not permitted (EPERM): run as root";
                return "operation not permitted (EPERM), also to root: a capability this process lacks "
                       "(mthpd.service's CapabilityBoundingSet= would have to grant it), a system call filter or "
                       "a security module refuses it";
        case EROFS: return "read-only file system (EROFS): /sys is mounted read-only here";
        case ENOENT: return "no such file (ENOENT): this kernel does not have it";
        case EBUSY: return "busy (EBUSY)";
        case ENOSPC: return "no space left on device (ENOSPC)";
        default: return strerror(err);
        }
}
