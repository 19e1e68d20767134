//! Tests of the pick's scoring.

use super::*;
use sparserl_rt::spmm::spmm_space;

fn record(class: &str, x: f64, measured: Vec<(u32, f32)>) -> SpmmRecord {
    SpmmRecord {
        matrix: format!("m-{class}-{x}"),
        class: class.into(),
        value: ValueType::F32,
        layout: DenseLayout::RowMajor,
        n: 64,
        vector: vec![x],
        measured,
        prior: None,
        prior_head: Vec::new(),
    }
}

fn records(records: Vec<SpmmRecord>) -> SpmmRecords {
    let space = spmm_space(64, DenseLayout::RowMajor);
    SpmmRecords {
        source: vec!["test".into()],
        variants: vec![space[0].id(), space[1].id()],
        records,
    }
}

fn rule(neighbours: usize, rank_weighted: bool, ridge_share: f64) -> PickRule {
    PickRule {
        neighbours,
        rank_weighted,
        ridge_share,
        knob_share: 0.0,
        size_votes: false,
        forest_share: 0.0,
        grouping: Grouping::None,
        coverage: 0.0,
        uncertainty: 0.0,
    }
}

#[test]
fn the_regression_extrapolates_a_trend_the_neighbours_lag() {
    // Variant 0 improves with x (0.3 to 0.9), variant 1 holds at 0.85.
    let r = records(
        (0..16)
            .map(|i| {
                let x = f64::from(i);
                let f0 = (0.3 + 0.04 * x) as f32;
                record("train", x, vec![(0, f0), (1, 0.85)])
            })
            .collect(),
    );
    let space = spmm_space(64, DenseLayout::RowMajor);
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 1, &[]);
    // Beyond the records (x = 20) the 8 nearest (x = 8..15) average 0.76
    // for variant 0; the regression carries its trend on.
    let mean_only = m.rank(&[20.0], &space, rule(8, false, 0.0));
    assert_eq!(mean_only[0].0, space[1]);
    assert!((mean_only[0].1 - 0.85).abs() < 1e-6);
    let ridge = m.rank(&[20.0], &space, rule(8, false, 1.0));
    assert_eq!(ridge[0].0, space[0]);
    // Scores are then predicted log fractions: variant 1's is ln 0.85.
    assert!((ridge[1].1 - 0.85f64.ln()).abs() < 1e-3, "{}", ridge[1].1);
}

#[test]
fn rank_weights_let_the_nearest_record_decide() {
    // The nearest record prefers variant 1; seven farther ones mildly prefer 0.
    let mut recs = vec![record("a", 0.0, vec![(0, 0.5), (1, 1.0)])];
    for i in 1..8 {
        recs.push(record("b", 1.0 + f64::from(i), vec![(0, 1.0), (1, 0.9)]));
    }
    let r = records(recs);
    let space = spmm_space(64, DenseLayout::RowMajor);
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 1, &[]);
    assert_eq!(m.rank(&[0.0], &space, rule(8, false, 0.0))[0].0, space[0]);
    assert_eq!(m.rank(&[0.0], &space, rule(8, true, 0.0))[0].0, space[1]);
    // Left out, class a does not vote.
    let without = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 1, &["a"]);
    assert_eq!(
        without.rank(&[0.0], &space, rule(8, true, 0.0))[0].0,
        space[0]
    );
    assert_eq!(without.nearest(&[0.0], 3).len(), 3);
}

#[test]
fn a_blend_needs_a_fitted_regression_and_the_grid_holds_the_rule() {
    // Four records: the quorum is met, a regression is not fitted.
    let r = records(
        (0..4)
            .map(|i| record("a", f64::from(i), vec![(0, 1.0), (1, 0.5)]))
            .collect(),
    );
    let space = spmm_space(64, DenseLayout::RowMajor);
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 1, &[]);
    assert_eq!(m.rank(&[0.0], &space, rule(8, false, 0.0)).len(), 2);
    assert!(m.rank(&[0.0], &space, rule(8, false, 0.5)).is_empty());
    for value in ValueType::ALL {
        for layout in DenseLayout::ALL {
            assert!(RULE_GRID.contains(&pick_rule(value, layout)));
        }
    }
    assert_eq!(RULE_GRID[0], rule(NEIGHBOURS, false, 0.0));
}

#[test]
fn size_votes_rank_a_variant_only_records_of_the_same_size_measured() {
    // Vectors: log rows, cols, nnz, four shape entries, log2 N. Eight small
    // records of the query's shape measured variant 0; four of its size but
    // another shape also measured variant 1, twice as fast.
    let rec = |size: f64, shape: f64, measured: Vec<(u32, f32)>| SpmmRecord {
        vector: vec![size, size, size, shape, shape, shape, shape, 6.0],
        ..record("a", size, measured)
    };
    let mut all: Vec<SpmmRecord> = (0..8).map(|_| rec(0.0, 0.0, vec![(0, 0.5)])).collect();
    all.extend((0..4).map(|_| rec(10.0, 10.0, vec![(0, 0.5), (1, 1.0)])));
    let r = records(all);
    let space = spmm_space(64, DenseLayout::RowMajor);
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 8, &[]);
    let query = [10.0, 10.0, 10.0, 0.0, 0.0, 0.0, 0.0, 6.0];
    let plain = m.rank(&query, &space, rule(16, true, 0.0));
    assert_eq!(plain, vec![(space[0], 0.5)]);
    let sized = PickRule {
        size_votes: true,
        ..rule(16, true, 0.0)
    };
    assert_eq!(
        m.rank(&query, &space, sized),
        vec![(space[1], 1.0), (space[0], 0.5)]
    );
}

