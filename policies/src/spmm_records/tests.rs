//! Tests of the record pick.

use super::*;
use sparserl_rt::spmm::spmm_space;

fn record(class: &str, vector: Vec<f64>, measured: Vec<(u32, f32)>) -> SpmmRecord {
    SpmmRecord {
        matrix: format!("m-{class}"),
        class: class.into(),
        value: ValueType::F32,
        layout: DenseLayout::RowMajor,
        n: 64,
        vector,
        measured,
        prior: None,
        prior_head: Vec::new(),
    }
}

/// Two clusters: near the origin variant 0 is best, far away variant 1.
fn records() -> SpmmRecords {
    let space = spmm_space(64, DenseLayout::RowMajor);
    let variants = vec![space[0].id(), space[1].id(), "not-a-variant".to_string()];
    let mut records = Vec::new();
    // As many records per cluster as a pick has neighbours.
    for i in 0..NEIGHBOURS {
        let x = i as f64 * 0.01;
        records.push(record(
            "near",
            vec![x, 0.0],
            vec![(0, 1.0), (1, 0.5), (2, 1.0)],
        ));
        records.push(record(
            "far",
            vec![10.0 + x, 10.0],
            vec![(0, 0.4), (1, 1.0)],
        ));
    }
    SpmmRecords {
        source: vec!["test".into()],
        variants,
        records,
    }
}

#[test]
fn the_nearest_records_decide() {
    let r = records();
    let space = spmm_space(64, DenseLayout::RowMajor);
    let near = r.rank(
        &[0.0, 0.0],
        ValueType::F32,
        DenseLayout::RowMajor,
        &space,
        None,
    );
    assert_eq!(near[0].0, space[0]);
    let far = r.rank(
        &[10.0, 10.0],
        ValueType::F32,
        DenseLayout::RowMajor,
        &space,
        None,
    );
    assert_eq!(far[0].0, space[1]);
    // Unknown ids are skipped, every ranked variant is of the space.
    assert!(near.iter().all(|(v, _)| space.contains(v)));
    // Scores blend log fractions: near the origin variant 0 (measured 1.0
    // by every near record, 0.4 by the far ones) scores a little below
    // ln 1 (the regression shrinks towards the mean), variant 1 well below.
    assert_eq!(near.len(), 2);
    assert!(near[0].1 <= 0.0 && near[0].1 > -0.3, "{}", near[0].1);
    assert!(near[1].1 < near[0].1 - 0.3, "{}", near[1].1);
    // The ranking is the model's under the rule.
    let model = SpmmModel::fit(&r, ValueType::F32, DenseLayout::RowMajor, 2, &[]);
    let rule = pick_rule(ValueType::F32, DenseLayout::RowMajor);
    assert_eq!(near, model.rank(&[0.0, 0.0], &space, rule));
}

#[test]
fn a_left_out_class_does_not_vote_and_votes_need_a_quorum() {
    let r = records();
    let space = spmm_space(64, DenseLayout::RowMajor);
    // Without the near class only the far records are left: variant 1.
    let ranked = r.rank(
        &[0.0, 0.0],
        ValueType::F32,
        DenseLayout::RowMajor,
        &space,
        Some("near"),
    );
    assert_eq!(ranked[0].0, space[1]);
    // One record alone is below the quorum.
    let one = SpmmRecords {
        records: r.records[..1].to_vec(),
        ..r.clone()
    };
    assert!(
        one.rank(
            &[0.0, 0.0],
            ValueType::F32,
            DenseLayout::RowMajor,
            &space,
            None
        )
        .is_empty()
    );
    // Another layout or value type has no records.
    assert!(
        r.rank(
            &[0.0, 0.0],
            ValueType::F64,
            DenseLayout::RowMajor,
            &space,
            None
        )
        .is_empty()
    );
    assert!(!r.covers(ValueType::F32, DenseLayout::ColMajor));
}

#[test]
fn the_embedded_records_parse_and_name_variants_of_the_space() {
    let r = SpmmRecords::embedded().expect("the committed records parse");
    assert!(!r.records.is_empty());
    for (value, layout) in [
        (ValueType::F32, DenseLayout::RowMajor),
        (ValueType::F32, DenseLayout::ColMajor),
        (ValueType::F64, DenseLayout::RowMajor),
        (ValueType::F64, DenseLayout::ColMajor),
    ] {
        assert!(r.covers(value, layout), "{value} {layout:?}");
    }
    assert!(SpmmRecords::embedded_fingerprint().starts_with(SPMM_RECORDS_VERSION));
    for id in &r.variants {
        SpmmVariant::parse(id).unwrap_or_else(|e| panic!("{id}: {e}"));
    }
    for rec in &r.records {
        assert_eq!(rec.vector.len(), knn_vector(&Features::default(), 1).len());
        assert!(
            rec.measured
                .iter()
                .all(|&(i, f)| (i as usize) < r.variants.len() && f > 0.0 && f <= 1.0)
        );
    }
}

#[test]
fn the_search_tries_the_records_first_then_the_ranking() {
    let r = records();
    let space = spmm_space(64, DenseLayout::RowMajor);
    // A ranking that puts variants 0 and 1 last.
    let mut ranked = space.clone();
    ranked.rotate_left(2);
    let far = r.search_order(
        &[10.0, 10.0],
        ValueType::F32,
        DenseLayout::RowMajor,
        &ranked,
        None,
    );
    // The records rank variant 1 then 0 far from the origin; they alternate
    // with the ranking's first ones, the rest keeps the ranking's order;
    // nothing is lost or repeated.
    assert_eq!(&far[..4], &[space[1], ranked[0], space[0], ranked[1]]);
    let mut sorted: Vec<String> = far.iter().map(|v| v.id()).collect();
    let mut want: Vec<String> = space.iter().map(|v| v.id()).collect();
    sorted.sort();
    want.sort();
    assert_eq!(sorted, want);
    // No records of the value type: the ranking itself.
    let none = r.search_order(
        &[10.0, 10.0],
        ValueType::F64,
        DenseLayout::RowMajor,
        &ranked,
        None,
    );
    assert_eq!(none, ranked);
    assert_eq!(r.class_of("m-near"), Some("near"));
    assert_eq!(r.class_of("elsewhere"), None);
}

#[test]
fn the_embedded_search_order_is_a_permutation_of_the_space() {
    let diag: Vec<(u32, u32, f64)> = (0..1000).map(|i| (i, i, 1.0)).collect();
    let f = Features::compute(&sparserl_rt::Csr::from_triplets(1000, 1000, &diag).unwrap());
    for (value, layout) in [
        (ValueType::F32, DenseLayout::RowMajor),
        (ValueType::F64, DenseLayout::ColMajor),
    ] {
        let order = spmm_search_order(&f, value, 32, layout, Some("road-network"));
        let mut a: Vec<String> = order.iter().map(|v| v.id()).collect();
        let mut b: Vec<String> = spmm_space(32, layout).iter().map(|v| v.id()).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b, "{value} {layout:?}");
    }
}
