//! Everything a kernel's source names: the `#[kernel]` and `#[device]` attributes, the `f16`
//! and `bf16` types, the [`Element`] bound of type parameters, and the intrinsics.
//!
//! The intrinsics are ordinary Rust items so that IDEs and rustdoc see them; `#[kernel]`
//! replaces every call with PTX. Called on the host, the GPU-only ones panic; the math
//! functions compute the same result on the host (approximate ones, such as [`rsqrt`], the
//! exact value). Which intrinsics exist is `kernel_dsl::intrinsics::INTRINSICS`; a test checks
//! that every row has a stub here with its signature, and every stub a row.
//!
//! ```
//! use ptxkit::prelude::*;
//!
//! #[kernel]
//! pub fn scale(x: &[f32], y: &mut [f32], s: f32, n: u32) {
//!     let i = block_idx().x * block_dim().x + thread_idx().x;
//!     if i < n {
//!         y[i] = x[i] * s;
//!     }
//! }
//!
//! assert_eq!(SCALE.meta.entry, "scale");
//! assert_eq!(SCALE.meta.params.len(), 4);
//! ```
#![allow(non_camel_case_types, unused_variables)]

pub use kernel_macros::{device, kernel};

/// IEEE half precision, as kernels and launchers see it.
pub type f16 = kernel_runtime::F16;
/// bfloat16, as kernels and launchers see it.
pub type bf16 = kernel_runtime::Bf16;

/// The element types a buffer holds and a kernel's type parameter may stand for
/// (`T: Element`): the runtime's trait, so a kernel's instance types are exactly the types its
/// launcher's buffers can hold.
pub use kernel_runtime::Element;

/// A thread, block or grid coordinate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

fn device_only(name: &str) -> ! {
    panic!("`{name}` runs on the GPU only: call it inside a #[kernel] or #[device] function")
}

/// The thread's index in its block (`%tid`).
pub fn thread_idx() -> Dim3 {
    device_only("thread_idx")
}
/// The block's index in the grid (`%ctaid`).
pub fn block_idx() -> Dim3 {
    device_only("block_idx")
}
/// The block's shape (`%ntid`).
pub fn block_dim() -> Dim3 {
    device_only("block_dim")
}
/// The grid's shape in blocks (`%nctaid`).
pub fn grid_dim() -> Dim3 {
    device_only("grid_dim")
}
/// The thread's lane in its warp (`%laneid`).
pub fn lane_id() -> u32 {
    device_only("lane_id")
}
/// Waits until every thread of the block arrives (`bar.sync 0`); it must be reached by all
/// threads of the block, which the verifier checks.
pub fn sync_threads() {
    device_only("sync_threads")
}
/// Waits until every lane of the warp arrives (`bar.warp.sync 0xffffffff`); what the lanes
/// wrote to shared memory before it, `cp.async` copies they waited for included, is visible
/// to all of them after it.
pub fn sync_warp() {
    device_only("sync_warp")
}
/// Waits for every thread of the block, as [`sync_threads`], and returns whether `p` holds in
/// any of them (`bar.red.or.pred`, CUDA's `__syncthreads_or`). Every thread gets the same
/// result, so it may end a loop that holds barriers:
///
/// ```
/// use ptxkit::prelude::*;
///
/// /// Blocks take chunks of 256 elements from a counter until none is left.
/// #[kernel(block = 256)]
/// pub fn double_by_chunks(x: &mut [f32], counter: &mut [u32], chunks: u32) {
///     let ticket_of = shared_array::<u32, 1>();
///     let mut more = true;
///     while more {
///         if thread_idx().x == 0 {
///             ticket_of[0] = counter.atomic_add(0, 1u32);
///         }
///         sync_threads();
///         let ticket = ticket_of[0];
///         more = sync_threads_or(ticket < chunks);
///         if ticket < chunks {
///             let i = ticket * 256 + thread_idx().x;
///             x[i] = 2.0 * x[i];
///         }
///     }
/// }
/// # use ptxkit::dsl::Target;
/// # assert!(DOUBLE_BY_CHUNKS.ptx_for(Target::Sm80).unwrap().contains("bar.red.or.pred"));
/// ```
pub fn sync_threads_or(p: bool) -> bool {
    device_only("sync_threads_or")
}
/// Waits for every thread of the block, as [`sync_threads`], and returns whether `p` holds in
/// all of them (`bar.red.and.pred`, CUDA's `__syncthreads_and`); the same in every thread.
pub fn sync_threads_and(p: bool) -> bool {
    device_only("sync_threads_and")
}
/// Waits for every thread of the block, as [`sync_threads`], and returns how many of them hold
/// `p` (`bar.red.popc.u32`, CUDA's `__syncthreads_count`); the same in every thread.
pub fn sync_threads_count(p: bool) -> u32 {
    device_only("sync_threads_count")
}
/// The value of `v` in lane `lane_id() + delta` (`shfl.sync.down`); 32-bit types.
pub fn shfl_down<T: Copy>(v: T, delta: u32) -> T {
    device_only("shfl_down")
}
/// The value of `v` in lane `lane_id() - delta` (`shfl.sync.up`).
pub fn shfl_up<T: Copy>(v: T, delta: u32) -> T {
    device_only("shfl_up")
}
/// The value of `v` in lane `lane_id() ^ mask` (`shfl.sync.bfly`).
pub fn shfl_xor<T: Copy>(v: T, mask: u32) -> T {
    device_only("shfl_xor")
}
/// The value of `v` in lane `lane` (`shfl.sync.idx`).
pub fn shfl_idx<T: Copy>(v: T, lane: u32) -> T {
    device_only("shfl_idx")
}
/// Whether `p` holds in every lane of the warp.
pub fn vote_all(p: bool) -> bool {
    device_only("vote_all")
}
/// Whether `p` holds in some lane of the warp.
pub fn vote_any(p: bool) -> bool {
    device_only("vote_any")
}
/// One bit per lane: which lanes hold `p`.
pub fn ballot(p: bool) -> u32 {
    device_only("ballot")
}
/// Sum over the warp (`redux.sync`, sm_80+; u32 or i32).
pub fn warp_reduce_add<T: Copy>(v: T) -> T {
    device_only("warp_reduce_add")
}
/// Minimum over the warp (`redux.sync`, sm_80+).
pub fn warp_reduce_min<T: Copy>(v: T) -> T {
    device_only("warp_reduce_min")
}
/// Maximum over the warp (`redux.sync`, sm_80+).
pub fn warp_reduce_max<T: Copy>(v: T) -> T {
    device_only("warp_reduce_max")
}
/// Bitwise and over the warp (`redux.sync`, sm_80+).
pub fn warp_reduce_and(v: u32) -> u32 {
    device_only("warp_reduce_and")
}
/// Bitwise or over the warp (`redux.sync`, sm_80+).
pub fn warp_reduce_or(v: u32) -> u32 {
    device_only("warp_reduce_or")
}
/// Bitwise xor over the warp (`redux.sync`, sm_80+).
pub fn warp_reduce_xor(v: u32) -> u32 {
    device_only("warp_reduce_xor")
}

