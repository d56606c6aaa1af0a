//! Row-major f64 matrix products for the CPU reference, in the three layouts the block's
//! forward and backward need, spread over the machine's cores (the GPU-sized step is about
//! 66 GFLOP).

/// Fills `out` (rows of `cols`) with `row(i, out_row)`, rows split over the available cores.
fn par_rows(out: &mut [f64], cols: usize, row: impl Fn(usize, &mut [f64]) + Sync) {
    let rows = out.len().checked_div(cols).unwrap_or(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per = rows.div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (chunk, block) in out.chunks_mut(per * cols.max(1)).enumerate() {
            let row = &row;
            scope.spawn(move || {
                for (r, out_row) in block.chunks_mut(cols.max(1)).enumerate() {
                    row(chunk * per + r, out_row);
                }
            });
        }
    });
}

/// `a · bᵀ` for `a` (`m × k`) and `b` (`n × k`): `m × n`.
///
/// ```
/// let c = ptxkit::train::linalg::matmul_nt(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0], 1, 2, 2);
/// assert_eq!(c, vec![11.0, 17.0]);
/// ```
pub fn matmul_nt(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    par_rows(&mut out, n, |i, row| {
        let ai = &a[i * k..(i + 1) * k];
        for (j, o) in row.iter_mut().enumerate() {
            *o = dot(ai, &b[j * k..(j + 1) * k]);
        }
    });
    out
}

/// `a · b` for `a` (`m × k`) and `b` (`k × n`): `m × n`.
///
/// ```
/// let c = ptxkit::train::linalg::matmul_nn(&[1.0, 2.0], &[3.0, 4.0, 5.0, 6.0], 1, 2, 2);
/// assert_eq!(c, vec![13.0, 16.0]);
/// ```
pub fn matmul_nn(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    par_rows(&mut out, n, |i, row| {
        for (kk, &aik) in a[i * k..(i + 1) * k].iter().enumerate() {
            axpy(aik, &b[kk * n..(kk + 1) * n], row);
        }
    });
    out
}

/// `aᵀ · b` for `a` stored `k × m` and `b` (`k × n`): `m × n`.
///
/// ```
/// let c = ptxkit::train::linalg::matmul_tn(&[1.0, 2.0], &[3.0, 4.0], 2, 1, 1);
/// assert_eq!(c, vec![3.0, 6.0]);
/// ```
pub fn matmul_tn(a: &[f64], b: &[f64], m: usize, n: usize, k: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    par_rows(&mut out, n, |i, row| {
        for kk in 0..k {
            axpy(a[kk * m + i], &b[kk * n..(kk + 1) * n], row);
        }
    });
    out
}

/// `Σ x·y`, in four independent sums so the loop vectorizes.
fn dot(x: &[f64], y: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let (xc, yc) = (x.chunks_exact(4), y.chunks_exact(4));
    let tail: f64 = xc
        .remainder()
        .iter()
        .zip(yc.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (a, b) in xc.zip(yc) {
        for l in 0..4 {
            acc[l] += a[l] * b[l];
        }
    }
    acc.iter().sum::<f64>() + tail
}

/// `out += s · x`.
fn axpy(s: f64, x: &[f64], out: &mut [f64]) {
    for (o, &v) in out.iter_mut().zip(x) {
        *o += s * v;
    }
}
