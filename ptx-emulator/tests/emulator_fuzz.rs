//! The emulator on generated well-formed PTX, driven by a seeded generator with a fixed case
//! count so it runs in CI: it never panics and never hangs. Generated kernels mix integer,
//! float, conversion, memory, atomic, warp and barrier instructions with forward and backward
//! branches (so some loop forever, which the step budget must turn into an error), and some
//! address past their buffers (which must be a typed error). The corpus
//! `fuzz/corpus/ptx-emulator/` is replayed first.

#[path = "../../fuzz/support.rs"]
mod support;

use ptx_emulator::{ArgValue, Emulator, Error, GlobalMemory, LaunchConfig};
use std::fmt::Write;
use std::time::{Duration, Instant};
use support::{Rng, Runner};

/// Cases a CI run generates (25 to 50 s in a debug build on two busy cores).
const CI_CASES: usize = 3000;

/// Instructions one launch may run; an endless loop reaches it in milliseconds.
const STEP_BUDGET: u64 = 200_000;

/// Longer than any case takes with the step budget in force: a case this slow is a hang.
const HANG: Duration = Duration::from_secs(20);

/// Elements of each global buffer (f32 or u32).
const ELEMS: usize = 64;

const R: usize = 16;
const F: usize = 8;
const P: usize = 4;

fn r(rng: &mut Rng) -> String {
    // %r1..%r3 hold n, tid and ctaid; the rest are scratch.
    format!("%r{}", 1 + rng.below(R - 1))
}
fn rw(rng: &mut Rng) -> String {
    // %r13..%r15 hold the shared base and the addresses being formed.
    format!("%r{}", 4 + rng.below(R - 7))
}
fn f(rng: &mut Rng) -> String {
    format!("%f{}", rng.below(F))
}
fn p(rng: &mut Rng) -> String {
    format!("%p{}", rng.below(P))
}
fn imm(rng: &mut Rng) -> String {
    let choices = [
        "0",
        "1",
        "2",
        "3",
        "7",
        "31",
        "32",
        "33",
        "63",
        "-1",
        "255",
        "0x7FFFFFFF",
        "0x80000000",
        "4294967295",
    ];
    rng.pick(&choices).to_string()
}
fn fimm(rng: &mut Rng) -> String {
    let choices = [
        "0f00000000",
        "0f3F800000",
        "0fBF800000",
        "0f7F800000",
        "0fFF800000",
        "0f7FC00000",
        "0f00000001",
        "0f4F000000",
        "0fCF000000",
        "0f3DCCCCCD",
    ];
    rng.pick(&choices).to_string()
}
fn r_or_imm(rng: &mut Rng) -> String {
    if rng.one_in(3) {
        imm(rng)
    } else {
        r(rng)
    }
}

/// `%rd6 = base + (reg & mask) * 4`, with a mask inside the buffer or, rarely, past it.
fn global_address(rng: &mut Rng, out: &mut String) -> &'static str {
    let base = if rng.one_in(2) { "%rd1" } else { "%rd2" };
    let mask = if rng.one_in(25) { 127 } else { ELEMS - 1 };
    let src = r(rng);
    writeln!(out, "\tand.b32 \t%r15, {src}, {mask};").unwrap();
    writeln!(out, "\tmul.wide.u32 \t%rd5, %r15, 4;").unwrap();
    writeln!(out, "\tadd.s64 \t%rd6, {base}, %rd5;").unwrap();
    "%rd6"
}

/// `%r14 = s + (reg & mask) * 4` in the 512-byte shared array.
fn shared_address(rng: &mut Rng, out: &mut String) -> &'static str {
    let mask = if rng.one_in(25) { 255 } else { 127 };
    let src = r(rng);
    writeln!(out, "\tand.b32 \t%r14, {src}, {mask};").unwrap();
    writeln!(out, "\tshl.b32 \t%r14, %r14, 2;").unwrap();
    writeln!(out, "\tadd.s32 \t%r14, %r14, %r13;").unwrap();
    "%r14"
}

