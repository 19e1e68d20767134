//! `bench-app --energy`: joules per CG and PageRank iteration, ours against
//! cuSPARSE + cuBLAS (the graph-captured device-pointer form, the faster of
//! the vendor's two), in the same run, through NVML's total-energy counter
//! ([`sparserl_rt::energy::EnergyMeter::measure_blocking`]).
//!
//! Each side runs whole solver calls back to back, each call a fixed
//! number of iterations worth about [`CALL_SECONDS`] of GPU time (so the
//! host set-up of a call, its graph capture, is small against it and
//! charged to it alike on both sides), for a warm-up and [`REPEATS`]
//! windows of at least [`WINDOW_S`]: about 1 s per side, 2 s per case.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sparserl_rt::Gpu;
use sparserl_rt::energy::{EnergyMeasurement, EnergyMeter, EnergyOptions};

/// GPU seconds of one solver call.
pub const CALL_SECONDS: f64 = 0.05;
/// Minimum window length, seconds.
pub const WINDOW_S: f64 = 0.2;
/// Windows per side.
pub const REPEATS: usize = 3;

/// Energy per iteration of one case, both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IterEnergy {
    /// Ours: joules per iteration (whole card, idle power included).
    pub ours_joules_per_iter: f64,
    /// Ours: relative spread over the windows.
    pub ours_spread: f64,
    /// Ours: average power, watts.
    pub ours_avg_power_w: f64,
    /// Ours: microseconds per iteration in the energy loop.
    pub ours_us_per_iter_in_loop: f64,
    /// Ours: iterations per solver call.
    pub ours_iters_per_call: usize,
    /// cuSPARSE + cuBLAS graph form: joules per iteration.
    pub vendor_joules_per_iter: f64,
    /// Vendor: relative spread over the windows.
    pub vendor_spread: f64,
    /// Vendor: average power, watts.
    pub vendor_avg_power_w: f64,
    /// Vendor: microseconds per iteration in the energy loop.
    pub vendor_us_per_iter_in_loop: f64,
    /// Vendor: iterations per call.
    pub vendor_iters_per_call: usize,
    /// Vendor joules / ours (above 1: ours uses less energy per iteration).
    pub energy_ratio: f64,
    /// Idle power measured before the case, watts.
    pub idle_power_w: Option<f64>,
}

/// The meter and its options, opened once per run.
pub struct Energy {
    meter: EnergyMeter,
    opts: EnergyOptions,
}

impl Energy {
    /// Opens NVML on `gpu`.
    pub fn open(gpu: &Gpu) -> Result<Self> {
        let meter = EnergyMeter::new(gpu).context("bench-app --energy needs NVML")?;
        Ok(Energy {
            meter,
            opts: EnergyOptions {
                warmup_s: 0.1,
                window_s: WINDOW_S,
                repeats: REPEATS,
                ..EnergyOptions::default()
            },
        })
    }

    /// Measures both sides: `ours(n)` and `vendor(n)` each run `n`
    /// iterations synchronously and return the iterations done; `n` comes
    /// from the timed microseconds per iteration `ours_us` / `vendor_us`.
    pub fn case(
        &self,
        (ours_us, ours): (f64, &mut dyn FnMut(usize) -> Result<u64>),
        (vendor_us, vendor): (f64, &mut dyn FnMut(usize) -> Result<u64>),
        chunk: usize,
    ) -> Result<IterEnergy> {
        let idle = self.meter.idle_power(WINDOW_S).ok();
        let no = iterations_per_call(ours_us, chunk);
        let nv = iterations_per_call(vendor_us, chunk);
        let o = self.side(&mut || ours(no)).context("our side")?;
        let v = self.side(&mut || vendor(nv)).context("the vendor side")?;
        eprintln!(
            "  energy: ours {:.3} mJ/iter ({:.0} W, spread {:.1}%), vendor {:.3} mJ/iter ({:.0} W) -> {:.2}x",
            o.joules_per_call * 1e3,
            o.avg_power_w,
            o.spread * 100.0,
            v.joules_per_call * 1e3,
            v.avg_power_w,
            v.joules_per_call / o.joules_per_call
        );
        Ok(iter_energy(&o, no, &v, nv, idle))
    }

    fn side(&self, run: &mut dyn FnMut() -> Result<u64>) -> Result<EnergyMeasurement> {
        self.meter
            .measure_blocking::<anyhow::Error>(run, &self.opts)
    }
}

/// Iterations per call for about [`CALL_SECONDS`] at `us_per_iter`: a
/// multiple of `chunk`, at least one chunk, at most 100 000.
pub fn iterations_per_call(us_per_iter: f64, chunk: usize) -> usize {
    let chunk = chunk.max(1);
    let n = if us_per_iter.is_finite() && us_per_iter > 0.0 {
        (CALL_SECONDS * 1e6 / us_per_iter).ceil() as usize
    } else {
        chunk
    };
    (n.div_ceil(chunk) * chunk).clamp(chunk, 100_000)
}

/// The record of one case.
pub fn iter_energy(
    o: &EnergyMeasurement,
    no: usize,
    v: &EnergyMeasurement,
    nv: usize,
    idle_power_w: Option<f64>,
) -> IterEnergy {
    IterEnergy {
        ours_joules_per_iter: o.joules_per_call,
        ours_spread: o.spread,
        ours_avg_power_w: o.avg_power_w,
        ours_us_per_iter_in_loop: o.seconds_per_call * 1e6,
        ours_iters_per_call: no,
        vendor_joules_per_iter: v.joules_per_call,
        vendor_spread: v.spread,
        vendor_avg_power_w: v.avg_power_w,
        vendor_us_per_iter_in_loop: v.seconds_per_call * 1e6,
        vendor_iters_per_call: nv,
        energy_ratio: v.joules_per_call / o.joules_per_call,
        idle_power_w,
    }
}

/// Geomean of the energy ratios of the cases that have one.
pub fn geomean_ratio<'a>(cases: impl Iterator<Item = Option<&'a IterEnergy>>) -> Option<f64> {
    let xs: Vec<f64> = cases
        .flatten()
        .map(|e| e.energy_ratio)
        .filter(|x| x.is_finite() && *x > 0.0)
        .collect();
    (!xs.is_empty()).then(|| crate::common::geomean(&xs))
}
