//! The GPU source of the SpMM search: every candidate is generated for the
//! width being tuned, compiled as a build compiles what it embeds (NVRTC,
//! then a cubin when `ptxas` is present: [`compile_image`]; the first
//! candidates of every width ahead of the search, in parallel:
//! [`precompile`]), checked against the float64
//! reference (NaN-poisoned Y, then `alpha`/`beta` on a random Y, per-row
//! relative error) and timed through sparserl-rt's SpMM harness
//! ([`SpmmBench`]). A kernel declaring `bias-relu` is measured through its
//! fused entry, as a GCN layer launches it.

use crate::builder::COMPILE_OPTIONS;
use crate::codegen::spmm::generate_spmm;
use crate::descriptor::SpmmDecl;
use crate::gpu::GpuTuner;
use crate::search::spmm::search_head;
use crate::search::spmm::{SpmmSearchConfig, SpmmSource, SpmmTuneOutcome, search_spmm};
use crate::search::{SampleResult, SearchError};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::nvrtc::{assemble_cubin, compile_ptx, ptxas_available};
use sparserl_rt::spmm::measure::{load_cubin, load_ptx};
use sparserl_rt::spmm::{SpmmBench, SpmmEpilogue, SpmmMeasurement, SpmmVariant};
use sparserl_rt::{Csr, Gpu, MeasureOptions, RtError, Scalar, ValueType};
use std::collections::HashMap;
use std::time::Instant;

/// Runs the measured SpMM search for declaration `s` over `matrices` (the
/// pattern's samples) on `tuner`'s GPU; `candidates` per width in order.
/// `note` receives one progress line (what was compiled ahead).
pub fn tune_spmm(
    tuner: &GpuTuner,
    matrices: &[&Csr],
    value: ValueType,
    s: &SpmmDecl,
    candidates: &[(usize, Vec<SpmmVariant>)],
    cfg: &SpmmSearchConfig,
    note: &dyn Fn(&str),
) -> Result<SpmmTuneOutcome, SearchError> {
    let epilogue = s.epilogues.first().copied();
    let arch = tuner.gpu().arch();
    let images = precompile(candidates, value, s.dense, epilogue, &arch, note);
    match value {
        ValueType::F32 => {
            let mut src = GpuSpmmSource::<f32>::new(tuner.gpu(), matrices, s.dense, epilogue);
            src.images = images;
            search_spmm(candidates, &mut src, cfg)
        }
        ValueType::F64 => {
            let mut src = GpuSpmmSource::<f64>::new(tuner.gpu(), matrices, s.dense, epilogue);
            src.images = images;
            search_spmm(candidates, &mut src, cfg)
        }
    }
}

/// Candidates per width compiled before the search starts: the first of
/// every family ([`scouts`]) and the head of the prior's order, which the
/// search measures first whatever its budget.
const PRECOMPILE_PER_WIDTH: usize = 12;

/// A candidate compiled ahead of its measurement.
enum Image {
    /// SASS for the GPU's architecture (when `ptxas` is present).
    Cubin(Vec<u8>),
    /// PTX, compiled by the driver at load.
    Ptx(String),
}

/// `v`'s unit at width `n` compiled as a build compiles what it embeds
/// (NVRTC with [`COMPILE_OPTIONS`], then `ptxas` to a cubin for `arch` when
/// present; the PTX if assembling fails); why not, as the search reports it.
fn compile_image(
    v: &SpmmVariant,
    n: usize,
    value: ValueType,
    layout: DenseLayout,
    epilogue: Option<SpmmEpilogue>,
    arch: &str,
) -> Result<Image, String> {
    let eps: Vec<SpmmEpilogue> = epilogue.into_iter().collect();
    let src =
        generate_spmm(v, value, layout, Some(n), &eps).map_err(|e| format!("codegen: {e}"))?;
    let opts: Vec<String> = COMPILE_OPTIONS.iter().map(|o| o.to_string()).collect();
    let ptx = compile_ptx(&src.source, arch, &opts)
        .map_err(|e| format!("load: compiling {}: {e}", v.id()))?;
    Ok(match ptxas_available() {
        true => assemble_cubin(&ptx, arch).map_or(Image::Ptx(ptx), Image::Cubin),
        false => Image::Ptx(ptx),
    })
}

/// Images of the first candidates of every width, keyed by (variant,
/// width): generated, compiled with NVRTC and assembled by `ptxas` on every
/// core at once, so that the measured search (whose budget counts
/// compiling and loading) spends it on measuring. A candidate whose compile
/// fails here is compiled again at its measurement, which reports why.
fn precompile(
    candidates: &[(usize, Vec<SpmmVariant>)],
    value: ValueType,
    layout: DenseLayout,
    epilogue: Option<SpmmEpilogue>,
    arch: &str,
    note: &dyn Fn(&str),
) -> HashMap<(SpmmVariant, usize), Image> {
    let jobs: Vec<(SpmmVariant, usize)> = candidates
        .iter()
        .flat_map(|(n, list)| {
            search_head(list, PRECOMPILE_PER_WIDTH)
                .into_iter()
                .map(move |v| (v, *n))
        })
        .collect();
    let t0 = Instant::now();
    let one =
        |&(v, n): &(SpmmVariant, usize)| compile_image(&v, n, value, layout, epilogue, arch).ok();
    let workers = std::thread::available_parallelism().map_or(1, |w| w.get());
    let per = jobs.len().div_ceil(workers.max(1)).max(1);
    let images: HashMap<_, _> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .chunks(per)
            .map(|chunk| s.spawn(move || chunk.iter().map(|j| (*j, one(j))).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .filter_map(|(j, img)| Some((j, img?)))
            .collect()
    });
    let cubins = images
        .values()
        .filter(|i| matches!(i, Image::Cubin(_)))
        .count();
    note(&format!(
        "SpMM search: {} of {} first candidates compiled in {:.1} s ({cubins} to {arch} cubins)",
        images.len(),
        jobs.len(),
        t0.elapsed().as_secs_f64()
    ));
    images
}

