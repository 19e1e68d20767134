//! `cargo xtask gpu-check`: checks every generator variant on a GPU.
//!
//! Every variant (the core and layout design spaces plus a fixed list of
//! fine-knob variants) is compiled for `f32` and `f64` and run on every matrix of the
//! real-matrix directory plus built-in edge cases (empty rows, one row holding
//! half the nonzeros, 1 x 1, n x 1, 1 x n, rectangular, nnz = 0, rows longer
//! than 65536). Each check uses a fresh random `x`, poisons `y` with NaN and
//! compares with the float64 CPU reference ([`Bench::check`]); a variant
//! passes on a matrix when every check is finite and within
//! [`tolerance`]. Then `compute-sanitizer` (memcheck and racecheck) runs one
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
    /// Skip the compute-sanitizer memcheck and racecheck runs.
    #[arg(long)]
    no_sanitizer: bool,
    /// Time limit of each compute-sanitizer run, in seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 240)]
    sanitizer_timeout: u64,
    /// Internal: launch each variant once on small edge cases and exit
    /// (what runs under compute-sanitizer).
    #[arg(long, hide = true)]
    sanitizer_pass: bool,
    /// Internal: directory of precompiled PTX (`<entry>.ptx`) to reuse.
    #[arg(long, hide = true, value_name = "DIR")]
    ptx_dir: Option<PathBuf>,
}

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
// Matrices
// ---------------------------------------------------------------------------

/// One matrix to check on.
struct TestMatrix {
    name: String,
    /// `real` (from the matrix directory) or `edge` (built in).
    source: &'static str,
    class: String,
    csr: Csr,
}

impl TestMatrix {
    fn edge(name: &str, csr: Csr) -> TestMatrix {
        TestMatrix {
            name: name.to_string(),
            source: "edge",
            class: "edge-case".to_string(),
            csr,
        }
    }
}

/// A uniform value in `[-1, 1)` that is never exactly zero.
fn random_value(rng: &mut ChaCha8Rng) -> f64 {
    let v: f64 = rng.random_range(-1.0..1.0);
    if v == 0.0 { 0.5 } else { v }
}

/// `len` distinct sorted columns in `0..cols` (`len` is capped at `cols`).
fn sample_columns(rng: &mut ChaCha8Rng, cols: usize, len: usize) -> Vec<u32> {
    let len = len.min(cols);
    if len * 4 >= cols {
        // Selection sampling: one pass over all columns.
        let mut out = Vec::with_capacity(len);
        let mut needed = len;
        for c in 0..cols {
            if needed == 0 {
                break;
            }
            if rng.random_range(0..cols - c) < needed {
                out.push(c as u32);
                needed -= 1;
            }
        }
        out
    } else {
        let mut set = BTreeSet::new();
        while set.len() < len {
            set.insert(rng.random_range(0..cols) as u32);
        }
        set.into_iter().collect()
    }
}

/// A `rows x cols` matrix whose row `r` has `len_of(r, rng)` random distinct
/// columns (capped at `cols`) and random values.
fn build_rows(
    rows: usize,
    cols: usize,
    seed: u64,
    mut len_of: impl FnMut(usize, &mut ChaCha8Rng) -> usize,
) -> Result<Csr> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::new();
    indptr.push(0u32);
    for r in 0..rows {
        let len = len_of(r, &mut rng);
        indices.extend(sample_columns(&mut rng, cols, len));
        let end = u32::try_from(indices.len()).context("edge case has too many nonzeros")?;
        indptr.push(end);
    }
    let values = (0..indices.len()).map(|_| random_value(&mut rng)).collect();
    Csr::try_new(rows, cols, indptr, indices, values)
        .with_context(|| format!("building a {rows} x {cols} edge case"))
}

/// A matrix without nonzeros.
fn empty_matrix(rows: usize, cols: usize) -> Result<Csr> {
    Csr::try_new(rows, cols, vec![0; rows + 1], Vec::new(), Vec::new())
        .with_context(|| format!("building an empty {rows} x {cols} matrix"))
}

