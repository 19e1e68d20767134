//! Report types of `bench spmm` and the summary.

use crate::common;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One cuSPARSE algorithm's outcome on one case.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AlgResult {
    /// Enumerator name.
    pub alg: String,
    /// cuSPARSE accepted the layout / value type (buffer size and setup).
    pub supported: bool,
    /// Prepared with `cusparseSpMM_preprocess`.
    pub preprocessed: bool,
    /// Passed the float64 check.
    pub correct: bool,
    /// Largest per-row relative error of the check.
    pub max_row_rel_err: Option<f64>,
    /// Median microseconds per SpMM.
    pub median_us: Option<f64>,
    /// Why it was skipped or failed, or anything notable.
    pub error: Option<String>,
}

/// One measured variant of ours on one case.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct OursResult {
    /// Variant id.
    pub variant: String,
    /// Passed the float64 check.
    pub correct: bool,
    /// Largest per-row relative error of the check.
    pub max_row_rel_err: Option<f64>,
    /// Median microseconds.
    pub median_us: Option<f64>,
    /// Why it failed.
    pub error: Option<String>,
    /// The search phase that measured it (`explore`, `climb`, `final`,
    /// `verify`; none in the sweep and in reports that predate it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
}

/// One matrix, value type, layout and width `n`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Matrix name.
    pub matrix: String,
    /// Structure class.
    pub class: String,
    /// `large` (generated graphs) or `real`.
    pub suite: String,
    /// `latency` (compulsory bytes within L2) or `bandwidth`.
    pub bound: String,
    /// Rows of A.
    pub rows: usize,
    /// Columns of A.
    pub cols: usize,
    /// Nonzeros of A.
    pub nnz: usize,
    /// `f32` / `f64`.
    pub value: String,
    /// `row-major` / `col-major` (X and Y).
    pub layout: String,
    /// Columns of X and Y.
    pub n: usize,
    /// Compulsory bytes: `nnz (v + 4) + (rows + 1) 4 + (cols + rows) n v`.
    pub bytes: u64,
    /// Our time: the product's choice (see `ours_source`), microseconds.
    pub ours_us: Option<f64>,
    /// Our GB/s of the compulsory bytes.
    pub ours_gbs: Option<f64>,
    /// The variant behind `ours_us`.
    pub ours_variant: Option<String>,
    /// Each fresh re-time of that variant (a median over `--reps` each),
    /// microseconds: `ours_us` is their median (empty in reports that predate it).
    #[serde(default)]
    pub ours_retimes_us: Vec<f64>,
    /// How `ours_variant` was chosen (`search`, `policy`, `prior`, ...).
    pub ours_source: Option<String>,
    /// Largest per-row relative error of ours.
    pub ours_max_row_rel_err: Option<f64>,
    /// Why ours has no time, if it has none.
    pub ours_error: Option<String>,
    /// The SpMM prior's first variant (what a build without a GPU ships).
    pub prior_variant: Option<String>,
    /// Its time in the search (its exploration measurement), microseconds.
    pub prior_us: Option<f64>,
    /// Seconds of measurements the search spent.
    pub search_seconds: Option<f64>,
    /// Distinct candidates the search measured.
    pub search_candidates: Option<usize>,
    /// Why the search's exploration stopped.
    pub search_stopped: Option<String>,
    /// Every measurement of the search, in order.
    pub search_trials: Vec<OursResult>,
    /// Fastest correct variant of the whole space (when every variant was
    /// measured, `--sweep`), microseconds.
    pub best_us: Option<f64>,
    /// That variant.
    pub best_variant: Option<String>,
    /// `SpmmVariant::FALLBACK` (what runs untuned) at the full repetitions
    /// when it was a finalist, else its sweep time, microseconds.
    pub fallback_us: Option<f64>,
    /// Every variant of ours measured on this case.
    pub variants: Vec<OursResult>,
    /// Best correct cuSPARSE algorithm, microseconds.
    pub cusparse_us: Option<f64>,
    /// Its GB/s of the compulsory bytes.
    pub cusparse_gbs: Option<f64>,
    /// That algorithm.
    pub cusparse_alg: Option<String>,
    /// Each fresh re-time of that algorithm, microseconds: `cusparse_us` is
    /// their median (empty in reports that predate it).
    #[serde(default)]
    pub cusparse_retimes_us: Vec<f64>,
    /// Every cuSPARSE algorithm tried.
    pub cusparse_algs: Vec<AlgResult>,
    /// Why no cuSPARSE algorithm has a time, if none has.
    pub cusparse_error: Option<String>,
    /// The X-row gather floor (`floor.cu`), microseconds.
    pub floor_us: Option<f64>,
    /// Its GB/s of the compulsory bytes.
    pub floor_gbs: Option<f64>,
    /// cuSPARSE / ours time.
    pub speedup: Option<f64>,
    /// cuSPARSE / best-of-space time.
    pub speedup_best: Option<f64>,
    /// cuSPARSE / prior-pick time.
    pub speedup_prior: Option<f64>,
    /// ours GB/s / copy bandwidth, percent.
    pub pct_copy: Option<f64>,
    /// floor / ours time (above 1: ours reuses X rows beyond the caches).
    pub ours_vs_floor: Option<f64>,
    /// floor / cuSPARSE time.
    pub cusparse_vs_floor: Option<f64>,
    /// The renumbering ours ran on (`--reorder`; none: the given order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<String>,
    /// Host seconds computing that renumbering and permuting A.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder_host_seconds: Option<f64>,
    /// X into the stored order plus Y back into the given one
    /// (`dense_to_internal` + `dense_to_user`), microseconds per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convert_us: Option<f64>,
    /// cuSPARSE / (ours + conversions) time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup_with_convert: Option<f64>,
    /// Anything else worth knowing.
    pub notes: Vec<String>,
    /// Seconds this case took.
    pub seconds: f64,
}

