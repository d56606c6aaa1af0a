//! The macro front end on generated kernels, driven by a seeded generator with a fixed case
//! count so it runs in CI: expansion (the entry `#[kernel]` calls) never panics, and every PTX
//! it emits for the default target assembles with ptxas (`PTXKIT_PTXAS`; without it that check
//! is skipped, with one line). Kernels come from a small grammar of the language: typed `let`s,
//! arithmetic, casts, comparisons, `if` as a statement and a value, `for`/`while`/`loop` with
//! `break`/`continue`, slice loads and stores, shared and local arrays, intrinsics and methods.
//! Most are well typed; a few mix types, or use literals out of range, to reach the
//! diagnostics. The corpus `fuzz/corpus/kernel-macros/` (one kernel per file) is replayed first.

#[path = "../../fuzz/support.rs"]
mod support;

use crate::lower::{self, Devices, Specialization};
use kernel_dsl::Target;
use std::path::{Path, PathBuf};
use support::{Rng, Runner};

/// Cases a CI run generates (25 to 55 s in a debug build on two busy cores, with ptxas).
const CI_CASES: usize = 300;

#[derive(Clone, Copy, PartialEq)]
enum Ty {
    U32,
    I32,
    F32,
}

impl Ty {
    fn rust(self) -> &'static str {
        match self {
            Ty::U32 => "u32",
            Ty::I32 => "i32",
            Ty::F32 => "f32",
        }
    }
}

struct Gen<'a> {
    rng: &'a mut Rng,
    vars: Vec<(String, Ty, bool)>,
    next: usize,
    depth: usize,
    in_loop: bool,
    /// Whether the kernel returns early for threads past `n`, so a barrier would diverge.
    guarded: bool,
}

