//! The scale benchmark's report: JSON (`<stem>.json`) and Markdown
//! (`<stem>.md`), rewritten after every matrix.

use crate::common::geomean;
use serde::{Deserialize, Serialize};
use sparserl_rt::large::RowStats;
use sparserl_rt::large::select::Candidate;
use std::fmt::Write as _;

fn one_block() -> usize {
    1
}

/// One cuSPARSE configuration on one matrix.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VendorRun {
    /// `"32"` or `"64"` (index type bits of offsets and columns).
    pub index_bits: u32,
    /// Row blocks one call runs, one `cusparseSpMV` each (1: the whole
    /// matrix; more: 32-bit blocks of a matrix past 2^31 nonzeros).
    #[serde(default = "one_block")]
    pub row_blocks: usize,
    /// Algorithm enumerator.
    pub alg: String,
    /// Whether `cusparseSpMV_preprocess` ran (`None`: not tried).
    pub preprocessed: Option<bool>,
    /// Its error, when it failed and the plain `cusparseSpMV` ran instead.
    pub preprocess_error: Option<String>,
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
/// `x' = d y + (1 - d) / n`): the same two vector kernels around either
/// SpMV; ours on the renumbered order (vectors kept in the internal
/// numbering for the whole solve), cuSPARSE on the given order.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Iteration {
    /// Our iteration, median microseconds.
    pub ours_us: Option<f64>,
    /// The order ours ran on.
    pub ours_order: Option<String>,
    /// With cuSPARSE's best checked SpMV configuration, median microseconds.
    pub cusparse_us: Option<f64>,
    /// Which cuSPARSE configuration (`64/ALG` form).
    pub cusparse_config: Option<String>,
}

/// Our selection and cuSPARSE on one numbering of one matrix.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OrderRun {
    /// `given`, `degree` or `rcm`.
    pub order: String,
    /// Upload seconds (memory check included).
    pub upload_s: f64,
    /// Rows compared with the float64 reference per check.
    pub checked_rows: usize,
    /// Every variant of ours: rank, prediction, check, timing.
    pub candidates: Vec<Candidate>,
    /// How many of the ranked variants were checked and timed.
    pub measured: usize,
    /// The cost model's first choice.
    pub model_pick: Option<String>,
    /// The selection: the fastest measured of the first `selection_top`.
    pub selected: Option<String>,
    /// Its median microseconds.
    pub selected_us: Option<f64>,
    /// The fastest measured variant (of the whole space when `measured`
    /// is its size).
    pub best: Option<String>,
    /// Its median microseconds.
    pub best_us: Option<f64>,
    /// `selected_us / best_us` (1.0: the selection found the best).
    pub selected_over_best: Option<f64>,
    /// `model pick time / best_us`.
    pub model_over_best: Option<f64>,
    /// cuSPARSE runs on this numbering.
    pub cusparse: Vec<VendorRun>,
    /// cuSPARSE's fastest checked 64-bit run, microseconds.
    pub cusparse64_us: Option<f64>,
    /// cuSPARSE's fastest checked 32-bit run, microseconds: the whole matrix
    /// where it fits, else its row blocks of under 2^31 nonzeros.
    pub cusparse32_us: Option<f64>,
    /// `min(cusparse64, cusparse32) / selected` on this numbering: the
    /// kernel alone.
    pub kernel_speedup: Option<f64>,
    /// `floor_us / selected_us`.
    pub selected_of_floor: Option<f64>,
    /// Failures and remarks on this numbering.
    pub notes: Vec<String>,
}

impl OrderRun {
    /// cuSPARSE's best checked run of either index width.
    pub fn cusparse_best_us(&self) -> Option<f64> {
        [self.cusparse64_us, self.cusparse32_us]
            .into_iter()
            .flatten()
            .min_by(f64::total_cmp)
    }
}

/// How a matrix was renumbered on the host.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Renumbering {
    /// `degree` or `rcm`.
    pub order: String,
    /// Why the rule picked it.
    pub rule: String,
    /// Seconds to compute the order (and its inverse).
    pub order_s: f64,
    /// Seconds of `P A Pᵀ` into new arrays.
    pub permute_s: f64,
    /// Seconds to validate the permuted arrays.
    pub validate_s: f64,
    /// Host threads used.
    pub threads: usize,
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
    /// Generation seconds.
    pub generation_s: f64,
    /// Validation seconds (`LargeCsr::try_from_parts`).
    pub validation_s: f64,
    /// The given numbering (randomly numbered by the generators).
    pub given: OrderRun,
    /// The renumbering the rule picked, when it ran.
    pub renumbering: Option<Renumbering>,
    /// The renumbered matrix.
    pub renumbered: Option<OrderRun>,
    /// The product's speedup: cuSPARSE's best (32/64-bit) on the given
    /// order over ours on the renumbered order.
    pub speedup: Option<f64>,
    /// The same against cuSPARSE 64-bit only.
    pub speedup_vs_64: Option<f64>,
    /// Ours and cuSPARSE both on the given order.
    pub speedup_given_order: Option<f64>,
    /// The CSR arrays + x + y bytes at the device's row-pointer width.
    pub traffic_bytes: u64,
    /// `traffic_bytes` at the measured copy bandwidth, microseconds.
    pub floor_us: f64,
    /// One PageRank-shaped iteration.
    pub iteration: Iteration,
    /// Failures and remarks.
    pub notes: Vec<String>,
}

