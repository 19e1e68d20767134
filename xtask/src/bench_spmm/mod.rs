//! `cargo xtask bench spmm`: SpMM `Y = A X` (X and Y of n columns), ours vs
//! cuSPARSE's best CSR algorithm vs the X-row gather floor vs the copy
//! bandwidth, on one GPU in one process.
//!
//! For every matrix, value type, layout and width n, all on the same device
//! matrix and measured the same way (correctness against the float64
//! reference on a NaN-poisoned Y first, then CUDA-event timing through
//! `time_launches`: warm-up, median, rotated X/Y copies when the case's
//! compulsory bytes fit in L2):
//!
//! - **ours**: the winner of the product's measured SpMM search at the
//!   case's width ([`search`]: `search_spmm` in the product's order,
//!   budget `--budget-large` / `--budget-real`), launched through the
//!   product's `SpmmKernel` API ([`ours`]), checked and re-timed [`RETIMES`]
//!   times (the median reported; the round repeated, at most
//!   [`RETIME_ROUNDS`], while it is not [`settled`]); the prior's first pick beside it,
//!   and with `--sweep` the best of the whole space and the untuned fallback;
//! - **cuSPARSE**: `cusparseSpMM` with every CSR algorithm, preprocessed,
//!   the fastest correct one kept and re-timed like ours (an algorithm
//!   cuSPARSE refuses for the layout or value type is recorded as skipped);
//! - **floor**: `floor.cu`, the traffic of the X-row gathers in CSR order.
//!
//! Writes `<stem>.json` and `<stem>.md` after every matrix (marked partial)
//! and `<stem>.svg` at the end.

/// Fresh re-times of ours' winner and of cuSPARSE's fastest algorithm
/// (each a median over `--reps`); the report keeps the median of them, so
/// one slow window (clocks, a neighbour) does not decide a small case.
pub const RETIMES: u32 = 3;

/// Rounds of [`RETIMES`] re-times at most per side: a round is repeated
/// while it is not [`settled`] (a transient of the machine, a clock drop or
/// a host stall, seen by one side only, read 0.10x and 16.6x on two
/// neighbouring cases of a 3.5-7 us matrix).
pub const RETIME_ROUNDS: usize = 3;

/// Most ratio between the slowest and the fastest of a round's re-times and
/// the reading that chose the kernel for the round to count as settled.
pub const SETTLED_SPREAD: f64 = 1.3;

/// Whether the re-times `times` and the reading that chose the kernel
/// (`chosen_us`, when known) lie within [`SETTLED_SPREAD`] of each other.
pub fn settled(times: &[f64], chosen_us: Option<f64>) -> bool {
    let all: Vec<f64> = times.iter().copied().chain(chosen_us).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(0.0, f64::max);
    !all.is_empty() && lo > 0.0 && hi.is_finite() && hi <= SETTLED_SPREAD * lo
}

/// Every re-time reading, the last round's median, and a note when more
/// than one round was needed.
pub type Retimed = (Vec<f64>, Option<f64>, Option<String>);

