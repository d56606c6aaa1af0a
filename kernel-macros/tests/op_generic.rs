//! Op-generic kernels: a type parameter bounded by a trait whose impls are `#[device]` stands
//! for an op, so one source builds a kernel per op, and the generated launcher picks one by
//! the op's type.

mod common;

use kernel_macros::{device, kernel};
use kernel_runtime::{Bf16, Buffer, Device, Error, LaunchConfig};

/// An activation function, applied in f32.
pub trait Activation {
    fn apply(v: f32) -> f32;
}

pub struct Silu;
pub struct Relu;
/// Has no `#[device] impl` and is in no instance: launching with it is refused.
pub struct Gelu;

#[device(crate = crate::common::paths)]
impl Activation for Silu {
    fn apply(v: f32) -> f32 {
        v / (1.0 + (-v).exp())
    }
}

#[device(crate = crate::common::paths)]
impl Activation for Relu {
    fn apply(v: f32) -> f32 {
        v.max(0.0)
    }
}

impl Activation for Gelu {
    fn apply(v: f32) -> f32 {
        v
    }
}

/// `y = A(x)` elementwise.
#[kernel(crate = crate::common::paths, instances(T in [f32, bf16], A in [Silu, Relu]))]
pub fn activate<T: Element, A: Activation>(x: &[T], y: &mut [T], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = A::apply(x[i] as f32) as T;
    }
}

#[test]
fn each_op_type_is_its_own_instance() {
    let entries: Vec<_> = ACTIVATE_INSTANCES
        .iter()
        .map(|k| k.meta.entry.to_string())
        .collect();
    assert_eq!(
        entries,
        [
            "activate__f32_silu",
            "activate__f32_relu",
            "activate__bf16_silu",
            "activate__bf16_relu"
        ]
    );
}

#[test]
fn the_launcher_picks_the_op_by_its_type() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let n = 77u32;
    let x: Vec<f32> = (0..n).map(|k| (k as f32 - 38.0) / 8.0).collect();
    let dx = Buffer::from_host(&stream, &x)?;
    let cfg = LaunchConfig::for_elements(n, 32);

    let mut dy = Buffer::from_host(&stream, &vec![f32::NAN; n as usize])?;
    activate::<f32, Silu>(&stream, cfg, &dx, &mut dy, n)?;
    for (k, got) in dy.to_host(&stream)?.into_iter().enumerate() {
        let want = x[k] / (1.0 + (-x[k]).exp());
        assert!(
            (got - want).abs() <= 1e-5 * want.abs().max(1.0),
            "silu at {k}: {got} vs {want}"
        );
    }
    activate::<f32, Relu>(&stream, cfg, &dx, &mut dy, n)?;
    let relu: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(dy.to_host(&stream)?, relu);

    let xb: Vec<Bf16> = x.iter().map(|&v| Bf16::from_f32(v)).collect();
    let mut dyb = Buffer::from_host(&stream, &vec![Bf16::from_f32(f32::NAN); n as usize])?;
    activate::<Bf16, Relu>(&stream, cfg, &Buffer::from_host(&stream, &xb)?, &mut dyb, n)?;
    let got: Vec<f32> = dyb.to_host(&stream)?.iter().map(|v| v.to_f32()).collect();
    assert_eq!(got, relu, "every input is exact in bf16");

    let e = activate::<f32, Gelu>(&stream, cfg, &dx, &mut dy, n).unwrap_err();
    let msg = e.to_string();
    assert!(
        matches!(
            e,
            Error::NoInstance {
                kernel: "activate",
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains("<f32, Gelu>"), "{msg}");
    assert!(
        msg.contains("<f32, Silu>, <f32, Relu>, <bf16, Silu>, <bf16, Relu>"),
        "{msg}"
    );
    // The device impl still exists on the host, for trait bounds; its bodies never run there.
    assert_eq!(Gelu::apply(2.0), 2.0);
    Ok(())
}
