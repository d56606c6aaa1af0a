//! The launch of the elementwise kernels: a grid-stride loop over 16-byte vectors of the
//! narrowest element type, then one element at a time for the last `n mod step`.

use crate::FloatType;
use kernel_runtime::LaunchConfig;

/// Threads per CTA of map kernels.
pub(crate) const MAP_THREADS: u32 = 256;
/// The grid never exceeds this many CTAs; the loop strides over the rest.
const MAX_MAP_CTAS: u32 = 1 << 20;

/// Elements one loop step moves: one 16-byte vector of the narrowest format.
pub(crate) fn step_elems(formats: impl IntoIterator<Item = FloatType>) -> u32 {
    formats
        .into_iter()
        .map(FloatType::per_vector)
        .max()
        .unwrap_or(4)
}

/// Launch shape of a map kernel over `n` elements moved `step` at a time.
pub(crate) fn map_launch(n: u32, step: u32) -> LaunchConfig {
    let work = (n / step).max(1);
    LaunchConfig::linear(work.div_ceil(MAP_THREADS).min(MAX_MAP_CTAS), MAP_THREADS)
}
