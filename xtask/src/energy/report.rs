//! The energy report: rows, the summary and the Markdown view.

use serde::{Deserialize, Serialize};
use sparserl_rt::energy::{CounterStats, EnergyMeasurement, energy_pick};
use sparserl_rt::{Csr, ValueType};
use std::fmt::Write as _;

/// Relative floor of the noise in the pick rule (as the search's `min_noise`).
pub const MIN_NOISE: f64 = 0.01;

/// One finalist of the search.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Finalist {
    /// Variant id.
    pub variant: String,
    /// Its best GB/s during the search.
    pub search_gbs: f64,
    /// Its energy per call (null when it failed).
    pub energy: Option<EnergyMeasurement>,
    /// Why it was not measured.
    pub error: Option<String>,
}

/// One matrix.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Row {
    /// Matrix name.
    pub matrix: String,
    /// Structure class.
    pub class: String,
    /// `large` / `real`.
    pub suite: String,
    /// `f32` / `f64`.
    pub value: String,
    /// Rows.
    pub rows: usize,
    /// Nonzeros.
    pub nnz: usize,
    /// Seconds of the search.
    pub search_seconds: f64,
    /// Idle power measured before this matrix's loops, watts.
    pub idle_power_w: Option<f64>,
    /// The search's finalists, the time objective's pick (its winner) first.
    pub finalists: Vec<Finalist>,
    /// cuSPARSE's fastest correct algorithm.
    pub cusparse_alg: Option<String>,
    /// Its energy per call.
    pub cusparse: Option<EnergyMeasurement>,
    /// Why cuSPARSE was not measured.
    pub cusparse_error: Option<String>,
    /// The time-trained policy's no-GPU pick (what a build without a GPU
    /// ships), measured like a finalist; its variant is a finalist's when
    /// the search also found it.
    #[serde(default)]
    pub zero_shot: Option<Finalist>,
    /// The zero-shot pick's joules per call / the lowest of every measured
    /// kernel of ours (finalists and the pick): 1.0 when it is the energy
    /// optimum of what was measured.
    #[serde(default)]
    pub zero_shot_energy_over_best: Option<f64>,
    /// The time objective's pick (the search's winner).
    pub time_pick: Option<String>,
    /// The energy objective's pick among the measured finalists.
    pub energy_pick: Option<String>,
    /// Whether the energy pick differs (less energy by more than the noise).
    pub energy_pick_differs: bool,
    /// The noise the pick was decided with (relative).
    pub pick_noise: Option<f64>,
    /// Energy saved by the energy pick against the time pick, percent.
    pub energy_saved_pct: Option<f64>,
    /// Time per call lost by the energy pick against the time pick, percent.
    pub time_lost_pct: Option<f64>,
    /// cuSPARSE joules per call / ours (the time pick).
    pub energy_ratio: Option<f64>,
    /// cuSPARSE seconds per call / ours in the same loops.
    pub time_ratio: Option<f64>,
    /// Why the matrix failed.
    pub error: Option<String>,
    /// Seconds for this matrix.
    pub seconds: f64,
}

impl Row {
    /// An empty row for `csr`.
    pub fn new(name: &str, class: &str, suite: &str, csr: &Csr, value: ValueType) -> Self {
        Row {
            matrix: name.into(),
            class: class.into(),
            suite: suite.into(),
            value: value.as_str().into(),
            rows: csr.rows(),
            nnz: csr.nnz(),
            ..Row::default()
        }
    }

    /// The time pick's measurement (the first finalist, when it was measured).
    pub fn ours(&self) -> Option<&EnergyMeasurement> {
        self.finalists.first()?.energy.as_ref()
    }