impl Gen<'_> {
    fn var(&mut self, ty: Ty, mutable: bool) -> Option<String> {
        let found: Vec<&String> = self
            .vars
            .iter()
            .filter(|(_, t, m)| *t == ty && (*m || !mutable))
            .map(|(n, _, _)| n)
            .collect();
        (!found.is_empty()).then(|| self.rng.pick(&found).to_string())
    }

    /// A `u32` index into a buffer of `n` elements (or shared/local arrays, with `modulo`).
    fn index(&mut self, modulo: &str) -> String {
        let e = self.expr(Ty::U32, 1);
        format!("(({e}) % {modulo})")
    }

    fn literal(&mut self, ty: Ty) -> String {
        let rng = &mut *self.rng;
        match ty {
            Ty::U32 => rng
                .pick(&[
                    "0",
                    "1",
                    "2",
                    "3",
                    "7",
                    "31",
                    "32",
                    "255",
                    "4294967295",
                    "0x8000_0000",
                ])
                .to_string(),
            Ty::I32 => rng
                .pick(&["0", "1", "-1", "5", "-7", "2147483647", "(-2147483647 - 1)"])
                .to_string(),
            Ty::F32 => rng
                .pick(&[
                    "0.0", "1.0", "-1.5", "0.5", "3.25", "1e30", "-1e-30", "2.0f32",
                ])
                .to_string(),
        }
    }

    fn expr(&mut self, ty: Ty, depth: usize) -> String {
        if depth >= 3 || self.rng.one_in(3) {
            return self.leaf(ty);
        }
        let d = depth + 1;
        match (ty, self.rng.below(9)) {
            (_, 0) => {
                let c = self.cond(d);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("(if {c} {{ {a} }} else {{ {b} }})")
            }
            (_, 1) => {
                let from = *self.rng.pick(&[Ty::U32, Ty::I32, Ty::F32]);
                let e = self.expr(from, d);
                format!("(({e}) as {})", ty.rust())
            }
            (Ty::F32, 2) => {
                let m = self.rng.pick(&[
                    "sqrt", "abs", "exp", "ln", "floor", "ceil", "sin", "tanh", "recip",
                ]);
                format!("({}).{m}()", self.expr(ty, d))
            }
            (Ty::F32, 3) => {
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                let m = self.rng.pick(&["min", "max"]);
                format!("({a}).{m}({b})")
            }
            (Ty::F32, 4) => {
                let (a, b, c) = (self.expr(ty, d), self.expr(ty, d), self.expr(ty, d));
                format!("({a}).mul_add({b}, {c})")
            }
            (Ty::F32, _) => {
                let op = self.rng.pick(&["+", "-", "*", "/"]);
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                format!("({a} {op} {b})")
            }
            (Ty::I32, 2) => format!("(-{})", self.expr(ty, d)),
            (Ty::I32, 3) => format!("({}).abs()", self.expr(ty, d)),
            (Ty::U32, 2) => {
                let (a, b) = (self.expr(ty, d), self.expr(ty, d));
                let m = self.rng.pick(&["min", "max"]);
                format!("({a}).{m}({b})")
            }
            (Ty::U32, 3) => format!("shfl_xor({}, {})", self.expr(ty, d), self.literal(Ty::U32)),
            _ => {
                let op = self
                    .rng
                    .pick(&["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>", "+", "*"]);
                let a = self.expr(ty, d);
                let b = if *op == "<<" || *op == ">>" {
                    self.expr(Ty::U32, d)
                } else {
                    self.expr(ty, d)
                };
                format!("({a} {op} {b})")
            }
        }
    }

    fn leaf(&mut self, ty: Ty) -> String {
        match self.rng.below(5) {
            0 => self.literal(ty),
            1 => match ty {
                Ty::U32 => self
                    .rng
                    .pick(&["i", "n", "thread_idx().x", "block_dim().x", "lane_id()"])
                    .to_string(),
                Ty::I32 => format!("xi[{}]", self.index("n")),
                Ty::F32 => {
                    if self.rng.one_in(2) {
                        "s".to_string()
                    } else {
                        format!("x[{}]", self.index("n"))
                    }
                }
            },
            _ => self.var(ty, false).unwrap_or_else(|| self.literal(ty)),
        }
    }

    fn cond(&mut self, depth: usize) -> String {
        match self.rng.below(6) {
            0 if depth < 3 => format!("({} && {})", self.cond(depth + 1), self.cond(depth + 1)),
            1 if depth < 3 => format!("({} || {})", self.cond(depth + 1), self.cond(depth + 1)),
            2 if depth < 3 => format!("!({})", self.cond(depth + 1)),
            _ => {
                let ty = *self.rng.pick(&[Ty::U32, Ty::I32, Ty::F32]);
                let op = self.rng.pick(&["<", "<=", ">", ">=", "==", "!="]);
                let (a, b) = (self.expr(ty, depth + 1), self.expr(ty, depth + 1));
                format!("{a} {op} {b}")
            }
        }
    }

    fn fresh(&mut self, ty: Ty, mutable: bool) -> String {
        self.next += 1;
        let name = format!("v{}", self.next);
        self.vars.push((name.clone(), ty, mutable));
        name
    }

    fn block(&mut self, len: usize) -> String {
        let scope = self.vars.len();
        self.depth += 1;
        let mut out = String::new();
        for _ in 0..len {
            out.push_str(&self.stmt());
            out.push('\n');
        }
        self.depth -= 1;
        self.vars.truncate(scope);
        out
    }

    fn stmt(&mut self) -> String {
        let nested = self.depth < 3;
        match self.rng.below(14) {
            0 | 1 => {
                let ty = *self.rng.pick(&[Ty::U32, Ty::I32, Ty::F32]);
                let e = self.expr(ty, 0);
                let mutable = self.rng.one_in(2);
                let annotate = self.rng.one_in(2);
                let name = self.fresh(ty, mutable);
                let m = if mutable { "mut " } else { "" };
                if annotate {
                    format!("let {m}{name}: {} = {e};", ty.rust())
                } else {
                    format!("let {m}{name} = {e};")
                }
            }
            2 | 3 => {
                let ty = *self.rng.pick(&[Ty::U32, Ty::I32, Ty::F32]);
                match self.var(ty, true) {
                    Some(v) => {
                        let op = self.rng.pick(&["=", "+=", "-=", "*="]);
                        format!("{v} {op} {};", self.expr(ty, 0))
                    }
                    None => String::new(),
                }
            }
            4 | 5 => {
                let idx = self.index("n");
                if self.rng.one_in(2) {
                    format!("y[{idx}] = {};", self.expr(Ty::F32, 0))
                } else {
                    format!("yu[{idx}] = {};", self.expr(Ty::U32, 0))
                }
            }
            6 if nested => {
                let c = self.cond(0);
                let n = 1 + self.rng.below(3);
                let a = self.block(n);
                if self.rng.one_in(2) {
                    let n = 1 + self.rng.below(2);
                    let b = self.block(n);
                    format!("if {c} {{\n{a}}} else {{\n{b}}}")
                } else {
                    format!("if {c} {{\n{a}}}")
                }
            }
            7 if nested => {
                let range = match self.rng.below(3) {
                    0 => format!("0..{}", 1 + self.rng.below(6)),
                    1 => format!("{}..{}", self.expr(Ty::U32, 1), self.expr(Ty::U32, 1)),
                    _ => format!("(0..n).step_by({})", 1 + self.rng.below(64)),
                };
                let k = self.fresh(Ty::U32, false);
                let was = std::mem::replace(&mut self.in_loop, true);
                let n = 1 + self.rng.below(3);
                let body = self.block(n);
                self.in_loop = was;
                self.vars.retain(|(n, _, _)| *n != k);
                format!("for {k} in {range} {{\n{body}}}")
            }
            8 if nested => {
                let limit = self.expr(Ty::U32, 1);
                let c = self.fresh(Ty::U32, true);
                let was = std::mem::replace(&mut self.in_loop, true);
                let n = 1 + self.rng.below(2);
                let body = self.block(n);
                self.in_loop = was;
                if self.rng.one_in(2) {
                    format!(
                        "let mut {c}: u32 = 0;\nwhile {c} < ({limit}) % 8 {{\n{c} += 1;\n{body}}}"
                    )
                } else {
                    format!("let mut {c}: u32 = 0;\nloop {{\n{c} += 1;\nif {c} > 3 {{ break; }}\n{body}}}")
                }
            }
            9 if self.in_loop => {
                let c = self.cond(1);
                let what = self.rng.pick(&["break", "continue"]);
                format!("if {c} {{ {what}; }}")
            }
            10 => {
                let ty = *self.rng.pick(&[Ty::U32, Ty::F32]);
                let lit = if ty == Ty::U32 { "0u32" } else { "0.0f32" };
                let e = self.expr(ty, 1);
                let name = self.fresh(ty, false);
                let k = self.rng.below(4);
                let j = self.rng.below(4);
                format!(
                    "let mut {name}_a = [{lit}; 4];\n{name}_a[{k}] = {e};\nlet {name} = {name}_a[{j}];"
                )
            }
            11 if self.depth == 0 && !self.guarded => {
                let e = self.expr(Ty::F32, 1);
                let name = self.fresh(Ty::F32, false);
                format!(
                    "let {name}_s = shared_array::<f32, 64>();\n{name}_s[thread_idx().x % 64] = {e};\nsync_threads();\nlet {name} = {name}_s[(thread_idx().x + 1) % 64];"
                )
            }
            12 if self.rng.one_in(6) => {
                // Rarely wrong on purpose: a value of one type where another is needed, or a
                // literal the type cannot hold; the front end must answer with a diagnostic.
                let e = match self.rng.below(3) {
                    0 => self.expr(Ty::F32, 1),
                    1 => "5000000000".to_string(),
                    _ => "-1".to_string(),
                };
                let name = self.fresh(Ty::U32, false);
                format!("let {name}: u32 = {e};")
            }
            13 if self.rng.one_in(4) => {
                self.guarded = true;
                "return;".to_string()
            }
            _ => {
                let idx = self.index("n");
                format!("y[{idx}] = {};", self.expr(Ty::F32, 0))
            }
        }
    }
}

