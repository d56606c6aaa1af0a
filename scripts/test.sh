#!/usr/bin/env bash
# The whole test suite: installs ptxas where it is missing, then runs every crate's unit,
# integration and doc tests (PTX goldens, the ptxas sweep, the downstream-crate build, emulator
# numerics; GPU tests skip with one line where no GPU is present).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bash scripts/install-ptxas.sh
export PTXKIT_PTXAS="$root/.tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas"
# The checks that assemble the library share ptxas results: a module is assembled once a run.
export PTXKIT_PTXAS_CACHE="${CARGO_TARGET_DIR:-$root/target}/ptxas-cache"
cargo test --workspace --locked
