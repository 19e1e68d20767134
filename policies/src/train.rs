//! Training with libtorch (feature `train`): the kernel-choice environment,
//! the network in tch, REINFORCE with a learned baseline, and the export to
//! a [`PolicyFile`].
//!
//! **Environment.** One episode = one (matrix, value type) record of the
//! dataset. The agent picks a strategy, then, conditioned on it, the block
//! size, lanes (group-per-row), items (nnz-split), unroll (not nnz-split or
//! tiled; block-per-row only 1 or 4), `__ldg` (not SELL) and streaming loads
//! (tiled). The terminal reward is the measured GB/s of the chosen variant
//! over the best measured GB/s of that record, -1 when the variant failed
//! the correctness check, 0 for a SELL-C-sigma kernel on a matrix without
//! that layout (as the dataset marks it), and the cost head's estimate (over the same
//! best) when the dataset lacks the variant; estimated rewards are counted
//! and reported.
//!
//! **Algorithm.** REINFORCE with a learned state-value baseline: per epoch,
//! every training record plays `samples` episodes (sampled with a seeded
//! ChaCha8 generator from the network's probabilities), the advantage
//! `r - V(s)` is normalised over the batch, and one Adam step minimises
//! `-mean(A log pi) - entropy_coef * H + value_coef * (V - r)^2 + cost MSE`.
//! The cost head (its own MLP) is first fitted alone for `cost_steps` steps on
//! every correct row of the training records (MSE on normalised ln GB/s),
//! then keeps training alongside. Held-out records never enter any loss or
//! the feature normalisation.

use crate::dataset::{Dataset, MatrixRecord};
use crate::net::{
    self, ActionVocabulary, FEATURE_TRANSFORMS, HEADS, INPUTS, LayerFile, NS, PolicyFile,
    STRATEGIES, VALUE_TYPES, VARIANT_ENCODING, actions_of, encode_variant, heads_used,
    network_input, policy_space, unroll_mask,
};
use crate::prepared::prepare;
pub use crate::prepared::{Prepared, prepare_all};
use crate::template_rule;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use sparserl_rt::{Features, Variant};
use std::collections::BTreeMap;
use tch::{Device, Kind, Tensor, nn, nn::Module, nn::OptimizerConfig};

/// Training settings.
#[derive(Debug, Clone)]
pub struct TrainConfig {
    /// Seed of weight initialisation and episode sampling.
    pub seed: u64,
    /// Policy-gradient epochs (one Adam step each).
    pub epochs: usize,
    /// Episodes per training record per epoch.
    pub samples: usize,
    /// Steps fitting the cost head alone before the policy epochs.
    pub cost_steps: usize,
    /// Adam learning rate.
    pub lr: f64,
    /// Entropy bonus weight.
    pub entropy_coef: f64,
    /// Baseline (value) loss weight.
    pub value_coef: f64,
    /// Trunk width.
    pub hidden: i64,
    /// Cost-head width.
    pub cost_hidden: i64,
    /// Matrices held out by name.
    pub holdout_names: Vec<String>,
    /// Structure classes held out.
    pub holdout_classes: Vec<String>,
    /// Training round recorded in the export.
    pub round: u32,
    /// sha256 of the dataset file, recorded in the export.
    pub dataset_sha256: String,
    /// libtorch intra-op threads (1 keeps runs bit-reproducible).
    pub threads: i32,
    /// Weight of energy in the reward, 0 to 1 (time gets the rest): each
    /// energy-measured variant's GB/s is moved by its power
    /// ([`crate::dataset::MatrixRecord::energy_weighted`]); recorded in the
    /// policy file.
    pub energy_weight: f64,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            seed: 0,
            epochs: 300,
            samples: 32,
            cost_steps: 400,
            lr: 3e-3,
            entropy_coef: 0.01,
            value_coef: 0.5,
            hidden: 64,
            cost_hidden: 64,
            holdout_names: Vec::new(),
            holdout_classes: Vec::new(),
            round: 0,
            dataset_sha256: String::new(),
            threads: 1,
            energy_weight: 0.0,
        }
    }
}

/// The network in tch (layer names match the export).
#[derive(Debug)]
pub struct Net {
    /// All parameters.
    pub vs: nn::VarStore,
    layers: BTreeMap<&'static str, nn::Linear>,
    /// `ln GB/s = cost_mean + cost_std * cost head output`.
    pub cost_mean: f64,
    /// See `cost_mean`.
    pub cost_std: f64,
}

/// Log-probabilities of every head for a batch.
#[derive(Debug)]
pub struct HeadLogProbs {
    /// `[B, 4]`.
    pub strategy: Tensor,
    /// Per strategy: block `[B,3]`, lanes `[B,5]`, items `[B,5]`, unroll
    /// `[B,3]`, ldg `[B,2]`, stream `[B,2]`.
    pub conditioned: Vec<[Tensor; HEADS]>,
}