/// Every third row empty, plus empty first and last rows; other rows 1..=20 nonzeros.
fn empty_rows_matrix(rows: usize, cols: usize, seed: u64) -> Result<Csr> {
    build_rows(rows, cols, seed, |r, rng| {
        if r == 0 || r + 1 == rows || r.is_multiple_of(3) {
            0
        } else {
            rng.random_range(1..=20)
        }
    })
}

/// `per_row` nonzeros in every row except `heavy`, which holds at least as
/// many nonzeros as all other rows together (capped at `cols`).
fn half_row_matrix(
    rows: usize,
    cols: usize,
    per_row: usize,
    heavy: usize,
    seed: u64,
) -> Result<Csr> {
    let others = per_row * rows.saturating_sub(1);
    build_rows(rows, cols, seed, |r, _| {
        if r == heavy { others.max(1) } else { per_row }
    })
}

/// `per_row` nonzeros per row except row `long`, which has `long_len`.
fn long_row_matrix(
    rows: usize,
    cols: usize,
    long: usize,
    long_len: usize,
    per_row: usize,
    seed: u64,
) -> Result<Csr> {
    build_rows(
        rows,
        cols,
        seed,
        |r, _| if r == long { long_len } else { per_row },
    )
}

/// Short rows (1-2 nonzeros) with a row of 40-239 nonzeros every 50 rows and
/// a run of `rows / 3` empty rows in the middle: tiled kernels meet tiles of
/// many short rows holding a row that a whole warp sums, and tiles cut at
/// the 1024-row cap.
fn tile_mix_matrix(rows: usize, cols: usize, seed: u64) -> Result<Csr> {
    let (gap0, gap1) = (rows / 3, 2 * rows / 3);
    build_rows(rows, cols, seed, |r, rng| {
        if (gap0..gap1).contains(&r) {
            0
        } else if r % 50 == 7 {
            (40 + r % 200).min(cols)
        } else {
            rng.random_range(1..=2)
        }
    })
}

/// A rectangular matrix on the diagonals -37, -1, 0, 2 and 64 (zero-free
/// where they fit): qualifies for the diagonal layout, whose padding then
/// reaches past both the first and the last column.
fn diagonal_matrix(rows: usize, cols: usize) -> Result<Csr> {
    let mut t = Vec::new();
    for r in 0..rows as i64 {
        for d in [-37i64, -1, 0, 2, 64] {
            let c = r + d;
            if c >= 0 && c < cols as i64 {
                t.push((r as u32, c as u32, 1.0 + ((r * 7 + d) % 5) as f64 / 4.0));
            }
        }
    }
    Csr::from_triplets(rows, cols, &t).context("building the diagonal edge case")
}

/// The built-in edge cases of the full check.
fn edge_cases() -> Result<Vec<TestMatrix>> {
    let synth_err = |what: &str| format!("generating the {what} edge case");
    Ok(vec![
        TestMatrix::edge(
            "edge-1x1",
            Csr::from_triplets(1, 1, &[(0, 0, 1.5)]).context("building the 1 x 1 edge case")?,
        ),
        TestMatrix::edge("edge-1x1-nnz0", empty_matrix(1, 1)?),
        TestMatrix::edge(
            "edge-1000x1",
            build_rows(1000, 1, SEED, |r, _| usize::from(r % 10 != 3))?,
        ),
        TestMatrix::edge(
            "edge-1x100000-dense-row",
            build_rows(1, 100_000, SEED + 1, |_, _| 100_000)?,
        ),
        TestMatrix::edge(
            "edge-rect-3000x700",
            synth::uniform(3000, 700, 8.0, SEED + 2).with_context(|| synth_err("3000 x 700"))?,
        ),
        TestMatrix::edge(
            "edge-rect-2000x5000",
            synth::uniform(2000, 5000, 12.0, SEED + 3).with_context(|| synth_err("2000 x 5000"))?,
        ),
        TestMatrix::edge(
            "edge-empty-rows-3000",
            empty_rows_matrix(3000, 3000, SEED + 4)?,
        ),
        TestMatrix::edge(
            "edge-half-nnz-in-row-17",
            half_row_matrix(10_000, 40_000, 3, 17, SEED + 5)?,
        ),
        TestMatrix::edge("edge-nnz0-500x400", empty_matrix(500, 400)?),
        TestMatrix::edge(
            "edge-stencil5-64x64",
            synth::stencil(&[64, 64], 5).with_context(|| synth_err("stencil"))?,
        ),
        TestMatrix::edge(
            "edge-power-law-50000",
            synth::power_law(50_000, 8.0, 1.8, SEED + 6).with_context(|| synth_err("power-law"))?,
        ),
        TestMatrix::edge(
            "edge-row-of-70000",
            long_row_matrix(2000, 100_000, 1000, 70_000, 5, SEED + 7)?,
        ),
        TestMatrix::edge(
            "edge-stencil27-24x24x24",
            synth::stencil(&[24, 24, 24], 27).with_context(|| synth_err("27-point stencil"))?,
        ),
        TestMatrix::edge(
            "edge-diagonals-rect-3000x2500",
            diagonal_matrix(3000, 2500)?,
        ),
        TestMatrix::edge(
            "edge-tile-mix-40000",
            tile_mix_matrix(40_000, 30_000, SEED + 8)?,
        ),
    ])
}

