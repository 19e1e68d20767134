//! The GPU source of the SpMM search: every candidate is generated for the
//! width being tuned, compiled with NVRTC, checked against the float64
//! reference (NaN-poisoned Y, then `alpha`/`beta` on a random Y, per-row
//! relative error) and timed through sparserl-rt's SpMM harness
//! ([`SpmmBench`]). A kernel declaring `bias-relu` is measured through its
//! fused entry, as a GCN layer launches it.

use crate::codegen::spmm::generate_spmm;
use crate::descriptor::SpmmDecl;
use crate::gpu::GpuTuner;
use crate::search::spmm::{SpmmSearchConfig, SpmmSource, SpmmTuneOutcome, search_spmm};
use crate::search::{SampleResult, SearchError};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::measure::load_source;
use sparserl_rt::spmm::{SpmmBench, SpmmEpilogue, SpmmMeasurement, SpmmVariant};
use sparserl_rt::{Csr, Gpu, MeasureOptions, RtError, Scalar, ValueType};
use std::time::Instant;

/// Runs the measured SpMM search for declaration `s` over `matrices` (the
/// pattern's samples) on `tuner`'s GPU; `candidates` per width in order.
pub fn tune_spmm(
    tuner: &GpuTuner,
    matrices: &[&Csr],
    value: ValueType,
    s: &SpmmDecl,
    candidates: &[(usize, Vec<SpmmVariant>)],
    cfg: &SpmmSearchConfig,
) -> Result<SpmmTuneOutcome, SearchError> {
    let epilogue = s.epilogues.first().copied();
    match value {
        ValueType::F32 => {
            let mut src = GpuSpmmSource::<f32>::new(tuner.gpu(), matrices, s.dense, epilogue);
            search_spmm(candidates, &mut src, cfg)
        }
        ValueType::F64 => {
            let mut src = GpuSpmmSource::<f64>::new(tuner.gpu(), matrices, s.dense, epilogue);
            search_spmm(candidates, &mut src, cfg)
        }
    }
}

/// [`SpmmSource`] on a GPU: one [`SpmmBench`] per sample at the width
/// being measured (rebuilt when the width changes).
pub struct GpuSpmmSource<'a, T: Scalar> {
    gpu: &'a Gpu,
    matrices: &'a [&'a Csr],
    layout: DenseLayout,
    epilogue: Option<SpmmEpilogue>,
    benches: Option<(usize, Vec<SpmmBench<T>>)>,
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
        .map(|_| SampleResult {
            correct: false,
            rel_err: f64::INFINITY,
            gbs: 0.0,
            median_us: f64::INFINITY,
            error: Some(error.clone()),
        })
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
        let eps: Vec<SpmmEpilogue> = self.epilogue.into_iter().collect();
        let src = match generate_spmm(v, T::TYPE, self.layout, Some(n), &eps) {
            Ok(s) => s,
            Err(e) => return Ok((failed(samples, format!("codegen: {e}")), 0.0)),
        };
        let (gpu, layout, epilogue) = (self.gpu, self.layout, self.epilogue);
        // SAFETY: `src` is the generator's unit for exactly this variant,
        // value type, layout, width and epilogue, which holds that entry.
        let f = match unsafe { load_source::<T>(gpu, &src.source, v, layout, Some(n), epilogue) } {
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
