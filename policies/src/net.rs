//! The learned policy: the export format and pure-Rust inference.
//!
//! A policy file is a small JSON document ([`PolicyFile`]) with the feature
//! normalisation, the action vocabulary, provenance (dataset hash, GPU,
//! round, held-out matrices) and the weights of a few dense layers as `f32`
//! arrays. [`LearnedPolicy`] evaluates it without libtorch.
//!
//! The network (see the crate README for the picture):
//! - input: 18 normalised features (transform, then z-score) + value-type
//!   one-hot (f32, f64) = 20 numbers;
//! - trunk: `20 -> H -> H`, tanh;
//! - strategy head: `H -> 6` (thread-per-row, group-per-row, block-per-row,
//!   nnz-split, tiled, sell);
//! - conditioned heads, input `trunk ++ one_hot(strategy)`: block (3),
//!   lanes (5, group-per-row only), items (5, nnz-split only), unroll (3,
//!   not nnz-split or tiled; block-per-row only 1 and 4), ldg_x (2, not
//!   sell), stream_y (2, tiled only: streaming loads of the matrix arrays);
//! - value head `H -> 1` (the REINFORCE baseline; unused at inference);
//! - cost head, a separate MLP on `input ++ variant encoding` (20 + 26):
//!   `46 -> C -> C -> 1`, tanh, predicting `(ln GB/s - cost_mean) / cost_std`.

use serde::{Deserialize, Serialize};
use sparserl_rt::{Features, Strategy, ValueType, Variant, core_space};
use std::collections::BTreeMap;
use std::path::Path;

use crate::{Policy, Proposal};

/// Format tag of policy files this code reads (2: the tiled strategy joined
/// the vocabulary; 3: SELL-C-sigma and the streaming-load head joined it).
pub const FORMAT: &str = "sparserl-policy/3";
/// Strategy vocabulary (head order): the CSR strategies, tiled (whose small
/// tile index every upload builds, so it runs on any matrix) and SELL-C-sigma,
/// which runs only on matrices whose slices pad little
/// ([`sparserl_rt::sell::SellLayout::build`]): callers skip a SELL proposal
/// on a matrix without that layout, as the search does.
pub const STRATEGIES: [Strategy; 6] = [
    Strategy::ThreadPerRow,
    Strategy::GroupPerRow,
    Strategy::BlockPerRow,
    Strategy::NnzSplit,
    Strategy::Tiled,
    Strategy::Sell,
];
/// Number of strategies (width of the strategy head and of its one-hot).
pub const NS: usize = STRATEGIES.len();
/// The variants the policy can name: [`core_space`], tiled kernels of every
/// block size of the vocabulary with and without `__ldg` and streaming loads,
/// and SELL-C-sigma kernels of every block size and unroll (171).
pub fn policy_space() -> Vec<Variant> {
    let mut out = core_space();
    for ldg_x in LDG {
        for block in BLOCKS {
            for stream_y in STREAM {
                out.push(Variant {
                    block,
                    ldg_x,
                    stream_y,
                    ..Variant::of(Strategy::Tiled)
                });
            }
        }
    }
    for block in BLOCKS {
        for unroll in UNROLLS {
            out.push(Variant {
                block,
                unroll,
                ..Variant::of(Strategy::Sell)
            });
        }
    }
    out
}
/// Block sizes (head order).
pub const BLOCKS: [u32; 3] = [128, 256, 512];
/// Lanes per row for group-per-row (head order).
pub const LANES: [u32; 5] = [2, 4, 8, 16, 32];
/// Items per thread for nnz-split (head order).
pub const ITEMS: [u32; 5] = [1, 2, 4, 8, 16];
/// Unroll factors (head order); block-per-row allows only 1 and 4.
pub const UNROLLS: [u32; 3] = [1, 2, 4];
/// `__ldg` choice (head order).
pub const LDG: [bool; 2] = [true, false];
/// Streaming-load choice of tiled kernels (head order).
pub const STREAM: [bool; 2] = [false, true];
/// Number of conditioned heads: block, lanes, items, unroll, ldg_x, stream_y.
pub const HEADS: usize = 6;
/// Value-type one-hot order.
pub const VALUE_TYPES: [ValueType; 2] = ValueType::ALL;
/// Number of network inputs: features + value one-hot.
pub const INPUTS: usize = 18 + 2;
/// Length of [`encode_variant`].
pub const VARIANT_ENCODING: usize = NS + 3 + 5 + 5 + 3 + 2 + 2;
/// Logit added to masked actions (exp underflows to exactly 0).
pub const MASKED: f32 = -1e9;