const HEAD_SIZES: [i64; HEADS] = [3, 5, 5, 3, 2, 2];
const HEAD_NAMES: [&str; HEADS] = ["block", "lanes", "items", "unroll", "ldg_x", "stream_y"];
/// Offsets of the conditioned heads within one strategy's block of
/// concatenated log-probabilities.
const HEAD_OFFSETS: [usize; HEADS] = [0, 3, 8, 13, 16, 18];
/// Width of one strategy's conditioned log-probabilities.
const COND_WIDTH: usize = 20;

impl Net {
    /// A freshly initialised network (seeded by the caller through `tch::manual_seed`).
    pub fn new(hidden: i64, cost_hidden: i64) -> Net {
        let vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let h = hidden;
        let c = cost_hidden;
        let i = INPUTS as i64;
        let dims: [(&'static str, i64, i64); 13] = [
            ("trunk1", i, h),
            ("trunk2", h, h),
            ("strategy", h, NS as i64),
            ("block", h + NS as i64, 3),
            ("lanes", h + NS as i64, 5),
            ("items", h + NS as i64, 5),
            ("unroll", h + NS as i64, 3),
            ("ldg_x", h + NS as i64, 2),
            ("stream_y", h + NS as i64, 2),
            ("value", h, 1),
            ("cost1", i + VARIANT_ENCODING as i64, c),
            ("cost2", c, c),
            ("cost3", c, 1),
        ];
        let layers = dims
            .iter()
            .map(|&(name, a, b)| (name, nn::linear(&root / name, a, b, Default::default())))
            .collect();
        Net {
            vs,
            layers,
            cost_mean: 0.0,
            cost_std: 1.0,
        }
    }

    fn l(&self, name: &str) -> &nn::Linear {
        &self.layers[name]
    }

    /// Trunk output `[B, H]`.
    pub fn trunk(&self, x: &Tensor) -> Tensor {
        self.l("trunk2")
            .forward(&self.l("trunk1").forward(x).tanh())
            .tanh()
    }

    /// Baseline `[B]`.
    pub fn value(&self, h: &Tensor) -> Tensor {
        self.l("value").forward(h).squeeze_dim(1)
    }

    /// Conditioned head log-probabilities given trunk output and a strategy
    /// one-hot `[B, NS]`; `unroll_mask` `[B, 3]` is added to the unroll logits.
    fn conditioned(&self, h: &Tensor, onehot: &Tensor, unroll_mask: &Tensor) -> [Tensor; HEADS] {
        let hc = Tensor::cat(&[h, onehot], 1);
        let head = |name: &str| self.l(name).forward(&hc);
        [
            head("block").log_softmax(-1, Kind::Float),
            head("lanes").log_softmax(-1, Kind::Float),
            head("items").log_softmax(-1, Kind::Float),
            (head("unroll") + unroll_mask).log_softmax(-1, Kind::Float),
            head("ldg_x").log_softmax(-1, Kind::Float),
            head("stream_y").log_softmax(-1, Kind::Float),
        ]
    }

    /// Every head's log-probabilities for input `x` `[B, 20]`.
    pub fn head_log_probs(&self, x: &Tensor) -> HeadLogProbs {
        let b = x.size()[0];
        let h = self.trunk(x);
        let strategy = self.l("strategy").forward(&h).log_softmax(-1, Kind::Float);
        let conditioned = STRATEGIES
            .iter()
            .enumerate()
            .map(|(si, &s)| {
                let onehot = Tensor::zeros([b, NS as i64], (x.kind(), Device::Cpu));
                let _ = onehot.narrow(1, si as i64, 1).fill_(1.0);
                let mask = Tensor::from_slice(&unroll_mask(s))
                    .to_kind(x.kind())
                    .unsqueeze(0)
                    .expand([b, 3], false);
                self.conditioned(&h, &onehot, &mask)
            })
            .collect();
        HeadLogProbs {
            strategy,
            conditioned,
        }
    }

    /// Joint log-probabilities of the policy space `[B, 171]` (its order).
    pub fn joint_log_probs(&self, x: &Tensor) -> Tensor {
        let lp = self.head_log_probs(x);
        let mut cols: Vec<&Tensor> = vec![&lp.strategy];
        for c in &lp.conditioned {
            cols.extend(c.iter());
        }
        let all = Tensor::cat(&cols, 1);
        all.matmul(&joint_matrix().to_kind(all.kind()))
    }

    /// Cost head: predicted ln GB/s `[B]` for inputs `x` `[B, 20]` and
    /// variant encodings `venc` `[B, VARIANT_ENCODING]`.
    pub fn cost_ln_gbs(&self, x: &Tensor, venc: &Tensor) -> Tensor {
        self.cost_raw(x, venc) * self.cost_std + self.cost_mean
    }

    fn cost_raw(&self, x: &Tensor, venc: &Tensor) -> Tensor {
        let xc = Tensor::cat(&[x, venc], 1);
        let h = self.l("cost1").forward(&xc).tanh();
        let h = self.l("cost2").forward(&h).tanh();
        self.l("cost3").forward(&h).squeeze_dim(1)
    }

    /// The layers as export records.
    pub fn export_layers(&self) -> BTreeMap<String, LayerFile> {
        self.layers
            .iter()
            .map(|(name, l)| {
                let w = l.ws.to_kind(Kind::Float).contiguous();
                let size = w.size();
                let weight: Vec<f32> = Vec::try_from(&w.flatten(0, -1)).expect("f32 weights");
                let bias: Vec<f32> = match &l.bs {
                    Some(b) => Vec::try_from(&b.to_kind(Kind::Float)).expect("f32 bias"),
                    None => vec![0.0; size[0] as usize],
                };
                (
                    name.to_string(),
                    LayerFile {
                        inputs: size[1] as usize,
                        outputs: size[0] as usize,
                        weight,
                        bias,
                    },
                )
            })
            .collect()
    }
}

/// Width of the concatenated head log-probabilities (strategy + NS x conditioned).
const LP_WIDTH: usize = NS + NS * COND_WIDTH;

/// `[LP_WIDTH, 171]` 0/1 matrix summing the relevant head log-probabilities
/// of each policy-space variant.
pub fn joint_matrix() -> Tensor {
    let space = policy_space();
    let mut m = vec![0f32; LP_WIDTH * space.len()];
    for (j, v) in space.iter().enumerate() {
        let a = actions_of(v).expect("the policy space is in the vocabulary");
        let used = heads_used(STRATEGIES[a[0]]);
        let mut set = |row: usize| m[row * space.len() + j] = 1.0;
        set(a[0]);
        let base = NS + a[0] * COND_WIDTH;
        for k in 0..HEADS {
            if used[k] {
                set(base + HEAD_OFFSETS[k] + a[k + 1]);
            }
        }
    }
    Tensor::from_slice(&m).view([LP_WIDTH as i64, space.len() as i64])
}

/// Per-epoch numbers.
#[derive(Debug, Clone, Serialize)]
pub struct EpochReport {
    /// Epoch (1-based).
    pub epoch: usize,
    /// Mean reward of the sampled training episodes.
    pub train_sampled: f64,
    /// Expected reward of the policy on the training records (exact, over all variants).
    pub train_expected: f64,
    /// Expected reward on the held-out records.
    pub heldout_expected: f64,
    /// Reward of the most probable variant on the held-out records.
    pub heldout_greedy: f64,
    /// Mean entropy of the sampled episodes (nats).
    pub entropy: f64,
    /// Cost-head MSE on normalised ln GB/s (training rows).
    pub cost_mse: f64,
}

/// Baselines and final numbers on a split.
#[derive(Debug, Clone, Serialize)]
pub struct SplitSummary {
    /// Records.
    pub records: usize,
    /// Reward of the learned policy's most probable variant.
    pub learned_greedy: f64,
    /// Expected reward under the learned policy.
    pub learned_expected: f64,
    /// Expected reward of a uniformly random variant.
    pub uniform: f64,
    /// Reward of [`template_rule`].
    pub template_rule: f64,
    /// Reward of the [`crate::Prior`]'s first proposal.
    pub prior: f64,
    /// RMSE of the cost head on ln GB/s (correct rows).
    pub cost_rmse_ln: f64,
    /// Mean predicted over measured GB/s of the learned pick.
    pub predicted_over_measured: f64,
}

/// Everything a training run produces.
#[derive(Debug, Clone)]
pub struct TrainOutput {
    /// The export.
    pub file: PolicyFile,
    /// Per-epoch numbers.
    pub epochs: Vec<EpochReport>,
    /// Final numbers on the training records.
    pub train: SplitSummary,
    /// Final numbers on the held-out records.
    pub heldout: SplitSummary,
    /// Share of episode rewards that came from the cost head (variant not measured).
    pub estimated_share: f64,
    /// Names of the held-out records.
    pub heldout_names: Vec<String>,
}

/// Training errors.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// Nothing to train on.
    #[error("{0}")]
    Data(String),
    /// libtorch failure.
    #[error("libtorch: {0}")]
    Torch(#[from] tch::TchError),
}

fn sample(rng: &mut ChaCha8Rng, probs: &[f32]) -> usize {
    let u: f32 = rng.random();
    let mut acc = 0.0;
    for (i, &p) in probs.iter().enumerate() {
        acc += p;
        if u < acc {
            return i;
        }
    }
    // Rounding: the last action with nonzero probability.
    probs.iter().rposition(|&p| p > 0.0).unwrap_or(0)
}

fn f64_of(t: &Tensor) -> f64 {
    t.double_value(&[])
}

/// Trains a policy on `ds` (held-out records excluded from every loss).
///
/// Phases: split and normalise the records, fit the cost head, then
/// `cfg.epochs` policy-gradient epochs, then export and summarise.
pub fn train(
    ds: &Dataset,
    cfg: &TrainConfig,
    mut log: impl FnMut(&EpochReport),
) -> Result<TrainOutput, TrainError> {
    if !(0.0..=1.0).contains(&cfg.energy_weight) {
        return Err(TrainError::Data(format!(
            "energy weight {} is outside 0 to 1",
            cfg.energy_weight
        )));
    }
    let weighted;
    let ds = if cfg.energy_weight > 0.0 {
        weighted = ds.energy_weighted(cfg.energy_weight);
        &weighted
    } else {
        ds
    };
    tch::set_num_threads(cfg.threads.max(1));
    tch::manual_seed(cfg.seed as i64);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let (train_recs, test_recs) = split_records(ds, cfg)?;
    let norm = Normalisation::of(&train_recs);
    let x_train = norm.inputs(&train_recs);
    let x_test = (!test_recs.is_empty()).then(|| norm.inputs(&test_recs));
    let cost = CostRows::of(ds, cfg, &norm)?;

    let mut net = Net::new(cfg.hidden, cfg.cost_hidden);
    net.cost_mean = cost.mean;
    net.cost_std = cost.std;
    let mut opt = nn::Adam::default().build(&net.vs, cfg.lr)?;
    for _ in 0..cfg.cost_steps {
        let loss = cost.loss(&net, &mut rng);
        opt.backward_step(&loss);
    }

    let space = Space::new();
    let train_set = Split {
        recs: &train_recs,
        x: &x_train,
    };
    let test_set = x_test.as_ref().map(|x| Split {
        recs: &test_recs,
        x,
    });
    let episodes = Episodes::new(&train_set, cfg.samples);
    let mut counts = RewardCounts::default();
    let mut reports = Vec::new();
    for epoch in 1..=cfg.epochs {
        let mut step = EpochStep {
            net: &net,
            opt: &mut opt,
            rng: &mut rng,
            counts: &mut counts,
        };
        let rep = step.run(
            epoch,
            cfg,
            (&space, &cost, &episodes),
            (&train_set, &test_set),
        );
        log(&rep);
        reports.push(rep);
    }
    finish(
        &net,
        norm,
        ds,
        cfg,
        (&train_recs, &test_recs),
        reports,
        counts,
    )
}

/// The usable records of `ds`, split into training and held-out ones
/// (`cfg.holdout_names` and `cfg.holdout_classes`).
fn split_records(
    ds: &Dataset,
    cfg: &TrainConfig,
) -> Result<(Vec<Prepared>, Vec<Prepared>), TrainError> {
    if ds.feature_names != Features::NAMES {
        return Err(TrainError::Data(
            "dataset feature names differ from this code's".into(),
        ));
    }
    let (mut train_recs, mut test_recs) = (Vec::new(), Vec::new());
    for r in &ds.matrices {
        if let Some(p) = prepare(ds, r) {
            if held_out(cfg, r) {
                test_recs.push(p);
            } else {
                train_recs.push(p);
            }
        }
    }
    if train_recs.is_empty() {
        return Err(TrainError::Data("no training records".into()));
    }
    Ok((train_recs, test_recs))
}

/// Whether `r` is held out of training.
fn held_out(cfg: &TrainConfig, r: &MatrixRecord) -> bool {
    cfg.holdout_names.contains(&r.name) || cfg.holdout_classes.contains(&r.class)
}

/// Feature normalisation, from the training records only.
struct Normalisation {
    mean: Vec<f64>,
    std: Vec<f64>,
}

impl Normalisation {
    fn of(train_recs: &[Prepared]) -> Normalisation {
        let t: Vec<Vec<f64>> = train_recs
            .iter()
            .map(|r| net::transform_features(&r.features))
            .collect();
        let n = t.len() as f64;
        let mean: Vec<f64> = (0..18)
            .map(|j| t.iter().map(|r| r[j]).sum::<f64>() / n)
            .collect();
        let std: Vec<f64> = (0..18)
            .map(|j| {
                let v = t.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n;
                if v.sqrt() > 1e-6 { v.sqrt() } else { 1.0 }
            })
            .collect();
        Normalisation { mean, std }
    }