/// The five small edge cases launched under compute-sanitizer.
fn sanitizer_matrices() -> Result<Vec<TestMatrix>> {
    Ok(vec![
        TestMatrix::edge(
            "san-empty-rows-300",
            empty_rows_matrix(300, 300, SEED + 10)?,
        ),
        TestMatrix::edge(
            "san-long-row-5000",
            long_row_matrix(64, 20_000, 31, 5000, 4, SEED + 11)?,
        ),
        TestMatrix::edge(
            "san-rect-300x70",
            synth::uniform(300, 70, 6.0, SEED + 12)
                .context("generating the 300 x 70 sanitizer case")?,
        ),
        TestMatrix::edge("san-diagonals-rect-200x150", diagonal_matrix(200, 150)?),
        TestMatrix::edge("san-tile-mix-4000", tile_mix_matrix(4000, 3000, SEED + 13)?),
    ])
}

/// A file of the matrix directory that could not be used.
#[derive(Serialize)]
struct Skipped {
    file: String,
    reason: String,
}

/// The default matrix directory: `.device/matrices`, else `tests/fixtures/matrices`
/// (relative to the current directory, then to the workspace root).
fn default_matrix_dir() -> Option<PathBuf> {
    let root = common::workspace_root();
    [
        PathBuf::from(".device/matrices"),
        root.join(".device/matrices"),
        PathBuf::from("tests/fixtures/matrices"),
        root.join("tests/fixtures/matrices"),
    ]
    .into_iter()
    .find(|p| p.is_dir())
}

