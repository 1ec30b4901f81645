#!/bin/bash
# What mthpctl metrics emits and what the project ships for Prometheus, on a
# fake host (every stat of hugepages-*kB/stats/ plus one the code cannot know)
# and the real mthpd on a private bus with a managed cgroup:
#   promtool   'promtool check metrics' on the exposition (mthpd down and up),
#              'promtool check rules' and 'promtool test rules' on
#              contrib/prometheus/mthpd.rules.yml (SKIP, exit 77, without promtool:
#              Debian's package prometheus ships it; .ci/setup installs it)
#   dashboard  contrib/grafana/mthpd.json: a dashboard's essentials (panels with
#              ids, types, grid positions, targets with a non-empty expr) and every
#              metric name in an expr one that mthpctl emits; docs/metrics.md lists
#              exactly the metrics mthpctl emits
# Usage: metrics-prometheus.sh promtool|dashboard
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson), SRCDIR.
MODE=${1:?usage: metrics-prometheus.sh promtool|dashboard}
if [ "$MODE" = promtool ] && ! command -v promtool >/dev/null; then
        echo "SKIP: promtool is not installed (Debian package prometheus; .ci/setup installs it)"
        exit 77
fi
. "$(dirname "$0")/lib.sh"

# a stat a future kernel may add: metrics reads the directory, it does not list names
THP=$ROOT/sys/kernel/mm/transparent_hugepage
chmod u+w "$THP/hugepages-64kB/stats"
echo 3 > "$THP/hugepages-64kB/stats/future_event"
N_STATS=$(ls "$THP/hugepages-64kB/stats" | wc -l)

ctl metrics > "$T/down.prom" || fail "metrics exit $?"
check_metrics < "$T/down.prom" >/dev/null || { cat "$T/down.prom"; fail "metrics format"; }
N_SIZE=$(grep -c '^# TYPE mthp_size_' "$T/down.prom" || true)
[ "$N_SIZE" = "$N_STATS" ] || fail "$N_SIZE per-size families for $N_STATS stats in hugepages-64kB/stats"
grep -qx 'mthp_size_future_event_total{size="64K"} 3' "$T/down.prom" || fail "a stat the code does not name"
grep -qx '# TYPE mthp_size_nr_anon gauge' "$T/down.prom" || fail "nr_anon is a folio count, a gauge"

# mthpd up, with a policy file for a fake cgroup
start_open_bus
"$FAKEHOST" cgroup "$ROOT" db.service >/dev/null || fail "fake cgroup db.service"
chmod u+w "$ROOT"/sys/fs/cgroup/db.service/memory.current
echo 4096 > "$ROOT/sys/fs/cgroup/db.service/memory.current"
P=$T/policy.d
mkdir -m 755 "$P"
printf '[Match]\nUnit=db.service\n[Policy]\nAnon=always\nSizes=16K-64K\n' > "$P/10-db.policy"
chmod 644 "$P/10-db.policy"
# a set fault cost: mthpd_fault_cost_seconds (measured only on a real root)
cp "$FAST" "$T/metrics.conf"
echo 'FaultCost=2us' >> "$T/metrics.conf" # fast_conf ends in [Engine]
# a knob whose writes fail: mthpd_knob_write_errors_total counts them
"$FAKEHOST" fail "$ROOT" 32K/anon EIO || fail "fakehost fail"
start_mthpd -c "$T/metrics.conf" --policy-dir "$P"
bump_faults 30 &
BUMP=$!
up() {
        ctl metrics > "$T/up.prom" && grep -q '^mthpd_cgroup_memory_bytes{' "$T/up.prom" &&
                grep -Eq '^mthpd_knob_write_errors_total\{knob="32K/anon"\} [1-9]' "$T/up.prom" &&
                grep -Eq '^mthpd_knob_writes_total\{knob="16K/anon"\} [1-9]' "$T/up.prom"
}
wait_for 10 up || { cat "$T/up.prom"; fail "no cgroup memory, knob writes or write errors from a running mthpd"; }
wait "$BUMP"
check_metrics < "$T/up.prom" >/dev/null || { cat "$T/up.prom"; fail "metrics format with mthpd up"; }
for f in mthpd_up mthpd_ticks_total mthpd_knob_writes_total mthpd_knob_write_errors_total mthpd_guard_trips_total \
        mthpd_fault_cost_seconds; do
        grep -Eq "^$f[ {]" "$T/up.prom" || fail "$f missing with mthpd up"
