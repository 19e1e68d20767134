//! Leave-one-class-out evaluation (feature `train`): every structure class
//! of a dataset judged by a policy trained without it.
//!
//! Per class `c`: a policy is trained on every record of the other classes
//! ([`crate::train::train`] with `holdout_classes = [c]`), then, on each
//! record of `c`, as fractions of the record's oracle (the best correct
//! measured GB/s within the policy space, as training rewards it):
//!
//! - zero-shot: the no-GPU pick under each [`PickRule`] compared, and the
//!   nearest-neighbour picks of [`crate::knn`] fitted on the same training
//!   records ([`NEIGHBOUR_RULES`]);
//! - template: [`crate::template_rule`];
//! - first 16: the best of the policy's first 16 proposals the matrix can run.
//!
//! A pick the dataset did not measure, or measured incorrect, counts 0 and
//! is counted in `unmeasured`. Records are split into small and large by
//! their compulsory bytes against [`LARGE_BYTES`] (the H200's 60 MB L2).

use crate::dataset::{Dataset, MatrixRecord};
use crate::forest::DEFAULT_FOREST;
use crate::forest_pick::{ForestPick, best_of as best_index};
use crate::knn::{Combine, NeighbourPick};
use crate::knob_pick::KnobPick;
use crate::net::{LearnedPolicy, policy_space};
use crate::pick::PickRule;
use crate::prepared::{Prepared, prepare_all};
use crate::train::{TrainConfig, TrainError, train};
use crate::{Policy, template_rule};
use serde::{Deserialize, Serialize};
use sparserl_rt::{Features, ValueType, Variant};
use std::collections::BTreeMap;

/// Compulsory bytes above which a record counts as large (60 MB, the L2
/// cache of an H200).
pub const LARGE_BYTES: f64 = 60e6;

/// Classes of the committed datasets whose records are generated (those
/// datasets predate [`MatrixRecord::provenance`]): the synthetic families
/// of `xtask collect`'s training and large corpora and of the benchmark's
/// large suite. Every other class there is of real matrices.
pub const GENERATED_CLASSES: [&str; 8] = [
    "stencil",
    "banded",
    "power-law",
    "uniform",
    "block",
    "short-rows",
    "long-rows",
    "skewed",
];

/// Candidates of the first-k column.
pub const FIRST_K: usize = 16;

/// Neighbours per nearest-neighbour pick.
pub const NEIGHBOURS: usize = 8;

/// The nearest-neighbour rules judged beside the [`PickRule`]s:
/// `knn8` the best mean over the 8 nearest training records, `knn8-cautious`
/// the mean minus half the spread, `policy8-knn8` the best mean among the
/// learned policy's first 8 proposals, `risk-knn8-m<M>` the default rule's
/// pick unless the neighbours' mean of the `knn8` pick beats theirs of it by
/// more than M, `knob-knn16` the records' pick with a regression over the
/// variants' knobs ([`crate::knob_pick`]), `unsure<P>-knob16` that pick
/// when the learned policy's most probable variant has probability below P,
/// else the default rule's; `-nnz` the same with the knob regression's
/// inputs also multiplied by the nonzero count; `forest` the records'
/// forest pick ([`crate::forest_pick`]), `forest-knob16` the blend of its
/// and the knob pick's scores ([`crate::forest_pick::blend`]) through the
/// shipped code (`spmv_records::no_gpu_pick`: the risk pick only where the
/// records score no runnable variant), `unsure0.4-forest` /
/// `unsure0.4-forest-knob16` those picks when the policy's most probable
/// variant has probability below 0.4, else the default rule's.
pub const NEIGHBOUR_RULES: [&str; 20] = [
    "knn8",
    "knn8-cautious",
    "policy8-knn8",
    "risk-knn8-m0.1",
    "risk-knn8-m0.25",
    "unsure0.2-knn8",
    "unsure0.4-knn8",
    "near1.5-knn8",
    "near2.5-knn8",
    "risk-world-knn8-x8",
    "risk-world-knn8-x32",
    "knob-knn16",
    "unsure0.2-knob16",
    "unsure0.4-knob16",
    "knob-nnz-knn16",
    "unsure0.4-knob-nnz16",
    "forest",
    "unsure0.4-forest",
    "forest-knob16",
    "unsure0.4-forest-knob16",
];

/// `risk-world-knn8-x<C>`: the default risk rule with the 8 nearest
/// records' mean fraction of each candidate as one more world, counted C
/// times (against the rule's 32 worlds of its own).
const WORLD_COPIES: [usize; 2] = [8, 32];

