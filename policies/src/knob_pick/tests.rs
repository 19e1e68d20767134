//! Tests of the knob pick.

use super::*;
use crate::prepared::Prepared;

/// A record measuring only the first `measured` policy-space variants,
/// variant 1 at 1.0 and the others at 0.5.
fn rec(x: f64, measured: usize) -> Prepared {
    let width = policy_space().len();
    Prepared {
        name: format!("m{x}"),
        class: "c".into(),
        value: ValueType::F32,
        features: vec![x, 10.0],
        best: 1.0,
        measured: (0..width)
            .map(|j| (j < measured).then_some(if j == 1 { 1.0 } else { 0.5 }))
            .collect(),
        cannot_run: Vec::new(),
    }
}

#[test]
fn the_best_measured_variant_leads_and_unvoted_variants_have_no_score() {
    let train: Vec<Prepared> = (1..=6).map(|i| rec(f64::from(i), 4)).collect();
    let refs: Vec<&Prepared> = train.iter().collect();
    let knn = NeighbourPick::new(&refs, 8);
    let pick = KnobPick::new(&knn, None);
    let s = pick.scores(&[3.5, 10.0], ValueType::F32);
    assert_eq!(s.len(), policy_space().len());
    let best = (0..s.len())
        .filter(|&j| s[j].is_some())
        .max_by(|&a, &b| s[a].unwrap().total_cmp(&s[b].unwrap()));
    assert_eq!(best, Some(1), "{:?}", &s[..6]);
    assert!(
        s[4..].iter().all(Option::is_none),
        "only 4 variants measured"
    );
    // No record of the other value type: nothing is scored.
    assert!(
        pick.scores(&[3.5, 10.0], ValueType::F64)
            .iter()
            .all(Option::is_none)
    );
}
