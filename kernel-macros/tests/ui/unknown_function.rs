use kernel_macros::kernel;

// A call to a name that is neither an intrinsic nor a `#[device]` helper defined above: an
// unknown function, reported at the call.
#[kernel]
pub fn act(x: &[f32], y: &mut [f32]) {
    let i = thread_idx().x;
    y[i] = gelu(x[i]);
}

fn main() {}