    /// The network input of one record.
    fn input(&self, r: &Prepared) -> Vec<f32> {
        network_input(&r.features, r.value, &self.mean, &self.std)
            .into_iter()
            .map(|x| x as f32)
            .collect()
    }

    /// The network inputs of `recs`, one row each.
    fn inputs(&self, recs: &[Prepared]) -> Tensor {
        let flat: Vec<f32> = recs.iter().flat_map(|r| self.input(r)).collect();
        Tensor::from_slice(&flat).view([recs.len() as i64, INPUTS as i64])
    }
}

/// The cost head's rows: every correct measurement of the training
/// records, its target normalised ln GB/s.
struct CostRows {
    x: Tensor,
    v: Tensor,
    y: Tensor,
    rows: i64,
    mean: f64,
    std: f64,
}

impl CostRows {
    fn of(ds: &Dataset, cfg: &TrainConfig, norm: &Normalisation) -> Result<CostRows, TrainError> {
        let (mut cx, mut cv, mut cy) = (Vec::new(), Vec::new(), Vec::new());
        for rec in ds.matrices.iter().filter(|r| !held_out(cfg, r)) {
            let Some(p) = prepare(ds, rec) else { continue };
            let x = norm.input(&p);
            for r in &rec.results {
                if r.3
                    && r.1 > 0.0
                    && let Some(v) = ds.variants.get(r.0)
                {
                    cx.extend_from_slice(&x);
                    cv.extend_from_slice(&encode_variant(v));
                    cy.push(r.1.ln());
                }
            }
        }
        let rows = cy.len() as i64;
        if rows == 0 {
            return Err(TrainError::Data(
                "no correct measurements to fit the cost head".into(),
            ));
        }
        let mean = cy.iter().sum::<f64>() / rows as f64;
        let std = (cy.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / rows as f64)
            .sqrt()
            .max(1e-3);
        Ok(CostRows {
            x: Tensor::from_slice(&cx).view([rows, INPUTS as i64]),
            v: Tensor::from_slice(&cv).view([rows, VARIANT_ENCODING as i64]),
            y: Tensor::from_slice(
                &cy.iter()
                    .map(|y| ((y - mean) / std) as f32)
                    .collect::<Vec<_>>(),
            ),
            rows,
            mean,
            std,
        })
    }

