//! The build's objective: what "best" means when the search picks a kernel.
//!
//! A descriptor declares `objective = "time"` (the default: the fastest
//! correct variant, as before objectives existed), `"energy"` (the fewest
//! joules per call) or `{ time = w1, energy = w2 }` (a weighted score), per
//! kernel or for the crate ([`Objective`]). The time search always runs
//! first; an objective that needs energy then measures the energy per call
//! of a few of its finalists ([`crate::search::energy`]) and picks among
//! them by [`choose`]. This module holds the pure parts: the objective, the
//! pick rule, the Pareto front and the record kept in the cache entry, the
//! lock entry and `cargo xtask explain` ([`ObjectiveRecord`]).

use serde::{Deserialize, Serialize, Serializer};

/// What the search minimises.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Objective {
    /// Seconds per call (the default; no energy is measured).
    #[default]
    Time,
    /// Joules per call, among the time search's finalists.
    Energy,
    /// `time * t / t_best + energy * e / e_best`, among the finalists
    /// (weights non-negative, finite, not both zero).
    Weighted {
        /// Weight of the time ratio.
        time: f64,
        /// Weight of the energy ratio.
        energy: f64,
    },
}

impl Objective {
    /// Whether the search must measure energy for it.
    pub fn needs_energy(&self) -> bool {
        match self {
            Objective::Time => false,
            Objective::Energy => true,
            Objective::Weighted { energy, .. } => *energy > 0.0,
        }
    }

    /// Whether it is the default (`"time"`): left out of the canonical form
    /// of a declaration, so fingerprints of kernels without the key are
    /// what they were before it existed.
    pub fn is_time(&self) -> bool {
        *self == Objective::Time
    }

    /// The weights `(time, energy)` of the score.
    pub fn weights(&self) -> (f64, f64) {
        match self {
            Objective::Time => (1.0, 0.0),
            Objective::Energy => (0.0, 1.0),
            Objective::Weighted { time, energy } => (*time, *energy),
        }
    }

    /// As written in a descriptor: `time`, `energy`, `time=0.5,energy=0.5`.
    pub fn label(&self) -> String {
        match self {
            Objective::Time => "time".into(),
            Objective::Energy => "energy".into(),
            Objective::Weighted { time, energy } => format!("time={time},energy={energy}"),
        }
    }
}

impl Serialize for Objective {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        match self {
            Objective::Time => s.serialize_str("time"),
            Objective::Energy => s.serialize_str("energy"),
            Objective::Weighted { time, energy } => {
                let mut st = s.serialize_struct("Weighted", 2)?;
                st.serialize_field("time", time)?;
                st.serialize_field("energy", energy)?;
                st.end()
            }
        }
    }
}

/// One finalist as the pick rule sees it: time and energy per call from the
/// same busy loop, and the relative spread of its repeated windows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Candidate {
    /// Seconds per call in the energy loop.
    pub seconds_per_call: f64,
    /// Joules per call (median over windows).
    pub joules_per_call: f64,
    /// `(max - min) / median` of joules per call over the windows.
    pub spread: f64,
}

/// What [`choose`] decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// Index of the chosen candidate (0: the time pick).
    pub index: usize,
    /// The noise the score difference was compared with (relative).
    pub noise: f64,
    /// Every candidate's score (lower is better; the best is 1 when the
    /// weights sum to 1).
    pub scores: Vec<f64>,
}

