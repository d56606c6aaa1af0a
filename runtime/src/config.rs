//! The shape of a launch.

/// Grid, block and dynamic shared memory of one launch.
///
/// ```
/// use kernel_runtime::LaunchConfig;
/// let cfg = LaunchConfig::for_elements(1000, 256);
/// assert_eq!((cfg.grid, cfg.block), ([4, 1, 1], [256, 1, 1]));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaunchConfig {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `grid` blocks of `block` threads, no dynamic shared memory.
    ///
    /// ```
    /// let cfg = kernel_runtime::LaunchConfig::linear(8, 128);
    /// assert_eq!(cfg.grid, [8, 1, 1]);
    /// ```
    pub const fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            dynamic_shared_bytes: 0,
        }
    }

    /// One thread per element in 1-D blocks of `block` threads (the last block partly idle).
    ///
    /// ```
    /// let cfg = kernel_runtime::LaunchConfig::for_elements(257, 128);
    /// assert_eq!(cfg.grid, [3, 1, 1]);
    /// ```
    pub const fn for_elements(n: u32, block: u32) -> LaunchConfig {
        let grid = if block == 0 { 0 } else { n.div_ceil(block) };
        LaunchConfig::linear(grid, block)
    }

    /// The same launch with `bytes` of dynamic shared memory.
    ///
    /// ```
    /// let cfg = kernel_runtime::LaunchConfig::linear(1, 32).with_dynamic_shared(4096);
    /// assert_eq!(cfg.dynamic_shared_bytes, 4096);
    /// ```
    pub const fn with_dynamic_shared(mut self, bytes: u32) -> LaunchConfig {
        self.dynamic_shared_bytes = bytes;
        self
    }

    /// Threads per block.
    ///
    /// ```
    /// assert_eq!(kernel_runtime::LaunchConfig { grid: [1; 3], block: [8, 4, 2], dynamic_shared_bytes: 0 }.threads_per_block(), 64);
    /// ```
    pub const fn threads_per_block(&self) -> u64 {
        self.block[0] as u64 * self.block[1] as u64 * self.block[2] as u64
    }
}