/// Reads every Matrix Market file of `dir`; unreadable or empty-dimension
/// files are returned as skipped instead of failing the run.
fn load_matrix_dir(dir: &Path) -> Result<(Vec<TestMatrix>, Vec<Skipped>)> {
    let classes = common::manifest_classes(dir);
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for path in common::mtx_files(dir)? {
        let name = common::matrix_name(&path);
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone());
        match sparserl_rt::mtx::read_matrix_market(&path) {
            Ok(csr) if csr.rows() == 0 || csr.cols() == 0 => skipped.push(Skipped {
                file,
                reason: format!(
                    "{} x {} matrix has nothing to multiply",
                    csr.rows(),
                    csr.cols()
                ),
            }),
            Ok(csr) => ok.push(TestMatrix {
                class: classes
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "unknown".into()),
                name,
                source: "real",
                csr,
            }),
            Err(e) => skipped.push(Skipped {
                file,
                reason: first_line(&e.to_string()),
            }),
        }
    }
    Ok((ok, skipped))
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
            Ok((entry, ptx)) => match gpu.load_ptx(&entry, &ptx) {
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
// Sanitizer
// ---------------------------------------------------------------------------

/// Outcome of one compute-sanitizer tool run.
#[derive(Serialize, Clone)]
struct SanitizerResult {
    tool: String,
    /// `clean`, `errors`, `timed out`, `failed: ...` or `not run: ...`.
    status: String,
    /// N of the tool's final `ERROR SUMMARY: N errors` line.
    errors: Option<u64>,
    exit_code: Option<i32>,
    /// Whether the sanitizer pass got through every launch.
    completed: bool,
    seconds: f64,
    log: Option<String>,
}

impl SanitizerResult {
    fn not_run(tool: &str, why: &str) -> SanitizerResult {
        SanitizerResult {
            tool: tool.to_string(),
            status: format!("not run: {why}"),
            errors: None,
            exit_code: None,
            completed: false,
            seconds: 0.0,
            log: None,
        }
    }
    /// Whether this result should fail the command.
    fn is_problem(&self) -> bool {
        !(self.status == "clean" || self.status.starts_with("not run"))
    }
}

/// The error count of a compute-sanitizer output: N of the last
/// `ERROR SUMMARY: N error(s)` line, else (racecheck prints no such line) N of
/// the last `RACECHECK SUMMARY: ... (N errors, M warnings)` line.
fn parse_error_summary(text: &str) -> Option<u64> {
    let error_summary = text.lines().rev().find_map(|l| {
        let (_, rest) = l.split_once("ERROR SUMMARY:")?;
        rest.split_whitespace().next()?.parse().ok()
    });
    error_summary.or_else(|| {
        text.lines().rev().find_map(|l| {
            let (_, rest) = l.split_once("RACECHECK SUMMARY:")?;
            let (_, inner) = rest.split_once('(')?;
            let n = inner.split_whitespace().next()?;
            inner
                .split_whitespace()
                .nth(1)?
                .starts_with("error")
                .then(|| n.parse().ok())
                .flatten()
        })
    })
}

/// The last `n` lines of `text`.
fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = lines[start..].join("\n");
    out.push('\n');
    out
}

fn find_on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

/// Kills the process group led by `child` (the sanitizer and its target).
fn kill_group(child: &mut std::process::Child) {
    let pgid = format!("-{}", child.id());
    let _ = Command::new("kill")
        .args(["-KILL", "--", &pgid])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let _ = child.kill();
    let _ = child.wait();
}

/// Runs this executable's sanitizer pass under `compute-sanitizer --tool <tool>`.
fn run_sanitizer(
    sanitizer: &Path,
    tool: &str,
    child_args: &[String],
    out: &Path,
    timeout: Duration,
) -> SanitizerResult {
    use std::os::unix::process::CommandExt;
    let t0 = Instant::now();
    let failed = |why: String| SanitizerResult {
        tool: tool.to_string(),
        status: format!("failed: {why}"),
        errors: None,
        exit_code: None,
        completed: false,
        seconds: t0.elapsed().as_secs_f64(),
        log: None,
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return failed(format!("cannot find the current executable: {e}")),
    };
    let full_log = out.join(format!("sanitizer-{tool}.full.log"));
    let log_name = format!("sanitizer-{tool}.log");
    let file = match File::create(&full_log) {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot create {}: {e}", full_log.display())),
    };
    let file2 = match file.try_clone() {
        Ok(f) => f,
        Err(e) => return failed(format!("cannot duplicate a file handle: {e}")),
    };
    let mut cmd = Command::new(sanitizer);
    cmd.args([
        "--tool",
        tool,
        "--error-exitcode",
        "1",
        "--print-limit",
        "100",
    ])
    .arg(&exe)
    .args(child_args)
    .stdin(Stdio::null())
    .stdout(file)
    .stderr(file2)
    .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start {}: {e}", sanitizer.display())),
    };
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t0.elapsed() > timeout => {
                kill_group(&mut child);
                timed_out = true;
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(200)),
            Err(_) => {
                kill_group(&mut child);
                break None;
            }
        }
    };
    let bytes = std::fs::read(&full_log).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes);
    let _ = std::fs::remove_file(&full_log);
    let mut log = tail_lines(&text, LOG_TAIL_LINES);
    if timed_out {
        log += &format!("[gpu-check: killed after {} s]\n", timeout.as_secs());
    }
    let log_written = std::fs::write(out.join(&log_name), log).is_ok();
    let errors = parse_error_summary(&text);
    let completed = text.contains(PASS_DONE);
    let exit_code = status.and_then(|s| s.code());
    let status = if timed_out {
        "timed out".to_string()
    } else if errors.is_some_and(|n| n > 0) {
        "errors".to_string()
    } else if errors == Some(0) && exit_code == Some(0) && completed {
        "clean".to_string()
    } else if errors.is_none() {
        "failed: no error summary line in the output".to_string()
    } else if !completed {
        "failed: the sanitizer pass did not finish".to_string()
    } else {
        format!("failed: exit status {exit_code:?}")
    };
    SanitizerResult {
        tool: tool.to_string(),
        status,
        errors,
        exit_code,
        completed,
        seconds: t0.elapsed().as_secs_f64(),
        log: log_written.then_some(log_name),
    }
}