/// The objective's pick among `cands`, whose first entry is the time
/// search's winner: each candidate scores `w_t * t / t_min + w_e * e /
/// e_min` (time and energy per call from its energy loop, the minima over
/// the candidates); the lowest score wins, but only when the time pick's
/// score exceeds it by more than the noise (the larger spread of the two,
/// at least `min_noise`); otherwise the time pick stays. `None` without
/// candidates or with a non-positive or non-finite figure.
pub fn choose(objective: &Objective, cands: &[Candidate], min_noise: f64) -> Option<Choice> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if cands.is_empty()
        || cands
            .iter()
            .any(|c| !ok(c.seconds_per_call) || !ok(c.joules_per_call) || !c.spread.is_finite())
    {
        return None;
    }
    let t_min = cands
        .iter()
        .map(|c| c.seconds_per_call)
        .fold(f64::INFINITY, f64::min);
    let e_min = cands
        .iter()
        .map(|c| c.joules_per_call)
        .fold(f64::INFINITY, f64::min);
    let (wt, we) = objective.weights();
    let scores: Vec<f64> = cands
        .iter()
        .map(|c| wt * c.seconds_per_call / t_min + we * c.joules_per_call / e_min)
        .collect();
    let (best, best_score) = scores
        .iter()
        .copied()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(&b.1))?;
    let noise = cands[0].spread.max(cands[best].spread).max(min_noise);
    let wins = best != 0 && scores[0] > best_score * (1.0 + noise);
    Some(Choice {
        index: if wins { best } else { 0 },
        noise,
        scores,
    })
}

/// Indices of the candidates no other candidate dominates (at most as many
/// seconds and joules per call, fewer of one), in input order.
pub fn pareto_front(points: &[(f64, f64)]) -> Vec<usize> {
    let dominated = |i: usize| {
        let (ti, ei) = points[i];
        points
            .iter()
            .any(|&(t, e)| t <= ti && e <= ei && (t < ti || e < ei))
    };
    (0..points.len()).filter(|&i| !dominated(i)).collect()
}

/// One finalist as recorded.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FinalistRecord {
    /// Variant id.
    pub variant: String,
    /// Its best GB/s in the time search.
    pub search_gbs: f64,
    /// Seconds per call in its energy loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds_per_call: Option<f64>,
    /// Joules per call (the whole card's, idle power included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_call: Option<f64>,
    /// Relative spread of joules per call over the windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<f64>,
    /// Average power during the loop, watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avg_power_w: Option<f64>,
    /// On the Pareto front of the measured finalists (time, energy).
    #[serde(default)]
    pub pareto: bool,
    /// The objective's pick.
    #[serde(default)]
    pub chosen: bool,
    /// Why its energy was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What an objective other than time did: kept in the cache entry and the
/// lock entry (`[kernel.objective]`), shown by `cargo xtask explain`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ObjectiveRecord {
    /// The objective ([`Objective::label`]).
    pub objective: String,
    /// The time search's winner (variant id).
    pub time_pick: String,
    /// The variant chosen (variant id; the time pick when energy could not
    /// be measured or made no difference beyond the noise).
    pub chosen: String,
    /// The noise the pick was decided with (relative).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<f64>,
    /// Energy saved by the pick against the time pick, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_saved_pct: Option<f64>,
    /// Time per call lost by the pick against the time pick, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_lost_pct: Option<f64>,
    /// Seconds the energy measurements added to the build.
    pub extra_seconds: f64,
    /// Why the time pick was kept without measuring energy (no NVML, no
    /// energy counter, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// The finalists, the time pick first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalists: Vec<FinalistRecord>,
}

impl ObjectiveRecord {
    /// The chosen finalist's record, when it was measured.
    pub fn chosen_finalist(&self) -> Option<&FinalistRecord> {
        self.finalists.iter().find(|f| f.chosen)
    }

    /// One line for build output and `explain`.
    pub fn summary(&self) -> String {
        if let Some(why) = &self.fallback {
            return format!(
                "objective {}: kept the time pick {} ({why})",
                self.objective, self.time_pick
            );
        }
        let measured = self
            .finalists
            .iter()
            .filter(|f| f.joules_per_call.is_some())
            .count();
        let how = if self.chosen == self.time_pick {
            format!(
                "kept the time pick {} (no finalist better by more than the noise, {:.1}%)",
                self.time_pick,
                100.0 * self.noise.unwrap_or(0.0)
            )
        } else {
            format!(
                "chose {} over the time pick {}: {:.1}% less energy, {:+.1}% time",
                self.chosen,
                self.time_pick,
                self.energy_saved_pct.unwrap_or(0.0),
                self.time_lost_pct.unwrap_or(0.0)
            )
        };
        format!(
            "objective {}: {how}; energy of {measured} finalist(s) measured in {:.1} s",
            self.objective, self.extra_seconds
        )
    }
}

#[cfg(test)]
mod tests;
