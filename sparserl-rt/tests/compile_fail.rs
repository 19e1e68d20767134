//! Misuses that the types of sparserl-rt reject at compile time, each with
//! the compiler's error (code and reason) compared against `tests/ui/*.stderr`
//! on stable (trybuild), so a test passes only for the intended reason.
//! Regenerate the expected output with `TRYBUILD=overwrite` after a
//! deliberate change of the message.

#[test]
fn misuses_are_rejected_for_their_reason() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
