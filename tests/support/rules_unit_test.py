#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Writes a `promtool test rules` file for packaging/prometheus/rpmem.rules.yml whose input
series are the samples of metrics files a real run wrote (tests/integration/rules_test.cpp),
laid on a timeline of minutes, with the alerts each stretch must raise.

Usage: rules_unit_test.py RULES OUT connected=F lost=F [catching=F] back=F async=F failed=F

  connected, lost, catching, back   one synchronous writer's file: in sync, its replica lost,
                                    catching up (optional: a catch-up may end between two
                                    reads; then the lost file's series stand for it, state
                                    catching_up), and in sync again
  async, failed                     an asynchronous writer's file while it runs, and after its
                                    replica's loss failed it (the writer died with it)

The series' names and labels are the files' own: a metric renamed or relabelled in the library
makes the expectations miss. Values are the files' where they carry the story (states, bytes
to go, lag bounds, errors); counters ramp between the files' values, and timestamps follow the
timeline (a real file's are 1.7e9, promtool's clock starts at 0). The timeline, in minutes:

   0-9    A connected;                      B asynchronous, lag at 10 % of its bounds
  10-49   A lost, bytes to go growing       (RpmemReplicaLost at 11, RpmemReplicaNotInSync at 40)
  50-74   A catching_up, bytes to go still  (RpmemCatchUpStalled at 60: it did not fall)
          B's lag at 90 % of its bound from 55 (RpmemAsyncLagNearBound at 60)
  75-79   A catching up, bytes to go falling to 0
  80-89   A connected again; B failed, its file no longer written
                                            (RpmemPoolFailed, RpmemPersistErrors at 80;
                                            RpmemMetricsStale at 83)
