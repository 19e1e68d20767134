//! `collect --energy-top K`: energy per call of each record's K fastest
//! correct variants, measured through NVML next to their time, so the
//! policy's reward can weigh energy (`train --energy-weight`).

use anyhow::{Context, Result};
use sparserl_build::GpuTuner;
use sparserl_policies::dataset::EnergyResult;
use sparserl_rt::energy::{EnergyMeter, EnergyOptions};
use sparserl_rt::{Bench, Csr, Scalar, ValueType, Variant};

/// The meter and the windows `collect` measures with.
pub struct CollectMeter {
    meter: EnergyMeter,
    opts: EnergyOptions,
}

impl CollectMeter {
    /// Opens NVML on the tuner's GPU and measures the counter's interval:
    /// windows of 5 counter intervals, 3 per variant.
    pub fn open(tuner: &GpuTuner) -> Result<CollectMeter> {
        let meter = EnergyMeter::new(tuner.gpu())
            .context("`collect --energy-top` measures energy and needs NVML")?;
        let (counter, idle) = meter
            .probe_counter(0.5)
            .context("probing the energy counter")?;
        println!(
            "collect: energy through NVML ({}), counter every {:.1} ms, idle {idle:.1} W",
            meter.name(),
            counter.interval_ms
        );
        let opts = EnergyOptions {
            window_s: 5.0 * counter.interval_ms * 1e-3,
            repeats: 3,
            ..EnergyOptions::default()
        };
        Ok(CollectMeter { meter, opts })
    }

    /// Energy of the `k` fastest correct results (`(variant index, GB/s,
    /// error, correct)` into `variants`), each checked against float64
    /// again first; a variant that fails is left out with a message.
    pub fn fastest(
        &self,
        tuner: &GpuTuner,
        csr: &Csr,
        value: ValueType,
        variants: &[Variant],
        results: &[(usize, f64, f64, bool)],
        k: usize,
    ) -> Result<Vec<EnergyResult>> {
        let mut fast: Vec<&(usize, f64, f64, bool)> = results.iter().filter(|r| r.3).collect();
        fast.sort_by(|a, b| b.1.total_cmp(&a.1));
        let picked: Vec<usize> = fast.iter().take(k).map(|r| r.0).collect();
        match value {
            ValueType::F32 => self.measure::<f32>(tuner, csr, variants, &picked),
            ValueType::F64 => self.measure::<f64>(tuner, csr, variants, &picked),
        }
    }

    fn measure<T: Scalar>(
        &self,
        tuner: &GpuTuner,
        csr: &Csr,
        variants: &[Variant],
        picked: &[usize],
    ) -> Result<Vec<EnergyResult>> {
        let bench = Bench::<T>::new(tuner.gpu(), csr).context("uploading the matrix")?;
        let mut out = Vec::new();
        for &i in picked {
            let v = &variants[i];
            match crate::energy::variant_energy(tuner, &self.meter, &self.opts, &bench, v) {
                Ok(e) => out.push(EnergyResult {
                    variant: i,
                    joules_per_call: e.joules_per_call,
                    seconds_per_call: e.seconds_per_call,
                    spread: e.spread,
                }),
                Err(e) => println!("    energy of {} not measured: {e:#}", v.id()),
            }
        }
        Ok(out)
    }
}