    /// The cost head's MSE on a random batch of rows.
    fn loss(&self, net: &Net, rng: &mut ChaCha8Rng) -> Tensor {
        let batch = 4096.min(self.rows);
        let idx: Vec<i64> = (0..batch).map(|_| rng.random_range(0..self.rows)).collect();
        let idx = Tensor::from_slice(&idx);
        let pred = net.cost_raw(&self.x.index_select(0, &idx), &self.v.index_select(0, &idx));
        (pred - self.y.index_select(0, &idx))
            .square()
            .mean(Kind::Float)
    }
}

/// The policy space and its variant encodings.
struct Space {
    variants: Vec<Variant>,
    encodings: Tensor,
}

impl Space {
    fn new() -> Space {
        let variants = policy_space();
        let nv = variants.len();
        let enc: Vec<f32> = variants.iter().flat_map(encode_variant).collect();
        let encodings = Tensor::from_slice(&enc).view([nv as i64, VARIANT_ENCODING as i64]);
        Space {
            variants,
            encodings,
        }
    }

    /// Rewards per record of `split` and variant: measured, else the cost
    /// head's estimate; also how many were estimated.
    fn reward_table(&self, net: &Net, split: &Split<'_>) -> (Vec<Vec<f64>>, usize) {
        let nv = self.variants.len();
        let mut estimated = 0;
        let recs = split.recs;
        let need = recs.iter().any(|r| r.measured.iter().any(Option::is_none));
        let pred: Option<Vec<f32>> = need.then(|| {
            tch::no_grad(|| {
                let b = recs.len() as i64;
                let xr = split
                    .x
                    .unsqueeze(1)
                    .expand([b, nv as i64, INPUTS as i64], false)
                    .reshape([-1, INPUTS as i64]);
                let vr = self
                    .encodings
                    .unsqueeze(0)
                    .expand([b, nv as i64, VARIANT_ENCODING as i64], false)
                    .reshape([-1, VARIANT_ENCODING as i64]);
                Vec::try_from(&net.cost_ln_gbs(&xr, &vr)).expect("f32 predictions")
            })
        });
        let table = recs
            .iter()
            .enumerate()
            .map(|(i, r)| {
                r.measured
                    .iter()
                    .enumerate()
                    .map(|(j, m)| match m {
                        Some(v) => *v,
                        None => {
                            estimated += 1;
                            let p = pred.as_ref().expect("predictions computed")[i * nv + j];
                            ((p as f64).exp() / r.best).min(1.5)
                        }
                    })
                    .collect()
            })
            .collect();
        (table, estimated)
    }

