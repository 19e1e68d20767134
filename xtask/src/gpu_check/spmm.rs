//! The SpMM section of `gpu-check`: `sparserl_rt::spmm::check::check_all`
//! (every variant of `spmm_space` at several widths, both layouts and value
//! types, tuned-width and generic entries, plain and `bias-relu`, on the
//! edge cases and small synthetic families, against float64) plus the same
//! checks of every variant on the real matrices at a few widths. Writes
//! `spmm-check.json` and `spmm-check.md`; the sanitizer pass runs the small
//! form ([`sanitizer_subset`]).

use super::*;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::check::{SpmmCheckReport, check_where, unit_entries};
use sparserl_rt::spmm::measure::{SpmmBench, load_ptx_entries};
use sparserl_rt::spmm::{SpmmEpilogue, SpmmFunctions, SpmmVariant, spmm_space};

/// Widths of the real-matrix part (the built-in part covers seven).
pub(super) const REAL_WIDTHS: [usize; 1] = [32];

/// Real matrices above this many nonzeros are left to `bench spmm`'s checks
/// (every variant it measures is checked there at five widths): the check
/// here downloads and compares every result on the host.
pub(super) const REAL_MAX_NNZ: usize = 300_000;

/// Widths of the sanitizer subset (on the built-in matrices).
pub(super) const SANITIZER_WIDTHS: [usize; 2] = [5, 32];

/// Failures listed in the report (all are counted).
const LISTED: usize = 200;

/// The generator, as the check takes it.
pub(super) fn generate(
    v: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    width: Option<usize>,
    eps: &[SpmmEpilogue],
) -> Result<String, sparserl_rt::spmm::check::GenerateError> {
    sparserl_build::codegen::spmm::generate_spmm(v, value, layout, width, eps)
        .map(|s| s.source)
        .map_err(Into::into)
}

/// The SpMM section's outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct SpmmSection {
    /// Widths of the built-in part.
    pub(super) widths: Vec<usize>,
    /// Widths of the real-matrix part.
    pub(super) real_widths: Vec<usize>,
    /// Real matrices checked (those with at most `real_max_nnz` nonzeros).
    pub(super) real_matrices: usize,
    /// The real matrices' size limit.
    pub(super) real_max_nnz: usize,
    /// Checks that passed (each runs the poisoned `beta = 0` and the scaled case).
    pub(super) passed: usize,
    /// Checks that failed.
    pub(super) failed: usize,
    /// Units compiled by the built-in part.
    pub(super) compiled: usize,
    /// The first failures (`what: reason`).
    pub(super) failures: Vec<String>,
    /// Seconds.
    pub(super) seconds: f64,
    /// `--spmm-variants`: only variants whose id contains this text.
    pub(super) variants: Option<String>,
}

impl SpmmSection {
    fn add(&mut self, r: SpmmCheckReport) {
        self.passed += r.passed;
        self.failed += r.failures.len();
        self.compiled += r.compiled;
        let room = LISTED.saturating_sub(self.failures.len());
        self.failures.extend(
            r.failures
                .into_iter()
                .take(room)
                .map(|f| format!("{}: {}", f.what, f.reason)),
        );
    }

    fn markdown(&self) -> String {
        let only = self.variants.as_ref().map_or(String::new(), |t| {
            format!("Only the variants whose id contains `{t}` (`--spmm-variants`).\n\n")
        });
        let mut s = format!(
            "# SpMM check\n\n{only}{} / {} checks passed (built-in edge cases and synthetic families \
             at N = {:?}; {} real matrices of at most {} nonzeros at N = {:?}; every variant of spmm_space, both \
             layouts and value types, tuned-width and generic entries, plain and bias-relu, each \
             on a NaN-poisoned Y with beta = 0 and on alpha = -0.75, beta = 1.5, against float64 \
             per row), {:.0} s.\n",
            self.passed,
            self.passed + self.failed,
            self.widths,
            self.real_matrices,
            self.real_max_nnz,
            self.real_widths,
            self.seconds
        );
        for f in &self.failures {
            s += &format!("- {f}\n");
        }
        s
    }
}

/// The compiled units of the real-matrix part: `(variant, layout, width) -> PTX`.
type Units = Vec<((SpmmVariant, DenseLayout, usize), Result<String, String>)>;

/// Which variants a check covers: those whose id contains the
/// `--spmm-variants` text, or all.
type Keep<'a> = &'a dyn Fn(&SpmmVariant) -> bool;

