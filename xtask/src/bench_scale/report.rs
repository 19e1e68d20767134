//! The scale benchmark's report: JSON (`<stem>.json`) and Markdown
//! (`<stem>.md`), rewritten after every matrix.

use crate::common::geomean;
use serde::{Deserialize, Serialize};
use sparserl_rt::large::RowStats;
use sparserl_rt::large::select::Candidate;
use std::fmt::Write as _;

/// One cuSPARSE configuration on one matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VendorRun {
    /// `"32"` or `"64"` (index type bits of offsets and columns).
    pub index_bits: u32,
    /// Algorithm enumerator.
    pub alg: String,
    /// Whether its output passed the float64 check on the sampled rows.
    pub passed: bool,
    /// Largest relative error on the sampled rows.
    pub max_rel_err: f64,
    /// Median microseconds (checked runs only).
    pub median_us: Option<f64>,
    /// An error, when the configuration failed.
    pub error: Option<String>,
}

/// One PageRank-shaped iteration (`x_s = x * w`, `y = A x_s`,
/// `x' = d y + (1 - d) / n`): the same two vector kernels around either SpMV.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Iteration {
    /// Our iteration, median microseconds.
    pub ours_us: Option<f64>,
    /// With cuSPARSE's best checked SpMV configuration, median microseconds.
    pub cusparse_us: Option<f64>,
    /// Which cuSPARSE configuration (`64/ALG` form).
    pub cusparse_config: Option<String>,
}

/// One matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    /// Matrix name.
    pub name: String,
    /// Family.
    pub family: String,
    /// Rows (= columns).
    pub rows: u64,
    /// Nonzeros.
    pub nnz: u64,
    /// Device row-pointer width (`u32` / `u64`).
    pub offsets: String,
    /// Row-length statistics.
    pub stats: RowStats,
    /// Seconds: generation, validation (`LargeCsr::try_from_parts`), upload.
    pub generation_s: f64,
    /// Validation seconds.
    pub validation_s: f64,
    /// Upload seconds (memory check included).
    pub upload_s: f64,
    /// Rows compared with the float64 reference per check.
    pub checked_rows: usize,
    /// Every variant of ours: rank, prediction, check, timing.
    pub candidates: Vec<Candidate>,
    /// The cost model's first choice.
    pub model_pick: Option<String>,
    /// The selection: the fastest measured of the first `selection_top`.
    pub selected: Option<String>,
    /// Its median microseconds.
    pub selected_us: Option<f64>,
    /// The fastest measured variant of the whole space.
    pub best: Option<String>,
    /// Its median microseconds.
    pub best_us: Option<f64>,
    /// `selected_us / best_us` (1.0: the selection found the best).
    pub selected_over_best: Option<f64>,
    /// `model pick time / best_us`.
    pub model_over_best: Option<f64>,
    /// cuSPARSE runs.
    pub cusparse: Vec<VendorRun>,
    /// cuSPARSE's fastest checked 64-bit run, microseconds.
    pub cusparse64_us: Option<f64>,
    /// cuSPARSE's fastest checked 32-bit run (where the matrix fits), microseconds.
    pub cusparse32_us: Option<f64>,
    /// `min(cusparse64, cusparse32) / selected`.
    pub speedup: Option<f64>,
    /// `cusparse64 / selected`.
    pub speedup_vs_64: Option<f64>,
    /// The CSR arrays + x + y bytes at the device's row-pointer width.
    pub traffic_bytes: u64,
    /// `traffic_bytes` at the measured copy bandwidth, microseconds.
    pub floor_us: f64,
    /// `floor_us / selected_us`.
    pub selected_of_floor: Option<f64>,
    /// One PageRank-shaped iteration.
    pub iteration: Iteration,
    /// Failures and remarks.
    pub notes: Vec<String>,
}

/// The report's summary keys.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Geometric mean of `speedup` (against cuSPARSE's best of 32- and
    /// 64-bit) over the cases that have one.
    pub geomean_speedup_scale: Option<f64>,
    /// The lowest `speedup`.
    pub min_speedup_scale: Option<f64>,
    /// Geometric mean of `speedup_vs_64`.
    pub geomean_speedup_vs_64: Option<f64>,
    /// Most nonzeros of a case that ran.
    pub largest_nnz: u64,
    /// Whether the largest case has 2^31 nonzeros or more and passed.
    pub largest_past_2_31_checked: bool,
    /// Geometric mean of `selected_over_best`.
    pub geomean_selected_over_best: Option<f64>,
    /// Geometric mean of `cusparse_us / ours_us` of the iteration.
    pub geomean_iteration_speedup: Option<f64>,
}

