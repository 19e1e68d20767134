//! `cargo xtask bench`: side-by-side SpMV benchmark on one GPU, in one process.
//!
//! For every matrix and value type it measures, all the same way (correctness
//! against the float64 reference first, then per-launch CUDA-event timing,
//! medians):
//!
//! - **ours**: the variant the product ships, found by the measured search
//!   (`GpuTuner::tune`) from the default policy's proposals;
//! - **cuSPARSE**: `cusparseSpMV` with every CSR algorithm it offers
//!   (descriptors and buffers created once), the best one kept and named;
//! - **template**: the fixed rule of hand-written libraries (`template_rule`);
//! - **oracle**: the best of our design space (exhaustive sweep of
//!   `full_space()` (core and layout strategies) with few repetitions, finalists and ours re-measured);
//! - **gather floor** (large and irregular sets, `gather`): a microbenchmark
//!   of the memory traffic of a perfectly balanced CSR SpMV of the matrix
//!   without its row structure, the limit of random `x` gathers;
//!
//! Ours and cuSPARSE's best algorithm are then timed a second time, right
//! after each other, and each keeps the faster of its two medians (a
//! transient slowdown in one measurement does not decide the ratio);
//! plus per-call latency (back to back and CUDA-graph replay) for the real
//! matrices, and the device copy bandwidth as the roofline. Writes
//! `spmv-h200.json`, `spmv-h200.md`, `spmv-h200.svg` and the sweep as a
//! training dataset.

use crate::common;
use crate::cusparse::{self, Alg, CusparseSpmv};
use anyhow::{Context, Result, anyhow, bail};
use cudarc::driver::CudaFunction;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sparserl_build::SearchConfig;
use sparserl_build::gpu::GpuTuner;
use sparserl_policies::{default_policy, template_rule};
use sparserl_rt::measure::rel_err;
use sparserl_rt::{
    Bench, Csr, Features, Gpu, MeasureOptions, Measurement, Scalar, ValueType, Variant, full_space,
    tolerance,
};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

// The sweep is written as a `sparserl_policies::dataset::Dataset`, the same
// format `collect` writes and training reads.
use sparserl_policies::dataset::{Dataset, MatrixRecord as DatasetMatrix};
// Timing: the sweep and cuSPARSE use the same primitives as `Bench`.
use sparserl_rt::measure::{time_back_to_back, time_graph, time_launches};

mod args;
pub(crate) mod gather;
mod irregular;
mod precompile;
mod render;
mod report;
mod suite;
mod vendor;

pub use args::*;
pub use irregular::*;
use precompile::{Compiled, precompile};
pub use render::*;
pub use report::*;
pub use suite::*;
use vendor::{run_cusparse, time_cusparse};

pub(crate) fn median(xs: &[f64]) -> Option<f64> {
    sparserl_rt::measure::stats(xs).map(|s| s.median)
}

// ---------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------

use crate::common::Loaded;

struct Ctx<'a> {
    tuner: &'a GpuTuner,
    space: Vec<Variant>,
    compiled: Compiled,
    copy_gbs: f64,
    reps: u32,
    sweep_reps: u32,
    /// Run the oracle sweep (off: `--no-oracle`, no oracle column and no
    /// dataset rows).
    oracle: bool,
    /// Measure the gather floor of the bandwidth-bound matrices (off:
    /// `--no-gather`).
    gather: bool,
}

impl Ctx<'_> {
    fn function(&self, v: &Variant, t: ValueType) -> Result<CudaFunction, String> {
        // A renumbered variant runs its kernel's code.
        if let Some(f) = self.compiled.get(&(v.kernel(), t)) {
            return f.clone();
        }
        match t {
            ValueType::F32 => sparserl_build::gpu::load_variant::<f32>(self.tuner.gpu(), v),
            ValueType::F64 => sparserl_build::gpu::load_variant::<f64>(self.tuner.gpu(), v),
        }
        .map_err(|e| e.to_string())
    }
}

struct Job<'a> {
    name: &'a str,
    class: &'a str,
    suite: &'static str,
    csr: &'a Csr,
    budget: f64,
}

