#!/usr/bin/env bash
# Runs on the GPU machine: compute-sanitizer's memcheck, racecheck and synccheck over one test
# binary of .gpu/ (as gpu-suite.sh built it), one run per tool and test filter, so a slow
# family cannot hide the others. Logs go into $OUT/sanitize.tgz, one line per run into
# $OUT/sanitize.log. Exits non-zero if any run reported an error or timed out.
#
#   OUT=$OUT bash scripts/gpu-sanitize.sh .gpu/test-kernels-gpu norm rope softmax
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$(pwd)/.gpu-out}
TOOLS=${TOOLS:-memcheck racecheck synccheck}
PER_RUN_TIMEOUT=${PER_RUN_TIMEOUT:-240}
SANITIZER=${SANITIZER:-$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)}
bin=$1
shift
[ -e "$bin.gz" ] && gunzip -f "$bin.gz"
chmod +x "$bin"
mkdir -p "$OUT"
LOGS=$(mktemp -d)
status=0
for filter in "$@"; do
    for tool in $TOOLS; do
        log="$LOGS/$(basename "$bin")-$filter-$tool.log"
        start=$(date +%s)
        timeout "$PER_RUN_TIMEOUT" "$SANITIZER" --tool "$tool" --error-exitcode 9 \
            "$bin" --test-threads=1 "$filter" > "$log" 2>&1
        rc=$?
        passed=$(grep -Eo "test result: [a-z]+\. [0-9]+ passed" "$log" | tail -1)
        summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
        printf '%s %s %s: exit %d in %d s; %s; %s\n' "$(basename "$bin")" "$filter" "$tool" \
            "$rc" "$(( $(date +%s) - start ))" "${passed:-no test result}" "${summary:-}" \
            | tee -a "$OUT/sanitize.log"
        [ "$rc" -eq 0 ] || status=1
        tar -czf "$OUT/sanitize.tgz" -C "$LOGS" .
    done
done
exit $status
