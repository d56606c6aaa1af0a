//! Malformed PTX gives an error that points at the right line and column and says what was
//! expected.

use ptx_parser::{parse_module, Error};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn error_in_body(body: &str) -> Error {
    let text = format!("{HEADER}.entry k()\n{{\n{body}\n}}\n");
    parse_module(&text).expect_err("should not parse")
}

fn expected(err: &Error) -> String {
    match err {
        Error::Syntax { expected, .. } => expected.clone(),
    }
}

#[test]
fn missing_semicolon_points_at_the_next_token() {
    let err = error_in_body("\tmov.u32 %r1, %r2\n\tret;");
    assert_eq!(err.position(), (7, 2));
    assert!(expected(&err).contains('`'), "{err}");
    assert!(err.to_string().contains("found `ret`"), "{err}");
}

#[test]
fn unknown_register_type_says_a_type_was_expected() {
    let err = error_in_body("\t.reg .f33 %r<2>;");
    assert_eq!(err.position(), (6, 7));
    assert_eq!(expected(&err), "a type");
    assert!(
        err.to_string().contains(".f32"),
        "the help names real types: {err}"
    );
}

#[test]
fn unclosed_block_names_where_it_was_opened() {
    let err = parse_module(&format!("{HEADER}.entry k()\n{{\n\tret;\n")).unwrap_err();
    assert_eq!(err.position(), (7, 1));
    assert!(
        err.to_string().contains("opened at line 5, column 1"),
        "{err}"
    );
}

#[test]
fn stray_character_is_reported_with_its_column() {
    let err = error_in_body("\tadd.s32 %r1, %r2, #3;");
    assert_eq!(err.position(), (6, 20));
    assert!(err.to_string().contains("`#`"), "{err}");
}

#[test]
fn columns_count_characters_not_bytes() {
    let err = parse_module("// é\n.version 8.0 é").unwrap_err();
    assert_eq!(err.position(), (2, 14));
}

#[test]
fn top_level_instruction_asks_for_a_directive() {
    let err = parse_module(&format!("{HEADER}add.s32 %r1, %r2, %r3;\n")).unwrap_err();
    assert_eq!(err.position(), (4, 1));
    assert!(expected(&err).contains(".entry"), "{err}");
}

#[test]
fn malformed_numbers_are_errors() {
    for body in [
        "\tmov.f32 %f1, 0f3F80;",
        "\tmov.u32 %r1, 12ab;",
        "\tmov.u64 %rd1, 99999999999999999999;",
    ] {
        let err = error_in_body(body);
        assert_eq!(err.position().0, 6, "{body}: {err}");
    }
}

#[test]
fn absurd_nesting_is_refused_without_overflowing_the_stack() {
    let body = format!("{}{}", "{".repeat(10_000), "}".repeat(10_000));
    let err = error_in_body(&body);
    assert!(err.to_string().contains("nesting"), "{err}");
    let vector = format!("\tmov.b32 {}%r1{};", "{".repeat(10_000), "}".repeat(10_000));
    assert!(error_in_body(&vector).to_string().contains("nesting"));
    let nots = format!(
        "\tsetp.eq.and.u32 %p1, %r1, %r2, {}%p2;",
        "!".repeat(10_000)
    );
    assert!(error_in_body(&nots).to_string().contains("nesting"));
}

#[test]
fn wrong_version_and_directive_forms_are_errors() {
    assert!(parse_module(".version 8\n").is_err());
    assert!(parse_module(".version 7.8\n.target\n").is_err());
    assert!(parse_module(".entry k(.param .u64 a\n{\n}\n").is_err());
    assert!(parse_module(".global .u32 x[-1];\n").is_err());
    assert!(parse_module(".pragma \"unterminated\n").is_err());
}