/// The [`Keep`] of `--spmm-variants` (`None`: every variant).
fn keeps(only: Option<&str>) -> impl Fn(&SpmmVariant) -> bool + '_ {
    move |v| only.is_none_or(|t| id_matches(&v.id(), t))
}

/// Whether a variant id matches a `--spmm-variants` filter: it contains
/// every comma-separated part of it, and none of the parts written with a
/// leading `!` (`.t,nnz-split.b256.g16`: the transposed path's nnz-split
/// points of 16-lane streams; `nnz-split,.r,!.t`: the short-range points
/// outside the transposed path).
pub(super) fn id_matches(id: &str, filter: &str) -> bool {
    filter.split(',').all(|part| match part.strip_prefix('!') {
        Some(absent) => !id.contains(absent),
        None => id.contains(part),
    })
}

/// Generates and compiles every unit of `value` at `widths` that `keep`
/// accepts, on all cores.
fn compile_units(gpu: &Gpu, value: ValueType, widths: &[usize], keep: Keep<'_>) -> Units {
    let mut jobs = Vec::new();
    for layout in DenseLayout::ALL {
        for &n in widths {
            jobs.extend(
                spmm_space(n, layout)
                    .into_iter()
                    .filter(|v| keep(v))
                    .map(|v| (v, layout, n)),
            );
        }
    }
    let arch = gpu.arch();
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<String, String>>>> = Mutex::new(vec![None; jobs.len()]);
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(1, 16);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(v, layout, n)) = jobs.get(i) else {
                        break;
                    };
                    let r = generate(&v, value, layout, Some(n), &SpmmEpilogue::ALL)
                        .map_err(|e| e.to_string())
                        .and_then(|src| {
                            sparserl_rt::nvrtc::compile_ptx(&src, &arch, &[])
                                .map_err(|e| e.to_string())
                        });
                    out.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                }
            });
        }
    });
    let out = out.into_inner().unwrap_or_else(|p| p.into_inner());
    jobs.into_iter()
        .zip(out)
        .map(|(j, r)| (j, r.unwrap_or_else(|| Err("compile worker failed".into()))))
        .collect()
}

/// A unit's entries loaded from its PTX, or why they could not be.
fn load_unit(
    gpu: &Gpu,
    v: &SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    n: usize,
    ptx: &Result<String, String>,
) -> Result<Vec<SpmmFunctions>, String> {
    let ptx = ptx.as_ref().map_err(|e| format!("compile: {e}"))?;
    // SAFETY: the PTX was compiled from the generator's unit for exactly this
    // variant, value type, layout and width, which holds these entries.
    unsafe { load_ptx_entries(gpu, ptx, v, value, layout, &unit_entries(n)) }
        .map_err(|e| format!("load: {e}"))
}

/// One unit on a real matrix: its four entries (loaded by [`load_unit`])
/// checked on `bench`.
fn check_real_unit<T: Scalar>(
    bench: &SpmmBench<T>,
    loaded: &Result<Vec<SpmmFunctions>, String>,
    what: &str,
    report: &mut SpmmCheckReport,
) -> Result<()> {
    let tol = tolerance(T::TYPE);
    let fail = |report: &mut SpmmCheckReport, reason: String| {
        report.failures.push(sparserl_rt::spmm::check::SpmmFailure {
            what: what.to_string(),
            reason,
        })
    };
    let fs = match loaded {
        Ok(fs) => fs,
        Err(e) => {
            fail(report, e.clone());
            return Ok(());
        }
    };
    for (fsk, &(w, ep)) in fs.iter().zip(&unit_entries(bench.n())) {
        let entry = format!(
            "{} {}",
            w.map_or("generic".into(), |w| format!("n{w}")),
            ep.map_or("plain", |e| e.as_str())
        );
        // SAFETY: the entry of this unit loaded for this bench's layout, width and type.
        match unsafe { bench.check(fsk, ep) } {
            Ok(e) if e <= tol => report.passed += 1,
            Ok(e) => fail(
                report,
                format!("{entry}: per-row relative error {e:.3e} above {tol:.0e}"),
            ),
            Err(e) if e.is_context_fatal() => bail!("{what} {entry}: device fault: {e}"),
            Err(e) => fail(report, format!("{entry}: {e}")),
        }
    }
    Ok(())
}