/// Per-feature transform applied before the z-score, in
/// [`Features::NAMES`] order: `log1p` for size-like features (counts, row
/// lengths, ratios that span decades), `log` (of `max(x, 1e-12)`) for the
/// density, identity for bounded shares.
pub const FEATURE_TRANSFORMS: [&str; 18] = [
    "log1p",    // rows
    "log1p",    // cols
    "log1p",    // nnz
    "log",      // density
    "log1p",    // mean_row
    "log1p",    // std_row
    "log1p",    // cv_row
    "log1p",    // min_row
    "log1p",    // max_row
    "log1p",    // p50_row
    "log1p",    // p90_row
    "log1p",    // p99_row
    "identity", // gini_row
    "identity", // empty_share
    "log1p",    // max_over_mean
    "identity", // diag_dist
    "identity", // x_segments_per_nnz
    "identity", // block4_density
];

/// Applies [`FEATURE_TRANSFORMS`] (not the z-score).
pub fn transform_features(raw: &[f64]) -> Vec<f64> {
    raw.iter()
        .zip(FEATURE_TRANSFORMS)
        .map(|(&x, t)| {
            let x = if x.is_finite() { x } else { 0.0 };
            match t {
                "log1p" => x.max(0.0).ln_1p(),
                "log" => x.max(1e-12).ln(),
                _ => x,
            }
        })
        .collect()
}

/// The network input: transformed, z-scored features (`raw` in
/// [`Features::NAMES`] order) followed by the value-type one-hot.
pub fn network_input(raw: &[f64], value: ValueType, mean: &[f64], std: &[f64]) -> Vec<f64> {
    let mut x: Vec<f64> = transform_features(raw)
        .iter()
        .zip(mean)
        .zip(std)
        .map(|((v, m), s)| (v - m) / s)
        .collect();
    x.extend(
        VALUE_TYPES
            .iter()
            .map(|&v| if v == value { 1.0 } else { 0.0 }),
    );
    x
}

/// Action indices of a variant of the policy space: `(strategy, block,
/// lanes, items, unroll, ldg, stream)`; the heads a strategy does not use
/// hold 0. `None` when a parameter is outside the vocabulary.
pub fn actions_of(v: &Variant) -> Option<[usize; 7]> {
    let v = v.canonical();
    let s = STRATEGIES.iter().position(|&x| x == v.strategy)?;
    let b = BLOCKS.iter().position(|&x| x == v.block)?;
    let l = match v.strategy {
        Strategy::GroupPerRow => LANES.iter().position(|&x| x == v.lanes)?,
        _ => 0,
    };
    let i = match v.strategy {
        Strategy::NnzSplit => ITEMS.iter().position(|&x| x == v.items)?,
        _ => 0,
    };
    let u = match v.strategy {
        Strategy::NnzSplit | Strategy::Tiled => 0,
        Strategy::BlockPerRow if v.unroll == 2 => return None,
        _ => UNROLLS.iter().position(|&x| x == v.unroll)?,
    };
    let used = heads_used(v.strategy);
    // A parameter whose head the strategy does not use must hold its default.
    let default = Variant::of(v.strategy);
    let g = if used[4] {
        LDG.iter().position(|&x| x == v.ldg_x)?
    } else if v.ldg_x == default.ldg_x {
        0
    } else {
        return None;
    };
    let t = if used[5] {
        STREAM.iter().position(|&x| x == v.stream_y)?
    } else if !v.stream_y {
        0
    } else {
        return None;
    };
    if v.min_blocks != 0 {
        return None;
    }
    Some([s, b, l, i, u, g, t])
}

