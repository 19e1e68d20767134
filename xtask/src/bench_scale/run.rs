//! One matrix of the scale benchmark at a time: the time and memory
//! guards, generation and validation, then (with a GPU) our variants,
//! cuSPARSE and the iteration.

use super::generate::{Generated, hashed_values};
use super::report::{Case, Iteration, OrderRun, Renumbering, Report, VendorRun};
use super::vendor::{IndexBits, LargeCusparse, SPLIT_NNZ};
use super::{Args, SELECTION_TOP, Spec};
use crate::cusparse::{ALGS, Alg};
use anyhow::{Context, Result};
use sparserl_rt::large::ops::{self, Index64};
use sparserl_rt::large::reorder::{self, LargePermutation, OwnedLargeCsr};
use sparserl_rt::large::select::{self, Options, Reference};
use sparserl_rt::large::{
    DeviceLargeCsr, LargeCsr, LargeVariant, MemoryNeed, OffsetWidth, RowStats,
};
use sparserl_rt::measure::time_launches;
use sparserl_rt::{DeviceVec, Gpu};
use std::time::Instant;

/// PageRank's damping factor in the iteration.
const DAMPING: f32 = 0.85;

/// Per-run state.
pub struct Runner<'a> {
    gpu: Option<Gpu>,
    args: &'a Args,
    start: Instant,
    copy_gbs: f64,
    /// Seconds per estimated nonzero of the slowest case so far.
    rate: Option<f64>,
    peak_device: u64,
    /// The matrix being run (progress lines).
    current: String,
}

impl<'a> Runner<'a> {
    /// Measures the copy bandwidth and compiles the large path's kernels
    /// (a 1 x 1 SpMV, so that the first matrix's time does not hold the
    /// compile) when there is a GPU.
    pub fn new(gpu: Option<Gpu>, args: &'a Args, start: Instant) -> Result<Self> {
        let copy_gbs = match &gpu {
            Some(g) => {
                warm_up(g).context("compiling the large path")?;
                sparserl_rt::copy_bandwidth_gbs(g).context("copy bandwidth")?
            }
            None => 0.0,
        };
        eprintln!("bench-scale: copy bandwidth {copy_gbs:.0} GB/s");
        Ok(Runner {
            gpu,
            args,
            start,
            copy_gbs,
            rate: None,
            peak_device: 0,
            current: String::new(),
        })
    }

    /// The measured copy bandwidth (GB/s, 0 without a GPU).
    pub fn copy_gbs(&self) -> f64 {
        self.copy_gbs
    }

    /// Summary and peaks into `report`.
    pub fn finish_report(&mut self, report: &mut Report) {
        self.sample_device();
        report.peak_device_bytes = self.peak_device;
        report.peak_host_bytes = peak_host_bytes();
        report.summarize();
    }

    fn sample_device(&mut self) {
        if let Some((free, total)) = self.gpu.as_ref().and_then(|g| g.mem_info().ok()) {
            self.peak_device = self.peak_device.max((total - free) as u64);
        }
    }

