//! Vector access generic over the element type (`load_vec::<{ T::VEC }>`, the guarded
//! `load_vec_or`, `store_vec`), branches pruned by build-time conditions, and launch bounds,
//! checked on the emulator and in the emitted PTX.

mod common;

use kernel_macros::kernel;
use kernel_runtime::{Bf16, Buffer, Device, Error, LaunchConfig, Stream, F16};

/// The launcher of one `affine` instance over element type `T`.
type Affine<T> = fn(&Stream, LaunchConfig, &Buffer<T>, &mut Buffer<T>, u32) -> Result<(), Error>;

/// `y = 2·x + 1` over `n` elements, `W` at a time; the last partial vector reads only the
/// elements that exist and writes them one by one.
#[kernel(crate = crate::common::paths,
         instances(<f32, 4>, <f32, 2>, <f32, 1>, <bf16, 8>, <bf16, 2>, <f16, 4>, <u32, 4>, <f64, 2>))]
pub fn affine<T: Element, const W: u32>(x: &[T], y: &mut [T], n: u32) {
    let i = (block_idx().x * block_dim().x + thread_idx().x) * W;
    if i < n {
        if i + W <= n {
            let mut out = x.load_vec::<W>(i);
            for k in 0..W {
                out[k] = ((out[k] as f32) * 2.0 + 1.0) as T;
            }
            y.store_vec::<W>(i, out);
        } else {
            for k in i..n {
                y[k] = ((x[k] as f32) * 2.0 + 1.0) as T;
            }
        }
    }
}

/// Row sums over 16-byte vectors: `T::VEC` is the width, so one source serves 4 × f32 and
/// 8 × bf16. Rows are `stride` apart; vectors that start past `cols` are not read.
#[kernel(crate = crate::common::paths, instances(<f32>, <bf16>))]
pub fn row_sums<T: Element>(x: &[T], sums: &mut [f32], rows: u32, cols: u32, stride: u32) {
    let r = block_idx().x * block_dim().x + thread_idx().x;
    if r < rows {
        let mut s = 0.0f32;
        let mut c = 0;
        while c < stride {
            let v = x.load_vec_or::<{ T::VEC }>(r * stride + c, c < cols, 0.0 as T);
            for k in 0..T::VEC {
                if c + k < cols {
                    s += v[k] as f32;
                }
            }
            c += T::VEC;
        }
        sums[r] = s;
    }
}

/// `y[i] = x[i]` where `i < n`, else the fill, through one guarded load per element.
#[kernel(crate = crate::common::paths, instances(<f32>, <bf16>))]
pub fn guarded_copy<T: Element>(x: &[T], y: &mut [T], n: u32, fill: T) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    let v = x.load_vec_or::<1>(i, i < n, fill);
    y[i] = v[0];
}

/// One warp per row (`CTA = 0`) or one block per row with a barrier (`CTA = 1`): the barrier
/// exists only in the instance whose condition holds at build time.
#[kernel(crate = crate::common::paths, instances(<0>, <1>), max_threads = 64, maxnreg = 40)]
pub fn per_row_max<const CTA: u32>(x: &[u32], y: &mut [u32], cols: u32) {
    let t = thread_idx().x;
    let row = block_idx().x;
    let mut m = 0u32;
    let mut c = t;
    while c < cols {
        m = max(m, x[row * cols + c]);
        c += if CTA == 1 { block_dim().x } else { 32 };
    }
    m = max(m, shfl_xor(m, 16));
    m = max(m, shfl_xor(m, 8));
    m = max(m, shfl_xor(m, 4));
    m = max(m, shfl_xor(m, 2));
    m = max(m, shfl_xor(m, 1));
    if CTA == 1 {
        let partial = shared_array::<u32, 2>();
        if t % 32 == 0 {
            partial[t / 32] = m;
        }
        sync_threads();
        m = max(partial[0], partial[1]);
    }
    if t == 0 {
        y[row] = m;
    }
}

#[kernel(crate = crate::common::paths, max_threads = 256, min_blocks = 4)]
pub fn occupancy_bound(y: &mut [u32]) {
    y[thread_idx().x] = 1;
}

