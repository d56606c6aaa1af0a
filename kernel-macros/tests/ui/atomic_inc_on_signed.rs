use kernel_macros::kernel;

#[kernel]
pub fn count(counter: &mut [i32], limit: i32) {
    let old = counter.atomic_inc(0, limit);
    counter[1] = old;
}

fn main() {}
