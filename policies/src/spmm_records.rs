//! The SpMM pick from measurements: the benchmark's measured SpMM cases
//! (per case a matrix's features, the width, value type and layout, and the
//! fraction of the case's fastest time each measured variant reached) and a
//! nearest-neighbour ranking over them, which a build without a GPU uses
//! instead of the analytic prior where records of its value type and layout
//! exist.
//!
//! The committed records (`spmm-records.json.gz`, built by `cargo xtask
//! spmm-records build` from the benchmark's reports) are embedded; a
//! leave-one-class-out evaluation (`cargo xtask spmm-records loco`) judges
//! the pick against the prior on the same cases.

use flate2::read::GzDecoder;
use serde::{Deserialize, Serialize};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::SpmmVariant;
use sparserl_rt::{Features, ValueType};
use std::collections::HashMap;
use std::io::Read;
use std::sync::OnceLock;

/// Version of the record pick (part of SpMM cache keys with the prior's).
pub const SPMM_RECORDS_VERSION: &str = "spmm-knn-1";

/// Neighbours a pick averages over.
pub const NEIGHBOURS: usize = 8;

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
        use sha2::{Digest, Sha256};
        let hex: String = Sha256::digest(EMBEDDED)
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{SPMM_RECORDS_VERSION}+{hex}")
    }

    /// Parses gzipped JSON records.
    pub fn from_gz(bytes: &[u8]) -> Result<SpmmRecords, std::io::Error> {
        let mut text = String::new();
        GzDecoder::new(bytes).read_to_string(&mut text)?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// Whether records of `value` and `layout` exist.
    pub fn covers(&self, value: ValueType, layout: DenseLayout) -> bool {
        self.records
            .iter()
            .any(|r| r.value == value && r.layout == layout)
    }

    /// The variants of `space` ranked by their mean fraction of the fastest
    /// over the [`NEIGHBOURS`] records of `value` and `layout` nearest to
    /// `vector` (standardised distance), best first; a variant needs
    /// [`MIN_VOTES`] of them to have measured it. Records of class
    /// `exclude` are left out (leave-one-class-out). Empty when no record
    /// applies.
    pub fn rank(
        &self,
        vector: &[f64],
        value: ValueType,
        layout: DenseLayout,
        space: &[SpmmVariant],
        exclude: Option<&str>,
    ) -> Vec<(SpmmVariant, f64)> {
        let near = self.nearest(vector, value, layout, exclude);
        let mut votes: HashMap<u32, (f64, usize)> = HashMap::new();
        for (_, r) in &near {
            for &(i, frac) in &r.measured {
                let e = votes.entry(i).or_insert((0.0, 0));
                e.0 += f64::from(frac);
                e.1 += 1;
            }
        }
        let mut out: Vec<(SpmmVariant, f64)> = votes
            .into_iter()
            .filter(|(_, (_, k))| *k >= MIN_VOTES)
            .filter_map(|(i, (sum, k))| {
                let v = SpmmVariant::parse(self.variants.get(i as usize)?).ok()?;
                space.contains(&v).then_some((v, sum / k as f64))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        out
    }
}

impl SpmmRecords {
    /// The [`NEIGHBOURS`] records of `value` and `layout` nearest to
    /// `vector` (standardised distance over those records), nearest first,
    /// with their distances; records of class `exclude` left out.
    pub fn nearest(
        &self,
        vector: &[f64],
        value: ValueType,
        layout: DenseLayout,
        exclude: Option<&str>,
    ) -> Vec<(f64, &SpmmRecord)> {
        let pool: Vec<&SpmmRecord> = self
            .records
            .iter()
            .filter(|r| r.value == value && r.layout == layout && r.vector.len() == vector.len())
            .filter(|r| exclude != Some(r.class.as_str()))
            .collect();
        if pool.is_empty() {
            return Vec::new();
        }
        let scale = spreads(&pool, vector.len());
        let mut near: Vec<(f64, &SpmmRecord)> = pool
            .into_iter()
            .map(|r| (distance(&r.vector, vector, &scale), r))
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near.truncate(NEIGHBOURS);
        near
    }
}

/// Standard deviation per dimension over `pool` (1 where it is 0).
fn spreads(pool: &[&SpmmRecord], dims: usize) -> Vec<f64> {
    let n = pool.len() as f64;
    (0..dims)
        .map(|d| {
            let mean = pool.iter().map(|r| r.vector[d]).sum::<f64>() / n;
            let var = pool
                .iter()
                .map(|r| (r.vector[d] - mean).powi(2))
                .sum::<f64>()
                / n;
            if var > 1e-18 { var.sqrt() } else { 1.0 }
        })
        .collect()
}

fn distance(a: &[f64], b: &[f64], scale: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .zip(scale)
        .map(|((x, y), s)| ((x - y) / s).powi(2))
        .sum::<f64>()
        .sqrt()
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

#[cfg(test)]
mod tests;
