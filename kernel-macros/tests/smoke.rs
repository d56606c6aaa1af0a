mod paths {
    pub use kernel_dsl as dsl;
    pub use kernel_macros::__kernel_expand;
    pub use kernel_runtime as runtime;
}
use kernel_dsl::Target;
use kernel_macros::kernel;

#[kernel(crate = crate::paths)]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = a * x[i] + y[i];
    }
}

#[test]
fn smoke() {
    let emit = SAXPY.emit.unwrap();
    println!("{}", emit(Target::Sm89).unwrap());
    println!("{:?}", SAXPY.embedded_targets());
}
