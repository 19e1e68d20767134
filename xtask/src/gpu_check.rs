//! `cargo xtask gpu-check`: checks every generator variant on a GPU.
//!
//! Every variant (the core and layout design spaces plus a fixed list of
//! fine-knob variants) is compiled for `f32` and `f64` and run on every matrix of the
//! real-matrix directory plus built-in edge cases (empty rows, one row holding
//! half the nonzeros, 1 x 1, n x 1, 1 x n, rectangular, nnz = 0, rows longer
//! than 65536). Each check uses a fresh random `x`, poisons `y` with NaN and
//! compares with the float64 CPU reference ([`Bench::check`]); a variant
//! passes on a matrix when every check is finite and within
//! [`tolerance`]. Then `compute-sanitizer` (memcheck, racecheck and initcheck) runs one
//! launch of each variant on five small edge cases, by re-invoking this
//! executable with the hidden `--sanitizer-pass` flag.
//!
//! Writes `gpu-check.json` and `gpu-check.md` into `--out` and exits non-zero
//! when any check failed or the sanitizer reported errors.

use crate::common;
use anyhow::{Context, Result, anyhow, bail};
use cudarc::driver::CudaFunction;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Serialize, Serializer};
use sparserl_build::codegen;
use sparserl_rt::{
    Bench, Csr, Gpu, RtError, Scalar, Strategy, ValueType, Variant, core_space, full_space, synth,
    tolerance,
};
use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod large;
mod matrices;
mod report;
mod sanitizer;
mod sanitizer_slices;
mod spmm;

use matrices::*;
use report::*;
use sanitizer::*;

/// Which variants to check.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantSet {
    /// The core and layout design spaces plus fixed fine-knob variants.
    All,
    /// The core and layout design spaces only.
    Core,
}

impl VariantSet {
    fn as_str(self) -> &'static str {
        match self {
            VariantSet::All => "all",
            VariantSet::Core => "core",
        }
    }
}

/// Arguments of `gpu-check`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory of Matrix Market files to check on (default: `.device/matrices`
    /// if it exists, else `tests/fixtures/matrices`). Unreadable files are
    /// listed as skipped.
    #[arg(long, value_name = "DIR")]
    matrices: Option<PathBuf>,
    /// Output directory for `gpu-check.json`, `gpu-check.md` and sanitizer logs.
    #[arg(long, value_name = "DIR", default_value = "target/gpu-check")]
    out: PathBuf,
    /// `all`: the core and layout design spaces plus fine-knob variants;
    /// `core`: the core and layout spaces only.
    #[arg(long, value_enum, default_value_t = VariantSet::All)]
    variants: VariantSet,
    /// Checks per (value type, matrix, variant), each with a fresh random x.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    checks: u32,
    /// Skip the compute-sanitizer memcheck, racecheck and initcheck runs.
    #[arg(long)]
    no_sanitizer: bool,
    /// Time limit of each compute-sanitizer run, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 240)]
    sanitizer_timeout: u64,
    /// Internal: launch each variant once on small edge cases and exit
    /// (what runs under compute-sanitizer).
    #[arg(long, hide = true)]
    sanitizer_pass: bool,
    /// Only the SpMM section (and its sanitizer subset): no SpMV variants,
    /// no fused check.
    #[arg(long, conflicts_with = "no_spmm")]
    spmm_only: bool,
    /// Skip the SpMM section.
    #[arg(long)]
    no_spmm: bool,
    /// Only the large path's section (every `LargeVariant`, 32- and 64-bit
    /// row pointers, f32 / f64, on its edge cases) and its sanitizer runs.
    #[arg(long, conflicts_with = "spmm_only")]
    large_only: bool,
    /// Widths N of the SpMM section's built-in part (comma-separated).
    #[arg(long, value_delimiter = ',', default_values_t = sparserl_rt::spmm::check::CHECK_WIDTHS)]
    spmm_widths: Vec<usize>,
    /// Only the SpMM variants whose id contains this text (e.g. `row-warp`: a
    /// check of new variants without the whole space; comma-separated parts:
    /// ids that contain every part, and no part written `!text`), in the
    /// SpMM section and its sanitizer subset.
    #[arg(long, value_name = "TEXT")]
    spmm_variants: Option<String>,
    /// Sanitizer processes at a time for the SpMM section (`--spmm-only`):
    /// above 1 its sanitizer subset is cut into slices of the design space
    /// (family, block, group, next knob; a slice of more than 1/N of the
    /// points cut by further knobs), each run under every tool as its own
    /// process, logs `sanitizer-<tool>-<slice>.log`; racecheck is left out of
    /// slices whose kernels declare no shared memory.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    sanitizer_jobs: u32,
    /// The compute-sanitizer tools of the sliced SpMM runs
    /// (`--sanitizer-jobs` above 1), in this order (comma-separated).
    #[arg(long, value_name = "TOOLS", value_delimiter = ',',
          value_parser = clap::builder::PossibleValuesParser::new(SANITIZER_TOOLS),
          default_values_t = SANITIZER_TOOLS.map(String::from))]
    sanitizer_tools: Vec<String>,
    /// With `--spmm-only`: skip the section's own float64 pass and go
    /// straight to the sanitizer runs (for variants whose float64 check ran
    /// already; each sanitizer child still checks every launch's result
    /// against float64, and a wrong one fails the run).
    #[arg(long, requires = "spmm_only", conflicts_with = "no_sanitizer")]
    sanitizers_only: bool,
    /// Internal: the sanitizer pass's SpMM variants start with this prefix.
    #[arg(long, hide = true, value_name = "PREFIX")]
    spmm_slice: Option<String>,
    /// Internal: directory of precompiled PTX (`<entry>.ptx`) to reuse.
    #[arg(long, hide = true, value_name = "DIR")]
    ptx_dir: Option<PathBuf>,
}

