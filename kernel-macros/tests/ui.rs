//! Compile-fail cases: each mistake is reported by `#[kernel]` at the offending tokens.

#[test]
fn kernel_mistakes_are_compile_errors_at_the_offending_tokens() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
