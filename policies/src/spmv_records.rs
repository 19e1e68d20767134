//! The SpMV measurements a build without a GPU picks from: per training
//! record its features and every measured policy-space variant's fraction
//! of the best, embedded from `spmv-records.json.gz` (built by
//! `cargo xtask spmv-records` from the training datasets), and the forest
//! trained on them, embedded from `spmv-forest.json.gz`
//! (`cargo xtask spmv-forest build`). [`no_gpu_pick`] is the no-GPU SpMV
//! pick: the records' pick ([`RecordsPick`]: the blend of the forest's and
//! the knob pick's scores, [`crate::forest_pick::blend`]), the learned
//! policy's risk-adjusted pick only where the records do not load or score
//! no runnable variant. Leave-one-class-out judges it as `forest-knob16`
//! (`docs/policy/policy-loco-h200-with-families5-forest.md`); the switch
//! it replaced (the records only where the policy is unsure,
//! [`unsure_pick_with`] with [`UNSURE_BELOW`]) is judged beside it.

use crate::Proposal;
use crate::forest_pick::{ForestPick, best_of, blend};
use crate::knn::NeighbourPick;
use crate::knob_pick::KnobPick;
use crate::net::{LearnedPolicy, policy_space};
use crate::pick::{DEFAULT_RULE, rule_id};
use crate::prepared::Prepared;
use flate2::read::GzDecoder;
use serde::{Deserialize, Serialize};
use sparserl_rt::{Features, Strategy, ValueType, Variant};
use std::io::Read;
use std::sync::OnceLock;

/// Below this probability of the policy's most probable variant the
/// records decided in the former no-GPU pick (`unsure0.4-knob16`, judged
/// beside the shipped one).
pub const UNSURE_BELOW: f64 = 0.4;

/// One training record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmvRecord {
    /// Matrix name.
    pub name: String,
    /// Structure class.
    pub class: String,
    /// Value type.
    pub value: ValueType,
    /// The 18 features ([`Features::NAMES`] order).
    pub features: Vec<f64>,
    /// (index into [`SpmvRecords::variants`], fraction of the best; -1 for
    /// a wrong result, 0 for a strategy the matrix has no layout for).
    pub measured: Vec<(u32, f32)>,
    /// Strategies whose layout the matrix lacks.
    pub cannot_run: Vec<Strategy>,
}

/// The records and the variant ids they index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmvRecords {
    /// The datasets they come from (file names and sha256).
    pub source: Vec<String>,
    /// Variant ids.
    pub variants: Vec<String>,
    /// The records.
    pub records: Vec<SpmvRecord>,
}

/// The committed records, gzipped JSON.
const EMBEDDED: &[u8] = include_bytes!("../spmv-records.json.gz");

/// The forest trained on them, gzipped JSON.
const EMBEDDED_FOREST: &[u8] = include_bytes!("../spmv-forest.json.gz");

/// What the no-GPU pick consults (and, in the judged former rule, only
/// where the policy is unsure): the knob pick and, where one loads, the forest.
#[derive(Debug, Clone, Copy)]
pub struct RecordsPick<'p, 'k, 'a> {
    /// The knob pick.
    pub knob: &'p KnobPick<'k, 'a>,
    /// The forest pick (`None`: the knob pick alone).
    pub forest: Option<&'p ForestPick>,
}

impl RecordsPick<'_, '_, '_> {
    /// The index into [`policy_space`] of the runnable variant the records
    /// score best, if any is scored.
    pub fn best(
        &self,
        features: &[f64],
        value: ValueType,
        runnable: &dyn Fn(&Variant) -> bool,
    ) -> Option<usize> {
        let knob = self.knob.scores(features, value);
        let scores = match self.forest {
            Some(f) => blend(&f.space_scores(features, value), &knob),
            None => knob,
        };
        best_of(&scores, runnable)
    }
}

/// Parses a gzipped forest pick and checks it against the feature count.
pub fn forest_from_gz(bytes: &[u8]) -> Result<ForestPick, std::io::Error> {
    let mut text = String::new();
    GzDecoder::new(bytes).read_to_string(&mut text)?;
    let pick: ForestPick = serde_json::from_str(&text).map_err(std::io::Error::other)?;
    if !pick.valid(Features::NAMES.len()) {
        return Err(std::io::Error::other("the forest is malformed"));
    }
    Ok(pick)
}

/// The first 16 hex digits of the sha256 of `bytes` (how records files and
/// the forest trained on them are named).
pub fn fingerprint_of(bytes: &[u8]) -> String {
    crate::provenance::sha256_hex(bytes)[..16].to_string()
}

impl SpmvRecords {
    /// Compact records of `prepared` (rewards rounded to f32).
    pub fn from_prepared(prepared: &[Prepared], source: Vec<String>) -> SpmvRecords {
        let records = prepared
            .iter()
            .map(|p| SpmvRecord {
                name: p.name.clone(),
                class: p.class.clone(),
                value: p.value,
                features: p.features.clone(),
                measured: p
                    .measured
                    .iter()
                    .enumerate()
                    .filter_map(|(j, m)| Some((j as u32, (*m)? as f32)))
                    .collect(),
                cannot_run: p.cannot_run.clone(),
            })
            .collect();
        SpmvRecords {
            source,
            variants: policy_space().iter().map(Variant::id).collect(),
            records,
        }
    }