/// A case that was not run, and why.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    /// Matrix name.
    pub matrix: String,
    /// Suite.
    pub suite: String,
    /// What was not run (`f32 row-major n = 64`, or `all`).
    pub what: String,
    /// Why.
    pub reason: String,
}

/// The summary keys the issue asks for, plus the splits.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Geometric mean of cuSPARSE / ours time over every case.
    pub geomean_speedup_spmm: Option<f64>,
    /// Same at n = 32.
    pub geomean_speedup_spmm_n32: Option<f64>,
    /// Same at n = 64.
    pub geomean_speedup_spmm_n64: Option<f64>,
    /// Same at n = 128.
    pub geomean_speedup_spmm_n128: Option<f64>,
    /// Same over n = 32, 64 and 128 together.
    pub geomean_speedup_spmm_n32_128: Option<f64>,
    /// Smallest cuSPARSE / ours over every case.
    pub min_speedup_spmm: Option<f64>,
    /// Where it occurs.
    pub min_speedup_spmm_case: Option<String>,
    /// Geometric mean over the large (generated) graphs.
    pub geomean_speedup_spmm_large: Option<f64>,
    /// Geometric mean over the real matrices.
    pub geomean_speedup_spmm_real: Option<f64>,
    /// Over the latency-bound cases (compulsory bytes within L2).
    pub geomean_speedup_spmm_latency_bound: Option<f64>,
    /// Over the bandwidth-bound cases.
    pub geomean_speedup_spmm_bandwidth_bound: Option<f64>,
    /// Per width: geometric mean speedup.
    pub geomean_speedup_by_n: BTreeMap<String, f64>,
    /// Per value type and layout (`f32 row-major`): geometric mean speedup.
    pub geomean_speedup_by_type: BTreeMap<String, f64>,
    /// Geometric mean of cuSPARSE / best-of-space time, where measured.
    pub geomean_speedup_spmm_best_of_space: Option<f64>,
    /// Geometric mean of cuSPARSE / prior-pick time, where measured.
    pub geomean_speedup_spmm_prior: Option<f64>,
    /// Geometric mean of floor / ours time over the large graphs.
    pub geomean_ours_vs_floor_large: Option<f64>,
    /// Geometric mean of floor / cuSPARSE time over the large graphs.
    pub geomean_cusparse_vs_floor_large: Option<f64>,
    /// Geometric mean of cuSPARSE / (ours + row conversions), where ours
    /// ran renumbered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub geomean_speedup_spmm_with_convert: Option<f64>,
    /// Cases with both times.
    pub cases: usize,
    /// Cases where ours has no time.
    pub ours_failures: usize,
    /// Cases where no cuSPARSE algorithm has a time.
    pub cusparse_failures: usize,
    /// Cases skipped.
    pub skipped: usize,
}

