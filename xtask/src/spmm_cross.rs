//! `cargo xtask spmm-records cross`: the no-GPU picks of two sets of SpMM
//! records judged on the measurements of one of them. Each case of `--on`
//! is picked leave-one-class-out (its class's records left out) from either
//! set, under the rules a leave-one-class-out over that set's own records
//! chooses; a key (value type and layout) a set has no records of gets the
//! prior's first variant, as a build embedding that set would. The figure
//! of a pick is its fraction of the case's fastest measured time in `--on`.

use crate::spmm_loco::{f as fmt, gm, load};
use crate::spmm_records::{Key, choose_rules, fraction};
use anyhow::Result;
use sparserl_policies::SpmmRecords;
use sparserl_policies::spmm_model::SpmmModel;
use sparserl_rt::spmm::{SpmmVariant, spmm_space};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Per case of `on`, the fraction of the pick from `from` (`None` where the
/// pick was not measured).
fn picks(on: &SpmmRecords, from: &SpmmRecords) -> Vec<Option<f64>> {
    let rules = choose_rules(from, None);
    let mut models: HashMap<(&str, Key), SpmmModel> = HashMap::new();
    on.records
        .iter()
        .map(|r| {
            let key = (r.value, r.layout);
            let model = models.entry((r.class.as_str(), key)).or_insert_with(|| {
                SpmmModel::fit(from, r.value, r.layout, r.vector.len(), &[&r.class])
            });
            let space = spmm_space(r.n, r.layout);
            let pick = match rules.get(&key) {
                Some(rule) if !model.is_empty() => {
                    model.rank(&r.vector, &space, *rule).first().map(|p| p.0)
                }
                _ => r.prior.as_deref().and_then(|p| SpmmVariant::parse(p).ok()),
            };
            pick.and_then(|p| fraction(on, r, &p))
        })
        .collect()
}

fn geomean(xs: &[f64]) -> Option<f64> {
    gm(xs.iter().copied().map(Some)).0
}

/// Runs the comparison and prints it per key: each pick's geomean where
/// measured, both where both were measured, and the classes below 0.9.
pub fn run(on: &Path, against: &Path) -> Result<()> {
    let on_records = load(on)?;
    let other = load(against)?;
    let own = picks(&on_records, &on_records);
    let theirs = picks(&on_records, &other);
    type Pair = (Vec<f64>, Vec<f64>, Vec<(f64, f64)>);
    let mut by_key: BTreeMap<String, Pair> = BTreeMap::new();
    let mut by_class: BTreeMap<(String, String), (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for ((r, a), b) in on_records.records.iter().zip(&own).zip(&theirs) {
        let key = format!("{} {}", r.value, r.layout.as_str());
        let e = by_key.entry(key.clone()).or_default();
        let c = by_class.entry((key, r.class.clone())).or_default();
        e.0.extend(a);
        e.1.extend(b);
        c.0.extend(a);
        c.1.extend(b);
        if let (Some(a), Some(b)) = (a, b) {
            e.2.push((*a, *b));
        }
    }
    println!(
        "picks judged on {} against {}",
        on.display(),
        against.display()
    );
    for (key, (a, b, both)) in &by_key {
        let below = |own: bool| {
            by_class
                .iter()
                .filter(|((k, _), _)| k == key)
                .filter(|(_, v)| geomean(if own { &v.0 } else { &v.1 }).is_some_and(|g| g < 0.9))
                .count()
        };
        let (ba, bb): (Vec<f64>, Vec<f64>) = both.iter().copied().unzip();
        println!(
            "{key}: own records {} ({} measured, {} classes below 0.9), other records {} ({} measured, {} classes below 0.9); both measured ({}): {} against {}",
            fmt(geomean(a)),
            a.len(),
            below(true),
            fmt(geomean(b)),
            b.len(),
            below(false),
            both.len(),
            fmt(geomean(&ba)),
            fmt(geomean(&bb)),
        );
    }
    Ok(())
}