fn values(n: usize) -> Vec<f32> {
    (0..n)
        .map(|k| ((k * 37 % 23) as f32 - 11.0) / 4.0)
        .collect()
}

#[test]
fn load_vec_and_store_vec_move_w_elements_of_every_width_and_type() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let n = 37u32;
    let x = values(n as usize);
    let want: Vec<f32> = x.iter().map(|v| v * 2.0 + 1.0).collect();
    let grid = |w: u32| LaunchConfig::for_elements(n.div_ceil(w), 32);

    let dx = Buffer::from_host(&stream, &x)?;
    for (w, f) in [
        (4, affine__f32_4 as Affine<f32>),
        (2, affine__f32_2),
        (1, affine__f32_1),
    ] {
        let mut dy = Buffer::from_host(&stream, &vec![f32::NAN; n as usize])?;
        f(&stream, grid(w), &dx, &mut dy, n)?;
        assert_eq!(dy.to_host(&stream)?, want, "f32 × {w}");
    }

    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let dxb = Buffer::from_host(&stream, &xb)?;
    for (w, f) in [(8, affine__bf16_8 as Affine<Bf16>), (2, affine__bf16_2)] {
        let mut dyb = Buffer::from_host(&stream, &vec![Bf16::from_f32(f32::NAN); n as usize])?;
        f(&stream, grid(w), &dxb, &mut dyb, n)?;
        let got: Vec<f32> = dyb.to_host(&stream)?.iter().map(|v| v.to_f32()).collect();
        let want: Vec<f32> = xb
            .iter()
            .map(|v| Bf16::from_f32(v.to_f32() * 2.0 + 1.0).to_f32())
            .collect();
        assert_eq!(got, want, "bf16 × {w}");
    }

    let xh: Vec<F16> = x.iter().map(|&v| F16::from_f32(v)).collect();
    let mut dyh = Buffer::from_host(&stream, &vec![F16::from_f32(f32::NAN); n as usize])?;
    affine__f16_4(
        &stream,
        grid(4),
        &Buffer::from_host(&stream, &xh)?,
        &mut dyh,
        n,
    )?;
    let got: Vec<f32> = dyh.to_host(&stream)?.iter().map(|v| v.to_f32()).collect();
    let want_h: Vec<f32> = xh
        .iter()
        .map(|v| F16::from_f32(v.to_f32() * 2.0 + 1.0).to_f32())
        .collect();
    assert_eq!(got, want_h, "f16 × 4");

    let xu: Vec<u32> = (0..n).map(|k| k * 3).collect();
    let mut dyu = Buffer::from_host(&stream, &vec![u32::MAX; n as usize])?;
    affine__u32_4(
        &stream,
        grid(4),
        &Buffer::from_host(&stream, &xu)?,
        &mut dyu,
        n,
    )?;
    let want_u: Vec<u32> = xu.iter().map(|&v| v * 2 + 1).collect();
    assert_eq!(dyu.to_host(&stream)?, want_u, "u32 × 4");

    let xd: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut dyd = Buffer::from_host(&stream, &vec![f64::NAN; n as usize])?;
    affine__f64_2(
        &stream,
        grid(2),
        &Buffer::from_host(&stream, &xd)?,
        &mut dyd,
        n,
    )?;
    let want_d: Vec<f64> = want.iter().map(|&v| v as f64).collect();
    assert_eq!(dyd.to_host(&stream)?, want_d, "f64 × 2");
    Ok(())
}

#[test]
fn a_guarded_vector_load_reads_nothing_where_its_condition_fails() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    // The buffer holds exactly `n` elements and 64 threads run: a read past `n` would be an
    // out-of-bounds error on the emulator, so passing shows the guard suppresses the access.
    let n = 45u32;
    let x = values(n as usize);
    let mut dy = Buffer::from_host(&stream, &[f32::NAN; 64])?;
    guarded_copy__f32(
        &stream,
        LaunchConfig::linear(1, 64),
        &Buffer::from_host(&stream, &x)?,
        &mut dy,
        n,
        -7.5,
    )?;
    let got = dy.to_host(&stream)?;
    for k in 0..64 {
        let want = if k < n as usize { x[k] } else { -7.5 };
        assert_eq!(got[k], want, "at {k}");
    }

    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let mut dyb = Buffer::from_host(&stream, &[Bf16::from_f32(f32::NAN); 64])?;
    guarded_copy__bf16(
        &stream,
        LaunchConfig::linear(1, 64),
        &Buffer::from_host(&stream, &xb)?,
        &mut dyb,
        n,
        Bf16::from_f32(3.0),
    )?;
    let got = dyb.to_host(&stream)?;
    for k in 0..64 {
        let want = if k < n as usize {
            xb[k]
        } else {
            Bf16::from_f32(3.0)
        };
        assert_eq!(got[k].to_f32(), want.to_f32(), "bf16 at {k}");
    }
    Ok(())
}

