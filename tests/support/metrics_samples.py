#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Reads a metrics file librpmem wrote (RPMEM_STATS_FILE) with a parser from Debian and prints
one line per sample: `name{label="value",...} value`, labels sorted.

*.json: Python's json module; the pools' fields flattened to rpmem_json_<path>{target=..}.
Anything else: the Prometheus text format through prometheus_client's parser (Debian's
python3-prometheus-client, the reference client library), which rejects malformed files.
Exit 1 with the parser's reason when the file does not parse.
"""
import json
import sys

path = sys.argv[1]
text = open(path).read()
try:
    if path.endswith(".json"):
        doc = json.loads(text)
        print(f'rpmem_json_time_unix_ns{{}} {doc["time_unix_ns"]}')

        def flat(prefix, value, labels):
            if isinstance(value, dict):
                for k, v in value.items():
                    flat(f"{prefix}_{k}", v, labels)
            else:
                print(f"{prefix}{{{labels}}} {value}")

        for pool in doc["pools"]:
            labels = f'descriptor="{pool["descriptor"]}",target="{pool["target"]}"'
            flat("rpmem_json", pool, labels)
    else:
        from prometheus_client.parser import text_string_to_metric_families
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
                print(f"{s.name}{{{labels}}} {s.value}")
except Exception as e:  # the parser's reason is the diagnosis
    print(f"metrics_samples.py: {path} does not parse: {type(e).__name__}: {e}")
    sys.exit(1)
