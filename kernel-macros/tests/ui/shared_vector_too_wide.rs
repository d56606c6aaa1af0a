use kernel_macros::kernel;

#[kernel]
pub fn wide(y: &mut [f32]) {
    let tile = shared_array::<f32, 64>();
    let v = tile.load_vec::<8>(0);
    y[0] = v[0];
}

fn main() {}