/// Checks and times `v` through the Bench (the harness the search uses).
fn measure_ours<T: Scalar>(ctx: &Ctx, bench: &Bench<T>, v: &Variant) -> Result<Measurement> {
    let func = match ctx.function(v, T::TYPE) {
        Ok(f) => f,
        Err(e) => {
            return Ok(Measurement::failed(
                *v,
                T::TYPE,
                f64::INFINITY,
                format!("compile failed: {e}"),
            ));
        }
    };
    let opts = MeasureOptions {
        reps: ctx.reps,
        ..MeasureOptions::default()
    };
    // SAFETY: ctx.function compiles codegen::generate(v, T) (load_variant):
    // a kernel of the SpMV ABI for T and v.
    Ok(unsafe { bench.measure(&func, v, &opts) }?)
}

/// Exhaustive sweep of the full space through [`Bench::measure`] (checked
/// against the float64 reference first, then timed with few repetitions):
/// `(index, gbs, rel_err, correct)` per variant. The per-variant time guard is
/// 30 times the fastest median so far (0.02 to 0.3 s), so a variant far
/// slower than the best gets fewer timed launches (always at least one).
fn sweep<T: Scalar>(ctx: &Ctx, bench: &Bench<T>) -> Result<Vec<(usize, f64, f64, bool)>> {
    let mut opts = MeasureOptions {
        warmup: 2,
        reps: ctx.sweep_reps,
        max_seconds: 0.3,
        ..MeasureOptions::default()
    };
    let mut fastest_us = f64::INFINITY;
    let mut out = Vec::with_capacity(ctx.space.len());
    for (i, v) in ctx.space.iter().enumerate() {
        opts.max_seconds = (fastest_us * 30e-6).clamp(0.02, 0.3);
        if !bench.device_csr().has_layout(v.strategy) {
            continue; // the matrix lacks the layout: not applicable, not measured
        }
        let Ok(func) = ctx.function(v, T::TYPE) else {
            out.push((i, 0.0, f64::INFINITY, false));
            continue;
        };
        // SAFETY: as in measure_ours: func is the generated kernel of v for T.
        let m = unsafe { bench.measure(&func, v, &opts) }?;
        if m.correct {
            fastest_us = fastest_us.min(m.median_us);
        }
        out.push((i, if m.correct { m.gbs } else { 0.0 }, m.rel_err, m.correct));
    }
    Ok(out)
}

fn random_x<T: Scalar>(n: usize, seed: u64) -> Vec<T> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect()
}

/// Raises the row's oracle to `gbs` (measured for `v`) when that is faster.
fn consider(row: &mut Row, gbs: f64, v: Variant) {
    if row.oracle_gbs.is_none_or(|o| gbs > o) {
        row.oracle_gbs = Some(gbs);
        row.oracle_variant = Some(v.id());
    }
}