    /// Fills the picks and ratios from the measurements.
    pub fn conclude(&mut self) {
        let measured: Vec<(usize, EnergyMeasurement)> = self
            .finalists
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.energy.map(|e| (i, e)))
            .collect();
        let Some(tp) = self.ours().copied() else {
            return;
        };
        self.time_pick = Some(self.finalists[0].variant.clone());
        let ms: Vec<EnergyMeasurement> = measured.iter().map(|m| m.1).collect();
        if let Some(p) = energy_pick(0, &ms, MIN_NOISE) {
            let e = ms[p.index];
            self.energy_pick = Some(self.finalists[measured[p.index].0].variant.clone());
            self.energy_pick_differs = p.by_energy;
            self.pick_noise = Some(p.noise);
            self.energy_saved_pct = Some((1.0 - e.joules_per_call / tp.joules_per_call) * 100.0);
            self.time_lost_pct = Some((e.seconds_per_call / tp.seconds_per_call - 1.0) * 100.0);
        }
        self.conclude_zero_shot();
        if let Some(c) = &self.cusparse {
            self.energy_ratio = Some(c.joules_per_call / tp.joules_per_call);
            self.time_ratio = Some(c.seconds_per_call / tp.seconds_per_call);
        }
    }

    /// The zero-shot pick's energy against the best of ours measured.
    fn conclude_zero_shot(&mut self) {
        let Some(z) = self.zero_shot.as_ref().and_then(|z| z.energy) else {
            return;
        };
        let best = self
            .finalists
            .iter()
            .filter_map(|f| f.energy)
            .map(|e| e.joules_per_call)
            .fold(z.joules_per_call, f64::min);
        self.zero_shot_energy_over_best = Some(z.joules_per_call / best);
    }

    /// One line of progress.
    pub fn progress_line(&self) -> String {
        let mut s = format!(
            "{:5} {:22} {} nnz {:>10}: ",
            self.suite, self.matrix, self.value, self.nnz
        );
        if let Some(e) = &self.error {
            let _ = write!(s, "FAILED: {e}");
            return s;
        }
        let _ = write!(
            s,
            "ours {} ({}), cuSPARSE {} ({}) -> {} energy; energy pick {}{} ({:.1} s)",
            fmt_j(self.ours()),
            self.time_pick.as_deref().unwrap_or("-"),
            fmt_j(self.cusparse.as_ref()),
            self.cusparse_alg.as_deref().map_or("-", short_alg),
            fmt_x(self.energy_ratio),
            if self.energy_pick_differs {
                ""
            } else {
                "= time pick "
            },
            if self.energy_pick_differs {
                format!(
                    "{} saves {:.1}%, {:+.1}% time",
                    self.energy_pick.as_deref().unwrap_or("-"),
                    self.energy_saved_pct.unwrap_or(0.0),
                    self.time_lost_pct.unwrap_or(0.0)
                )
            } else {
                String::new()
            },
            self.seconds
        );
        s
    }
}

/// A matrix that was not measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Skipped {
    /// Matrix name.
    pub matrix: String,
    /// Suite.
    pub suite: String,
    /// Why.
    pub reason: String,
}

/// The run's summary: flat keys, as the other benchmark JSONs have.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Summary {
    /// Geomean over every compared matrix of cuSPARSE joules per SpMV /
    /// ours (above 1: ours uses less energy).
    pub geomean_energy_ratio: Option<f64>,
    /// The same over the large synthetic matrices.
    pub geomean_energy_ratio_large: Option<f64>,
    /// The same over the real matrices.
    pub geomean_energy_ratio_real: Option<f64>,
    /// Geomean of cuSPARSE seconds per SpMV / ours in the same loops.
    pub geomean_time_ratio: Option<f64>,
    /// The same over the large synthetic matrices.
    pub geomean_time_ratio_large: Option<f64>,
    /// The same over the real matrices.
    pub geomean_time_ratio_real: Option<f64>,
    /// Matrices with both sides measured.
    pub compared: usize,
    /// Matrices where the energy pick differs from the time pick.
    pub energy_picks_differ: usize,
    /// Largest energy saving of an energy pick, percent.
    pub max_energy_saved_pct: Option<f64>,
    /// Geomean of the zero-shot pick's energy / the best measured of ours.
    #[serde(default)]
    pub geomean_zero_shot_energy_over_best: Option<f64>,
    /// The worst of those.
    #[serde(default)]
    pub max_zero_shot_energy_over_best: Option<f64>,
}

