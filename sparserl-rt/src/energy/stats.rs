//! The arithmetic of an energy measurement, on recorded samples (no device):
//! how the counter updates, the per-window energy of a busy loop, idle power,
//! the summary with its spread, and the pick rule of the energy objective.

use serde::{Deserialize, Serialize};

/// One change of the driver's total-energy counter, seen by polling it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSample {
    /// Host time of the first poll that saw the new value, nanoseconds since
    /// the start of the recording.
    pub t_ns: u64,
    /// The counter, millijoules.
    pub mj: u64,
}

impl CounterSample {
    fn t(&self) -> f64 {
        self.t_ns as f64 * 1e-9
    }
}

/// A chunk of launches seen complete: host time (nanoseconds since the start
/// of the recording) and the calls completed so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// Host time of the poll that saw the chunk's event complete.
    pub t_ns: u64,
    /// Calls completed up to and including this chunk.
    pub calls: u64,
}

/// How the counter updates, from the changes seen while polling it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterStats {
    /// Median time between two changes, milliseconds.
    pub interval_ms: f64,
    /// 10th percentile of the time between changes, milliseconds.
    pub interval_p10_ms: f64,
    /// 90th percentile of the time between changes, milliseconds.
    pub interval_p90_ms: f64,
    /// Smallest change seen, millijoules.
    pub min_step_mj: u64,
    /// Greatest common divisor of the changes, millijoules: the counter's
    /// quantum as far as the samples show (1 = millijoule resolution).
    pub step_gcd_mj: u64,
    /// Changes seen.
    pub updates: usize,
    /// Mean host time between two polls, microseconds (the time resolution
    /// of a change's timestamp).
    pub poll_us: f64,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The counter's update interval and resolution from the changes seen in
/// `polls` polls over `seconds`; `None` with fewer than three changes (two
/// intervals) or a counter that went backwards.
pub fn counter_stats(edges: &[CounterSample], polls: usize, seconds: f64) -> Option<CounterStats> {
    if edges.len() < 3 {
        return None;
    }
    let mut dt = Vec::with_capacity(edges.len() - 1);
    let (mut min_step, mut step_gcd) = (u64::MAX, 0u64);
    for w in edges.windows(2) {
        let step = w[1].mj.checked_sub(w[0].mj).filter(|&s| s > 0)?;
        min_step = min_step.min(step);
        step_gcd = gcd(step_gcd, step);
        dt.push((w[1].t() - w[0].t()) * 1e3);
    }
    let s = crate::measure::stats(&dt)?;
    Some(CounterStats {
        interval_ms: s.median,
        interval_p10_ms: s.p10,
        interval_p90_ms: s.p90,
        min_step_mj: min_step,
        step_gcd_mj: step_gcd,
        updates: edges.len(),
        poll_us: seconds * 1e6 / polls.max(1) as f64,
    })
}

/// Energy, time and calls between two counter changes inside a busy loop.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Joules between the two changes.
    pub joules: f64,
    /// Seconds between the two changes.
    pub seconds: f64,
    /// Calls completed between them (interpolated between chunk completions).
    pub calls: f64,
}

impl Window {
    /// Joules per call.
    pub fn joules_per_call(&self) -> f64 {
        self.joules / self.calls
    }
    /// Average power, watts.
    pub fn watts(&self) -> f64 {
        self.joules / self.seconds
    }
}

/// Calls completed by time `t` (seconds), linearly interpolated between
/// chunk completions; `None` outside the completions' time range.
fn calls_at(done: &[Completion], t: f64) -> Option<f64> {
    let k = done.partition_point(|c| (c.t_ns as f64 * 1e-9) < t);
    if k == 0 || k == done.len() {
        return None;
    }
    let (a, b) = (done[k - 1], done[k]);
    let (ta, tb) = (a.t_ns as f64 * 1e-9, b.t_ns as f64 * 1e-9);
    let f = if tb > ta { (t - ta) / (tb - ta) } else { 1.0 };
    Some(a.calls as f64 + f * (b.calls - a.calls) as f64)
}

