//! The SpMM GPU check (feature `tools`): every variant of [`spmm_space`]
//! at several widths, both layouts and value types, plain and fused, its
//! tuned-width and generic entries, on edge-case matrices and synthetic
//! families, against the float64 reference. The generator is passed in
//! (it lives in `sparserl-build`), so `xtask gpu-check` and a stand-alone
//! binary share this code.

use super::launch::SpmmFunctions;
use super::measure::{SpmmBench, load_ptx_entries};
use super::variant::{SpmmEpilogue, SpmmVariant, spmm_space};
use crate::csr::Csr;
use crate::dense::DenseLayout;
use crate::device::{Gpu, Scalar};
use crate::error::RtError;
use crate::measure::{MeasureOptions, tolerance};
use crate::variant::ValueType;

/// Generates the CUDA source of a variant: `(variant, value, layout,
/// compile-time width, epilogues) -> source` (`sparserl-build`'s
/// `generate_spmm(..).source`).
pub type SpmmGenerator<'a> = &'a (
        dyn Fn(
    &SpmmVariant,
    ValueType,
    DenseLayout,
    Option<usize>,
    &[SpmmEpilogue],
) -> Result<String, GenerateError>
            + Sync
    );

/// Why the generator could not produce a variant's source.
pub type GenerateError = Box<dyn std::error::Error + Send + Sync>;