/// The compute-sanitizer tools run over every variant on the edge cases:
/// out-of-bounds and misaligned accesses, shared-memory races, reads of
/// uninitialised device memory.
const SANITIZER_TOOLS: [&str; 3] = ["memcheck", "racecheck", "initcheck"];

/// Line the sanitizer pass prints when it got through every launch.
const PASS_DONE: &str = "sanitizer pass: done";
/// Lines of each sanitizer tool's output kept in its log file.
const LOG_TAIL_LINES: usize = 200;
/// Seed of the random edge-case matrices.
const SEED: u64 = 0x6a11_c0de;

// ---------------------------------------------------------------------------
// Variants
// ---------------------------------------------------------------------------

/// Fixed fine-knob variants beyond the core space: streaming stores of `y`,
/// `__launch_bounds__` minimum blocks, block sizes 64 and 1024, unroll 8.
/// Combinations `Variant::validate` rejects (e.g. `block * min_blocks > 512`)
/// are dropped.
fn fine_variants() -> Vec<Variant> {
    let tpr = Variant::of(Strategy::ThreadPerRow);
    let gpr = Variant::of(Strategy::GroupPerRow);
    let bpr = Variant::of(Strategy::BlockPerRow);
    let nnz = Variant::of(Strategy::NnzSplit);
    let candidates = [
        // thread-per-row
        Variant {
            stream_y: true,
            ..tpr
        },
        Variant {
            min_blocks: 1,
            ..tpr
        },
        Variant {
            min_blocks: 2,
            unroll: 2,
            ..tpr
        },
        Variant {
            min_blocks: 4,
            unroll: 4,
            ..tpr
        },
        Variant { block: 64, ..tpr },
        Variant {
            block: 1024,
            unroll: 8,
            ..tpr
        },
        // group-per-row
        Variant {
            stream_y: true,
            ..gpr
        },
        Variant {
            min_blocks: 2,
            ..gpr
        },
        Variant {
            min_blocks: 4,
            lanes: 32,
            ..gpr
        },
        Variant {
            block: 64,
            lanes: 4,
            ..gpr
        },
        Variant {
            block: 1024,
            lanes: 32,
            unroll: 8,
            ..gpr
        },
        Variant {
            ldg_x: false,
            stream_y: true,
            min_blocks: 2,
            lanes: 16,
            ..gpr
        },
        // block-per-row
        Variant { block: 64, ..bpr },
        Variant {
            block: 1024,
            min_blocks: 1,
            ..bpr
        },
        Variant {
            stream_y: true,
            unroll: 8,
            ..bpr
        },
        Variant {
            block: 512,
            min_blocks: 2,
            ..bpr
        },
        // nnz-split
        Variant {
            stream_y: true,
            ..nnz
        },
        Variant {
            min_blocks: 2,
            ..nnz
        },
        Variant {
            min_blocks: 4,
            items: 8,
            ..nnz
        },
        Variant {
            block: 64,
            items: 1,
            ..nnz
        },
        Variant {
            block: 1024,
            items: 16,
            ..nnz
        },
        // Dropped by the filter below (register cap too tight).
        Variant {
            block: 1024,
            min_blocks: 2,
            ..nnz
        },
    ];
    candidates
        .into_iter()
        .map(Variant::canonical)
        .filter(|v| v.validate().is_ok())
        .collect()
}

