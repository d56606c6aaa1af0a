//! CPU references for the embedding ops, in f64.

/// `out[t] = table[ids[t]]` (NaN rows for ids not below `vocab`).
///
/// ```
/// let out = kernels::embedding::reference::embedding(&[1.0, 2.0, 3.0, 4.0], &[1, 0, 9], 2, 2);
/// assert_eq!(out[..4], [3.0, 4.0, 1.0, 2.0]);
/// assert!(out[4].is_nan());
/// ```
pub fn embedding(table: &[f32], ids: &[u32], vocab: usize, hidden: usize) -> Vec<f64> {
    ids.iter()
        .flat_map(|&id| {
            let id = id as usize;
            (0..hidden).map(move |d| {
                if id < vocab {
                    table[id * hidden + d] as f64
                } else {
                    f64::NAN
                }
            })
        })
        .collect()
}

/// `dtable[v] = Σ dout[t]` over the tokens with `ids[t] = v`, in token order.
///
/// ```
/// let d = kernels::embedding::reference::embedding_backward(&[1.0, 2.0, 3.0], &[1, 0, 1], 3, 1);
/// assert_eq!(d, vec![2.0, 4.0, 0.0]);
/// ```
pub fn embedding_backward(dout: &[f32], ids: &[u32], vocab: usize, hidden: usize) -> Vec<f64> {
    let mut d = vec![0.0; vocab * hidden];
    for (t, &id) in ids.iter().enumerate() {
        let id = id as usize;
        if id < vocab {
            for j in 0..hidden {
                d[id * hidden + j] += dout[t * hidden + j] as f64;
            }
        }
    }
    d
}