/// The variant chosen by action indices (unused heads ignored).
pub fn variant_of(a: [usize; 7]) -> Variant {
    let strategy = STRATEGIES[a[0]];
    let used = heads_used(strategy);
    let mut v = Variant {
        block: BLOCKS[a[1]],
        ..Variant::of(strategy)
    };
    if used[1] {
        v.lanes = LANES[a[2]];
    }
    if used[2] {
        v.items = ITEMS[a[3]];
    }
    if used[3] {
        v.unroll = UNROLLS[a[4]];
    }
    if used[4] {
        v.ldg_x = LDG[a[5]];
    }
    if used[5] {
        v.stream_y = STREAM[a[6]];
    }
    v.canonical()
}

/// Which heads a strategy uses: `[block, lanes, items, unroll, ldg,
/// stream]`. SELL-C-sigma keeps its default `__ldg` loads (the only ones
/// measured); only tiled kernels choose streaming loads.
pub fn heads_used(s: Strategy) -> [bool; HEADS] {
    match s {
        Strategy::ThreadPerRow | Strategy::BlockPerRow | Strategy::Diagonal => {
            [true, false, false, true, true, false]
        }
        Strategy::Sell => [true, false, false, true, false, false],
        Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow => {
            [true, true, false, true, true, false]
        }
        Strategy::NnzSplit => [true, false, true, false, true, false],
        Strategy::Tiled => [true, false, false, false, true, true],
    }
}

/// Additive logit mask of the unroll head for a strategy (block-per-row:
/// unroll 2 is not in the space).
pub fn unroll_mask(s: Strategy) -> [f32; 3] {
    if s == Strategy::BlockPerRow {
        [0.0, MASKED, 0.0]
    } else {
        [0.0; 3]
    }
}

/// Variant encoding for the cost head: one-hots of strategy ([`NS`]), block (3),
/// lanes (5), items (5), unroll (3), ldg (2), streaming loads (2, tiled only).
/// Parameters a strategy does not use, or values outside the vocabulary,
/// leave their group all zero.
pub fn encode_variant(v: &Variant) -> [f32; VARIANT_ENCODING] {
    let v = v.canonical();
    let mut e = [0.0f32; VARIANT_ENCODING];
    let mut set = |off: usize, idx: Option<usize>| {
        if let Some(i) = idx {
            e[off + i] = 1.0;
        }
    };
    set(0, STRATEGIES.iter().position(|&x| x == v.strategy));
    set(NS, BLOCKS.iter().position(|&x| x == v.block));
    if v.strategy == Strategy::GroupPerRow {
        set(NS + 3, LANES.iter().position(|&x| x == v.lanes));
    }
    if v.strategy == Strategy::NnzSplit {
        set(NS + 8, ITEMS.iter().position(|&x| x == v.items));
    } else if v.strategy != Strategy::Tiled {
        set(NS + 13, UNROLLS.iter().position(|&x| x == v.unroll));
    }
    set(NS + 16, LDG.iter().position(|&x| x == v.ldg_x));
    if v.strategy == Strategy::Tiled {
        set(NS + 18, STREAM.iter().position(|&x| x == v.stream_y));
    }
    e
}

/// Errors loading a policy file.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// File access.
    #[error("cannot read {path}: {source}")]
    Io {
        /// file
        path: String,
        /// cause
        source: std::io::Error,
    },
    /// Not JSON of the expected shape.
    #[error("policy file is not valid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but inconsistent.
    #[error("invalid policy file: {0}")]
    Invalid(String),
    /// No policy file was embedded when the crate was built.
    #[error("no policy file was embedded (policies/policy.json was absent at build time)")]
    NotEmbedded,
}

/// One dense layer: `y = W x + b`, `W` row-major `outputs x inputs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerFile {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// Weights, row-major, `outputs * inputs` values.
    pub weight: Vec<f32>,
    /// Bias, `outputs` values.
    pub bias: Vec<f32>,
}