/// The variants of `set`, core space first, then the layout space, without
/// duplicates.
fn variant_list(set: VariantSet) -> Vec<Variant> {
    let mut out = full_space();
    if set == VariantSet::All {
        let mut seen: BTreeSet<String> = out.iter().map(Variant::id).collect();
        for v in fine_variants() {
            if seen.insert(v.id()) {
                out.push(v);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Compilation
// ---------------------------------------------------------------------------

/// `(entry, PTX)` of a kernel, or why it could not be compiled.
type PtxResult = Result<(String, String), String>;

/// One compiled (or failed) kernel.
struct Compiled {
    value: ValueType,
    variant: Variant,
    result: PtxResult,
}

/// Generates and NVRTC-compiles every (value type, variant) on all cores.
/// Reads `<entry>.ptx` from `read_dir` when present; writes compiled PTX to
/// `write_dir` when given.
fn precompile(
    arch: &str,
    jobs: &[(ValueType, Variant)],
    read_dir: Option<&Path>,
    write_dir: Option<&Path>,
) -> Vec<Compiled> {
    let opts: Vec<String> = sparserl_build::builder::COMPILE_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let compile_one = |value: ValueType, variant: &Variant| -> PtxResult {
        let src = codegen::generate(variant, value).map_err(|e| e.to_string())?;
        if let Some(dir) = read_dir
            && let Ok(ptx) = std::fs::read_to_string(dir.join(format!("{}.ptx", src.entry)))
        {
            return Ok((src.entry, ptx));
        }
        let ptx =
            sparserl_rt::nvrtc::compile_ptx(&src.source, arch, &opts).map_err(|e| e.to_string())?;
        if let Some(dir) = write_dir {
            // A cache only: failing to write it costs time, not correctness.
            let _ = std::fs::write(dir.join(format!("{}.ptx", src.entry)), &ptx);
        }
        Ok((src.entry, ptx))
    };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, jobs.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<PtxResult>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some((value, variant)) = jobs.get(i) else {
                        break;
                    };
                    let r = compile_one(*value, variant);
                    results.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    jobs.iter()
        .zip(results)
        .map(|(&(value, variant), r)| Compiled {
            value,
            variant,
            result: r.unwrap_or_else(|| Err("compile worker did not finish".to_string())),
        })
        .collect()
}

/// A loaded kernel per variant (or why there is none), for one value type.
type Loaded = Vec<(Variant, Result<CudaFunction, String>)>;

/// A context-destroying fault: the run cannot continue.
#[derive(Debug, Clone, Serialize)]
struct Fatal {
    value: ValueType,
    matrix: Option<String>,
    variant: Option<String>,
    message: String,
}

impl std::fmt::Display for Fatal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "context-fatal CUDA error ({}", self.value)?;
        if let Some(m) = &self.matrix {
            write!(f, ", matrix {m}")?;
        }
        if let Some(v) = &self.variant {
            write!(f, ", variant {v}")?;
        }
        write!(f, "): {}", self.message)
    }
}

/// Loads the compiled PTX into `gpu`, split by value type.
fn load_all(gpu: &Gpu, compiled: Vec<Compiled>) -> Result<HashMap<ValueType, Loaded>, Fatal> {
    let mut out: HashMap<ValueType, Loaded> = HashMap::new();
    for c in compiled {
        let f = match c.result {
            Err(e) => Err(e),
            // SAFETY: generated entries are named after their variant, value type
            // and epilogue (one code per name); launched through Bench's unsafe
            // methods for that variant.
            Ok((entry, ptx)) => match unsafe { gpu.load_ptx(&entry, &ptx) } {
                Ok(f) => Ok(f),
                Err(e) if e.is_context_fatal() => {
                    return Err(Fatal {
                        value: c.value,
                        matrix: None,
                        variant: Some(c.variant.id()),
                        message: format!("loading the module: {e}"),
                    });
                }
                Err(e) => Err(e.to_string()),
            },
        };
        out.entry(c.value).or_default().push((c.variant, f));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Checking
// ---------------------------------------------------------------------------

/// Serializes a non-finite number as `null`.
fn ser_finite<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.is_finite() {
        s.serialize_some(v)
    } else {
        s.serialize_none()
    }
}

/// A variant that failed on a matrix.
#[derive(Serialize, Clone)]
struct Failure {
    variant: String,
    /// Worst relative error over the checks (`null`: non-finite or not computed).
    #[serde(serialize_with = "ser_finite")]
    rel_err: f64,
    /// Launch, compile or upload error, if any.
    error: Option<String>,
}

/// All variants of one value type on one matrix.
#[derive(Serialize)]
struct MatrixResult {
    value: ValueType,
    matrix: String,
    source: &'static str,
    class: String,
    rows: usize,
    cols: usize,
    nnz: usize,
    /// Variants checked (those whose layout the matrix has).
    variants_total: usize,
    variants_passed: usize,
    /// Variants of a layout strategy skipped because the matrix lacks the
    /// layout (diagonal kernels on a matrix with too many diagonals, binned
    /// kernels on one without long rows).
    variants_not_applicable: usize,
    /// Worst relative error over all variants and checks (`null`: non-finite).
    #[serde(serialize_with = "ser_finite")]
    worst_rel_err: f64,
    worst_variant: Option<String>,
    failing_variants: Vec<String>,
    failures: Vec<Failure>,
    /// `|| |A| |x| || / || A x ||` for a random `x`: how much cancellation the
    /// sums have (rounding error grows with it; `null` when `A x = 0`).
    #[serde(serialize_with = "ser_finite")]
    cancellation: f64,
    seconds: f64,
}

/// `|| |A| |x| || / || A x ||` (Euclidean norms) for a seeded random `x` in
/// [-1, 1); infinity when `A x = 0`, 1 for a matrix without nonzeros.
fn cancellation(csr: &Csr) -> f64 {
    if csr.nnz() == 0 {
        return 1.0;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let x: Vec<f64> = (0..csr.cols())
        .map(|_| rng.random_range(-1.0..1.0))
        .collect();
    let (ip, ix, v) = (csr.indptr(), csr.indices(), csr.values());
    let (mut abs2, mut y2) = (0.0f64, 0.0f64);
    for w in ip.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        let (mut s, mut sa) = (0.0f64, 0.0f64);
        for (&c, &val) in ix[a..b].iter().zip(&v[a..b]) {
            let t = val * x[c as usize];
            s += t;
            sa += t.abs();
        }
        y2 += s * s;
        abs2 += sa * sa;
    }
    if y2 > 0.0 {
        (abs2 / y2).sqrt()
    } else {
        f64::INFINITY
    }
}

fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if line.chars().count() > 300 {
        line.chars().take(300).collect::<String>() + "..."
    } else {
        line.to_string()
    }
}

/// Larger of two errors, NaN counted as infinity.
fn worse(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::INFINITY
    } else {
        a.max(b)
    }
}