#[test]
fn t_vec_sizes_the_vector_to_sixteen_bytes_of_each_element_type() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let (rows, cols) = (5u32, 13u32);
    let x = values((rows * cols) as usize);
    let want: Vec<f32> = (0..rows as usize)
        .map(|r| x[r * cols as usize..(r + 1) * cols as usize].iter().sum())
        .collect();
    for (vec, bf16) in [(4u32, false), (8, true)] {
        // One vector of padding after each row that is never read; the last row's padding is
        // absent from the buffer, so reading it would be an out-of-bounds error.
        let stride = cols.div_ceil(vec) * vec + vec;
        let len = (rows * stride - vec) as usize;
        let mut padded = vec![0.0f32; len];
        for r in 0..rows as usize {
            padded[r * stride as usize..r * stride as usize + cols as usize]
                .copy_from_slice(&x[r * cols as usize..(r + 1) * cols as usize]);
        }
        let mut sums = Buffer::from_host(&stream, &vec![f32::NAN; rows as usize])?;
        let cfg = LaunchConfig::linear(1, 32);
        if bf16 {
            let xb: Vec<Bf16> = padded.iter().map(|&v| Bf16::from_f32(v)).collect();
            let dx = Buffer::from_host(&stream, &xb)?;
            row_sums__bf16(&stream, cfg, &dx, &mut sums, rows, cols, stride)?;
        } else {
            let dx = Buffer::from_host(&stream, &padded)?;
            row_sums__f32(&stream, cfg, &dx, &mut sums, rows, cols, stride)?;
        }
        // Every value is a multiple of 1/4 below 3 in magnitude: exact in bf16, and so is
        // each sum in f32.
        assert_eq!(sums.to_host(&stream)?, want, "{vec} lanes");
    }
    Ok(())
}

#[test]
fn a_build_time_condition_keeps_the_barrier_in_one_instance_only() -> Result<(), Error> {
    for (k, bars) in [(&PER_ROW_MAX__0, 0), (&PER_ROW_MAX__1, 1)] {
        let ptx = (k.emit.expect("emit function"))(kernel_dsl::Target::Sm89).expect("emits");
        assert_eq!(ptx.matches("bar.sync").count(), bars, "{}", k.meta.entry);
        assert!(ptx.contains(".maxnreg 40"), "{ptx}");
    }
    let stream = Device::emulator().stream()?;
    let (rows, cols) = (3u32, 150u32);
    let x: Vec<u32> = (0..rows * cols).map(|k| (k * 7919) % 1000).collect();
    let want: Vec<u32> = (0..rows as usize)
        .map(|r| {
            *x[r * cols as usize..(r + 1) * cols as usize]
                .iter()
                .max()
                .unwrap()
        })
        .collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let mut warp = Buffer::from_host(&stream, &vec![0u32; rows as usize])?;
    per_row_max__0(
        &stream,
        LaunchConfig::linear(rows, 32),
        &dx,
        &mut warp,
        cols,
    )?;
    assert_eq!(warp.to_host(&stream)?, want, "a warp per row");
    let mut cta = Buffer::from_host(&stream, &vec![0u32; rows as usize])?;
    per_row_max__1(&stream, LaunchConfig::linear(rows, 64), &dx, &mut cta, cols)?;
    assert_eq!(cta.to_host(&stream)?, want, "a block per row");
    Ok(())
}