/// `a * b + c` with one rounding.
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}
/// The smaller of two numbers.
pub fn min<T: PartialOrd>(a: T, b: T) -> T {
    if b < a {
        b
    } else {
        a
    }
}
/// The larger of two numbers.
pub fn max<T: PartialOrd>(a: T, b: T) -> T {
    if b > a {
        b
    } else {
        a
    }
}
/// `1 / sqrt(x)`, fast and approximate: `rsqrt.approx.f32` on the GPU, whose error the PTX
/// ISA bounds at a few ulp. For the IEEE-rounded value use [`rsqrt_rn`].
pub fn rsqrt(x: f32) -> f32 {
    1.0 / x.sqrt()
}
/// `1 / sqrt(x)` in two correctly rounded steps (`sqrt.rn.f32`, then `rcp.rn.f32`): the same
/// bits as `1.0 / x.sqrt()` on the host, and the op library's meaning of rsqrt.
pub fn rsqrt_rn(x: f32) -> f32 {
    1.0 / x.sqrt()
}
/// Square root, correctly rounded (`sqrt.rn.f32`); [`sqrt`] under the name of its rounding.
pub fn sqrt_rn(x: f32) -> f32 {
    x.sqrt()
}
/// `a / b` within 2 ulp in a few instructions (`div.full.f32`), where `/` is the IEEE
/// division's subroutine; for per-element math such as activations.
pub fn div_full(a: f32, b: f32) -> f32 {
    a / b
}
/// `1 / x`, correctly rounded (`rcp.rn.f32`).
pub fn rcp_rn(x: f32) -> f32 {
    1.0 / x
}
/// `2^x` with subnormal inputs and results flushed to zero (`ex2.approx.ftz.f32`).
pub fn ex2_approx_ftz(x: f32) -> f32 {
    let x = if x.is_subnormal() { 0.0 } else { x };
    let r = x.exp2();
    if r.is_subnormal() {
        0.0
    } else {
        r
    }
}
/// `e^x` (`ex2.approx` of `x·log2 e` on the GPU).
pub fn exp(x: f32) -> f32 {
    x.exp()
}
/// `2^x` (`ex2.approx.f32`).
pub fn exp2(x: f32) -> f32 {
    x.exp2()
}
/// Natural logarithm (`lg2.approx` scaled by ln 2).
pub fn ln(x: f32) -> f32 {
    x.ln()
}
/// Base-2 logarithm (`lg2.approx.f32`).
pub fn log2(x: f32) -> f32 {
    x.log2()
}
/// Square root, correctly rounded (`sqrt.rn.f32`).
pub fn sqrt(x: f32) -> f32 {
    x.sqrt()
}
/// Sine (`sin.approx.f32`).
pub fn sin(x: f32) -> f32 {
    x.sin()
}
/// Cosine (`cos.approx.f32`).
pub fn cos(x: f32) -> f32 {
    x.cos()
}
/// Hyperbolic tangent (`tanh.approx.f32`, sm_75+).
pub fn tanh(x: f32) -> f32 {
    x.tanh()
}
/// Absolute value.
pub fn abs(x: f32) -> f32 {
    x.abs()
}
/// Rounds down (`cvt.rmi.f32.f32`).
pub fn floor(x: f32) -> f32 {
    x.floor()
}
/// Rounds up (`cvt.rpi.f32.f32`).
pub fn ceil(x: f32) -> f32 {
    x.ceil()
}
/// Rounds to the nearest integer, ties to even (`cvt.rni.f32.f32`).
pub fn round_ties_even(x: f32) -> f32 {
    x.round_ties_even()
}
/// The bits of `x` (`mov.b32`), as Rust's `f32::to_bits`.
pub fn to_bits(x: f32) -> u32 {
    x.to_bits()
}
/// The f32 whose bits are `x` (`mov.b32`), as Rust's `f32::from_bits`.
pub fn from_bits(x: u32) -> f32 {
    f32::from_bits(x)
}
/// The bits of `x` in reverse order (`brev.b32`).
pub fn brev(x: u32) -> u32 {
    x.reverse_bits()
}
/// The number of leading zero bits of `x`, 32 for 0 (`clz.b32`).
pub fn clz(x: u32) -> u32 {
    x.leading_zeros()
}
/// `c` plus the dot product of the four bytes of `a` and of `b`, all read as int8
/// (`dp4a.s32.s32`), wrapping as the instruction does.
pub fn dp4a_s8(a: u32, b: u32, c: i32) -> i32 {
    (0..4).fold(c, |acc, i| {
        let (x, y) = ((a >> (8 * i)) as u8 as i8, (b >> (8 * i)) as u8 as i8);
        acc.wrapping_add(x as i32 * y as i32)
    })
}
/// `c` plus the dot product of the four bytes of `a`, read as u8, and of `b`, read as int8
/// (`dp4a.u32.s32`), wrapping as the instruction does.
pub fn dp4a_u8_s8(a: u32, b: u32, c: i32) -> i32 {
    (0..4).fold(c, |acc, i| {
        let (x, y) = ((a >> (8 * i)) as u8, (b >> (8 * i)) as u8 as i8);
        acc.wrapping_add(x as i32 * y as i32)
    })
}
/// `c` plus the dot product of the four bytes of `a` and of `b`, all read as u8
/// (`dp4a.u32.u32`), wrapping as the instruction does.
pub fn dp4a_u8(a: u32, b: u32, c: u32) -> u32 {
    (0..4).fold(c, |acc, i| {
        let (x, y) = ((a >> (8 * i)) as u8, (b >> (8 * i)) as u8);
        acc.wrapping_add(x as u32 * y as u32)
    })
}
/// The four bytes picked from the eight of `a` (bytes 0–3) and `b` (bytes 4–7) by the four
/// low nibbles of `c`, result byte `i` by nibble `i`; a nibble with bit 3 set replicates its
/// byte's sign bit (`prmt.b32`).
pub fn prmt(a: u32, b: u32, c: u32) -> u32 {
    let bytes = (u64::from(b) << 32) | u64::from(a);
    (0..4).fold(0, |out, i| {
        let nib = (c >> (4 * i)) & 0xf;
        let byte = (bytes >> (8 * (nib & 7))) as u8;
        let byte = match nib & 8 {
            0 => byte,
            _ => ((byte as i8) >> 7) as u8,
        };
        out | (u32::from(byte) << (8 * i))
    })
}
/// `x` rounded to tf32 (10 mantissa bits, nearest, ties away from zero) as the 32-bit word
/// [`mma_m16n8k8_tf32`] takes (`cvt.rna.tf32.f32`, sm_80+). Only the upper 19 bits are
/// promised; the host stub clears the rest.
pub fn cvt_tf32(x: f32) -> u32 {
    let b = x.to_bits();
    if !x.is_finite() {
        return b;
    }
    b.wrapping_add(0x1000) & 0xFFFF_E000
}
/// Orders this thread's memory accesses before and after it as seen by its block
/// (`fence.acq_rel.cta`).
pub fn fence_cta() {
    device_only("fence_cta")
}
/// Orders this thread's memory accesses as seen by every thread of the GPU
/// (`fence.acq_rel.gpu`): publish data before a flag or counter other blocks read.
pub fn fence_gpu() {
    device_only("fence_gpu")
}
/// Orders this thread's memory accesses as seen by the GPU, peers and the host
/// (`fence.acq_rel.sys`).
pub fn fence_sys() {
    device_only("fence_sys")
}
/// Suspends the thread for about `ns` nanoseconds, at most 1 ms (`nanosleep.u32`, sm_70+): the
/// pause in a loop that waits on a flag another block sets. On the emulator it lets the other
/// blocks run, which a spin-wait without it does not.
pub fn nanosleep(ns: u32) {
    let _ = ns;
    device_only("nanosleep")
}
/// Asks for the line of global memory holding `src[index]` in L2 and goes on
/// (`prefetch.global.L2`): no register holds it and nothing waits for it. The emulator skips it.
pub fn prefetch_l2<T>(src: &[T], index: u32) {
    let _ = (src, index);
    device_only("prefetch_l2")
}
/// A block-wide shared array of `N` elements of `T` (`.shared`).
pub fn shared_array<T, const N: usize>() -> &'static mut [T; N] {
    device_only("shared_array")
}
/// The block's dynamic shared memory, sized at launch (`LaunchConfig::dynamic_shared_bytes`).
pub fn dynamic_shared<T>() -> &'static mut [T] {
    device_only("dynamic_shared")
}
/// The f16 whose bits are the low 16 bits of `x`, as an f32, exactly (`cvt.f32.f16`).
pub fn f16_bits_to_f32(x: u32) -> f32 {
    f16::from_bits(x as u16).to_f32()
}
/// `a × b + c` on each bf16 half of the words, rounded once to nearest even
/// (`fma.rn.bf16x2`, sm_80+).
pub fn fma_bf16x2(a: u32, b: u32, c: u32) -> u32 {
    device_only("fma_bf16x2")
}
/// Rounds two f32 to e4m3 (nearest even, saturating at ±448) and packs them into the low 16
/// bits, `hi` in the upper byte (`cvt.rn.satfinite.e4m3x2.f32`, sm_89+).
pub fn pack_e4m3x2(hi: f32, lo: f32) -> u32 {
    device_only("pack_e4m3x2")
}
/// [`pack_e4m3x2`] for e5m2 (saturating at ±57344; sm_89+).
pub fn pack_e5m2x2(hi: f32, lo: f32) -> u32 {
    device_only("pack_e5m2x2")
}
/// Packs two f32 into one `bf16x2` word, `hi` in the upper half (sm_80+).
pub fn pack_bf16x2(hi: f32, lo: f32) -> u32 {
    device_only("pack_bf16x2")
}
/// Packs two f32 into one `f16x2` word, `hi` in the upper half.
pub fn pack_f16x2(hi: f32, lo: f32) -> u32 {
    device_only("pack_f16x2")
}
/// Loads four 8×8 b16 matrices from shared memory (`ldmatrix…x4`, sm_75+); `index` is the
/// element this lane's row starts at.
pub fn ldmatrix_x4<T>(tile: &[T], index: u32) -> [u32; 4] {
    device_only("ldmatrix_x4")
}
/// Loads two 8×8 b16 matrices from shared memory (`ldmatrix…x2`, sm_75+).
pub fn ldmatrix_x2<T>(tile: &[T], index: u32) -> [u32; 2] {
    device_only("ldmatrix_x2")
}
/// [`ldmatrix_x4`], transposed.
pub fn ldmatrix_x4_trans<T>(tile: &[T], index: u32) -> [u32; 4] {
    device_only("ldmatrix_x4_trans")
}
/// [`ldmatrix_x2`], transposed.
pub fn ldmatrix_x2_trans<T>(tile: &[T], index: u32) -> [u32; 2] {
    device_only("ldmatrix_x2_trans")
}
/// `acc + a × b` on one warp's 16×8×16 bf16 tile (`mma.sync`, sm_80+).
pub fn mma_m16n8k16_bf16(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
    device_only("mma_m16n8k16_bf16")
}
/// `acc + a × b` on one warp's 16×8×16 f16 tile (`mma.sync`, sm_80+).
pub fn mma_m16n8k16_f16(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
    device_only("mma_m16n8k16_f16")
}
/// `acc + a × b` on one warp's 16×8×8 tf32 tile (`mma.sync`, sm_80+): fragments as for
/// [`mma_m16n8k16_bf16`] with one tf32 value (from [`cvt_tf32`]) per word; lane `l` holds
/// `a[l/4][l%4]`, `a[l/4+8][l%4]`, `a[l/4][l%4+4]`, `a[l/4+8][l%4+4]` and `b[l%4][l/4]`,
/// `b[l%4+4][l/4]`.
pub fn mma_m16n8k8_tf32(a: [u32; 4], b: [u32; 2], acc: [f32; 4]) -> [f32; 4] {
    device_only("mma_m16n8k8_tf32")
}
/// `acc + a × b` on one warp's 16×8×32 int8 tile (`mma.sync`, sm_80+), exact in `i32` as
/// long as it does not overflow: four bytes a word, lane `l` holding bytes `4·(l%4)..+4` of
/// rows `l/4` and `l/4 + 8` of `a`, then the same of columns `16..32` (`a[0..4]`), and of
/// `b` bytes `4·(l%4)..+4` and `16 + 4·(l%4)..+4` of column `l/4` (`b[0..2]`); `acc` and the
/// result as for [`mma_m16n8k16_bf16`].
pub fn mma_m16n8k32_s8(a: [u32; 4], b: [u32; 2], acc: [i32; 4]) -> [i32; 4] {
    device_only("mma_m16n8k32_s8")
}
/// [`mma_m16n8k32_s8`] with the bytes of `a` read as u8 (`mma.sync` `.u8.s8`, sm_80+): the
/// 4-bit codes of a quantized weight, unpacked to bytes, against int8 activations.
pub fn mma_m16n8k32_u8_s8(a: [u32; 4], b: [u32; 2], acc: [i32; 4]) -> [i32; 4] {
    device_only("mma_m16n8k32_u8_s8")
}
/// Starts a 16-byte copy from `src[src_index..]` to `dst[dst_index..]` (`cp.async`, sm_80+).
pub fn cp_async_16<T>(dst: &mut [T], dst_index: u32, src: &[T], src_index: u32) {
    device_only("cp_async_16")
}
/// [`cp_async_16`] where `ok`; elsewhere nothing is read and the 16 bytes at
/// `dst[dst_index..]` become zeros (`cp.async` with a source size of 0, sm_80+).
pub fn cp_async_16_or<T>(dst: &mut [T], dst_index: u32, src: &[T], src_index: u32, ok: bool) {
    device_only("cp_async_16_or")
}
/// Closes the current group of async copies.
pub fn cp_async_commit() {
    device_only("cp_async_commit")
}
/// Waits until at most `pending` committed groups are in flight (a constant).
pub fn cp_async_wait(pending: u32) {
    device_only("cp_async_wait")
}