/// Launches every variant once per sanitizer matrix and value type.
fn sanitize_value<T: Scalar>(
    gpu: &Gpu,
    mats: &[TestMatrix],
    loaded: &Loaded,
    counts: &mut (usize, usize, usize),
) -> Result<()> {
    let tol = tolerance(T::TYPE);
    for m in mats {
        let bench = Bench::<T>::new(gpu, &m.csr)
            .with_context(|| format!("uploading {} ({})", m.name, T::TYPE))?;
        for (v, f) in loaded {
            let Ok(func) = f else { continue };
            if !bench.device_csr().has_layout(v.strategy) {
                continue; // not applicable to this matrix
            }
            // SAFETY: `loaded` holds the entries of codegen::generate(v, T)
            // compiled for this GPU.
            match unsafe { bench.check(func, v) } {
                Ok(e) => {
                    counts.0 += 1;
                    if e.is_nan() || e > tol {
                        counts.1 += 1;
                        println!("wrong result: {} {} {}: {}", T::TYPE, m.name, v, fmt_err(e));
                    }
                }
                Err(e) if e.is_context_fatal() => {
                    bail!(
                        "context-fatal error on {} {} variant {}: {e}",
                        T::TYPE,
                        m.name,
                        v
                    )
                }
                Err(e) => {
                    counts.2 += 1;
                    println!("launch error: {} {} {}: {e}", T::TYPE, m.name, v);
                }
            }
        }
    }
    Ok(())
}