    /// Runs `spec` into `report` (a case, or a skip with the reason); never
    /// panics: a panic inside becomes a skip. `time_all`: every variant
    /// timed on both orders (how far the selection is from the best).
    pub fn case(&mut self, spec: Spec, time_all: bool, report: &mut Report) {
        if let Err(why) = self.guards(spec) {
            eprintln!("bench-scale: skipping {}: {why}", spec.name());
            report.skipped.push(format!("{}: {why}", spec.name()));
            return;
        }
        let t0 = Instant::now();
        self.current = spec.name();
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(spec, time_all)));
        match outcome {
            Ok(Ok(case)) => report.cases.push(case),
            Ok(Err(e)) => report.skipped.push(format!("{}: {e:#}", spec.name())),
            Err(_) => report.skipped.push(format!("{}: panicked", spec.name())),
        }
        let rate = t0.elapsed().as_secs_f64() / spec.nnz_estimate() as f64;
        self.rate = Some(self.rate.map_or(rate, |r| r.max(rate)));
    }

    /// The time guard (predicted from the slowest case so far) and the host
    /// memory guard (the given and the renumbered arrays at once: about 17
    /// bytes per nonzero and 48 per row at the peak).
    fn guards(&self, spec: Spec) -> Result<(), String> {
        let left = self.args.max_seconds - self.start.elapsed().as_secs_f64();
        let predicted = self.rate.map_or(0.0, |r| r * spec.nnz_estimate() as f64);
        if left <= 0.0 || predicted > left {
            return Err(format!(
                "time guard: {predicted:.0} s predicted, {left:.0} s left"
            ));
        }
        let need = spec.nnz_estimate() * 17 + spec.rows() * 48;
        match mem_available() {
            Some(avail) if need > avail => Err(format!(
                "host memory: about {need} bytes needed, {avail} available"
            )),
            _ => Ok(()),
        }
    }

    /// Generation and validation; the renumbering on the host (on its own
    /// threads, beside the given order's device work when there is a GPU);
    /// then the renumbered order on the device.
    fn run(&mut self, spec: Spec, time_all: bool) -> Result<Case> {
        eprintln!("bench-scale: generating {}", spec.name());
        let g = spec.generate(self.args.seed)?;
        let t = Instant::now();
        let csr = LargeCsr::try_from_parts(g.n, g.n, &g.indptr, &g.indices, &g.values)?;
        let validation_s = t.elapsed().as_secs_f64();
        eprintln!(
            "bench-scale: {}: {} rows, {} nonzeros, generated in {:.1} s, validated in {:.1} s",
            g.name,
            g.n,
            csr.nnz(),
            g.seconds,
            validation_s
        );
        let mut case = empty_case(&g, &csr, validation_s, self.copy_gbs);
        let (order, rule) = renumber_rule(&case.stats);
        let x_host = hashed_values(self.args.seed ^ 0x0b5e_55ed, csr.cols());
        let gpu = self.gpu.clone();
        let mut it = Iteration::default();
        let renumbered = std::thread::scope(|s| {
            let host = s.spawn(|| renumber(&csr, order));
            if let Some(gpu) = &gpu {
                let run = self.order_run(gpu, &csr, &x_host, "given", time_all, &mut it);
                match run {
                    Ok(r) => case.given = r,
                    Err(e) => case.notes.push(format!("given order failed: {e:#}")),
                }
            }
            host.join()
        });
        drop(g); // the given arrays: the renumbered ones replace them
        let (perm, owned, mut info) = match renumbered {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                case.notes.push(format!("renumbering failed: {e:#}"));
                return Ok(finish(case, it));
            }
            Err(_) => {
                case.notes.push("renumbering panicked".into());
                return Ok(finish(case, it));
            }
        };
        info.rule = rule;
        let t = Instant::now();
        let b = owned.csr()?;
        info.validate_s = t.elapsed().as_secs_f64();
        eprintln!(
            "bench-scale: {}: {} order in {:.1} s, P A P^T in {:.1} s, validated in {:.1} s ({} threads)",
            case.name, info.order, info.order_s, info.permute_s, info.validate_s, info.threads
        );
        case.renumbering = Some(info);
        let x_perm = perm.to_new(&x_host)?;
        drop((perm, x_host));
        match gpu {
            Some(gpu) => {
                let run = self.order_run(&gpu, &b, &x_perm, order.as_str(), time_all, &mut it);
                match run {
                    Ok(r) => case.renumbered = Some(r),
                    Err(e) => case.notes.push(format!("renumbered order failed: {e:#}")),
                }
            }
            None => case
                .notes
                .push("no GPU: generation, validation and renumbering only".into()),
        }
        Ok(finish(case, it))
    }

    /// One numbering on the device: upload (after the memory check), our
    /// selection, cuSPARSE; the device arrays are freed before it returns.
    /// Our iteration runs on a renumbered order, cuSPARSE's on the given one.
    fn order_run(
        &mut self,
        gpu: &Gpu,
        csr: &LargeCsr<'_, u64, f32>,
        x_host: &[f32],
        order: &str,
        time_all: bool,
        it: &mut Iteration,
    ) -> Result<OrderRun> {
        let n = csr.rows() as u64;
        let traffic = csr.csr_bytes(OffsetWidth::for_nnz(csr.nnz() as u64)) + 2 * 4 * n;
        MemoryNeed::check(gpu, "the matrix and its vectors", traffic + 7 * n * 4)?;
        let mut run = OrderRun {
            order: order.into(),
            ..OrderRun::default()
        };
        let t = Instant::now();
        let a = DeviceLargeCsr::upload(gpu, csr)?;
        gpu.synchronize()?;
        run.upload_s = t.elapsed().as_secs_f64();
        self.sample_device();
        let reference = Reference::sample(csr, x_host, self.args.seed)?;
        run.checked_rows = reference.rows.len();
        let copies = if traffic < 2 * gpu.l2_bytes() as u64 {
            4
        } else {
            1
        };
        let mut xs = Vec::new();
        let mut ys = Vec::new();
        for _ in 0..copies {
            xs.push(DeviceVec::from_host(gpu, x_host)?);
            ys.push(DeviceVec::<f32>::zeros(gpu, csr.rows())?);
        }
        let floor_us = traffic as f64 / (self.copy_gbs.max(1.0) * 1e3);
        self.ours(gpu, &a, &reference, &xs, &mut ys, time_all, &mut run, order)?;
        run.selected_of_floor = run.selected_us.map(|s| floor_us / s);
        self.sample_device();
        drop(ys);
        let given = order == "given";
        if !given && let Some(pick) = run.selected.as_deref().and_then(variant_of) {
            it.ours_order = Some(order.into());
            match iteration_ours(gpu, &a, pick, csr, &xs[0], self.args.reps) {
                Ok(us) => it.ours_us = us,
                Err(e) => run
                    .notes
                    .push(format!("{order}: our iteration failed: {e:#}")),
            }
        }
        drop(xs);
        self.vendor(
            gpu,
            &a,
            x_host,
            &reference,
            csr,
            &mut run,
            given.then_some(it),
        );
        drop(a);
        gpu.synchronize()?;
        Ok(run)
    }

    /// Our selection on the full matrix: the cost model's first
    /// [`SELECTION_TOP`] checked and timed, every variant when `time_all`.
    #[allow(clippy::too_many_arguments)]
    fn ours(
        &mut self,
        gpu: &Gpu,
        a: &DeviceLargeCsr<f32>,
        reference: &Reference,
        xs: &[DeviceVec<f32>],
        ys: &mut [DeviceVec<f32>],
        time_all: bool,
        run: &mut OrderRun,
        order: &str,
    ) -> Result<()> {
        let measured = if time_all {
            LargeVariant::SPACE.len()
        } else {
            SELECTION_TOP
        };
        let opts = Options {
            measured,
            warmup: 2,
            reps: self.args.reps,
            max_seconds: 1.0,
        };
        let name = format!("{} ({order})", self.current);
        let sel = select::select(gpu, a, reference, xs, ys, self.copy_gbs, opts, |c| {
            let ok = c.check.is_some_and(|k| k.passed);
            eprintln!(
                "bench-scale: {name}: {} (rank {}) check {} err {:.1e}, median {} us",
                c.variant.id(),
                c.rank,
                if ok { "passed" } else { "FAILED" },
                c.check.map_or(f64::NAN, |k| k.max_rel_err),
                c.measured
                    .map_or("-".into(), |m| format!("{:.0}", m.median))
            );
        })?;
        run.measured = measured.min(sel.candidates.len());
        run.model_pick = sel.model_pick().map(|v| v.id());
        let chosen = sel.best_of_first(SELECTION_TOP);
        let best = sel.best_of_first(LargeVariant::SPACE.len());
        run.selected = chosen.map(|c| c.0.id());
        run.selected_us = chosen.map(|c| c.1);
        run.best = best.map(|b| b.0.id());
        run.best_us = best.map(|b| b.1);
        run.selected_over_best = chosen.zip(best).map(|(c, b)| c.1 / b.1);
        run.model_over_best = sel
            .model_pick()
            .and_then(|m| sel.median_us(m))
            .zip(best)
            .map(|(m, b)| m / b.1);
        run.candidates = sel.candidates;
        Ok(())
    }

    /// cuSPARSE with 32-bit indices where the matrix fits, and 64-bit; the
    /// iteration with its fastest configuration when `it` is given.
    #[allow(clippy::too_many_arguments)]
    fn vendor(
        &mut self,
        gpu: &Gpu,
        a: &DeviceLargeCsr<f32>,
        x_host: &[f32],
        reference: &Reference,
        csr: &LargeCsr<'_, u64, f32>,
        run: &mut OrderRun,
        mut it: Option<&mut Iteration>,
    ) {
        let fits32 = a.offset_width() == OffsetWidth::U32 && (a.cols() as u64) < (1 << 31);
        let mut notes = Vec::new();
        let index = match Index64::build(gpu, a) {
            Ok(i) => Some(i),
            Err(e) => {
                notes.push(format!("{}: no 64-bit cuSPARSE run: {e}", run.order));
                None
            }
        };
        self.sample_device();
        let mut runs: Vec<(IndexBits, Option<&Index64>)> = Vec::new();
        if fits32 {
            runs.push((IndexBits::I32, None));
        }
        if let Some(i) = index.as_ref() {
            runs.push((IndexBits::I64, Some(i)));
        }
        if a.nnz() as u64 > SPLIT_NNZ && (a.cols() as u64) < (1 << 31) {
            runs.push((IndexBits::Split32, None));
        }
        let reps = self.args.reps;
        for (bits, idx) in runs {
            let with_iter = it.is_some();
            let outcome = vendor_runs(gpu, a, bits, idx, x_host, reference, csr, reps, with_iter);
            self.sample_device();
            match outcome {
                Ok((vr, iter_us)) => {
                    let best = best_of(&vr);
                    match bits {
                        IndexBits::I32 | IndexBits::Split32 => {
                            run.cusparse32_us = best.map(|b| b.1)
                        }
                        IndexBits::I64 => run.cusparse64_us = best.map(|b| b.1),
                    }
                    if let (Some((alg, us)), Some(it)) = (iter_us, it.as_deref_mut())
                        && it.cusparse_us.is_none_or(|u| us < u)
                    {
                        it.cusparse_us = Some(us);
                        it.cusparse_config = Some(format!("{}/{}", bits_num(bits), alg.name()));
                    }
                    for r in vr.iter().filter(|r| r.median_us.is_none()) {
                        notes.push(format!(
                            "{}: cuSPARSE {}-bit {} has no time: {}",
                            run.order,
                            r.index_bits,
                            r.alg,
                            r.error.clone().unwrap_or_else(|| format!(
                                "check failed (err {:.1e})",
                                r.max_rel_err
                            ))
                        ));
                    }
                    run.cusparse.extend(vr);
                }
                Err(e) => notes.push(format!(
                    "{}: cuSPARSE {}-bit failed: {e:#}",
                    run.order,
                    bits_num(bits)
                )),
            }
        }
        run.kernel_speedup = run
            .cusparse_best_us()
            .zip(run.selected_us)
            .map(|(v, o)| v / o);
        run.notes.extend(notes);
    }
}

