#!/usr/bin/env bash
# Disassembles a kernel's golden PTX to SASS on this machine, no GPU needed: assembles the
# snapshot with .tools' ptxas for an architecture, then runs NVIDIA's nvdisasm (installed from
# PyPI into .tools/ on first use). For reading what ptxas made of a kernel, side by side
# across commits:
#
#   bash scripts/sass.sh gguf_gemv_mma__f32_f32_1_2_1            # sm_90, the working tree
#   bash scripts/sass.sh gguf_gemv_mma__f32_f32_1_2_1 sm_90 ca8cbc6 > old.sass
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
kernel="${1:?usage: scripts/sass.sh <golden name, e.g. gguf_gemv_mma__f32_f32_1_2_1> [sm_90] [commit]}"
arch="${2:-sm_90}"
commit="${3:-}"
bash "$root/scripts/install-ptxas.sh" > /dev/null
ptxas="$root/.tools/ptxas-12.9/nvidia/cuda_nvcc/bin/ptxas"
tools="$root/.tools/nvdisasm"
nvdisasm="$(find "$tools" -name nvdisasm -type f 2> /dev/null | head -1 || true)"
if [ -z "$nvdisasm" ]; then
  mkdir -p "$tools"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --target "$tools" nvidia-cuda-nvdisasm
  nvdisasm="$(find "$tools" -name nvdisasm -type f | head -1)"
  chmod +x "$nvdisasm"
fi
snap="tests/snapshots/goldens__${kernel}@sm_80.snap"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The snapshot's PTX follows its second `---` line (the first two frame insta's header).
if [ -n "$commit" ]; then
  git -C "$root" show "$commit:$snap"
else
  cat "$root/$snap"
fi | awk 'n >= 2 { print; next } /^---/ { n++ }' > "$work/kernel.ptx"
# The goldens target sm_80; ptxas assembles them for any newer architecture.
"$ptxas" -arch="$arch" -v "$work/kernel.ptx" -o "$work/kernel.cubin" 2>&1 | grep -E "registers|spill" >&2
"$nvdisasm" -c "$work/kernel.cubin"
