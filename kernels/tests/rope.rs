//! RoPE on the emulator against the f64 reference: both layouts, partial rotary, odd shapes.

mod common_rowwise;

use common_rowwise::{assert_close, bits, download, poisoned, stream, tol, upload, Rng};
use kernel_runtime::{Bf16, Buffer};
use kernels::rope::{reference, rope, rope_backward, Rope, RopeLayout};
use kernels::Error;
use kernels::Float;

/// (tokens, heads, head_dim, rotary_dim).
const SHAPES: &[(usize, usize, usize, usize)] = &[
    (1, 1, 2, 2),
    (3, 2, 6, 6),
    (3, 3, 7, 4),
    (2, 2, 64, 64),
    (3, 2, 64, 32),
    (1, 5, 128, 128),
    (2, 1, 34, 34),
    (4, 4, 34, 34),
    (2, 8, 34, 30),
    (2, 2, 262, 262),
];

fn layouts() -> [RopeLayout; 2] {
    [RopeLayout::NeoX, RopeLayout::Interleaved]
}

fn matches_reference<T: Float>(backward: bool) {
    let s = stream();
    let mut rng = Rng::new(41);
    for layout in layouts() {
        for &(tokens, heads, head_dim, rotary_dim) in SHAPES {
            let spec = Rope {
                layout,
                theta: 10000.0,
                rotary_dim,
            };
            let n = tokens * heads * head_dim;
            let (x, xs) = upload::<T>(&s, &rng.vec(n, -2.0, 2.0));
            let pos: Vec<u32> = (0..tokens).map(|_| rng.below(300)).collect();
            let positions = Buffer::from_host(&s, &pos).unwrap();
            let mut y = poisoned::<T>(&s, n);
            let want = if backward {
                rope_backward(&s, &x, &positions, &mut y, tokens, heads, head_dim, spec).unwrap();
                reference::rope_backward(&xs, &pos, heads, head_dim, spec)
            } else {
                rope(&s, &x, &positions, &mut y, tokens, heads, head_dim, spec).unwrap();
                reference::rope(&xs, &pos, heads, head_dim, spec)
            };
            let what = format!("rope {layout:?} {tokens}×{heads}×{head_dim} rot {rotary_dim}");
            // Angles are position · ex2.approx(…): about 300 · 2⁻²² of error at these positions.
            assert_close(&what, &download(&s, &y), &want, 1e-4, tol::<T>(1e-5));
        }
    }
}

#[test]
fn f32_rope_matches_reference_in_both_layouts() {
    matches_reference::<f32>(false);
}

#[test]
fn bf16_rope_matches_reference_in_both_layouts() {
    matches_reference::<Bf16>(false);
}

#[test]
fn f32_rope_backward_matches_reference() {
    matches_reference::<f32>(true);
}

#[test]
fn bf16_rope_backward_matches_reference() {
    matches_reference::<Bf16>(true);
}

/// Token rows of one-element accesses go through shared memory when they fit and through the
/// per-item kernel when they do not; both rotate with the same instructions, so the same heads
/// come out bit for bit either way. The split into 8 tokens of 32 heads repeats each position.
fn staged_and_per_item_kernels_agree<T: Float>() {
    let s = stream();
    let mut rng = Rng::new(46);
    let (tokens, heads, head_dim, split) = (2, 256, 34, 8);
    for layout in layouts() {
        for rotary_dim in [34, 30] {
            let spec = Rope {
                layout,
                theta: 10000.0,
                rotary_dim,
            };
            let n = tokens * heads * head_dim;
            let (x, _) = upload::<T>(&s, &rng.vec(n, -2.0, 2.0));
            let pos: Vec<u32> = (0..tokens).map(|_| rng.below(5000)).collect();
            let each: Vec<u32> = pos.iter().flat_map(|&p| [p; 8]).collect();
            let (wide, narrow) = (
                Buffer::from_host(&s, &pos).unwrap(),
                Buffer::from_host(&s, &each).unwrap(),
            );
            for backward in [false, true] {
                let (mut whole, mut parts) = (poisoned::<T>(&s, n), poisoned::<T>(&s, n));
                let (t, h) = (tokens * split, heads / split);
                if backward {
                    rope_backward(&s, &x, &wide, &mut whole, tokens, heads, head_dim, spec)
                        .unwrap();
                    rope_backward(&s, &x, &narrow, &mut parts, t, h, head_dim, spec).unwrap();
                } else {
                    rope(&s, &x, &wide, &mut whole, tokens, heads, head_dim, spec).unwrap();
                    rope(&s, &x, &narrow, &mut parts, t, h, head_dim, spec).unwrap();
                }
                assert_eq!(
                    bits(&s, &whole),
                    bits(&s, &parts),
                    "{layout:?} rot {rotary_dim} backward {backward}"
                );
            }
        }
    }
}

#[test]
fn f32_staged_and_per_item_kernels_agree_bit_for_bit() {
    staged_and_per_item_kernels_agree::<f32>();
}

#[test]
fn bf16_staged_and_per_item_kernels_agree_bit_for_bit() {
    staged_and_per_item_kernels_agree::<Bf16>();
}

