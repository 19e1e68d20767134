use super::*;
use crate::forest::ForestConfig;

#[test]
fn knob_inputs_parse_numbers_and_flags() {
    let ids: Vec<String> = ["group-per-row.b256.l8.u2.ldg", "tiled.b128.u1.cs"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let k = KnobInputs::new(&ids);
    let at = |v: usize, name: &str| k.values[v][k.names.iter().position(|n| n == name).unwrap()];
    assert_eq!(at(0, "fam:group-per-row"), 1.0);
    assert_eq!(at(0, "fam:tiled"), 0.0);
    assert_eq!(at(0, "b"), 8.0);
    assert_eq!(at(0, "l"), 3.0);
    assert_eq!(at(0, "u"), 1.0);
    assert_eq!(at(0, "ldg"), 1.0);
    assert_eq!(at(0, "cs"), 0.0);
    assert_eq!(at(1, "l"), -1.0, "an absent number reads -1");
    assert_eq!(at(1, "u"), 0.0);
    assert_eq!(at(1, "cs"), 1.0);
}

/// Records where the best variant depends on the row length: long rows
/// want many lanes, short rows one.
fn records() -> Vec<Prepared> {
    let space = policy_space();
    (0..24)
        .map(|i| {
            let mean = if i % 2 == 0 { 2.0 } else { 200.0 };
            let mut features = vec![1000.0 + i as f64; 18];
            features[4] = mean;
            let measured = space
                .iter()
                .map(|v| {
                    let lanes = v.id().contains(".l32.");
                    let thread = v.id().starts_with("thread-per-row");
                    Some(match (mean > 10.0, lanes, thread) {
                        (true, true, _) | (false, _, true) => 1.0,
                        _ => 0.3,
                    })
                })
                .collect();
            Prepared {
                name: format!("m{i}"),
                class: "c".into(),
                value: ValueType::F32,
                features,
                best: 1.0,
                measured,
                cannot_run: Vec::new(),
            }
        })
        .collect()
}

#[test]
fn the_pick_follows_the_measurements_and_respects_runnable() {
    let recs = records();
    let train: Vec<&Prepared> = recs.iter().collect();
    let cfg = ForestConfig {
        trees: 4,
        min_leaf: 2,
        max_features: 1.0,
        max_depth: 16,
        seed: 3,
    };
    let pick = ForestPick::fit(&train, &cfg, "test");
    assert!(pick.valid(18));
    let space = policy_space();
    let mut long = vec![1000.0; 18];
    long[4] = 150.0;
    let j = pick.best(&long, ValueType::F32, &|_| true).unwrap();
    assert!(space[j].id().contains(".l32."), "{}", space[j].id());
    let mut short = long.clone();
    short[4] = 3.0;
    let j = pick.best(&short, ValueType::F32, &|_| true).unwrap();
    assert!(
        space[j].id().starts_with("thread-per-row"),
        "{}",
        space[j].id()
    );
    let not_thread = |v: &Variant| !v.id().starts_with("thread-per-row");
    let j = pick.best(&short, ValueType::F32, &not_thread).unwrap();
    assert!(not_thread(&space[j]));
    assert!(pick.best(&short, ValueType::F32, &|_| false).is_none());
}

#[test]
fn a_pick_round_trips_through_json() {
    let recs = records();
    let train: Vec<&Prepared> = recs.iter().collect();
    let cfg = ForestConfig {
        trees: 2,
        min_leaf: 4,
        max_features: 0.5,
        max_depth: 8,
        seed: 0,
    };
    let pick = ForestPick::fit(&train, &cfg, "test");
    let back: ForestPick = serde_json::from_str(&serde_json::to_string(&pick).unwrap()).unwrap();
    assert_eq!(pick, back);
    assert!(!back.valid(17), "the feature count is checked");
}

#[test]
fn class_repeats_lift_small_classes_toward_the_median_up_to_the_cap() {
    // Class sizes 8, 4, 2, 1: median (upper) 4.
    let mut classes = vec!["big"; 8];
    classes.extend(["mid"; 4]);
    classes.extend(["small"; 2]);
    classes.push("one");
    let r = class_repeats(&classes, 3);
    assert_eq!(r.len(), classes.len());
    assert!(
        r[..8].iter().all(|&k| k == 1),
        "larger than the median: once"
    );
    assert!(r[8..12].iter().all(|&k| k == 1), "the median class: once");
    assert!(r[12..14].iter().all(|&k| k == 2));
    assert_eq!(r[14], 3, "4 / 1 capped at 3");
    assert!(
        class_repeats(&classes, 1).iter().all(|&k| k == 1),
        "cap 1: unbalanced"
    );
    assert!(class_repeats(&[], 4).is_empty());
}