/// Runs `checks` checks of every loaded variant on `m`.
fn check_matrix<T: Scalar>(
    gpu: &Gpu,
    m: &TestMatrix,
    loaded: &Loaded,
    checks: u32,
) -> Result<MatrixResult, Fatal> {
    let t0 = Instant::now();
    let tol = tolerance(T::TYPE);
    let fatal = |variant: Option<&Variant>, e: &RtError| Fatal {
        value: T::TYPE,
        matrix: Some(m.name.clone()),
        variant: variant.map(Variant::id),
        message: e.to_string(),
    };
    let mut res = MatrixResult {
        value: T::TYPE,
        matrix: m.name.clone(),
        source: m.source,
        class: m.class.clone(),
        rows: m.csr.rows(),
        cols: m.csr.cols(),
        nnz: m.csr.nnz(),
        variants_total: loaded.len(),
        variants_passed: 0,
        variants_not_applicable: 0,
        worst_rel_err: 0.0,
        worst_variant: None,
        failing_variants: Vec::new(),
        failures: Vec::new(),
        cancellation: cancellation(&m.csr),
        seconds: 0.0,
    };
    let bench = match Bench::<T>::new(gpu, &m.csr) {
        Ok(b) => Some(b),
        Err(e) if e.is_context_fatal() => return Err(fatal(None, &e)),
        Err(e) => {
            let msg = format!("upload failed: {e}");
            for (v, _) in loaded {
                res.failures.push(Failure {
                    variant: v.id(),
                    rel_err: f64::INFINITY,
                    error: Some(msg.clone()),
                });
            }
            None
        }
    };
    if let Some(bench) = &bench {
        for (v, f) in loaded {
            if !bench.device_csr().has_layout(v.strategy) {
                res.variants_total -= 1;
                res.variants_not_applicable += 1;
                continue;
            }
            let (worst, error) = match f {
                Err(msg) => (
                    f64::INFINITY,
                    Some(format!("compile failed: {}", first_line(msg))),
                ),
                Ok(func) => {
                    let mut worst = 0.0f64;
                    let mut error = None;
                    for _ in 0..checks {
                        // SAFETY: `loaded` holds the entries of
                        // codegen::generate(v, T) compiled for this GPU.
                        match unsafe { bench.check(func, v) } {
                            Ok(e) => worst = worse(worst, e),
                            Err(e) if e.is_context_fatal() => return Err(fatal(Some(v), &e)),
                            Err(e) => {
                                worst = f64::INFINITY;
                                error = Some(format!("launch failed: {e}"));
                                break;
                            }
                        }
                    }
                    (worst, error)
                }
            };
            if worst > res.worst_rel_err || (worst.is_infinite() && res.worst_variant.is_none()) {
                res.worst_rel_err = worst;
                res.worst_variant = Some(v.id());
            }
            if error.is_none() && worst.is_finite() && worst <= tol {
                res.variants_passed += 1;
            } else {
                res.failures.push(Failure {
                    variant: v.id(),
                    rel_err: worst,
                    error,
                });
            }
        }
    } else {
        res.worst_rel_err = f64::INFINITY;
    }
    res.failing_variants = res.failures.iter().map(|f| f.variant.clone()).collect();
    res.seconds = t0.elapsed().as_secs_f64();
    Ok(res)
}

