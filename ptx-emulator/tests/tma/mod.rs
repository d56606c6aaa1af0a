//! Shared by the tensor-copy tests: a kernel that copies one box into a zeroed shared tile and
//! stores the whole tile back, and a CPU model of where each element must land.

#![allow(dead_code)]

use super::common::ptx;
use ptx_emulator::{TensorMap, TensorSwizzle};

/// Bytes of the shared tile the kernel zeroes, copies into, and stores back whole.
pub const TILE: usize = 8192;

/// Eight warps: every thread zeroes and later stores back 32 bytes of `tile` (at shared
/// address 0, so the tile's offsets are absolute addresses); thread 0 arms the mbarrier, copies
/// the box to `tile + dst_off` and records whether the phase was complete just before and just
/// after the copy. The map is the parameter `tmap` or, when `map` names `%rd9`, the 128 bytes
/// at `map_ptr`; `coords` is the coordinate list as written (registers `%r20..` hold `c0..`).
pub fn copy_kernel(rank: usize, map: &str, coords: &str) -> String {
    ptx(&format!(
        r#"
.visible .entry copy(.param .u64 out, .param .align 64 .b8 tmap[128], .param .u32 dst_off,
	.param .u32 tx, .param .s32 c0, .param .s32 c1, .param .s32 c2, .param .s32 c3,
	.param .s32 c4, .param .u64 map_ptr)
{{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<30>;
	.reg .b64 	%rd<12>;
	.shared .align 1024 .b8 tile[{TILE}];
	.shared .align 8 .b64 bar;

	ld.param.u64 	%rd1, [out];
	ld.param.u32 	%r1, [dst_off];
	ld.param.u32 	%r2, [tx];
	ld.param.s32 	%r20, [c0];
	ld.param.s32 	%r21, [c1];
	ld.param.s32 	%r22, [c2];
	ld.param.s32 	%r23, [c3];
	ld.param.s32 	%r24, [c4];
	ld.param.u64 	%rd9, [map_ptr];
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, tile;
	shl.b32 	%r5, %r3, 5;
	add.s32 	%r6, %r4, %r5;
	mov.u32 	%r7, 0;
	st.shared.v4.u32 	[%r6], {{%r7, %r7, %r7, %r7}};
	st.shared.v4.u32 	[%r6+16], {{%r7, %r7, %r7, %r7}};
	fence.proxy.async.shared::cta;
	setp.eq.u32 	%p1, %r3, 0;
	@%p1 mbarrier.init.shared::cta.b64 	[bar], 1;
	bar.sync 	0;
	@!%p1 bra 	$L__wait;
	add.s32 	%r8, %r4, %r1;
	mbarrier.arrive.expect_tx.shared::cta.b64 	_, [bar], %r2;
	mbarrier.test_wait.parity.shared::cta.b64 	%p2, [bar], 0;
	cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes 	[%r8], [{map}, {{{coords}}}], [bar];
	mbarrier.test_wait.parity.shared::cta.b64 	%p3, [bar], 0;
	selp.u32 	%r9, 1, 0, %p2;
	selp.u32 	%r10, 1, 0, %p3;
	st.global.v2.u32 	[%rd1+{TILE}], {{%r9, %r10}};
$L__wait:
	mbarrier.try_wait.parity.shared::cta.b64 	%p2, [bar], 0;
	@!%p2 bra 	$L__wait;
	ld.shared.v4.u32 	{{%r11, %r12, %r13, %r14}}, [%r6];
	ld.shared.v4.u32 	{{%r15, %r16, %r17, %r18}}, [%r6+16];
	cvt.u64.u32 	%rd2, %r5;
	add.s64 	%rd3, %rd1, %rd2;
	st.global.v4.u32 	[%rd3], {{%r11, %r12, %r13, %r14}};
	st.global.v4.u32 	[%rd3+16], {{%r15, %r16, %r17, %r18}};
	ret;
}}
"#
    ))
}

/// The register coordinate list of a `rank`-D copy.
pub fn reg_coords(rank: usize) -> String {
    (0..rank)
        .map(|i| format!("%r{}", 20 + i))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A tensor of `dims` elements of `elem_bytes` (no address yet), rows `pitch` bytes apart;
/// each further dimension strides the previous one's stride times its extent.
pub fn map(
    elem_bytes: u32,
    dims: &[u64],
    pitch: u64,
    boxes: &[u32],
    swizzle: TensorSwizzle,
) -> TensorMap {
    let rank = dims.len();
    let mut m = TensorMap {
        elem_bytes,
        rank: rank as u32,
        address: 0,
        dims: [1; 5],
        strides: [0; 5],
        boxes: [1; 5],
        swizzle,
    };
    m.dims[..rank].copy_from_slice(dims);
    m.boxes[..rank].copy_from_slice(boxes);
    m.strides[0] = elem_bytes as u64;
    for i in 1..rank {
        m.strides[i] = if i == 1 {
            pitch
        } else {
            m.strides[i - 1] * dims[i - 1]
        };
    }
    m
}

/// Bytes from the tensor's first element to past its last.
pub fn extent(m: &TensorMap) -> usize {
    (0..m.rank as usize)
        .map(|i| (m.dims[i] - 1) * m.strides[i])
        .sum::<u64>() as usize
        + m.elem_bytes as usize
}

/// The CPU model of the hardware's placement: for every element of the box, in box order, its
/// tensor coordinates, the shared offset of each of its bytes (the swizzle XORs address bits
/// 7.. into bits 4..6 of the absolute address: 3 bits for 128 bytes, 2 for 64, 1 for 32) and
/// its value (zero outside the tensor). `tile` sits at shared address 0, so offsets in it are
/// absolute addresses.
pub fn expected_box(
    m: &TensorMap,
    coords: &[i32],
    dst: usize,
    data: &[u8],
) -> Vec<(Vec<i64>, Vec<usize>, Vec<u8>)> {
    let rank = m.rank as usize;
    let mask = match m.swizzle {
        TensorSwizzle::None => 0,
        TensorSwizzle::B32 => 1,
        TensorSwizzle::B64 => 3,
        TensorSwizzle::B128 => 7,
    };
    let eb = m.elem_bytes as usize;
    let count: usize = m.boxes[..rank].iter().map(|&b| b as usize).product();
    let mut out = Vec::with_capacity(count);
    for linear in 0..count {
        let mut rest = linear;
        let mut at = Vec::with_capacity(rank);
        for (&c, &extent) in coords.iter().zip(&m.boxes[..rank]) {
            at.push(c as i64 + (rest % extent as usize) as i64);
            rest /= extent as usize;
        }
        let inside = (0..rank).all(|i| at[i] >= 0 && (at[i] as u64) < m.dims[i]);
        let value = if inside {
            let off: u64 = (0..rank).map(|i| at[i] as u64 * m.strides[i]).sum();
            data[off as usize..off as usize + eb].to_vec()
        } else {
            vec![0; eb]
        };
        let places = (0..eb)
            .map(|k| {
                let a = dst + linear * eb + k;
                a ^ (((a >> 7) & mask) << 4)
            })
            .collect();
        out.push((at, places, value));
    }
    out
}