impl Case {
    /// Recomputes the speedups from the two order runs.
    pub fn finish(&mut self) {
        let vendor = self.given.cusparse_best_us();
        let ours = self.renumbered.as_ref().and_then(|r| r.selected_us);
        self.speedup = vendor.zip(ours).map(|(v, o)| v / o);
        self.speedup_vs_64 = self.given.cusparse64_us.zip(ours).map(|(v, o)| v / o);
        self.speedup_given_order = self.given.kernel_speedup;
    }
}

/// The report's summary keys.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Geometric mean of the product's `speedup` (ours renumbered against
    /// cuSPARSE's best of 32- and 64-bit on the given order).
    pub geomean_speedup_scale: Option<f64>,
    /// The lowest `speedup`.
    pub min_speedup_scale: Option<f64>,
    /// Geometric mean of `speedup_vs_64`.
    pub geomean_speedup_vs_64: Option<f64>,
    /// Geometric mean of `speedup_given_order` (both on the given order).
    pub geomean_speedup_scale_given_order: Option<f64>,
    /// Geometric mean of the renumbered kernel speedups (both renumbered).
    pub geomean_kernel_speedup_renumbered: Option<f64>,
    /// Most nonzeros of a case that ran.
    pub largest_nnz: u64,
    /// Whether the largest case has 2^31 nonzeros or more and passed.
    pub largest_past_2_31_checked: bool,
    /// Geometric mean of `selected_over_best` over the orders where every
    /// variant was timed.
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
    /// The loaded cuSPARSE library's version.
    pub cusparse_version: Option<String>,
    /// No policy: the pick is the measured selection below.
    pub policy: String,
    /// How the selection works.
    pub selection: String,
    /// The rule that picks each matrix's renumbering.
    pub renumber_rule: String,
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
        let of = |f: &dyn Fn(&Case) -> Option<f64>| -> Vec<f64> {
            self.cases.iter().filter_map(f).collect()
        };
        let sp = of(&|c| c.speedup);
        let orders = || {
            self.cases
                .iter()
                .flat_map(|c| std::iter::once(&c.given).chain(c.renumbered.as_ref()))
        };
        let sel: Vec<f64> = orders()
            .filter(|o| o.measured == o.candidates.len() && !o.candidates.is_empty())
            .filter_map(|o| o.selected_over_best)
            .collect();
        let gm = |v: &[f64]| (!v.is_empty()).then(|| geomean(v));
        let largest = self.cases.iter().max_by_key(|c| c.nnz);
        self.summary = Summary {
            geomean_speedup_scale: gm(&sp),
            min_speedup_scale: sp.iter().copied().min_by(f64::total_cmp),
            geomean_speedup_vs_64: gm(&of(&|c| c.speedup_vs_64)),
            geomean_speedup_scale_given_order: gm(&of(&|c| c.speedup_given_order)),
            geomean_kernel_speedup_renumbered: gm(&of(&|c| {
                c.renumbered.as_ref().and_then(|r| r.kernel_speedup)
            })),
            largest_nnz: largest.map_or(0, |c| c.nnz),
            largest_past_2_31_checked: largest
                .is_some_and(|c| c.nnz >= 1 << 31 && c.given.selected_us.is_some()),
            geomean_selected_over_best: gm(&sel),
            geomean_iteration_speedup: gm(&of(&|c| {
                Some(c.iteration.cusparse_us? / c.iteration.ours_us?)
            })),
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
        "Commit `{}`, {}, driver {}, cuSPARSE {}. Command: `{}`.\n\nPolicy: {}. Selection: {}\n\n\
         Renumbering: {}\n\n\
         **Speedup** is what a user of the product gets: cuSPARSE's best (32/64-bit) on the \
         matrix as given over ours on the matrix the product renumbers (host renumbering time \
         reported apart, not inside the kernel time); the kernel-alone ratios compare both on \
         the same numbering. Past 2^31 nonzeros cuSPARSE's 32-bit run is the rows cut \
         into blocks of fewer than 2^31 - 2^24 nonzeros, one 32-bit `cusparseSpMV` each, \
         timed together.\n\n\
         Copy bandwidth {:.0} GB/s. Peak host memory {:.1} GiB, peak device memory {:.1} GiB.\n",
        r.commit,
        r.date,
        r.driver,
        r.cusparse_version.as_deref().unwrap_or("unknown"),
        r.command,
        r.policy,
        r.selection,
        r.renumber_rule,
        r.copy_gbs,
        r.peak_host_bytes as f64 / (1u64 << 30) as f64,
        r.peak_device_bytes as f64 / (1u64 << 30) as f64
    );
    let m = &r.summary;
    let _ = writeln!(
        s,
        "Summary: geomean speedup (ours renumbered vs cuSPARSE's best on the given order) {}, \
         min {}, vs 64-bit {}; given order both {}; kernel alone, both renumbered {}; \
         largest nnz {} (past 2^31 and checked: {}); selection / best geomean {} (orders \
         with every variant timed); iteration speedup geomean {}.\n",
        opt(m.geomean_speedup_scale, 2),
        opt(m.min_speedup_scale, 2),
        opt(m.geomean_speedup_vs_64, 2),
        opt(m.geomean_speedup_scale_given_order, 2),
        opt(m.geomean_kernel_speedup_renumbered, 2),
        m.largest_nnz,
        m.largest_past_2_31_checked,
        opt(m.geomean_selected_over_best, 3),
        opt(m.geomean_iteration_speedup, 2)
    );
    cases_table(&mut s, r);
    selection_table(&mut s, r);
    for c in &r.cases {
        let notes: Vec<&String> = c
            .notes
            .iter()
            .chain(&c.given.notes)
            .chain(c.renumbered.iter().flat_map(|o| &o.notes))
            .collect();
        if !notes.is_empty() {
            let text: Vec<&str> = notes.iter().map(|n| n.as_str()).collect();
            let _ = writeln!(s, "\n{}: {}", c.name, text.join("; "));
        }
    }
    if !r.skipped.is_empty() {
        let _ = writeln!(s, "\nSkipped: {}", r.skipped.join("; "));
    }
    s
}

