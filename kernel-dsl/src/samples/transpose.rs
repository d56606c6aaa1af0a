use crate::builder::KernelBuilder;
use crate::ir::{Dim, Kernel};
use crate::op::Cmp;
use crate::scalar::{F32, U32};

/// Block shape of [`transpose_32x32`]: 32 columns by 8 rows of threads, each thread moving four
/// elements of a 32×32 tile.
pub const TRANSPOSE_BLOCK: [u32; 3] = [32, 8, 1];

/// `out[c][r] = in[r][c]` for a `rows × cols` row-major matrix, through a shared 32×33 tile (the
/// extra column keeps the column reads free of bank conflicts). Launch a
/// `ceil(cols/32) × ceil(rows/32)` grid of [`TRANSPOSE_BLOCK`] blocks.
pub fn transpose_32x32() -> Kernel {
    const TILE: u32 = 32;
    const PITCH: u32 = TILE + 1;
    let mut b = KernelBuilder::new("transpose_32x32");
    b.reqntid(TRANSPOSE_BLOCK);
    let input = b.param_slice::<F32>("input");
    let output = b.param_slice_mut::<F32>("output");
    let rows = b.param::<U32>("rows");
    let cols = b.param::<U32>("cols");
    let tile = b.shared_array::<F32>("tile", TILE * PITCH);

    let tx = b.tid(Dim::X);
    let ty = b.tid(Dim::Y);
    let bx = b.ctaid(Dim::X);
    let by = b.ctaid(Dim::Y);
    let tile_c = b.const_u32(TILE);
    let pitch = b.const_u32(PITCH);
    let zero = b.const_u32(0);
    let step = b.const_u32(TRANSPOSE_BLOCK[1]);

    // Read: this block's tile starts at row by*32, column bx*32.
    let col = b.mad(bx, tile_c, tx);
    let row0 = b.mul(by, tile_c);
    b.for_range(zero, tile_c, step, |b, j| {
        let ty_j = b.add(ty, j);
        let row = b.add(row0, ty_j);
        let in_rows = b.setp(Cmp::Lt, row, rows);
        let in_cols = b.setp(Cmp::Lt, col, cols);
        b.if_(in_rows, |b| {
            b.if_(in_cols, |b| {
                let src = b.mad(row, cols, col);
                let v = b.ld_global(&input, src);
                let slot = b.mad(ty_j, pitch, tx);
                b.st_shared(&tile, slot, v);
            });
        });
    });
    b.bar_sync();

    // Write: the transposed tile starts at row bx*32, column by*32 of the output.
    let out_col = b.mad(by, tile_c, tx);
    let out_row0 = b.mul(bx, tile_c);
    b.for_range(zero, tile_c, step, |b, j| {
        let ty_j = b.add(ty, j);
        let out_row = b.add(out_row0, ty_j);
        let in_rows = b.setp(Cmp::Lt, out_row, cols);
        let in_cols = b.setp(Cmp::Lt, out_col, rows);
        b.if_(in_rows, |b| {
            b.if_(in_cols, |b| {
                let slot = b.mad(tx, pitch, ty_j);
                let v = b.ld_shared(&tile, slot);
                let dst = b.mad(out_row, rows, out_col);
                b.st_global(&output, dst, v);
            });
        });
    });
    b.finish()
}
