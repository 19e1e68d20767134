//! # sparserl-policies
//!
//! The policy proposes kernel variants for a matrix, given its
//! [`Features`]. The measured search (in `sparserl-build`) asks it for a
//! ranked list of proposals and refines around the best; without a GPU the
//! build uses its [`Policy::pick`] directly (for the learned policy a
//! risk-adjusted choice among its first proposals, see [`pick`]).
//!
//! Policies behind one trait:
//! - [`LearnedPolicy`]: a small network trained by reinforcement learning on
//!   measured datasets (feature `train`, see the crate README), committed as
//!   `policies/policy.json` and evaluated in pure Rust; [`default_policy`]
//!   returns it when that file was present at compile time and loads
//!   ([`policy_in_use`] also says which policy is in use and why).
//! - [`Prior`]: a documented analytic cost model (lane utilisation, load
//!   balance, coalescing, atomics) used until a trained policy is committed,
//!   and as the fallback when the policy file is unusable.
//! - [`template_rule`]: the fixed rule most hand-written libraries use
//!   ("threads per row from the mean row length"), kept as a baseline.
//!
//! ```
//! use sparserl_policies::{Policy, Prior};
//! use sparserl_rt::{Features, ValueType};
//! let f = Features { rows: 1e6, cols: 1e6, nnz: 5e6, mean_row: 5.0, p50_row: 5.0,
//!                    p90_row: 5.0, p99_row: 5.0, max_row: 5.0, ..Features::default() };
//! let best = &Prior.propose(&f, ValueType::F32, 3)[0];
//! println!("{} (score {:.2})", best.variant, best.score);
//! ```

#![warn(missing_docs)]

pub mod dataset;
pub mod forest;
pub mod forest_pick;
pub mod knn;
pub mod knob_pick;
pub mod linalg;
#[cfg(feature = "train")]
pub mod loco;
pub mod net;
pub mod pick;
pub mod prepared;
pub mod provenance;
pub mod spmm;
pub mod spmm_forest;
pub mod spmm_knobs;
pub mod spmm_model;
pub mod spmm_records;
pub mod spmv_records;
#[cfg(feature = "train")]
pub mod synthetic;
#[cfg(feature = "train")]
pub mod train;

pub use net::{LearnedPolicy, PolicyError};
pub use spmm::{
    SPMM_PRIOR_VERSION, spmm_prior, spmm_prior_for, spmm_prior_score, spmm_template_rule,
};
pub use spmm_records::{
    SPMM_RECORDS_VERSION, SpmmRecords, knn_vector, spmm_record_pick, spmm_search_order,
};

use sparserl_rt::{Features, Strategy, ValueType, Variant, core_space};

/// Version of the policy code and weights the crate was built to use: with a
/// committed `policy.json` it carries the file's sha256. It says what was
/// embedded, not what loads: cache keys and provenance use
/// [`PolicyChoice::version`] of [`policy_in_use`], which is this value only
/// when the embedded policy actually loads.
#[cfg(sparserl_has_policy)]
pub const POLICY_VERSION: &str = concat!("learned-1-", env!("SPARSERL_POLICY_SHA"));
/// Version of the policy code and weights the crate was built to use.
#[cfg(not(sparserl_has_policy))]
pub const POLICY_VERSION: &str = PRIOR_VERSION;

/// Version of the analytic [`Prior`].
pub const PRIOR_VERSION: &str = "prior-2";

/// sha256 (hex) of the embedded `policy.json`; `none` without one.
pub const EMBEDDED_POLICY_SHA256: &str = env!("SPARSERL_POLICY_SHA");

/// The committed policy file, embedded at compile time when present.
#[cfg(sparserl_has_policy)]
pub const EMBEDDED_POLICY: Option<&str> = Some(include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/policy.json"
)));
/// The committed policy file, embedded at compile time when present.
#[cfg(not(sparserl_has_policy))]
pub const EMBEDDED_POLICY: Option<&str> = None;

/// One proposal: a variant and the policy's predicted normalised reward in
/// (0, 1] (1 = the copy-bandwidth roofline). It is an estimate, not a measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Proposal {
    /// Proposed variant.
    pub variant: Variant,
    /// Predicted fraction of copy bandwidth (estimate).
    pub score: f64,
}

/// Anything that ranks variants for a matrix.
pub trait Policy {
    /// Short name for messages and logs.
    fn name(&self) -> &str;
    /// The `k` best proposals, best first.
    fn propose(&self, features: &Features, value: ValueType, k: usize) -> Vec<Proposal>;
    /// The no-GPU pick: the one variant a build without a GPU uses.
    /// Default: the first proposal; [`LearnedPolicy`] weighs the predicted
    /// loss of a miss ([`pick::DEFAULT_RULE`]).
    fn pick(&self, features: &Features, value: ValueType) -> Option<Proposal> {
        self.propose(features, value, 1).into_iter().next()
    }
}