/// The whole report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Report {
    /// GPU name.
    pub gpu: String,
    /// `--commit`.
    pub commit: String,
    /// The command line.
    pub command: String,
    /// Date (UTC).
    pub date: String,
    /// Driver version.
    pub driver: String,
    /// No policy: the pick is the measured selection below.
    pub policy: String,
    /// How the selection works.
    pub selection: String,
    /// Device-to-device copy bandwidth, GB/s (read + write).
    pub copy_gbs: f64,
    /// Whether the run stopped early (time guard, error) or is still going.
    pub partial: bool,
    /// Summary.
    pub summary: Summary,
    /// Peak resident host memory of the process, bytes (`VmHWM`).
    pub peak_host_bytes: u64,
    /// Peak device memory in use (total minus free, whole device), bytes.
    pub peak_device_bytes: u64,
    /// Matrices.
    pub cases: Vec<Case>,
    /// Matrices not run, with the reason.
    pub skipped: Vec<String>,
}

impl Report {
    /// Recomputes the summary from the cases.
    pub fn summarize(&mut self) {
        let sp: Vec<f64> = self.cases.iter().filter_map(|c| c.speedup).collect();
        let sp64: Vec<f64> = self.cases.iter().filter_map(|c| c.speedup_vs_64).collect();
        let sel: Vec<f64> = self
            .cases
            .iter()
            .filter_map(|c| c.selected_over_best)
            .collect();
        let it: Vec<f64> = self
            .cases
            .iter()
            .filter_map(|c| Some(c.iteration.cusparse_us? / c.iteration.ours_us?))
            .collect();
        let gm = |v: &[f64]| (!v.is_empty()).then(|| geomean(v));
        let largest = self.cases.iter().max_by_key(|c| c.nnz);
        self.summary = Summary {
            geomean_speedup_scale: gm(&sp),
            min_speedup_scale: sp.iter().copied().min_by(f64::total_cmp),
            geomean_speedup_vs_64: gm(&sp64),
            largest_nnz: largest.map_or(0, |c| c.nnz),
            largest_past_2_31_checked: largest
                .is_some_and(|c| c.nnz >= 1 << 31 && c.selected_us.is_some()),
            geomean_selected_over_best: gm(&sel),
            geomean_iteration_speedup: gm(&it),
        };
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The Markdown view.
pub fn render_markdown(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# SpMV at scale on {}\n", r.gpu);
    if r.partial {
        let _ = writeln!(s, "**Partial**: the run stopped early or is still going.\n");
    }
    let _ = writeln!(
        s,
        "Commit `{}`, {}, driver {}. Command: `{}`.\n\nPolicy: {}. Selection: {}\n\n\
         Copy bandwidth {:.0} GB/s. Peak host memory {:.1} GiB, peak device memory {:.1} GiB.\n",
        r.commit,
        r.date,
        r.driver,
        r.command,
        r.policy,
        r.selection,
        r.copy_gbs,
        r.peak_host_bytes as f64 / (1u64 << 30) as f64,
        r.peak_device_bytes as f64 / (1u64 << 30) as f64
    );
    let m = &r.summary;
    let _ = writeln!(
        s,
        "Summary: geomean speedup over cuSPARSE's best (32/64-bit) {}, min {}, geomean vs 64-bit {}; \
         largest nnz {} (past 2^31 and checked: {}); selection / best geomean {}; iteration speedup geomean {}.\n",
        opt(m.geomean_speedup_scale, 2),
        opt(m.min_speedup_scale, 2),
        opt(m.geomean_speedup_vs_64, 2),
        m.largest_nnz,
        m.largest_past_2_31_checked,
        opt(m.geomean_selected_over_best, 3),
        opt(m.geomean_iteration_speedup, 2)
    );
    let _ = writeln!(
        s,
        "| matrix | rows | nnz | offsets | gen s | model pick | selected | us | best | us | \
         cuSPARSE 64 us | cuSPARSE 32 us | speedup | of floor | iter ours us | iter cuSPARSE us |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(16));
    for c in &r.cases {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.rows,
            c.nnz,
            c.offsets,
            c.generation_s,
            c.model_pick.as_deref().unwrap_or("-"),
            c.selected.as_deref().unwrap_or("-"),
            opt(c.selected_us, 0),
            c.best.as_deref().unwrap_or("-"),
            opt(c.best_us, 0),
            opt(c.cusparse64_us, 0),
            opt(c.cusparse32_us, 0),
            opt(c.speedup, 2),
            opt(c.selected_of_floor, 2),
            opt(c.iteration.ours_us, 0),
            opt(c.iteration.cusparse_us, 0),
        );
    }
    for c in r.cases.iter().filter(|c| !c.notes.is_empty()) {
        let _ = writeln!(s, "\n{}: {}", c.name, c.notes.join("; "));
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(s, "\nSkipped: {}", r.skipped.join("; "));
    }
    s
}