/// Consecutive windows between counter changes that lie strictly inside the
/// busy loop (between its first and last chunk completion), each at least
/// `min_seconds` long, at most `max_windows` of them. A window whose calls
/// or energy are not positive is left out.
pub fn busy_windows(
    edges: &[CounterSample],
    done: &[Completion],
    min_seconds: f64,
    max_windows: usize,
) -> Vec<Window> {
    let inside: Vec<(f64, u64, f64)> = edges
        .iter()
        .filter_map(|e| calls_at(done, e.t()).map(|c| (e.t(), e.mj, c)))
        .collect();
    let mut out = Vec::new();
    let mut a = 0;
    for b in 1..inside.len() {
        if out.len() >= max_windows {
            break;
        }
        let (ta, ea, ca) = inside[a];
        let (tb, eb, cb) = inside[b];
        if tb - ta < min_seconds {
            continue;
        }
        if eb > ea && cb > ca {
            out.push(Window {
                joules: (eb - ea) as f64 * 1e-3,
                seconds: tb - ta,
                calls: cb - ca,
            });
        }
        a = b;
    }
    out
}

/// Average power (watts) between the first and the last counter change of
/// an idle recording; `None` with fewer than two changes.
pub fn idle_power(edges: &[CounterSample]) -> Option<f64> {
    let (a, b) = (edges.first()?, edges.last()?);
    let dt = b.t() - a.t();
    (dt > 0.0 && b.mj > a.mj).then(|| (b.mj - a.mj) as f64 * 1e-3 / dt)
}

/// Energy per call of one kernel (or library call), from repeated windows of
/// one busy loop of back-to-back launches.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyMeasurement {
    /// Median over the windows, joules per call (the whole card's energy,
    /// idle power included: what a loop of these calls costs).
    pub joules_per_call: f64,
    /// 10th percentile over the windows.
    pub joules_per_call_p10: f64,
    /// 90th percentile over the windows.
    pub joules_per_call_p90: f64,
    /// Relative spread over the windows, `(max - min) / median` (the search's
    /// definition of noise).
    pub spread: f64,
    /// Median over the windows, seconds per call in the loop.
    pub seconds_per_call: f64,
    /// Median over the windows, average power, watts.
    pub avg_power_w: f64,
    /// Idle power measured next to it (the counter over an idle sleep of one
    /// window's length), watts.
    pub idle_power_w: Option<f64>,
    /// Calls inside the windows.
    pub calls: f64,
    /// Seconds inside the windows.
    pub seconds: f64,
    /// Windows (repeated measurements).
    pub windows: usize,
    /// Median time between counter changes during the loop, milliseconds.
    pub counter_interval_ms: f64,
}

impl EnergyMeasurement {
    /// The summary of `windows`; `None` when there are none.
    pub fn from_windows(
        windows: &[Window],
        idle_power_w: Option<f64>,
        counter_interval_ms: f64,
    ) -> Option<Self> {
        let jpc: Vec<f64> = windows.iter().map(Window::joules_per_call).collect();
        let j = crate::measure::stats(&jpc)?;
        let (lo, hi) = jpc.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
        let spc: Vec<f64> = windows.iter().map(|w| w.seconds / w.calls).collect();
        let watts: Vec<f64> = windows.iter().map(Window::watts).collect();
        Some(EnergyMeasurement {
            joules_per_call: j.median,
            joules_per_call_p10: j.p10,
            joules_per_call_p90: j.p90,
            spread: (hi - lo) / j.median,
            seconds_per_call: crate::measure::stats(&spc)?.median,
            avg_power_w: crate::measure::stats(&watts)?.median,
            idle_power_w,
            calls: windows.iter().map(|w| w.calls).sum(),
            seconds: windows.iter().map(|w| w.seconds).sum(),
            windows: windows.len(),
            counter_interval_ms,
        })
    }
}

/// What the energy objective chose among measured candidates.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EnergyPick {
    /// Index of the chosen candidate.
    pub index: usize,
    /// Whether it differs from the time pick (it used less energy by more
    /// than the noise).
    pub by_energy: bool,
    /// The noise the difference was compared with (relative).
    pub noise: f64,
}

/// The energy objective's choice: the candidate with the lowest median
/// joules per call, but only when the time pick's median exceeds it by more
/// than the noise (the larger spread of the two, at least `min_noise`);
/// otherwise the time pick. `None` when `time_pick` is out of range.
pub fn energy_pick(
    time_pick: usize,
    candidates: &[EnergyMeasurement],
    min_noise: f64,
) -> Option<EnergyPick> {
    let tp = candidates.get(time_pick)?;
    let (best, b) = candidates
        .iter()
        .enumerate()
        .min_by(|x, y| x.1.joules_per_call.total_cmp(&y.1.joules_per_call))?;
    let noise = b.spread.max(tp.spread).max(min_noise);
    let wins = best != time_pick && tp.joules_per_call > b.joules_per_call * (1.0 + noise);
    Some(EnergyPick {
        index: if wins { best } else { time_pick },
        by_energy: wins,
        noise,
    })
}
