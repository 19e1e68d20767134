//! `cargo xtask energy`: joules per SpMV, ours against cuSPARSE, and what an
//! energy objective would choose, on one GPU in one process.
//!
//! For every matrix (the large synthetic suite of `bench`, generated the same
//! way, and the largest real matrices): the product's measured search (as
//! `bench` runs it), then the energy per call, each with its spread over
//! repeated windows (`sparserl_rt::energy`), of
//! - every finalist of the search (the winner, i.e. the time objective's
//!   pick, and the next variants by measured GB/s), each checked against the
//!   float64 reference first;
//! - the time-trained policy's no-GPU pick (what a build without a GPU
//!   ships), when the search's finalists do not hold it;
//! - cuSPARSE's best CSR algorithm (by time, each algorithm checked first);
//!
//! then the energy objective's pick among the finalists (the lowest energy,
//! only when it beats the time pick by more than the noise): energy saved
//! and time lost against the time pick. The counter's update interval and
//! resolution and the idle power are measured at the start; each matrix also
//! gets an idle-power window. Writes `<stem>.json` and `<stem>.md` after
//! every matrix (marked partial until the run ends).

use crate::bench::{LargeSpec, large_suite};
use crate::common;
use crate::cusparse::{self, Alg, CusparseSpmv};
use anyhow::{Context, Result, anyhow};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sparserl_build::SearchConfig;
use sparserl_build::gpu::{GpuTuner, load_variant};
use sparserl_policies::default_policy;
use sparserl_rt::energy::{EnergyMeasurement, EnergyMeter, EnergyOptions};
use sparserl_rt::measure::{rel_err, time_launches};
use sparserl_rt::{Bench, Csr, Features, Scalar, ValueType, Variant, tolerance};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

mod report;
#[cfg(test)]
mod tests;

pub use report::*;

/// Which matrices to measure.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Suite {
    /// The large synthetic suite of `bench`.
    Large,
    /// The largest real matrices of `--matrices`.
    Real,
    /// Both.
    All,
}

/// Arguments of `cargo xtask energy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Matrix suite.
    #[arg(long, value_enum, default_value = "all")]
    pub suite: Suite,
    /// Value type.
    #[arg(long, value_enum, default_value = "f32")]
    pub value: ValueKind,
    /// Directory of real Matrix Market matrices (default as `bench`).
    #[arg(long)]
    pub matrices: Option<PathBuf>,
    /// Real matrices measured: the largest files of the directory.
    #[arg(long, default_value_t = 6)]
    pub real_max: usize,
    /// Finalists of the search measured (the time pick included), 2 to 8.
    #[arg(long, default_value_t = 4)]
    pub finalists: usize,
    /// Search budget in seconds per large matrix.
    #[arg(long, default_value_t = 4.0)]
    pub budget_large: f64,
    /// Search budget in seconds per real matrix.
    #[arg(long, default_value_t = 1.5)]
    pub budget_real: f64,
    /// Minimum window length in seconds (raised to 5 counter intervals).
    #[arg(long, default_value_t = 0.2)]
    pub window: f64,
    /// Windows (repeated measurements) per kernel.
    #[arg(long, default_value_t = 4)]
    pub repeats: usize,
    /// Small synthetic sizes, 3 real matrices, 3 finalists: a smoke run.
    #[arg(long)]
    pub quick: bool,
    /// Total time guard in seconds: a matrix is started only while the time
    /// elapsed plus the mean time per matrix so far stays within it.
    #[arg(long, default_value_t = 220.0)]
    pub max_seconds: f64,
    /// Keep only matrices whose name or class is in this comma-separated list.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// An earlier report of this command to continue: its rows are kept and
    /// their matrices not measured again (its skipped ones are tried); the
    /// commands and commits of both runs are recorded.
    #[arg(long)]
    pub resume: Option<PathBuf>,
    /// Output directory.
    #[arg(long, default_value = "target/bench")]
    pub out: PathBuf,
    /// File stem of the outputs.
    #[arg(long, default_value = "energy-h200")]
    pub stem: String,
    /// Recorded in the JSON: the commit that was built.
    #[arg(long, default_value = "unknown")]
    pub commit: String,
}

/// The value type of every matrix.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// 32-bit floats.
    F32,
    /// 64-bit floats.
    F64,
}