/// The whole report (`spmm-h200.json`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// Device name.
    pub gpu: String,
    /// Driver version.
    pub driver: String,
    /// Date, YYYY-MM-DD.
    pub date: String,
    /// The exact command.
    pub command: String,
    /// The commit that was built (`--commit`).
    pub commit: String,
    /// The policy in use (its version).
    pub policy: String,
    /// How ours was chosen in this run.
    pub ours_choice: String,
    /// Device copy bandwidth, GB/s (read + write).
    pub copy_gbs: f64,
    /// L2 size, bytes (the latency / bandwidth split).
    pub l2_bytes: usize,
    /// One row per case.
    pub rows: Vec<Row>,
    /// Summary.
    pub summary: Summary,
    /// Cases not run.
    pub skipped: Vec<Skipped>,
    /// Total seconds.
    pub elapsed_seconds: f64,
    /// Small smoke-run sizes.
    pub quick: bool,
    /// Written after a matrix while the run went on (the final write clears it).
    pub partial: bool,
}

/// `a / b` for positive finite numbers.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() && a > 0.0 && b > 0.0 => Some(a / b),
        _ => None,
    }
}

fn gm(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| common::geomean(xs))
}

fn gm_of<'a>(rows: impl Iterator<Item = &'a Row>) -> Option<f64> {
    gm(&rows.filter_map(|r| r.speedup).collect::<Vec<_>>())
}