/// Why a unit has no PTX.
#[derive(Debug, thiserror::Error)]
enum UnitError {
    /// The generator failed.
    #[error("{0}")]
    Generate(#[source] GenerateError),
    /// NVRTC rejected the source.
    #[error("{0}")]
    Compile(#[source] crate::nvrtc::NvrtcError),
}

/// Why a unit's entries could not be loaded.
#[derive(Debug, thiserror::Error)]
enum Unloaded<'a> {
    /// The unit did not generate or compile.
    #[error("compile: {0}")]
    Unit(&'a UnitError),
    /// The driver did not load its module.
    #[error("{0}")]
    Load(#[source] RtError),
}

/// The widths [`check_all`] covers by default.
pub const CHECK_WIDTHS: [usize; 7] = [1, 5, 16, 32, 64, 128, 256];

/// One failed check.
#[derive(Debug, Clone, PartialEq)]
pub struct SpmmFailure {
    /// Variant id, value, layout, width, entry and matrix.
    pub what: String,
    /// The error or the per-row relative error.
    pub reason: String,
}

/// Counts of [`check_all`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpmmCheckReport {
    /// Checks that passed (one per variant, value, layout, width, entry,
    /// epilogue and matrix; each runs the two cases of [`SpmmBench::check`]).
    pub passed: usize,
    /// The others.
    pub failures: Vec<SpmmFailure>,
    /// Distinct units compiled.
    pub compiled: usize,
}

/// The check's matrices: every edge case (1 x 1, empty rows, one huge row,
/// n x 1, rectangular both ways, nnz = 0, a single nonzero) and small
/// synthetic families (power-law, uniform, banded, R-MAT), with names.
pub fn check_matrices() -> Result<Vec<(String, Csr)>, RtError> {
    let bad = |e: crate::synth::SynthError| RtError::InvalidArgument(e.to_string());
    let t = |r, c, v: &[(u32, u32, f64)]| Csr::from_triplets(r, c, v);
    let mut m = vec![
        ("1x1".to_string(), t(1, 1, &[(0, 0, 2.5)])?),
        ("nnz0-7x5".into(), t(7, 5, &[])?),
        ("one-nonzero-40x40".into(), t(40, 40, &[(17, 3, -1.0)])?),
    ];
    // Empty rows between short ones, and one row far longer than a warp range.
    let mut trip = Vec::new();
    for r in (0..3000u32).step_by(3) {
        trip.push((r, (r * 7) % 3000, 1.0 + r as f64 * 1e-3));
    }
    for c in 0..3000u32 {
        trip.push((1500, c, ((c % 13) as f64) - 6.0));
    }
    m.push(("empty-rows-and-huge-row-3000".into(), t(3000, 3000, &trip)?));
    let col: Vec<_> = (0..257u32).map(|r| (r, 0, r as f64 - 128.0)).collect();
    m.push(("257x1".into(), t(257, 1, &col)?));
    let wide: Vec<_> = (0..900u32).map(|c| (c % 3, c, 0.5 + c as f64)).collect();
    m.push(("3x900".into(), t(3, 900, &wide)?));
    let tall: Vec<_> = (0..5000u32).map(|r| (r, (r * 31) % 11, -0.25)).collect();
    m.push(("5000x11".into(), t(5000, 11, &tall)?));
    m.push((
        "power-law-4000".into(),
        crate::synth::power_law(4000, 12.0, 2.1, 7).map_err(bad)?,
    ));
    m.push((
        "uniform-3000x2000".into(),
        crate::synth::uniform(3000, 2000, 9.0, 11).map_err(bad)?,
    ));
    m.push((
        "banded-2000".into(),
        crate::synth::banded(2000, 20, 15.0, 3).map_err(bad)?,
    ));
    m.push((
        "rmat-12".into(),
        crate::synth::irregular::rmat(12, 8, 5).map_err(bad)?,
    ));
    Ok(m)
}

/// One compiled unit to check: its variant, value, layout, width and PTX.
struct Unit {
    v: SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    n: usize,
    ptx: Result<String, UnitError>,
}

/// Generates and compiles every unit (in parallel: NVRTC is thread-safe).
fn compile_units(
    gpu: &Gpu,
    generate: SpmmGenerator<'_>,
    widths: &[usize],
    keep: &dyn Fn(&SpmmVariant) -> bool,
) -> Vec<Unit> {
    let mut jobs = Vec::new();
    for value in ValueType::ALL {
        for layout in DenseLayout::ALL {
            for &n in widths {
                for v in spmm_space(n, layout).into_iter().filter(|v| keep(v)) {
                    jobs.push((v, value, layout, n));
                }
            }
        }
    }
    let arch = gpu.arch();
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(1, 16);
    let chunk = jobs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                let arch = &arch;
                s.spawn(move || {
                    part.iter()
                        .map(|&(v, value, layout, n)| {
                            let ptx = generate(&v, value, layout, Some(n), &SpmmEpilogue::ALL)
                                .map_err(UnitError::Generate)
                                .and_then(|src| {
                                    crate::nvrtc::compile_ptx(&src, arch, &[])
                                        .map_err(UnitError::Compile)
                                });
                            Unit {
                                v,
                                value,
                                layout,
                                n,
                                ptx,
                            }
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    })
}

/// Checks every unit of one value type on every matrix: per layout and
/// width the benches of every matrix, then each unit's module loaded once
/// and its entries checked on all of them.
fn check_value<T: Scalar>(
    gpu: &Gpu,
    units: &[Unit],
    widths: &[usize],
    matrices: &[(String, Csr)],
    report: &mut SpmmCheckReport,
) -> Result<(), RtError> {
    let opts = MeasureOptions {
        x_copies: 1,
        ..MeasureOptions::default()
    };
    for layout in DenseLayout::ALL {
        for &n in widths {
            let benches = matrices
                .iter()
                .map(|(name, csr)| {
                    Ok((
                        name.as_str(),
                        SpmmBench::<T>::new(gpu, csr, n, layout, &opts)?,
                    ))
                })
                .collect::<Result<Vec<_>, RtError>>()?;
            let here = units
                .iter()
                .filter(|u| u.value == T::TYPE && u.layout == layout && u.n == n);
            for u in here {
                let which = unit_entries(u.n);
                let loaded: Result<Vec<SpmmFunctions>, Unloaded<'_>> = match &u.ptx {
                    Err(e) => Err(Unloaded::Unit(e)),
                    // SAFETY: the PTX was compiled from the generator's unit for exactly
                    // this variant, value type, layout and width, which holds these entries.
                    Ok(ptx) => {
                        unsafe { load_ptx_entries(gpu, ptx, &u.v, u.value, u.layout, &which) }
                            .map_err(Unloaded::Load)
                    }
                };
                for (name, bench) in &benches {
                    check_unit(bench, u, &loaded, name, report)?;
                }
            }
        }
    }
    Ok(())
}

/// The `(width, epilogue)` entries of a unit at width `n`, in the order
/// they are loaded and checked: tuned and generic width, plain and fused.
pub fn unit_entries(n: usize) -> [(Option<usize>, Option<SpmmEpilogue>); 4] {
    let f = Some(SpmmEpilogue::BiasRelu);
    [(Some(n), None), (Some(n), f), (None, None), (None, f)]
}

/// The entries of a unit (loaded from its module, in [`unit_entries`]
/// order, for the unit's layout and value type) on one bench.
fn check_unit<T: Scalar>(
    bench: &SpmmBench<T>,
    u: &Unit,
    loaded: &Result<Vec<SpmmFunctions>, Unloaded<'_>>,
    matrix: &str,
    report: &mut SpmmCheckReport,
) -> Result<(), RtError> {
    let tol = tolerance(T::TYPE);
    for (k, &(width, ep)) in unit_entries(u.n).iter().enumerate() {
        let what = format!(
            "{} {} {} N={} {} {} on {matrix}",
            u.v.id(),
            u.value,
            u.layout,
            u.n,
            width.map_or("generic".into(), |w| format!("n{w}")),
            ep.map_or("plain", |e| e.as_str())
        );
        let outcome = match &loaded {
            Err(e) => Err(e.to_string()),
            // SAFETY: entry k of the unit loaded above, for this bench's layout and type.
            Ok(fs) => match unsafe { bench.check(&fs[k], ep) }.and_then(|e| {
                // The tuned plain entry also runs captured in a CUDA graph.
                // SAFETY: as above.
                let g = if k == 0 {
                    unsafe { bench.check_captured(&fs[k], ep) }?
                } else {
                    0.0
                };
                Ok(e.max(g))
            }) {
                Ok(err) => Ok(err),
                Err(e) if e.is_context_fatal() => {
                    return Err(RtError::InvalidArgument(format!(
                        "{what}: device fault: {e}"
                    )));
                }
                Err(e) => Err(e.to_string()),
            },
        };
        match outcome {
            Ok(err) if err <= tol => report.passed += 1,
            Ok(err) => report.failures.push(SpmmFailure {
                what,
                reason: format!("per-row relative error {err:.3e} above {tol:.0e}"),
            }),
            Err(reason) => report.failures.push(SpmmFailure { what, reason }),
        }
    }
    Ok(())
}

/// Runs the whole check on `gpu` at `widths` (e.g. [`CHECK_WIDTHS`]) over
/// [`check_matrices`]: every variant of `spmm_space(n, layout)`, both value
/// types and layouts, its tuned-width and generic entries, plain and
/// `bias-relu`, each against the float64 reference (NaN-poisoned `Y` with
/// `beta = 0`, then `alpha = -0.75`, `beta = 1.5`; the tuned plain entry
/// also replayed from a captured CUDA graph). A device fault that
/// destroys the context is an `Err`; everything else is counted.
pub fn check_all(
    gpu: &Gpu,
    generate: SpmmGenerator<'_>,
    widths: &[usize],
) -> Result<SpmmCheckReport, RtError> {
    check_where(gpu, generate, widths, &|_| true)
}

/// [`check_all`] over the variants `keep` accepts (a check of new variants
/// without the whole space).
pub fn check_where(
    gpu: &Gpu,
    generate: SpmmGenerator<'_>,
    widths: &[usize],
    keep: &dyn Fn(&SpmmVariant) -> bool,
) -> Result<SpmmCheckReport, RtError> {
    let matrices = check_matrices()?;
    let units = compile_units(gpu, generate, widths, keep);
    let mut report = SpmmCheckReport {
        compiled: units.iter().filter(|u| u.ptx.is_ok()).count(),
        ..SpmmCheckReport::default()
    };
    check_value::<f32>(gpu, &units, widths, &matrices, &mut report)?;
    check_value::<f64>(gpu, &units, widths, &matrices, &mut report)?;
    Ok(report)
}