/// Benchmarks one matrix for value type `T`.
fn run_matrix<T: Scalar>(ctx: &Ctx, job: &Job) -> Result<(Row, DatasetMatrix)> {
    let t0 = Instant::now();
    let csr = job.csr;
    let value = T::TYPE;
    let gpu = ctx.tuner.gpu();
    let real = job.suite == "real";
    let features = Features::compute(csr);
    let mut row = Row {
        matrix: job.name.to_string(),
        class: job.class.to_string(),
        nnz: csr.nnz(),
        rows: csr.rows(),
        cols: csr.cols(),
        value: value.as_str().to_string(),
        suite: job.suite.to_string(),
        csr_bytes: (csr.rows() + 1) * 4 + csr.nnz() * (4 + value.size()),
        ..Row::default()
    };

    // Ours: the product's search.
    let proposals: Vec<Variant> = default_policy()
        .propose(&features, value, 16)
        .into_iter()
        .map(|p| p.variant)
        .collect();
    let cfg = SearchConfig {
        budget_seconds: job.budget,
        ..SearchConfig::default()
    };
    let winner = match ctx.tuner.tune(&[csr], value, &proposals, &cfg) {
        Ok(o) => {
            row.search_candidates = o.candidates;
            row.search_seconds = o.seconds;
            Some(o.winner)
        }
        Err(e) => {
            row.ours_error = Some(format!("search failed: {e}"));
            None
        }
    };

    let bench = Bench::<T>::new(gpu, csr).context("uploading the matrix")?;
    let dcsr = bench.device_csr();
    row.device_bytes = winner
        .and_then(|w| dcsr.layout_bytes(w.strategy))
        .unwrap_or_else(|| dcsr.device_bytes());
    if let Some(w) = winner {
        row.variant = Some(w.id());
        let m = measure_ours(ctx, &bench, &w)?;
        row.ours_rel_err = Some(m.rel_err).filter(|e| e.is_finite());
        if m.correct {
            row.ours_gbs = Some(m.gbs);
            consider(&mut row, m.gbs, w);
        } else {
            row.ours_error = Some(m.error.unwrap_or_else(|| "incorrect".into()));
        }
    }

    // Template rule.
    let tv = template_rule(&features);
    row.template_variant = Some(tv.id());
    let mt = measure_ours(ctx, &bench, &tv)?;
    if mt.correct {
        row.template_gbs = Some(mt.gbs);
        consider(&mut row, mt.gbs, tv);
    } else {
        row.notes.push(format!(
            "template {} failed: {}",
            tv.id(),
            mt.error.unwrap_or_default()
        ));
    }

    // Oracle: sweep with a shared reference, then re-measure the top 3.
    let x: Vec<T> = random_x(csr.cols(), 0x0b5e_55ed);
    let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let reference = csr.spmv_f64(&x64)?;
    let results = if ctx.oracle {
        sweep::<T>(ctx, &bench)?
    } else {
        Vec::new()
    };
    row.sweep_correct = results.iter().filter(|r| r.3).count();
    let mut ranked: Vec<&(usize, f64, f64, bool)> = results.iter().filter(|r| r.3).collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
    for r in ranked.iter().take(3) {
        let v = ctx.space[r.0];
        if Some(v) == winner || v == tv {
            continue;
        }
        let m = measure_ours(ctx, &bench, &v)?;
        if m.correct {
            consider(&mut row, m.gbs, v);
        }
    }

    // cuSPARSE, on the same device matrix.
    // As many rotated x/y copies as `Bench` uses for this matrix.
    let copies = bench.copies();
    match CusparseSpmv::new(gpu, bench.device_csr(), &x, copies) {
        Err(e) => row.cusparse_error = Some(format!("cuSPARSE setup failed: {e:#}")),
        Ok(mut cs) => {
            let best = run_cusparse(ctx, &mut cs, csr, &reference, &mut row)?;
            if real && let Some(alg) = best {
                row.cusparse_latency_us =
                    time_back_to_back::<anyhow::Error>(gpu, &mut || cs.launch_next(alg), 200).ok();
                match time_graph::<anyhow::Error>(gpu, &mut || cs.launch_next(alg), 50) {
                    Ok(us) => row.cusparse_graph_us = Some(us),
                    Err(e) => {
                        row.notes.push(format!(
                            "CUDA-graph capture of cusparseSpMV failed ({e:#}); cusparse_graph_us is null"
                        ));
                        let _ = gpu.synchronize();
                    }
                }
            }
            // Second round, side by side: ours and cuSPARSE's best algorithm
            // timed again right after each other; each side keeps the faster
            // of its two medians, so a transient slowdown during one
            // measurement does not decide the ratio.
            if let Some(w) = winner
                && row.ours_gbs.is_some()
                && let Some(alg) = best
            {
                let m = measure_ours(ctx, &bench, &w)?;
                if m.correct && row.ours_gbs.is_some_and(|g| m.gbs > g) {
                    row.ours_gbs = Some(m.gbs);
                    consider(&mut row, m.gbs, w);
                }
                let bytes = csr.compulsory_bytes(value.size()) as f64;
                if let Some((med, g)) = time_cusparse(ctx, &mut cs, alg, bytes)?
                    && row.cusparse_gbs.is_some_and(|c| g > c)
                {
                    row.cusparse_gbs = Some(g);
                    if let Some(a) = row.cusparse_algs.iter_mut().find(|a| a.alg == alg.name()) {
                        a.gbs = Some(g);
                        a.median_us = Some(med);
                    }
                }
            }
        }
    }

    // The gather floor, timed right after ours and cuSPARSE (bandwidth-bound sets).
    gather::floor_row::<T>(ctx, &bench, &mut row);

    // Our per-call latency.
    if real
        && row.ours_gbs.is_some()
        && let Some(w) = winner
        && let Ok(func) = ctx.function(&w, value)
    {
        // SAFETY: ctx.function compiled the generated kernel of w for this value type.
        row.ours_latency_us = unsafe { bench.time_back_to_back_us(&func, &w, 200) }.ok();
        // SAFETY: as above.
        row.ours_graph_us = unsafe { bench.time_graph_us(&func, &w, 50) }.ok();
    }

    row.speedup_vs_cusparse = ratio(row.ours_gbs, row.cusparse_gbs);
    if !ctx.oracle {
        // Without the sweep the best seen is not the best of the space.
        row.oracle_gbs = None;
        row.oracle_variant = None;
    }
    if let Err(e) = same_order::<T>(ctx, csr, winner, &mut row) {
        row.notes
            .push(format!("same-order comparison failed: {e:#}"));
    }
    row.pct_copy = ratio(row.ours_gbs, Some(ctx.copy_gbs)).map(|r| r * 100.0);
    row.seconds = t0.elapsed().as_secs_f64();
    let ds = DatasetMatrix {
        name: job.name.to_string(),
        class: job.class.to_string(),
        value,
        features: features.to_vec().to_vec(),
        results: results
            .iter()
            .map(|&(i, g, e, c)| (i, g, sparserl_policies::dataset::finite_err(e), c))
            .collect(),
        cannot_run: Vec::new(),
        provenance: None,
        energy: Vec::new(),
    };
    Ok((row, ds))
}

