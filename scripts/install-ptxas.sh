#!/usr/bin/env bash
# Installs NVIDIA's ptxas 12.9 (sm_70..sm_121, PTX ISA <= 8.8) from PyPI into .tools/, where
# kernel-dsl's `Ptxas::find` and the test suite look for it. No GPU or CUDA toolkit needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/.tools/ptxas-12.9"
bin="$dest/nvidia/cuda_nvcc/bin/ptxas"
if [ -x "$bin" ]; then
  echo "ptxas already installed: $bin"
  exit 0
fi
mkdir -p "$dest"
python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$dest" nvidia-cuda-nvcc-cu12==12.9.86
chmod +x "$bin"
"$bin" --version | tail -1
echo "ptxas installed: $bin"