fn instruction(rng: &mut Rng, labels: usize, out: &mut String) {
    let line = match rng.below(24) {
        0 => {
            let op = rng.pick(&[
                "add.s32",
                "sub.s32",
                "mul.lo.s32",
                "mul.hi.u32",
                "mul.hi.s32",
                "and.b32",
                "or.b32",
                "xor.b32",
                "min.u32",
                "max.s32",
                "div.u32",
                "div.s32",
                "rem.u32",
                "rem.s32",
                "shl.b32",
                "shr.u32",
                "shr.s32",
            ]);
            format!("{op} \t{}, {}, {};", rw(rng), r(rng), r_or_imm(rng))
        }
        1 => {
            let op = rng.pick(&[
                "not.b32", "neg.s32", "abs.s32", "popc.b32", "clz.b32", "brev.b32", "mov.b32",
            ]);
            format!("{op} \t{}, {};", rw(rng), r(rng))
        }
        2 => format!(
            "mad.lo.s32 \t{}, {}, {}, {};",
            rw(rng),
            r(rng),
            r_or_imm(rng),
            r(rng)
        ),
        3 => format!(
            "bfe.u32 \t{}, {}, {}, {};",
            rw(rng),
            r(rng),
            r_or_imm(rng),
            r_or_imm(rng)
        ),
        4 => format!(
            "bfi.b32 \t{}, {}, {}, {}, {};",
            rw(rng),
            r(rng),
            r(rng),
            r_or_imm(rng),
            r_or_imm(rng)
        ),
        5 => format!(
            "prmt.b32 \t{}, {}, {}, {};",
            rw(rng),
            r(rng),
            r(rng),
            r_or_imm(rng)
        ),
        6 => {
            let cmp = rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
            let ty = rng.pick(&["u32", "s32"]);
            format!(
                "setp.{cmp}.{ty} \t{}, {}, {};",
                p(rng),
                r(rng),
                r_or_imm(rng)
            )
        }
        7 => format!(
            "selp.b32 \t{}, {}, {}, {};",
            rw(rng),
            r(rng),
            r_or_imm(rng),
            p(rng)
        ),
        8 => {
            let op = rng.pick(&[
                "add.f32",
                "sub.f32",
                "mul.f32",
                "min.f32",
                "max.f32",
                "div.rn.f32",
                "div.approx.f32",
                "div.full.f32",
                "add.rz.ftz.f32",
                "mul.rm.sat.f32",
            ]);
            format!("{op} \t{}, {}, {};", f(rng), f(rng), f(rng))
        }
        9 => {
            let op = rng.pick(&[
                "sqrt.rn.f32",
                "sqrt.approx.f32",
                "rcp.rn.f32",
                "rcp.approx.ftz.f32",
                "ex2.approx.f32",
                "lg2.approx.f32",
                "sin.approx.f32",
                "cos.approx.f32",
                "rsqrt.approx.f32",
                "abs.f32",
                "neg.f32",
                "tanh.approx.f32",
            ]);
            format!("{op} \t{}, {};", f(rng), f(rng))
        }
        10 => format!(
            "fma.rn.f32 \t{}, {}, {}, {};",
            f(rng),
            f(rng),
            f(rng),
            f(rng)
        ),
        11 => format!("mov.f32 \t{}, {};", f(rng), fimm(rng)),
        12 => {
            let cmp = rng.pick(&[
                "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "num", "nan",
            ]);
            format!("setp.{cmp}.f32 \t{}, {}, {};", p(rng), f(rng), f(rng))
        }
        13 => {
            let op = rng.pick(&["cvt.rn.f32.s32", "cvt.rn.f32.u32", "cvt.rz.f32.s32"]);
            format!("{op} \t{}, {};", f(rng), r(rng))
        }
        14 => {
            let op = rng.pick(&[
                "cvt.rzi.s32.f32",
                "cvt.rni.u32.f32",
                "cvt.rmi.sat.s32.f32",
                "mov.b32",
            ]);
            format!("{op} \t{}, {};", rw(rng), f(rng))
        }
        15 => {
            let a = global_address(rng, out);
            if rng.one_in(2) {
                format!("ld.global.f32 \t{}, [{a}];", f(rng))
            } else {
                format!("st.global.f32 \t[{a}], {};", f(rng))
            }
        }
        16 => {
            let a = shared_address(rng, out);
            if rng.one_in(2) {
                format!("ld.shared.u32 \t{}, [{a}];", rw(rng))
            } else {
                format!("st.shared.u32 \t[{a}], {};", r(rng))
            }
        }
        17 => {
            if rng.one_in(2) {
                let a = global_address(rng, out);
                format!("atom.global.add.u32 \t{}, [{a}], {};", rw(rng), r(rng))
            } else {
                let a = shared_address(rng, out);
                let op = rng.pick(&["add.u32", "max.u32", "exch.b32", "or.b32"]);
                format!("atom.shared.{op} \t{}, [{a}], {};", rw(rng), r(rng))
            }
        }
        18 => {
            let mode = rng.pick(&["bfly", "up", "down", "idx"]);
            format!(
                "shfl.sync.{mode}.b32 \t{}, {}, {}, 31, -1;",
                rw(rng),
                r(rng),
                r_or_imm(rng)
            )
        }
        19 => format!("vote.sync.ballot.b32 \t{}, {}, -1;", rw(rng), p(rng)),
        20 => "bar.sync \t0;".to_string(),
        21 if labels > 0 => {
            let target = rng.below(labels);
            let guard = if rng.one_in(4) {
                String::new()
            } else {
                format!("@{}{} ", if rng.one_in(2) { "!" } else { "" }, p(rng))
            };
            format!("{guard}bra \t$L{target};")
        }
        22 => format!("@{} ret;", p(rng)),
        _ => format!("mul.wide.u32 \t%rd7, {}, {};", r(rng), r_or_imm(rng)),
    };
    writeln!(out, "\t{line}").unwrap();
}