"""
import sys

import yaml
from prometheus_client.parser import text_string_to_metric_families

INSTANCE = {"instance": "app:9100", "job": "node"}
MINUTES = 90


def read(path):
    """{(name, labels as a sorted tuple): value} of a metrics file."""
    out = {}
    with open(path) as f:
        for family in text_string_to_metric_families(f.read()):
            for s in family.samples:
                labels = dict(s.labels, **INSTANCE)
                out[(s.name, tuple(sorted(labels.items())))] = s.value
    return out


def relabel(samples, **changes):
    """The samples with some label values changed (where the label is there)."""
    out = {}
    for (name, labels), v in samples.items():
        d = dict(labels)
        for k, new in changes.items():
            if k in d:
                d[k] = new
        out[(name, tuple(sorted(d.items())))] = v
    return out


def series_text(name, labels):
    def esc(v):
        return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return name + "{" + ",".join(f'{k}="{esc(v)}"' for k, v in labels) + "}"


def num(v):
    return repr(float(v))


class timeline:
    """The value of every series at every minute; None: absent."""

    def __init__(self):
        self.values = {}

    def put(self, key, minute, value):
        self.values.setdefault(key, [None] * MINUTES)[minute] = value

    def stretch(self, samples, first, last, each=None):
        """samples held from minute first to last; each(key, value, minute) may change one."""
        for key, v in samples.items():
            for m in range(first, last + 1):
                self.put(key, m, each(key, v, m) if each else v)

    def ramp_counters(self):
        """Counters of calls and bytes move linearly from one file's value to the next, as an
        application's would (a rate is then what the two files imply). Errors jump: a call
        fails at once."""
        for (name, _), vals in self.values.items():
            if not name.endswith("_total") or name == "rpmem_errors_total":
                continue
            runs = []  # [first minute, value, last minute] of each stretch of one value
            for m, v in enumerate(vals):
                if v is not None and runs and runs[-1][1] == v and runs[-1][2] == m - 1:
                    runs[-1][2] = m
                elif v is not None:
                    runs.append([m, v, m])
            for (a0, va, a1), (b0, vb, _) in zip(runs, runs[1:]):
                if b0 == a1 + 1 and vb > va:
                    for m in range(a0, b0):
                        vals[m] = va + (vb - va) * (m - a0) / (b0 - a0)

    def input_series(self):
        out = []
        for (name, labels), vals in sorted(self.values.items()):
            words, was_present = [], False
            for v in vals:
                if v is None:
                    words.append("stale" if was_present else "_")
                    was_present = False
                else:
                    words.append(num(v))
                    was_present = True
            out.append({"series": series_text(name, labels), "values": " ".join(words)})
        return out


def one(samples, name, **must):
    """The labels of the only sample of `name` whose labels include `must`."""
    found = [dict(l) for (n, l) in samples if n == name
             and all(dict(l).get(k) == v for k, v in must.items())]
    if len(found) != 1:
        sys.exit(f"rules_unit_test.py: expected one {name} {must} in a metrics file, found "
                 f"{len(found)}: the library's metrics changed; update the rules and this test")
    return found[0]


def main():
    rules_path, out_path = sys.argv[1], sys.argv[2]
    files = dict(a.split("=", 1) for a in sys.argv[3:])
    connected, lost, back = read(files["connected"]), read(files["lost"]), read(files["back"])
    catching = read(files["catching"]) if "catching" in files else relabel(
        lost, state="catching_up")
    live, failed = read(files["async"]), read(files["failed"])
    rules = yaml.safe_load(open(rules_path))
    alerts = {r["alert"]: r for g in rules["groups"] for r in g["rules"] if "alert" in r}

    # What each stretch shows, as read.
    one(connected, "rpmem_pool_info", state="connected")
    one(lost, "rpmem_pool_info", state="lost")
    one(catching, "rpmem_pool_info", state="catching_up")
    one(back, "rpmem_pool_info", state="connected")
    one(live, "rpmem_pool_info", mode="async", state="connected")
    one(failed, "rpmem_pool_info", mode="async", state="failed")

    t = timeline()
    # Files are written every few seconds; their timestamps follow the timeline.
    def clock(key, v, m):
        if key[0] in ("rpmem_stats_timestamp_seconds", "rpmem_last_persist_timestamp_seconds"):
            return 60.0 * m
        return v

    t.stretch(connected, 0, 9, clock)
    t.stretch(lost, 10, 49, clock)
    t.stretch(catching, 50, 74, clock)
    # What the replica lacks grows while it is lost (the writer goes on), then stands still
    # while it "catches up" (a stall), then falls to nothing.
    to_go = [k for k in catching if k[0] == "rpmem_replica_bytes_to_go"][0]
    behind = max(catching[to_go], lost[to_go], 1 << 20)
    for m in range(10, 50):
        t.put(to_go, m, behind * (m - 9) / 40)
    for m in range(50, 75):
        t.put(to_go, m, behind)
    t.stretch(catching, 75, 79, clock)
    for m in range(75, 80):
        t.put(to_go, m, behind * (79 - m) / 5)
    t.stretch(back, 80, MINUTES - 1, clock)

    # B's lag is the timeline's: a tenth of its bounds (the file's), 90 % of the byte bound
    # from 55 to 64. (A real file's lag is whatever the moment held: under load it may be
    # past the bound already.)
    pool = tuple(sorted(one(live, "rpmem_async_lag_bound_bytes").items()))
    lag_key = ("rpmem_async_lag_bytes", pool)
    lag_of = {lag_key: ("rpmem_async_lag_bound_bytes", pool),
              ("rpmem_async_lag_seconds", pool): ("rpmem_async_lag_bound_seconds", pool)}

    def lag(key, v, m):
        if key in lag_of:
            return (0.9 if key == lag_key and 55 <= m <= 64 else 0.1) * live[lag_of[key]]
        return clock(key, v, m)

    t.stretch(live, 0, 79, lag)
    died = 60.0 * 80
    t.stretch(failed, 80, MINUTES - 1,
              lambda key, v, m: died if key[0].endswith("timestamp_seconds") else v)
    t.ramp_counters()

    def expect(name, labels):
        rule = alerts[name]
        exp = dict(labels, alertname=name, **rule.get("labels", {}))
        exp.pop("__name__", None)
        annotations = {}
        for k, text in rule.get("annotations", {}).items():
            for label, value in exp.items():
                text = text.replace("{{ $labels." + label + " }}", value)
            if "{{" in text:
                sys.exit(f"rules_unit_test.py: {name}'s {k} has a template this test cannot "
                         f"fill: {text}")
            annotations[k] = text
        return {"exp_labels": exp, "exp_annotations": annotations}

    a_info = {s: one(f, "rpmem_pool_info", state=s)
              for f, s in ((lost, "lost"), (catching, "catching_up"))}
    a_to_go = dict(to_go[1])
    b_errors = one(failed, "rpmem_errors_total")
    b_failed = one(failed, "rpmem_pool_info", state="failed")
    b_stamp = one(failed, "rpmem_stats_timestamp_seconds")
    b_lag = dict(lag_key[1])

    checks = [
        # eval minute, alert, the alerts it raises then
        (9, "RpmemReplicaLost", []),
        (10, "RpmemReplicaLost", []),  # pending: for 1m
        (12, "RpmemReplicaLost", [a_info["lost"]]),
        (39, "RpmemReplicaNotInSync", []),
        (41, "RpmemReplicaNotInSync", [a_info["lost"]]),
        (51, "RpmemReplicaLost", []),
        (51, "RpmemReplicaNotInSync", []),  # a new state: its own 30 minutes
        (59, "RpmemCatchUpStalled", []),  # pending: for 10m
        (61, "RpmemCatchUpStalled", [a_to_go]),
        (79, "RpmemCatchUpStalled", []),  # it moves again
        (58, "RpmemAsyncLagNearBound", []),
        (61, "RpmemAsyncLagNearBound", [b_lag]),
        (66, "RpmemAsyncLagNearBound", []),
        (79, "RpmemPoolFailed", []),
        (80, "RpmemPoolFailed", [b_failed]),
        (79, "RpmemPersistErrors", []),
        (81, "RpmemPersistErrors", [b_errors]),
        (81, "RpmemMetricsStale", []),
        (84, "RpmemMetricsStale", [b_stamp]),
        (89, "RpmemReplicaLost", []),
    ]
    for name in alerts:
        if name not in {c[1] for c in checks}:
            sys.exit(f"rules_unit_test.py: alert {name} has no test here: add one")

    def labels_of(name, series):
        return series_text(name, sorted(series.items()))

    # The recording rules, where the files imply a value.
    b_pool = one(live, "rpmem_async_lag_bound_seconds")
    test = {
        "rule_files": [rules_path],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": t.input_series(),
            "alert_rule_test": [
                {"eval_time": f"{m}m", "alertname": n, "exp_alerts": [expect(n, l) for l in ls]}
                for m, n, ls in checks],
            "promql_expr_test": [
                {"expr": 'instance_state:rpmem_pools:count{state="lost"}', "eval_time": "20m",
                 "exp_samples": [{"labels": 'instance_state:rpmem_pools:count{instance="app:9100",state="lost"}',
                                  "value": 1}]},
                {"expr": "rpmem_pool:rpmem_async_lag:ratio > 0.85", "eval_time": "60m",
                 "exp_samples": [{"labels": labels_of("rpmem_pool:rpmem_async_lag:ratio", b_pool),
                                  "value": 0.9}]},
            ],
        }],
    }
    with open(out_path, "w") as f:
        yaml.safe_dump(test, f, sort_keys=False, width=1 << 20)


main()
