//! The GPU measurement source of the search: compiles variants with NVRTC,
//! checks them against the float64 reference and times them through
//! [`sparserl_rt::Bench`].

use crate::codegen;
use crate::search::{MeasureSource, SampleResult, SearchConfig, SearchError, TuneOutcome, search};
use sparserl_rt::{
    Bench, Csr, Epilogue, Gpu, MeasureOptions, Measurement, RtError, Scalar, ValueType, Variant,
    copy_bandwidth_gbs,
};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::time::Instant;

/// Why measuring is impossible, or why a variant could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No usable GPU (no driver, no device, ...).
    #[error("{0}")]
    NoGpu(#[source] RtError),
    /// NVRTC is missing or rejected the source.
    #[error(transparent)]
    Nvrtc(#[from] sparserl_rt::nvrtc::NvrtcError),
    /// The variant's code could not be generated.
    #[error(transparent)]
    Codegen(#[from] codegen::CodegenError),
    /// The variant's strategy has no fused entry for the epilogue.
    #[error("{variant} cannot fuse the {epilogue} epilogue")]
    CannotFuse {
        /// The variant's id.
        variant: String,
        /// The epilogue.
        epilogue: Epilogue,
    },
    /// Loading the module failed.
    #[error(transparent)]
    Load(#[from] RtError),
}

/// A GPU ready to tune kernels on.
pub struct GpuTuner {
    gpu: Gpu,
    copy_gbs: OnceCell<f64>,
}

impl std::fmt::Debug for GpuTuner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuTuner")
            .field("gpu", &self.gpu.name())
            .finish()
    }
}

impl GpuTuner {
    /// Finds GPU 0 and NVRTC; `Err` says why measuring is impossible.
    pub fn probe() -> Result<GpuTuner, GpuError> {
        let gpu = Gpu::new(0).map_err(GpuError::NoGpu)?;
        sparserl_rt::nvrtc::locate()?;
        Ok(GpuTuner {
            gpu,
            copy_gbs: OnceCell::new(),
        })
    }

    /// The device.
    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Device name.
    pub fn name(&self) -> String {
        self.gpu.name().to_string()
    }

    /// `sm_XY` of the device.
    pub fn arch(&self) -> String {
        self.gpu.arch()
    }

    /// Device-to-device copy bandwidth, GB/s (read + write), measured once.
    pub fn copy_gbs(&self) -> f64 {
        *self
            .copy_gbs
            .get_or_init(|| copy_bandwidth_gbs(&self.gpu).unwrap_or(f64::NAN))
    }

    /// Runs the measured search over `matrices` (the pattern's samples).
    pub fn tune(
        &self,
        matrices: &[&Csr],
        value: ValueType,
        proposals: &[Variant],
        cfg: &SearchConfig,
    ) -> Result<TuneOutcome, SearchError> {
        self.tune_with(matrices, value, proposals, cfg, None)
    }

    /// [`GpuTuner::tune`] measuring the fused entry of `epilogue` (a kernel
    /// declared with epilogues is tuned as its solver launches it; strategies
    /// that cannot fuse are left out).
    pub fn tune_with(
        &self,
        matrices: &[&Csr],
        value: ValueType,
        proposals: &[Variant],
        cfg: &SearchConfig,
        epilogue: Option<Epilogue>,
    ) -> Result<TuneOutcome, SearchError> {
        match value {
            ValueType::F32 => {
                let mut src =
                    GpuSource::<f32>::new(&self.gpu, matrices)?.with_epilogue(epilogue)?;
                search(proposals, &mut src, cfg)
            }
            ValueType::F64 => {
                let mut src =
                    GpuSource::<f64>::new(&self.gpu, matrices)?.with_epilogue(epilogue)?;
                search(proposals, &mut src, cfg)
            }
        }
    }

    /// Measures every variant of `variants` that can run on `matrices`
    /// (exhaustive sweep; layout variants the matrices lack are left out),
    /// returning per-variant per-sample measurements.
    pub fn sweep(
        &self,
        matrices: &[&Csr],
        value: ValueType,
        variants: &[Variant],
        reps: u32,
    ) -> Result<Vec<(Variant, Vec<SampleResult>)>, SearchError> {
        fn run<T: Scalar>(
            gpu: &Gpu,
            matrices: &[&Csr],
            variants: &[Variant],
            reps: u32,
        ) -> Result<Vec<(Variant, Vec<SampleResult>)>, SearchError> {
            let mut src = GpuSource::<T>::new(gpu, matrices)?;
            let mut out = Vec::with_capacity(variants.len());
            for v in variants {
                if src.applicable(v) {
                    out.push((*v, src.measure(v, reps)?.0));
                }
            }
            Ok(out)
        }
        match value {
            ValueType::F32 => run::<f32>(&self.gpu, matrices, variants, reps),
            ValueType::F64 => run::<f64>(&self.gpu, matrices, variants, reps),
        }
    }
}

/// The epilogue a kernel declaring `epilogues` is measured with: the one
/// doing the most work (`axpby-dot`, else `dot`, else `axpby`).
pub fn measured_epilogue(epilogues: &[Epilogue]) -> Option<Epilogue> {
    [Epilogue::AxpbyDot, Epilogue::Dot, Epilogue::Axpby]
        .into_iter()
        .find(|e| epilogues.contains(e))
}

/// Compiles and loads `variant` for `T` on `gpu` (cached per entry by the Gpu).
pub fn load_variant<T: Scalar>(
    gpu: &Gpu,
    variant: &Variant,
) -> Result<cudarc::driver::CudaFunction, GpuError> {
    load_variant_with::<T>(gpu, variant, None)
}

/// [`load_variant`], the fused entry of `epilogue` when given (an error for
/// a strategy that cannot fuse).
pub fn load_variant_with<T: Scalar>(
    gpu: &Gpu,
    variant: &Variant,
    epilogue: Option<Epilogue>,
) -> Result<cudarc::driver::CudaFunction, GpuError> {
    let eps: Vec<Epilogue> = epilogue.into_iter().collect();
    let src = codegen::generate_with(variant, T::TYPE, &eps)?;
    let entry = match epilogue {
        None => src.entry.clone(),
        Some(e) => src
            .fused
            .iter()
            .find(|(f, _)| *f == e)
            .map(|(_, n)| n.clone())
            .ok_or_else(|| GpuError::CannotFuse {
                variant: variant.id(),
                epilogue: e,
            })?,
    };
    let compile = || {
        let opts: Vec<String> = crate::builder::COMPILE_OPTIONS
            .iter()
            .map(|s| s.to_string())
            .collect();
        sparserl_rt::nvrtc::compile_ptx(&src.source, &gpu.arch(), &opts).map_err(RtError::Nvrtc)
    };
    // SAFETY: the generator names every entry after its variant, value type
    // and epilogue, so one name is always the same code (this generator's,
    // compiled with the build's options); the function is launched only
    // through `Bench`'s unsafe methods for that variant.
    unsafe { gpu.function_or_load(&entry, compile) }.map_err(GpuError::Load)
}

/// Measurement source over the samples of one pattern on one GPU.
pub struct GpuSource<T: Scalar> {
    gpu: Gpu,
    benches: Vec<Bench<T>>,
    failed_compiles: HashMap<Variant, String>,
    /// The fused epilogue measured (plain kernels when `None`).
    epilogue: Option<Epilogue>,
}

impl<T: Scalar> GpuSource<T> {
    /// Uploads every sample.
    pub fn new(gpu: &Gpu, matrices: &[&Csr]) -> Result<Self, SearchError> {
        let benches = matrices
            .iter()
            .map(|m| Bench::<T>::new(gpu, m))
            .collect::<Result<Vec<_>, _>>()
            .map_err(SearchError::Source)?;
        Ok(GpuSource {
            gpu: gpu.clone(),
            benches,
            failed_compiles: HashMap::new(),
            epilogue: None,
        })
    }

    /// Measures the fused entries of `epilogue` (when given) instead of the
    /// plain ones.
    pub fn with_epilogue(mut self, epilogue: Option<Epilogue>) -> Result<Self, SearchError> {
        if let Some(e) = epilogue {
            self.benches = self
                .benches
                .into_iter()
                .map(|b| b.with_epilogue(e))
                .collect::<Result<Vec<_>, _>>()
                .map_err(SearchError::Source)?;
        }
        self.epilogue = epilogue;
        Ok(self)
    }

    /// The uploaded benches.
    pub fn benches(&self) -> &[Bench<T>] {
        &self.benches
    }
}

fn to_sample(m: &Measurement) -> SampleResult {
    SampleResult {
        correct: m.correct,
        rel_err: m.rel_err,
        gbs: if m.correct { m.gbs } else { 0.0 },
        median_us: m.median_us,
        error: m.error.clone(),
    }
}

impl<T: Scalar> MeasureSource for GpuSource<T> {
    fn samples(&self) -> usize {
        self.benches.len()
    }

    fn applicable(&self, variant: &Variant) -> bool {
        // A renumbered variant runs on the renumbered upload, whose layouts
        // may differ (a mesh in RCM order may get 16-bit offsets); square
        // samples only.
        (self.epilogue.is_none() || variant.strategy.fuses_epilogue())
            && self.benches.iter().all(|b| {
                b.device_csr_for(variant.reorder)
                    .is_ok_and(|a| a.has_layout(variant.strategy))
            })
    }

    fn measure(
        &mut self,
        variant: &Variant,
        reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError> {
        let t0 = Instant::now();
        if let Some(msg) = self.failed_compiles.get(variant) {
            return Ok((vec![SampleResult::failed(msg.clone())], 0.0));
        }
        let func = match load_variant_with::<T>(&self.gpu, variant, self.epilogue) {
            Ok(f) => f,
            Err(e) => {
                // A failing candidate is data for the search, kept as its reason.
                let msg = e.to_string();
                self.failed_compiles.insert(*variant, msg.clone());
                return Ok((vec![SampleResult::failed(msg)], t0.elapsed().as_secs_f64()));
            }
        };
        let opts = MeasureOptions {
            warmup: 3,
            reps,
            max_seconds: 0.5,
            ..MeasureOptions::default()
        };
        let mut out = Vec::with_capacity(self.benches.len());
        for b in &self.benches {
            // SAFETY: `func` is the entry of codegen::generate_with(variant, T,
            // [epilogue]) for this source's epilogue (plain when none), the
            // one the benches were set up for, compiled and loaded by
            // load_variant_with for this GPU.
            let m = unsafe { b.measure(&func, variant, &opts) }.map_err(SearchError::Source)?;
            let wrong = !m.correct;
            out.push(to_sample(&m));
            if wrong {
                break; // never time a variant that failed on any sample
            }
        }
        Ok((out, t0.elapsed().as_secs_f64()))
    }
}