fn geomean_of<'a>(rows: impl Iterator<Item = &'a Row>, f: fn(&Row) -> Option<f64>) -> Option<f64> {
    let xs: Vec<f64> = rows
        .filter_map(f)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!xs.is_empty()).then(|| crate::common::geomean(&xs))
}

/// `(all, large, real)` geomeans of `f` over `rows`.
fn by_suite(rows: &[Row], f: fn(&Row) -> Option<f64>) -> (Option<f64>, Option<f64>, Option<f64>) {
    (
        geomean_of(rows.iter(), f),
        geomean_of(rows.iter().filter(|r| r.suite == "large"), f),
        geomean_of(rows.iter().filter(|r| r.suite == "real"), f),
    )
}

/// The summary of `rows`.
pub fn summarize(rows: &[Row]) -> Summary {
    let (e, el, er) = by_suite(rows, |r| r.energy_ratio);
    let (t, tl, tr) = by_suite(rows, |r| r.time_ratio);
    Summary {
        geomean_energy_ratio: e,
        geomean_energy_ratio_large: el,
        geomean_energy_ratio_real: er,
        geomean_time_ratio: t,
        geomean_time_ratio_large: tl,
        geomean_time_ratio_real: tr,
        compared: rows.iter().filter(|r| r.energy_ratio.is_some()).count(),
        energy_picks_differ: rows.iter().filter(|r| r.energy_pick_differs).count(),
        max_energy_saved_pct: rows
            .iter()
            .filter(|r| r.energy_pick_differs)
            .filter_map(|r| r.energy_saved_pct)
            .max_by(f64::total_cmp),
        geomean_zero_shot_energy_over_best: geomean_of(rows.iter(), |r| {
            r.zero_shot_energy_over_best
        }),
        max_zero_shot_energy_over_best: rows
            .iter()
            .filter_map(|r| r.zero_shot_energy_over_best)
            .max_by(f64::total_cmp),
    }
}

/// The whole report.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Report {
    /// GPU name (CUDA).
    pub gpu: String,
    /// The NVML device the counter was read from.
    pub nvml_device: String,
    /// Its PCI bus id (the CUDA device mapped to NVML by it).
    pub bus_id: String,
    /// Driver version.
    pub driver: String,
    /// Date of the run.
    pub date: String,
    /// Command line.
    pub command: String,
    /// Commit built.
    pub commit: String,
    /// Policy version in use.
    pub policy: String,
    /// How the energy counter updates (measured at the start, GPU idle).
    pub counter: Option<CounterStats>,
    /// Idle power at the start, watts.
    pub idle_power_w: f64,
    /// Minimum window length, seconds.
    pub window_s: f64,
    /// Windows per kernel.
    pub repeats: usize,
    /// Busy seconds before the first window.
    pub warmup_s: f64,
    /// Small sizes.
    pub quick: bool,
    /// Still running (written after every matrix).
    pub partial: bool,
    /// Seconds so far.
    pub elapsed_seconds: f64,
    /// The summary.
    pub summary: Summary,
    /// Every measured matrix.
    pub rows: Vec<Row>,
    /// Matrices not measured.
    pub skipped: Vec<Skipped>,
}

fn fmt_j(e: Option<&EnergyMeasurement>) -> String {
    e.map_or("-".into(), |e| format!("{:.3} mJ", e.joules_per_call * 1e3))
}

fn fmt_spread(e: Option<&EnergyMeasurement>) -> String {
    e.map_or("-".into(), |e| {
        format!(
            "{:.3} [{:.3}, {:.3}] ±{:.1}%",
            e.joules_per_call * 1e3,
            e.joules_per_call_p10 * 1e3,
            e.joules_per_call_p90 * 1e3,
            e.spread * 50.0
        )
    })
}