/// `unsure<P>-knn8`: the `knn8` pick when the learned policy's most
/// probable variant has probability below P, else the default rule's.
const UNSURE: [f64; 2] = [0.2, 0.4];

/// `near<D>-knn8`: the `knn8` pick when the 8 nearest training records lie
/// within a mean standardised distance D, else the default rule's.
const NEAR: [f64; 2] = [1.5, 2.5];

/// The margins of the `risk-knn8-m<M>` rules, in [`NEIGHBOUR_RULES`] order.
const SWITCH_MARGINS: [f64; 2] = [0.1, 0.25];

/// One held-out record under one fold.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LocoRecord {
    /// Matrix name.
    pub matrix: String,
    /// Structure class (the fold's).
    pub class: String,
    /// Value type.
    pub value: ValueType,
    /// `small` or `large` (see [`LARGE_BYTES`]).
    pub size: String,
    /// Whether the matrix is real (not generated).
    pub real: bool,
    /// Training seed of the fold.
    pub seed: u64,
    /// Zero-shot pick per rule name: (variant id, fraction of the oracle).
    pub zero_shot: BTreeMap<String, (String, f64)>,
    /// Rules whose pick the dataset did not measure correct.
    pub unmeasured: Vec<String>,
    /// Template rule's fraction of the oracle.
    pub template: f64,
    /// Best of the first [`FIRST_K`] runnable proposals, fraction of the oracle.
    pub first16: f64,
    /// The same when the 8 nearest training records' best [`KNN_LEAD`]
    /// runnable variants (by their mean fraction) lead and the policy's
    /// proposals fill the rest of the [`FIRST_K`].
    #[serde(default)]
    pub first16_knn: f64,
}

/// Candidates the nearest records contribute to `first16_knn`.
pub const KNN_LEAD: usize = 8;

/// Whether a record's matrix is real: by its provenance, else by
/// [`GENERATED_CLASSES`].
pub fn is_real(rec: &MatrixRecord) -> bool {
    match &rec.provenance {
        Some(p) => !p.is_generated(),
        None => !GENERATED_CLASSES.contains(&rec.class.as_str()),
    }
}

/// Compulsory bytes of one SpMV from a feature vector ([`Features::NAMES`]
/// order): values and 32-bit column indices, row pointers, `x` and `y`.
pub fn compulsory_bytes(features: &[f64], value: ValueType) -> f64 {
    let f = Features::from_slice(features);
    let vs = match value {
        ValueType::F32 => 4.0,
        ValueType::F64 => 8.0,
    };
    f.nnz * (4.0 + vs) + (f.rows + 1.0) * 4.0 + (f.cols + f.rows) * vs
}

/// Measured fraction of the oracle of `v` on `r` (`None`: not measured;
/// an incorrect measurement is 0).
fn fraction(r: &Prepared, v: &Variant) -> Option<f64> {
    let j = policy_space().iter().position(|x| x == v)?;
    r.measured[j].map(|m| m.max(0.0))
}