#[test]
fn reference_backward_matches_finite_differences() {
    let mut rng = Rng::new(42);
    let (heads, head_dim) = (2, 6);
    let pos = [3u32, 11];
    let n = pos.len() * heads * head_dim;
    let x = rng.vec(n, -1.0, 1.0);
    let w = rng.vec(n, -1.0, 1.0);
    for layout in layouts() {
        let spec = Rope {
            layout,
            theta: 100.0,
            rotary_dim: 4,
        };
        let loss = |x: &[f64]| -> f64 {
            let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let y = reference::rope(&xf, &pos, heads, head_dim, spec);
            y.iter().zip(&w).map(|(a, &b)| a * b as f64).sum()
        };
        let analytic = reference::rope_backward(&w, &pos, heads, head_dim, spec);
        let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
        for i in 0..n {
            let h = 1e-2;
            let (mut up, mut down) = (x64.clone(), x64.clone());
            up[i] += h;
            down[i] -= h;
            let fd = (loss(&up) - loss(&down)) / (2.0 * h);
            assert!(
                (fd - analytic[i]).abs() < 1e-5,
                "{layout:?} {i}: {fd} vs {}",
                analytic[i]
            );
        }
    }
}

#[test]
fn new_positions_in_the_same_buffer_change_the_rotation() {
    let s = stream();
    let spec = Rope {
        layout: RopeLayout::NeoX,
        theta: 10000.0,
        rotary_dim: 8,
    };
    let (x, xs) = upload::<f32>(&s, &Rng::new(43).vec(2 * 8, -1.0, 1.0));
    let mut positions = Buffer::from_host(&s, &[0u32, 1]).unwrap();
    let mut y = poisoned::<f32>(&s, 16);
    rope(&s, &x, &positions, &mut y, 2, 1, 8, spec).unwrap();
    let first = download(&s, &y);
    assert_close(
        "position 0",
        &first[..8],
        &reference::rope(&xs[..8], &[0], 1, 8, spec),
        1e-6,
        0.0,
    );
    positions.copy_from_host(&s, &[40, 41]).unwrap();
    rope(&s, &x, &positions, &mut y, 2, 1, 8, spec).unwrap();
    let want = reference::rope(&xs, &[40, 41], 1, 8, spec);
    assert_close("positions 40, 41", &download(&s, &y), &want, 1e-4, 0.0);
}

#[test]
fn rope_runs_are_bit_identical() {
    let s = stream();
    let spec = Rope {
        layout: RopeLayout::Interleaved,
        theta: 500000.0,
        rotary_dim: 64,
    };
    let (x, _) = upload::<Bf16>(&s, &Rng::new(44).vec(3 * 4 * 128, -3.0, 3.0));
    let positions = Buffer::from_host(&s, &[7u32, 900, 4095]).unwrap();
    let run = || {
        let mut y = poisoned::<Bf16>(&s, 3 * 4 * 128);
        rope(&s, &x, &positions, &mut y, 3, 4, 128, spec).unwrap();
        bits(&s, &y)
    };
    assert_eq!(run(), run());
}

#[test]
fn an_odd_rotary_dimension_is_an_error_before_launch() {
    let s = stream();
    let (x, _) = upload::<f32>(&s, &[1.0; 8]);
    let positions = Buffer::from_host(&s, &[0u32]).unwrap();
    let mut y = poisoned::<f32>(&s, 8);
    let spec = Rope {
        layout: RopeLayout::NeoX,
        theta: 10000.0,
        rotary_dim: 5,
    };
    let err = rope(&s, &x, &positions, &mut y, 1, 1, 8, spec).unwrap_err();
    assert!(
        matches!(err, Error::Unsupported { .. }) && err.to_string().contains("odd"),
        "{err}"
    );
    let too_wide = Rope {
        rotary_dim: 10,
        ..spec
    };
    assert!(rope(&s, &x, &positions, &mut y, 1, 1, 8, too_wide).is_err());
    let short = Buffer::from_host(&s, &[0u32, 1]).unwrap();
    let ok = Rope {
        rotary_dim: 8,
        ..spec
    };
    let err = rope(&s, &x, &short, &mut y, 1, 1, 8, ok).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Length {
                buffer: "positions",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        download(&s, &y).iter().all(|v| v.is_nan()),
        "nothing is written on error"
    );
}

#[test]
fn a_captured_graph_replays_with_new_positions() {
    let s = stream();
    let spec = Rope {
        layout: RopeLayout::NeoX,
        theta: 10000.0,
        rotary_dim: 8,
    };
    let (x, xs) = upload::<f32>(&s, &Rng::new(45).vec(2 * 8, -1.0, 1.0));
    let mut positions = Buffer::from_host(&s, &[1u32, 2]).unwrap();
    let mut y = poisoned::<f32>(&s, 16);
    rope(&s, &x, &positions, &mut y, 2, 1, 8, spec).unwrap(); // loads the kernel
    let graph = s
        .capture(|c| {
            rope(c, &x, &positions, &mut y, 2, 1, 8, spec).map_err(|e| match e {
                Error::Runtime(r) => r,
                other => panic!("{other}"),
            })
        })
        .unwrap();
    positions.copy_from_host(&s, &[100, 250]).unwrap();
    graph.replay().unwrap();
    s.synchronize().unwrap();
    let want = reference::rope(&xs, &[100, 250], 1, 8, spec);
    assert_close("replayed", &download(&s, &y), &want, 1e-4, 0.0);
}