/// The analytic prior. See [`prior_score`] for the model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Prior;

impl Policy for Prior {
    fn name(&self) -> &str {
        "prior"
    }
    fn propose(&self, features: &Features, value: ValueType, k: usize) -> Vec<Proposal> {
        let mut all: Vec<Proposal> = core_space()
            .into_iter()
            .map(|variant| Proposal {
                variant,
                score: prior_score(&variant, features, value),
            })
            .collect();
        // Stable sort keeps core_space order among ties: deterministic.
        all.sort_by(|a, b| b.score.total_cmp(&a.score));
        all.truncate(k);
        all
    }
}

/// Row length at quantile `q` in [0.5, 1], interpolated between the
/// feature vector's median, p90, p99 and maximum.
fn row_quantile(f: &Features, q: f64) -> f64 {
    let pts = [
        (0.5, f.p50_row),
        (0.9, f.p90_row.max(f.p50_row)),
        (0.99, f.p99_row.max(f.p90_row)),
        (1.0, f.max_row.max(f.p99_row)),
    ];
    let q = q.clamp(0.5, 1.0);
    for w in pts.windows(2) {
        let ((q0, v0), (q1, v1)) = (w[0], w[1]);
        if q <= q1 {
            return v0 + (v1 - v0) * (q - q0) / (q1 - q0);
        }
    }
    pts[3].1
}

/// Lanes an H200-class GPU keeps busy at once (132 SMs x 2048 threads).
const CONCURRENT_LANES: f64 = 132.0 * 2048.0;

/// The prior's estimate of the fraction of copy bandwidth a variant reaches.
///
/// Time is counted in *steps* (one nonzero per lane). Perfectly spread, the
/// matrix needs `w = nnz / 270k` steps. Each strategy has an efficiency `e`
/// (useful lane-steps over spent lane-steps) and a critical path `c` (steps
/// of the longest sequential piece); the estimate is `w / max(w / e, c, 1)`,
/// so small matrices (latency-bound) score low for every variant and prefer
/// short critical paths.
///
/// - Row-mapped with `L` lanes per row: a warp holds `k = 32 / L` rows and
///   lasts as long as its longest, estimated by the row length at quantile
///   `1 - 1/(k+1)` (at least the mean `m`) plus half a step of rounding:
///   `e = m / (L max(1, q_k / L + 0.5))`; `c = max_row / L`. Thread-per-row
///   also pays a mild coalescing penalty on long rows.
/// - Block-per-row: `e = m / (B ceil(m / B))`, `c = max_row / B`.
/// - nnz-split: balanced by construction, pays a binary search and atomics
///   at row ends (`e = 0.8`, less with few items per thread on short rows);
///   `c = items + log2(rows) / 8`.
/// - Tiled: balanced by construction, pays a shared-memory pass per tile
///   (`e = 0.85`, `c = 1024 / B + 8`).
///
/// Minor knobs (`__ldg`, block size, unroll) get small tie-breaking
/// preferences. It is an estimate: the measured search has the last word.
pub fn prior_score(v: &Variant, f: &Features, _value: ValueType) -> f64 {
    let m = f.mean_row.max(1e-9);
    let w = (f.nnz / CONCURRENT_LANES).max(1e-9);
    let (eff, critical) = match v.strategy {
        // Diagonal: whether the layout exists is not in the features; scored
        // like thread-per-row (its CSR counterpart), the search measures it.
        Strategy::ThreadPerRow
        | Strategy::GroupPerRow
        | Strategy::Diagonal
        | Strategy::Binned
        | Strategy::Narrow
        | Strategy::Sell => {
            let l = if !matches!(
                v.strategy,
                Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow
            ) {
                1.0
            } else {
                v.lanes as f64
            };
            let k = 32.0 / l;
            let qk = row_quantile(f, 1.0 - 1.0 / (k + 1.0)).max(m);
            let mut e = m / (l * (qk / l + 0.5).max(1.0));
            if !matches!(
                v.strategy,
                Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow
            ) {
                e *= 0.6 + 0.4 / (m / 8.0).max(1.0);
            }
            // Binned kernels split rows longer than the layout's threshold.
            let longest = if v.strategy == Strategy::Binned {
                f.max_row.min((8.0 * m).max(256.0))
            } else {
                f.max_row
            };
            (e, longest / l)
        }
        Strategy::BlockPerRow => {
            let b = v.block as f64;
            (m / (b * (m / b).ceil().max(1.0)), f.max_row / b)
        }
        Strategy::NnzSplit => {
            let items = v.items as f64;
            let atomics = 1.0 / (1.0 + 0.6 * (items / m).min(1.0) / items.sqrt());
            (0.8 * atomics, items + f.rows.max(2.0).log2() / 8.0)
        }
        // Tiled: balanced by construction (1024-nonzero tiles, long rows cut),
        // pays a shared-memory pass and a barrier per tile.
        Strategy::Tiled => (0.85, 1024.0 / v.block as f64 + 8.0),
    };
    let base = w / (w / eff.max(1e-9)).max(critical).max(1.0);
    let ldg = if v.ldg_x { 1.0 } else { 0.97 };
    let block = match v.block {
        256 => 1.0,
        128 | 512 => 0.99,
        _ => 0.98,
    };
    let unroll = match (v.strategy, v.unroll) {
        (Strategy::NnzSplit | Strategy::Tiled, _) => 1.0,
        (_, 1) => 0.99,
        (_, 2) => 1.0,
        _ => 0.995,
    };
    (base * ldg * block * unroll).clamp(1e-6, 1.0)
}