/// The renumbering a matrix gets, and why: degree order when the row
/// lengths vary by more than their mean (row-length cv above
/// [`DEGREE_CV`]: a skewed graph whose hubs dominate the reads of `x`),
/// reverse Cuthill-McKee otherwise (a mesh-like matrix with a geometry).
pub fn renumber_rule(stats: &RowStats) -> (Order, String) {
    if stats.cv > DEGREE_CV {
        (
            Order::Degree,
            format!("row-length cv {:.2} > {DEGREE_CV}: degree order", stats.cv),
        )
    } else {
        (
            Order::Rcm,
            format!(
                "row-length cv {:.2} <= {DEGREE_CV}: reverse Cuthill-McKee",
                stats.cv
            ),
        )
    }
}

/// The row-length coefficient of variation from which degree order is used.
pub const DEGREE_CV: f64 = 1.0;

/// The two renumberings of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Decreasing degree in `A + Aᵀ`.
    Degree,
    /// Reverse Cuthill-McKee.
    Rcm,
}

impl Order {
    /// Name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Order::Degree => "degree",
            Order::Rcm => "rcm",
        }
    }
}

/// What [`renumber`] returns: the permutation, `P A Pᵀ` and the timings.
type Renumbered = (LargePermutation, OwnedLargeCsr<f32>, Renumbering);