    /// Expected reward and reward of the most probable variant, averaged
    /// over the rows of `x` (rewards in `table`).
    fn evaluate(&self, net: &Net, x: &Tensor, table: &[Vec<f64>]) -> (f64, f64) {
        let nv = self.variants.len();
        tch::no_grad(|| {
            let p: Vec<Vec<f32>> =
                Vec::try_from(&net.joint_log_probs(x).exp()).expect("probabilities");
            let (mut exp, mut greedy) = (0.0, 0.0);
            for (pr, rw) in p.iter().zip(table) {
                exp += pr.iter().zip(rw).map(|(a, b)| *a as f64 * b).sum::<f64>();
                let best = (0..nv).fold(0, |bi, j| if pr[j] > pr[bi] { j } else { bi });
                greedy += rw[best];
            }
            let n = table.len().max(1) as f64;
            (exp / n, greedy / n)
        })
    }
}

/// Records and their network inputs.
struct Split<'a> {
    recs: &'a [Prepared],
    x: &'a Tensor,
}

/// The training batch of every epoch: each training record `samples` times.
struct Episodes {
    /// Episodes per record.
    per_record: usize,
    batch: i64,
    /// The input row of every episode.
    x: Tensor,
}

impl Episodes {
    fn new(train: &Split<'_>, samples: usize) -> Episodes {
        let nrec = train.recs.len();
        let s = samples.max(1);
        let rep_idx: Vec<i64> = (0..nrec as i64)
            .flat_map(|i| std::iter::repeat_n(i, s))
            .collect();
        let rep_idx = Tensor::from_slice(&rep_idx);
        Episodes {
            per_record: s,
            batch: (nrec * s) as i64,
            x: train.x.index_select(0, &rep_idx),
        }
    }
}