fn failed_row(job: &Job, value: ValueType, e: &anyhow::Error) -> Row {
    Row {
        matrix: job.name.to_string(),
        class: job.class.to_string(),
        nnz: job.csr.nnz(),
        rows: job.csr.rows(),
        cols: job.csr.cols(),
        value: value.as_str().to_string(),
        suite: job.suite.to_string(),
        ours_error: Some(format!("benchmark failed: {e:#}")),
        cusparse_error: Some("not measured".into()),
        ..Row::default()
    }
}

fn print_row(r: &Row, elapsed: f64) {
    println!(
        "[{elapsed:6.1}s] {:5} {:24} {} nnz {:>7}: ours {} GB/s ({}), cuSPARSE {} GB/s ({}), \
         template {}, oracle {} -> {} ({:.1} s)",
        r.suite,
        r.matrix,
        r.value,
        fmt_nnz(r.nnz),
        fmt_opt(r.ours_gbs, 0),
        r.variant.as_deref().unwrap_or("-"),
        fmt_opt(r.cusparse_gbs, 0),
        r.cusparse_alg.as_deref().map_or("-", short_alg),
        fmt_opt(r.template_gbs, 0),
        fmt_opt(r.oracle_gbs, 0),
        fmt_x(r.speedup_vs_cusparse),
        r.seconds
    );
    if let Some(e) = &r.ours_error {
        println!("          ours FAILED: {e}");
    }
    if r.gather_floor_gbs.is_some() {
        println!(
            "          gather floor {} GB/s: ours {}, cuSPARSE {} of it",
            fmt_opt(r.gather_floor_gbs, 0),
            fmt_x(ratio(r.ours_gbs, r.gather_floor_gbs)),
            fmt_x(ratio(r.cusparse_gbs, r.gather_floor_gbs)),
        );
    }
    if r.cusparse_gbs.is_none()
        && let Some(e) = &r.cusparse_error
    {
        println!("          cuSPARSE FAILED: {e}");
    }
}

struct Runner<'a> {
    ctx: Ctx<'a>,
    start: Instant,
    max_seconds: f64,
    rows: Vec<Row>,
    data: Vec<DatasetMatrix>,
    skipped: Vec<Skipped>,
    /// Where the report is written after every matrix (a run stopped from
    /// outside keeps the rows it finished).
    checkpoint: Checkpoint,
}