/// The hidden `--sanitizer-pass` mode (runs under compute-sanitizer).
fn sanitizer_pass(args: &Args) -> Result<()> {
    let gpu = Gpu::new(0).map_err(|e| anyhow!("no GPU: {e}"))?;
    sparserl_rt::nvrtc::locate().map_err(|e| anyhow!("no NVRTC: {e}"))?;
    let variants = variant_list(args.variants);
    let mats = sanitizer_matrices()?;
    let jobs: Vec<(ValueType, Variant)> = ValueType::ALL
        .iter()
        .flat_map(|&t| variants.iter().map(move |&v| (t, v)))
        .collect();
    let compiled = precompile(&gpu.arch(), &jobs, args.ptx_dir.as_deref(), None);
    let not_compiled = compiled.iter().filter(|c| c.result.is_err()).count();
    let loaded = load_all(&gpu, compiled).map_err(|f| anyhow!("{f}"))?;
    let mut counts = (0usize, 0usize, 0usize);
    for value in ValueType::ALL {
        let l = loaded
            .get(&value)
            .map(Vec::as_slice)
            .unwrap_or(&[])
            .to_vec();
        match value {
            ValueType::F32 => sanitize_value::<f32>(&gpu, &mats, &l, &mut counts)?,
            ValueType::F64 => sanitize_value::<f64>(&gpu, &mats, &l, &mut counts)?,
        }
    }
    println!(
        "{PASS_DONE}: {} launches, {} wrong results, {} launch errors, {not_compiled} kernels not compiled",
        counts.0, counts.1, counts.2
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------

#[derive(Serialize)]
struct Counts {
    variants: usize,
    fine_variants: usize,
    matrices_real: usize,
    matrices_edge: usize,
    /// (value type, matrix, variant) combinations checked.
    combinations: usize,
    passed: usize,
    failed: usize,
}

#[derive(Serialize)]
struct CompileFailure {
    value: ValueType,
    variant: String,
    error: String,
}

#[derive(Serialize)]
struct Summary {
    gpu: String,
    arch: String,
    driver: String,
    nvrtc: String,
    date: String,
    command: String,
    matrix_dir: Option<String>,
    variant_set: VariantSet,
    checks_per_variant: u32,
    tolerance_f32: f64,
    tolerance_f64: f64,
    passed: bool,
    counts: Counts,
    aborted: Option<Fatal>,
    compile_failures: Vec<CompileFailure>,
    skipped_files: Vec<Skipped>,
    results: Vec<MatrixResult>,
    sanitizer: Vec<SanitizerResult>,
    seconds: f64,
}

/// The command line, with the program shortened to its file name.
fn command_line() -> String {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut()
        && let Some(name) = Path::new(first.as_str()).file_name()
    {
        *first = name.to_string_lossy().into_owned();
    }
    args.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Totals of one value type: (passed, total, worst error).
fn totals(results: &[MatrixResult], value: ValueType) -> (usize, usize, f64) {
    results
        .iter()
        .filter(|r| r.value == value)
        .fold((0, 0, 0.0), |(p, t, w), r| {
            (
                p + r.variants_passed,
                t + r.variants_total,
                worse(w, r.worst_rel_err),
            )
        })
}

fn totals_line(results: &[MatrixResult], value: ValueType) -> String {
    let (p, t, w) = totals(results, value);
    let n = results.iter().filter(|r| r.value == value).count();
    format!(
        "{value}: {n} matrices, {p}/{t} (matrix, variant) pairs passed, worst rel err {} (tolerance {:.0e})",
        fmt_err(w),
        tolerance(value)
    )
}

fn markdown(s: &Summary) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# GPU correctness check\n");
    let _ = writeln!(md, "- GPU: {} ({})", s.gpu, s.arch);
    let _ = writeln!(md, "- Driver: {}", s.driver);
    let _ = writeln!(md, "- NVRTC: {}", s.nvrtc);
    let _ = writeln!(md, "- Date: {}", s.date);
    let _ = writeln!(md, "- Command: `{}`", s.command);
    let _ = writeln!(
        md,
        "- Variants: {} ({} core + {} layout + {} fine-knob), each compiled for f32 and f64; \
         layout variants run on the matrices that have their layout",
        s.counts.variants,
        core_space().len(),
        s.counts.variants - s.counts.fine_variants - core_space().len(),
        s.counts.fine_variants
    );
    let _ = writeln!(
        md,
        "- Matrices: {} real (from `{}`) + {} built-in edge cases",
        s.counts.matrices_real,
        s.matrix_dir.as_deref().unwrap_or("none"),
        s.counts.matrices_edge
    );
    let _ = writeln!(
        md,
        "- Method: {} checks per (value type, matrix, variant), each with a fresh random x and y \
         poisoned with NaN before the launch, against a float64 CPU reference; pass iff every \
         relative error is finite and <= {:.0e} (f32) / {:.0e} (f64)",
        s.checks_per_variant, s.tolerance_f32, s.tolerance_f64
    );
    let _ = writeln!(
        md,
        "- Result: **{}** ({} of {} combinations passed, {:.0} s)",
        if s.passed { "PASS" } else { "FAIL" },
        s.counts.passed,
        s.counts.combinations,
        s.seconds
    );
    if let Some(f) = &s.aborted {
        let _ = writeln!(md, "- **Aborted**: {f}");
    }
    for value in ValueType::ALL {
        let _ = writeln!(md, "\n## {value}\n");
        let _ = writeln!(
            md,
            "| matrix | rows | cols | nnz | variants passed | worst rel err |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
        for r in s.results.iter().filter(|r| r.value == value) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {}/{} | {} |",
                r.matrix,
                r.rows,
                r.cols,
                r.nnz,
                r.variants_passed,
                r.variants_total,
                fmt_err(r.worst_rel_err)
            );
        }
        let (p, t, w) = totals(&s.results, value);
        let _ = writeln!(md, "| **total** | | | | **{p}/{t}** | **{}** |", fmt_err(w));
    }
    let _ = writeln!(md, "\n## Failures\n");
    let failures: Vec<(&MatrixResult, &Failure)> = s
        .results
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| (r, f)))
        .collect();
    if failures.is_empty() && s.aborted.is_none() {
        let _ = writeln!(md, "none");
    }
    if let Some(f) = &s.aborted {
        let _ = writeln!(md, "- aborted: {f}");
    }
    if !failures.is_empty() {
        let _ = writeln!(
            md,
            "Cancellation factor c = || |A| |x| || / || A x || of the matrix for a random x is \
             given per line: rounding error of a sum grows with c and the row length.\n"
        );
    }
    for (r, f) in failures {
        let _ = write!(
            md,
            "- {} / {} (c = {}) / `{}`: rel err {}",
            r.value,
            r.matrix,
            fmt_err(r.cancellation),
            f.variant,
            fmt_err(f.rel_err)
        );
        match &f.error {
            Some(e) => {
                let _ = writeln!(md, " ({})", e.replace('|', "/"));
            }
            None => md.push('\n'),
        }
    }
    if !s.compile_failures.is_empty() {
        let _ = writeln!(md, "\n## Compile failures\n");
        for c in &s.compile_failures {
            let _ = writeln!(md, "- {} `{}`: {}", c.value, c.variant, c.error);
        }
    }
    if !s.skipped_files.is_empty() {
        let _ = writeln!(md, "\n## Skipped matrix files\n");
        for k in &s.skipped_files {
            let _ = writeln!(md, "- `{}`: {}", k.file, k.reason);
        }
    }
    let _ = writeln!(md, "\n## compute-sanitizer\n");
    let _ = writeln!(
        md,
        "One launch of every variant (f32 and f64) on five small edge cases \
         (empty rows, a long row, rectangular, diagonals, a mix of tile shapes).\n"
    );
    let _ = writeln!(md, "| tool | status | errors | exit code | seconds | log |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---|");
    for r in &s.sanitizer {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.0} | {} |",
            r.tool,
            r.status,
            r.errors.map_or("-".to_string(), |n| n.to_string()),
            r.exit_code.map_or("-".to_string(), |n| n.to_string()),
            r.seconds,
            r.log.as_deref().unwrap_or("-")
        );
    }
    md
}

