//! Ours: the SpMM variants of the design space, compiled once, launched
//! through the product's API, chosen by the product's measured search.
//!
//! Every variant of `spmm_space(n, layout)` is generated with the case's
//! width as its compile-time width (as a build that declares that width
//! ships it), compiled once up front with NVRTC on all cores, wrapped in an
//! [`SpmmSpec`] and launched through the product's own safe API
//! ([`SpmmKernel::spmm`]). Per case, ours is the winner of the product's
//! measured search (`super::search`: `search_spmm` in the product's order,
//! each measurement checked against float64 on a NaN-poisoned Y before it is
//! timed). With `--sweep` every variant is also checked and timed briefly
//! and the fastest re-timed: the best of the space, and
//! `SpmmVariant::FALLBACK` (what runs untuned) beside it.

use super::report::{OursResult, Row};
use super::rowerr::{DeviceReference, poison};
use anyhow::{Context, Result};
use sparserl_rt::dense::{DenseLayout, DeviceDense};
use sparserl_rt::measure::{stats, time_launches};
use sparserl_rt::spmm::{
    SpmmEpilogue, SpmmImage, SpmmKernel, SpmmModule, SpmmSpec, SpmmVariant, spmm_space,
};
use sparserl_rt::{Csr, DeviceCsr, Gpu, Provenance, Scalar, ValueType, tolerance};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A kernel whose spec was generated and compiled in this process.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeSpmm<T> {
    spec: &'static SpmmSpec,
    _value: PhantomData<T>,
}

// SAFETY: `RuntimeSpmm::from_spec` is only called on specs built by
// `build_spec`, which compiles the generator's own source of the module's
// variant for `T`, the spec's layout, width and epilogues.
unsafe impl<T: Scalar> SpmmKernel for RuntimeSpmm<T> {
    type Value = T;
    fn spec(&self) -> &'static SpmmSpec {
        self.spec
    }
}

impl<T: Scalar> RuntimeSpmm<T> {
    /// The kernel of a spec from [`build_spec`] for value type `T`.
    pub fn from_spec(spec: &'static SpmmSpec) -> Result<Self> {
        anyhow::ensure!(
            spec.value == T::TYPE,
            "spec {} is not {}",
            spec.name,
            T::TYPE
        );
        Ok(RuntimeSpmm {
            spec,
            _value: PhantomData,
        })
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Generates and compiles `v` at width `n` with `epilogues` for `arch`
/// into a spec (leaked: generated code holds its specs in statics too).
pub fn build_spec(
    v: SpmmVariant,
    value: ValueType,
    layout: DenseLayout,
    n: usize,
    epilogues: &'static [SpmmEpilogue],
    arch: &str,
) -> Result<&'static SpmmSpec> {
    let src = sparserl_build::codegen::spmm::generate_spmm(&v, value, layout, Some(n), epilogues)?;
    let opts: Vec<String> = sparserl_build::builder::COMPILE_OPTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let ptx = sparserl_rt::nvrtc::compile_ptx(&src.source, arch, &opts)
        .with_context(|| format!("compiling {}", v.id()))?;
    let cubin = cubin_of(&ptx, arch).map(|c| &*Box::leak(c.into_boxed_slice()));
    let images: &'static [SpmmImage] = Box::leak(Box::new([SpmmImage {
        arch: leak(arch.to_string()),
        ptx: leak(ptx),
        cubin,
    }]));
    let module = SpmmModule {
        variant: src.variant,
        width: Some(n),
        source: leak(src.source),
        images,
    };
    let fallback = sparserl_build::codegen::spmm::generate_spmm(
        &SpmmVariant::FALLBACK,
        value,
        layout,
        None,
        epilogues,
    )?;
    let spec = SpmmSpec {
        name: leak(format!("bench_{}", v.id())),
        value,
        layout,
        tuned: Box::leak(Box::new([module])),
        // Never runs here (every call has the module's width); compiled at
        // first use if it did.
        fallback: SpmmModule {
            variant: fallback.variant,
            width: None,
            source: leak(fallback.source),
            images: &[],
        },
        epilogues,
        provenance: Provenance::Measured,
        tuned_on: None,
    };
    Ok(Box::leak(Box::new(spec)))
}

/// The cubin of `ptx` for `arch` (the image a build embeds when `ptxas` is
/// present), so that loading a candidate during the search is not the
/// driver's compile of its PTX; `None` without `ptxas` or when assembling
/// fails (the driver then compiles the PTX at first use, as before).
fn cubin_of(ptx: &str, arch: &str) -> Option<Vec<u8>> {
    if !sparserl_rt::nvrtc::ptxas_available() {
        return None;
    }
    sparserl_rt::nvrtc::assemble_cubin(ptx, arch).ok()
}