fn fmt_err(e: f64) -> String {
    if e.is_finite() {
        format!("{e:.2e}")
    } else {
        "inf".to_string()
    }
}

// ---------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------

/// One section alone (`--spmm-only` / `--large-only`): its sanitizer runs
/// (the child repeats `flag` under each tool, `label` prefixes the lines),
/// the problems they found, and the section's failures.
fn section_only(args: &Args, flag: &str, label: &str, passed: usize, failed: usize) -> Result<()> {
    let mut problems = Vec::new();
    if args.no_sanitizer {
        println!("sanitizer: not run (--no-sanitizer)");
    } else if let Some(san) = find_on_path("compute-sanitizer") {
        if flag == "--spmm-only" && args.sanitizer_jobs > 1 {
            let slices = sanitizer_slices::spmm_slices(
                args.spmm_variants.as_deref(),
                args.sanitizer_jobs as usize,
            );
            println!(
                "sanitizer: {} SpMM slices x {} tools ({}), {} processes at a time",
                slices.len(),
                args.sanitizer_tools.len(),
                args.sanitizer_tools.join(", "),
                args.sanitizer_jobs
            );
            let names: Vec<&str> = slices.iter().map(|s| s.prefix.as_str()).collect();
            println!("  slices: {}", names.join(" "));
            let runs =
                sanitizer_slices::run_slices(&san, args, &slices, args.sanitizer_jobs as usize);
            problems.extend(sanitizer_slices::summarise(args, &runs));
            return finish_section(flag, label, passed, failed, problems);
        }
        let child_args = section_pass_args(args, flag);
        let timeout = Duration::from_secs(args.sanitizer_timeout.max(1));
        for tool in SANITIZER_TOOLS {
            let r = run_sanitizer(&san, tool, "", &child_args, &args.out, timeout);
            println!(
                "  {label} {tool}: {} (errors {}, {:.0} s)",
                r.status,
                r.errors.map_or("-".to_string(), |n| n.to_string()),
                r.seconds
            );
            if r.is_problem() {
                problems.push(format!("{tool}: {}", r.status));
            }
        }
    } else {
        println!("sanitizer: not run (compute-sanitizer not found)");
    }
    finish_section(flag, label, passed, failed, problems)
}

