//! The flash-attention forward on the emulator against the f64 reference, at short and ragged
//! sequences covering each head dim, element type, mask and GQA ratio at least once, and its
//! shape checks. Shapes stay small: the emulator runs every thread of every block on the CPU.

mod common_flash_forward;

use common_flash_forward::{check, Case};
use kernel_dsl::Target;
use kernel_runtime::{Bf16, Buffer, Device, Stream, F16};
use kernels::attention::{flash_forward, Attention, Batch, Heads, Mask};
use kernels::Error;

fn stream() -> Stream {
    Device::emulator()
        .stream()
        .expect("the emulator opens a stream")
}

#[test]
fn head_dim_64_matches_reference_over_257_keys_in_full() {
    check::<Bf16>(&stream(), &Case::new(&[257], 1, 1, 64, Mask::Full));
}

#[test]
fn head_dim_64_f16_causal_ragged_batch_matches_reference() {
    check::<F16>(&stream(), &Case::new(&[33, 1, 7], 2, 2, 64, Mask::Causal));
}

#[test]
fn head_dim_128_causal_gqa_4_matches_reference() {
    check::<F16>(&stream(), &Case::new(&[7, 33], 4, 1, 128, Mask::Causal));
}

#[test]
fn head_dim_128_bf16_full_matches_reference() {
    check::<Bf16>(&stream(), &Case::new(&[1, 33], 2, 2, 128, Mask::Full));
}

#[test]
fn head_dim_256_bf16_causal_gqa_8_matches_reference() {
    check::<Bf16>(&stream(), &Case::new(&[33], 8, 1, 256, Mask::Causal));
}

#[test]
fn head_dim_256_f16_full_matches_reference() {
    check::<F16>(&stream(), &Case::new(&[7, 1], 1, 1, 256, Mask::Full));
}

/// A launch sized for longer sequences than the batch holds, over spare packed rows, as a
/// graph replayed with shorter lengths sees it: the blocks past each sequence write nothing.
#[test]
fn a_launch_for_longer_sequences_writes_only_the_real_rows() {
    let mut case = Case::new(&[7, 33], 2, 1, 64, Mask::Causal);
    case.spare_len = 100;
    case.spare_tokens = 5;
    check::<Bf16>(&stream(), &case);
}

/// An emulated Hopper, where `flash_forward` takes its `wgmma` path (the copy engine and
/// warpgroup products, 128 query rows a block).
fn hopper() -> Stream {
    Device::emulator_for(Target::Sm90a)
        .stream()
        .expect("the emulator opens a stream")
}

#[test]
fn on_hopper_head_dim_64_matches_reference_over_257_keys_in_full() {
    check::<Bf16>(&hopper(), &Case::new(&[257], 1, 1, 64, Mask::Full));
}

#[test]
fn on_hopper_head_dim_128_bf16_full_over_a_partial_second_key_tile_matches_reference() {
    check::<Bf16>(&hopper(), &Case::new(&[1, 200], 2, 1, 128, Mask::Full));
}

#[test]
fn on_hopper_head_dim_128_f16_causal_ragged_gqa_4_matches_reference() {
    check::<F16>(&hopper(), &Case::new(&[7, 1, 33], 4, 1, 128, Mask::Causal));
}

#[test]
fn on_hopper_head_dim_256_bf16_causal_over_two_query_tiles_matches_reference() {
    check::<Bf16>(&hopper(), &Case::new(&[130], 2, 2, 256, Mask::Causal));
}

#[test]
fn on_hopper_a_launch_for_longer_sequences_writes_only_the_real_rows() {
    let mut case = Case::new(&[7, 33], 8, 1, 64, Mask::Full);
    case.spare_len = 200;
    case.spare_tokens = 5;
    check::<F16>(&hopper(), &case);
}

/// A valid call's pieces, which each error test breaks one way.
struct Call {
    stream: Stream,
    heads: Heads,
    tokens: usize,
    seqs: usize,
    scale: f32,
    cu: Buffer<u32>,
    q: Buffer<Bf16>,
    kv: Buffer<Bf16>,
    o: Buffer<Bf16>,
    lse: Buffer<f32>,
}

impl Call {
    fn new() -> Call {
        let stream = stream();
        let heads = Heads {
            q: 4,
            kv: 2,
            dim: 64,
        };
        let tokens = 9;
        let fill = |n: usize, x: f32| Buffer::from_host(&stream, &vec![Bf16::from_f32(x); n]);
        Call {
            q: fill(tokens * 4 * 64, 0.5).unwrap(),
            kv: fill(tokens * 2 * 64, 0.25).unwrap(),
            o: fill(tokens * 4 * 64, 3.0).unwrap(),
            lse: Buffer::from_host(&stream, &vec![3.0f32; tokens * 4]).unwrap(),
            cu: Buffer::from_host(&stream, &[0u32, 4, 9]).unwrap(),
            stream,
            heads,
            tokens,
            seqs: 2,
            scale: 0.125,
        }
    }

    /// Runs the call (`v` is `k`'s buffer) and checks that an error left `o` and `lse` as
    /// they were.
    fn run(&mut self) -> Result<(), Error> {
        let batch = Batch {
            cu_seqlens: &self.cu,
            seqs: self.seqs,
            tokens: self.tokens,
            max_len: 5,
        };
        let attn = Attention {
            heads: self.heads,
            mask: Mask::Causal,
            scale: self.scale,
        };
        let o0 = self.o.to_host(&self.stream).unwrap();
        let l0 = self.lse.to_host(&self.stream).unwrap();
        let (q, kv) = (&self.q, &self.kv);
        let r = flash_forward(
            &self.stream,
            q,
            kv,
            kv,
            batch,
            attn,
            &mut self.o,
            &mut self.lse,
        );
        if r.is_err() {
            assert_eq!(
                self.o.to_host(&self.stream).unwrap(),
                o0,
                "o written on error"
            );
            assert_eq!(
                self.lse.to_host(&self.stream).unwrap(),
                l0,
                "lse written on error"
            );
        }
        r
    }

