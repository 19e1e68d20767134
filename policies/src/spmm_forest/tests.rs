//! Tests of the SpMM forest.

use super::*;
use sparserl_rt::ValueType;
use sparserl_rt::dense::DenseLayout;

fn record(x: f64, measured: Vec<(u32, f32)>) -> SpmmRecord {
    SpmmRecord {
        matrix: format!("m-{x}"),
        class: "c".into(),
        value: ValueType::F32,
        layout: DenseLayout::RowMajor,
        n: 64,
        vector: vec![x, 6.0],
        measured,
        prior: None,
        prior_head: Vec::new(),
    }
}

#[test]
fn a_threshold_on_the_features_flips_the_predicted_best() {
    // Variant 0 wins below x = 5, variant 1 above: a step a tree states.
    let ids: Vec<String> = ["row-warp.b128.g1.v4", "nnz-split.b256.g4.i16"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let pool: Vec<SpmmRecord> = (0..200)
        .map(|i| {
            let x = f64::from(i) / 20.0;
            let (a, b) = if x < 5.0 { (1.0, 0.4) } else { (0.3, 1.0) };
            record(x, vec![(0, a), (1, b)])
        })
        .collect();
    let refs: Vec<&SpmmRecord> = pool.iter().collect();
    let forest = SpmmForest::fit(&ids, &refs).expect("fitted");
    let low = [2.0, 6.0];
    let high = [8.0, 6.0];
    assert!(forest.predict(&low, 0) > forest.predict(&low, 1));
    assert!(forest.predict(&high, 1) > forest.predict(&high, 0));
    // Predictions are log fractions (averaged over bootstrap trees, which
    // blur the step): the best near ln 1 = 0, the miss near ln 0.3.
    let best = forest.predict(&high, 1).expect("known variant");
    let miss = forest.predict(&high, 0).expect("known variant");
    assert!(best > -0.35 && best <= 0.0, "{best}");
    assert!(miss < -0.8, "{miss}");
    // An unknown variant or a vector of another length has no prediction.
    assert_eq!(forest.predict(&high, 2), None);
    assert_eq!(forest.predict(&[8.0], 0), None);
}

#[test]
fn an_empty_pool_fits_nothing() {
    let ids = vec!["row-warp.b128.g1.v4".to_string()];
    assert!(SpmmForest::fit(&ids, &[]).is_none());
    let unmeasured = record(1.0, Vec::new());
    assert!(SpmmForest::fit(&ids, &[&unmeasured]).is_none());
}
