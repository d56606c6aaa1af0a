#!/usr/bin/env bash
# Builds the GPU suite here (release test binaries and benchmark examples), copies the stripped
# binaries into .gpu/ (git-ignored, carried to the GPU machine), and prints the remote command.
#
#   scripts/gpu-suite.sh                  # packages: kernel-runtime
#   PACKAGES="kernel-runtime kernels" scripts/gpu-suite.sh
#   ONLY='gpu|bench' PACKAGES=... scripts/gpu-suite.sh   # keep binaries whose name matches
#   FEATURES=sm_90 PACKAGES=kernels scripts/gpu-suite.sh   # embed the GPU's own target
#
# Where the root package `ptxkit` is built, its CLI binary is copied too, as .gpu/ptxkit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PACKAGES=${PACKAGES:-kernel-runtime}
ONLY=${ONLY:-.}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-/work/target-runtime}
# Cubins for the enabled targets are embedded where ptxas is found at build time: the one
# scripts/install-ptxas.sh installs, unless PTXKIT_PTXAS names another.
if [[ -z "${PTXKIT_PTXAS:-}" && -x "$ROOT/.tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas" ]]; then
    export PTXKIT_PTXAS="$ROOT/.tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas"
fi
OUT_DIR="$ROOT/.gpu"
LIMIT_BYTES=$((64 * 1024 * 1024))

rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"

# Prints the executables cargo reports for one build command, as "kind name path" lines.
executables() {
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    exe = msg.get("executable")
    if msg.get("reason") != "compiler-artifact" or not exe:
        continue
    target = msg["target"]
    if not msg["profile"]["test"] and "example" not in target["kind"]:
        continue
    kind = "test" if msg["profile"]["test"] else "bench"
    print(kind, target["name"], exe)
'
}

for pkg in $PACKAGES; do
    echo "building $pkg (release) ..." >&2
    {
        cargo test --release -p "$pkg" ${FEATURES:+--features "$FEATURES"} --no-run --message-format=json
        cargo build --release -p "$pkg" ${FEATURES:+--features "$FEATURES"} --examples --message-format=json
    } | executables | while read -r kind name exe; do
        dest="$OUT_DIR/$kind-${pkg}-$name"
        [[ "$kind-${pkg}-$name" =~ $ONLY ]] || continue
        cp "$exe" "$dest"
        strip "$dest" 2>/dev/null || true
        echo "  $dest ($(du -h "$dest" | cut -f1))" >&2
    done
done

if [[ " $PACKAGES " == *" ptxkit "* ]]; then
    cargo build --release -p ptxkit --bin ptxkit
    cp "$CARGO_TARGET_DIR/release/ptxkit" "$OUT_DIR/ptxkit"
    strip "$OUT_DIR/ptxkit" 2>/dev/null || true
fi

# The downstream fixture (a user's crate) for the GPU's own target, launching `#[kernel]` saxpy
# through its typed launcher: `DOWNSTREAM_FEATURES=sm_90 scripts/gpu-suite.sh`.
if [ -n "${DOWNSTREAM_FEATURES:-}" ]; then
    cargo build --release --quiet --features "$DOWNSTREAM_FEATURES" \
        --manifest-path tests/downstream/Cargo.toml --target-dir "$CARGO_TARGET_DIR/downstream"
    cp "$CARGO_TARGET_DIR/downstream/release/downstream" "$OUT_DIR/downstream"
    strip "$OUT_DIR/downstream" 2>/dev/null || true
fi

# The GPU machine takes the tracked tree and the carried paths together up to 64 MiB, and the
# goldens fill most of it: the binaries travel gzipped (gpu-run.sh unpacks them).
gzip -9 -f "$OUT_DIR"/*
total=$(du -cb "$OUT_DIR"/* | tail -1 | cut -f1)
echo "total $((total / 1024)) KiB in .gpu/" >&2
tracked=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
if [ "$((total + tracked))" -gt "$LIMIT_BYTES" ]; then
    echo "error: .gpu/ ($total bytes) and the tracked tree ($tracked) exceed the 64 MiB the" \
        "GPU machine accepts: carry fewer binaries (ONLY=...)" >&2
    exit 1
fi
echo
echo "remote command (repo root as cwd, carrying .gpu):"
echo "  bash scripts/gpu-run.sh"
