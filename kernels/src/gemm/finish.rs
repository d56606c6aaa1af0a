//! The GEMM epilogue as `#[device]` helpers: `C = act(α·acc + β·C + bias[col]) +
//! residual[row, col]` for one output element, its parts chosen at run time by the flags
//! parameter (bits in `kernels_gen::gemm::epilogue`, checked against the literals here by
//! this module's test). The flags are uniform over the grid, so each test is a uniform
//! branch.

use kernel_macros::device;

/// `e^v` through `ex2.approx.ftz` (relative error about 2⁻²²; results under 2⁻¹²⁶ are 0,
/// which no activation can tell apart).
#[device(crate = crate::lang)]
fn gemm_exp(v: f32) -> f32 {
    ex2_approx_ftz(v * 1.442_695_04)
}

/// `x·σ(x)`, σ saturating cleanly at ±∞.
#[device(crate = crate::lang)]
fn gemm_silu(v: f32) -> f32 {
    v * div_full(1.0, 1.0 + gemm_exp(-v))
}

/// `0.5·x·(1 + tanh(k0·(x + k1·x³)))`, tanh as `1 − 2 / (e^{2v} + 1)` (exact limits ±1).
#[device(crate = crate::lang)]
fn gemm_gelu_tanh(x: f32) -> f32 {
    let inner = 0.797_884_6 * 0.044_715f32.mul_add(x * x * x, x);
    let t = 1.0 - div_full(2.0, gemm_exp(inner * 2.0) + 1.0);
    (0.5 * x) * (1.0 + t)
}

/// The flags' bits, as the kernels test them: `[bias, residual, silu, gelu, f32 copy]`.
#[device(crate = crate::lang)]
fn epilogue_parts(flags: u32) -> [bool; 5] {
    let act = (flags >> 2) & 3;
    [
        flags & 1 != 0,
        flags & 2 != 0,
        act == 1,
        act == 2,
        flags & 256 != 0,
    ]
}

/// Finishes and stores f32 output element `idx` (column `col`) from its accumulator; `parts`
/// is [`epilogue_parts`] of the flags (an f32 output has no f32 copy: its part is ignored).
#[device(crate = crate::lang)]
fn finish_f32(
    c: &mut [f32],
    bias: &[f32],
    residual: &[f32],
    idx: u32,
    col: u32,
    acc: f32,
    alpha: f32,
    beta: f32,
    parts: [bool; 5],
) {
    let mut old = 0.0f32;
    if beta != 0.0 {
        old = c[idx];
    }
    let mut b = 0.0f32;
    if parts[0] {
        b = bias[col];
    }
    let mut res = 0.0f32;
    if parts[1] {
        res = residual[idx];
    }
    c[idx] = epilogue_value(acc, old, b, res, alpha, beta, parts);
}

/// [`finish_f32`] for inputs of `T` (bias, residual) and an output of `O`, rounded to
/// nearest even on store; `T` and `O` are the calling kernel's type parameters. With the f32
/// copy on (`parts[4]`), the value is also stored unrounded to `copy[idx]`, and β reads the
/// old value from there.
#[device(crate = crate::lang)]
fn finish<T, O>(
    c: &mut [O],
    copy: &mut [f32],
    bias: &[T],
    residual: &[T],
    idx: u32,
    col: u32,
    acc: f32,
    alpha: f32,
    beta: f32,
    parts: [bool; 5],
) {
    let mut old = 0.0f32;
    if beta != 0.0 {
        if parts[4] {
            old = copy[idx];
        } else {
            old = c[idx] as f32;
        }
    }
    let mut b = 0.0f32;
    if parts[0] {
        b = bias[col] as f32;
    }
    let mut res = 0.0f32;
    if parts[1] {
        res = residual[idx] as f32;
    }
    let v = epilogue_value(acc, old, b, res, alpha, beta, parts);
    if parts[4] {
        copy[idx] = v;
    }
    c[idx] = v as O;
}

/// The epilogue of one output from its accumulator and the values it reads, loaded by the
/// caller (so a tile can issue all its loads before the arithmetic waits on any): `old` is
/// C's value (read where β ≠ 0), `bias` and `res` the bias and residual (where their parts are
/// on). [`finish`] and [`finish_f32`] load one element's values and call it.
#[device(crate = crate::lang)]
fn epilogue_value(
    acc: f32,
    old: f32,
    bias: f32,
    res: f32,
    alpha: f32,
    beta: f32,
    parts: [bool; 5],
) -> f32 {
    let mut v = alpha * acc;
    if beta != 0.0 {
        v = beta.mul_add(old, v);
    }
    if parts[0] {
        v = v + bias;
    }
    if parts[2] {
        v = gemm_silu(v);
    }
    if parts[3] {
        v = gemm_gelu_tanh(v);
    }
    if parts[1] {
        v = v + res;
    }
    v
}

#[cfg(test)]
mod tests {
    use kernels_gen::gemm::epilogue::{
        ACT_GELU_TANH, ACT_SHIFT, ACT_SILU, FLAG_BIAS, FLAG_COLUMN_PAIRS, FLAG_F32_COPY,
        FLAG_RESIDUAL, FLAG_ROW_CHUNKS, FLAG_VEC_A, FLAG_VEC_B,
    };

    /// The `#[kernel]` GEMMs test the flags with literals (a kernel cannot name a host
    /// constant); they must be the bits the host sets.
    #[test]
    fn the_kernels_flag_literals_are_the_hosts_bits() {
        assert_eq!((FLAG_BIAS, FLAG_RESIDUAL), (1, 2));
        assert_eq!((ACT_SHIFT, ACT_SILU, ACT_GELU_TANH), (2, 1, 2));
        assert_eq!((FLAG_VEC_A, FLAG_VEC_B), (16, 32));
        // The TMA GEMM's column pairs, and the mask of the epilogue's parts it tests for a
        // plain product.
        assert_eq!((FLAG_COLUMN_PAIRS, FLAG_F32_COPY), (128, 256));
        // The TMA GEMM's 16-byte row pieces of 16-bit outputs.
        assert_eq!(FLAG_ROW_CHUNKS, 512);
        // The mask of what makes a product more than plain, in the TMA GEMM's test.
        assert_eq!(
            FLAG_BIAS | FLAG_RESIDUAL | (3 << ACT_SHIFT) | FLAG_F32_COPY,
            271
        );
    }
}