/// Episode rewards that came from the cost head, of all episodes.
#[derive(Default)]
struct RewardCounts {
    estimated: usize,
    episodes: usize,
}

/// The sampled actions of one epoch's episodes, with their log-probability
/// and entropy (tensors with gradients).
struct Rollout {
    strat: Vec<i64>,
    acts: Vec<[i64; HEADS]>,
    logp: Tensor,
    ent: Tensor,
}

/// Samples a strategy and its head actions per episode (`h`: the trunk's
/// output of every episode).
fn rollout(net: &Net, h: &Tensor, batch: i64, rng: &mut ChaCha8Rng) -> Rollout {
    let slp = net.l("strategy").forward(h).log_softmax(-1, Kind::Float);
    let sprobs: Vec<f32> = Vec::try_from(&slp.exp().detach().flatten(0, -1)).expect("f32");
    let strat: Vec<i64> = (0..batch as usize)
        .map(|b| sample(rng, &sprobs[b * NS..(b + 1) * NS]) as i64)
        .collect();
    let strat_t = Tensor::from_slice(&strat);
    let onehot = strat_t.one_hot(NS as i64).to_kind(Kind::Float);
    let masks: Vec<f32> = strat
        .iter()
        .flat_map(|&si| unroll_mask(STRATEGIES[si as usize]))
        .collect();
    let mask_t = Tensor::from_slice(&masks).view([batch, 3]);
    let heads = net.conditioned(h, &onehot, &mask_t);
    let hprobs: Vec<Vec<f32>> = heads
        .iter()
        .map(|t| Vec::try_from(&t.exp().detach().flatten(0, -1)).expect("f32"))
        .collect();
    let mut acts = vec![[0i64; HEADS]; batch as usize];
    let mut used = vec![0f32; batch as usize * HEADS];
    for b in 0..batch as usize {
        let u = heads_used(STRATEGIES[strat[b] as usize]);
        for k in 0..HEADS {
            let n = HEAD_SIZES[k] as usize;
            acts[b][k] = sample(rng, &hprobs[k][b * n..(b + 1) * n]) as i64;
            used[b * HEADS + k] = if u[k] { 1.0 } else { 0.0 };
        }
    }
    let used_t = Tensor::from_slice(&used).view([batch, HEADS as i64]);
    let mut logp = slp.gather(1, &strat_t.unsqueeze(1), false).squeeze_dim(1);
    let mut ent = -(slp.exp() * &slp).sum_dim_intlist(1, false, Kind::Float);
    for k in 0..HEADS {
        let a: Vec<i64> = acts.iter().map(|x| x[k]).collect();
        let a = Tensor::from_slice(&a).unsqueeze(1);
        let u = used_t.select(1, k as i64);
        logp += heads[k].gather(1, &a, false).squeeze_dim(1) * &u;
        // Masked entries have p = 0 and log p = -1e9: their product is 0.
        let hk = -(heads[k].exp() * &heads[k]).sum_dim_intlist(1, false, Kind::Float);
        ent += hk * &u;
    }
    Rollout {
        strat,
        acts,
        logp,
        ent,
    }
}

