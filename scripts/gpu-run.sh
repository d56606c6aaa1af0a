#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): every binary in .gpu/, each with its log under $OUT.
# Test binaries (test-*) run single-threaded with output shown; benchmarks (bench-*) run as is.
# Exits non-zero if any binary failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(pwd)/.gpu-out}
mkdir -p "$OUT"
PER_BINARY_TIMEOUT=${PER_BINARY_TIMEOUT:-240}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    /usr/local/cuda/bin/ptxas --version 2>&1 | tail -1
} > "$OUT/environment.log"
cat "$OUT/environment.log"

status=0
for bin in .gpu/test-* .gpu/bench-*; do
    [ -e "$bin" ] || continue
    name=$(basename "$bin")
    chmod +x "$bin"
    case "$name" in
        test-*) args=(--test-threads=1 --nocapture) ;;
        *) args=() ;;
    esac
    echo "=== $name"
    start=$(date +%s%N)
    timeout "$PER_BINARY_TIMEOUT" "$bin" "${args[@]}" > "$OUT/$name.log" 2>&1
    rc=$?
    end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 ))
    printf '%s: exit %d in %d ms\n' "$name" "$rc" "$ms" | tee -a "$OUT/summary.log"
    # Show the result lines (and any failure) here; the full log is under $OUT.
    grep -E "^test result|FAILED|panicked|skipping|^\||^device" "$OUT/$name.log" | head -60
    [ "$rc" -eq 0 ] || status=1
done
exit $status