    fn bf16s(&self, n: usize) -> Buffer<Bf16> {
        Buffer::from_host(&self.stream, &vec![Bf16::from_f32(0.0); n]).unwrap()
    }
}

fn unsupported(r: Result<(), Error>, says: &str) {
    match r {
        Err(e @ Error::Unsupported { .. }) => {
            assert!(e.to_string().contains(says), "`{e}` does not say `{says}`")
        }
        other => panic!("expected Unsupported saying `{says}`, got {other:?}"),
    }
}

fn wrong_length(r: Result<(), Error>, buffer: &str) {
    match r {
        Err(Error::Length { buffer: b, .. }) => assert_eq!(b, buffer),
        other => panic!("expected a length error for `{buffer}`, got {other:?}"),
    }
}

#[test]
fn a_valid_call_succeeds_and_writes_every_row() {
    let mut c = Call::new();
    c.run().unwrap();
    assert!(c.lse.to_host(&c.stream).unwrap().iter().all(|&x| x != 3.0));
}

#[test]
fn buffers_of_the_wrong_length_are_rejected_before_launch() {
    let mut c = Call::new();
    c.q = c.bf16s(9 * 4 * 64 - 1);
    wrong_length(c.run(), "q");
    let mut c = Call::new();
    c.kv = c.bf16s(9 * 2 * 64 + 64);
    wrong_length(c.run(), "k");
    let mut c = Call::new();
    c.o = c.bf16s(9 * 4 * 64 - 64);
    wrong_length(c.run(), "o");
    let mut c = Call::new();
    c.lse = Buffer::from_host(&c.stream, &[0.0f32; 35]).unwrap();
    wrong_length(c.run(), "lse");
    let mut c = Call::new();
    c.seqs = 3;
    wrong_length(c.run(), "cu_seqlens");
}

#[test]
fn unsupported_heads_and_scales_are_rejected_before_launch() {
    let mut c = Call::new();
    c.heads.dim = 96;
    unsupported(c.run(), "head dim 96");
    let mut c = Call::new();
    c.heads.kv = 3;
    unsupported(c.run(), "multiple of heads.kv");
    let mut c = Call::new();
    c.heads.q = 0;
    unsupported(c.run(), "at least one");
    let mut c = Call::new();
    c.heads.kv = 0;
    unsupported(c.run(), "at least one");
    for scale in [f32::NAN, f32::INFINITY] {
        let mut c = Call::new();
        c.scale = scale;
        unsupported(c.run(), "not finite");
    }
    let mut c = Call::new();
    c.tokens = 1 << 30;
    unsupported(c.run(), "32-bit indices");
    let mut c = Call::new();
    c.tokens = usize::MAX / 2;
    unsupported(c.run(), "32-bit indices");
}

#[test]
fn zero_tokens_or_sequences_launch_nothing() {
    let mut c = Call::new();
    c.seqs = 0;
    c.cu = Buffer::from_host(&c.stream, &[0u32]).unwrap();
    c.run().unwrap();
    let mut c = Call::new();
    c.tokens = 0;
    c.q = Buffer::zeros(&c.stream, 0).unwrap();
    c.kv = Buffer::zeros(&c.stream, 0).unwrap();
    c.o = Buffer::zeros(&c.stream, 0).unwrap();
    c.lse = Buffer::zeros(&c.stream, 0).unwrap();
    c.cu = Buffer::from_host(&c.stream, &[0u32, 0, 0]).unwrap();
    c.run().unwrap();
}

/// Every instance assembles for each target it supports without spilling, within the 255
/// registers a thread may have (four warps a block leave the register file room for that),
/// and ptxas keeps the Hopper forward's `wgmma`s asynchronous (it reports where it has to
/// serialize them). Prints each instance's registers; skips with one line where no ptxas is
/// found (set `PTXKIT_PTXAS`).
#[test]
fn every_instance_assembles_without_spills() {
    let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() else {
        println!("skipping: no ptxas found (set PTXKIT_PTXAS)");
        return;
    };
    for target in [Target::Sm80, Target::Sm90, Target::Sm90a] {
        for k in kernels::attention::KERNELS {
            let kernel = k.kernel();
            // The `wgmma` kernels exist on sm_90a only, and refuse the rest.
            let Ok(ptx) = kernel_dsl::emit::emit(&kernel, target) else {
                assert!(
                    kernel.name.contains("wgmma") && target != Target::Sm90a,
                    "{} refuses {target}",
                    kernel.name
                );
                continue;
            };
            let assembled = ptxas
                .assemble(&ptx)
                .unwrap_or_else(|e| panic!("{} @ {target}: {e}", kernel.name));
            assert!(
                !assembled.log.contains("serialized"),
                "{} @ {target}: {}",
                kernel.name,
                assembled.log
            );
            for r in assembled.reports {
                println!("{} @ {target}: {} registers", r.entry, r.registers);
                assert_eq!(
                    (r.spill_stores, r.spill_loads),
                    (0, 0),
                    "{} spills at {target}",
                    r.entry
                );
            }
        }
    }
}
