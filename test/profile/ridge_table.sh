#!/bin/bash
# The ridge table's arithmetic (issue 13): `swiglu_bench --ridge` must give
# every shape and dtype a row at 4, 8, 16 and 32 tokens whose limit is the
# larger of its read and compute times (the block formats' compute at their
# kernels' own rate, kern_GOP) plus the fixed cost of a call and two pool
# phases (glass and cyber), named by `bound`, and whose share is
# that limit over the measured time; the read rate must be known (> 0) and
# the DRAM probe must name the stream count it kept. Not a timed test: it
# checks what the table says, not how fast anything ran.
set -euo pipefail
bench=$1
out=$("$bench" --ridge --quick --dtype f32,q4_0 2>&1)
echo "$out"
echo "$out" | awk '
    /^dram_read_streams: / { streams = $2 }
    ($1 == "glass" || $1 == "cyber") && $3 ~ /^[0-9]+$/ && $4 ~ /^[0-9]+$/ {
        seen[$1 " " $2 " " $3] = 1
        ms = $5; read = $9; bytes = $10; flops = $11; kern = $12; fixed = $13 / 1000
        limit = $14; bound = $15; share = $16; sub(/%$/, "", share); share += 0
        big = (bytes > flops ? bytes : flops) + fixed
        if (read + 0 <= 0) { print "FAIL: no read rate: " $0; bad++ }
        if (fixed <= 0) { print "FAIL: no fixed cost on a small shape: " $0; bad++ }
        if (limit < big * 0.99 - 0.0002 || limit > big * 1.01 + 0.0002) { print "FAIL: limit != max(bytes, flops) + fixed: " $0; bad++ }
        want_bound = (bytes > flops ? "bytes" : ($2 == "q4_0" ? "kernel" : "compute")) "+fixed"
        if (bound != want_bound) { print "FAIL: wrong bound (want " want_bound "): " $0; bad++ }
        if (($2 == "q4_0") != (kern != "-")) { print "FAIL: kern_GOP only and always on block formats: " $0; bad++ }
        want = 100 * limit / ms
        # The printed limit and time carry 4 digits: 1 point, or 1 % of a
        # share in the thousands (the fixed cost on a loaded machine).
        slack = want > 100 ? want / 100 : 1
        if (share < want - slack || share > want + slack) { print "FAIL: share != limit / time: " $0; bad++ }
    }
    END {
        n = 0
        for (s in seen) n++
        split("glass cyber", shapes, " "); split("f32 q4_0", dtypes, " "); split("4 8 16 32", tokens, " ")
        for (i in shapes) for (j in dtypes) for (k in tokens)
            if (!((shapes[i] " " dtypes[j] " " tokens[k]) in seen)) { print "FAIL: no row " shapes[i] " " dtypes[j] " M=" tokens[k]; bad++ }
        if (streams != 1 && streams != 2 && streams != 4) { print "FAIL: dram_read_streams missing or not 1, 2, 4"; bad++ }
        if (bad > 0) exit 1
        print n " rows: limits, bounds and shares consistent"
    }'
