//! `cargo xtask spmm-records sweep`: the SpMM record pick's grid of rules
//! widened by cautious forms of some of its rules ([`PickRule::coverage`],
//! [`PickRule::uncertainty`]), judged by the same nested leave-one-class-out
//! as `loco`: for each widening, the rule that picks a held-out class's
//! cases is the one a leave-one-class-out over the other classes ranks
//! first within that widening (the held-out class never decides it).

use crate::spmm_loco::{f, gm, load};
use crate::spmm_records::{Fits, best_of, classes, fraction, inner_scores_of};
use anyhow::Result;
use sparserl_policies::spmm_model::{PickRule, RULE_GRID};
use sparserl_rt::spmm::spmm_space;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Rules of [`RULE_GRID`] given cautious forms: the former rule, the
/// committed grid's rules with a ridge share of 1/4 or 1/2 and no knob
/// regression, and those with the knob regression chosen for some key.
const BASES: [usize; 8] = [0, 5, 6, 9, 13, 16, 17, 19];

/// (coverage, uncertainty) pairs applied to each of [`BASES`].
const CAUTIONS: [(f64, f64); 6] = [
    (0.5, 0.0),
    (1.0, 0.0),
    (0.0, 1.0),
    (0.0, 2.0),
    (0.5, 1.0),
    (1.0, 2.0),
];

/// [`RULE_GRID`], then each of [`BASES`] under each of [`CAUTIONS`].
pub fn sweep_grid() -> Vec<PickRule> {
    let mut out = RULE_GRID.to_vec();
    for b in BASES {
        for (c, u) in CAUTIONS {
            out.push(RULE_GRID[b].with_caution(c, u));
        }
    }
    out
}

/// Per key (`f32 row-major` etc.) and rule: the sum of the log fractions of
/// the measured picks, their count and the cases judged.
type Scores = BTreeMap<String, Vec<(f64, usize, usize)>>;

/// One judged case: its class, key and each rule's fraction (its class's
/// records left out; `None` where the search did not measure the pick).
#[derive(Debug, Clone)]
pub struct Case {
    /// Structure class.
    pub class: String,
    /// `f32 row-major` etc.
    pub key: String,
    /// Per rule of the grid.
    pub fractions: Vec<Option<f64>>,
}

/// A widening's figures for one key.
#[derive(Debug, Clone)]
pub struct Nested {
    /// Geometric mean fraction of the measured picks.
    pub pooled: Option<f64>,
    /// Measured picks.
    pub measured: usize,
    /// Cases.
    pub cases: usize,
    /// Per class geometric mean (where any pick was measured), lowest first.
    pub classes: Vec<(f64, String)>,
    /// The rule chosen over every class (what the no-GPU pick would use).
    pub full: usize,
}

/// The nested leave-one-class-out of the rules `subset`: each case is
/// judged under the rule that `inner[its class]` (the inner scores with
/// its class left out) ranks first for its key; `full` under `inner[""]`.
pub fn nested(
    inner: &HashMap<String, Scores>,
    cases: &[Case],
    subset: &[usize],
) -> BTreeMap<String, Nested> {
    let mut by_key: BTreeMap<&str, Vec<&Case>> = BTreeMap::new();
    for c in cases {
        by_key.entry(c.key.as_str()).or_default().push(c);
    }
    by_key
        .into_iter()
        .map(|(key, cs)| {
            let pick = |c: &Case| {
                inner
                    .get(&c.class)
                    .and_then(|s| s.get(key))
                    .map_or(subset[0], |s| best_of(s, subset))
            };
            let mut per: BTreeMap<&str, Vec<Option<f64>>> = BTreeMap::new();
            let fr: Vec<Option<f64>> = cs
                .iter()
                .map(|c| {
                    let x = c.fractions[pick(c)];
                    per.entry(c.class.as_str()).or_default().push(x);
                    x
                })
                .collect();
            let (pooled, measured) = gm(fr.into_iter());
            let mut classes: Vec<(f64, String)> = per
                .into_iter()
                .filter_map(|(c, v)| Some((gm(v.into_iter()).0?, c.to_string())))
                .collect();
            classes.sort_by(|a, b| a.0.total_cmp(&b.0));
            let full = inner
                .get("")
                .and_then(|s| s.get(key))
                .map_or(subset[0], |s| best_of(s, subset));
            let out = Nested {
                pooled,
                measured,
                cases: cs.len(),
                classes,
                full,
            };
            (key.to_string(), out)
        })
        .collect()
}

