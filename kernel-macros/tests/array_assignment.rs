//! Whole-array assignment, `a = expr` for a `let mut` array: the values it leaves on the
//! emulator (loop-carried loads, a conditional load, a swap, a copy taken before the
//! assignment) and the PTX it emits (a load lands in the variable's own registers).

mod common;

use kernel_macros::kernel;
use kernel_runtime::{Buffer, Device, Error, LaunchConfig};

/// Each thread sums the words of its 16-byte column over `rows` rows of `x` (`4·threads`
/// words wide), loading the next row's words while it adds the current one's: the loads land
/// in `next`, which the loop carries, and past the last row `next` keeps the row it holds.
/// `last` gets what `next` holds at the end.
#[kernel(crate = crate::common::paths)]
pub fn prefetched_column_sums(x: &[u32], sums: &mut [u32], last: &mut [u32], rows: u32) {
    let t = thread_idx().x;
    let width = block_dim().x * 4;
    let mut next = [0u32; 4];
    if rows > 0 {
        next = x.load_words::<4>(t * 4);
    }
    let mut total = [0u32; 4];
    let mut row = 0u32;
    while row < rows {
        let held = next;
        if row + 1 < rows {
            next = x.load_words::<4>((row + 1) * width + t * 4);
        }
        for k in 0..4 {
            total[k] += held[k];
        }
        row += 1;
    }
    sums.store_words::<4>(t * 4, total);
    last.store_words::<4>(t * 4, next);
}

/// `a = [a[1], a[0]]` swaps; `let kept = a;` keeps the values `a` had when it was taken.
#[kernel(crate = crate::common::paths)]
pub fn swapped_and_kept(x: &[u32], y: &mut [u32]) {
    let t = thread_idx().x;
    let mut a = [x[2 * t], x[2 * t + 1]];
    let kept = a;
    a = [a[1], a[0]];
    y[4 * t] = a[0];
    y[4 * t + 1] = a[1];
    y[4 * t + 2] = kept[0];
    y[4 * t + 3] = kept[1];
}

#[test]
fn a_loop_carried_load_sums_every_row_and_keeps_the_last_one() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let threads = 8u32;
    let width = threads as usize * 4;
    for rows in [0u32, 1, 2, 7] {
        let h: Vec<u32> = (0..width * rows.max(1) as usize)
            .map(|k| (k as u32).wrapping_mul(2654435761) >> 7)
            .collect();
        // With no rows nothing is read; the buffer still holds one row.
        let x = Buffer::from_host(&stream, &h)?;
        let mut sums = Buffer::from_host(&stream, &vec![u32::MAX; width])?;
        let mut last = Buffer::from_host(&stream, &vec![u32::MAX; width])?;
        prefetched_column_sums(
            &stream,
            LaunchConfig::linear(1, threads),
            &x,
            &mut sums,
            &mut last,
            rows,
        )?;
        let want: Vec<u32> = (0..width)
            .map(|c| (0..rows as usize).fold(0u32, |s, r| s.wrapping_add(h[r * width + c])))
            .collect();
        assert_eq!(sums.to_host(&stream)?, want, "sums over {rows} rows");
        let want_last: Vec<u32> = match rows {
            0 => vec![0; width],
            r => h[(r as usize - 1) * width..r as usize * width].to_vec(),
        };
        assert_eq!(last.to_host(&stream)?, want_last, "last row of {rows}");
    }
    Ok(())
}

#[test]
fn a_swap_reads_the_old_values_and_an_earlier_copy_keeps_them() -> Result<(), Error> {
    let stream = Device::emulator().stream()?;
    let h: Vec<u32> = (0..64).map(|k| k * 3 + 1).collect();
    let mut y = Buffer::from_host(&stream, &vec![0u32; 128])?;
    swapped_and_kept(
        &stream,
        LaunchConfig::linear(1, 32),
        &Buffer::from_host(&stream, &h)?,
        &mut y,
    )?;
    let want: Vec<u32> = (0..32)
        .flat_map(|t| [h[2 * t + 1], h[2 * t], h[2 * t], h[2 * t + 1]])
        .collect();
    assert_eq!(y.to_host(&stream)?, want);
    Ok(())
}

#[test]
fn loads_assigned_to_an_array_write_its_own_registers() {
    let ptx = (PREFETCHED_COLUMN_SUMS.emit.expect("emit function"))(kernel_dsl::Target::Sm89)
        .expect("emits");
    let dsts: Vec<&str> = ptx
        .lines()
        .filter(|l| l.contains("ld.global.nc.v4.b32"))
        .map(|l| &l[l.find('{').expect("a vector")..=l.find('}').expect("a vector")])
        .collect();
    assert_eq!(dsts.len(), 2, "{ptx}");
    assert_eq!(dsts[0], dsts[1], "both loads write `next`: {ptx}");
}