#[test]
fn min_blocks_becomes_minnctapersm_beside_maxntid() {
    let ptx =
        (OCCUPANCY_BOUND.emit.expect("emit function"))(kernel_dsl::Target::Sm89).expect("emits");
    assert!(ptx.contains(".maxntid 256, 1, 1"), "{ptx}");
    assert!(ptx.contains(".minnctapersm 4"), "{ptx}");
    assert!(!ptx.contains(".maxnreg"), "{ptx}");
}

/// A launch bound chosen per instance by a constant `if`.
#[kernel(crate = crate::common::paths, instances(<1>, <2>, <4>), maxnreg = if W == 1 { 128 } else if W == 2 { 0 } else { 64 })]
pub fn bounded_by_width<const W: u32>(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x * W;
    y.store_vec::<W>(i, x.load_vec::<W>(i));
}

#[test]
fn a_constant_if_picks_each_instances_launch_bound() {
    for (k, bound) in [(&BOUNDED_BY_WIDTH__1, 128), (&BOUNDED_BY_WIDTH__4, 64)] {
        let ptx = (k.emit.expect("emit function"))(kernel_dsl::Target::Sm89).expect("emits");
        assert!(ptx.contains(&format!(".maxnreg {bound}")), "{ptx}");
    }
    // 0: this instance has no cap.
    let ptx = (BOUNDED_BY_WIDTH__2.emit.expect("emit function"))(kernel_dsl::Target::Sm89)
        .expect("emits");
    assert!(!ptx.contains(".maxnreg"), "{ptx}");
}

/// bf16 values whose bit patterns differ in both bytes, so that a swapped or shifted half shows.
fn bf16_values(n: usize) -> Vec<Bf16> {
    (0..n)
        .map(|k| Bf16::from_f32(((k * 37 % 23) as f32 - 11.0) * 1.375 + k as f32 / 64.0))
        .collect()
}

/// The little-endian word of elements `2j` and `2j + 1`.
fn word(h: &[Bf16], j: usize) -> u32 {
    u32::from(h[2 * j].to_bits()) | (u32::from(h[2 * j + 1].to_bits()) << 16)
}

#[test]
fn load_words_reads_bf16_pairs_as_little_endian_words_at_every_width() -> Result<(), Error> {
    use common::intrinsics::bf16_words;
    let stream = Device::emulator().stream()?;
    let n = 40u32;
    let h = bf16_values(n as usize * 8);
    let mut w4 = Buffer::from_host(&stream, &vec![0u32; n as usize * 4])?;
    let mut w2 = Buffer::from_host(&stream, &vec![0u32; n as usize * 2])?;
    let mut w1 = Buffer::from_host(&stream, &vec![0u32; n as usize])?;
    bf16_words(
        &stream,
        LaunchConfig::for_elements(n, 32),
        &Buffer::from_host(&stream, &h)?,
        &mut w4,
        &mut w2,
        &mut w1,
        n,
    )?;
    let want4: Vec<u32> = (0..n as usize * 4).map(|j| word(&h, j)).collect();
    assert_eq!(w4.to_host(&stream)?, want4);
    let want2: Vec<u32> = (0..n as usize * 2)
        .map(|j| word(&h, j / 2 * 4 + j % 2))
        .collect();
    assert_eq!(w2.to_host(&stream)?, want2);
    let want1: Vec<u32> = (0..n as usize).map(|t| word(&h, t * 4 + 2)).collect();
    assert_eq!(w1.to_host(&stream)?, want1);
    Ok(())
}

#[test]
fn shifting_and_masking_a_word_widens_its_bf16_halves_exactly() -> Result<(), Error> {
    use common::intrinsics::widen_bf16_words;
    let stream = Device::emulator().stream()?;
    let n = 33u32;
    let mut h = bf16_values(n as usize * 4);
    h[1] = Bf16::from_f32(f32::NEG_INFINITY);
    h[2] = Bf16::from_f32(-0.0);
    let mut y = Buffer::from_host(&stream, &vec![f32::NAN; h.len()])?;
    widen_bf16_words(
        &stream,
        LaunchConfig::for_elements(n, 32),
        &Buffer::from_host(&stream, &h)?,
        &mut y,
        n,
    )?;
    let got: Vec<u32> = y.to_host(&stream)?.iter().map(|v| v.to_bits()).collect();
    let want: Vec<u32> = h.iter().map(|v| v.to_f32().to_bits()).collect();
    assert_eq!(got, want);
    Ok(())
}