/// The arguments of a section's sanitizer pass (`flag`: `--spmm-only` or
/// `--large-only`), with `--spmm-variants` when given.
fn section_pass_args(args: &Args, flag: &str) -> Vec<String> {
    let mut child_args = vec![
        "gpu-check".to_string(),
        "--sanitizer-pass".to_string(),
        flag.to_string(),
        "--out".to_string(),
        args.out.to_string_lossy().into_owned(),
    ];
    if let Some(t) = &args.spmm_variants {
        child_args.extend(["--spmm-variants".to_string(), t.clone()]);
    }
    child_args
}

/// The section's outcome: an error naming the failed checks and the
/// sanitizer problems, if any.
fn finish_section(
    flag: &str,
    label: &str,
    passed: usize,
    failed: usize,
    mut problems: Vec<String>,
) -> Result<()> {
    if failed > 0 {
        problems.push(format!(
            "{failed} of {} {label} checks failed",
            passed + failed
        ));
    }
    if !problems.is_empty() {
        bail!("gpu-check {flag} failed: {}", problems.join("; "));
    }
    Ok(())
}

/// `gpu-check --spmm-only`: the SpMM section, then its sanitizer subset
/// under every compute-sanitizer tool.
fn spmm_only(args: &Args, gpu: &Gpu, matrices: &[TestMatrix]) -> Result<()> {
    if args.sanitizers_only {
        if find_on_path("compute-sanitizer").is_none() {
            bail!("--sanitizers-only: compute-sanitizer not found, so nothing would be checked");
        }
        println!(
            "spmm check: float64 pass skipped (--sanitizers-only); the sanitizer runs check every launch"
        );
        return section_only(args, "--spmm-only", "SpMM", 0, 0);
    }
    let s = spmm::run(
        gpu,
        matrices,
        &args.spmm_widths,
        args.spmm_variants.as_deref(),
        &args.out,
    )?;
    section_only(args, "--spmm-only", "SpMM", s.passed, s.failed)
}

/// `gpu-check --large-only`: the large path's section, then the same
/// checks under every compute-sanitizer tool.
fn large_only(args: &Args, gpu: &Gpu) -> Result<()> {
    let s = large::run(gpu, Some(&args.out))?;
    section_only(args, "--large-only", "large-path", s.passed, s.failed)
}