/// [`SpmmSource`] on a GPU: one [`SpmmBench`] per sample at the width
/// being measured (rebuilt when the width changes).
pub struct GpuSpmmSource<'a, T: Scalar> {
    gpu: &'a Gpu,
    matrices: &'a [&'a Csr],
    layout: DenseLayout,
    epilogue: Option<SpmmEpilogue>,
    benches: Option<(usize, Vec<SpmmBench<T>>)>,
    /// Candidates compiled ahead ([`precompile`]), taken at their measurement.
    images: HashMap<(SpmmVariant, usize), Image>,
}

impl<'a, T: Scalar> GpuSpmmSource<'a, T> {
    /// A source over `matrices`, measuring the fused entry of `epilogue`
    /// when given.
    pub fn new(
        gpu: &'a Gpu,
        matrices: &'a [&'a Csr],
        layout: DenseLayout,
        epilogue: Option<SpmmEpilogue>,
    ) -> Self {
        GpuSpmmSource {
            gpu,
            matrices,
            layout,
            epilogue,
            benches: None,
            images: HashMap::new(),
        }
    }

    fn benches(&mut self, n: usize) -> Result<&[SpmmBench<T>], RtError> {
        if self.benches.as_ref().is_none_or(|(w, _)| *w != n) {
            self.benches = None; // free the previous width's device memory first
            let opts = MeasureOptions::default();
            let b = self
                .matrices
                .iter()
                .map(|m| SpmmBench::<T>::new(self.gpu, m, n, self.layout, &opts))
                .collect::<Result<Vec<_>, _>>()?;
            self.benches = Some((n, b));
        }
        Ok(self.benches.as_ref().map_or(&[], |(_, b)| b.as_slice()))
    }
}

fn failed(samples: usize, error: String) -> Vec<SampleResult> {
    (0..samples)
        .map(|_| SampleResult::failed(error.clone()))
        .collect()
}

fn sample_result(m: &SpmmMeasurement) -> SampleResult {
    SampleResult {
        correct: m.correct,
        rel_err: m.max_row_rel_err,
        gbs: m.gbs,
        median_us: m.median_us,
        error: m.error.clone(),
    }
}

impl<T: Scalar> SpmmSource for GpuSpmmSource<'_, T> {
    fn samples(&self) -> usize {
        self.matrices.len()
    }

    fn measure(
        &mut self,
        v: &SpmmVariant,
        n: usize,
        reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError> {
        let t0 = Instant::now();
        let samples = self.matrices.len();
        let (gpu, layout, epilogue) = (self.gpu, self.layout, self.epilogue);
        let image = match self.images.remove(&(*v, n)) {
            Some(image) => image,
            None => match compile_image(v, n, T::TYPE, layout, epilogue, &gpu.arch()) {
                Ok(image) => image,
                Err(why) => return Ok((failed(samples, why), t0.elapsed().as_secs_f64())),
            },
        };
        let loaded = match image {
            // SAFETY: `compile_image` made the image from the generator's
            // unit for exactly this variant, value type (`T::TYPE`: the value
            // `tune_spmm` passed `precompile`), layout, width and epilogue,
            // compiled and assembled for this GPU's architecture.
            Image::Cubin(c) => unsafe {
                load_cubin(gpu, &c, v, T::TYPE, layout, Some(n), epilogue)
            },
            // SAFETY: as above, for its PTX.
            Image::Ptx(p) => unsafe { load_ptx(gpu, &p, v, T::TYPE, layout, Some(n), epilogue) },
        };
        let f = match loaded {
            Ok(f) => f,
            Err(e) if e.is_context_fatal() => return Err(SearchError::Source(e)),
            Err(e) => {
                let secs = t0.elapsed().as_secs_f64();
                return Ok((failed(samples, format!("load: {e}")), secs));
            }
        };
        let opts = MeasureOptions {
            reps,
            ..MeasureOptions::default()
        };
        let benches = self.benches(n).map_err(SearchError::Source)?;
        let mut out = Vec::with_capacity(samples);
        for b in benches {
            // SAFETY: `f` was loaded from the unit of this variant for `T`,
            // the bench's layout and width `n`, with this epilogue.
            let m = unsafe { b.measure(&f, epilogue, &opts) }.map_err(SearchError::Source)?;
            out.push(sample_result(&m));
        }
        Ok((out, t0.elapsed().as_secs_f64()))
    }
}