/// One well-formed kernel `k(a, b, n)` over two global buffers of [`ELEMS`] elements.
fn kernel(rng: &mut Rng) -> String {
    let mut body = String::new();
    let labels = rng.below(4);
    let len = 4 + rng.below(40);
    // Label positions, in order, so every label is placed once.
    let mut at: Vec<usize> = (0..labels).map(|_| rng.below(len + 1)).collect();
    at.sort_unstable();
    let mut next = 0;
    for i in 0..=len {
        while next < labels && at[next] == i {
            writeln!(body, "$L{next}:").unwrap();
            next += 1;
        }
        if i < len {
            instruction(rng, labels, &mut body);
        }
    }
    let mut init = String::new();
    for i in 4..13 {
        writeln!(init, "\tmov.u32 \t%r{i}, {};", imm(rng)).unwrap();
    }
    for i in 0..F {
        writeln!(init, "\tmov.f32 \t%f{i}, {};", fimm(rng)).unwrap();
    }
    for i in 0..P {
        writeln!(init, "\tsetp.lt.u32 \t%p{i}, %r2, {};", rng.below(70)).unwrap();
    }
    format!(
        ".version 8.0\n.target sm_80\n.address_size 64\n\n\
         .visible .entry k(.param .u64 a, .param .u64 b, .param .u32 n)\n{{\n\
         \t.reg .pred \t%p<{P}>;\n\t.reg .b32 \t%r<{R}>;\n\t.reg .f32 \t%f<{F}>;\n\t.reg .b64 \t%rd<8>;\n\
         \t.shared .align 16 .b8 s[512];\n\n\
         \tld.param.u64 \t%rd1, [a];\n\tld.param.u64 \t%rd2, [b];\n\tld.param.u32 \t%r1, [n];\n\
         \tmov.u32 \t%r2, %tid.x;\n\tmov.u32 \t%r3, %ctaid.x;\n\tmov.u32 \t%r13, s;\n\
         {init}{body}\tret;\n}}\n"
    )
}

/// Loads and launches `text` on a few shapes; any outcome but a panic or a hang is fine.
/// Counts the kernels that load, so the run can check the generator makes kernels that do.
fn run_kernel(text: &str, loaded: &mut usize) -> Result<(), String> {
    let strict = match Emulator::new().with_step_budget(STEP_BUDGET).load(text) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    *loaded += 1;
    // Most generated kernels read shared words no thread wrote; without the check, the
    // instructions after such a read run too.
    let lenient = Emulator::new()
        .with_step_budget(STEP_BUDGET)
        .with_shared_init_check(false)
        .load(text)
        .map_err(|e| format!("loaded once, then failed to load: {e}"))?;
    let shapes = [(&strict, 1, 32), (&lenient, 2, 64), (&lenient, 1, 48)];
    for (module, grid, block) in shapes {
        let mut mem = GlobalMemory::new();
        let a = mem.alloc_f32(&[1.5; ELEMS]);
        let b = mem.alloc_f32(&[-0.25; ELEMS]);
        let args = [ArgValue::Ptr(a), ArgValue::Ptr(b), ArgValue::U32(40)];
        let t0 = Instant::now();
        let outcome = module.launch("k", &LaunchConfig::linear(grid, block), &args, &mut mem);
        if t0.elapsed() > HANG {
            return Err(format!(
                "a launch of {grid}×{block} took {:.1} s with a step budget of {STEP_BUDGET}",
                t0.elapsed().as_secs_f64()
            ));
        }
        if let Err(e @ Error::Unsupported { .. }) = outcome {
            return Err(format!(
                "an instruction the generator uses is unsupported: {e}"
            ));
        }
    }
    Ok(())
}

#[test]
fn the_emulator_never_panics_or_hangs_on_generated_ptx() {
    let mut runner = Runner::new("ptx-emulator");
    let mut loaded = 0;
    for (name, text) in support::corpus(env!("CARGO_MANIFEST_DIR"), "ptx-emulator") {
        runner.run(format!("corpus {name}"), &text, || {
            run_kernel(&text, &mut loaded)
        });
    }
    let seed = support::seed(0x454D_554C_4154);
    let mut rng = Rng::new(seed);
    let cases = support::cases(CI_CASES);
    let before = loaded;
    for case in 0..cases {
        let text = kernel(&mut rng);
        runner.run(format!("seed {seed} case {case}"), &text, || {
            run_kernel(&text, &mut loaded)
        });
    }
    // A generator whose kernels do not load tests only the parser.
    assert!(
        loaded - before >= cases * 9 / 10,
        "only {} of {cases} generated kernels loaded",
        loaded - before
    );
    runner.finish();
}
