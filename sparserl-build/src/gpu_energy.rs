//! The GPU energy source of the search's energy phase
//! ([`crate::search::energy`]): NVML's total-energy counter
//! ([`sparserl_rt::energy::EnergyMeter`]) around a busy loop of one
//! finalist on the first sample, each finalist checked against the float64
//! reference first.
//!
//! libnvidia-ml is loaded at run time: a build machine without it (or a GPU
//! without an energy counter) builds as with `objective = "time"`, with one
//! message per build process saying so.

use crate::gpu::{GpuTuner, load_variant_with};
use crate::objective::Objective;
use crate::search::energy::{self, EnergySearch, EnergySource, ObjectiveChoice, Unmeasured};
use crate::search::{SearchError, TuneOutcome};
use sparserl_rt::energy::{EnergyMeasurement, EnergyMeter, EnergyOptions};
use sparserl_rt::{Bench, Csr, Epilogue, Gpu, RtError, Scalar, ValueType, Variant, tolerance};
use std::sync::atomic::{AtomicBool, Ordering};

/// Energy per call of variants on one sample, through NVML.
pub struct GpuEnergySource<'a, T: Scalar> {
    gpu: &'a Gpu,
    meter: &'a EnergyMeter,
    bench: Bench<T>,
    epilogue: Option<Epilogue>,
    opts: EnergyOptions,
}

impl<'a, T: Scalar> GpuEnergySource<'a, T> {
    /// Uploads `sample` (with the fused entries of `epilogue` when given,
    /// as the time search measured them).
    pub fn new(
        gpu: &'a Gpu,
        meter: &'a EnergyMeter,
        sample: &Csr,
        epilogue: Option<Epilogue>,
        opts: EnergyOptions,
    ) -> Result<Self, SearchError> {
        let mut bench = Bench::<T>::new(gpu, sample).map_err(SearchError::Source)?;
        if let Some(e) = epilogue {
            bench = bench.with_epilogue(e).map_err(SearchError::Source)?;
        }
        Ok(GpuEnergySource {
            gpu,
            meter,
            bench,
            epilogue,
            opts,
        })
    }
}

/// A failure that destroys the context stops the build; others only rule
/// the variant out of the energy pick.
fn classify(e: RtError) -> Result<RtError, SearchError> {
    if e.is_context_fatal() {
        Err(SearchError::Source(e))
    } else {
        Ok(e)
    }
}

impl<T: Scalar> EnergySource for GpuEnergySource<'_, T> {
    fn measure(
        &mut self,
        variant: &Variant,
    ) -> Result<Result<EnergyMeasurement, Unmeasured>, SearchError> {
        let func = match load_variant_with::<T>(self.gpu, variant, self.epilogue) {
            Ok(f) => f,
            Err(e) => return Ok(Err(Unmeasured::Compile(e))),
        };
        // SAFETY: `func` is the entry of codegen::generate_with(variant, T,
        // [epilogue]) for this source's epilogue, the one the bench was set
        // up with, compiled and loaded by load_variant_with for this GPU.
        let err = match unsafe { self.bench.check(&func, variant) } {
            Ok(e) => e,
            Err(e) => return classify(e).map(|e| Err(Unmeasured::Check(e))),
        };
        let tol = tolerance(T::TYPE);
        if err.is_nan() || err > tol {
            return Ok(Err(Unmeasured::Wrong { err, tol }));
        }
        let (gpu, meter, opts) = (self.gpu, self.meter, self.opts);
        // SAFETY: as above.
        let m = unsafe {
            self.bench.with_launcher(&func, variant, |launch| {
                meter.measure::<MeasureError>(
                    gpu,
                    &mut || launch().map_err(MeasureError::Rt),
                    &opts,
                )
            })
        };
        match m {
            Ok(m) => Ok(Ok(m)),
            Err(MeasureError::Rt(e)) => classify(e).map(|e| Err(Unmeasured::Launch(e))),
            Err(MeasureError::Energy(e)) => Ok(Err(Unmeasured::Energy(e))),
        }
    }
}

/// The two ways a measurement fails.
#[derive(Debug)]
enum MeasureError {
    Rt(RtError),
    Energy(sparserl_rt::energy::EnergyError),
}

impl From<RtError> for MeasureError {
    fn from(e: RtError) -> Self {
        MeasureError::Rt(e)
    }
}

impl From<sparserl_rt::energy::EnergyError> for MeasureError {
    fn from(e: sparserl_rt::energy::EnergyError) -> Self {
        match e {
            sparserl_rt::energy::EnergyError::Rt(r) => MeasureError::Rt(r),
            other => MeasureError::Energy(other),
        }
    }
}