impl Args {
    fn keeps(&self, name: &str, class: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|o| o == name || o == class)
    }
    fn value_type(&self) -> ValueType {
        match self.value {
            ValueKind::F32 => ValueType::F32,
            ValueKind::F64 => ValueType::F64,
        }
    }
}

/// What every matrix shares.
struct Ctx<'a> {
    tuner: &'a GpuTuner,
    meter: &'a EnergyMeter,
    opts: EnergyOptions,
    finalists: usize,
}

/// One matrix to measure.
struct Job<'a> {
    name: &'a str,
    class: &'a str,
    suite: &'static str,
    csr: &'a Csr,
    budget: f64,
}

/// The search's finalists (the build's energy phase measures the same).
pub(crate) use sparserl_build::search::energy::finalists;

/// Runs the product's search on `job`.
fn search(ctx: &Ctx, job: &Job, value: ValueType) -> Result<sparserl_build::TuneOutcome> {
    let proposals: Vec<Variant> = default_policy()
        .propose(&Features::compute(job.csr), value, 16)
        .into_iter()
        .map(|p| p.variant)
        .collect();
    let cfg = SearchConfig {
        budget_seconds: job.budget,
        ..SearchConfig::default()
    };
    ctx.tuner
        .tune(&[job.csr], value, &proposals, &cfg)
        .map_err(|e| anyhow!("search failed: {e}"))
}

/// Checks `v` against the float64 reference, then measures its energy.
fn measure_variant<T: Scalar>(
    ctx: &Ctx,
    bench: &Bench<T>,
    v: &Variant,
) -> Result<EnergyMeasurement> {
    variant_energy(ctx.tuner, ctx.meter, &ctx.opts, bench, v)
}

/// Checks `v` against the float64 reference on `bench`'s matrix, then
/// measures its energy per call with `meter` (also `collect --energy-top`).
pub(crate) fn variant_energy<T: Scalar>(
    tuner: &GpuTuner,
    meter: &EnergyMeter,
    opts: &EnergyOptions,
    bench: &Bench<T>,
    v: &Variant,
) -> Result<EnergyMeasurement> {
    let gpu = tuner.gpu();
    let func = load_variant::<T>(gpu, v).map_err(|e| anyhow!("compile failed: {e}"))?;
    // SAFETY: load_variant compiles codegen::generate(v, T): a kernel of
    // the SpMV ABI for T generated for v.
    let err = unsafe { bench.check(&func, v) }?;
    let tol = tolerance(T::TYPE);
    anyhow::ensure!(
        err <= tol,
        "relative error {err:.3e} above tolerance {tol:.0e}"
    );
    // SAFETY: as above.
    unsafe {
        bench.with_launcher(&func, v, |launch| {
            let mut l = || launch().map_err(anyhow::Error::from);
            meter.measure::<anyhow::Error>(gpu, &mut l, opts)
        })
    }
}

fn random_x<T: Scalar>(n: usize) -> Vec<T> {
    let mut rng = ChaCha8Rng::seed_from_u64(0x0e7e_1234);
    (0..n)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect()
}

