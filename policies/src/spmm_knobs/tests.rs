//! Tests of the knob regression.

use super::*;

#[test]
fn tokens_are_the_family_and_its_knobs() {
    assert_eq!(
        tokens("row-warp.b256.g4.v2"),
        ["row-warp", "row-warp:b256", "row-warp:g4", "row-warp:v2"]
    );
    assert_eq!(tokens("col-tile"), ["col-tile"]);
}

#[test]
fn a_knob_learned_on_some_variants_judges_an_unmeasured_one() {
    // Knob x2 halves the fraction whatever y is; no record measured
    // f.x2.y2, yet its knobs say it is worse than f.x1.y2.
    let variants: Vec<String> = ["f.x1.y1", "f.x2.y1", "f.x1.y2", "f.x2.y2"]
        .map(String::from)
        .to_vec();
    let measured: Vec<(u32, f32)> = vec![(0, 1.0), (1, 0.5), (2, 0.9)];
    let samples = (0..8).map(|i| (expand(&[f64::from(i) / 8.0 - 0.5], None), &measured[..]));
    let m = KnobModel::fit(&variants, samples).expect("fits");
    let x = expand(&[0.0], None);
    let (good, bad) = (m.predict(&x, 2), m.predict(&x, 3));
    assert!(bad < good - 0.3, "x2.y2 {bad} against x1.y2 {good}");
    assert!(m.predict(&x, 0) > m.predict(&x, 1));
}

#[test]
fn nothing_to_fit_is_none() {
    let none = std::iter::empty::<(Vec<f64>, &[(u32, f32)])>();
    assert!(KnobModel::fit(&["f.a".to_string()], none).is_none());
}

#[test]
fn expansion_clamps_squares_and_crosses_with_the_pivot() {
    assert_eq!(expand(&[1.0, 2.0], None), [1.0, 1.0, 2.0, 1.0, 4.0]);
    assert_eq!(
        expand(&[1.0, 2.0, 10.0], Some(1)),
        [
            1.0,
            1.0,
            2.0,
            CLAMP,
            1.0,
            4.0,
            CLAMP * CLAMP,
            2.0,
            2.0 * CLAMP
        ]
    );
}