/// Runs the sweep and prints, per widening and key, the nested figures.
pub fn run(records: &Path, json: Option<&Path>) -> Result<()> {
    let all = load(records)?;
    let grid = sweep_grid();
    let fits = Fits::new(&all);
    let mut outers: Vec<Option<&str>> = vec![None];
    outers.extend(classes(&all).into_iter().map(Some));
    let inner: HashMap<String, Scores> = std::thread::scope(|s| {
        let handles: Vec<_> = outers
            .iter()
            .map(|&o| {
                let (grid, fits) = (&grid, &fits);
                s.spawn(move || {
                    let scores: Scores = inner_scores_of(fits, o, grid)
                        .into_iter()
                        .map(|(k, v)| (format!("{} {}", k.0, k.1.as_str()), v))
                        .collect();
                    (o.unwrap_or("").to_string(), scores)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    let cases: Vec<Case> = all
        .records
        .iter()
        .map(|r| {
            let model = fits.get(r, &[&r.class]);
            let space = spmm_space(r.n, r.layout);
            let fractions = grid
                .iter()
                .map(|rule| {
                    model
                        .rank(&r.vector, &space, *rule)
                        .first()
                        .and_then(|p| fraction(&all, r, &p.0))
                })
                .collect();
            Case {
                class: r.class.clone(),
                key: format!("{} {}", r.value, r.layout.as_str()),
                fractions,
            }
        })
        .collect();
    if let Some(path) = json {
        let names: Vec<String> = grid.iter().map(PickRule::name).collect();
        let raw: Vec<_> = cases
            .iter()
            .map(|c| serde_json::json!({"class": c.class, "key": c.key, "fractions": c.fractions}))
            .collect();
        let v = serde_json::json!({"rules": names, "inner": inner, "cases": raw});
        std::fs::write(path, serde_json::to_string(&v)?)?;
    }
    let committed: Vec<usize> = (0..RULE_GRID.len()).collect();
    let widened = |keep: &dyn Fn(&PickRule) -> bool| -> Vec<usize> {
        committed
            .iter()
            .copied()
            .chain((RULE_GRID.len()..grid.len()).filter(|&i| keep(&grid[i])))
            .collect()
    };
    let widenings: Vec<(String, Vec<usize>)> = vec![
        ("committed grid".into(), committed.clone()),
        (
            "grid + coverage (0.5, 1)".into(),
            widened(&|p| p.uncertainty == 0.0),
        ),
        (
            "grid + uncertainty (1, 2)".into(),
            widened(&|p| p.coverage == 0.0),
        ),
        ("grid + every cautious rule".into(), widened(&|_| true)),
        (
            "grid + coverage 0.5".into(),
            widened(&|p| p.coverage == 0.5 && p.uncertainty == 0.0),
        ),
        (
            "grid + coverage 1".into(),
            widened(&|p| p.coverage == 1.0 && p.uncertainty == 0.0),
        ),
        (
            "grid + uncertainty 1".into(),
            widened(&|p| p.coverage == 0.0 && p.uncertainty == 1.0),
        ),
        (
            "grid + uncertainty 2".into(),
            widened(&|p| p.coverage == 0.0 && p.uncertainty == 2.0),
        ),
        (
            "grid + both terms together".into(),
            widened(&|p| p.coverage > 0.0 && p.uncertainty > 0.0),
        ),
    ];
    for (label, subset) in &widenings {
        println!("{label} ({} rules):", subset.len());
        for (key, n) in nested(&inner, &cases, subset) {
            let below = n.classes.iter().filter(|c| c.0 < 0.9).count();
            let worst: Vec<String> = n
                .classes
                .iter()
                .take(3)
                .map(|(x, c)| format!("{c} {x:.3}"))
                .collect();
            println!(
                "  {key}: {} ({} of {} measured), {below} classes below 0.9, worst {}; chosen over every class: {}",
                f(n.pooled),
                n.measured,
                n.cases,
                worst.join(", "),
                grid[n.full].name()
            );
        }
    }
    println!("each rule alone, not nested (measured picks):");
    for (i, rule) in grid.iter().enumerate() {
        let mut by_key: BTreeMap<&str, Vec<Option<f64>>> = BTreeMap::new();
        for c in &cases {
            by_key.entry(&c.key).or_default().push(c.fractions[i]);
        }
        let figs: Vec<String> = by_key
            .into_iter()
            .map(|(k, v)| {
                let (x, m) = gm(v.into_iter());
                format!("{k} {} ({m})", f(x))
            })
            .collect();
        println!("  {}: {}", rule.name(), figs.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(class: &str, fractions: Vec<Option<f64>>) -> Case {
        Case {
            class: class.into(),
            key: "f32 col-major".into(),
            fractions,
        }
    }

    fn scores(v: Vec<(f64, usize, usize)>) -> Scores {
        [("f32 col-major".to_string(), v)].into_iter().collect()
    }

    #[test]
    fn the_held_out_class_is_judged_under_the_rule_the_others_chose() {
        // Rule 1 is better on class a's own cases, but the inner scores
        // without a rank rule 0 first: a is judged under rule 0.
        let inner: HashMap<String, Scores> = [
            ("a".to_string(), scores(vec![(-0.1, 1, 1), (-0.5, 1, 1)])),
            ("b".to_string(), scores(vec![(-0.5, 1, 1), (-0.1, 1, 1)])),
            (String::new(), scores(vec![(-0.4, 2, 2), (-0.2, 2, 2)])),
        ]
        .into_iter()
        .collect();
        let cases = vec![
            case("a", vec![Some(0.5), Some(1.0)]),
            case("b", vec![Some(0.5), None]),
        ];
        let n = &nested(&inner, &cases, &[0, 1])["f32 col-major"];
        // a under rule 0 (0.5); b under rule 1, whose pick is unmeasured.
        assert_eq!(n.measured, 1);
        assert!((n.pooled.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(n.cases, 2);
        assert_eq!(n.classes, vec![(0.5, "a".to_string())]);
        assert_eq!(n.full, 1);
        // Within rule 0 alone, both are judged under it.
        let only = &nested(&inner, &cases, &[0])["f32 col-major"];
        assert_eq!(only.measured, 2);
        assert_eq!(only.full, 0);
    }

    #[test]
    fn a_set_of_left_out_classes_is_fitted_once_whatever_its_order() {
        use sparserl_policies::spmm_records::{SpmmRecord, SpmmRecords};
        use sparserl_rt::ValueType;
        use sparserl_rt::dense::DenseLayout;
        let rec = |class: &str, x: f64| SpmmRecord {
            matrix: format!("m-{class}-{x}"),
            class: class.into(),
            value: ValueType::F32,
            layout: DenseLayout::ColMajor,
            n: 64,
            vector: vec![x],
            measured: vec![(0, 1.0)],
            prior: None,
            prior_head: Vec::new(),
        };
        let all = SpmmRecords {
            source: Vec::new(),
            variants: vec![spmm_space(64, DenseLayout::ColMajor)[0].id()],
            records: vec![rec("a", 0.0), rec("b", 1.0), rec("c", 2.0)],
        };
        let fits = Fits::new(&all);
        let r = &all.records[2];
        let ab = fits.get(r, &["a", "b"]);
        assert!(std::sync::Arc::ptr_eq(&ab, &fits.get(r, &["b", "a"])));
        assert!(!std::sync::Arc::ptr_eq(&ab, &fits.get(r, &["a"])));
        // The fit leaves the classes out: one record remains.
        assert_eq!(ab.nearest(&[0.0], 8).len(), 1);
        assert_eq!(fits.get(r, &["a"]).nearest(&[0.0], 8).len(), 2);
    }

    #[test]
    fn ties_go_to_the_first_rule_and_unmeasured_rules_rank_last() {
        let s = vec![(-0.2, 2, 2), (-0.1, 1, 3), (0.0, 0, 3)];
        assert_eq!(best_of(&s, &[0, 1, 2]), 0);
        assert_eq!(best_of(&s, &[1, 2]), 1);
        let grid = sweep_grid();
        assert_eq!(grid.len(), RULE_GRID.len() + BASES.len() * CAUTIONS.len());
        assert_eq!(&grid[..RULE_GRID.len()], &RULE_GRID[..]);
        assert_eq!(grid[RULE_GRID.len()].name(), "k8-flat-ridge0-cov0.5");
    }
}
