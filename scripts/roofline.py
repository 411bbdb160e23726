#!/usr/bin/env python3
"""Roofline picture of a swiglu_bench run.

    build/bench/swiglu_bench --benchmark_format=json > bench.json
    #   (or --benchmark_out=bench.json --benchmark_out_format=json)
    python3 scripts/roofline.py bench.json -o roofline.png [--threads 2]

x: arithmetic intensity, FLOPs per weight byte = 6 M d f / (3 d f b) = 2 M / b,
   b = 4, 2, 1 bytes per weight for f32, bf16, int8.
y: achieved GFLOP/s (the rows' GFLOPs counter; int8 counts integer ops).
Roofs from the machine probe in the JSON context, for the chosen thread
count: DRAM read bandwidth (dram_read_gbs_<T>t) as the slope, and one compute
ceiling per dtype (peak_fp32_gflops_<T>t, peak_bf16_gflops_<T>t,
peak_int8_gops_<T>t). One point per (shape, tokens, dtype): ours (ffn/...)
filled, the oneDNN baseline (baseline/...) hollow beside it. Points above the
DRAM slope had their weights in cache (glass and cyber fit in L2/L3).
Several JSON files (runs of one binary on a noisy machine): each point is
the best of them, the roofs come from the first.

Needs python3-matplotlib (Debian).
"""

import argparse
import json
import math
import os
import re
import sys

SHAPES = {"glass": (128, 341), "cyber": (384, 1024), "llama7b": (4096, 11008)}
BYTES = {"f32": 4, "bf16": 2, "int8": 1}
PEAK_KEY = {"f32": "peak_fp32_gflops_{}t", "bf16": "peak_bf16_gflops_{}t",
            "int8": "peak_int8_gops_{}t"}