/// Summary of `rows` with `skipped` cases left out.
pub fn summarize(rows: &[Row], skipped: usize) -> Summary {
    let at = |n: usize| gm_of(rows.iter().filter(|r| r.n == n));
    let min = rows
        .iter()
        .filter_map(|r| r.speedup.map(|s| (s, r)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let mut by_n = BTreeMap::new();
    let mut by_type = BTreeMap::new();
    for r in rows {
        let key = format!("{:04}", r.n);
        if !by_n.contains_key(&key)
            && let Some(g) = gm_of(rows.iter().filter(|x| x.n == r.n))
        {
            by_n.insert(key, g);
        }
        let t = format!("{} {}", r.value, r.layout);
        if !by_type.contains_key(&t)
            && let Some(g) = gm_of(
                rows.iter()
                    .filter(|x| x.value == r.value && x.layout == r.layout),
            )
        {
            by_type.insert(t, g);
        }
    }
    let large = || rows.iter().filter(|r| r.suite == "large");
    Summary {
        geomean_speedup_spmm: gm_of(rows.iter()),
        geomean_speedup_spmm_n32: at(32),
        geomean_speedup_spmm_n64: at(64),
        geomean_speedup_spmm_n128: at(128),
        geomean_speedup_spmm_n32_128: gm_of(rows.iter().filter(|r| matches!(r.n, 32 | 64 | 128))),
        min_speedup_spmm: min.map(|m| m.0),
        min_speedup_spmm_case: min.map(|m| case_label(m.1)),
        geomean_speedup_spmm_large: gm_of(large()),
        geomean_speedup_spmm_real: gm_of(rows.iter().filter(|r| r.suite == "real")),
        geomean_speedup_spmm_latency_bound: gm_of(rows.iter().filter(|r| r.bound == "latency")),
        geomean_speedup_spmm_bandwidth_bound: gm_of(rows.iter().filter(|r| r.bound == "bandwidth")),
        geomean_speedup_by_n: by_n,
        geomean_speedup_by_type: by_type,
        geomean_speedup_spmm_best_of_space: gm(&rows
            .iter()
            .filter_map(|r| r.speedup_best)
            .collect::<Vec<_>>()),
        geomean_speedup_spmm_prior: gm(&rows
            .iter()
            .filter_map(|r| r.speedup_prior)
            .collect::<Vec<_>>()),
        geomean_ours_vs_floor_large: gm(&large()
            .filter_map(|r| r.ours_vs_floor)
            .collect::<Vec<_>>()),
        geomean_cusparse_vs_floor_large: gm(&large()
            .filter_map(|r| r.cusparse_vs_floor)
            .collect::<Vec<_>>()),
        geomean_speedup_spmm_with_convert: gm(&rows
            .iter()
            .filter_map(|r| r.speedup_with_convert)
            .collect::<Vec<_>>()),
        cases: rows.iter().filter(|r| r.speedup.is_some()).count(),
        ours_failures: rows.iter().filter(|r| r.ours_us.is_none()).count(),
        cusparse_failures: rows.iter().filter(|r| r.cusparse_us.is_none()).count(),
        skipped,
    }
}

/// `matrix f32 row-major n=64`.
pub fn case_label(r: &Row) -> String {
    format!("{} {} {} n={}", r.matrix, r.value, r.layout, r.n)
}

/// Fills the derived fields of a row from its times.
pub fn derive(r: &mut Row, copy_gbs: f64) {
    let gbs = |us: Option<f64>| us.filter(|u| *u > 0.0).map(|u| r.bytes as f64 / (u * 1e3));
    r.ours_gbs = gbs(r.ours_us);
    r.cusparse_gbs = gbs(r.cusparse_us);
    r.floor_gbs = gbs(r.floor_us);
    r.speedup = ratio(r.cusparse_us, r.ours_us);
    r.speedup_best = ratio(r.cusparse_us, r.best_us);
    r.speedup_prior = ratio(r.cusparse_us, r.prior_us);
    r.speedup_with_convert = ratio(
        r.cusparse_us,
        r.ours_us.zip(r.convert_us).map(|(o, c)| o + c),
    );
    r.pct_copy = ratio(r.ours_gbs, Some(copy_gbs)).map(|x| x * 100.0);
    r.ours_vs_floor = ratio(r.floor_us, r.ours_us);
    r.cusparse_vs_floor = ratio(r.floor_us, r.cusparse_us);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize, suite: &str, ours: f64, cs: f64) -> Row {
        let mut r = Row {
            matrix: format!("m{n}{suite}"),
            suite: suite.into(),
            bound: if suite == "large" {
                "bandwidth"
            } else {
                "latency"
            }
            .into(),
            value: "f32".into(),
            layout: "row-major".into(),
            n,
            bytes: 1_000_000,
            ours_us: Some(ours),
            cusparse_us: Some(cs),
            ..Row::default()
        };
        derive(&mut r, 4000.0);
        r
    }

    #[test]
    fn renumbered_cases_count_their_conversions_apart() {
        let mut r = row(64, "large", 10.0, 30.0);
        assert_eq!(r.speedup_with_convert, None);
        r.reorder = Some("rcm".into());
        r.convert_us = Some(5.0);
        derive(&mut r, 4000.0);
        assert!((r.speedup.unwrap() - 3.0).abs() < 1e-12);
        assert!((r.speedup_with_convert.unwrap() - 2.0).abs() < 1e-12);
        let s = summarize(&[r, row(64, "real", 10.0, 10.0)], 0);
        assert!((s.geomean_speedup_spmm_with_convert.unwrap() - 2.0).abs() < 1e-12);
        assert_eq!(
            summarize(&[row(64, "real", 1.0, 1.0)], 0).geomean_speedup_spmm_with_convert,
            None
        );
    }

    #[test]
    fn summary_splits_by_width_suite_and_bound() {
        let rows = vec![
            row(32, "large", 10.0, 20.0),
            row(64, "large", 10.0, 40.0),
            row(64, "real", 10.0, 10.0),
            row(128, "real", 20.0, 10.0),
        ];
        let s = summarize(&rows, 3);
        assert!((s.geomean_speedup_spmm_n32.unwrap() - 2.0).abs() < 1e-12);
        assert!((s.geomean_speedup_spmm_n64.unwrap() - 2.0).abs() < 1e-12);
        assert!((s.geomean_speedup_spmm_n128.unwrap() - 0.5).abs() < 1e-12);
        assert!((s.geomean_speedup_spmm_large.unwrap() - 8f64.sqrt()).abs() < 1e-12);
        assert!((s.min_speedup_spmm.unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(
            s.min_speedup_spmm_case.as_deref(),
            Some("m128real f32 row-major n=128")
        );
        assert!((s.geomean_speedup_spmm.unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert!((s.geomean_speedup_spmm_latency_bound.unwrap() - 0.5f64.sqrt()).abs() < 1e-12);
        assert_eq!(s.geomean_speedup_by_n.len(), 3);
        assert_eq!((s.cases, s.skipped), (4, 3));
    }

    #[test]
    fn derived_rates_use_the_compulsory_bytes() {
        let r = row(16, "large", 250.0, 500.0);
        assert!((r.ours_gbs.unwrap() - 4.0).abs() < 1e-12);
        assert!((r.cusparse_gbs.unwrap() - 2.0).abs() < 1e-12);
        assert!((r.speedup.unwrap() - 2.0).abs() < 1e-12);
        assert!((r.pct_copy.unwrap() - 0.1).abs() < 1e-12);
        let mut failed = row(16, "large", 250.0, 500.0);
        failed.ours_us = None;
        derive(&mut failed, 4000.0);
        assert_eq!(failed.speedup, None);
        assert_eq!(summarize(&[failed], 0).ours_failures, 1);
    }
}