fn fmt_x(x: Option<f64>) -> String {
    x.map_or("-".into(), |x| format!("{x:.2}x"))
}

fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    x.map_or("-".into(), |x| format!("{x:.digits$}"))
}

fn short_alg(a: &str) -> &str {
    a.trim_start_matches("CUSPARSE_SPMV_")
}

/// The summary lines (also printed at the end of a run).
pub fn render_summary(r: &Report) -> String {
    let s = &r.summary;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "| set | cuSPARSE J / ours J (geomean) | cuSPARSE s / ours s |"
    );
    let _ = writeln!(o, "|---|---|---|");
    for (name, e, tt) in [
        (
            "large",
            s.geomean_energy_ratio_large,
            s.geomean_time_ratio_large,
        ),
        (
            "real",
            s.geomean_energy_ratio_real,
            s.geomean_time_ratio_real,
        ),
        ("all", s.geomean_energy_ratio, s.geomean_time_ratio),
    ] {
        let _ = writeln!(o, "| {name} | {} | {} |", fmt_x(e), fmt_x(tt));
    }
    let _ = writeln!(
        o,
        "\n{} matrices compared; the energy objective picks another finalist than the time \
         objective on {} (largest saving {}%).",
        s.compared,
        s.energy_picks_differ,
        fmt_opt(s.max_energy_saved_pct, 1)
    );
    let _ = writeln!(
        o,
        "The time-trained policy's no-GPU pick uses {} the energy of the best kernel of ours \
         measured (geomean; worst {}).",
        fmt_opt(s.geomean_zero_shot_energy_over_best, 3),
        fmt_opt(s.max_zero_shot_energy_over_best, 3)
    );
    let _ = writeln!(
        o,
        "CG and PageRank per-iteration energy: `cargo xtask bench-app --energy` \
         (`summary.cg_energy_ratio` in app-h200.json)."
    );
    o
}

/// The Markdown view.
pub fn render_markdown(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# Energy per SpMV: ours vs cuSPARSE ({})\n", r.gpu);
    if r.partial {
        let _ = writeln!(o, "**Partial report: the run had not finished.**\n");
    }
    let _ = writeln!(
        o,
        "`{}` on {} (NVML device {} at PCI {}, driver {}), commit {}, policy {}, {}.\n",
        r.command, r.gpu, r.nvml_device, r.bus_id, r.driver, r.commit, r.policy, r.date
    );
    method(&mut o, r);
    o.push_str("## Summary\n\n");
    o.push_str(&render_summary(r));
    matrix_table(&mut o, &r.rows);
    pick_table(&mut o, &r.rows);
    zero_shot_table(&mut o, &r.rows);
    if !r.skipped.is_empty() {
        o.push_str("\n## Skipped\n\n");
        for s in &r.skipped {
            let _ = writeln!(o, "- {} {}: {}", s.suite, s.matrix, s.reason);
        }
    }
    o
}

fn method(o: &mut String, r: &Report) {
    if let Some(c) = &r.counter {
        let _ = writeln!(
            o,
            "Energy counter (NVML total energy, mJ): changes every {:.1} ms (p10 {:.1}, p90 \
             {:.1}; {} changes in the probe), steps with gcd {} mJ (smallest {} mJ), polled \
             every {:.1} us. Idle power {:.1} W.\n",
            c.interval_ms,
            c.interval_p10_ms,
            c.interval_p90_ms,
            c.updates,
            c.step_gcd_mj,
            c.min_step_mj,
            c.poll_us,
            r.idle_power_w
        );
    }
    let _ = writeln!(
        o,
        "Method: each kernel (checked against the float64 reference first) runs as a busy \
         loop of back-to-back launches; after {:.2} s of warm-up, {} windows of at least \
         {:.2} s between two counter changes inside the loop give joules per call (the \
         whole card's energy, idle included) = energy / calls completed in the window. \
         Shown: median [p10, p90] ±half the (max - min) spread, millijoules per call. The \
         energy pick is the finalist with the lowest median, only when the time pick uses \
         more by more than the noise (the larger spread, at least {:.0}%). Clocks and power \
         limits are untouched.\n",
        r.warmup_s,
        r.repeats,
        r.window_s,
        MIN_NOISE * 100.0
    );
}