/// A compile job's value type, layout and width.
pub type Key = (ValueType, DenseLayout, usize);

/// A compiled spec, or why compiling failed.
pub type Built = Result<&'static SpmmSpec, String>;

/// Every compiled variant per (value type, layout, width).
pub struct Ours {
    specs: HashMap<Key, Vec<(SpmmVariant, Built)>>,
    sweep_reps: u32,
    finalists: usize,
    /// Search budgets (large, real), seconds.
    budget: (f64, f64),
}

/// What one case hands to ours.
pub struct Inputs<'a, T: Scalar> {
    /// The host matrix.
    pub csr: &'a Csr,
    /// Its upload.
    pub a: &'a DeviceCsr<T>,
    /// X, tightly stored in `layout`.
    pub x: &'a [T],
    /// Columns.
    pub n: usize,
    /// Layout of X and Y.
    pub layout: DenseLayout,
    /// Rotated X / Y copies.
    pub copies: usize,
    /// Timed repetitions of the finalists.
    pub reps: u32,
}

impl Ours {
    /// Compiles the whole space for every value type, layout and width.
    pub fn new(
        gpu: &Gpu,
        values: &[ValueType],
        layouts: &[DenseLayout],
        widths: &[usize],
        sweep_reps: u32,
        finalists: usize,
        budget: (f64, f64),
    ) -> Result<Self> {
        let t = std::time::Instant::now();
        let mut jobs: Vec<(Key, SpmmVariant)> = Vec::new();
        for &value in values {
            for &layout in layouts {
                for &n in widths {
                    jobs.extend(
                        spmm_space(n, layout)
                            .into_iter()
                            .map(|v| ((value, layout, n), v)),
                    );
                }
            }
        }
        let arch = gpu.arch();
        let built = compile_all(&jobs, &arch, &[]);
        let failed = built.iter().filter(|b| b.is_err()).count();
        let mut specs: HashMap<Key, Vec<_>> = HashMap::new();
        for ((key, v), r) in jobs.into_iter().zip(built) {
            specs.entry(key).or_default().push((v, r));
        }
        let cubins = specs
            .values()
            .flatten()
            .filter(
                |(_, b)| matches!(b, Ok(s) if s.tuned.iter().all(|m| m.images[0].cubin.is_some())),
            )
            .count();
        println!(
            "compiled {} SpMM kernels in {:.1} s ({failed} failed, {cubins} with cubins for {arch})",
            specs.values().map(Vec::len).sum::<usize>(),
            t.elapsed().as_secs_f64()
        );
        Ok(Ours {
            specs,
            sweep_reps: sweep_reps.max(1),
            finalists: finalists.max(1),
            budget,
        })
    }

    /// How ours is chosen, for the report.
    pub fn choice_label(&self) -> String {
        format!(
            "ours = the product's measured SpMM search (sparserl-build's search_spmm over \
             spmm_space(n, layout) at the case's width in the product's order: the measured \
             records' first 8 (records of the case's own class left out) and the SpMM \
             prior's first 8 alternately, then the prior's ranking; default \
             settings, budget {} s per large case and {} s per real case; the winner checked and re-timed {} times, \
             their median reported, as is cuSPARSE's fastest algorithm; a round whose re-times and \
             the reading that chose the kernel lie more than {}x apart is repeated, at most {} rounds); \
             prior = the prior's first variant; best of space (with --sweep) = every variant \
             checked, timed {} times, the {} fastest re-timed",
            self.budget.0,
            self.budget.1,
            super::RETIMES,
            super::SETTLED_SPREAD,
            super::RETIME_ROUNDS,
            self.sweep_reps,
            self.finalists
        )
    }
}

/// Generates and compiles every job (with `epilogues`) on all cores.
pub fn compile_all(
    jobs: &[(Key, SpmmVariant)],
    arch: &str,
    epilogues: &'static [SpmmEpilogue],
) -> Vec<Built> {
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Built>>> = Mutex::new((0..jobs.len()).map(|_| None).collect());
    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(1, 16);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&((value, layout, n), v)) = jobs.get(i) else {
                        break;
                    };
                    let r = build_spec(v, value, layout, n, epilogues, arch)
                        .map_err(|e| format!("{e:#}"));
                    out.lock().unwrap_or_else(|p| p.into_inner())[i] = Some(r);
                }
            });
        }
    });
    out.into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err("compile worker failed".into())))
        .collect()
}