/// Every variant on the real matrices at `widths`, both layouts: per layout
/// and width the benches of every matrix, each unit loaded once.
fn check_real<T: Scalar>(
    gpu: &Gpu,
    real: &[&TestMatrix],
    widths: &[usize],
    keep: Keep<'_>,
) -> Result<SpmmCheckReport> {
    let mut report = SpmmCheckReport::default();
    let units = compile_units(gpu, T::TYPE, widths, keep);
    report.compiled = units.iter().filter(|u| u.1.is_ok()).count();
    let opts = sparserl_rt::MeasureOptions {
        x_copies: 1,
        ..Default::default()
    };
    for layout in DenseLayout::ALL {
        for &n in widths {
            let benches = real
                .iter()
                .map(|m| {
                    Ok((
                        m.name.as_str(),
                        SpmmBench::<T>::new(gpu, &m.csr, n, layout, &opts)?,
                    ))
                })
                .collect::<Result<Vec<_>>>()?;
            for ((v, _, _), ptx) in units.iter().filter(|u| u.0.1 == layout && u.0.2 == n) {
                let loaded = load_unit(gpu, v, T::TYPE, layout, n, ptx);
                for (name, bench) in &benches {
                    let what = format!("{} {} {layout} N={n} on {name}", v.id(), T::TYPE);
                    check_real_unit(bench, &loaded, &what, &mut report)?;
                }
            }
        }
    }
    Ok(report)
}

/// Writes the section's `spmm-check.json` / `.md` into `out` (after every
/// width, so a run cut short still leaves what it checked).
fn write_section(s: &SpmmSection, out: &Path) -> Result<()> {
    std::fs::write(
        out.join("spmm-check.json"),
        serde_json::to_string_pretty(s)? + "\n",
    )?;
    std::fs::write(out.join("spmm-check.md"), s.markdown())?;
    Ok(())
}

/// The whole SpMM section at the built-in `widths` (e.g. `CHECK_WIDTHS`),
/// the variants whose id contains `only` (`--spmm-variants`; `None`: all);
/// writes `spmm-check.json` / `.md` into `out`.
pub(super) fn run(
    gpu: &Gpu,
    matrices: &[TestMatrix],
    widths: &[usize],
    only: Option<&str>,
    out: &Path,
) -> Result<SpmmSection> {
    let keep = &keeps(only);
    let t0 = Instant::now();
    let mut s = SpmmSection {
        real_widths: REAL_WIDTHS.to_vec(),
        real_max_nnz: REAL_MAX_NNZ,
        variants: only.map(str::to_string),
        ..SpmmSection::default()
    };
    println!("spmm check: every variant at N = {widths:?} on the built-in matrices ...");
    for &n in widths {
        s.add(check_where(gpu, &generate, &[n], keep).map_err(|e| anyhow!("spmm check: {e}"))?);
        s.widths.push(n);
        s.seconds = t0.elapsed().as_secs_f64();
        write_section(&s, out)?;
        println!(
            "spmm check: N = {n} done: {} / {} passed so far, {:.0} s",
            s.passed,
            s.passed + s.failed,
            s.seconds
        );
    }
    let real: Vec<&TestMatrix> = matrices
        .iter()
        .filter(|m| m.source == "real" && m.csr.nnz() <= REAL_MAX_NNZ)
        .collect();
    s.real_matrices = real.len();
    println!(
        "spmm check: every variant at N = {REAL_WIDTHS:?} on {} real matrices (nnz <= {REAL_MAX_NNZ}) ...",
        real.len()
    );
    s.add(check_real::<f32>(gpu, &real, &REAL_WIDTHS, keep)?);
    s.add(check_real::<f64>(gpu, &real, &REAL_WIDTHS, keep)?);
    s.seconds = t0.elapsed().as_secs_f64();
    write_section(&s, out)?;
    println!(
        "spmm check: {} / {} passed in {:.0} s; wrote {}",
        s.passed,
        s.passed + s.failed,
        s.seconds,
        out.join("spmm-check.md").display()
    );
    Ok(s)
}

/// The sanitizer subset: [`check_where`] at [`SANITIZER_WIDTHS`] on the
/// built-in matrices, the variants whose id contains `only` (`None`: all)
/// and starts with `slice` (`None`: any); `(passed, failed)`.
pub(super) fn sanitizer_subset(
    gpu: &Gpu,
    only: Option<&str>,
    slice: Option<&str>,
) -> Result<(usize, usize)> {
    let keep_only = keeps(only);
    let keep = |v: &SpmmVariant| keep_only(v) && slice.is_none_or(|p| v.id().starts_with(p));
    let r = check_where(gpu, &generate, &SANITIZER_WIDTHS, &keep)
        .map_err(|e| anyhow!("spmm check: {e}"))?;
    for f in r.failures.iter().take(20) {
        println!("spmm wrong result: {}: {}", f.what, f.reason);
    }
    Ok((r.passed, r.failures.len()))
}