done

SRC=${SRCDIR:-$(dirname "$0")/../..}
if [ "$MODE" = promtool ]; then
        for f in down up; do
                promtool check metrics < "$T/$f.prom" > "$T/promtool.out" 2>&1 ||
                        { cat "$T/promtool.out"; fail "promtool check metrics ($f)"; }
        done
        promtool check rules "$SRC/contrib/prometheus/mthpd.rules.yml" > "$T/promtool.out" 2>&1 ||
                { cat "$T/promtool.out"; fail "promtool check rules"; }
        promtool test rules "$SRC/tests/ctl/mthpd.rules.test.yml" > "$T/promtool.out" 2>&1 ||
                { cat "$T/promtool.out"; fail "promtool test rules"; }
        ok "promtool: metrics (mthpd down and up), rules checked and unit-tested"
        exit 0
fi

cat "$T/down.prom" "$T/up.prom" | sed -n 's/^# TYPE \([^ ]*\) .*/\1/p' | sort -u > "$T/names"
python3 - "$SRC/contrib/grafana/mthpd.json" "$SRC/contrib/prometheus/mthpd.rules.yml" "$SRC/docs/metrics.md" \
        "$T/names" <<'PY' || fail "dashboard, rules or docs/metrics.md"
import json, re, sys
dash_path, rules_path, docs_path, names_path = sys.argv[1:]
emitted = set(open(names_path).read().split())
# the names the PromQL functions and keywords use, not metrics
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless",
            "offset", "inf", "nan"}
def metric_names(expr):
    e = re.sub(r'"(\\.|[^"\\])*"', '""', expr)   # strings (label values, $variables)
    e = re.sub(r"\{[^}]*\}", "", e)              # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)             # ranges ($__rate_interval)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    out = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        tail = e[m.end():].lstrip()
        if tail.startswith("(") or m.group(0).lower() in KEYWORDS:
            continue
        if m.start() and (e[m.start() - 1].isdigit() or e[m.start() - 1] in "$."):
            continue
        out.add(m.group(0))
    return out
bad = []
d = json.load(open(dash_path))
for k in ("title", "uid", "panels", "schemaVersion"):
    assert k in d, f"{dash_path}: no {k}"
assert isinstance(d["schemaVersion"], int) and d["panels"], dash_path
ids = set()
for p in d["panels"]:
    where = f"{dash_path}: panel {p.get('title')!r}"
    for k in ("id", "type", "title", "gridPos", "targets"):
        assert k in p, f"{where}: no {k}"
    assert p["id"] not in ids, f"{where}: id {p['id']} twice"
    ids.add(p["id"])
    assert all(isinstance(p["gridPos"].get(k), int) for k in ("h", "w", "x", "y")), where
    assert p["gridPos"]["x"] + p["gridPos"]["w"] <= 24, f"{where}: wider than the grid"
    assert p["targets"], f"{where}: no targets"
    for t in p["targets"]:
        assert t.get("refId") and t.get("expr", "").strip(), f"{where}: a target without refId or expr"
        bad += [f"{where}: {n} (in {t['expr']})" for n in metric_names(t["expr"]) - emitted]
for v in d.get("templating", {}).get("list", []):
    q = v.get("definition") or ""
    m = re.match(r"label_values\((\w+)", q)
    if m and m.group(1) not in emitted:
        bad.append(f"{dash_path}: variable {v['name']}: {m.group(1)}")
# the rules: every mthp metric they name is emitted (node_exporter's own may appear)
for n, line in enumerate(open(rules_path), 1):
    for name in re.findall(r"\bmthpd?_[a-z0-9_]+", line.split("#")[0]):
        if name not in emitted and "{{" not in line and "summary" not in line:
            bad.append(f"{rules_path}:{n}: {name}")
# docs/metrics.md: every emitted metric in a table row, no other
documented = set(re.findall(r"^\| `(mthpd?_[a-z0-9_]+)", open(docs_path).read(), re.M))
bad += [f"{docs_path}: not documented: {n}" for n in sorted(emitted - documented - {"mthp_size_future_event_total"})]
bad += [f"{docs_path}: documented but not emitted: {n}" for n in sorted(documented - emitted)]
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"{len(d['panels'])} panels, {len(emitted)} metric names")
PY
ok "dashboard: panels and targets well-formed, every expr names emitted metrics; rules and docs/metrics.md agree"