#[test]
fn a_guarded_word_load_reads_zeros_and_no_memory_where_its_condition_fails() -> Result<(), Error> {
    use common::intrinsics::guarded_words;
    let stream = Device::emulator().stream()?;
    // Exactly `n` elements: a read past them would be an out-of-bounds error on the emulator.
    let n = 52u32;
    let h = bf16_values(n as usize);
    let mut out = Buffer::from_host(&stream, &[u32::MAX; 128])?;
    guarded_words(
        &stream,
        LaunchConfig::linear(1, 64),
        &Buffer::from_host(&stream, &h)?,
        &mut out,
        n,
    )?;
    let got = out.to_host(&stream)?;
    for (j, &got) in got.iter().enumerate() {
        let want = if j < n as usize / 2 { word(&h, j) } else { 0 };
        assert_eq!(got, want, "word {j}");
    }
    Ok(())
}

#[test]
fn store_words_writes_bf16_pairs_back_at_every_width() -> Result<(), Error> {
    use common::intrinsics::swap_bf16_pairs;
    let stream = Device::emulator().stream()?;
    let x = bf16_values(64 * 8);
    let nan = Bf16::from_f32(f32::NAN);
    let mut y = Buffer::from_host(&stream, &vec![nan; x.len()])?;
    let mut z = Buffer::from_host(&stream, &vec![nan; x.len()])?;
    swap_bf16_pairs(
        &stream,
        LaunchConfig::linear(2, 32),
        &Buffer::from_host(&stream, &x)?,
        &mut y,
        &mut z,
    )?;
    let bits = |v: Vec<Bf16>| v.iter().map(|b| b.to_bits()).collect::<Vec<u16>>();
    let swapped: Vec<u16> = (0..x.len()).map(|k| x[k ^ 1].to_bits()).collect();
    assert_eq!(bits(y.to_host(&stream)?), swapped);
    let want: Vec<u16> = (0..x.len())
        .map(|k| {
            if k % 8 / 2 == 2 {
                swapped[k]
            } else {
                x[k].to_bits()
            }
        })
        .collect();
    assert_eq!(bits(z.to_host(&stream)?), want);
    Ok(())
}

/// Words read from and written back to a `&mut [u32]`, reversed within each 16 bytes.
#[kernel(crate = crate::common::paths)]
pub fn reverse_words_in_place(y: &mut [u32]) {
    let i = thread_idx().x * 4;
    let w = y.load_words::<4>(i);
    y.store_words::<4>(i, [w[3], w[2], w[1], w[0]]);
}

#[test]
fn word_loads_take_the_cache_path_of_load_vec_on_the_same_slice() -> Result<(), Error> {
    let emit = |k: &kernel_dsl::KernelArtifacts| {
        (k.emit.expect("emit function"))(kernel_dsl::Target::Sm89).expect("emits")
    };
    let ptx = emit(&common::intrinsics::BF16_WORDS);
    for ld in [
        "ld.global.nc.v4.b32",
        "ld.global.nc.v2.b32",
        "ld.global.nc.b32",
    ] {
        assert!(ptx.contains(ld), "{ld}: {ptx}");
    }
    let ptx = emit(&common::intrinsics::GUARDED_WORDS);
    assert!(ptx.contains("@%p1 ld.global.nc.v2.b32"), "{ptx}");
    let ptx = emit(&REVERSE_WORDS_IN_PLACE);
    assert!(
        ptx.contains("ld.global.v4.b32") && !ptx.contains(".nc"),
        "{ptx}"
    );

    let stream = Device::emulator().stream()?;
    let x: Vec<u32> = (0..128).map(|k| k * 0x0101_0101 + 7).collect();
    let mut y = Buffer::from_host(&stream, &x)?;
    reverse_words_in_place(&stream, LaunchConfig::linear(1, 32), &mut y)?;
    let want: Vec<u32> = (0..128).map(|k| x[k ^ 3]).collect();
    assert_eq!(y.to_host(&stream)?, want);
    Ok(())
}
