#!/usr/bin/env python3
"""Two builds of swiglu_bench, the same rows, interleaved in one run.

    python3 scripts/compare_builds.py OLD/swiglu_bench NEW/swiglu_bench \
        [--filter REGEX] [--rounds 5] [--min-time 0.2]

Runs OLD and NEW in alternating rounds (A B B A A B ...: each binary goes
first as often as second), each round one process over every selected row
(Google Benchmark JSON), so both see the same machine state. Per row it
prints both medians of ns_per_call over the rounds, NEW / OLD, the ratio of
the two best rounds, and each side's spread (max / min - 1 over its rounds). A row is called slower only
when NEW's median exceeds OLD's by more than the larger spread: on a shared
2-core host a single round proves nothing. Hold `flock -x /tmp/cpu.lock`
around it (scripts/README rules on timing beside builds).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile

DEFAULT_FILTER = r"^ffn/(glass|cyber|llama7b)/[a-z0-9_]+/M:(1|16|512)/T:2/"


def run(binary, filt, min_time):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        subprocess.run(
            [binary, f"--benchmark_filter={filt}", f"--benchmark_out={out.name}",
             "--benchmark_out_format=json", f"--benchmark_min_time={min_time}"],
            check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        report = json.load(open(out.name))
    rows = {}
    for b in report["benchmarks"]:
        ns = b.get("ns_per_call")
        if ns is None:
            ns = b["real_time"]  # time unit as the bench reports it; same for both
        rows[b["name"].split("/min_time")[0]] = float(ns)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--filter", default=DEFAULT_FILTER)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--min-time", default="0.2")
    args = ap.parse_args()
    times = {"old": {}, "new": {}}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for side in order:
            for name, ns in run(getattr(args, side), args.filter, args.min_time).items():
                times[side].setdefault(name, []).append(ns)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'row':44} {'old us':>10} {'new us':>10} {'new/old':>8} {'best':>6} {'spread old':>10} {'new':>6}  verdict")
    slower = 0
    for name in sorted(times["old"]):
        if name not in times["new"]:
            continue
        o, n = times["old"][name], times["new"][name]
        mo, mn = statistics.median(o), statistics.median(n)
        so, sn = max(o) / min(o) - 1, max(n) / min(n) - 1
        ratio = mn / mo
        best = min(n) / min(o)  # the quietest round of each: least disturbed by the host
        verdict = "slower" if ratio - 1 > max(so, sn) else "same"
        slower += verdict == "slower"
        print(f"{name:44} {mo / 1e3:10.2f} {mn / 1e3:10.2f} {ratio:8.3f} {best:6.3f} {so:10.1%} {sn:6.1%}  {verdict}")
    print(f"{slower} row(s) slower beyond their spread")


if __name__ == "__main__":
    main()