/// The report's fixed part and where it goes.
struct Checkpoint {
    head: Report,
    json: PathBuf,
    md: PathBuf,
}

impl Runner<'_> {
    /// The report of the rows so far.
    fn report(&self, partial: bool) -> Report {
        Report {
            rows: self.rows.clone(),
            summary: summarize(&self.rows, self.skipped.len()),
            skipped: self.skipped.clone(),
            elapsed_seconds: self.start.elapsed().as_secs_f64(),
            partial,
            ..self.checkpoint.head.clone()
        }
    }

    /// Writes the JSON and Markdown report of the rows so far.
    fn write_report(&self, partial: bool) -> Result<Report> {
        let report = self.report(partial);
        let c = &self.checkpoint;
        std::fs::write(&c.json, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", c.json.display()))?;
        std::fs::write(&c.md, render_markdown(&report))
            .with_context(|| format!("writing {}", c.md.display()))?;
        Ok(report)
    }
}

impl Runner<'_> {
    fn run_job(&mut self, job: &Job, values: &[ValueType]) {
        for &value in values {
            let elapsed = self.start.elapsed().as_secs_f64();
            // A matrix is started only if one of the usual length would
            // still end within the guard.
            let typical = if self.rows.is_empty() {
                0.0
            } else {
                self.rows.iter().map(|r| r.seconds).sum::<f64>() / self.rows.len() as f64
            };
            if elapsed + typical > self.max_seconds {
                self.skipped.push(Skipped {
                    matrix: job.name.to_string(),
                    suite: job.suite.to_string(),
                    value: value.as_str().to_string(),
                    reason: format!(
                        "time guard: {elapsed:.0} s elapsed, about {typical:.0} s per matrix, \
                         --max-seconds {}",
                        self.max_seconds
                    ),
                });
                continue;
            }
            let r = match value {
                ValueType::F32 => run_matrix::<f32>(&self.ctx, job),
                ValueType::F64 => run_matrix::<f64>(&self.ctx, job),
            };
            let row = match r {
                Ok((row, ds)) => {
                    if !ds.results.is_empty() {
                        self.data.push(ds);
                    }
                    row
                }
                Err(e) => {
                    eprintln!("{} ({value}): {e:#}", job.name);
                    failed_row(job, value, &e)
                }
            };
            print_row(&row, self.start.elapsed().as_secs_f64());
            self.rows.push(row);
            if let Err(e) = self.write_report(true) {
                eprintln!("checkpoint not written: {e:#}");
            }
        }
    }

    fn skip_all(&mut self, name: &str, suite: &str, values: &[ValueType], reason: String) {
        for v in values {
            self.skipped.push(Skipped {
                matrix: name.to_string(),
                suite: suite.to_string(),
                value: v.as_str().to_string(),
                reason: reason.clone(),
            });
        }
    }
}

pub(crate) fn default_matrices_dir() -> PathBuf {
    let root = common::workspace_root();
    let dev = root.join(".device/matrices");
    if dev.is_dir() {
        dev
    } else {
        root.join("tests/fixtures/matrices")
    }
}

