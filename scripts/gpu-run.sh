#!/usr/bin/env bash
# Runs on the GPU machine (no Rust there): every binary in .gpu/, then `ptxkit train` where the
# CLI was built. Test binaries (test-*) run single-threaded with output shown; benchmarks
# (bench-*) run as is. Each binary's log goes into $OUT/logs.tgz (the device tool brings back at
# most eight files), beside $OUT/summary.log and $OUT/environment.log.
# Exits non-zero if any binary failed.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(pwd)/.gpu-out}
mkdir -p "$OUT"
LOGS=$(mktemp -d)
PER_BINARY_TIMEOUT=${PER_BINARY_TIMEOUT:-240}

{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "host: $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv 2>&1
    /usr/local/cuda/bin/ptxas --version 2>&1 | tail -1
} > "$OUT/environment.log"
cat "$OUT/environment.log"

# gpu-suite.sh packs each binary with gzip.
for gz in .gpu/*.gz; do
    [ -e "$gz" ] && gunzip -f "$gz"
done

status=0
for bin in .gpu/test-* .gpu/downstream .gpu/bench-* .gpu/ptxkit; do
    [ -e "$bin" ] || continue
    name=$(basename "$bin")
    chmod +x "$bin"
    case "$name" in
        # The CLI tests run the binary at its build path, which only exists where it was built;
        # the CLI itself runs below as ptxkit-train.
        test-ptxkit-train) args=(--test-threads=1 --nocapture --skip the_train_command) ;;
        test-*) args=(--test-threads=1 --nocapture) ;;
        ptxkit) args=(train --device cuda) name=ptxkit-train ;;
        downstream) args=(launch cuda) name=downstream-saxpy ;;
        *) args=() ;;
    esac
    echo "=== $name"
    start=$(date +%s%N)
    timeout "$PER_BINARY_TIMEOUT" "$bin" "${args[@]}" > "$LOGS/$name.log" 2>&1
    rc=$?
    end=$(date +%s%N)
    ms=$(( (end - start) / 1000000 ))
    printf '%s: exit %d in %d ms\n' "$name" "$rc" "$ms" | tee -a "$OUT/summary.log"
    # Show the result lines (and any failure) here; the full log is under $OUT.
    grep -E "^test result|FAILED|panicked|skipping|^\||^device|^step|copy bandwidth|^error|^saxpy" "$LOGS/$name.log" | head -60
    [ "$rc" -eq 0 ] || status=1
    # Re-packed after every binary, so a run cut off at its time limit still brings back logs.
    tar -czf "$OUT/logs.tgz" -C "$LOGS" .
done
exit $status