/// The fixed template rule: lanes per row = the power of two nearest above the
/// mean row length, capped at 32; one lane means thread-per-row. Block 256,
/// `__ldg` loads, no unrolling.
pub fn template_rule(f: &Features) -> Variant {
    let lanes = (f.mean_row.max(1.0).ceil() as u32)
        .next_power_of_two()
        .clamp(1, 32);
    if lanes == 1 {
        Variant::of(Strategy::ThreadPerRow)
    } else {
        Variant {
            lanes,
            ..Variant::of(Strategy::GroupPerRow)
        }
    }
}

/// Which policy [`policy_in_use`] picked, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyChoice {
    /// The learned policy embedded from `policy.json`.
    Learned {
        /// sha256 (hex) of the embedded file.
        sha256: String,
        /// Its training round.
        round: u32,
    },
    /// The [`Prior`]: no `policy.json` was present when this crate was built.
    PriorNoFile,
    /// The [`Prior`]: the embedded `policy.json` does not load.
    PriorUnusable {
        /// sha256 (hex) of the embedded file.
        sha256: String,
        /// Why it does not load.
        error: String,
    },
}

impl PolicyChoice {
    /// Whether the learned policy is in use.
    pub fn is_learned(&self) -> bool {
        matches!(self, PolicyChoice::Learned { .. })
    }

    /// Version of the policy actually in use, for cache keys and
    /// provenance: `learned-1-<sha256>` or [`PRIOR_VERSION`].
    pub fn version(&self) -> String {
        match self {
            PolicyChoice::Learned { sha256, .. } => format!("learned-1-{sha256}"),
            _ => PRIOR_VERSION.to_string(),
        }
    }

    /// Why the learned policy is not in use (`None` when it is).
    pub fn reason(&self) -> Option<String> {
        match self {
            PolicyChoice::Learned { .. } => None,
            PolicyChoice::PriorNoFile => {
                Some("no policy.json was present when sparserl-policies was built".to_string())
            }
            PolicyChoice::PriorUnusable { sha256, error } => Some(format!(
                "the embedded policy.json (sha256 {}) does not load: {error}",
                short_sha(sha256)
            )),
        }
    }

    /// One line for messages, e.g. `learned policy (round 2, policy.json
    /// sha256 5542a6c9aec9)` or `analytic prior, because <reason>`.
    pub fn describe(&self) -> String {
        match (self, self.reason()) {
            (PolicyChoice::Learned { sha256, round }, _) => format!(
                "learned policy (round {round}, policy.json sha256 {})",
                short_sha(sha256)
            ),
            (_, reason) => format!(
                "analytic prior ({PRIOR_VERSION}), because {}",
                reason.unwrap_or_default()
            ),
        }
    }
}

fn short_sha(sha256: &str) -> &str {
    sha256.get(..12).unwrap_or(sha256)
}

/// The policy the build uses and which one it is.
pub struct PolicyInUse {
    /// The policy.
    pub policy: Box<dyn Policy + Send + Sync>,
    /// Which one, and why the learned one is not used when it is not.
    pub choice: PolicyChoice,
}

impl std::fmt::Debug for PolicyInUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyInUse")
            .field("policy", &self.policy.name())
            .field("choice", &self.choice)
            .finish()
    }
}

/// The learned policy embedded from `policies/policy.json`, or why it
/// cannot be used ([`PolicyError::NotEmbedded`] without a file, else the
/// load error). Never panics.
pub fn try_default_policy() -> Result<LearnedPolicy, PolicyError> {
    match EMBEDDED_POLICY {
        Some(text) => LearnedPolicy::from_json(text),
        None => Err(PolicyError::NotEmbedded),
    }
}

