//! The SpMM pick from measurements: the benchmark's measured SpMM cases
//! (per case a matrix's features, the width, value type and layout, and the
//! fraction of the case's fastest time each measured variant reached) and a
//! nearest-neighbour ranking over them, which a build without a GPU uses
//! instead of the analytic prior where records of its value type and layout
//! exist. The ranking blends the nearest records' rank-weighted mean
//! fraction with a per-variant ridge regression of the log fraction on the
//! matrix features and a regression over the variants' knobs
//! ([`crate::spmm_model`], [`crate::spmm_knobs`]).
//!
//! The committed records (`spmm-records.json.gz`, built by `cargo xtask
//! spmm-records build` from the benchmark's reports) are embedded; a
//! leave-one-class-out evaluation (`cargo xtask spmm-records loco`) judges
//! the pick against the prior on the same cases.

use crate::spmm_model::{SpmmModel, pick_rule};
use flate2::read::GzDecoder;
use serde::{Deserialize, Serialize};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::SpmmVariant;
use sparserl_rt::{Features, ValueType};
use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Version of the record pick (part of SpMM cache keys with the prior's).
pub const SPMM_RECORDS_VERSION: &str = "spmm-blend-6";

/// Nearest records among which a variant must gather [`MIN_VOTES`].
pub const NEIGHBOURS: usize = 8;

/// Variants of the records' ranking a measured search tries before the
/// prior's: leave-one-class-out, the best measured of that order's first 16
/// is 0.992-0.995 of the case's fastest, of the prior's first 16 0.961-0.987.
pub const SEARCH_LEAD: usize = 8;

/// Neighbours that must have measured a variant for it to be ranked.
pub const MIN_VOTES: usize = 3;

/// One measured case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmmRecord {
    /// Matrix name.
    pub matrix: String,
    /// Its structure class.
    pub class: String,
    /// Value type.
    pub value: ValueType,
    /// Dense layout.
    pub layout: DenseLayout,
    /// Width N.
    pub n: usize,
    /// [`knn_vector`] of the matrix at width `n`.
    pub vector: Vec<f64>,
    /// (index into [`SpmmRecords::variants`], fraction of the case's fastest
    /// time) for every variant measured correct.
    pub measured: Vec<(u32, f32)>,
    /// The prior's first variant in the run that measured the case (what a
    /// no-GPU build picked then), when the report names it.
    #[serde(default)]
    pub prior: Option<String>,
    /// The prior's first 16 at the record's width and layout (ids), for the
    /// leave-one-class-out's first-16 comparison; empty in older records.
    #[serde(default)]
    pub prior_head: Vec<String>,
}

/// The records and the variant ids they index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpmmRecords {
    /// Where the measurements come from (reports, commits, GPU).
    pub source: Vec<String>,
    /// Variant ids.
    pub variants: Vec<String>,
    /// The cases.
    pub records: Vec<SpmmRecord>,
}

/// The features a pick compares, at width `n`: log sizes, row-length
/// shape (mean, spread, longest over mean, Gini, empty rows), the X-gather
/// locality and log2 n.
pub fn knn_vector(f: &Features, n: usize) -> Vec<f64> {
    vec![
        f.rows.max(1.0).ln(),
        f.cols.max(1.0).ln(),
        f.nnz.max(1.0).ln(),
        f.mean_row.ln_1p(),
        f.cv_row,
        f.max_over_mean.ln_1p(),
        f.gini_row,
        f.empty_share,
        f.x_segments_per_nnz,
        (n.max(1) as f64).log2(),
    ]
}

/// The entries of [`knn_vector`] that measure size (log rows, columns and
/// nonzeros; the width is the last entry).
pub const SIZE_DIMS: [usize; 3] = [0, 1, 2];

/// The committed records, gzipped JSON.
const EMBEDDED: &[u8] = include_bytes!("../spmm-records.json.gz");