/// X and Y copies of one case, on the device.
pub(super) struct Operands<T: Scalar> {
    xs: Vec<DeviceDense<T>>,
    ys: Vec<DeviceDense<T>>,
    next: usize,
}

impl<T: Scalar> Operands<T> {
    fn new(gpu: &Gpu, i: &Inputs<T>) -> Result<Self> {
        let mut o = Operands {
            xs: Vec::new(),
            ys: Vec::new(),
            next: 0,
        };
        for _ in 0..i.copies.max(1) {
            o.xs.push(DeviceDense::from_host(
                gpu,
                i.csr.cols(),
                i.n,
                i.layout,
                i.x,
            )?);
            o.ys.push(DeviceDense::zeros(gpu, i.csr.rows(), i.n, i.layout)?);
        }
        Ok(o)
    }
}

/// Checks `k` on copy 0 (NaN-poisoned Y): the largest per-row error.
pub(super) fn check<T: Scalar>(
    gpu: &Gpu,
    k: &RuntimeSpmm<T>,
    a: &DeviceCsr<T>,
    ops: &mut Operands<T>,
    checker: &mut DeviceReference,
) -> Result<f64> {
    let y = &mut ops.ys[0];
    // SAFETY: the buffer is used on its own stream (the Gpu's), inside this call.
    poison(gpu, unsafe { y.raw_mut() })?;
    k.spmm(gpu, T::from_f64(1.0), a, &ops.xs[0], T::from_f64(0.0), y)?;
    let (layout, ld) = (y.layout(), y.ld());
    // SAFETY: as above; the checker's kernel runs on the same stream.
    checker.max_row_rel_err(unsafe { y.raw() }, layout, ld)
}

/// Median microseconds of `k` over the rotated copies.
pub(super) fn time<T: Scalar>(
    gpu: &Gpu,
    k: &RuntimeSpmm<T>,
    a: &DeviceCsr<T>,
    ops: &mut Operands<T>,
    (warmup, reps, max_s): (u32, u32, f64),
) -> Result<Option<f64>> {
    let (one, zero) = (T::from_f64(1.0), T::from_f64(0.0));
    let mut launch = || -> Result<()> {
        let i = ops.next % ops.xs.len();
        ops.next += 1;
        Ok(k.spmm(gpu, one, a, &ops.xs[i], zero, &mut ops.ys[i])?)
    };
    let t = time_launches::<anyhow::Error>(gpu, &mut launch, warmup, reps, max_s)?;
    Ok(stats(&t).map(|s| s.median))
}

impl Ours {
    /// Ours on one case into `row`: the product's measured search
    /// (`ours_*`, `prior_*`, `search_*`), then with `sweep` the whole space
    /// (`best_*`, `fallback_us`, `variants`).
    pub fn run<T: Scalar>(
        &self,
        gpu: &Gpu,
        inp: &Inputs<T>,
        checker: &mut DeviceReference,
        row: &mut Row,
        sweep: bool,
    ) -> Result<()> {
        let Some(list) = self.specs.get(&(T::TYPE, inp.layout, inp.n)) else {
            row.ours_error = Some("no compiled variant for this case".into());
            return Ok(());
        };
        let mut ops = Operands::new(gpu, inp)?;
        let budget = if row.suite == "large" {
            self.budget.0
        } else {
            self.budget.1
        };
        super::search::run(gpu, list, inp, &mut ops, checker, row, budget)?;
        if sweep {
            self.sweep_space(gpu, list, inp, &mut ops, checker, row)?;
        }
        Ok(())
    }