DTYPE_STYLE = {  # marker, roof line style
    "f32": ("o", "-"),
    "bf16": ("s", "--"),
    "int8": ("^", ":"),
}
SHAPE_COLOR = {"glass": "#1f77b4", "cyber": "#d62728", "llama7b": "#2ca02c"}
EXTRA_COLORS = ["#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
ROW_RE = re.compile(r"^(ffn|baseline)/([^/]+)/([^/]+)/M:(\d+)/T:(\d+)")


def context_value(ctx, pattern, threads):
    """The probe value for `threads`, else the nearest measured count below it
    (compute scaled linearly, bandwidth not), else None."""
    v = ctx.get(pattern.format(threads))
    if v not in (None, ""):
        return float(v), threads
    have = sorted(int(m.group(1)) for k in ctx
                  for m in [re.fullmatch(pattern.replace("{}", r"(\d+)"), k)] if m)
    below = [t for t in have if t <= threads] or have
    if not below:
        return None, None
    t = below[-1]
    v = float(ctx[pattern.format(t)])
    if "dram" not in pattern:
        v *= threads / t
    return v, t


def load_rows(doc, threads):
    rows = []
    for b in doc.get("benchmarks", []):
        m = ROW_RE.match(b.get("name", ""))
        if not m or b.get("run_type", "iteration") != "iteration" or b.get("error_occurred"):
            continue
        kind, shape, dtype, tokens, t = m.group(1), m.group(2), m.group(3), int(m.group(4)), int(m.group(5))
        if t != threads or "GFLOPs" not in b:
            continue
        gflops = float(b["GFLOPs"])
        if shape in SHAPES and dtype in BYTES:
            d, f = SHAPES[shape]
            intensity = 6.0 * tokens * d * f / (3.0 * d * f * BYTES[dtype])
        elif b.get("GBs"):
            intensity = gflops / float(b["GBs"])  # the bench's own FLOPs per weight byte
        else:
            continue
        rows.append({"kind": kind, "shape": shape, "dtype": dtype, "M": tokens,
                     "x": intensity, "y": gflops})
    return rows


def label_tokens(ax, rows, nudge, dpi):
    """'M<tokens>' beside each of our points (a baseline point when ours is
    missing), left of it if free, else above, below or right; a label whose
    text already stands at about the same place (same dtype and M, another
    shape) is dropped. Positions in points, from the final layout."""
    to_pt = 72.0 / dpi

    def where(r):
        px, py = ax.transData.transform((r["x"] * nudge[r["kind"]], r["y"]))
        return px * to_pt, py * to_pt

    marker_boxes = [(x - 5, y - 5, x + 5, y + 5) for x, y in map(where, rows)]
    placed = []  # (box, text)

    def free(box):
        return not any(b[0] < box[2] and box[0] < b[2] and b[1] < box[3] and box[1] < b[3]
                       for b in [pb for pb, _ in placed] + marker_boxes)

    ours = {(r["shape"], r["dtype"], r["M"]) for r in rows if r["kind"] == "ffn"}
    for r in sorted(rows, key=lambda r: (r["kind"] != "ffn", -r["y"])):
        if r["kind"] != "ffn" and (r["shape"], r["dtype"], r["M"]) in ours:
            continue
        text = f"M{r['M']}"
        x, y = where(r)
        w, h = 4.9 * len(text), 9.0
        if any(t == text and abs(b[2] + 6 - x) < 4 and abs((b[1] + b[3]) / 2 - y) < 7
               for b, t in placed):
            continue
        # (box offset from the point, annotate offset, ha, va)
        options = [((-7 - w, -h / 2), (-7, 0), "right", "center"),
                   ((-w / 2, 6), (0, 6), "center", "bottom"),
                   ((-w / 2, -6 - h), (0, -6), "center", "top"),
                   ((7, -h / 2), (7, 0), "left", "center")]
        for (bx, by), off, ha, va in options:
            box = (x + bx, y + by, x + bx + w, y + by + h)
            if free(box):
                break
        else:
            (bx, by), off, ha, va = options[0]
            box = (x + bx, y + by, x + bx + w, y + by + h)
        placed.append((box, text))
        ax.annotate(text, xy=(r["x"] * nudge[r["kind"]], r["y"]), xytext=off,
                    textcoords="offset points", ha=ha, va=va, fontsize=8, color="0.2")


def main():
    ap = argparse.ArgumentParser(description="Roofline PNG from swiglu_bench JSON output")
    ap.add_argument("json", nargs="+",
                    help="swiglu_bench --benchmark_format=json output ('-' = stdin); several "
                         "files (runs of the same binary): each point is the best of them, the "
                         "roofs come from the first")
    ap.add_argument("-o", "--output", default="roofline.png", help="PNG to write (default roofline.png)")
    ap.add_argument("--threads", type=int, default=2, help="thread count of the rows to plot (default 2)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    try:
        import matplotlib
    except ImportError:
        # e.g. a pyenv python3 first on PATH: retry under Debian's, which
        # python3-matplotlib installs into.
        deb = "/usr/bin/python3"
        if os.path.exists(deb) and os.path.realpath(sys.executable) != os.path.realpath(deb):
            os.execv(deb, [deb, os.path.abspath(__file__)] + sys.argv[1:])
        print("roofline.py: needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        return 2
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    ctx, best = None, {}
    for path in a.json:
        with (sys.stdin if path == "-" else open(path)) as fh:
            doc = json.load(fh)
        if ctx is None:
            ctx = doc.get("context", {})
        for r in load_rows(doc, a.threads):
            key = (r["kind"], r["shape"], r["dtype"], r["M"])
            if key not in best or r["y"] > best[key]["y"]:
                best[key] = r
    rows = list(best.values())
    if not rows:
        print(f"roofline.py: no ffn/ or baseline/ rows with T:{a.threads} and a GFLOPs counter "
              f"in {', '.join(a.json)}", file=sys.stderr)
        return 2

    dtypes = [d for d in BYTES if any(r["dtype"] == d for r in rows)]
    dtypes += sorted({r["dtype"] for r in rows} - set(dtypes))
    shapes = [s for s in SHAPES if any(r["shape"] == s for r in rows)]
    shapes += sorted({r["shape"] for r in rows} - set(shapes))
    colors = dict(SHAPE_COLOR)
    for i, s in enumerate(s for s in shapes if s not in colors):
        colors[s] = EXTRA_COLORS[i % len(EXTRA_COLORS)]

    bw, bw_t = context_value(ctx, "dram_read_gbs_{}t", a.threads)
    peaks = {}
    for d in dtypes:
        if d in PEAK_KEY:
            v, t = context_value(ctx, PEAK_KEY[d], a.threads)
            if v:
                peaks[d] = (v, t)

    fig, ax = plt.subplots(figsize=(12, 7.5), dpi=110)
    ax.set_xscale("log")
    ax.set_yscale("log")

    xs = [r["x"] for r in rows]
    ys = [r["y"] for r in rows]
    x_lo, x_hi = min(xs) / 2.5, max(xs) * 2.5
    top = max(ys + [p for p, _ in peaks.values()])
    y_lo, y_hi = min(ys) / 2.5, top * 2.2
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(y_lo, y_hi)

    # ---- roofs: DRAM slope up to each dtype's ceiling, then the ceiling.
    grid = [x_lo * (x_hi / x_lo) ** (i / 400) for i in range(401)]
    if bw:
        ax.plot(grid, [bw * x for x in grid], color="0.55", lw=1.0, ls=(0, (1, 2)), zorder=1)
    for d, (peak, pt) in peaks.items():
        style = DTYPE_STYLE.get(d, ("o", "-"))[1]
        ys_roof = [min(peak, bw * x) if bw else peak for x in grid]
        ax.plot(grid, ys_roof, color="black", lw=1.6, ls=style, zorder=2)
        src = "" if pt == a.threads else f", from the {pt}T probe"
        unit = "GOP/s" if d == "int8" else "GFLOP/s"
        ax.text(x_hi / 1.08, peak * 1.06, f"{d} peak {peak:.0f} {unit}{src}", ha="right",
                va="bottom", fontsize=9.5)

    # ---- points: ours filled, baseline hollow, nudged apart in x.
    nudge = {"ffn": 1 / 1.07, "baseline": 1.07}
    for r in rows:
        marker = DTYPE_STYLE.get(r["dtype"], ("D", "-"))[0]
        c = colors[r["shape"]]
        x = r["x"] * nudge[r["kind"]]
        if r["kind"] == "ffn":
            ax.scatter([x], [r["y"]], marker=marker, s=60, color=c, edgecolors="black",
                       linewidths=0.5, zorder=4)
        else:
            ax.scatter([x], [r["y"]], marker=marker, s=60, facecolors="none", edgecolors=c,
                       linewidths=1.4, zorder=3)

    ax.set_xlabel("arithmetic intensity: FLOPs per weight byte  (= 2M / bytes per weight)", fontsize=11)
    ax.set_ylabel("achieved GFLOP/s  (int8: GOP/s)", fontsize=11)
    cpu = ctx.get("cpu_model", "")
    runs = f", best of {len(a.json)} runs" if len(a.json) > 1 else ""
    title = a.title or (f"swiglu block roofline, {a.threads} thread{'s' if a.threads != 1 else ''}"
                        f"{runs}" + (f" — {cpu}" if cpu else ""))
    ax.set_title(title, fontsize=12)
    ax.grid(True, which="major", color="0.85", lw=0.8)
    ax.grid(True, which="minor", color="0.93", lw=0.5)

    handles = [Line2D([], [], color=colors[s], marker="o", ls="", ms=8, label=s) for s in shapes]
    handles += [Line2D([], [], color="0.45", marker=DTYPE_STYLE.get(d, ("D",))[0], ls="", ms=8,
                       label=d) for d in dtypes]
    handles += [Line2D([], [], color="0.45", mec="black", mew=0.5, marker="h", ls="", ms=9,
                       label="filled: ours (ffn/)"),
                Line2D([], [], color="0.45", marker="h", ls="", ms=9, mfc="none", mew=1.4,
                       label="hollow: baseline/ (oneDNN)")]
    handles += [Line2D([], [], color="black", ls=DTYPE_STYLE.get(d, ("", "-"))[1], lw=1.6,
                       label=f"{d} roof") for d in peaks]
    if bw:
        handles.append(Line2D([], [], color="0.55", ls=(0, (1, 2)), lw=1.0, label="DRAM slope"))
    ax.legend(handles=handles, loc="upper left", fontsize=9, ncol=2, framealpha=0.92)
    ax.text(0.995, 0.01, "M = tokens per call; points above the DRAM slope had their weights in "
            "cache (L2/L3)", transform=ax.transAxes, ha="right", va="bottom", fontsize=8.5,
            color="0.35")
    fig.tight_layout()
    label_tokens(ax, rows, nudge, fig.dpi)
    if bw:
        # Label the DRAM slope along it, low on the left, at its on-screen angle.
        x_lab = max(x_lo * 1.15, y_lo * 1.6 / bw)
        p0 = ax.transData.transform((x_lab, bw * x_lab))
        p1 = ax.transData.transform((x_lab * 2, bw * x_lab * 2))
        ang = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
        ax.annotate(f"DRAM read {bw:.1f} GB/s ({bw_t}T probe)", xy=(x_lab, bw * x_lab),
                    xytext=(-4, 4), textcoords="offset points", rotation=ang,
                    rotation_mode="anchor", ha="left", va="bottom", fontsize=9, color="0.3")
    fig.savefig(a.output)
    print(f"wrote {a.output}: {len(rows)} points, T={a.threads}, roofs "
          + ", ".join([f"DRAM {bw:.1f} GB/s"] if bw else [])
          + "".join(f", {d} {p:.0f}" for d, (p, _) in peaks.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