/// The nearest-neighbour picks of [`NEIGHBOUR_RULES`] on `r`, in order.
fn neighbour_picks(
    knn_fit: &NeighbourPick<'_>,
    knobs: &[KnobPick<'_, '_>; 2],
    forest: &ForestPick,
    policy: &LearnedPolicy,
    r: &Prepared,
    runnable: &dyn Fn(&Variant) -> bool,
) -> [Option<Variant>; 20] {
    let space = policy_space();
    let best_of = |scores: &[f64], among: &mut dyn Iterator<Item = usize>| {
        among
            .filter(|&j| runnable(&space[j]))
            .fold(None::<(usize, f64)>, |b, j| match b {
                Some((_, s)) if s >= scores[j] => b,
                _ => Some((j, scores[j])),
            })
            .map(|(j, _)| space[j])
    };
    let mean = knn_fit.scores(&r.features, r.value, Combine::Mean);
    let cautious = knn_fit.scores(&r.features, r.value, Combine::Cautious);
    let f = Features::from_slice(&r.features);
    let mut top = policy
        .propose(&f, r.value, NEIGHBOURS)
        .into_iter()
        .filter_map(|p| space.iter().position(|v| *v == p.variant));
    let knn = best_of(&mean, &mut (0..space.len()));
    let risk = policy
        .pick_with(&f, r.value, &crate::pick::DEFAULT_RULE, runnable)
        .map(|p| p.variant);
    let score = |v: Option<Variant>| {
        v.and_then(|v| space.iter().position(|x| *x == v))
            .map_or(0.0, |j| mean[j])
    };
    let switch = |m: f64| {
        if score(knn) > score(risk) + m {
            knn
        } else {
            risk
        }
    };
    let top_prob = policy
        .variant_probs(&f, r.value)
        .iter()
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let unsure = |p: f64| if top_prob < p { knn } else { risk };
    let [knob, knob_nnz] = knobs.each_ref().map(|k| knob_best(k, r, runnable));
    let forest_scores = forest.space_scores(&r.features, r.value);
    let tree = best_index(&forest_scores, runnable).map(|j| space[j]);
    // The shipped code (`spmv_records::unsure_pick_with`).
    let shipped = |p: f64, knob: &KnobPick<'_, '_>, forest: Option<&ForestPick>| {
        let records = crate::spmv_records::RecordsPick { knob, forest };
        crate::spmv_records::unsure_pick_with(policy, &f, r.value, p, Some(&records), runnable)
            .map(|p| p.variant)
    };
    let distance = knn_fit.mean_distance(&r.features, r.value);
    let near = |d: f64| if distance < d { knn } else { risk };
    let extra = |v: &Variant| {
        let j = space.iter().position(|x| x == v)?;
        (mean[j] > 0.0).then_some(mean[j])
    };
    let world = |copies: usize| {
        let crate::pick::PickRule::Risk(rule) = crate::pick::DEFAULT_RULE else {
            return risk;
        };
        policy
            .pick_with_world(&f, r.value, &rule, runnable, &extra, copies)
            .map(|p| p.variant)
    };
    [
        knn,
        best_of(&cautious, &mut (0..space.len())),
        best_of(&mean, &mut top),
        switch(SWITCH_MARGINS[0]),
        switch(SWITCH_MARGINS[1]),
        unsure(UNSURE[0]),
        unsure(UNSURE[1]),
        near(NEAR[0]),
        near(NEAR[1]),
        world(WORLD_COPIES[0]),
        world(WORLD_COPIES[1]),
        knob,
        shipped(UNSURE[0], &knobs[0], None),
        shipped(UNSURE[1], &knobs[0], None),
        knob_nnz,
        shipped(UNSURE[1], &knobs[1], None),
        tree,
        if top_prob < UNSURE[1] {
            tree.or(risk)
        } else {
            risk
        },
        // The shipped no-GPU pick (`spmv_records::no_gpu_pick`): the
        // records always first.
        shipped(f64::INFINITY, &knobs[0], Some(forest)),
        shipped(UNSURE[1], &knobs[0], Some(forest)),
    ]
}

/// The runnable variant `pick` scores best on `r`, if it scores any.
fn knob_best(
    pick: &KnobPick<'_, '_>,
    r: &Prepared,
    runnable: &dyn Fn(&Variant) -> bool,
) -> Option<Variant> {
    pick.best(&r.features, r.value, runnable)
        .map(|j| policy_space()[j])
}

/// [`FIRST_K`] candidates: the nearest records' best [`KNN_LEAD`] of
/// `proposals` (the runnable space in the policy's order) by their mean
/// fraction, then `proposals` in order, without repeats.
fn knn_led(knn: &NeighbourPick<'_>, r: &Prepared, proposals: &[Variant]) -> Vec<Variant> {
    let space = policy_space();
    let mean = knn.scores(&r.features, r.value, Combine::Mean);
    let score = |v: &Variant| space.iter().position(|x| x == v).map_or(0.0, |j| mean[j]);
    let mut lead: Vec<Variant> = proposals.to_vec();
    lead.sort_by(|a, b| score(b).total_cmp(&score(a)));
    lead.truncate(KNN_LEAD);
    for v in proposals {
        if lead.len() >= FIRST_K {
            break;
        }
        if !lead.contains(v) {
            lead.push(*v);
        }
    }
    lead
}

/// The record picks of one fold, fitted on its training records.
struct RecordPicks<'k, 'a> {
    knn: &'k NeighbourPick<'a>,
    knobs: [KnobPick<'k, 'a>; 2],
    forest: ForestPick,
}