/// The order of `csr` and `P A Pᵀ`, timed (on every host thread).
fn renumber(csr: &LargeCsr<'_, u64, f32>, order: Order) -> Result<Renumbered> {
    let t = Instant::now();
    let perm = match order {
        Order::Degree => reorder::degree_order(csr)?,
        Order::Rcm => reorder::rcm_order(csr)?,
    };
    let order_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let owned = reorder::permute(csr, &perm)?;
    let info = Renumbering {
        order: order.as_str().into(),
        rule: String::new(),
        order_s,
        permute_s: t.elapsed().as_secs_f64(),
        validate_s: 0.0,
        threads: reorder::threads(),
    };
    Ok((perm, owned, info))
}

/// The case with its speedups and iteration filled in.
fn finish(mut case: Case, it: Iteration) -> Case {
    case.iteration = it;
    case.finish();
    case
}

/// One SpMV of a 1 x 1 matrix: NVRTC compiles `spmv64.cu` at first use.
fn warm_up(gpu: &Gpu) -> Result<()> {
    let (ip, ix, vs) = ([0u64, 1], [0u32], [1.0f32]);
    let a = DeviceLargeCsr::upload(gpu, &LargeCsr::try_from_parts(1, 1, &ip, &ix, &vs)?)?;
    let x = DeviceVec::from_host(gpu, &[1.0f32])?;
    let mut y = DeviceVec::<f32>::zeros(gpu, 1)?;
    a.spmv(gpu, LargeVariant::Merge { items: 8 }, &x, &mut y)?;
    gpu.synchronize()?;
    Ok(())
}