impl LayerFile {
    fn apply(&self, x: &[f64]) -> Vec<f64> {
        (0..self.outputs)
            .map(|o| {
                let row = &self.weight[o * self.inputs..(o + 1) * self.inputs];
                let mut acc = self.bias[o] as f64;
                for (w, v) in row.iter().zip(x) {
                    acc += *w as f64 * v;
                }
                acc
            })
            .collect()
    }
}

/// The action vocabulary, recorded in the file and checked on load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionVocabulary {
    /// Strategy head.
    pub strategy: Vec<Strategy>,
    /// Block head.
    pub block: Vec<u32>,
    /// Lanes head (group-per-row).
    pub lanes: Vec<u32>,
    /// Items head (nnz-split).
    pub items: Vec<u32>,
    /// Unroll head (block-per-row: 1 and 4 only).
    pub unroll: Vec<u32>,
    /// `__ldg` head.
    pub ldg_x: Vec<bool>,
    /// Streaming-load head (tiled).
    pub stream_y: Vec<bool>,
}

impl ActionVocabulary {
    /// The vocabulary of this code.
    pub fn current() -> ActionVocabulary {
        ActionVocabulary {
            strategy: STRATEGIES.to_vec(),
            block: BLOCKS.to_vec(),
            lanes: LANES.to_vec(),
            items: ITEMS.to_vec(),
            unroll: UNROLLS.to_vec(),
            ldg_x: LDG.to_vec(),
            stream_y: STREAM.to_vec(),
        }
    }
}

/// A policy file (the export of `train`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyFile {
    /// Always [`FORMAT`].
    pub format: String,
    /// Training round (policy generation).
    pub round: u32,
    /// GPU of the training dataset.
    pub gpu: String,
    /// Copy bandwidth of that GPU, GB/s (the reference of proposal scores).
    pub copy_gbs: f64,
    /// sha256 of the dataset file trained on (hex).
    pub dataset_sha256: String,
    /// Matrices held out of training (by name).
    pub holdout_names: Vec<String>,
    /// Structure classes held out of training.
    pub holdout_classes: Vec<String>,
    /// Training seed.
    pub seed: u64,
    /// Training algorithm and hyper-parameters, for the record.
    pub algorithm: String,
    /// Hidden activation (`tanh`).
    pub activation: String,
    /// Feature names (must equal [`Features::NAMES`]).
    pub feature_names: Vec<String>,
    /// Per-feature transform (must equal [`FEATURE_TRANSFORMS`]).
    pub feature_transform: Vec<String>,
    /// Z-score mean of the transformed features.
    pub feature_mean: Vec<f64>,
    /// Z-score standard deviation of the transformed features.
    pub feature_std: Vec<f64>,
    /// Value-type one-hot order.
    pub value_types: Vec<ValueType>,
    /// Action vocabulary (head orders).
    pub actions: ActionVocabulary,
    /// Cost head output scale: `ln GB/s = cost_mean + cost_std * output`.
    pub cost_mean: f64,
    /// See `cost_mean`.
    pub cost_std: f64,
    /// Layers by name: trunk1, trunk2, strategy, block, lanes, items,
    /// unroll, ldg_x, stream_y, value, cost1, cost2, cost3.
    pub layers: BTreeMap<String, LayerFile>,
    /// The reward's weights of time and energy (policy files written
    /// before energy was measured: time only).
    #[serde(default)]
    pub reward: RewardWeights,
    /// Training report (free-form, informational).
    #[serde(default)]
    pub report: serde_json::Value,
}

/// The weights of the training reward's objectives (they sum to 1).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RewardWeights {
    /// Weight of time (GB/s).
    pub time: f64,
    /// Weight of energy (bytes per joule, from measured power).
    pub energy: f64,
}

impl Default for RewardWeights {
    fn default() -> Self {
        RewardWeights {
            time: 1.0,
            energy: 0.0,
        }
    }
}

