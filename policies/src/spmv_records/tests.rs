//! Tests of the embedded SpMV records and the unsure pick.

use super::*;

#[test]
fn the_embedded_records_parse_and_cover_both_value_types() {
    let r = SpmvRecords::from_gz(EMBEDDED).expect("the embedded records parse");
    assert!(r.records.len() >= 100, "{} records", r.records.len());
    for value in [ValueType::F32, ValueType::F64] {
        assert!(r.records.iter().any(|x| x.value == value));
    }
    let prepared = r.prepared();
    assert_eq!(prepared.len(), r.records.len());
    // Every record measured a good share of today's policy space.
    let width = policy_space().len();
    for p in &prepared {
        let measured = p.measured.iter().flatten().count();
        assert!(measured * 2 >= width, "{}: {measured} of {width}", p.name);
        assert_eq!(p.features.len(), Features::NAMES.len());
    }
    assert!(embedded_knob_pick().is_some());
}

#[test]
fn compact_records_round_trip_to_the_same_rewards() {
    let space = policy_space();
    let mut measured = vec![None; space.len()];
    measured[0] = Some(1.0);
    measured[3] = Some(0.5);
    measured[7] = Some(-1.0);
    let p = Prepared {
        name: "m".into(),
        class: "c".into(),
        value: ValueType::F64,
        features: vec![1.0; 18],
        best: 10.0,
        measured,
        cannot_run: vec![Strategy::Sell],
    };
    let r = SpmvRecords::from_prepared(std::slice::from_ref(&p), vec!["test".into()]);
    assert_eq!(r.records[0].measured, vec![(0, 1.0), (3, 0.5), (7, -1.0)]);
    let back = &r.prepared()[0];
    assert_eq!(back.measured, p.measured);
    assert_eq!(back.cannot_run, p.cannot_run);
}

#[test]
fn the_rule_id_names_the_forest_the_records_and_the_risk_rule() {
    let id = no_gpu_rule_id();
    let forest = SpmvRecords::embedded_forest_fingerprint();
    assert!(
        id.starts_with(&format!("records-forest-{forest}-knob16+")),
        "{id}"
    );
    assert!(id.ends_with(&rule_id(&DEFAULT_RULE)), "{id}");
    assert!(id.contains(&SpmvRecords::embedded_fingerprint()));
}

#[test]
fn the_embedded_forest_loads_and_was_trained_on_the_embedded_records() {
    let forest = embedded_forest().expect("the embedded forest loads");
    assert_eq!(forest.config, crate::forest::DEFAULT_FOREST);
    let ids: Vec<String> = policy_space().iter().map(Variant::id).collect();
    assert_eq!(forest.knobs.ids, ids, "trained over today's policy space");
    // Rebuilt records need a rebuilt forest (`cargo xtask spmv-forest build`).
    assert_eq!(forest.trained_on, SpmvRecords::embedded_fingerprint());
}

#[test]
fn a_corrupt_forest_is_refused() {
    assert!(forest_from_gz(b"not gzip").is_err());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, br#"{"config":{}}"#).unwrap();
    assert!(forest_from_gz(&gz.finish().unwrap()).is_err());
}

#[test]
fn the_records_pick_blends_and_respects_runnable() {
    let pick = embedded_records_pick().expect("records");
    assert!(pick.forest.is_some());
    let r = &SpmvRecords::from_gz(EMBEDDED).expect("parse").prepared()[0];
    let j = pick.best(&r.features, r.value, &|_| true).expect("a pick");
    let space = policy_space();
    let not_j = |v: &Variant| *v != space[j];
    let k = pick
        .best(&r.features, r.value, &not_j)
        .expect("another pick");
    assert_ne!(j, k);
    assert!(pick.best(&r.features, r.value, &|_| false).is_none());
}

#[test]
fn on_its_own_records_the_knob_pick_finds_good_variants() {
    // Each record is among its own nearest: a broken mapping of variants or
    // features would pick poorly even here.
    let knobs = embedded_knob_pick().expect("records");
    let prepared = SpmvRecords::from_gz(EMBEDDED).expect("parse").prepared();
    let fractions: Vec<f64> = prepared
        .iter()
        .map(|p| {
            let scores = knobs.scores(&p.features, p.value);
            let j = (0..scores.len())
                .filter(|&j| scores[j].is_some())
                .max_by(|&a, &b| {
                    scores[a]
                        .unwrap_or(0.0)
                        .total_cmp(&scores[b].unwrap_or(0.0))
                })
                .expect("a scored variant");
            p.measured[j].unwrap_or(0.0).max(0.0)
        })
        .collect();
    let mean = fractions.iter().sum::<f64>() / fractions.len() as f64;
    assert!(mean > 0.9, "mean fraction {mean:.3}");
}

#[test]
fn the_no_gpu_pick_is_the_records_pick() {
    let policy = crate::try_default_policy().expect("the committed policy loads");
    let records = embedded_records_pick().expect("records");
    let space = policy_space();
    for r in SpmvRecords::from_gz(EMBEDDED)
        .expect("parse")
        .prepared()
        .iter()
        .step_by(17)
    {
        let f = Features::from_slice(&r.features);
        let pick = no_gpu_pick(&policy, &f, r.value).expect("a pick");
        let j = records
            .best(&r.features, r.value, &|_| true)
            .expect("scored");
        assert_eq!(pick.variant, space[j], "{}", r.name);
        assert!(pick.score > 0.0 && pick.score <= 1.0);
    }
}