fn bits_num(b: IndexBits) -> u32 {
    match b {
        IndexBits::I32 | IndexBits::Split32 => 32,
        IndexBits::I64 => 64,
    }
}

/// The fastest checked run: (algorithm name, median us).
fn best_of(runs: &[VendorRun]) -> Option<(String, f64)> {
    runs.iter()
        .filter_map(|r| r.median_us.map(|m| (r.alg.clone(), m)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// cuSPARSE's runs of one index type and its iteration (fastest algorithm, us).
type VendorOutcome = (Vec<VendorRun>, Option<(Alg, f64)>);

/// Every cuSPARSE algorithm with `bits` index types: checked against the
/// reference, then timed; and the iteration with the fastest when
/// `with_iter`.
#[allow(clippy::too_many_arguments)]
fn vendor_runs(
    gpu: &Gpu,
    a: &DeviceLargeCsr<f32>,
    bits: IndexBits,
    index: Option<&Index64>,
    x_host: &[f32],
    reference: &Reference,
    csr: &LargeCsr<'_, u64, f32>,
    reps: u32,
    with_iter: bool,
) -> Result<VendorOutcome> {
    let x = DeviceVec::from_host(gpu, x_host)?;
    let y = DeviceVec::<f32>::zeros(gpu, a.rows())?;
    let split = (bits == IndexBits::Split32).then(|| csr.indptr());
    let mut cs = LargeCusparse::new(gpu, a, bits, index, split, x, y)?;
    let mut runs = Vec::new();
    for alg in ALGS {
        let run = vendor_alg(gpu, &mut cs, bits, alg, reference, reps);
        eprintln!(
            "bench-scale: cuSPARSE {}-bit{} {}: {}",
            bits_num(bits),
            match cs.row_blocks() {
                1 => String::new(),
                k => format!(" ({k} row blocks)"),
            },
            alg.name(),
            match (&run.error, run.median_us) {
                (Some(e), _) => format!("error {e}"),
                (None, Some(m)) => format!(
                    "passed, median {m:.0} us{}",
                    if run.preprocessed == Some(false) {
                        " (plain cusparseSpMV: preprocessing failed)"
                    } else {
                        ""
                    }
                ),
                (None, None) => format!("check FAILED (err {:.1e})", run.max_rel_err),
            }
        );
        runs.push(run);
    }
    let best = ALGS
        .into_iter()
        .zip(&runs)
        .filter_map(|(alg, r)| r.median_us.map(|m| (alg, m)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let iter = match best.filter(|_| with_iter) {
        Some((alg, _)) => {
            iteration_vendor(gpu, &mut cs, alg, csr, x_host, reps)?.map(|us| (alg, us))
        }
        None => None,
    };
    Ok((runs, iter))
}

/// One algorithm: prepare, check on a NaN-poisoned `y`, time.
fn vendor_alg(
    gpu: &Gpu,
    cs: &mut LargeCusparse<'_>,
    bits: IndexBits,
    alg: Alg,
    reference: &Reference,
    reps: u32,
) -> VendorRun {
    let mut run = VendorRun {
        index_bits: bits_num(bits),
        row_blocks: cs.row_blocks(),
        alg: alg.name().into(),
        preprocessed: None,
        preprocess_error: None,
        passed: false,
        max_rel_err: f64::NAN,
        median_us: None,
        error: None,
    };
    let outcome = (|| -> Result<()> {
        let prepared = cs.prepare(alg);
        if let Some(pre) = cs.preprocess_outcome(alg) {
            run.preprocessed = Some(pre.is_ok());
            run.preprocess_error = pre.err();
        }
        prepared?;
        ops::fill(gpu, f32::NAN, cs.vectors().1)?;
        cs.launch(alg)?;
        let check = select::compare(&cs.vectors().1.to_host(gpu)?, reference);
        run.passed = check.passed;
        run.max_rel_err = check.max_rel_err;
        if check.passed {
            let mut launch = || cs.launch(alg);
            let times = time_launches::<anyhow::Error>(gpu, &mut launch, 2, reps, 1.0)?;
            gpu.synchronize()?;
            run.median_us = sparserl_rt::measure::stats(&times).map(|s| s.median);
        }
        Ok(())
    })();
    if let Err(e) = outcome {
        run.error = Some(format!("{e:#}"));
    }
    run
}

/// `w = 1 / max(1, row length)` per vertex (the iteration's weights).
fn weights(csr: &LargeCsr<'_, u64, f32>) -> Vec<f32> {
    let ip = csr.indptr();
    (0..csr.rows())
        .map(|r| 1.0 / (ip[r + 1] - ip[r]).max(1) as f32)
        .collect()
}

/// Our iteration: scale, SpMV with `pick`, axpb; median microseconds.
fn iteration_ours(
    gpu: &Gpu,
    a: &DeviceLargeCsr<f32>,
    pick: LargeVariant,
    csr: &LargeCsr<'_, u64, f32>,
    x: &DeviceVec<f32>,
    reps: u32,
) -> Result<Option<f64>> {
    let w = DeviceVec::from_host(gpu, &weights(csr))?;
    let n = csr.rows();
    let mut xs = DeviceVec::<f32>::zeros(gpu, n)?;
    let mut y = DeviceVec::<f32>::zeros(gpu, n)?;
    let mut next = DeviceVec::<f32>::zeros(gpu, n)?;
    let beta = (1.0 - DAMPING) / n as f32;
    let mut launch = || -> Result<()> {
        ops::scale(gpu, x, &w, &mut xs)?;
        a.spmv(gpu, pick, &xs, &mut y)?;
        ops::axpb(gpu, DAMPING, &y, beta, &mut next)?;
        Ok(())
    };
    let times = time_launches::<anyhow::Error>(gpu, &mut launch, 2, reps, 1.0)?;
    gpu.synchronize()?;
    Ok(sparserl_rt::measure::stats(&times).map(|s| s.median))
}

/// The same iteration with cuSPARSE's SpMV (`alg`) between the same kernels.
fn iteration_vendor(
    gpu: &Gpu,
    cs: &mut LargeCusparse<'_>,
    alg: Alg,
    csr: &LargeCsr<'_, u64, f32>,
    x_host: &[f32],
    reps: u32,
) -> Result<Option<f64>> {
    let w = DeviceVec::from_host(gpu, &weights(csr))?;
    let x = DeviceVec::from_host(gpu, x_host)?;
    let n = csr.rows();
    let mut next = DeviceVec::<f32>::zeros(gpu, n)?;
    let beta = (1.0 - DAMPING) / n as f32;
    let mut launch = || -> Result<()> {
        ops::scale(gpu, &x, &w, cs.x_mut())?;
        cs.launch(alg)?;
        ops::axpb(gpu, DAMPING, cs.vectors().1, beta, &mut next)?;
        Ok(())
    };
    let times = time_launches::<anyhow::Error>(gpu, &mut launch, 2, reps, 1.0)?;
    gpu.synchronize()?;
    Ok(sparserl_rt::measure::stats(&times).map(|s| s.median))
}

fn variant_of(id: &str) -> Option<LargeVariant> {
    LargeVariant::SPACE.into_iter().find(|v| v.id() == id)
}

/// A case with the host-side facts filled in.
fn empty_case(
    g: &Generated,
    csr: &LargeCsr<'_, u64, f32>,
    validation_s: f64,
    copy_gbs: f64,
) -> Case {
    let width = OffsetWidth::for_nnz(csr.nnz() as u64);
    let traffic = csr.csr_bytes(width) + 2 * 4 * g.n as u64;
    Case {
        name: g.name.clone(),
        family: g.family.into(),
        rows: g.n as u64,
        nnz: csr.nnz() as u64,
        offsets: width.as_str().into(),
        stats: RowStats::of(csr),
        generation_s: g.seconds,
        validation_s,
        given: OrderRun {
            order: "given".into(),
            ..OrderRun::default()
        },
        renumbering: None,
        renumbered: None,
        speedup: None,
        speedup_vs_64: None,
        speedup_given_order: None,
        traffic_bytes: traffic,
        floor_us: if copy_gbs > 0.0 {
            traffic as f64 / (copy_gbs * 1e3)
        } else {
            0.0
        },
        iteration: Iteration::default(),
        notes: Vec::new(),
    }
}

/// `MemAvailable` of `/proc/meminfo`, bytes.
fn mem_available() -> Option<u64> {
    proc_kib("/proc/meminfo", "MemAvailable:")
}

/// The process's peak resident memory (`VmHWM`), bytes (0 when unknown).
pub fn peak_host_bytes() -> u64 {
    proc_kib("/proc/self/status", "VmHWM:").unwrap_or(0)
}

fn proc_kib(file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(file).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}
