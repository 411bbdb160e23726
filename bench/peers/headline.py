#!/usr/bin/env python3
"""One markdown table in the shape of the README's headline from the peers'
--tsv files (swiglu_ggml_peer --tsv, torch_peer.py --tsv): a row per (shape,
tokens), a column per (peer, dtype), each cell "ours ms vs peer ms: ratio"
(peer time / ours per round, median; > 1: ours faster), with any note
(MISMATCH, noisy, busy, reference-BLAS) after it.

    python3 bench/peers/headline.py --ggml ggml.tsv --torch torch.tsv [--threads 2]
"""

import argparse
import csv
import sys

# In the README's order: the largest first.
SHAPE_LABEL = {"llama7b": "llama7b (4096, 11008)", "cyber": "cyber (384, 1024)",
               "glass": "glass (128, 341)"}
# The buffer-type names ggml's note column carries: not a flag.
GGML_BUFFERS = ("CPU", "CPU_REPACK")


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def fmt_ms(v):
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def cell(row):
    text = (f"{fmt_ms(float(row['ours_ms']))} vs {fmt_ms(float(row['peer_ms']))}: "
            f"**{float(row['ratio']):.2f}x**")
    flags = [w for w in (row.get("note") or "").split() if w not in GGML_BUFFERS]
    return text + (f" ({', '.join(flags)})" if flags else "")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ggml", help="swiglu_ggml_peer --tsv output")
    p.add_argument("--torch", help="torch_peer.py --tsv output")
    p.add_argument("--threads", type=int, default=2, help="the thread count shown (default 2)")
    args = p.parse_args()
    columns, cells, keys = [], {}, []
    for peer, path in (("ggml", args.ggml), ("torch", args.torch)):
        if not path:
            continue
        for row in read_rows(path):
            if int(row["T"]) != args.threads:
                continue
            col, key = f"{peer} {row['dtype']}", (row["shape"], int(row["M"]))
            if col not in columns:
                columns.append(col)
            if key not in keys:
                keys.append(key)
            cells[key, col] = cell(row)
    if not keys:
        print("headline: no rows", file=sys.stderr)
        return 1
    print("| shape | tokens | " + " | ".join(columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    for shape, m in sorted(keys, key=lambda k: (list(SHAPE_LABEL).index(k[0])
                                                if k[0] in SHAPE_LABEL else 99, k[0], k[1])):
        print(f"| {SHAPE_LABEL.get(shape, shape)} | {m} | "
              + " | ".join(cells.get(((shape, m), c), "-") for c in columns) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