/// Re-times until a round is [`settled`], at most [`RETIME_ROUNDS`] rounds
/// (`round` returns one round's readings, `None` to stop: an error it
/// recorded). Returns every reading, the last round's median and a note
/// when more than one round was needed.
pub fn retime_settled(
    chosen_us: Option<f64>,
    mut round: impl FnMut() -> Result<Option<Vec<f64>>>,
) -> Result<Option<Retimed>> {
    let mut all = Vec::new();
    let mut rounds = 0;
    loop {
        let Some(times) = round()? else {
            return Ok(None);
        };
        rounds += 1;
        all.extend_from_slice(&times);
        let calm = settled(&times, chosen_us);
        if calm || rounds == RETIME_ROUNDS {
            let note = (rounds > 1).then(|| {
                format!(
                    "re-timed in {rounds} rounds ({}; chosen at {}; readings {})",
                    if calm { "settled" } else { "still apart" },
                    chosen_us.map_or("-".to_string(), |c| format!("{c:.2} us")),
                    all.iter()
                        .map(|t| format!("{t:.2}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            });
            return Ok(Some((all, median_of(&times), note)));
        }
    }
}

/// Median of `xs` (the lower middle one for an even count); `None` when empty.
pub fn median_of(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len().saturating_sub(1) / 2).copied()
}

pub mod args;
pub mod check;
pub mod floor;
mod merge;
pub mod ours;
mod render;
pub mod renumbered;
pub mod report;
pub mod rowerr;
mod search;
pub mod suite;
mod vendor;

pub use args::SpmmArgs;
pub use check::random_dense;
pub use vendor::best_alg;

use crate::common;
use crate::cusparse_spmm::CusparseSpmm;
use anyhow::{Context, Result, anyhow};
use report::{Report, Row, Skipped, derive, summarize};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::{Csr, DeviceCsr, Gpu, Layouts, Scalar, ValueType};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Compulsory bytes of `Y = A X`: `nnz (v + 4) + (rows + 1) 4 + (cols + rows) n v`.
pub fn compulsory_bytes(a: &Csr, n: usize, value: ValueType) -> u64 {
    sparserl_rt::spmm::spmm_bytes(a.rows(), a.cols(), a.nnz(), n, value.size())
}

/// What every case shares.
struct Ctx {
    gpu: Gpu,
    ours: ours::Ours,
    copy_gbs: f64,
    reps: u32,
    floor: bool,
    sweep: args::SweepArg,
    reorder: sparserl_rt::reorder::Reorder,
}

/// One matrix of a suite.
struct Job<'a> {
    name: &'a str,
    class: &'a str,
    suite: &'static str,
    csr: &'a Csr,
}

/// One case: a job at one value type, layout and width.
struct Case<'a> {
    job: &'a Job<'a>,
    n: usize,
    layout: DenseLayout,
    /// `--reorder`: the job's renumbering and this case's conversion time.
    renum: Option<(&'a renumbered::JobRenum, Option<f64>)>,
}

/// The value types whose space is compiled: f32 for the large suite (it is
/// f32 only), the requested ones for the real set; none twice. A real-set
/// run in f64 alone no longer compiles (and spends its time guard on) the
/// f32 space.
fn compiled_values(do_large: bool, do_real: bool, real_values: &[ValueType]) -> Vec<ValueType> {
    let mut values = Vec::new();
    if do_large {
        values.push(ValueType::F32);
    }
    if do_real {
        for &v in real_values {
            if !values.contains(&v) {
                values.push(v);
            }
        }
    }
    values
}

fn new_row(c: &Case, value: ValueType, l2: usize) -> Row {
    let a = c.job.csr;
    let bytes = compulsory_bytes(a, c.n, value);
    Row {
        matrix: c.job.name.to_string(),
        class: c.job.class.to_string(),
        suite: c.job.suite.to_string(),
        bound: if bytes <= l2 as u64 {
            "latency"
        } else {
            "bandwidth"
        }
        .to_string(),
        rows: a.rows(),
        cols: a.cols(),
        nnz: a.nnz(),
        value: value.as_str().to_string(),
        layout: c.layout.as_str().to_string(),
        n: c.n,
        bytes,
        ..Row::default()
    }
}

/// Rotated X/Y copies: 8 when the case's compulsory bytes fit in L2, else 1.
fn copies(bytes: u64, l2: usize) -> usize {
    if bytes <= l2 as u64 { 8 } else { 1 }
}

/// Runs one case for value type `T`.
fn run_case<T: Scalar>(ctx: &Ctx, c: &Case) -> Result<Row> {
    let t0 = Instant::now();
    let gpu = &ctx.gpu;
    let csr = c.job.csr;
    let mut row = new_row(c, T::TYPE, gpu.l2_bytes());
    let copies = copies(row.bytes, gpu.l2_bytes());
    let x: Vec<T> = random_dense(csr.cols() * c.n, 0x5e_ed00 + c.n as u64);
    let mut dref = reference(gpu, csr, &x, c)?;
    let a = DeviceCsr::<T>::upload_with(gpu, csr, Layouts::NONE).context("uploading A")?;
    let sweep = match ctx.sweep {
        args::SweepArg::None => false,
        args::SweepArg::Real => c.job.suite == "real",
        args::SweepArg::All => true,
    };
    match c.renum {
        None => {
            let inputs = inputs(csr, &a, &x, c, copies, ctx.reps);
            ctx.ours.run(gpu, &inputs, &mut dref, &mut row, sweep)?;
        }
        Some((r, convert_us)) => {
            let xr = renumbered::permute_rows(&x, &r.new_to_old, c.n, c.layout);
            run_renumbered(ctx, c, r, &xr, copies, sweep, &mut row)?;
            row.convert_us = convert_us;
        }
    }
    match CusparseSpmm::new(gpu, &a, &x, c.n, c.layout, copies) {
        Err(e) => row.cusparse_error = Some(format!("cuSPARSE setup failed: {e:#}")),
        Ok(mut cs) => {
            let (algs, best) = best_alg(&mut cs, &mut dref, ctx.reps)?;
            row.notes.extend(cs.notes().iter().cloned());
            row.cusparse_algs = algs;
            match best {
                Some((alg, chosen)) => {
                    // The fastest algorithm re-timed like ours' winner.
                    let round = || vendor::retime_alg(&mut cs, alg, ctx.reps).map(Some);
                    if let Some((times, us, note)) = retime_settled(Some(chosen), round)? {
                        row.cusparse_retimes_us = times;
                        row.cusparse_us = us;
                        row.notes.extend(note.map(|n| format!("cuSPARSE {n}")));
                    }
                    row.cusparse_alg = Some(alg.name().to_string());
                }
                None => row.cusparse_error = Some(alg_errors(&row)),
            }
        }
    }
    if ctx.floor && c.renum.is_none() {
        match floor::floor_us(gpu, &a, c.n, c.layout, copies, ctx.reps) {
            Ok(us) => row.floor_us = us,
            Err(e) => row.notes.push(format!("floor failed: {e:#}")),
        }
    }
    derive(&mut row, ctx.copy_gbs);
    row.seconds = t0.elapsed().as_secs_f64();
    Ok(row)
}

/// The float64 reference of `csr` times `x`, on the device.
fn reference<T: Scalar>(
    gpu: &Gpu,
    csr: &Csr,
    x: &[T],
    c: &Case,
) -> Result<rowerr::DeviceReference> {
    let reference = check::Reference::new(csr, x, c.n, c.layout, None);
    rowerr::DeviceReference::upload(gpu, &reference)
}

fn inputs<'a, T: Scalar>(
    csr: &'a Csr,
    a: &'a DeviceCsr<T>,
    x: &'a [T],
    c: &Case,
    copies: usize,
    reps: u32,
) -> ours::Inputs<'a, T> {
    ours::Inputs {
        csr,
        a,
        x,
        n: c.n,
        layout: c.layout,
        copies,
        reps,
    }
}

/// Ours on `P A Pᵀ` with `x` (X's rows permuted), checked against its own
/// float64 reference; the floor on the renumbered order.
fn run_renumbered<T: Scalar>(
    ctx: &Ctx,
    c: &Case,
    r: &renumbered::JobRenum,
    x: &[T],
    copies: usize,
    sweep: bool,
    row: &mut Row,
) -> Result<()> {
    let gpu = &ctx.gpu;
    let mut rref = reference(gpu, &r.csr, x, c)?;
    let ar = DeviceCsr::<T>::upload_with(gpu, &r.csr, Layouts::NONE).context("uploading P A Pᵀ")?;
    let inputs = inputs(&r.csr, &ar, x, c, copies, ctx.reps);
    ctx.ours.run(gpu, &inputs, &mut rref, row, sweep)?;
    row.reorder = Some(ctx.reorder.as_str().to_string());
    row.reorder_host_seconds = Some(r.host_seconds);
    if ctx.floor {
        match floor::floor_us(gpu, &ar, c.n, c.layout, copies, ctx.reps) {
            Ok(us) => {
                row.floor_us = us;
                row.notes.push("floor on the renumbered order".into());
            }
            Err(e) => row.notes.push(format!("floor failed: {e:#}")),
        }
    }
    Ok(())
}

fn alg_errors(row: &Row) -> String {
    row.cusparse_algs
        .iter()
        .map(|a| {
            let short = a.alg.strip_prefix("CUSPARSE_SPMM_").unwrap_or(&a.alg);
            format!("{short}: {}", a.error.as_deref().unwrap_or("not timed"))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The runner: cases, time guard and the report written after every matrix.
struct Runner {
    ctx: Ctx,
    start: Instant,
    max_seconds: f64,
    rows: Vec<Row>,
    skipped: Vec<Skipped>,
    head: Report,
    json: PathBuf,
    md: PathBuf,
}

impl Runner {
    fn report(&self, partial: bool) -> Report {
        Report {
            rows: self.rows.clone(),
            summary: summarize(&self.rows, self.skipped.len()),
            skipped: self.skipped.clone(),
            elapsed_seconds: self.start.elapsed().as_secs_f64(),
            partial,
            ..self.head.clone()
        }
    }

    fn write(&self, partial: bool) -> Result<Report> {
        let r = self.report(partial);
        std::fs::write(&self.json, serde_json::to_string_pretty(&r)?)
            .with_context(|| format!("writing {}", self.json.display()))?;
        std::fs::write(&self.md, render::markdown(&r))
            .with_context(|| format!("writing {}", self.md.display()))?;
        Ok(r)
    }

    /// Mean seconds of a finished case of `suite` (0 before the first).
    fn typical(&self, suite: &str) -> f64 {
        let s: Vec<f64> = self
            .rows
            .iter()
            .filter(|r| r.suite == suite)
            .map(|r| r.seconds)
            .collect();
        if s.is_empty() {
            0.0
        } else {
            s.iter().sum::<f64>() / s.len() as f64
        }
    }

    fn skip(&mut self, job: &Job, what: String, reason: String) {
        self.skipped.push(Skipped {
            matrix: job.name.to_string(),
            suite: job.suite.to_string(),
            what,
            reason,
        });
    }

    /// Every case of one matrix; the report is rewritten afterwards.
    fn run_job(
        &mut self,
        job: &Job,
        values: &[ValueType],
        layouts: &[DenseLayout],
        widths: &[usize],
    ) {
        let reorder = self.ctx.reorder;
        let renum = renumbered::renumber(job.csr, reorder);
        if let Some(r) = &renum {
            println!(
                "  renumbered ({}) in {:.2} s on the host",
                reorder.as_str(),
                r.host_seconds
            );
        }
        let shapes: Vec<renumbered::Shape> = layouts
            .iter()
            .flat_map(|&l| widths.iter().map(move |&n| (l, n)))
            .collect();
        for &value in values {
            let convert = match &renum {
                Some(_) => self.convert_times(job, value, &shapes),
                None => Vec::new(),
            };
            for &(layout, n) in &shapes {
                let renum = renum.as_ref().map(|r| {
                    let us = convert
                        .iter()
                        .find(|c| c.0 == (layout, n))
                        .and_then(|c| c.1);
                    (r, us)
                });
                self.run_one(job, value, layout, n, renum);
            }
        }
        if let Err(e) = self.write(true) {
            eprintln!("checkpoint not written: {e:#}");
        }
    }

    /// The row conversions' times of `job` in `value` for every shape (none
    /// where the timing failed; the failure is printed).
    fn convert_times(
        &self,
        job: &Job,
        value: ValueType,
        shapes: &[renumbered::Shape],
    ) -> renumbered::ConvertTimes {
        let (gpu, reorder, reps) = (&self.ctx.gpu, self.ctx.reorder, self.ctx.reps);
        let r = match value {
            ValueType::F32 => renumbered::convert_us::<f32>(gpu, job.csr, reorder, shapes, reps),
            ValueType::F64 => renumbered::convert_us::<f64>(gpu, job.csr, reorder, shapes, reps),
        };
        r.unwrap_or_else(|e| {
            eprintln!("{} {value}: row conversions not timed: {e:#}", job.name);
            Vec::new()
        })
    }

    fn run_one(
        &mut self,
        job: &Job,
        value: ValueType,
        layout: DenseLayout,
        n: usize,
        renum: Option<(&renumbered::JobRenum, Option<f64>)>,
    ) {
        let elapsed = self.start.elapsed().as_secs_f64();
        let what = format!("{value} {layout} n={n}");
        let typical = self.typical(job.suite);
        if elapsed + typical > self.max_seconds {
            let why = format!(
                "time guard: {elapsed:.0} s elapsed, about {typical:.1} s per case, --max-seconds {}",
                self.max_seconds
            );
            self.skip(job, what, why);
            return;
        }
        let case = Case {
            job,
            n,
            layout,
            renum,
        };
        let r = match value {
            ValueType::F32 => run_case::<f32>(&self.ctx, &case),
            ValueType::F64 => run_case::<f64>(&self.ctx, &case),
        };
        match r {
            Ok(row) => {
                render::print_row(&row, self.start.elapsed().as_secs_f64());
                self.rows.push(row);
            }
            Err(e) => {
                eprintln!("{} {what}: FAILED: {e:#}", job.name);
                self.skip(job, what, format!("failed: {e:#}"));
                // A failed launch may leave work queued or the context broken.
                let _ = self.ctx.gpu.synchronize();
            }
        }
    }
}

use crate::common::Loaded;

/// Loads the real matrices in a background thread, one message per file
/// (`--quick`: the first six).
fn spawn_real_loader(
    dir: PathBuf,
    quick: bool,
) -> Result<(mpsc::Receiver<Loaded>, JoinHandle<()>)> {
    let mut files = common::named_files(&dir)?;
    if quick {
        files.truncate(6);
    }
    Ok(common::spawn_loader(files))
}

type Generated = (suite::GraphSpec, JoinHandle<Result<Csr>>);

/// Starts generating the large graphs, one thread each.
fn spawn_graphs(args: &SpmmArgs) -> Vec<Generated> {
    suite::large_graphs(args.quick)
        .into_iter()
        .filter(|s| args.keeps(s.name, s.class))
        .enumerate()
        .map(|(i, s)| {
            let s2 = s.clone();
            (
                s,
                std::thread::spawn(move || s2.build(suite::SEED_BASE + i as u64)),
            )
        })
        .collect()
}

fn out_dir(args: &SpmmArgs) -> PathBuf {
    if args.out.is_relative() && args.out == Path::new("target/bench") {
        common::workspace_root().join(&args.out)
    } else {
        args.out.clone()
    }
}

/// The GPU, or the error that says there is none.
pub(crate) fn probe_gpu(what: &str) -> Result<Gpu> {
    if !sparserl_rt::device::driver_present() {
        return Err(anyhow!(
            "no GPU: the CUDA driver library is not present. `{what}` measures kernels and needs \
             an NVIDIA GPU with its driver and NVRTC; build with `cargo build --release -p xtask` \
             and run `target/release/xtask {what}` on the GPU machine"
        ));
    }
    Gpu::new(0).map_err(|e| anyhow!("no GPU: {e}. `{what}` needs an NVIDIA GPU"))
}

/// Runs the command.
pub fn run(args: SpmmArgs) -> Result<()> {
    if let Some(json) = &args.render {
        return render::rerender(json);
    }
    if !args.merge.is_empty() {
        return merge::run(&args.merge, &args.out, &args.stem);
    }
    let start = Instant::now();
    let gpu = probe_gpu("bench spmm")?;
    crate::cusparse::library_status()?;
    let widths = args.widths();
    anyhow::ensure!(!widths.is_empty(), "no width to run (--n)");
    let layouts = args.layout.layouts();
    let do_large = matches!(args.suite, args::SpmmSuite::Large | args::SpmmSuite::All);
    let do_real = matches!(args.suite, args::SpmmSuite::Real | args::SpmmSuite::All);
    let real_values = args.value.types();
    let gens = if do_large {
        spawn_graphs(&args)
    } else {
        Vec::new()
    };
    let real = if do_real {
        let dir = args
            .matrices
            .clone()
            .unwrap_or_else(crate::bench::default_matrices_dir);
        println!("real matrices from {}", dir.display());
        Some(spawn_real_loader(dir, args.quick)?)
    } else {
        None
    };
    println!(
        "GPU: {} ({}), L2 {} MB",
        gpu.name(),
        gpu.arch(),
        gpu.l2_bytes() >> 20
    );
    let copy_gbs = sparserl_rt::copy_bandwidth_gbs(&gpu)?;
    println!("copy bandwidth: {copy_gbs:.0} GB/s");
    let ours = ours::Ours::new(
        &gpu,
        &compiled_values(do_large, do_real, &real_values),
        &layouts,
        &widths,
        args.sweep_reps,
        args.finalists,
        (args.budget_large, args.budget_real),
    )?;
    let dir = out_dir(&args);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let head = Report {
        gpu: gpu.name().to_string(),
        driver: common::driver_version(),
        date: common::today(),
        command: format!(
            "cargo xtask {}",
            std::env::args().skip(1).collect::<Vec<_>>().join(" ")
        ),
        commit: args.commit.clone(),
        // SpMM is ranked by the SpMM prior; the SpMV policy is named beside it.
        policy: format!(
            "{} (SpMV policy {})",
            sparserl_policies::SPMM_PRIOR_VERSION,
            sparserl_policies::policy_in_use().choice.version()
        ),
        ours_choice: ours.choice_label(),
        copy_gbs,
        l2_bytes: gpu.l2_bytes(),
        quick: args.quick,
        ..Report::default()
    };
    let mut runner = Runner {
        ctx: Ctx {
            gpu,
            ours,
            copy_gbs,
            reps: args.reps,
            floor: !args.no_floor,
            sweep: args.sweep,
            reorder: args.reorder.reorder(),
        },
        start,
        max_seconds: args.max_seconds,
        rows: Vec::new(),
        skipped: Vec::new(),
        head,
        json: dir.join(format!("{}.json", args.stem)),
        md: dir.join(format!("{}.md", args.stem)),
    };
    run_large(&mut runner, gens, &layouts, &widths);
    if let Some((rx, handle)) = real {
        for (name, class, csr) in rx {
            if !args.keeps(&name, &class) {
                continue;
            }
            run_real(
                &mut runner,
                &name,
                &class,
                csr,
                &real_values,
                &layouts,
                &widths,
            );
        }
        let _ = handle.join();
    }
    finish(&runner, &dir, &args.stem)
}

fn run_large(r: &mut Runner, gens: Vec<Generated>, layouts: &[DenseLayout], widths: &[usize]) {
    for (spec, handle) in gens {
        let csr = match handle.join() {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => {
                r.skipped.push(Skipped {
                    matrix: spec.name.into(),
                    suite: "large".into(),
                    what: "all".into(),
                    reason: format!("{e:#}"),
                });
                continue;
            }
            Err(_) => continue,
        };
        println!(
            "large {}: {} x {}, nnz {} ({} order)",
            spec.name,
            csr.rows(),
            csr.cols(),
            csr.nnz(),
            spec.order.as_str()
        );
        let job = Job {
            name: spec.name,
            class: spec.class,
            suite: "large",
            csr: &csr,
        };
        r.run_job(&job, &[ValueType::F32], layouts, widths);
    }
}

fn run_real(
    r: &mut Runner,
    name: &str,
    class: &str,
    csr: Result<Csr>,
    values: &[ValueType],
    layouts: &[DenseLayout],
    widths: &[usize],
) {
    let job_skip = |r: &mut Runner, reason: String| {
        r.skipped.push(Skipped {
            matrix: name.into(),
            suite: "real".into(),
            what: "all".into(),
            reason,
        })
    };
    match csr {
        Err(e) => job_skip(r, format!("{e:#}")),
        Ok(c) if c.rows() == 0 || c.cols() == 0 || c.nnz() == 0 => job_skip(
            r,
            format!(
                "empty matrix ({} x {}, nnz {})",
                c.rows(),
                c.cols(),
                c.nnz()
            ),
        ),
        Ok(c) => {
            let job = Job {
                name,
                class,
                suite: "real",
                csr: &c,
            };
            r.run_job(&job, values, layouts, widths);
        }
    }
}

fn finish(runner: &Runner, dir: &Path, stem: &str) -> Result<()> {
    let report = runner.write(false)?;
    let svg = dir.join(format!("{stem}.svg"));
    render::svg(&report, &svg)?;
    println!();
    print!("{}", render::summary_md(&report));
    println!(
        "\nwrote {}, {}, {} in {:.0} s",
        runner.json.display(),
        runner.md.display(),
        svg.display(),
        report.elapsed_seconds
    );
    anyhow::ensure!(!report.rows.is_empty(), "no case was benchmarked");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_apart_from_the_choice_is_timed_again() {
        assert!(settled(&[3.4, 3.5, 3.45], Some(3.5)));
        assert!(!settled(&[65.7, 3.46, 80.4], Some(3.5)));
        // A round that agrees with itself but not with the choice.
        assert!(!settled(&[67.4, 65.8, 62.8], Some(6.7)));
        assert!(settled(&[3.4], None));
        assert!(!settled(&[], None));
        let mut rounds = vec![vec![3.45, 3.44, 3.46], vec![65.7, 3.46, 80.4]];
        let (all, us, note) = retime_settled(Some(3.5), || Ok(rounds.pop()))
            .unwrap()
            .unwrap();
        assert_eq!(all.len(), 6);
        assert_eq!(us, Some(3.45));
        assert!(note.unwrap().contains("2 rounds (settled"));
        // Settled at once: no note; never settled: the last round's median.
        let (_, us, note) = retime_settled(Some(3.5), || Ok(Some(vec![3.5, 3.6, 3.4])))
            .unwrap()
            .unwrap();
        assert_eq!((us, note), (Some(3.5), None));
        let mut n = 0;
        let (all, us, note) = retime_settled(Some(1.0), || {
            n += 1;
            Ok(Some(vec![9.0 + n as f64]))
        })
        .unwrap()
        .unwrap();
        assert_eq!((all.len(), us), (RETIME_ROUNDS, Some(12.0)));
        assert!(note.unwrap().contains("still apart"));
        // A round that stops (an error it recorded) stops the re-timing.
        assert!(retime_settled(None, || Ok(None)).unwrap().is_none());
    }

    #[test]
    fn compulsory_bytes_follow_the_formula() {
        let a = Csr::from_triplets(3, 2, &[(0, 0, 1.0), (2, 1, 1.0)]).unwrap();
        // nnz (v + 4) + (rows + 1) 4 + (cols + rows) n v
        assert_eq!(
            compulsory_bytes(&a, 8, ValueType::F32),
            2 * 8 + 4 * 4 + 5 * 8 * 4
        );
        assert_eq!(compulsory_bytes(&a, 1, ValueType::F64), 2 * 12 + 16 + 5 * 8);
        assert_eq!(copies(10, 100), 8);
        assert_eq!(copies(1000, 100), 1);
    }

    #[test]
    fn only_the_value_types_a_run_needs_are_compiled() {
        use ValueType::{F32, F64};
        assert_eq!(compiled_values(false, true, &[F64]), vec![F64]);
        assert_eq!(compiled_values(true, true, &[F64]), vec![F32, F64]);
        assert_eq!(compiled_values(true, true, &[F32, F64]), vec![F32, F64]);
        assert_eq!(compiled_values(true, false, &[F64]), vec![F32]);
        assert_eq!(compiled_values(false, true, &[F32]), vec![F32]);
    }

    #[test]
    fn re_times_are_summarised_by_their_median() {
        // One slow window among three does not decide the case.
        assert_eq!(median_of(&[2.8, 8.0, 2.9]), Some(2.9));
        assert_eq!(median_of(&[3.0, 1.0]), Some(1.0));
        assert_eq!(median_of(&[f64::NAN, 4.0]), Some(4.0));
        assert_eq!(median_of(&[]), None);
    }

    #[test]
    fn reports_without_re_times_still_read() {
        // A row as reports before the re-times wrote it.
        let mut v = serde_json::to_value(Row::default()).unwrap();
        let o = v.as_object_mut().unwrap();
        o.remove("ours_retimes_us");
        o.remove("cusparse_retimes_us");
        let back: Row = serde_json::from_value(v).unwrap();
        assert!(back.ours_retimes_us.is_empty() && back.cusparse_retimes_us.is_empty());
    }
}