/// Evaluates `policy` (and the record picks) on one prepared record.
fn eval_record(
    policy: &LearnedPolicy,
    picks: &RecordPicks<'_, '_>,
    r: &Prepared,
    rec: &MatrixRecord,
    rules: &[(String, PickRule)],
    seed: u64,
) -> LocoRecord {
    let f = Features::from_slice(&r.features);
    let runnable = |v: &Variant| !r.cannot_run.contains(&v.strategy);
    let mut zero_shot = BTreeMap::new();
    let mut unmeasured = Vec::new();
    let neighbours = NEIGHBOUR_RULES
        .iter()
        .map(|n| n.to_string())
        .zip(neighbour_picks(
            picks.knn,
            &picks.knobs,
            &picks.forest,
            policy,
            r,
            &runnable,
        ));
    let learned = rules.iter().map(|(name, rule)| {
        let pick = policy.pick_with(&f, r.value, rule, &runnable);
        (name.clone(), pick.map(|p| p.variant))
    });
    for (name, pick) in neighbours.chain(learned) {
        let frac = pick.and_then(|v| fraction(r, &v));
        if frac.is_none_or(|x| x <= 0.0) {
            unmeasured.push(name.clone());
        }
        let id = pick.map(|v| v.id()).unwrap_or_default();
        zero_shot.insert(name, (id, frac.unwrap_or(0.0)));
    }
    let proposals: Vec<Variant> = policy
        .propose(&f, r.value, policy_space().len())
        .into_iter()
        .map(|p| p.variant)
        .filter(|v| runnable(v))
        .collect();
    let best = |vs: &[Variant]| vs.iter().filter_map(|v| fraction(r, v)).fold(0.0, f64::max);
    let first16 = best(&proposals[..FIRST_K.min(proposals.len())]);
    let first16_knn = best(&knn_led(picks.knn, r, &proposals));
    let large = compulsory_bytes(&r.features, r.value) > LARGE_BYTES;
    LocoRecord {
        matrix: r.name.clone(),
        class: r.class.clone(),
        value: r.value,
        size: if large { "large" } else { "small" }.into(),
        real: is_real(rec),
        seed,
        zero_shot,
        unmeasured,
        template: fraction(r, &template_rule(&f)).unwrap_or(0.0),
        first16,
        first16_knn,
    }
}

/// Trains without `class` and evaluates that class's records.
pub fn fold(
    ds: &Dataset,
    class: &str,
    base: &TrainConfig,
    rules: &[(String, PickRule)],
) -> Result<Vec<LocoRecord>, TrainError> {
    let cfg = TrainConfig {
        holdout_names: Vec::new(),
        holdout_classes: vec![class.to_string()],
        ..base.clone()
    };
    let out = train(ds, &cfg, |_| {})?;
    let policy = LearnedPolicy::new(out.file)
        .map_err(|e| TrainError::Data(format!("fold {class}: export does not load: {e}")))?;
    let recs: BTreeMap<(String, ValueType), &MatrixRecord> = ds
        .matrices
        .iter()
        .map(|m| ((m.name.clone(), m.value), m))
        .collect();
    let prepared = prepare_all(ds);
    let train_recs: Vec<&Prepared> = prepared.iter().filter(|r| r.class != class).collect();
    let knn = NeighbourPick::new(&train_recs, NEIGHBOURS);
    // The second regression also multiplies its inputs by the nonzero count.
    let nnz = Features::NAMES.iter().position(|n| *n == "nnz");
    let picks = RecordPicks {
        knn: &knn,
        knobs: [KnobPick::new(&knn, None), KnobPick::new(&knn, nnz)],
        forest: ForestPick::fit(&train_recs, &DEFAULT_FOREST, &format!("fold {class}")),
    };
    Ok(prepared
        .iter()
        .filter(|r| r.class == class)
        .filter_map(|r| {
            let rec = recs.get(&(r.name.clone(), r.value))?;
            Some(eval_record(&policy, &picks, r, rec, rules, cfg.seed))
        })
        .collect())
}

/// Classes of a dataset with at least one record training can use, sorted.
pub fn classes(ds: &Dataset) -> Vec<String> {
    let mut c: Vec<String> = prepare_all(ds).into_iter().map(|r| r.class).collect();
    c.sort();
    c.dedup();
    c
}

pub mod report;

/// The whole report: description, summary (the `primary` rule's headline
/// numbers at the top level, every rule's under `by_rule`), the class list,
/// per-class rows and every record.
pub fn report(
    records: &[LocoRecord],
    rules: &[String],
    primary: &str,
    meta: serde_json::Value,
) -> serde_json::Value {
    let mut summary = report::rule_summary(records, primary);
    let by_rule: serde_json::Map<String, serde_json::Value> = rules
        .iter()
        .map(|r| (r.clone(), report::rule_summary(records, r)))
        .collect();
    summary["rule"] = primary.into();
    summary["by_rule"] = by_rule.into();
    let mut class_list: Vec<&str> = records.iter().map(|r| r.class.as_str()).collect();
    class_list.sort();
    class_list.dedup();
    serde_json::json!({
        "description": "Leave-one-class-out: each structure class judged by a policy trained without it, on the committed measurements (fractions of each record's oracle within the policy space; a pick the dataset did not measure correct counts 0).",
        "meta": meta,
        "summary": summary,
        "class_list": class_list,
        "classes": report::class_rows(records, rules),
        "records": records,
    })
}
