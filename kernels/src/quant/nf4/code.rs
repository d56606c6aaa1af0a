//! The value tables of the format: the 16 NF4 code values, the thresholds that pick a code,
//! and the signed 8-bit dynamic code that double quantization stores the absmax values in.

/// The 16 NF4 code values, indexed by the 4-bit code (bitsandbytes' `get_4bit_type("nf4")`,
/// rounded to f32).
///
/// ```
/// use kernels::quant::nf4::NF4_CODE;
/// assert_eq!((NF4_CODE[0], NF4_CODE[7], NF4_CODE[15]), (-1.0, 0.0, 1.0));
/// assert!(NF4_CODE.windows(2).all(|w| w[0] < w[1]));
/// ```
pub const NF4_CODE: [f32; 16] = [
    -1.0,
    -0.6961928,
    -0.52507305,
    -0.3949175,
    -0.28444138,
    -0.18477343,
    -0.091050036,
    0.0,
    0.0795803,
    0.1609302,
    0.2461123,
    0.33791524,
    0.44070983,
    0.562617,
    0.72295684,
    1.0,
];

/// The decision thresholds between adjacent codes, ascending: a normalized value `v` gets the
/// code `#{i : v > NF4_THRESHOLDS[i]}` (bitsandbytes' `dQuantizeNF4` tree, compared in f32).
/// A NaN gets code 0.
///
/// ```
/// use kernels::quant::nf4::{nf4_code_of, NF4_THRESHOLDS};
/// assert_eq!(nf4_code_of(0.0), 7);
/// assert_eq!(nf4_code_of(NF4_THRESHOLDS[7]), 7); // strictly greater moves up
/// assert_eq!(nf4_code_of(1.0), 15);
/// ```
pub const NF4_THRESHOLDS: [f32; 15] = [
    -0.8480964,
    -0.6106329,
    -0.45999527,
    -0.33967942,
    -0.2346074,
    -0.13791174,
    -0.045525018,
    0.03979015,
    0.12025525,
    0.20352125,
    0.29201376,
    0.38931254,
    0.50166345,
    0.6427869,
    0.86147845,
];

/// The 4-bit code of a value already divided by its block's absmax.
pub fn nf4_code_of(v: f32) -> u8 {
    NF4_THRESHOLDS.iter().filter(|&&t| v > t).count() as u8
}

/// The signed 8-bit dynamic code of double quantization, ascending (bitsandbytes'
/// `create_dynamic_map(signed=True)`): for each exponent `i` in `0..7`, the midpoints of
/// `linspace(0.1, 1, 2^i + 1)` times `10^(i - 6)`, both signs, then 0 and 1; computed in
/// f32 as torch computes it.
///
/// ```
/// let code = kernels::quant::nf4::dynamic_code();
/// assert_eq!(code.len(), 256);
/// assert_eq!((code[0] < 0.0, code[255]), (true, 1.0));
/// assert!(code.windows(2).all(|w| w[0] <= w[1]));
/// ```
pub fn dynamic_code() -> [f32; 256] {
    let mut data = Vec::with_capacity(256);
    for i in 0..7i32 {
        let items = (1usize << i) + 1;
        let bounds = linspace_f32(0.1, 1.0, items);
        let scale = 10f64.powi(i - 6);
        for w in bounds.windows(2) {
            let mean = (w[0] + w[1]) / 2.0;
            data.push((scale as f32) * mean);
            data.push(-(scale as f32) * mean);
        }
    }
    data.push(0.0);
    data.push(1.0);
    data.sort_by(f32::total_cmp);
    let mut out = [0.0; 256];
    out.copy_from_slice(&data);
    out
}

/// torch's f32 `linspace`: the first half counted up from `start`, the rest down from `end`.
fn linspace_f32(start: f32, end: f32, steps: usize) -> Vec<f32> {
    let step = (end - start) / (steps - 1) as f32;
    let half = steps / 2;
    (0..steps)
        .map(|i| {
            if i < half {
                start + step * i as f32
            } else {
                end - step * (steps - i - 1) as f32
            }
        })
        .collect()
}

/// The index of the code value nearest `x` in the ascending `code`, by bitsandbytes'
/// `dQuantize` search: seven halving steps from the middle, then the nearer of the final
/// pivot and its neighbour on `x`'s side (the midpoint compared in f32).
///
/// ```
/// let code = kernels::quant::nf4::dynamic_code();
/// assert_eq!(kernels::quant::nf4::nearest_code(&code, 1.0), 255);
/// ```
pub fn nearest_code(code: &[f32; 256], x: f32) -> u8 {
    let mut pivot = 127usize;
    let (mut lower_pivot, mut upper_pivot) = (0usize, 255usize);
    let (mut lower, mut upper) = (-1.0f32, 1.0f32);
    let mut val = code[pivot];
    let mut i = 64;
    while i > 0 {
        if x > val {
            lower_pivot = pivot;
            lower = val;
            pivot += i;
        } else {
            upper_pivot = pivot;
            upper = val;
            pivot -= i;
        }
        val = code[pivot];
        i >>= 1;
    }
    if upper_pivot == 255 {
        upper = code[upper_pivot];
    }
    if lower_pivot == 0 {
        lower = code[lower_pivot];
    }
    let pick = if x > val {
        if x > (upper + val) * 0.5 {
            upper_pivot
        } else {
            pivot
        }
    } else if x < (lower + val) * 0.5 {
        lower_pivot
    } else {
        pivot
    };
    pick as u8
}