/// A kernel's view of a tensor map parameter, `&TensorMap<T, RANK>`: a tensor of `T` in
/// `RANK` dimensions (1 to 5) that [`tma_load`] copies boxes of. The launcher takes the
/// runtime's `TensorMap` there, checked to have that element type and rank before it launches.
pub struct TensorMap<T, const RANK: usize>(std::marker::PhantomData<T>);

/// Orders this thread's shared-memory writes before later reads by the async proxy
/// (`wgmma` operands, bulk copies, mbarrier setup seen by TMA; `fence.proxy.async`, sm_90+).
pub fn fence_proxy_async() {
    device_only("fence_proxy_async")
}
/// Makes `bars[index]`, a `u64` of a shared array, an mbarrier whose phase completes after
/// `count` arrivals and every announced byte (`mbarrier.init`, sm_80+).
pub fn mbarrier_init(bars: &mut [u64], index: u32, count: u32) {
    device_only("mbarrier_init")
}
/// Arrives once on the mbarrier `bars[index]` (`mbarrier.arrive`, sm_80+).
pub fn mbarrier_arrive(bars: &mut [u64], index: u32) {
    device_only("mbarrier_arrive")
}
/// Arrives on `bars[index]` and announces `bytes` that bulk copies will complete on it
/// (`mbarrier.arrive.expect_tx`, sm_90+).
pub fn mbarrier_arrive_expect_tx(bars: &mut [u64], index: u32, bytes: u32) {
    device_only("mbarrier_arrive_expect_tx")
}
/// Whether the phase of `bars[index]` with parity `parity` has completed, after a bounded
/// wait (`mbarrier.try_wait.parity`, sm_90+): `while !mbarrier_try_wait_parity(..) {}`.
pub fn mbarrier_try_wait_parity(bars: &mut [u64], index: u32, parity: u32) -> bool {
    device_only("mbarrier_try_wait_parity")
}
/// Copies the box of `map` at `coords` (innermost first) to `dst[dst_index..]` in shared
/// memory, its bytes completing on the mbarrier `bars[bar]` (`cp.async.bulk.tensor`, sm_90+).
pub fn tma_load<T, const RANK: usize>(
    dst: &mut [T],
    dst_index: u32,
    map: &TensorMap<T, RANK>,
    coords: [u32; RANK],
    bars: &mut [u64],
    bar: u32,
) {
    device_only("tma_load")
}
/// Copies the box at `src[src_index..]` in shared memory to the box of `map` at `coords`
/// (innermost first); elements past the tensor's edges are dropped (`cp.async.bulk.tensor` to
/// global, sm_90+). The threads that wrote the tile call [`fence_proxy_async`] and synchronize
/// first.
pub fn tma_store<T, const RANK: usize>(
    map: &TensorMap<T, RANK>,
    coords: [u32; RANK],
    src: &[T],
    src_index: u32,
) {
    device_only("tma_store")
}
/// Closes this thread's current group of tensor stores (`cp.async.bulk.commit_group`, sm_90+).
pub fn tma_store_commit() {
    device_only("tma_store_commit")
}
/// Waits until at most `pending` of this thread's committed store groups are incomplete
/// (`cp.async.bulk.wait_group`, sm_90+).
pub fn tma_store_wait(pending: u32) {
    device_only("tma_store_wait")
}
/// Waits until at most `pending` of this thread's committed store groups have not yet read
/// their shared source, whose tiles may then be overwritten (`cp.async.bulk.wait_group.read`,
/// sm_90+).
pub fn tma_store_wait_read(pending: u32) {
    device_only("tma_store_wait_read")
}
/// `tma_load` into every block of the thread-block cluster whose bit is set in `cta_mask`
/// (bit `r` for the block of rank `r`): the box lands at `dst[dst_index..]` of each and
/// completes its bytes on `bars[bar]` of each (`cp.async.bulk.tensor` `.multicast::cluster`,
/// sm_90a).
pub fn tma_load_multicast<T, const RANK: usize>(
    dst: &mut [T],
    dst_index: u32,
    map: &TensorMap<T, RANK>,
    coords: [u32; RANK],
    bars: &mut [u64],
    bar: u32,
    cta_mask: u16,
) {
    device_only("tma_load_multicast")
}
/// The block's rank in its thread-block cluster, 0 to `cluster_nctarank() - 1`
/// (`%cluster_ctarank`, sm_90+).
pub fn cluster_ctarank() -> u32 {
    device_only("cluster_ctarank")
}
/// How many blocks the thread-block cluster holds (`%cluster_nctarank`, sm_90+).
pub fn cluster_nctarank() -> u32 {
    device_only("cluster_nctarank")
}
/// Waits until every thread of every block of the cluster has arrived; shared-memory writes
/// before it are visible to the whole cluster after it (`barrier.cluster.arrive` and
/// `barrier.cluster.wait`, release/acquire, sm_90+).
pub fn cluster_sync() {
    device_only("cluster_sync")
}
/// `tile[index]` in the shared memory of the block of rank `rank` in the cluster
/// (`mapa` + `ld.shared::cluster`, sm_90+).
pub fn dsmem_load<T>(tile: &[T], index: u32, rank: u32) -> T {
    device_only("dsmem_load")
}
/// Writes `value` to `tile[index]` in the shared memory of the block of rank `rank` in the
/// cluster (`mapa` + `st.shared::cluster`, sm_90+).
pub fn dsmem_store<T>(tile: &mut [T], index: u32, rank: u32, value: T) {
    device_only("dsmem_store")
}
/// Arrives once, with release at cluster scope, on the mbarrier `bars[index]` of the block of
/// rank `rank` in the cluster (`mbarrier.arrive.release.cluster.shared::cluster`, sm_90+): a
/// consumer frees a producer's slot in another block.
pub fn mbarrier_arrive_cluster(bars: &mut [u64], index: u32, rank: u32) {
    device_only("mbarrier_arrive_cluster")
}
/// The `wgmma` matrix descriptor of the operand at `tile[index..]` in shared memory, with its
/// leading and stride byte offsets and swizzle span (0, 32, 64 or 128 bytes).
pub fn wgmma_desc<T>(
    tile: &[T],
    index: u32,
    leading_bytes: u32,
    stride_bytes: u32,
    swizzle_bytes: u32,
) -> u64 {
    device_only("wgmma_desc")
}
/// The first index of the shared array `tile` whose address is a multiple of `align_bytes`.
pub fn align_index<T>(tile: &[T], align_bytes: u32) -> u32 {
    device_only("align_index")
}
/// Orders register accesses to `wgmma` accumulators before the next `wgmma` (sm_90a).
pub fn wgmma_fence() {
    device_only("wgmma_fence")
}
/// Closes the current group of `wgmma`s (`wgmma.commit_group`, sm_90a).
pub fn wgmma_commit_group() {
    device_only("wgmma_commit_group")
}
/// Waits until at most `pending` committed `wgmma` groups are in flight (sm_90a).
pub fn wgmma_wait_group(pending: u32) {
    device_only("wgmma_wait_group")
}
/// `acc += a × b` over one warpgroup's 64×N×16 bf16 tile, `acc` a `[f32; N / 2]`, the operands
/// by descriptor (`wgmma.mma_async`, sm_90a); `accumulate = false` starts from zero.
pub fn wgmma_bf16<const H: usize>(
    acc: &mut [f32; H],
    a: u64,
    b: u64,
    accumulate: bool,
    a_mn_major: bool,
    b_mn_major: bool,
) {
    device_only("wgmma_bf16")
}
/// [`wgmma_bf16`] for f16 operands.
pub fn wgmma_f16<const H: usize>(
    acc: &mut [f32; H],
    a: u64,
    b: u64,
    accumulate: bool,
    a_mn_major: bool,
    b_mn_major: bool,
) {
    device_only("wgmma_f16")
}
/// `acc += a × b` over one warpgroup's 64×N×16 bf16 tile with A in registers: warp `w` holds
/// rows `16 w ..` as the m16n8k16 A fragment (`[u32; 4]` of bf16 pairs, the layout an `acc`
/// of the same rows packs into), B by descriptor (`wgmma.mma_async`, sm_90a).
pub fn wgmma_bf16_regs<const H: usize>(
    acc: &mut [f32; H],
    a: [u32; 4],
    b: u64,
    accumulate: bool,
    b_mn_major: bool,
) {
    device_only("wgmma_bf16_regs")
}
/// [`wgmma_bf16_regs`] for f16 operands.
pub fn wgmma_f16_regs<const H: usize>(
    acc: &mut [f32; H],
    a: [u32; 4],
    b: u64,
    accumulate: bool,
    b_mn_major: bool,
) {
    device_only("wgmma_f16_regs")
}
/// `acc += a × b` over one warpgroup's 64×N×8 tile of tf32 operands (f32 in shared memory,
/// read as tf32), both K-major, by descriptor (`wgmma.mma_async`, sm_90a).
pub fn wgmma_tf32<const H: usize>(acc: &mut [f32; H], a: u64, b: u64, accumulate: bool) {
    device_only("wgmma_tf32")
}
/// [`wgmma_tf32`] with A in registers: warp `w` holds rows `16 w ..` as the m16n8k8 tf32 A
/// fragment (`[u32; 4]` of f32 bits).
pub fn wgmma_tf32_regs<const H: usize>(acc: &mut [f32; H], a: [u32; 4], b: u64, accumulate: bool) {
    device_only("wgmma_tf32_regs")
}
/// `acc += a × b` over one warpgroup's 64×N×32 tile of fp8 operands, A and B in e4m3, both
/// K-major, by descriptor (`wgmma.mma_async`, sm_90a).
pub fn wgmma_e4m3_e4m3<const H: usize>(acc: &mut [f32; H], a: u64, b: u64, accumulate: bool) {
    device_only("wgmma_e4m3_e4m3")
}
/// [`wgmma_e4m3_e4m3`] with B in e5m2.
pub fn wgmma_e4m3_e5m2<const H: usize>(acc: &mut [f32; H], a: u64, b: u64, accumulate: bool) {
    device_only("wgmma_e4m3_e5m2")
}
/// [`wgmma_e4m3_e4m3`] with A in e5m2.
pub fn wgmma_e5m2_e4m3<const H: usize>(acc: &mut [f32; H], a: u64, b: u64, accumulate: bool) {
    device_only("wgmma_e5m2_e4m3")
}
/// [`wgmma_e4m3_e4m3`] with both operands in e5m2.
pub fn wgmma_e5m2_e5m2<const H: usize>(acc: &mut [f32; H], a: u64, b: u64, accumulate: bool) {
    device_only("wgmma_e5m2_e5m2")
}
/// [`wgmma_e4m3_e4m3`] with A in registers: warp `w` holds rows `16 w ..` as the m16n8k32
/// A fragment (`[u32; 4]`, four bytes a word, the lowest byte first along K).
pub fn wgmma_e4m3_e4m3_regs<const H: usize>(
    acc: &mut [f32; H],
    a: [u32; 4],
    b: u64,
    accumulate: bool,
) {
    device_only("wgmma_e4m3_e4m3_regs")
}
/// [`wgmma_e4m3_e5m2`] with A in registers, as [`wgmma_e4m3_e4m3_regs`].
pub fn wgmma_e4m3_e5m2_regs<const H: usize>(
    acc: &mut [f32; H],
    a: [u32; 4],
    b: u64,
    accumulate: bool,
) {
    device_only("wgmma_e4m3_e5m2_regs")
}
/// [`wgmma_e5m2_e4m3`] with A in registers, as [`wgmma_e4m3_e4m3_regs`].
pub fn wgmma_e5m2_e4m3_regs<const H: usize>(
    acc: &mut [f32; H],
    a: [u32; 4],
    b: u64,
    accumulate: bool,
) {
    device_only("wgmma_e5m2_e4m3_regs")
}
/// [`wgmma_e5m2_e5m2`] with A in registers, as [`wgmma_e4m3_e4m3_regs`].
pub fn wgmma_e5m2_e5m2_regs<const H: usize>(
    acc: &mut [f32; H],
    a: [u32; 4],
    b: u64,
    accumulate: bool,
) {
    device_only("wgmma_e5m2_e5m2_regs")
}
/// Raises this warpgroup's registers per thread to `count` (`setmaxnreg.inc`, sm_90a).
pub fn setmaxnreg_inc(count: u32) {
    device_only("setmaxnreg_inc")
}
/// Lowers this warpgroup's registers per thread to `count` (`setmaxnreg.dec`, sm_90a).
pub fn setmaxnreg_dec(count: u32) {
    device_only("setmaxnreg_dec")
}
/// The thread's warpgroup in its block (`thread_idx().x / 128`).
pub fn warpgroup_idx() -> u32 {
    device_only("warpgroup_idx")
}
/// Stores four 8×8 b16 matrices to shared memory, the inverse of [`ldmatrix_x4`] (sm_90+).
pub fn stmatrix_x4<T>(tile: &mut [T], index: u32, v: [u32; 4]) {
    device_only("stmatrix_x4")
}
/// Waits until the grids this one depends on have completed (`griddepcontrol.wait`, sm_90+).
pub fn griddep_wait() {
    device_only("griddep_wait")
}
/// Lets the dependent grid launch before this one ends (`griddepcontrol.launch_dependents`,
/// sm_90+).
pub fn griddep_launch_dependents() {
    device_only("griddep_launch_dependents")
}

