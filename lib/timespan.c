/* SPDX-License-Identifier: MIT */
/* Timespans and timestamps: see mthp/timespan.h. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#include "mthp/timespan.h"
#include "mthp/types.h"

/* "90", "90s", "500ms", "5min", "1h30min", "2d", "1w": systemd's time spans
 * (a bare number is seconds). */
int mthp_timespan_parse(const char *s, uint64_t *usec) {
        static const struct {
                const char *unit;
                double usec;
        } units[] = {
                { "usec", 1 },         { "us", 1 },         { "msec", 1e3 },      { "ms", 1e3 },
                { "seconds", 1e6 },    { "second", 1e6 },   { "sec", 1e6 },       { "s", 1e6 },
                { "minutes", 60e6 },   { "minute", 60e6 },  { "min", 60e6 },      { "m", 60e6 },
                { "hours", 3600e6 },   { "hour", 3600e6 },  { "hr", 3600e6 },     { "h", 3600e6 },
                { "days", 86400e6 },   { "day", 86400e6 },  { "d", 86400e6 },     { "weeks", 604800e6 },
                { "week", 604800e6 },  { "w", 604800e6 },
        };
        double total = 0;
        bool any = false, too_big = false;
        while (*s) {
                while (*s == ' ')
                        s++;
                if (!*s)
                        break;
                const char *end;
                double v;
                int r = mthp_parse_decimal(s, &v, &end); /* the numbers of mthpd.conf */
                if (r == -ERANGE)
                        too_big = true;
                else if (r < 0)
                        return -EINVAL;
                if (r < 0)  /* the number's end, to go on checking the syntax */
                        end = s + strspn(s, "0123456789."), v = 0;
                s = end;
                while (*s == ' ')
                        s++;
                double mult = 0;
                size_t ul = 0;
                for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
                        size_t l = strlen(units[i].unit);
                        if (strncmp(s, units[i].unit, l) == 0 && !(s[l] >= 'a' && s[l] <= 'z')) {
                                mult = units[i].usec;
                                ul = l;
                                break;
                        }
                }
                if (!mult) {
                        if (*s && !(*s >= '0' && *s <= '9'))
                                return -EINVAL;
                        mult = 1e6;
                }
                s += ul;
                total += v * mult;
                any = true;
        }
        if (!any)
                return -EINVAL;
        if (too_big || total >= 1e18)
                return -ERANGE;
        *usec = (uint64_t) (total + 0.5);
        return 0;
}

/* Timestamps as journalctl --since takes them: "now", "today", "yesterday",
 * "-1h" / "+30min" / "1h ago" (relative to now), "@EPOCH", "YYYY-MM-DD
 * [HH:MM[:SS]]" (also with a 'T'), "HH:MM[:SS]" (today); local time. */
int mthp_timestamp_parse(const char *s, uint64_t now, uint64_t *usec) {
        uint64_t span;
        size_t l = strlen(s);
        if (strcmp(s, "now") == 0) {
                *usec = now;
                return 0;
        }
        if (s[0] == '-' || s[0] == '+') {
                if (mthp_timespan_parse(s + 1, &span) < 0 || (s[0] == '-' && span > now))
                        return -EINVAL;
                *usec = s[0] == '-' ? now - span : now + span;
                return 0;
        }
        if (l > 4 && strcmp(s + l - 4, " ago") == 0) {
                char buf[64];
                if (l - 4 >= sizeof(buf))
                        return -EINVAL;
                memcpy(buf, s, l - 4);
                buf[l - 4] = 0;
                if (mthp_timespan_parse(buf, &span) < 0 || span > now)
                        return -EINVAL;
                *usec = now - span;
                return 0;
        }
        if (s[0] == '@') {
                char *end;
                errno = 0;
                /* digits and one '.': strtod alone also takes "nan", "inf", hex */
                if (s[1] < '0' || s[1] > '9' || strspn(s + 1, "0123456789.") != l - 1)
                        return -EINVAL;
                double v = strtod(s + 1, &end);
                if (end == s + 1 || *end || errno || !isfinite(v) || v < 0 || v >= 1e12)
                        return -EINVAL;
                *usec = (uint64_t) (v * 1e6);
                return 0;
        }
        time_t t = (time_t) (now / 1000000);
        struct tm tm;
        localtime_r(&t, &tm);
        int days = strcmp(s, "today") == 0 ? 0 : strcmp(s, "yesterday") == 0 ? -1 : strcmp(s, "tomorrow") == 0 ? 1 : 2;
        if (days != 2) {
                tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
                tm.tm_mday += days;
        } else {
                static const char *const formats[] = {
                        "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M",
                        "%Y-%m-%d",          "%H:%M:%S",          "%H:%M",
                };
                size_t i;
                for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
                        struct tm try = tm;
                        try.tm_hour = try.tm_min = try.tm_sec = 0;
                        const char *end = strptime(s, formats[i], &try);
                        if (end && !*end) {
                                tm = try;
                                break;
                        }
                }
                if (i == sizeof(formats) / sizeof(formats[0]))
                        return -EINVAL;
        }
        tm.tm_isdst = -1;
        t = mktime(&tm);
        if (t == (time_t) -1 || t < 0)
                return -EINVAL;
        *usec = (uint64_t) t * 1000000;
        return 0;
}

/* Local time, "2025-11-30 07:01:02" or, for JSON, RFC 3339 with offset. */
void mthp_timestamp_format(uint64_t usec, bool rfc3339, char *buf, size_t size) {
        time_t t = (time_t) (usec / 1000000);
        struct tm tm;
        char zone[8];
        localtime_r(&t, &tm);
        if (!rfc3339) {
                strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
                return;
        }
        strftime(zone, sizeof(zone), "%z", &tm); /* +0100: RFC 3339 wants +01:00 */
        char date[32];
        strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf, size, "%s%.3s:%.2s", date, zone, zone + 3);
}

void mthp_timespan_format(uint64_t usec, char *buf, size_t size) {
        uint64_t s = usec / 1000000;
        if (s >= 86400)
                snprintf(buf, size, "%llud %lluh", (unsigned long long) (s / 86400),
                         (unsigned long long) (s % 86400 / 3600));
        else if (s >= 3600)
                snprintf(buf, size, "%lluh %llumin", (unsigned long long) (s / 3600),
                         (unsigned long long) (s % 3600 / 60));
        else if (s >= 60)
                snprintf(buf, size, "%llumin %llus", (unsigned long long) (s / 60), (unsigned long long) (s % 60));
        else
                snprintf(buf, size, "%llus", (unsigned long long) s);
}
