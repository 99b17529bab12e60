//! Every mistake the derive must refuse, one tiny file per mistake in `cases/`, with the expected
//! diagnostics pinned in `.stderr` files next to them (regenerate with `TRYBUILD=overwrite` and
//! read the diff).

#[test]
fn compile_fail() {
    trybuild::TestCases::new().compile_fail("cases/*.rs");
}
