"""scripts/peers.sh's parts: the torch peer (bench/peers/torch_peer.py) on a
small row, its outputs' check and its --tsv, and the headline table
(bench/peers/headline.py) joined from both peers' --tsv files. Timings are
not judged here: rows of ~1 ms batches, only their shape."""
import csv
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS = os.path.join(REPO, "bench", "peers")


def test_torch_peer_checks_and_writes_rows(tmp_path):
    tsv = tmp_path / "torch.tsv"
    cmd = [sys.executable, os.path.join(PEERS, "torch_peer.py"), "--shapes", "glass",
           "--tokens", "1,3", "--threads", "1", "--min-batch-s", "0.001", "--pause-ms", "0",
           "--tsv", str(tsv), "--allow-reference-blas"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "libblas.so.3 alternative:" in p.stdout
    with open(tsv, newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    assert [(r["shape"], r["dtype"], r["M"], r["T"]) for r in rows] == [
        ("glass", dt, m, "1") for dt in ("f32", "bf16") for m in ("1", "3")]
    for r in rows:
        # The check before timing: the bounds the script enforces.
        assert float(r["rel_err"]) <= {"f32": 1e-4, "bf16": 4e-2}[r["dtype"]]
        assert "MISMATCH" not in r["note"]
        assert float(r["ours_ms"]) > 0 and float(r["peer_ms"]) > 0 and float(r["ratio"]) > 0


def test_torch_peer_rejects_bad_arguments():
    p = subprocess.run([sys.executable, os.path.join(PEERS, "torch_peer.py"), "--dtypes", "q4_0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "q4_0" in p.stderr


def test_headline_joins_both_peers(tmp_path):
    head = "shape\tdtype\tM\tT\tours_ms\tpeer_ms\tratio\trel_err\tnote\n"
    (tmp_path / "ggml.tsv").write_text(
        head + "cyber\tf32\t1\t2\t0.0512\t0.0866\t1.6912\t4.1e-07\tCPU\n"
        "cyber\tq4_0\t512\t2\t3.2\t8.3\t2.58\t1.0e-03\tCPU_REPACK noisy\n"
        "llama7b\tf32\t512\t2\t374.2\t778.1\t2.05\t5e-07\tCPU\n"
        "cyber\tf32\t1\t1\t0.09\t0.1\t1.1\t4e-07\tCPU\n")  # another thread count: left out
    (tmp_path / "torch.tsv").write_text(
        head + "cyber\tbf16\t1\t2\t0.03\t0.2356\t7.85\t1.2e-02\t\n")
    p = subprocess.run([sys.executable, os.path.join(PEERS, "headline.py"),
                        "--ggml", str(tmp_path / "ggml.tsv"), "--torch", str(tmp_path / "torch.tsv")],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "| shape | tokens | ggml f32 | ggml q4_0 | torch bf16 |"
    assert lines[2] == "| llama7b (4096, 11008) | 512 | 374 vs 778: **2.05x** | - | - |"
    assert lines[3] == ("| cyber (384, 1024) | 1 | 0.0512 vs 0.0866: **1.69x** | - | "
                        "0.03 vs 0.236: **7.85x** |")
    assert lines[4] == "| cyber (384, 1024) | 512 | - | 3.2 vs 8.3: **2.58x** (noisy) | - |"
