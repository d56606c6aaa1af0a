//! Rust source lines in `#[kernel]` PTX: the `.file`/`.loc` form (one small golden, so the
//! library goldens stay without line info), `inlined_at` for `#[device]` code only where the
//! ISA has it, and the emulator naming the Rust line of a planted out-of-bounds store.

mod common;

use kernel_dsl::source_map::LineInfo;
use kernel_dsl::{emit, ir::Kernel, KernelArtifacts, Target};
use kernel_macros::{device, kernel};

/// Scales `v` by two.
#[device(crate = crate::common::paths)]
fn twice(v: f32) -> f32 {
    v * 2.0
}

/// `y[i] = twice(x[i])` for `i < n`.
#[kernel(crate = crate::common::paths)]
pub fn scale_by_two(x: &[f32], y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i] = twice(x[i]);
    }
}

/// Stores one element past the end of `y` from the last thread: a planted bug.
#[kernel(crate = crate::common::paths)]
pub fn planted_out_of_bounds(y: &mut [f32], n: u32) {
    let i = block_idx().x * block_dim().x + thread_idx().x;
    if i < n {
        y[i + 1] = 1.0;
    }
}

fn ir(k: &KernelArtifacts) -> Kernel {
    k.kernel()
        .expect("#[kernel] embeds its IR")
        .expect("the IR unpacks")
}

#[test]
fn the_loc_form_matches_its_golden() {
    let ptx = emit::emit_with(&ir(&SCALE_BY_TWO), Target::Sm90, LineInfo::On).unwrap();
    insta::assert_snapshot!("scale_by_two@sm_90+lines", ptx);
}

#[test]
fn paths_are_relative_to_the_crate_root() {
    let k = ir(&SCALE_BY_TWO);
    assert_eq!(k.source.files, vec!["tests/line_info.rs".to_string()]);
    let ptx = emit::emit_with(&k, Target::Sm90, LineInfo::On).unwrap();
    assert!(!ptx.contains(env!("CARGO_MANIFEST_DIR")), "{ptx}");
}

#[test]
fn device_code_is_marked_inlined_only_where_the_isa_has_inlined_at() {
    let k = ir(&SCALE_BY_TWO);
    let new = emit::emit_with(&k, Target::Sm89, LineInfo::On).unwrap();
    assert!(
        new.contains("inlined_at") && new.contains(".section\t.debug_str"),
        "{new}"
    );
    // sm_80's PTX ISA 7.0 predates `inlined_at`: the helper's lines stand alone.
    let old = emit::emit_with(&k, Target::Sm80, LineInfo::On).unwrap();
    assert!(old.contains(".loc\t1 "), "{old}");
    assert!(
        !old.contains("inlined_at") && !old.contains(".debug_str"),
        "{old}"
    );
}

#[test]
fn line_info_off_prints_what_the_goldens_pin() {
    let k = ir(&SCALE_BY_TWO);
    let off = emit::emit_with(&k, Target::Sm90, LineInfo::Off).unwrap();
    assert_eq!(off, emit::emit(&k, Target::Sm90).unwrap());
    assert!(!off.contains(".loc") && !off.contains(".file"), "{off}");
    // With the lines removed, the two forms are the same program.
    let on = emit::emit_with(&k, Target::Sm90, LineInfo::On).unwrap();
    let stripped: Vec<&str> = on
        .lines()
        .take_while(|l| !l.contains(".section"))
        .filter(|l| !l.starts_with(".file") && !l.trim_start().starts_with(".loc"))
        .filter(|l| !l.is_empty())
        .collect();
    let plain: Vec<&str> = off.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(stripped.join("\n").trim_end(), plain.join("\n").trim_end());
}

#[test]
fn the_emulator_reports_a_planted_out_of_bounds_store_at_its_rust_line() {
    use kernel_runtime::{Buffer, Device, LaunchConfig};
    let stream = Device::emulator().stream().unwrap();
    let n = 64u32;
    let mut y = Buffer::from_host(&stream, &vec![-1.0f32; n as usize]).unwrap();
    let err = planted_out_of_bounds(&stream, LaunchConfig::linear(1, n), &mut y, n)
        .and_then(|()| stream.synchronize())
        .unwrap_err()
        .to_string();
    let line = line_of("        y[i + 1] = 1.0;");
    let at = format!("tests/line_info.rs:{line}:9, `y[i + 1]`");
    assert!(err.contains(&at), "expected `{at}` in: {err}");
    assert!(err.contains("st.global.f32"), "{err}");
}

#[test]
fn a_kernel_with_inlined_lines_runs_on_the_emulator() {
    use kernel_runtime::{Buffer, Device, LaunchConfig};
    let stream = Device::emulator_for(Target::Sm90).stream().unwrap();
    let x: Vec<f32> = (0..70).map(|k| k as f32 - 20.5).collect();
    let dx = Buffer::from_host(&stream, &x).unwrap();
    let mut y = Buffer::from_host(&stream, &[-7.0f32; 70]).unwrap();
    scale_by_two(&stream, LaunchConfig::linear(2, 64), &dx, &mut y, 70).unwrap();
    let want: Vec<f32> = x.iter().map(|v| v * 2.0).collect();
    assert_eq!(y.to_host(&stream).unwrap(), want);
    // In a debug build the module the emulator ran has `inlined_at` and `.debug_str`.
    let ptx = (SCALE_BY_TWO.emit.expect("an emit function"))(Target::Sm90).unwrap();
    let lines = ptx.contains("inlined_at") && ptx.contains(".debug_str");
    assert_eq!(lines, cfg!(debug_assertions), "{ptx}");
}

#[test]
fn line_info_changes_neither_the_sass_nor_the_resources() {
    let Some(ptxas) = kernel_dsl::ptxas::Ptxas::find() else {
        eprintln!("skipping: ptxas not found (set PTXKIT_PTXAS)");
        return;
    };
    use common::kernels::*;
    let kernels = [
        &SCALE_BY_TWO,
        &PLANTED_OUT_OF_BOUNDS,
        &VECTOR_ADD,
        &SAXPY,
        &BLOCK_REDUCE_SUM,
        &TRANSPOSE_32X32,
        &MMA_BF16_16X8X16,
    ];
    for k in kernels {
        let kernel = ir(k);
        assert!(
            !kernel.source.is_empty(),
            "{} recorded no lines",
            kernel.name
        );
        for t in [Target::Sm80, Target::Sm90] {
            let diff = ptxas.line_info_difference(&kernel, t).unwrap();
            assert_eq!(diff, None, "{} on {t}", kernel.name);
        }
    }
}

/// The 1-based line of this file that reads `text`.
fn line_of(text: &str) -> usize {
    let source = include_str!("line_info.rs");
    1 + source
        .lines()
        .position(|l| l == text)
        .expect("the line is in this file")
}