/// Whether `alg` computes `A x` (NaN-poisoned `y`, else a zeroed one).
fn cusparse_correct<T: Scalar>(
    cs: &mut CusparseSpmv<'_, T>,
    alg: Alg,
    reference: &[f64],
) -> Result<bool> {
    for fill in [f64::NAN, 0.0] {
        cs.set_y0(&vec![T::from_f64(fill); reference.len()])?;
        cs.launch(alg, 0)?;
        let y: Vec<f64> = cs.read_y0()?.iter().map(|v| v.to_f64()).collect();
        if rel_err(&y, reference) <= tolerance(T::TYPE) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// cuSPARSE's fastest correct CSR algorithm and its energy per call.
fn measure_cusparse<T: Scalar>(ctx: &Ctx, bench: &Bench<T>) -> Result<(Alg, EnergyMeasurement)> {
    let gpu = ctx.tuner.gpu();
    let csr = bench.csr();
    let x: Vec<T> = random_x(csr.cols());
    let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let reference = csr.spmv_f64(&x64)?;
    let mut cs = CusparseSpmv::new(gpu, bench.device_csr(), &x, bench.copies())?;
    let mut best: Option<(Alg, f64)> = None;
    for alg in cusparse::ALGS {
        if cs.prepare(alg).is_err() || !cusparse_correct(&mut cs, alg, &reference)? {
            continue;
        }
        let times = time_launches::<anyhow::Error>(gpu, &mut || cs.launch_next(alg), 5, 20, 0.5)?;
        if let Some(m) = crate::bench::median(&times)
            && best.is_none_or(|b| m < b.1)
        {
            best = Some((alg, m));
        }
    }
    let (alg, _) = best.context("no cuSPARSE algorithm was correct")?;
    let e = ctx
        .meter
        .measure::<anyhow::Error>(gpu, &mut || cs.launch_next(alg), &ctx.opts)?;
    Ok((alg, e))
}

/// Measures one matrix: search, finalists, cuSPARSE, the energy pick.
fn run_matrix<T: Scalar>(ctx: &Ctx, job: &Job) -> Result<Row> {
    let t0 = Instant::now();
    let gpu = ctx.tuner.gpu();
    let mut row = Row::new(job.name, job.class, job.suite, job.csr, T::TYPE);
    let outcome = search(ctx, job, T::TYPE)?;
    row.search_seconds = outcome.seconds;
    let bench = Bench::<T>::new(gpu, job.csr).context("uploading the matrix")?;
    row.idle_power_w = ctx.meter.idle_power(ctx.opts.window_s).ok();
    for (v, gbs) in finalists(&outcome, ctx.finalists) {
        let mut f = Finalist {
            variant: v.id(),
            search_gbs: gbs,
            energy: None,
            error: None,
        };
        match measure_variant(ctx, &bench, &v) {
            Ok(e) => f.energy = Some(e),
            Err(e) if is_fatal(&e) => return Err(e),
            Err(e) => f.error = Some(format!("{e:#}")),
        }
        row.finalists.push(f);
    }
    row.zero_shot = zero_shot(ctx, job, &bench, &row.finalists)?;
    match measure_cusparse(ctx, &bench) {
        Ok((alg, e)) => {
            row.cusparse_alg = Some(alg.name().to_string());
            row.cusparse = Some(e);
        }
        Err(e) => row.cusparse_error = Some(format!("{e:#}")),
    }
    row.conclude();
    row.seconds = t0.elapsed().as_secs_f64();
    Ok(row)
}

/// The policy's no-GPU pick for `job`, measured like a finalist (the
/// finalist's figures reused when the search also found it).
fn zero_shot<T: Scalar>(
    ctx: &Ctx,
    job: &Job,
    bench: &Bench<T>,
    finalists: &[Finalist],
) -> Result<Option<Finalist>> {
    let Some(p) = default_policy().pick(&Features::compute(job.csr), T::TYPE) else {
        return Ok(None);
    };
    let id = p.variant.id();
    if let Some(f) = finalists.iter().find(|f| f.variant == id) {
        return Ok(Some(f.clone()));
    }
    let mut f = Finalist {
        variant: id,
        ..Finalist::default()
    };
    match measure_variant(ctx, bench, &p.variant) {
        Ok(e) => f.energy = Some(e),
        Err(e) if is_fatal(&e) => return Err(e),
        Err(e) => f.error = Some(format!("{e:#}")),
    }
    Ok(Some(f))
}

/// A device fault that leaves the context unusable: stop the run.
fn is_fatal(e: &anyhow::Error) -> bool {
    e.downcast_ref::<sparserl_rt::RtError>()
        .is_some_and(|r| r.is_context_fatal())
}

/// The `n` largest Matrix Market files of `dir` that `args` keeps, read in
/// a background thread.
fn spawn_real(dir: PathBuf, args: &Args, n: usize) -> Result<mpsc::Receiver<Loaded>> {
    let mut files: Vec<(u64, (PathBuf, String, String))> = common::named_files(&dir)?
        .into_iter()
        .filter(|(_, name, class)| args.keeps(name, class))
        .map(|f| (std::fs::metadata(&f.0).map_or(0, |m| m.len()), f))
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files.truncate(n);
    Ok(common::spawn_loader(files.into_iter().map(|f| f.1).collect()).0)
}

use crate::common::Loaded;

/// A large matrix generated in the background.
type Generated = (LargeSpec, std::thread::JoinHandle<Result<Csr>>);

/// Starts generating the large suite (the seeds `bench` uses).
fn spawn_large(args: &Args) -> Vec<Generated> {
    large_suite(args.quick)
        .into_iter()
        .enumerate()
        .filter(|(_, s)| args.keeps(s.name, s.class))
        .map(|(i, s)| {
            let s2 = s.clone();
            (
                s,
                std::thread::spawn(move || s2.build(0x1a2e_0000 + i as u64)),
            )
        })
        .collect()
}

/// Opens the GPU, cuSPARSE and NVML, with the messages a user needs.
fn open() -> Result<(GpuTuner, EnergyMeter)> {
    let tuner = GpuTuner::probe().map_err(|e| {
        anyhow!(
            "no GPU: {e}. `energy` measures kernels and needs an NVIDIA GPU with its driver and \
             NVRTC; build with `cargo build --release -p xtask` and run `target/release/xtask \
             energy` on the GPU machine"
        )
    })?;
    cusparse::library_status()?;
    let meter = EnergyMeter::new(tuner.gpu()).context("energy measurement needs NVML")?;
    Ok((tuner, meter))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let start = Instant::now();
    let (tuner, meter) = open()?;
    let value = args.value_type();
    let (do_large, do_real) = (args.suite != Suite::Real, args.suite != Suite::Large);
    let gens = if do_large {
        spawn_large(&args)
    } else {
        Vec::new()
    };
    let real_n = if args.quick {
        args.real_max.min(3)
    } else {
        args.real_max
    };
    let real = if do_real {
        let dir = args
            .matrices
            .clone()
            .unwrap_or_else(crate::bench::default_matrices_dir);
        println!(
            "real matrices: the {real_n} largest files of {}",
            dir.display()
        );
        Some(spawn_real(dir, &args, real_n)?)
    } else {
        None
    };
    println!(
        "GPU: {} ({}), NVML device {} at PCI {}",
        tuner.name(),
        tuner.arch(),
        meter.name(),
        meter.bus_id()
    );
    let (counter, idle) = meter
        .probe_counter(0.5)
        .context("probing the energy counter")?;
    println!(
        "energy counter: changes every {:.1} ms (p10 {:.1}, p90 {:.1}), steps of {} mJ (gcd), \
         polled every {:.1} us; idle {idle:.1} W",
        counter.interval_ms,
        counter.interval_p10_ms,
        counter.interval_p90_ms,
        counter.step_gcd_mj,
        counter.poll_us
    );
    let opts = EnergyOptions {
        window_s: args.window.max(5.0 * counter.interval_ms * 1e-3),
        repeats: if args.quick { 3 } else { args.repeats.max(2) },
        ..EnergyOptions::default()
    };
    let ctx = Ctx {
        tuner: &tuner,
        meter: &meter,
        opts,
        finalists: if args.quick {
            3
        } else {
            args.finalists.clamp(2, 8)
        },
    };
    let mut runner = Runner::new(&args, &tuner, &meter, counter, idle, &opts, start)?;
    for (spec, handle) in gens {
        match handle
            .join()
            .map_err(|_| anyhow!("generator panicked"))
            .and_then(|r| r)
        {
            Ok(csr) => runner.job(
                &ctx,
                &Job {
                    name: spec.name,
                    class: spec.class,
                    suite: "large",
                    csr: &csr,
                    budget: args.budget_large,
                },
                value,
            ),
            Err(e) => runner.skip(spec.name, "large", format!("{e:#}")),
        }
    }
    for (name, class, csr) in real.into_iter().flatten() {
        match csr {
            Ok(c) if c.nnz() > 0 => runner.job(
                &ctx,
                &Job {
                    name: &name,
                    class: &class,
                    suite: "real",
                    csr: &c,
                    budget: args.budget_real,
                },
                value,
            ),
            Ok(_) => runner.skip(&name, "real", "empty matrix".into()),
            Err(e) => runner.skip(&name, "real", format!("{e:#}")),
        }
    }
    runner.finish()
}

/// `fresh` continuing the report at `path`: its rows, both commands and
/// both commits (when they differ).
fn resumed(fresh: Report, path: &std::path::Path) -> Result<Report> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the report to resume, {}", path.display()))?;
    let old: Report = serde_json::from_str(&text)
        .with_context(|| format!("{} is not an energy report", path.display()))?;
    anyhow::ensure!(
        old.gpu == fresh.gpu,
        "{} was measured on {}, this GPU is {}",
        path.display(),
        old.gpu,
        fresh.gpu
    );
    let commit = if old.commit == fresh.commit {
        fresh.commit.clone()
    } else {
        format!("{} + {} (resumed)", old.commit, fresh.commit)
    };
    Ok(Report {
        command: format!("{} ; {}", old.command, fresh.command),
        commit,
        rows: old.rows,
        ..fresh
    })
}

/// Keeps the rows, the time guard and the checkpointed report.
struct Runner {
    report: Report,
    json: PathBuf,
    md: PathBuf,
    start: Instant,
    max_seconds: f64,
}

impl Runner {
    fn new(
        args: &Args,
        tuner: &GpuTuner,
        meter: &EnergyMeter,
        counter: sparserl_rt::energy::CounterStats,
        idle: f64,
        opts: &EnergyOptions,
        start: Instant,
    ) -> Result<Self> {
        let root = common::workspace_root();
        let out = if args.out.is_relative() {
            root.join(&args.out)
        } else {
            args.out.clone()
        };
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        let report = Report {
            gpu: tuner.name(),
            nvml_device: meter.name().to_string(),
            bus_id: meter.bus_id().to_string(),
            driver: common::driver_version(),
            date: common::today(),
            command: format!(
                "cargo xtask {}",
                std::env::args().skip(1).collect::<Vec<_>>().join(" ")
            ),
            commit: args.commit.clone(),
            policy: sparserl_policies::policy_in_use().choice.version(),
            counter: Some(counter),
            idle_power_w: idle,
            window_s: opts.window_s,
            repeats: opts.repeats,
            warmup_s: opts.warmup_s,
            quick: args.quick,
            partial: true,
            ..Report::default()
        };
        let report = match &args.resume {
            Some(p) => resumed(report, p)?,
            None => report,
        };
        Ok(Runner {
            report,
            json: out.join(format!("{}.json", args.stem)),
            md: out.join(format!("{}.md", args.stem)),
            start,
            max_seconds: args.max_seconds,
        })
    }

    fn job(&mut self, ctx: &Ctx, job: &Job, value: ValueType) {
        if self
            .report
            .rows
            .iter()
            .any(|r| r.matrix == job.name && r.suite == job.suite)
        {
            return; // measured by the run this one resumes
        }
        let elapsed = self.start.elapsed().as_secs_f64();
        let rows = &self.report.rows;
        let typical = rows.iter().map(|r| r.seconds).sum::<f64>() / rows.len().max(1) as f64;
        if elapsed + typical > self.max_seconds {
            let why =
                format!("time guard: {elapsed:.0} s elapsed, about {typical:.0} s per matrix");
            return self.skip(job.name, job.suite, why);
        }
        let r = match value {
            ValueType::F32 => run_matrix::<f32>(ctx, job),
            ValueType::F64 => run_matrix::<f64>(ctx, job),
        };
        let row = r.unwrap_or_else(|e| {
            let mut row = Row::new(job.name, job.class, job.suite, job.csr, value);
            row.error = Some(format!("{e:#}"));
            row
        });
        println!(
            "[{:6.1}s] {}",
            self.start.elapsed().as_secs_f64(),
            row.progress_line()
        );
        self.report.rows.push(row);
        self.write();
    }

    fn skip(&mut self, matrix: &str, suite: &str, reason: String) {
        println!("skipped {suite} {matrix}: {reason}");
        self.report.skipped.push(Skipped {
            matrix: matrix.into(),
            suite: suite.into(),
            reason,
        });
    }

    fn write(&mut self) {
        self.report.elapsed_seconds = self.start.elapsed().as_secs_f64();
        self.report.summary = summarize(&self.report.rows);
        let r = serde_json::to_string_pretty(&self.report)
            .map_err(anyhow::Error::from)
            .and_then(|j| Ok(std::fs::write(&self.json, j)?))
            .and_then(|_| Ok(std::fs::write(&self.md, render_markdown(&self.report))?));
        if let Err(e) = r {
            eprintln!("report not written: {e:#}");
        }
    }

    fn finish(mut self) -> Result<()> {
        self.report.partial = false;
        self.write();
        print!("\n{}", render_summary(&self.report));
        println!(
            "\nwrote {} and {} in {:.0} s",
            self.json.display(),
            self.md.display(),
            self.report.elapsed_seconds
        );
        anyhow::ensure!(!self.report.rows.is_empty(), "no matrix was measured");
        Ok(())
    }
}