/// One policy-gradient epoch's state: the network, its optimiser, the
/// random stream and the reward counts.
struct EpochStep<'a> {
    net: &'a Net,
    opt: &'a mut nn::Optimizer,
    rng: &'a mut ChaCha8Rng,
    counts: &'a mut RewardCounts,
}

impl EpochStep<'_> {
    /// Samples the episodes, takes one optimiser step and evaluates.
    fn run(
        &mut self,
        epoch: usize,
        cfg: &TrainConfig,
        (space, cost, eps): (&Space, &CostRows, &Episodes),
        (train, test): (&Split<'_>, &Option<Split<'_>>),
    ) -> EpochReport {
        let net = self.net;
        let (table, _) = space.reward_table(net, train);
        let h = net.trunk(&eps.x);
        let ro = rollout(net, &h, eps.batch, self.rng);
        let rewards = self.rewards(&ro, space, eps, train.recs, &table);
        let r = Tensor::from_slice(&rewards);
        let v = net.value(&h);
        let adv = &r - v.detach();
        let adv = (&adv - adv.mean(Kind::Float)) / (adv.std(true) + 1e-8);
        let pg = -(adv * &ro.logp).mean(Kind::Float);
        let ent_mean = ro.ent.mean(Kind::Float);
        let vloss = (&v - &r).square().mean(Kind::Float);
        let closs = cost.loss(net, self.rng);
        let loss = pg - &ent_mean * cfg.entropy_coef + vloss * cfg.value_coef + &closs;
        self.opt.backward_step(&loss);

        let (train_expected, _) = space.evaluate(net, train.x, &table);
        let (heldout_expected, heldout_greedy) = match test {
            Some(t) => {
                let (tt, _) = space.reward_table(net, t);
                space.evaluate(net, t.x, &tt)
            }
            None => (f64::NAN, f64::NAN),
        };
        EpochReport {
            epoch,
            train_sampled: rewards.iter().map(|&x| x as f64).sum::<f64>() / eps.batch as f64,
            train_expected,
            heldout_expected,
            heldout_greedy,
            entropy: f64_of(&ent_mean),
            cost_mse: f64_of(&closs),
        }
    }

    /// The reward of every episode's variant (from `table`), counting those
    /// the cost head estimated.
    fn rewards(
        &mut self,
        ro: &Rollout,
        space: &Space,
        eps: &Episodes,
        recs: &[Prepared],
        table: &[Vec<f64>],
    ) -> Vec<f32> {
        (0..eps.batch as usize)
            .map(|b| {
                let rec = b / eps.per_record;
                let mut a = [ro.strat[b] as usize; HEADS + 1];
                for k in 0..HEADS {
                    a[k + 1] = ro.acts[b][k] as usize;
                }
                let v = net::variant_of(a);
                let j = space
                    .variants
                    .iter()
                    .position(|x| *x == v)
                    .expect("in the policy space");
                if recs[rec].measured[j].is_none() {
                    self.counts.estimated += 1;
                }
                self.counts.episodes += 1;
                table[rec][j] as f32
            })
            .collect()
    }
}

/// Exports the trained `net` and summarises it on both splits.
fn finish(
    net: &Net,
    norm: Normalisation,
    ds: &Dataset,
    cfg: &TrainConfig,
    (train_recs, test_recs): (&[Prepared], &[Prepared]),
    reports: Vec<EpochReport>,
    counts: RewardCounts,
) -> Result<TrainOutput, TrainError> {
    let file = export(net, norm.mean, norm.std, ds, cfg);
    let policy = crate::LearnedPolicy::new(file.clone())
        .map_err(|e| TrainError::Data(format!("export does not load: {e}")))?;
    let train_sum = summarize(&policy, train_recs, ds.copy_gbs);
    let heldout_sum = summarize(&policy, test_recs, ds.copy_gbs);
    let estimated_share = counts.estimated as f64 / counts.episodes.max(1) as f64;
    let mut file = file;
    file.report = serde_json::json!({
        "train_records": train_recs.len(),
        "heldout_records": test_recs.len(),
        "estimated_reward_share": estimated_share,
        "train": train_sum,
        "heldout": heldout_sum,
        "last_epoch": reports.last(),
    });
    Ok(TrainOutput {
        file,
        epochs: reports,
        train: train_sum,
        heldout: heldout_sum,
        estimated_share,
        heldout_names: test_recs
            .iter()
            .map(|r| format!("{}/{}", r.name, r.value))
            .collect(),
    })
}