/// Whether this process already said that energy cannot be measured.
static UNAVAILABLE_SAID: AtomicBool = AtomicBool::new(false);

/// The message for a build whose energy objective falls back to time:
/// `Some` the first time in this process, `None` after.
pub fn unavailable_notice(why: &str) -> Option<String> {
    let first = !UNAVAILABLE_SAID.swap(true, Ordering::Relaxed);
    first.then(|| {
        format!(
            "energy cannot be measured on this machine ({why}); kernels declaring an energy \
             objective use the time objective's pick (the fastest correct variant)"
        )
    })
}

/// The opened energy meter, or (when it could not be opened: `why`) the
/// time pick with a record saying why, after one message per process to
/// `notice`.
pub fn open_or_fallback<M, E: std::fmt::Display>(
    opened: Result<M, E>,
    objective: &Objective,
    out: &TuneOutcome,
    notice: &mut dyn FnMut(&str),
) -> Result<M, Box<ObjectiveChoice>> {
    opened.map_err(|why| {
        let why = why.to_string();
        if let Some(msg) = unavailable_notice(&why) {
            notice(&msg);
        }
        Box::new(energy::fallback(objective, out, why))
    })
}

/// Applies the kernel's objective after its time search: for an objective
/// that needs energy, opens NVML on the tuner's GPU and measures the
/// finalists ([`energy::apply`]) on `samples[0]`; no NVML or no energy
/// counter keeps the time pick (its record says why, `notice` gets one
/// message per process). Only a device fault is an error.
pub fn apply_objective(
    tuner: &GpuTuner,
    samples: &[&Csr],
    value: ValueType,
    epilogue: Option<Epilogue>,
    objective: &Objective,
    out: &TuneOutcome,
    notice: &mut dyn FnMut(&str),
) -> Result<ObjectiveChoice, SearchError> {
    if !objective.needs_energy() {
        return Ok(ObjectiveChoice::time(out));
    }
    let cfg = EnergySearch::default();
    let Some(sample) = samples.first().copied() else {
        return Ok(energy::fallback(objective, out, "no sample".into()));
    };
    let opened = EnergyMeter::new(tuner.gpu());
    let meter = match open_or_fallback(opened, objective, out, notice) {
        Ok(m) => m,
        Err(time_pick) => return Ok(*time_pick),
    };
    let gpu = tuner.gpu();
    match value {
        ValueType::F32 => {
            let mut src = GpuEnergySource::<f32>::new(gpu, &meter, sample, epilogue, cfg.opts)?;
            energy::apply(objective, out, &mut src, &cfg)
        }
        ValueType::F64 => {
            let mut src = GpuEnergySource::<f64>::new(gpu, &meter, sample, epilogue, cfg.opts)?;
            energy::apply(objective, out, &mut src, &cfg)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::energy::finalists;
    use sparserl_rt::energy::library_present_at;
    use std::ffi::OsStr;

    /// No NVML on the build machine: an energy objective keeps the time
    /// pick, the record says why, the message comes once per process and
    /// nothing panics.
    #[test]
    fn without_nvml_the_time_pick_is_kept_with_one_message() {
        let missing = library_present_at(OsStr::new("/nonexistent/libnvidia-ml.so.1"))
            .expect_err("no library at that path");
        let out = TuneOutcome {
            winner: Variant::of(sparserl_rt::Strategy::GroupPerRow),
            gbs: 123.0,
            candidates: 1,
            seconds: 0.1,
            stopped: "budget".into(),
            trials: Vec::new(),
            rejected: Vec::new(),
        };
        let mut said = Vec::new();
        for _ in 0..2 {
            let r = open_or_fallback::<(), String>(
                Err(missing.to_string()),
                &Objective::Energy,
                &out,
                &mut |m| said.push(m.to_string()),
            );
            let choice = r.expect_err("no meter");
            assert_eq!((choice.winner, choice.gbs), (out.winner, out.gbs));
            let rec = choice.record.expect("a record of the fallback");
            let why = rec.fallback.expect("the reason");
            assert!(
                why.contains("cannot load the NVIDIA Management Library"),
                "{why}"
            );
            assert_eq!(rec.chosen, out.winner.id());
        }
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(
            said[0].contains("use the time objective's pick"),
            "{}",
            said[0]
        );
        assert_eq!(finalists(&out, 3).len(), 1);
        // A meter that opened is passed through untouched.
        assert_eq!(
            open_or_fallback::<_, String>(Ok(7), &Objective::Energy, &out, &mut |_| ()),
            Ok(7)
        );
    }
}
