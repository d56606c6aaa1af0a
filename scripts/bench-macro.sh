#!/usr/bin/env bash
# Measures what `#[kernel]` costs a downstream build: generates a throwaway crate with 50 kernels
# (60 instances: five kernel shapes, one with f32 and bf16 instances) for sm_89,sm_121, and
# prints (1) the macro's own per-kernel timings (lowering, emission for all 11 targets) and
# (2) the incremental build time of the crate with and without the kernels, three runs each.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${BENCH_DIR:-$root/target/bench-macro}"
mkdir -p "$work/src"
cat > "$work/Cargo.toml" <<TOML
[package]
name = "bench-macro"
version = "0.1.0"
edition = "2021"

[workspace]

[dependencies]
kernel-dsl = { path = "$root/kernel-dsl" }
kernel-macros = { path = "$root/kernel-macros" }
kernel-runtime = { path = "$root/runtime" }

[features]
kernels = []
sm_70 = []
sm_75 = []
sm_80 = []
sm_86 = []
sm_89 = []
sm_90 = []
sm_90a = []
sm_100 = []
sm_100a = []
sm_120 = []
sm_121 = []
TOML
{
  printf '#![allow(dead_code)]\npub mod paths {\n    pub use kernel_dsl as dsl;\n    #[allow(unused_imports)]\n    pub use kernel_macros::__kernel_expand;\n    pub use kernel_runtime as runtime;\n}\n#[cfg(feature = "kernels")]\nmod k {\nuse kernel_macros::kernel;\n'
  for i in $(seq 0 49); do
    # Template i % 5, renamed with suffix i.
    awk -v want=$((i % 5)) -v n="$i" '
      /^#\[kernel/ { k++ } k - 1 == want { gsub(/@N@/, n); print }' "$root/scripts/bench-macro/templates.rs.in"
  done
  printf '}\n'
} > "$work/src/lib.rs"
cd "$work"
cargo build -q --features sm_89,sm_121,kernels
echo "== macro timings (per kernel instance, all 11 targets emitted)"
touch src/lib.rs
PTXKIT_MACRO_TIMING=1 cargo build -q --features sm_89,sm_121,kernels 2>&1 | grep ptxkit-macro-timing > timing.txt || true
python3 - timing.txt <<'PY'
import sys, re
rows = [dict(re.findall(r"(\w+)=(\S+)", l)) for l in open(sys.argv[1])]
per = [float(r["per_target_us"]) for r in rows]
low = [float(r["lower_us"]) for r in rows]
print(f"instances {len(rows)}: emission per kernel-target mean {sum(per)/len(per)/1000:.3f} ms, max {max(per)/1000:.3f} ms; lowering mean {sum(low)/len(low)/1000:.3f} ms")
PY
echo "== incremental build of the crate (seconds), with and without the 50 kernels"
for feats in "sm_89,sm_121,kernels" "sm_89,sm_121"; do
  for _ in 1 2 3; do
    touch src/lib.rs
    s=$(date +%s.%N); cargo build -q --features "$feats"; e=$(date +%s.%N)
    echo "$feats: $(python3 -c "print(f'{$e-$s:.2f}')")"
  done
done