/// The policy file of `net` with the given feature normalisation, provenance
/// from `ds` and `cfg` (the report is left empty).
pub fn export(
    net: &Net,
    feature_mean: Vec<f64>,
    feature_std: Vec<f64>,
    ds: &Dataset,
    cfg: &TrainConfig,
) -> PolicyFile {
    PolicyFile {
        format: net::FORMAT.to_string(),
        round: cfg.round,
        gpu: ds.gpu.clone(),
        copy_gbs: ds.copy_gbs,
        dataset_sha256: cfg.dataset_sha256.clone(),
        holdout_names: cfg.holdout_names.clone(),
        holdout_classes: cfg.holdout_classes.clone(),
        seed: cfg.seed,
        algorithm: format!(
            "reinforce+baseline epochs={} samples={} cost_steps={} lr={} entropy={} value={} hidden={} cost_hidden={}",
            cfg.epochs,
            cfg.samples,
            cfg.cost_steps,
            cfg.lr,
            cfg.entropy_coef,
            cfg.value_coef,
            cfg.hidden,
            cfg.cost_hidden
        ),
        activation: "tanh".into(),
        feature_names: Features::NAMES.iter().map(|s| s.to_string()).collect(),
        feature_transform: FEATURE_TRANSFORMS.iter().map(|s| s.to_string()).collect(),
        feature_mean,
        feature_std,
        value_types: VALUE_TYPES.to_vec(),
        actions: ActionVocabulary::current(),
        cost_mean: net.cost_mean,
        cost_std: net.cost_std,
        layers: net.export_layers(),
        reward: net::RewardWeights {
            time: 1.0 - cfg.energy_weight,
            energy: cfg.energy_weight,
        },
        report: serde_json::Value::Null,
    }
}

/// Reward of `v` on a prepared record: measured, else `None`.
fn measured_reward(r: &Prepared, v: &Variant) -> Option<f64> {
    let j = policy_space().iter().position(|x| x == v)?;
    r.measured[j]
}

/// Baselines and the learned policy (pure-Rust inference) on records.
pub fn summarize(policy: &crate::LearnedPolicy, recs: &[Prepared], _copy: f64) -> SplitSummary {
    use crate::Policy;
    let n = recs.len().max(1) as f64;
    let mut s = SplitSummary {
        records: recs.len(),
        learned_greedy: 0.0,
        learned_expected: 0.0,
        uniform: 0.0,
        template_rule: 0.0,
        prior: 0.0,
        cost_rmse_ln: 0.0,
        predicted_over_measured: 0.0,
    };
    let (mut se, mut rows, mut pom, mut pom_n) = (0.0, 0usize, 0.0, 0usize);
    for r in recs {
        let f = Features::from_slice(&r.features);
        // The first proposal the matrix can run (as the search skips the rest).
        let pick = policy
            .propose(&f, r.value, policy_space().len())
            .into_iter()
            .map(|p| p.variant)
            .find(|v| !r.cannot_run.contains(&v.strategy))
            .unwrap_or(Variant::FALLBACK);
        s.learned_greedy += measured_reward(r, &pick).unwrap_or(0.0);
        let probs = policy.variant_probs(&f, r.value);
        s.learned_expected += probs
            .iter()
            .zip(&r.measured)
            .map(|((_, p), m)| p * m.unwrap_or(0.0))
            .sum::<f64>();
        let known: Vec<f64> = r.measured.iter().flatten().copied().collect();
        s.uniform += known.iter().sum::<f64>() / known.len().max(1) as f64;
        s.template_rule += measured_reward(r, &template_rule(&f)).unwrap_or(0.0);
        let prior = crate::Prior.propose(&f, r.value, 1)[0].variant;
        s.prior += measured_reward(r, &prior).unwrap_or(0.0);
        for (j, v) in policy_space().iter().enumerate() {
            if let Some(m) = r.measured[j]
                && m > 0.0
            {
                let d = policy.predicted_ln_gbs(&f, r.value, v) - (m * r.best).ln();
                se += d * d;
                rows += 1;
            }
        }
        if let Some(m) = measured_reward(r, &pick)
            && m > 0.0
        {
            pom += policy.predicted_gbs(&f, r.value, &pick) / (m * r.best);
            pom_n += 1;
        }
    }
    s.learned_greedy /= n;
    s.learned_expected /= n;
    s.uniform /= n;
    s.template_rule /= n;
    s.prior /= n;
    s.cost_rmse_ln = (se / rows.max(1) as f64).sqrt();
    s.predicted_over_measured = pom / pom_n.max(1) as f64;
    s
}

/// Head names in conditioned order (for tests and reports).
pub const CONDITIONED_HEADS: [&str; HEADS] = HEAD_NAMES;

pub use crate::provenance::sha256_hex;
