//! Tensor-map encodings remembered by what determines them: the element type, the address
//! and the tiling (an encoding names nothing else, neither the buffer nor the device). A GEMM
//! called again on the same buffers and shapes, as every step of a training loop does, then
//! skips the driver's encoding; a new buffer at a freed one's address gets the same bytes,
//! which describe it as well.

use crate::error::Result;
use crate::tensor_map::TensorTiling;
use kernel_dsl::{ScalarType, TENSOR_MAP_BYTES};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

type Encoding = [u8; TENSOR_MAP_BYTES as usize];

#[derive(PartialEq, Eq, Hash)]
struct Key {
    /// Driver and emulator encodings differ for one address.
    on_device: bool,
    elem: ScalarType,
    addr: u64,
    tiling: TensorTiling,
}

/// Enough for the maps of every layer of a large model's step; past it the cache starts over.
const CAPACITY: usize = 4096;

static ENCODINGS: LazyLock<Mutex<HashMap<Key, Encoding>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

thread_local! {
    /// Encodings this thread computed, for tests (other threads share the cache).
    static COMPUTED: Cell<u64> = const { Cell::new(0) };
}

/// The encoding of `tiling` over `elem` values at `addr`: remembered, or computed by `encode`
/// and remembered (an error is not).
pub(crate) fn encoding(
    on_device: bool,
    elem: ScalarType,
    addr: u64,
    tiling: &TensorTiling,
    encode: impl FnOnce() -> Result<Encoding>,
) -> Result<Encoding> {
    let key = Key {
        on_device,
        elem,
        addr,
        tiling: tiling.clone(),
    };
    if let Some(found) = lock().get(&key) {
        return Ok(*found);
    }
    let bytes = encode()?;
    COMPUTED.with(|n| n.set(n.get() + 1));
    let mut cache = lock();
    if cache.len() >= CAPACITY {
        cache.clear();
    }
    cache.insert(key, bytes);
    Ok(bytes)
}

/// How many encodings this thread has computed rather than found.
pub(crate) fn computed_on_this_thread() -> u64 {
    COMPUTED.with(Cell::get)
}

fn lock() -> std::sync::MutexGuard<'static, HashMap<Key, Encoding>> {
    // The map holds plain bytes: a panic elsewhere cannot leave it half-written.
    ENCODINGS.lock().unwrap_or_else(PoisonError::into_inner)
}