    /// The records as [`Prepared`] over today's policy space (variants
    /// it no longer holds are dropped, new ones unmeasured).
    pub fn prepared(&self) -> Vec<Prepared> {
        let space = policy_space();
        let index: Vec<Option<usize>> = self
            .variants
            .iter()
            .map(|id| space.iter().position(|v| v.id() == *id))
            .collect();
        self.records
            .iter()
            .map(|r| {
                let mut measured = vec![None; space.len()];
                for &(i, f) in &r.measured {
                    if let Some(Some(j)) = index.get(i as usize) {
                        measured[*j] = Some(f64::from(f));
                    }
                }
                Prepared {
                    name: r.name.clone(),
                    class: r.class.clone(),
                    value: r.value,
                    features: r.features.clone(),
                    best: 0.0,
                    measured,
                    cannot_run: r.cannot_run.clone(),
                }
            })
            .collect()
    }

    /// Parses gzipped JSON records.
    pub fn from_gz(bytes: &[u8]) -> Result<SpmvRecords, std::io::Error> {
        let mut text = String::new();
        GzDecoder::new(bytes).read_to_string(&mut text)?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// The first 16 hex digits of the embedded file's sha256.
    pub fn embedded_fingerprint() -> String {
        fingerprint_of(EMBEDDED)
    }

    /// The first 16 hex digits of the embedded forest's sha256.
    pub fn embedded_forest_fingerprint() -> String {
        fingerprint_of(EMBEDDED_FOREST)
    }
}

/// The knob pick over the embedded records, built on first use; `None`
/// if they do not parse or hold no record.
fn embedded_knob_pick() -> Option<&'static KnobPick<'static, 'static>> {
    static PREPARED: OnceLock<Vec<Prepared>> = OnceLock::new();
    static KNN: OnceLock<NeighbourPick<'static>> = OnceLock::new();
    static KNOBS: OnceLock<Option<KnobPick<'static, 'static>>> = OnceLock::new();
    KNOBS
        .get_or_init(|| {
            let prepared = PREPARED.get_or_init(|| {
                SpmvRecords::from_gz(EMBEDDED)
                    .map(|r| r.prepared())
                    .unwrap_or_default()
            });
            if prepared.is_empty() {
                return None;
            }
            let knn = KNN.get_or_init(|| {
                let all: Vec<&Prepared> = prepared.iter().collect();
                NeighbourPick::new(&all, crate::knob_pick::NEIGHBOURS)
            });
            Some(KnobPick::new(knn, None))
        })
        .as_ref()
}

/// The embedded forest pick, parsed on first use; `None` if it does not
/// load (the knob pick then decides alone).
fn embedded_forest() -> Option<&'static ForestPick> {
    static FOREST: OnceLock<Option<ForestPick>> = OnceLock::new();
    FOREST
        .get_or_init(|| forest_from_gz(EMBEDDED_FOREST).ok())
        .as_ref()
}

/// The embedded records' pick, if the records load.
fn embedded_records_pick() -> Option<RecordsPick<'static, 'static, 'static>> {
    embedded_knob_pick().map(|knob| RecordsPick {
        knob,
        forest: embedded_forest(),
    })
}

/// The id of the no-GPU SpMV pick's rule, forest and records, for cache
/// keys (`knob16` alone when the forest does not load; the risk rule of the
/// fallback last).
pub fn no_gpu_rule_id() -> String {
    let forest = match embedded_forest() {
        Some(_) => format!("forest-{}-", SpmvRecords::embedded_forest_fingerprint()),
        None => String::new(),
    };
    format!(
        "records-{forest}knob{}+{}:{}",
        crate::knob_pick::NEIGHBOURS,
        SpmvRecords::embedded_fingerprint(),
        rule_id(&DEFAULT_RULE)
    )
}

/// The no-GPU SpMV pick of `policy` (see the module documentation) over
/// the embedded records; its `score` is the cost head's predicted fraction
/// of copy bandwidth.
pub fn no_gpu_pick(
    policy: &LearnedPolicy,
    features: &Features,
    value: ValueType,
) -> Option<Proposal> {
    // Below an infinite probability: the records always decide first.
    unsure_pick_with(
        policy,
        features,
        value,
        f64::INFINITY,
        embedded_records_pick().as_ref(),
        &|_| true,
    )
}

/// The risk pick of `policy` among `runnable` variants where its most
/// probable variant has probability `below` or more, else the runnable
/// variant `records` scores best (the risk pick without `records` or a
/// score). [`no_gpu_pick`] ships it with `below` infinite (the records
/// always first); leave-one-class-out judges it with the records' picks
/// fitted without the held-out class (`unsure<P>-forest-knob16`,
/// `unsure<P>-knob16` without the forest).
pub fn unsure_pick_with(
    policy: &LearnedPolicy,
    features: &Features,
    value: ValueType,
    below: f64,
    records: Option<&RecordsPick<'_, '_, '_>>,
    runnable: &dyn Fn(&Variant) -> bool,
) -> Option<Proposal> {
    let top = policy
        .variant_probs(features, value)
        .iter()
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let risk = || policy.pick_with(features, value, &DEFAULT_RULE, runnable);
    let Some(records) = records.filter(|_| top < below) else {
        return risk();
    };
    match records.best(&features.to_vec(), value, runnable) {
        Some(j) => {
            let variant = policy_space()[j];
            Some(Proposal {
                variant,
                score: policy.predicted_fraction(features, value, &variant),
            })
        }
        None => risk(),
    }
}

#[cfg(test)]
mod tests;