/// One row per matrix: both numberings, the renumbering, the speedups.
fn cases_table(s: &mut String, r: &Report) {
    let _ = writeln!(
        s,
        "| matrix | rows | nnz | offsets | gen s | renumbering | host s (threads) | \
         given: ours | us | cuSPARSE us | kernel x | renumbered: ours | us | cuSPARSE us | \
         kernel x | **speedup** | of floor | iter ours us | iter cuSPARSE us |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(19));
    for c in &r.cases {
        let ren = c.renumbered.clone().unwrap_or_default();
        let (order, host) = c
            .renumbering
            .as_ref()
            .map_or(("-".into(), "-".into()), |n| {
                (
                    n.order.clone(),
                    format!("{:.1} + {:.1} ({})", n.order_s, n.permute_s, n.threads),
                )
            });
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | **{}** | {} | {} | {} |",
            c.name,
            c.rows,
            c.nnz,
            c.offsets,
            c.generation_s,
            order,
            host,
            c.given.selected.as_deref().unwrap_or("-"),
            opt(c.given.selected_us, 0),
            opt(c.given.cusparse_best_us(), 0),
            opt(c.given.kernel_speedup, 2),
            ren.selected.as_deref().unwrap_or("-"),
            opt(ren.selected_us, 0),
            opt(ren.cusparse_best_us(), 0),
            opt(ren.kernel_speedup, 2),
            opt(c.speedup, 2),
            opt(ren.selected_of_floor, 2),
            opt(c.iteration.ours_us, 0),
            opt(c.iteration.cusparse_us, 0),
        );
    }
    let _ = writeln!(
        s,
        "\nhost s: order + permutation seconds on the host (threads). of floor: the traffic \
         floor at the copy bandwidth over ours renumbered."
    );
}

/// One row per numbering: the cost model's pick, the selection, the best.
fn selection_table(s: &mut String, r: &Report) {
    let _ = writeln!(
        s,
        "\n| matrix | order | timed | model pick | selected | us | best timed | us | selected / best |"
    );
    let _ = writeln!(s, "|{}", "---|".repeat(9));
    for c in &r.cases {
        for o in std::iter::once(&c.given).chain(c.renumbered.as_ref()) {
            let _ = writeln!(
                s,
                "| {} | {} | {} of {} | {} | {} | {} | {} | {} | {} |",
                c.name,
                o.order,
                o.measured,
                o.candidates.len(),
                o.model_pick.as_deref().unwrap_or("-"),
                o.selected.as_deref().unwrap_or("-"),
                opt(o.selected_us, 0),
                o.best.as_deref().unwrap_or("-"),
                opt(o.best_us, 0),
                opt(o.selected_over_best, 3),
            );
        }
    }
}
