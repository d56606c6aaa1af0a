//! The paged KV cache: per layer a key and a value buffer of `num_blocks` pages of
//! `block_size` tokens (bf16, token-major, as `kernels::layout::kv_cache_append` writes them),
//! and the free list the engine takes pages from and gives them back to.

use kernel_runtime::{Bf16, Buffer, Stream};
use kernels::layout::PagedLayout;

/// The cache's pages on the device and which of them are free.
pub(crate) struct PagedKvCache {
    pub k: Vec<Buffer<Bf16>>,
    pub v: Vec<Buffer<Bf16>>,
    pub num_blocks: usize,
    pub block_size: usize,
    /// Elements per token: kv heads × head dim.
    pub width: usize,
    /// Free pages, taken from the back (so the lowest-numbered pages go first).
    free: Vec<u32>,
}

impl PagedKvCache {
    pub fn new(
        stream: &Stream,
        layers: usize,
        num_blocks: usize,
        block_size: usize,
        width: usize,
    ) -> Result<PagedKvCache, kernel_runtime::Error> {
        let len = num_blocks * block_size * width;
        let mut k = Vec::with_capacity(layers);
        let mut v = Vec::with_capacity(layers);
        for _ in 0..layers {
            k.push(Buffer::zeros(stream, len)?);
            v.push(Buffer::zeros(stream, len)?);
        }
        Ok(PagedKvCache {
            k,
            v,
            num_blocks,
            block_size,
            width,
            free: (0..num_blocks as u32).rev().collect(),
        })
    }

    /// Pages needed to hold `tokens` tokens.
    pub fn pages_for(&self, tokens: usize) -> usize {
        tokens.div_ceil(self.block_size)
    }

    /// `n` free pages, or `None` (taking nothing) when fewer are free.
    pub fn take(&mut self, n: usize) -> Option<Vec<u32>> {
        if n > self.free.len() {
            return None;
        }
        Some(
            self.free
                .split_off(self.free.len() - n)
                .into_iter()
                .rev()
                .collect(),
        )
    }

    /// Returns pages to the free list.
    pub fn give_back(&mut self, pages: Vec<u32>) {
        self.free.extend(pages.into_iter().rev());
    }

    /// Pages not held by any sequence.
    pub fn free_pages(&self) -> usize {
        self.free.len()
    }

    /// The layout of the cache addressed through a table of `seqs` rows of `blocks_per_seq`.
    pub fn layout(&self, seqs: usize, blocks_per_seq: usize) -> PagedLayout {
        PagedLayout {
            num_blocks: self.num_blocks,
            block_size: self.block_size,
            width: self.width,
            seqs,
            blocks_per_seq,
        }
    }
}