/// Head probabilities for one strategy's conditioned heads.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionedProbs {
    /// Block head.
    pub block: Vec<f64>,
    /// Lanes head.
    pub lanes: Vec<f64>,
    /// Items head.
    pub items: Vec<f64>,
    /// Unroll head (masked entries are 0).
    pub unroll: Vec<f64>,
    /// `__ldg` head.
    pub ldg_x: Vec<f64>,
    /// Streaming-load head.
    pub stream_y: Vec<f64>,
}

/// Every head's probabilities for one input.
#[derive(Debug, Clone, PartialEq)]
pub struct HeadProbs {
    /// Strategy head.
    pub strategy: Vec<f64>,
    /// Conditioned heads, per strategy (in [`STRATEGIES`] order).
    pub conditioned: Vec<ConditionedProbs>,
}

impl HeadProbs {
    /// Joint probability of a variant (product of the relevant heads); 0
    /// outside the vocabulary.
    pub fn joint(&self, v: &Variant) -> f64 {
        let Some(a) = actions_of(v) else { return 0.0 };
        let c = &self.conditioned[a[0]];
        let used = heads_used(STRATEGIES[a[0]]);
        let mut p = self.strategy[a[0]] * c.block[a[1]];
        if used[4] {
            p *= c.ldg_x[a[5]];
        }
        if used[5] {
            p *= c.stream_y[a[6]];
        }
        if used[1] {
            p *= c.lanes[a[2]];
        }
        if used[2] {
            p *= c.items[a[3]];
        }
        if used[3] {
            p *= c.unroll[a[4]];
        }
        p
    }
}