/// Operations on kernel buffers beyond indexing.
pub trait KernelSlice<T> {
    /// Four consecutive 32-bit elements in one 16-byte load; `i` a multiple of 4.
    fn load4(&self, i: u32) -> [T; 4];
    /// Eight consecutive 16-bit elements in one 16-byte load; `i` a multiple of 8.
    fn load8(&self, i: u32) -> [T; 8];
    /// Stores four elements at `i..i+4`.
    fn store4(&mut self, i: u32, v: [T; 4]);
    /// Stores eight elements at `i..i+8`.
    fn store8(&mut self, i: u32, v: [T; 8]);
    /// Adds `v` to element `i` atomically; returns the old value.
    fn atomic_add(&mut self, i: u32, v: T) -> T;
    /// Atomic minimum; returns the old value.
    fn atomic_min(&mut self, i: u32, v: T) -> T;
    /// Atomic maximum; returns the old value.
    fn atomic_max(&mut self, i: u32, v: T) -> T;
    /// Atomic exchange; returns the old value.
    fn atomic_exch(&mut self, i: u32, v: T) -> T;
    /// Stores `new` if element `i` equals `expected`; returns the old value.
    fn atomic_cas(&mut self, i: u32, expected: T, new: T) -> T;
    /// Counts element `i` up atomically, wrapping to 0 after `limit` (`atom.inc.u32` stores
    /// `old >= limit ? 0 : old + 1`); returns the old value. `u32` only.
    fn atomic_inc(&mut self, i: u32, limit: T) -> T;
    /// Element `i` read through L2 only (`ld.global.cg`): for data that another block wrote
    /// during this kernel, which the non-coherent path of `&[T]` indexing may miss.
    fn load_cg(&self, i: u32) -> T;
}

impl<T> KernelSlice<T> for [T] {
    fn load4(&self, i: u32) -> [T; 4] {
        device_only("load4")
    }
    fn load8(&self, i: u32) -> [T; 8] {
        device_only("load8")
    }
    fn store4(&mut self, i: u32, v: [T; 4]) {
        device_only("store4")
    }
    fn store8(&mut self, i: u32, v: [T; 8]) {
        device_only("store8")
    }
    fn atomic_add(&mut self, i: u32, v: T) -> T {
        device_only("atomic_add")
    }
    fn atomic_min(&mut self, i: u32, v: T) -> T {
        device_only("atomic_min")
    }
    fn atomic_max(&mut self, i: u32, v: T) -> T {
        device_only("atomic_max")
    }
    fn atomic_exch(&mut self, i: u32, v: T) -> T {
        device_only("atomic_exch")
    }
    fn atomic_cas(&mut self, i: u32, expected: T, new: T) -> T {
        device_only("atomic_cas")
    }
    fn atomic_inc(&mut self, i: u32, limit: T) -> T {
        device_only("atomic_inc")
    }
    fn load_cg(&self, i: u32) -> T {
        device_only("load_cg")
    }
}

#[cfg(test)]
mod tests;