#[test]
fn a_path_decided_first_follows_the_best_of_each_record() {
    // Two direct variants take turns at winning (each 0.75 on average); the
    // transposed one holds 0.8. The score alone ranks the transposed variant
    // first; deciding the path first takes the direct path, whose best is
    // 1.0 on every record, and its variants lead the ranking.
    let space = spmm_space(64, DenseLayout::ColMajor);
    let direct: Vec<SpmmVariant> = space
        .iter()
        .copied()
        .filter(|v| !v.id().ends_with(".t"))
        .take(2)
        .collect();
    let t = *space
        .iter()
        .find(|v| v.id().ends_with(".t"))
        .expect("the column-major space has the transposed path");
    let recs = (0..8)
        .map(|i| {
            let (a, b) = if i % 2 == 0 { (1.0, 0.5) } else { (0.5, 1.0) };
            SpmmRecord {
                layout: DenseLayout::ColMajor,
                ..record("train", f64::from(i), vec![(0, a), (1, b), (2, 0.8)])
            }
        })
        .collect();
    let r = SpmmRecords {
        source: vec!["test".into()],
        variants: vec![direct[0].id(), direct[1].id(), t.id()],
        records: recs,
    };
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::ColMajor, 1, &[]);
    let plain = rule(8, false, 0.0);
    assert_eq!(m.rank(&[3.5], &space, plain)[0].0, t);
    let path = m.rank(&[3.5], &space, plain.with_grouping(Grouping::Path));
    assert!(direct.contains(&path[0].0) && direct.contains(&path[1].0));
    assert_eq!(path[2].0, t);
    assert_eq!(
        plain.with_grouping(Grouping::Path).name(),
        "k8-flat-ridge0-path-first"
    );
    // Groups: the path, or the family within the path.
    assert_eq!(Grouping::Path.of("row-warp.b128.g1.v1.t"), ".t");
    assert_eq!(
        Grouping::Family.of("nnz-split.b256.g4.i16.v2.t"),
        "nnz-split.t"
    );
    assert_eq!(
        Grouping::Family.of("col-tile.b128.g4.k2.u2.ldg"),
        "col-tile"
    );
}

#[test]
fn coverage_prefers_the_variant_more_neighbours_measured() {
    // Eight records measured variant 0 at 0.8; three of them also measured
    // variant 1, at 0.9.
    let recs = (0..8)
        .map(|i| {
            let mut m = vec![(0, 0.8)];
            if i % 3 == 0 {
                m.push((1, 0.9));
            }
            record("a", f64::from(i), m)
        })
        .collect();
    let r = records(recs);
    let space = spmm_space(64, DenseLayout::RowMajor);
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 1, &[]);
    let plain = rule(8, false, 0.0);
    assert_eq!(m.rank(&[0.0], &space, plain)[0].0, space[1]);
    // Coverage 3/8 for variant 1: 0.9 (3/8)^c against 0.8.
    let cautious = plain.with_caution(0.5, 0.0);
    let ranked = m.rank(&[0.0], &space, cautious);
    assert_eq!(ranked[0].0, space[0]);
    assert!((ranked[0].1 - 0.8).abs() < 1e-6);
    assert!((ranked[1].1 - 0.9 * (3.0f64 / 8.0).sqrt()).abs() < 1e-6);
    // A small weight leaves the faster variant first.
    assert_eq!(
        m.rank(&[0.0], &space, plain.with_caution(0.1, 0.0))[0].0,
        space[1]
    );
    assert_eq!(cautious.name(), "k8-flat-ridge0-cov0.5");
}

#[test]
fn uncertainty_takes_the_spread_of_the_neighbours_off() {
    // Variant 0 measured 1.0 and 0.25 alternately (geometric mean 0.5,
    // mean 0.625), variant 1 a steady 0.6.
    let recs = (0..8)
        .map(|i| {
            let f0 = if i % 2 == 0 { 1.0 } else { 0.25 };
            record("a", f64::from(i), vec![(0, f0), (1, 0.6)])
        })
        .collect();
    let r = records(recs);
    let space = spmm_space(64, DenseLayout::RowMajor);
    let m = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 1, &[]);
    let plain = rule(8, false, 0.0);
    assert_eq!(m.rank(&[0.0], &space, plain)[0].0, space[0]);
    let cautious = plain.with_caution(0.0, 1.0);
    let ranked = m.rank(&[0.0], &space, cautious);
    assert_eq!(ranked[0].0, space[1]);
    assert!((ranked[0].1 - 0.6).abs() < 1e-6);
    // Spread of ln 1 and ln 0.25: ln 2; over the root of 8 records.
    let want = 0.625 * (-(2.0f64.ln()) / 8.0f64.sqrt()).exp();
    assert!((ranked[1].1 - want).abs() < 1e-6, "{}", ranked[1].1);
    assert_eq!(cautious.name(), "k8-flat-ridge0-lcb1");
}