fn matrix_table(o: &mut String, rows: &[Row]) {
    o.push_str("\n## Per matrix (mJ per SpMV)\n\n");
    o.push_str("| set | matrix | nnz | ours (time pick) | cuSPARSE | alg | cuSPARSE / ours energy | time | ours W | idle W |\n");
    o.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in rows {
        if let Some(e) = &r.error {
            let _ = writeln!(
                o,
                "| {} | {} | {} | failed: {e} | | | | | | |",
                r.suite, r.matrix, r.nnz
            );
            continue;
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.suite,
            r.matrix,
            r.nnz,
            fmt_spread(r.ours()),
            fmt_spread(r.cusparse.as_ref()),
            r.cusparse_alg.as_deref().map_or("-", short_alg),
            fmt_x(r.energy_ratio),
            fmt_x(r.time_ratio),
            fmt_opt(r.ours().map(|e| e.avg_power_w), 0),
            fmt_opt(r.idle_power_w, 0),
        );
    }
}

fn pick_table(o: &mut String, rows: &[Row]) {
    o.push_str("\n## Objective = energy against objective = time\n\n");
    o.push_str("| matrix | time pick | energy pick | noise | energy saved | time lost | finalists (mJ, us per call) |\n");
    o.push_str("|---|---|---|---|---|---|---|\n");
    for r in rows.iter().filter(|r| r.time_pick.is_some()) {
        let fin: Vec<String> = r
            .finalists
            .iter()
            .map(|f| match &f.energy {
                Some(e) => format!(
                    "{} {:.3} / {:.1}",
                    f.variant,
                    e.joules_per_call * 1e3,
                    e.seconds_per_call * 1e6
                ),
                None => format!("{} failed", f.variant),
            })
            .collect();
        let pick = if r.energy_pick_differs {
            r.energy_pick.clone().unwrap_or_default()
        } else {
            "= time pick".into()
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {}% | {}% | {}% | {} |",
            r.matrix,
            r.time_pick.as_deref().unwrap_or("-"),
            pick,
            fmt_opt(r.pick_noise.map(|n| n * 100.0), 1),
            fmt_opt(r.energy_saved_pct, 1),
            fmt_opt(r.time_lost_pct, 1),
            fin.join("; ")
        );
    }
}

fn zero_shot_table(o: &mut String, rows: &[Row]) {
    o.push_str("\n## The time-trained policy's no-GPU pick, by energy\n\n");
    o.push_str(
        "What a build without a GPU ships (the policy's risk-adjusted pick), measured like a \
         finalist: its energy over the lowest of every kernel of ours measured for the matrix.\n\n",
    );
    o.push_str(
        "| matrix | zero-shot pick | mJ per call | us per call | energy / best measured |\n",
    );
    o.push_str("|---|---|---|---|---|\n");
    for r in rows {
        let Some(z) = &r.zero_shot else { continue };
        let (mj, us) = z
            .energy
            .map_or(("failed".to_string(), "-".to_string()), |e| {
                (
                    format!("{:.3}", e.joules_per_call * 1e3),
                    format!("{:.1}", e.seconds_per_call * 1e6),
                )
            });
        let _ = writeln!(
            o,
            "| {} | {} | {mj} | {us} | {} |",
            r.matrix,
            z.variant,
            fmt_opt(r.zero_shot_energy_over_best, 3)
        );
    }
}