/// One kernel: the fixed signature, the usual bounds guard (in half of them), a generated body.
fn kernel_source(rng: &mut Rng) -> String {
    let mut g = Gen {
        rng,
        vars: Vec::new(),
        next: 0,
        depth: 0,
        in_loop: false,
        guarded: false,
    };
    // Without the usual bounds guard every index is taken modulo `n`, and barriers are legal.
    g.guarded = g.rng.one_in(2);
    let guard = if g.guarded {
        "if i >= n { return; }\n"
    } else {
        ""
    };
    let len = 1 + g.rng.below(8);
    let body = g.block(len);
    format!(
        "pub fn k(x: &[f32], xi: &[i32], y: &mut [f32], yu: &mut [u32], n: u32, s: f32) {{\n\
         let i = block_idx().x * block_dim().x + thread_idx().x;\n{guard}{body}}}\n"
    )
}

/// Totals over a run, printed at the end.
#[derive(Default)]
struct Tally {
    lowered: usize,
    emitted: usize,
    assembled: usize,
}

fn ptxas() -> Option<PathBuf> {
    std::env::var_os("PTXKIT_PTXAS")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
}

/// Assembles `ptx` for `target`; the error is ptxas's own report.
fn assemble(ptxas: &Path, ptx: &str, target: Target, dir: &Path) -> Result<(), String> {
    let input = dir.join("k.ptx");
    std::fs::write(&input, ptx).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(ptxas)
        .arg(format!("-arch={}", target.name()))
        .arg(&input)
        .arg("-o")
        .arg(dir.join("k.cubin"))
        .output()
        .map_err(|e| format!("ptxas did not run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ptxas rejected the PTX for {target}:\n{}\n{ptx}",
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn check(src: &str, ptxas: Option<&Path>, dir: &Path, tally: &mut Tally) -> Result<(), String> {
    let func: syn::ItemFn = match syn::parse_str(src) {
        Ok(f) => f,
        Err(e) => {
            return Err(format!(
                "the generator made text that is not a function: {e}"
            ))
        }
    };
    // The whole expansion, as the proc macro runs it.
    let attr: proc_macro2::TokenStream = quote::quote!(crate = paths);
    let _ = crate::expand::kernel(attr, quote::ToTokens::to_token_stream(&func));
    // And the PTX it embeds, for the default target.
    let lowered = match lower::lower_kernel(
        &func,
        "k",
        &Specialization::default(),
        None,
        &Devices::new(),
    ) {
        Ok(l) => l,
        Err(_) => return Ok(()),
    };
    tally.lowered += 1;
    let emitted = crate::targets::emit_all(
        &lowered,
        crate::diag::range(&func.sig.ident),
        None,
        crate::line_info::Mode::current(),
    );
    let default = emitted
        .iter()
        .find(|e| e.target == crate::targets::DEFAULT_TARGET)
        .expect("the default target is among all targets");
    // A verifier error (a barrier under divergent control flow, say) is a diagnostic too.
    let Ok(ptx) = &default.ptx else {
        return Ok(());
    };
    tally.emitted += 1;
    if let Some(ptxas) = ptxas {
        assemble(ptxas, ptx, default.target, dir)?;
        tally.assembled += 1;
    }
    Ok(())
}

#[test]
fn the_front_end_never_panics_and_its_ptx_assembles() {
    let ptxas = ptxas();
    if ptxas.is_none() {
        eprintln!("PTXKIT_PTXAS is not set: generated kernels are not assembled");
    }
    let dir = std::env::temp_dir().join(format!("ptxkit-front-end-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory for ptxas");
    let mut tally = Tally::default();
    let mut runner = Runner::new("kernel-macros");
    for (name, text) in support::corpus(env!("CARGO_MANIFEST_DIR"), "kernel-macros") {
        runner.run(format!("corpus {name}"), &text, || {
            check(&text, ptxas.as_deref(), &dir, &mut tally)
        });
    }
    // The counts printed below are of generated kernels only.
    tally = Tally::default();
    let seed = support::seed(0x4B45_524E_454C);
    let mut rng = Rng::new(seed);
    let cases = support::cases(CI_CASES);
    for case in 0..cases {
        let src = kernel_source(&mut rng);
        runner.run(format!("seed {seed} case {case}"), &src, || {
            check(&src, ptxas.as_deref(), &dir, &mut tally)
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "front end: {} of {cases} generated kernels lowered, {} emitted, {} assembled",
        tally.lowered, tally.emitted, tally.assembled
    );
    // A generator whose kernels never lower tests only the diagnostics.
    assert!(
        tally.lowered * 3 >= cases,
        "only {} of {cases} generated kernels lowered",
        tally.lowered
    );
    runner.finish();
}