impl SpmmRecords {
    /// The embedded records (parsed once); `None` if they do not parse.
    pub fn embedded() -> Option<&'static SpmmRecords> {
        static CELL: OnceLock<Option<SpmmRecords>> = OnceLock::new();
        CELL.get_or_init(|| SpmmRecords::from_gz(EMBEDDED).ok())
            .as_ref()
    }

    /// [`SPMM_RECORDS_VERSION`] and the first 16 hex digits of the embedded
    /// file's sha256: what a cache key needs to change with the records.
    pub fn embedded_fingerprint() -> String {
        let hex = crate::spmv_records::fingerprint_of(EMBEDDED);
        format!("{SPMM_RECORDS_VERSION}+{hex}")
    }

    /// Parses gzipped JSON records.
    pub fn from_gz(bytes: &[u8]) -> Result<SpmmRecords, std::io::Error> {
        let mut text = String::new();
        GzDecoder::new(bytes).read_to_string(&mut text)?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// The class of `matrix`'s records, if it has any (what a benchmark of
    /// that matrix leaves out of the records it searches with).
    pub fn class_of(&self, matrix: &str) -> Option<&str> {
        self.records
            .iter()
            .find(|r| r.matrix == matrix)
            .map(|r| r.class.as_str())
    }

    /// The order a measured search tries `ranked` in (a ranking of the
    /// space, best first, e.g. the prior's): [`interleave`] of the records'
    /// ranking of `ranked` (records of `value` and `layout`, class `exclude`
    /// left out) and `ranked`.
    pub fn search_order(
        &self,
        vector: &[f64],
        value: ValueType,
        layout: DenseLayout,
        ranked: &[SpmmVariant],
        exclude: Option<&str>,
    ) -> Vec<SpmmVariant> {
        let lead: Vec<SpmmVariant> = self
            .rank(vector, value, layout, ranked, exclude)
            .into_iter()
            .map(|p| p.0)
            .collect();
        interleave(&lead, ranked)
    }

    /// Whether records of `value` and `layout` exist.
    pub fn covers(&self, value: ValueType, layout: DenseLayout) -> bool {
        self.records
            .iter()
            .any(|r| r.value == value && r.layout == layout)
    }

    /// The variants of `space` ranked by [`pick_rule`] over the records of
    /// `value` and `layout` (see [`SpmmModel::rank`]), best first. Records
    /// of class `exclude` are left out (leave-one-class-out). Empty when no
    /// record applies.
    pub fn rank(
        &self,
        vector: &[f64],
        value: ValueType,
        layout: DenseLayout,
        space: &[SpmmVariant],
        exclude: Option<&str>,
    ) -> Vec<(SpmmVariant, f64)> {
        let model: Arc<SpmmModel> = match SpmmRecords::embedded() {
            Some(e) if std::ptr::eq(e, self) => {
                embedded_model(e, value, layout, vector.len(), exclude)
            }
            _ => {
                let exclude: Vec<&str> = exclude.into_iter().collect();
                Arc::new(SpmmModel::fit(self, value, layout, vector.len(), &exclude))
            }
        };
        if model.is_empty() {
            return Vec::new();
        }
        model.rank(vector, space, pick_rule(value, layout))
    }
}

/// The model of the embedded `records` for a value type, layout, vector
/// length and left-out class, fitted once: its regressions are the same for
/// every width and every case a build or a benchmark ranks.
fn embedded_model(
    records: &'static SpmmRecords,
    value: ValueType,
    layout: DenseLayout,
    dims: usize,
    exclude: Option<&str>,
) -> Arc<SpmmModel<'static>> {
    type Key = (ValueType, DenseLayout, usize, Option<String>);
    static MODELS: OnceLock<Mutex<HashMap<Key, Arc<SpmmModel<'static>>>>> = OnceLock::new();
    let key = (value, layout, dims, exclude.map(str::to_string));
    let mut models = MODELS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    models
        .entry(key)
        .or_insert_with(|| {
            let exclude: Vec<&str> = exclude.into_iter().collect();
            Arc::new(SpmmModel::fit(records, value, layout, dims, &exclude))
        })
        .clone()
}

/// The no-GPU SpMM pick: the records' first variant where records of
/// `value` and `layout` exist and rank one in `space`, else `None` (the
/// caller falls back to the prior).
pub fn spmm_record_pick(
    f: &Features,
    value: ValueType,
    n: usize,
    layout: DenseLayout,
    space: &[SpmmVariant],
) -> Option<(SpmmVariant, f64)> {
    let records = SpmmRecords::embedded()?;
    records
        .rank(&knn_vector(f, n), value, layout, space, None)
        .into_iter()
        .next()
}

/// The records' first [`SEARCH_LEAD`] and `ranked`'s, alternately (the
/// records' first, then `ranked`'s first, ...), then the rest of `ranked`;
/// no variant twice. Both heads are measured early whatever the budget: the
/// records' pick is the better first guess on most classes, the prior's on
/// the large power-law graphs.
pub fn interleave(records: &[SpmmVariant], ranked: &[SpmmVariant]) -> Vec<SpmmVariant> {
    let mut out: Vec<SpmmVariant> = Vec::with_capacity(ranked.len());
    let mut add = |v: &SpmmVariant| {
        if !out.contains(v) {
            out.push(*v);
        }
    };
    for i in 0..SEARCH_LEAD {
        records
            .get(i)
            .into_iter()
            .chain(ranked.get(i))
            .for_each(&mut add);
    }
    ranked.iter().for_each(&mut add);
    out
}

/// The order a measured SpMM search tries `spmm_space(n, layout)` in: the
/// embedded records' first [`SEARCH_LEAD`] (records of class `exclude` left
/// out; none where no record covers `value` and `layout`) interleaved with
/// the prior's ranking ([`crate::spmm_prior_for`]), then the rest of the
/// prior's ranking ([`interleave`]).
pub fn spmm_search_order(
    f: &Features,
    value: ValueType,
    n: usize,
    layout: DenseLayout,
    exclude: Option<&str>,
) -> Vec<SpmmVariant> {
    let prior = crate::spmm_prior_for(f, value, n, layout);
    match SpmmRecords::embedded() {
        Some(r) => r.search_order(&knn_vector(f, n), value, layout, &prior, exclude),
        None => prior,
    }
}

#[cfg(test)]
mod tests;