fn softmax(logits: &[f64], mask: Option<&[f32]>) -> Vec<f64> {
    let l: Vec<f64> = logits
        .iter()
        .enumerate()
        .map(|(i, &x)| x + mask.map_or(0.0, |m| m[i] as f64))
        .collect();
    let max = l.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = l.iter().map(|&x| (x - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.into_iter().map(|x| x / s).collect()
}

/// The learned policy (pure-Rust inference of a [`PolicyFile`]).
#[derive(Debug, Clone)]
pub struct LearnedPolicy {
    file: PolicyFile,
}

const LAYER_NAMES: [&str; 13] = [
    "trunk1", "trunk2", "strategy", "block", "lanes", "items", "unroll", "ldg_x", "stream_y",
    "value", "cost1", "cost2", "cost3",
];

impl LearnedPolicy {
    /// Parses and validates a policy file.
    pub fn from_json(text: &str) -> Result<LearnedPolicy, PolicyError> {
        LearnedPolicy::new(serde_json::from_str(text)?)
    }

    /// Reads a policy file.
    pub fn load(path: &Path) -> Result<LearnedPolicy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        LearnedPolicy::from_json(&text)
    }

    /// Validates a parsed file.
    pub fn new(file: PolicyFile) -> Result<LearnedPolicy, PolicyError> {
        let bad = |m: String| Err(PolicyError::Invalid(m));
        if file.format != FORMAT {
            return bad(format!("format {:?}, expected {FORMAT:?}", file.format));
        }
        if file.feature_names != Features::NAMES {
            return bad("feature names differ from this code's".into());
        }
        if file.feature_transform != FEATURE_TRANSFORMS {
            return bad("feature transforms differ from this code's".into());
        }
        if file.value_types != VALUE_TYPES {
            return bad("value-type order differs from this code's".into());
        }
        if file.actions != ActionVocabulary::current() {
            return bad("action vocabulary differs from this code's".into());
        }
        if file.activation != "tanh" {
            return bad(format!("activation {:?} (only tanh)", file.activation));
        }
        if file.feature_mean.len() != 18 || file.feature_std.len() != 18 {
            return bad("feature normalisation must have 18 entries".into());
        }
        let finite = |x: &f64| x.is_finite();
        let positive = |x: &f64| x.is_finite() && *x > 0.0;
        let ok = file.feature_mean.iter().all(finite)
            && file.feature_std.iter().all(positive)
            && positive(&file.copy_gbs)
            && finite(&file.cost_mean)
            && positive(&file.cost_std);
        if !ok {
            return bad("normalisation constants must be finite (and scales positive)".into());
        }
        let h = match file.layers.get("trunk1") {
            Some(l) => l.outputs,
            None => return bad("missing layer trunk1".into()),
        };
        let c = match file.layers.get("cost1") {
            Some(l) => l.outputs,
            None => return bad("missing layer cost1".into()),
        };
        let want: [(usize, usize); 13] = [
            (INPUTS, h),
            (h, h),
            (h, NS),
            (h + NS, 3),
            (h + NS, 5),
            (h + NS, 5),
            (h + NS, 3),
            (h + NS, 2),
            (h + NS, 2),
            (h, 1),
            (INPUTS + VARIANT_ENCODING, c),
            (c, c),
            (c, 1),
        ];
        for (name, (i, o)) in LAYER_NAMES.iter().zip(want) {
            let Some(l) = file.layers.get(*name) else {
                return bad(format!("missing layer {name}"));
            };
            if l.inputs != i || l.outputs != o || l.weight.len() != i * o || l.bias.len() != o {
                return bad(format!(
                    "layer {name}: expected {i} -> {o} with {} weights and {o} biases",
                    i * o
                ));
            }
            if !l.weight.iter().chain(&l.bias).all(|x| x.is_finite()) {
                return bad(format!("layer {name} has non-finite weights"));
            }
        }
        if h == 0 || c == 0 {
            return bad("hidden layers must not be empty".into());
        }
        Ok(LearnedPolicy { file })
    }

    /// The parsed file.
    pub fn file(&self) -> &PolicyFile {
        &self.file
    }

    fn layer(&self, name: &str) -> &LayerFile {
        // Presence checked in `new`.
        &self.file.layers[name]
    }

    /// The network input for a matrix: normalised features and the value one-hot.
    pub fn input(&self, features: &Features, value: ValueType) -> Vec<f64> {
        network_input(
            &features.to_vec(),
            value,
            &self.file.feature_mean,
            &self.file.feature_std,
        )
    }

    fn trunk(&self, x: &[f64]) -> Vec<f64> {
        let h: Vec<f64> = self
            .layer("trunk1")
            .apply(x)
            .into_iter()
            .map(f64::tanh)
            .collect();
        self.layer("trunk2")
            .apply(&h)
            .into_iter()
            .map(f64::tanh)
            .collect()
    }

    /// Probabilities of every head for a matrix.
    pub fn head_probs(&self, features: &Features, value: ValueType) -> HeadProbs {
        self.head_probs_at(&self.input(features, value))
    }

    /// Probabilities of every head for a network input (see
    /// [`LearnedPolicy::input`]; [`INPUTS`] numbers).
    pub fn head_probs_at(&self, x: &[f64]) -> HeadProbs {
        let h = self.trunk(x);
        let strategy = softmax(&self.layer("strategy").apply(&h), None);
        let conditioned = STRATEGIES
            .iter()
            .enumerate()
            .map(|(si, &s)| {
                let mut hc = h.clone();
                hc.extend((0..NS).map(|j| if j == si { 1.0 } else { 0.0 }));
                ConditionedProbs {
                    block: softmax(&self.layer("block").apply(&hc), None),
                    lanes: softmax(&self.layer("lanes").apply(&hc), None),
                    items: softmax(&self.layer("items").apply(&hc), None),
                    unroll: softmax(&self.layer("unroll").apply(&hc), Some(&unroll_mask(s))),
                    ldg_x: softmax(&self.layer("ldg_x").apply(&hc), None),
                    stream_y: softmax(&self.layer("stream_y").apply(&hc), None),
                }
            })
            .collect();
        HeadProbs {
            strategy,
            conditioned,
        }
    }

    /// Every variant of [`policy_space`] with its joint probability (sums to 1).
    pub fn variant_probs(&self, features: &Features, value: ValueType) -> Vec<(Variant, f64)> {
        let p = self.head_probs(features, value);
        policy_space()
            .into_iter()
            .map(|v| (v, p.joint(&v)))
            .collect()
    }

    /// The cost head's raw output (normalised ln GB/s).
    fn cost_raw(&self, x: &[f64], variant: &Variant) -> f64 {
        let mut xc = x.to_vec();
        xc.extend(encode_variant(variant).iter().map(|&e| e as f64));
        let h: Vec<f64> = self
            .layer("cost1")
            .apply(&xc)
            .into_iter()
            .map(f64::tanh)
            .collect();
        let h: Vec<f64> = self
            .layer("cost2")
            .apply(&h)
            .into_iter()
            .map(f64::tanh)
            .collect();
        self.layer("cost3").apply(&h)[0]
    }

    /// The cost head's predicted natural log of GB/s for a network input
    /// (see [`LearnedPolicy::input`]).
    pub fn predicted_ln_gbs_at(&self, x: &[f64], variant: &Variant) -> f64 {
        self.file.cost_mean + self.file.cost_std * self.cost_raw(x, variant)
    }

    /// The cost head's predicted natural log of GB/s.
    pub fn predicted_ln_gbs(
        &self,
        features: &Features,
        value: ValueType,
        variant: &Variant,
    ) -> f64 {
        let raw = self.cost_raw(&self.input(features, value), variant);
        self.file.cost_mean + self.file.cost_std * raw
    }

    /// The cost head's predicted GB/s of `variant` on a matrix. Parameters
    /// outside the action vocabulary are encoded as "unknown" (all-zero
    /// one-hot group), so the estimate is rougher for them.
    pub fn predicted_gbs(&self, features: &Features, value: ValueType, variant: &Variant) -> f64 {
        self.predicted_ln_gbs(features, value, variant).exp()
    }

    /// [`Self::predicted_gbs`] over the dataset's copy bandwidth, clamped to
    /// `[1e-6, 1]` (a [`Proposal`]'s score).
    pub fn predicted_fraction(
        &self,
        features: &Features,
        value: ValueType,
        variant: &Variant,
    ) -> f64 {
        self.copy_fraction(self.predicted_gbs(features, value, variant))
    }

    /// `gbs` over the dataset's copy bandwidth, clamped to `[1e-6, 1]`.
    fn copy_fraction(&self, gbs: f64) -> f64 {
        (gbs / self.file.copy_gbs).clamp(1e-6, 1.0)
    }
}

impl Policy for LearnedPolicy {
    fn name(&self) -> &str {
        "learned"
    }

    /// The no-GPU pick: the measured records' pick (a forest and a knob
    /// pick blended), [`crate::pick::DEFAULT_RULE`] (weighs the predicted
    /// loss of a miss; see [`crate::pick`]) only where the records do not
    /// load ([`crate::spmv_records::no_gpu_pick`]).
    fn pick(&self, features: &Features, value: ValueType) -> Option<Proposal> {
        crate::spmv_records::no_gpu_pick(self, features, value)
    }

    /// Ranks the policy space by joint probability (ties keep core-space
    /// order); `score` is the cost head's predicted GB/s over the dataset's
    /// copy bandwidth, clamped to `[1e-6, 1]`.
    fn propose(&self, features: &Features, value: ValueType, k: usize) -> Vec<Proposal> {
        let x = self.input(features, value);
        let mut all = self.variant_probs(features, value);
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.truncate(k);
        all.into_iter()
            .map(|(variant, _)| {
                let gbs =
                    (self.file.cost_mean + self.file.cost_std * self.cost_raw(&x, &variant)).exp();
                Proposal {
                    variant,
                    score: self.copy_fraction(gbs),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_roundtrip_over_the_policy_space() {
        let space = policy_space();
        assert_eq!(space.len(), 150 + 12 + 9);
        for v in &space {
            let a = actions_of(v).unwrap_or_else(|| panic!("{v} not in vocabulary"));
            assert_eq!(variant_of(a), *v);
        }
        let mut s = Variant::of(Strategy::BlockPerRow);
        s.unroll = 2;
        assert!(actions_of(&s).is_none());
    }

    #[test]
    fn encodings_are_distinct() {
        let set: std::collections::HashSet<_> = policy_space()
            .iter()
            .map(|v| {
                encode_variant(v)
                    .iter()
                    .map(|x| *x as u8)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(set.len(), 171);
    }
}
