//! Views: a pointer argument to part of a buffer is bounds-checked as its own buffer for the
//! launch, so a kernel given `y[0..8]` of a 16-element buffer cannot write `y[8..16]` silently.

mod common;

use common::*;
use ptx_emulator::{Access, ArgValue, Error, GlobalMemory, LaunchConfig, ViewArg};

/// `y[i] = x[i] + 1` for every `i < n`, one thread each.
const ADD_ONE: &str = r#"
.visible .entry add_one(.param .u64 x, .param .u64 y, .param .u32 n)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<4>;
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<7>;
	ld.param.u64 	%rd1, [x];
	ld.param.u64 	%rd2, [y];
	ld.param.u32 	%r1, [n];
	mov.u32 	%r2, %tid.x;
	setp.ge.u32 	%p1, %r2, %r1;
	@%p1 bra 	$L__end;
	mul.wide.u32 	%rd3, %r2, 4;
	add.s64 	%rd4, %rd1, %rd3;
	ld.global.f32 	%f1, [%rd4];
	add.f32 	%f2, %f1, 0f3F800000;
	add.s64 	%rd5, %rd2, %rd3;
	st.global.f32 	[%rd5], %f2;
$L__end:
	ret;
}
"#;

fn view(addr: u64, elems: u64, name: &str) -> ArgValue {
    ArgValue::View(ViewArg {
        addr,
        bytes: elems * 4,
        elem_bytes: 4,
        name: name.to_string(),
    })
}

#[test]
fn a_store_past_a_mutable_view_names_the_view_its_buffer_and_parameter() {
    let mut mem = GlobalMemory::new();
    let x = mem.alloc_f32(&[2.0; 16]);
    let y = poisoned_f32(&mut mem, 16);
    let err = launch(
        &ptx(ADD_ONE),
        "add_one",
        LaunchConfig::linear(1, 16),
        &[view(x, 16, "x"), view(y, 8, "y"), ArgValue::U32(16)],
        &mut mem,
    )
    .unwrap_err();
    match &err {
        Error::ViewOutOfBounds {
            site,
            access,
            address,
            view,
            ..
        } => {
            assert_eq!(site.thread, [8, 0, 0]);
            assert_eq!(*access, Access::Store);
            assert_eq!(*address, y + 32);
            assert_eq!((view.name.as_str(), view.param.as_str()), ("y", "y"));
            assert_eq!((view.start, view.end, view.buffer), (0, 32, y));
            assert_eq!(view.buffer_bytes, 64);
        }
        other => panic!("expected a view out-of-bounds error, got {other:?}"),
    }
    let text = err.to_string();
    for needle in [
        "view `y`",
        "elements 0..8",
        "64 bytes",
        "parameter 1",
        "add_one",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from: {text}");
    }
    // The threads inside the view ran.
    assert_eq!(mem.read_f32(y, 8).unwrap(), vec![3.0; 8]);
}

#[test]
fn a_load_past_a_read_only_view_is_out_of_bounds() {
    let mut mem = GlobalMemory::new();
    let x = mem.alloc_f32(&[2.0; 16]);
    let y = poisoned_f32(&mut mem, 16);
    let err = launch(
        &ptx(ADD_ONE),
        "add_one",
        LaunchConfig::linear(1, 16),
        &[view(x + 16, 8, "x"), ArgValue::Ptr(y), ArgValue::U32(16)],
        &mut mem,
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::ViewOutOfBounds { access: Access::Load, view, .. }
            if view.start == 16 && view.end == 48 && view.buffer == x),
        "{err:?}"
    );
    assert!(err.to_string().contains("elements 4..12"), "{err}");
}

#[test]
fn accesses_inside_views_run_and_the_bounds_end_with_the_launch() {
    let mut mem = GlobalMemory::new();
    let x = mem.alloc_f32(&(0..16).map(|i| i as f32).collect::<Vec<_>>());
    let y = poisoned_f32(&mut mem, 16);
    let module = ptx_emulator::Emulator::new().load(&ptx(ADD_ONE)).unwrap();
    // Two views of one buffer in one launch: each keeps its own range usable.
    module
        .launch(
            "add_one",
            &LaunchConfig::linear(1, 8),
            &[view(x + 32, 8, "x"), view(y + 32, 8, "y"), ArgValue::U32(8)],
            &mut mem,
        )
        .unwrap();
    module
        .launch(
            "add_one",
            &LaunchConfig::linear(1, 8),
            &[view(x, 8, "x"), view(y, 8, "y"), ArgValue::U32(8)],
            &mut mem,
        )
        .unwrap();
    let want: Vec<f32> = (0..16).map(|i| i as f32 + 1.0).collect();
    assert_eq!(mem.read_f32(y, 16).unwrap(), want);
    // The next launch passes the whole buffer: no view bounds are left over.
    module
        .launch(
            "add_one",
            &LaunchConfig::linear(1, 16),
            &[ArgValue::Ptr(x), view(y, 16, "y"), ArgValue::U32(16)],
            &mut mem,
        )
        .unwrap();
    assert_eq!(mem.read_f32(y, 16).unwrap(), want);
}