/// Runs `gpu-check`.
pub fn run(args: Args) -> Result<()> {
    if args.sanitizer_pass {
        return sanitizer_pass(&args);
    }
    let t0 = Instant::now();
    let gpu = Gpu::new(0).map_err(|e| {
        anyhow!("no GPU: {e}; gpu-check needs a CUDA device (build it with `cargo build --release -p xtask` and run `target/release/xtask gpu-check` on a GPU machine)")
    })?;
    let toolkit = sparserl_rt::nvrtc::locate().map_err(|e| anyhow!("no NVRTC: {e}"))?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    if args.large_only {
        return large_only(&args, &gpu);
    }

    let matrix_dir = match &args.matrices {
        Some(d) if !d.is_dir() => bail!("--matrices {}: not a directory", d.display()),
        Some(d) => Some(d.clone()),
        None => default_matrix_dir(),
    };
    let (real, skipped) = match &matrix_dir {
        Some(d) => load_matrix_dir(d)?,
        None => {
            println!("no real-matrix directory found; checking the built-in edge cases only");
            (Vec::new(), Vec::new())
        }
    };
    let edge = edge_cases()?;
    let n_real = real.len();
    let matrices: Vec<TestMatrix> = real.into_iter().chain(edge).collect();
    if args.spmm_only {
        return spmm_only(&args, &gpu, &matrices);
    }

    let variants = variant_list(args.variants);
    let fine = variants.len() - full_space().len();
    println!(
        "gpu-check on {} ({}): {} variants x 2 value types x {} matrices ({} real, {} edge), {} checks each",
        gpu.name(),
        gpu.arch(),
        variants.len(),
        matrices.len(),
        n_real,
        matrices.len() - n_real,
        args.checks
    );

    // Compile everything up front on all cores; keep PTX for the sanitizer pass.
    let run_sanitizer_tools = !args.no_sanitizer;
    let ptx_dir = args.out.join("ptx-cache");
    let write_dir = if run_sanitizer_tools && std::fs::create_dir_all(&ptx_dir).is_ok() {
        Some(ptx_dir.as_path())
    } else {
        None
    };
    let jobs: Vec<(ValueType, Variant)> = ValueType::ALL
        .iter()
        .flat_map(|&t| variants.iter().map(move |&v| (t, v)))
        .collect();
    let tc = Instant::now();
    let compiled = precompile(&gpu.arch(), &jobs, None, write_dir);
    let compile_failures: Vec<CompileFailure> = compiled
        .iter()
        .filter_map(|c| {
            c.result.as_ref().err().map(|e| CompileFailure {
                value: c.value,
                variant: c.variant.id(),
                error: first_line(e),
            })
        })
        .collect();
    println!(
        "compiled {} kernels in {:.1} s ({} failed)",
        jobs.len(),
        tc.elapsed().as_secs_f64(),
        compile_failures.len()
    );

    let mut aborted: Option<Fatal> = None;
    let mut results: Vec<MatrixResult> = Vec::new();
    match load_all(&gpu, compiled) {
        Err(f) => aborted = Some(f),
        Ok(loaded) => {
            'values: for value in ValueType::ALL {
                let l = loaded
                    .get(&value)
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .to_vec();
                for m in &matrices {
                    let r = match value {
                        ValueType::F32 => check_matrix::<f32>(&gpu, m, &l, args.checks),
                        ValueType::F64 => check_matrix::<f64>(&gpu, m, &l, args.checks),
                    };
                    match r {
                        Ok(r) => {
                            println!(
                                "{} {:<28} {:>9} rows {:>10} nnz  {:>3}/{} passed  worst {:>9}  {:.1} s",
                                r.value,
                                r.matrix,
                                r.rows,
                                r.nnz,
                                r.variants_passed,
                                r.variants_total,
                                fmt_err(r.worst_rel_err),
                                r.seconds
                            );
                            results.push(r);
                        }
                        Err(f) => {
                            eprintln!("{f}");
                            aborted = Some(f);
                            break 'values;
                        }
                    }
                }
            }
        }
    }

    let sanitizer = if aborted.is_some() {
        SANITIZER_TOOLS
            .map(|t| SanitizerResult::not_run(t, "the check was aborted"))
            .to_vec()
    } else if args.no_sanitizer {
        SANITIZER_TOOLS
            .map(|t| SanitizerResult::not_run(t, "--no-sanitizer"))
            .to_vec()
    } else if let Some(san) = find_on_path("compute-sanitizer") {
        let mut child_args = vec![
            "gpu-check".to_string(),
            "--sanitizer-pass".to_string(),
            "--variants".to_string(),
            args.variants.as_str().to_string(),
            "--out".to_string(),
            args.out.to_string_lossy().into_owned(),
        ];
        if args.no_spmm {
            child_args.push("--no-spmm".to_string());
        }
        if let Some(d) = write_dir {
            child_args.push("--ptx-dir".to_string());
            child_args.push(d.to_string_lossy().into_owned());
        }
        let timeout = Duration::from_secs(args.sanitizer_timeout.max(1));
        SANITIZER_TOOLS
            .iter()
            .map(|tool| {
                println!(
                    "compute-sanitizer --tool {tool} (limit {} s) ...",
                    timeout.as_secs()
                );
                let r = run_sanitizer(&san, tool, "", &child_args, &args.out, timeout);
                println!(
                    "  {tool}: {} (errors {}, {:.0} s)",
                    r.status,
                    r.errors.map_or("-".to_string(), |n| n.to_string()),
                    r.seconds
                );
                r
            })
            .collect()
    } else {
        SANITIZER_TOOLS
            .map(|t| SanitizerResult::not_run(t, "compute-sanitizer not found"))
            .to_vec()
    };
    if write_dir.is_some() {
        let _ = std::fs::remove_dir_all(&ptx_dir);
    }

    let combinations: usize = results.iter().map(|r| r.variants_total).sum();
    let passed: usize = results.iter().map(|r| r.variants_passed).sum();
    let sanitizer_problem = sanitizer.iter().any(SanitizerResult::is_problem);
    let all_passed = aborted.is_none() && passed == combinations && !sanitizer_problem;
    let (nv_major, nv_minor) = toolkit.nvrtc_version;
    let summary = Summary {
        gpu: gpu.name().to_string(),
        arch: gpu.arch(),
        driver: common::driver_version(),
        nvrtc: format!("{nv_major}.{nv_minor}"),
        date: common::today(),
        command: command_line(),
        matrix_dir: matrix_dir.map(|d| d.display().to_string()),
        variant_set: args.variants,
        checks_per_variant: args.checks,
        tolerance_f32: tolerance(ValueType::F32),
        tolerance_f64: tolerance(ValueType::F64),
        passed: all_passed,
        counts: Counts {
            variants: variants.len(),
            fine_variants: fine,
            matrices_real: n_real,
            matrices_edge: matrices.len() - n_real,
            combinations,
            passed,
            failed: combinations - passed,
        },
        aborted: aborted.clone(),
        compile_failures,
        skipped_files: skipped,
        results,
        sanitizer,
        seconds: t0.elapsed().as_secs_f64(),
    };
    write_outputs(&args.out, &summary)?;

    println!();
    for value in ValueType::ALL {
        println!("{}", totals_line(&summary.results, value));
    }
    for r in &summary.sanitizer {
        println!("sanitizer {}: {}", r.tool, r.status);
    }
    println!(
        "wrote {} and {}",
        args.out.join("gpu-check.md").display(),
        args.out.join("gpu-check.json").display()
    );

    // SpMM: every variant and epilogue at several widths on the edge cases
    // and the real matrices: `spmm-check.json`.
    let spmm = if aborted.is_none() && !args.no_spmm {
        Some(spmm::run(
            &gpu,
            &matrices,
            &args.spmm_widths,
            args.spmm_variants.as_deref(),
            &args.out,
        )?)
    } else {
        None
    };

    // Fused epilogues (every fusing variant x epilogue on matrices with
    // every layout) and CUDA-graph replay: `fused-check.json`.
    crate::bench_app::check::command(crate::bench_app::check::Args {
        small: false,
        out: args.out.clone(),
    })?;

    if let Some(s) = spmm.as_ref().filter(|s| s.failed > 0) {
        bail!(
            "gpu-check failed: {} of {} SpMM checks failed; see {}",
            s.failed,
            s.passed + s.failed,
            args.out.join("spmm-check.md").display()
        );
    }

    if let Some(f) = aborted {
        bail!("gpu-check aborted: {f}");
    }
    if !all_passed {
        let mut why = Vec::new();
        if passed != combinations {
            why.push(format!(
                "{} of {combinations} (value type, matrix, variant) combinations failed",
                combinations - passed
            ));
        }
        if sanitizer_problem {
            why.push("compute-sanitizer did not come back clean".to_string());
        }
        bail!(
            "gpu-check failed: {}; see {}",
            why.join("; "),
            args.out.join("gpu-check.md").display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests;