fn write_outputs(out: &Path, s: &Summary) -> Result<()> {
    let json = serde_json::to_string_pretty(s).context("serializing the summary")?;
    let jp = out.join("gpu-check.json");
    std::fs::write(&jp, json + "\n").with_context(|| format!("writing {}", jp.display()))?;
    let mp = out.join("gpu-check.md");
    std::fs::write(&mp, markdown(s)).with_context(|| format!("writing {}", mp.display()))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Entry point
// ---------------------------------------------------------------------------

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
        ["memcheck", "racecheck"]
            .map(|t| SanitizerResult::not_run(t, "the check was aborted"))
            .to_vec()
    } else if args.no_sanitizer {
        ["memcheck", "racecheck"]
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
        if let Some(d) = write_dir {
            child_args.push("--ptx-dir".to_string());
            child_args.push(d.to_string_lossy().into_owned());
        }
        let timeout = Duration::from_secs(args.sanitizer_timeout.max(1));
        ["memcheck", "racecheck"]
            .iter()
            .map(|tool| {
                println!(
                    "compute-sanitizer --tool {tool} (limit {} s) ...",
                    timeout.as_secs()
                );
                let r = run_sanitizer(&san, tool, &child_args, &args.out, timeout);
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
        ["memcheck", "racecheck"]
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

    // Fused epilogues (every fusing variant x epilogue on matrices with
    // every layout) and CUDA-graph replay: `fused-check.json`.
    crate::bench_app::check::command(crate::bench_app::check::Args {
        small: false,
        out: args.out.clone(),
    })?;

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