    /// Every variant of the space, the fastest re-timed: `best_*`,
    /// `fallback_us`, `variants`.
    fn sweep_space<T: Scalar>(
        &self,
        gpu: &Gpu,
        list: &[(SpmmVariant, Built)],
        inp: &Inputs<T>,
        ops: &mut Operands<T>,
        checker: &mut DeviceReference,
        row: &mut Row,
    ) -> Result<()> {
        let mut timed: Vec<(usize, f64)> = Vec::new();
        for (idx, (v, spec)) in list.iter().enumerate() {
            // A variant far slower than the fastest so far gets fewer samples.
            let fastest = timed.iter().map(|t| t.1).fold(f64::INFINITY, f64::min);
            let max_s = (fastest * 30e-6).clamp(0.01, 0.3);
            let mut r = OursResult {
                variant: v.id(),
                ..OursResult::default()
            };
            match spec
                .as_ref()
                .map_err(|e| anyhow::anyhow!("{e}"))
                .and_then(|s| RuntimeSpmm::<T>::from_spec(s))
            {
                Err(e) => r.error = Some(format!("not compiled: {e:#}")),
                Ok(k) => {
                    let sweep = Sweep {
                        idx,
                        max_s,
                        fastest_us: fastest,
                    };
                    self.sweep_one(gpu, &k, inp, ops, checker, &mut r, sweep, &mut timed)?
                }
            }
            row.variants.push(r);
        }
        timed.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut best: Option<(usize, f64)> = None;
        for &(idx, _) in timed.iter().take(self.finalists) {
            let Ok(spec) = &list[idx].1 else { continue };
            let k = RuntimeSpmm::<T>::from_spec(spec)?;
            if let Some(us) = time(gpu, &k, inp.a, ops, (3, inp.reps, 1.0))? {
                row.variants[idx].median_us = Some(us);
                if best.is_none_or(|b| us < b.1) {
                    best = Some((idx, us));
                }
            }
        }
        if let Some(fb) = list
            .iter()
            .position(|(v, _)| *v == SpmmVariant::FALLBACK.canonical())
        {
            row.fallback_us = row.variants[fb].median_us;
        }
        match best {
            Some((idx, us)) => {
                row.best_us = Some(us);
                row.best_variant = Some(list[idx].0.id());
            }
            None => row
                .notes
                .push(format!("sweep: {}", first_errors(&row.variants))),
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn sweep_one<T: Scalar>(
        &self,
        gpu: &Gpu,
        k: &RuntimeSpmm<T>,
        inp: &Inputs<T>,
        ops: &mut Operands<T>,
        checker: &mut DeviceReference,
        r: &mut OursResult,
        sweep: Sweep,
        timed: &mut Vec<(usize, f64)>,
    ) -> Result<()> {
        let err = match check(gpu, k, inp.a, ops, checker) {
            Ok(e) => e,
            Err(e) => {
                let fatal = e
                    .downcast_ref::<sparserl_rt::RtError>()
                    .is_some_and(|e| e.is_context_fatal());
                if fatal {
                    return Err(e.context(format!("variant {}", r.variant)));
                }
                r.error = Some(format!("launch failed: {e:#}"));
                return Ok(());
            }
        };
        r.max_row_rel_err = Some(err).filter(|e| e.is_finite());
        let tol = tolerance(T::TYPE);
        if err > tol {
            r.error = Some(format!(
                "per-row relative error {err:.3e} above tolerance {tol:.0e}"
            ));
            return Ok(());
        }
        r.correct = true;
        // One timed launch first: a variant over 3x slower than the fastest
        // so far is no finalist and keeps that one sample.
        let first = time(gpu, k, inp.a, ops, (0, 1, sweep.max_s))?;
        r.median_us = match first {
            Some(us) if us > 3.0 * sweep.fastest_us => Some(us),
            _ => time(gpu, k, inp.a, ops, (1, self.sweep_reps, sweep.max_s))?,
        };
        if let Some(us) = r.median_us {
            timed.push((sweep.idx, us));
        }
        Ok(())
    }
}

/// One sweep step: the variant's index and its time guard.
#[derive(Debug, Clone, Copy)]
struct Sweep {
    idx: usize,
    max_s: f64,
    /// The fastest median so far (infinity before the first).
    fastest_us: f64,
}

/// The first few distinct failure reasons, for a case where nothing passed.
fn first_errors(v: &[OursResult]) -> String {
    let mut reasons: Vec<&str> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for r in v {
        if let Some(e) = &r.error
            && !reasons.contains(&e.as_str())
            && seen.len() < 3
        {
            reasons.push(e);
            seen.push(format!("{}: {e}", r.variant));
        }
    }
    if seen.is_empty() {
        "no variant passed the check".into()
    } else {
        format!("no variant passed: {}", seen.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With `ptxas` present, a benchmark spec carries the cubin of its
    /// PTX for the device's exact architecture (loading it compiles nothing).
    #[test]
    fn specs_carry_cubins_when_ptxas_is_present() {
        if sparserl_rt::nvrtc::locate().is_err() || !sparserl_rt::nvrtc::ptxas_available() {
            eprintln!("no NVRTC or ptxas: skipped");
            return;
        }
        let v = spmm_space(16, DenseLayout::RowMajor)[0];
        let spec = build_spec(v, ValueType::F32, DenseLayout::RowMajor, 16, &[], "sm_90")
            .expect("compiles");
        let image = &spec.tuned[0].images[0];
        let cubin = image.cubin.expect("a cubin");
        assert_eq!(&cubin[..4], b"\x7fELF", "a cubin is an ELF image");
        assert!(image.ptx.contains(".entry"));
    }
}