/// The policy the build uses: the embedded learned policy when it loads,
/// otherwise the [`Prior`], with [`PolicyChoice`] saying which and why.
/// Never panics.
pub fn policy_in_use() -> PolicyInUse {
    select(try_default_policy(), EMBEDDED_POLICY_SHA256)
}

fn select(loaded: Result<LearnedPolicy, PolicyError>, sha256: &str) -> PolicyInUse {
    match loaded {
        Ok(p) => PolicyInUse {
            choice: PolicyChoice::Learned {
                sha256: sha256.to_string(),
                round: p.file().round,
            },
            policy: Box::new(p),
        },
        Err(PolicyError::NotEmbedded) => PolicyInUse {
            policy: Box::new(Prior),
            choice: PolicyChoice::PriorNoFile,
        },
        Err(e) => PolicyInUse {
            policy: Box::new(Prior),
            choice: PolicyChoice::PriorUnusable {
                sha256: sha256.to_string(),
                error: e.to_string(),
            },
        },
    }
}

/// The policy the build uses (see [`policy_in_use`], which also says which
/// one it is): the learned policy embedded from `policies/policy.json` when
/// it was present at compile time and loads, otherwise the [`Prior`].
pub fn default_policy() -> Box<dyn Policy + Send + Sync> {
    policy_in_use().policy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feats(mean: f64, p90: f64, p99: f64) -> Features {
        Features {
            rows: 1e6,
            cols: 1e6,
            nnz: 1e6 * mean,
            mean_row: mean,
            p50_row: mean.min(p90),
            p90_row: p90,
            p99_row: p99,
            max_row: p99 * 10.0,
            ..Features::default()
        }
    }

    #[test]
    fn template_rule_follows_mean_row_length() {
        assert_eq!(
            template_rule(&feats(1.0, 1.0, 1.0)).strategy,
            Strategy::ThreadPerRow
        );
        assert_eq!(template_rule(&feats(5.0, 5.0, 5.0)).lanes, 8);
        assert_eq!(template_rule(&feats(300.0, 300.0, 300.0)).lanes, 32);
    }

    #[test]
    fn prior_prefers_balance_on_skewed_rows_and_groups_on_regular_ones() {
        let skewed = Prior.propose(&feats(8.0, 20.0, 2000.0), ValueType::F32, 1)[0];
        assert_eq!(skewed.variant.strategy, Strategy::NnzSplit);
        let regular = Prior.propose(&feats(27.0, 27.0, 27.0), ValueType::F64, 1)[0];
        assert_eq!(regular.variant.strategy, Strategy::GroupPerRow);
    }

    #[test]
    fn an_unusable_policy_file_selects_the_prior_and_says_why() {
        let sha = "ab".repeat(32);
        let broken = select(LearnedPolicy::from_json("{\"format\": 3"), &sha);
        assert_eq!(broken.policy.name(), "prior");
        assert!(!broken.choice.is_learned());
        assert_eq!(broken.choice.version(), PRIOR_VERSION);
        let why = broken.choice.describe();
        assert!(
            why.starts_with("analytic prior (prior-2), because the embedded policy.json (sha256 abababababab) does not load: policy file is not valid JSON"),
            "{why}"
        );
        let none = select(Err(PolicyError::NotEmbedded), "none");
        assert_eq!(none.policy.name(), "prior");
        assert_eq!(none.choice, PolicyChoice::PriorNoFile);
        assert!(none.choice.describe().contains("no policy.json"));
        // A proposal of the prior comes back either way (never a panic).
        let f = feats(12.0, 30.0, 90.0);
        assert_eq!(
            broken.policy.propose(&f, ValueType::F32, 3),
            Prior.propose(&f, ValueType::F32, 3)
        );
    }

    #[test]
    fn a_learned_choice_names_its_file() {
        let c = PolicyChoice::Learned {
            sha256: "0123456789abcdef".repeat(4),
            round: 2,
        };
        assert!(c.is_learned());
        assert_eq!(c.reason(), None);
        assert_eq!(
            c.version(),
            format!("learned-1-{}", "0123456789abcdef".repeat(4))
        );
        assert_eq!(
            c.describe(),
            "learned policy (round 2, policy.json sha256 0123456789ab)"
        );
    }

    #[test]
    fn proposals_are_sorted_valid_and_deterministic() {
        let f = feats(12.0, 30.0, 90.0);
        let a = Prior.propose(&f, ValueType::F32, 10);
        assert_eq!(a, Prior.propose(&f, ValueType::F32, 10));
        assert_eq!(a.len(), 10);
        for w in a.windows(2) {
            assert!(w[0].score >= w[1].score);
        }
        for p in &a {
            p.variant.validate().unwrap();
            assert!(p.score > 0.0 && p.score <= 1.0);
        }
    }
}