/// Loads real matrices in a background thread, one message per file.
fn spawn_real_loader(dir: PathBuf) -> Result<(mpsc::Receiver<Loaded>, JoinHandle<()>)> {
    Ok(common::spawn_loader(common::named_files(&dir)?))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if let Some(BenchOp::Spmm(a)) = args.op {
        return crate::bench_spmm::run(*a);
    }
    if let Some(json) = &args.render {
        return render::rerender(json);
    }
    let start = Instant::now();
    let root = common::workspace_root();
    let out_dir = if args.out.is_relative() && args.out == Path::new("target/bench") {
        root.join(&args.out)
    } else {
        args.out.clone()
    };
    let tuner = GpuTuner::probe().map_err(|e| {
        anyhow!(
            "no GPU: {e}. `bench` measures kernels and needs an NVIDIA GPU with its driver and \
             NVRTC; build with `cargo build --release -p xtask` and run `target/release/xtask \
             bench` on the GPU machine"
        )
    })?;
    cusparse::library_status()?;
    let gpu = tuner.gpu().clone();
    let command = format!(
        "cargo xtask {}",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let do_large = matches!(
        args.suite,
        SuiteArg::Large | SuiteArg::Bandwidth | SuiteArg::All
    );
    let do_irregular = matches!(
        args.suite,
        SuiteArg::Irregular | SuiteArg::Bandwidth | SuiteArg::All
    );
    let do_real = matches!(args.suite, SuiteArg::Real | SuiteArg::All);
    let large_values = args.large_value.types();
    let real_values = args.value.types();

    // Start generating the large matrices (CPU) while the GPU warms up.
    let specs = if do_large {
        large_suite(args.quick)
            .into_iter()
            .filter(|s| args.keeps(s.name, s.class))
            .collect()
    } else {
        Vec::new()
    };
    let irregular_gens: Vec<(IrregularSpec, JoinHandle<Result<Csr>>)> = if do_irregular {
        irregular_suite(args.quick)
            .into_iter()
            .filter(|s| args.keeps(s.name, s.class))
            .enumerate()
            .map(|(i, s)| {
                let s2 = s.clone();
                (
                    s,
                    std::thread::spawn(move || s2.build(0x1a2e_1000 + i as u64)),
                )
            })
            .collect()
    } else {
        Vec::new()
    };
    let gens: Vec<(LargeSpec, JoinHandle<Result<Csr>>)> = specs
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let s2 = s.clone();
            (
                s,
                std::thread::spawn(move || s2.build(0x1a2e_0000 + i as u64)),
            )
        })
        .collect();
    let real_loader = if do_real {
        let dir = args.matrices.clone().unwrap_or_else(default_matrices_dir);
        println!("real matrices from {}", dir.display());
        Some(spawn_real_loader(dir)?)
    } else {
        None
    };

    println!("GPU: {} ({})", tuner.name(), tuner.arch());
    let copy_gbs = tuner.copy_gbs();
    println!("copy bandwidth: {copy_gbs:.0} GB/s");
    let mut values: Vec<ValueType> = Vec::new();
    for v in large_values
        .iter()
        .filter(|_| do_large || do_irregular)
        .chain(real_values.iter().filter(|_| do_real))
    {
        if !values.contains(v) {
            values.push(*v);
        }
    }
    let space = full_space();
    let t = Instant::now();
    let compiled = precompile(&gpu, &space, &values);
    let failed = compiled.values().filter(|r| r.is_err()).count();
    println!(
        "compiled {} kernels in {:.1} s ({failed} failed)",
        compiled.len(),
        t.elapsed().as_secs_f64()
    );
    // Probe cuSPARSE's optional symbols once (also fails early on a broken library).
    let preprocess = {
        let tiny = Csr::from_triplets(1, 1, &[(0, 0, 1.0)])?;
        let a = sparserl_rt::DeviceCsr::<f32>::upload(&gpu, &tiny)?;
        let cs = CusparseSpmv::new(&gpu, &a, &[1.0f32], 1).context("initializing cuSPARSE")?;
        cs.uses_preprocess()
    };

    std::fs::create_dir_all(&out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let checkpoint = Checkpoint {
        head: Report {
            gpu: tuner.name(),
            driver: common::driver_version(),
            date: common::today(),
            command: command.clone(),
            commit: args.commit.clone(),
            policy: sparserl_policies::policy_in_use().choice.version(),
            copy_gbs,
            cusparse_preprocess: preprocess,
            budgets: [args.budget_large, args.budget_real],
            quick: args.quick,
            ..Report::default()
        },
        json: out_dir.join(format!("{}.json", args.stem)),
        md: out_dir.join(format!("{}.md", args.stem)),
    };
    let mut runner = Runner {
        checkpoint,
        ctx: Ctx {
            tuner: &tuner,
            space: space.clone(),
            compiled,
            copy_gbs,
            reps: args.reps,
            sweep_reps: args.sweep_reps,
            oracle: !args.no_oracle,
            gather: !args.no_gather,
        },
        start,
        max_seconds: args.max_seconds,
        rows: Vec::new(),
        data: Vec::new(),
        skipped: Vec::new(),
    };

    for (spec, handle) in gens {
        let csr = match handle.join() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                runner.skip_all(spec.name, "large", &large_values, format!("{e:#}"));
                continue;
            }
            Err(_) => {
                runner.skip_all(
                    spec.name,
                    "large",
                    &large_values,
                    "generator panicked".into(),
                );
                continue;
            }
        };
        println!(
            "large {}: {} x {}, nnz {} ({}; expected {})",
            spec.name,
            csr.rows(),
            csr.cols(),
            csr.nnz(),
            fmt_nnz(csr.nnz()),
            fmt_nnz(spec.expected_nnz() as usize)
        );
        let job = Job {
            name: spec.name,
            class: spec.class,
            suite: "large",
            csr: &csr,
            budget: args.budget_large,
        };
        runner.run_job(&job, &large_values);
    }
    for (spec, handle) in irregular_gens {
        let csr = match handle.join() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                runner.skip_all(spec.name, "irregular", &large_values, format!("{e:#}"));
                continue;
            }
            Err(_) => {
                let why = "generator panicked".to_string();
                runner.skip_all(spec.name, "irregular", &large_values, why);
                continue;
            }
        };
        println!(
            "irregular {}: {} x {}, nnz {} ({})",
            spec.name,
            csr.rows(),
            csr.cols(),
            csr.nnz(),
            fmt_nnz(csr.nnz()),
        );
        let job = Job {
            name: spec.name,
            class: spec.class,
            suite: "irregular",
            csr: &csr,
            budget: args.budget_large,
        };
        runner.run_job(&job, &large_values);
    }
    if let Some((rx, handle)) = real_loader {
        for (name, class, csr) in rx {
            if !args.keeps(&name, &class) {
                continue;
            }
            match csr {
                Err(e) => runner.skip_all(&name, "real", &real_values, format!("{e:#}")),
                Ok(c) if c.rows() == 0 || c.cols() == 0 || c.nnz() == 0 => runner.skip_all(
                    &name,
                    "real",
                    &real_values,
                    format!(
                        "empty matrix ({} x {}, nnz {})",
                        c.rows(),
                        c.cols(),
                        c.nnz()
                    ),
                ),
                Ok(c) => {
                    let job = Job {
                        name: &name,
                        class: &class,
                        suite: "real",
                        csr: &c,
                        budget: args.budget_real,
                    };
                    runner.run_job(&job, &real_values);
                }
            }
        }
        let _ = handle.join();
    }
    if !args.corpus.is_empty() {
        for (name, class, csr) in crate::retune::synthetic_corpus(args.quick)? {
            let listed = args.corpus.iter().any(|c| c == "all" || *c == name);
            if !listed || !args.keeps(&name, &class) {
                continue;
            }
            let job = Job {
                name: &name,
                class: &class,
                suite: "corpus",
                csr: &csr,
                budget: args.budget_real,
            };
            runner.run_job(&job, &real_values);
        }
    }

    // Outputs (the JSON and Markdown were also written after every matrix).
    let report = runner.write_report(false)?;
    let (json_path, md_path) = (&runner.checkpoint.json, &runner.checkpoint.md);
    let svg_path = out_dir.join(format!("{}.svg", args.stem));
    render_svg(&report.rows, &svg_path)?;
    let dataset_path = args
        .dataset
        .clone()
        .unwrap_or_else(|| out_dir.join("sweep.json.gz"));
    let ds = Dataset {
        gpu: report.gpu.clone(),
        copy_gbs,
        date: report.date.clone(),
        command,
        feature_names: Features::NAMES.iter().map(|s| s.to_string()).collect(),
        variants: space,
        matrices: runner.data,
    };
    ds.write(&dataset_path)
        .with_context(|| format!("writing {}", dataset_path.display()))?;
    println!();
    print!("{}", render_summary_md(&report));
    println!(
        "\nwrote {}, {}, {}, {} in {:.0} s",
        json_path.display(),
        md_path.display(),
        svg_path.display(),
        dataset_path.display(),
        report.elapsed_seconds
    );
    if report.rows.is_empty() {
        bail!("no matrix was benchmarked");
    }
    Ok(())
}

#[cfg(test)]
mod tests;
