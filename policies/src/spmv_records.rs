//! The SpMV measurements a build without a GPU consults where the learned
//! policy is unsure: per training record its features and every measured
//! policy-space variant's fraction of the best, embedded from
//! `spmv-records.json.gz` (built by `cargo xtask spmv-records` from the
//! training datasets). [`unsure_pick`] is the no-GPU SpMV pick: the learned
//! policy's risk-adjusted pick where its most probable variant has
//! probability [`UNSURE_BELOW`] or more, else the records' knob pick
//! ([`crate::knob_pick`]). Leave-one-class-out judges it as
//! `unsure0.4-knob16` (`docs/policy/policy-loco-h200-with-families5-knob.md`).

use crate::Proposal;
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
/// records decide. Of 0 (the risk pick alone), 0.2 and 0.4, a
/// leave-one-class-out selection over the other classes chooses 0.4 for
/// every held-out class.
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
        use sha2::{Digest, Sha256};
        Sha256::digest(EMBEDDED)
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect()
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

/// The id of the no-GPU SpMV pick's rule and records, for cache keys.
pub fn unsure_rule_id() -> String {
    format!(
        "unsure{UNSURE_BELOW}-knob{}+{}:{}",
        crate::knob_pick::NEIGHBOURS,
        SpmvRecords::embedded_fingerprint(),
        rule_id(&DEFAULT_RULE)
    )
}

/// The no-GPU SpMV pick of `policy` (see the module documentation) over
/// the embedded records; its `score` is the cost head's predicted fraction
/// of copy bandwidth.
pub fn unsure_pick(
    policy: &LearnedPolicy,
    features: &Features,
    value: ValueType,
) -> Option<Proposal> {
    unsure_pick_with(
        policy,
        features,
        value,
        UNSURE_BELOW,
        embedded_knob_pick(),
        &|_| true,
    )
}

/// The risk pick of `policy` among `runnable` variants where its most
/// probable variant has probability `below` or more, else the runnable
/// variant `knobs` scores best (the risk pick without `knobs` or a score).
/// What [`unsure_pick`] ships and leave-one-class-out judges
/// (`unsure<P>-knob16`, with knob picks fitted without the held-out class).
pub fn unsure_pick_with(
    policy: &LearnedPolicy,
    features: &Features,
    value: ValueType,
    below: f64,
    knobs: Option<&KnobPick<'_, '_>>,
    runnable: &dyn Fn(&Variant) -> bool,
) -> Option<Proposal> {
    let top = policy
        .variant_probs(features, value)
        .iter()
        .map(|p| p.1)
        .fold(0.0, f64::max);
    let risk = || policy.pick_with(features, value, &DEFAULT_RULE, runnable);
    let Some(knobs) = knobs.filter(|_| top < below) else {
        return risk();
    };
    match knobs.best(&features.to_vec(), value, runnable) {
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
