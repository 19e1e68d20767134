//! A regression forest (bagged CART trees, a random share of the inputs
//! tried at each split), trained and evaluated in pure Rust.
//!
//! Why trees: a variant's fraction of the best depends on thresholds
//! (a row length against the lanes per row, a size against the L2), which
//! a tree states directly and a nearest-neighbour vote or a ridge over
//! squares only approximates; averaging many trees over bootstrap samples
//! keeps one tree's odd split from deciding a pick. Training is
//! deterministic: tree `t` draws from its own seeded stream, so the forest
//! is the same whatever the number of threads.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How a forest is grown.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ForestConfig {
    /// Number of trees.
    pub trees: usize,
    /// Fewest training rows in a leaf.
    pub min_leaf: usize,
    /// Share of the inputs tried at each split (at least one).
    pub max_features: f64,
    /// Deepest split level.
    pub max_depth: usize,
    /// Seed of tree 0 (tree `t` uses `seed + t`).
    pub seed: u64,
}

/// The configuration the committed pick uses: 16 trees, leaves of at least
/// 20 rows, half the inputs per split (about 200 KB gzipped on the SpMV
/// records; 32 trees with leaves of 10 rows judged no better
/// leave-one-class-out at four times the size).
pub const DEFAULT_FOREST: ForestConfig = ForestConfig {
    trees: 16,
    min_leaf: 20,
    max_features: 0.5,
    max_depth: 32,
    seed: 0,
};

/// Marks a leaf in [`Tree::feature`].
const LEAF: u16 = u16::MAX;

/// One tree as parallel arrays; node 0 is the root. An inner node sends a
/// row left when `row[feature] <= threshold`; a leaf holds its value in
/// `threshold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tree {
    /// Input index per node ([`LEAF`] for leaves).
    pub feature: Vec<u16>,
    /// Split threshold, or the leaf's value.
    pub threshold: Vec<f32>,
    /// Left child per inner node (0 for leaves).
    pub left: Vec<u32>,
    /// Right child per inner node (0 for leaves).
    pub right: Vec<u32>,
}

impl Tree {
    fn predict(&self, row: &[f32]) -> f32 {
        let mut n = 0usize;
        loop {
            let f = self.feature[n];
            if f == LEAF {
                return self.threshold[n];
            }
            let x = row.get(usize::from(f)).copied().unwrap_or(0.0);
            n = if x <= self.threshold[n] {
                self.left[n]
            } else {
                self.right[n]
            } as usize;
        }
    }

    fn push(&mut self, feature: u16, threshold: f32) -> usize {
        self.feature.push(feature);
        self.threshold.push(threshold);
        self.left.push(0);
        self.right.push(0);
        self.feature.len() - 1
    }

    /// Whether every child index points forward inside the tree and every
    /// inner node's input is below `inputs` (a loaded file may be corrupt).
    fn valid(&self, inputs: usize) -> bool {
        let n = self.feature.len();
        n > 0
            && [self.threshold.len(), self.left.len(), self.right.len()] == [n, n, n]
            && (0..n).all(|i| {
                let f = self.feature[i];
                f == LEAF || {
                    let (l, r) = (self.left[i] as usize, self.right[i] as usize);
                    usize::from(f) < inputs && l > i && r > i && l < n && r < n
                }
            })
    }
}

/// A trained forest: the mean of its trees.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Forest {
    /// Inputs per row.
    pub inputs: usize,
    /// The trees.
    pub trees: Vec<Tree>,
}

/// Training rows: `rows × inputs` values, row-major, and one target each.
pub struct Rows<'a> {
    /// The inputs.
    pub x: &'a [f32],
    /// The targets.
    pub y: &'a [f32],
    /// Inputs per row.
    pub inputs: usize,
}

impl Forest {
    /// Grows `cfg.trees` trees on `rows`, in parallel over the available
    /// cores (the result does not depend on how many).
    pub fn fit(rows: &Rows<'_>, cfg: &ForestConfig) -> Forest {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let ids: Vec<usize> = (0..cfg.trees).collect();
        let chunk = cfg.trees.div_ceil(threads).max(1);
        let mut trees: Vec<(usize, Tree)> = std::thread::scope(|s| {
            let handles: Vec<_> = ids
                .chunks(chunk)
                .map(|part| {
                    s.spawn(move || {
                        part.iter()
                            .map(|&t| (t, grow(rows, cfg, cfg.seed.wrapping_add(t as u64))))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        trees.sort_by_key(|(t, _)| *t);
        Forest {
            inputs: rows.inputs,
            trees: trees.into_iter().map(|(_, t)| t).collect(),
        }
    }

    /// The mean of the trees' predictions for `row` (0 without trees).
    pub fn predict(&self, row: &[f32]) -> f64 {
        if self.trees.is_empty() {
            return 0.0;
        }
        let sum: f64 = self.trees.iter().map(|t| f64::from(t.predict(row))).sum();
        sum / self.trees.len() as f64
    }

    /// The mean of the trees' predictions for `row` less `risk` times their
    /// standard deviation: where the trees disagree, a pick may miss badly
    /// (0 without trees).
    pub fn predict_cautious(&self, row: &[f32], risk: f64) -> f64 {
        if self.trees.is_empty() || risk == 0.0 {
            return self.predict(row);
        }
        let p: Vec<f64> = self
            .trees
            .iter()
            .map(|t| f64::from(t.predict(row)))
            .collect();
        let n = p.len() as f64;
        let mean = p.iter().sum::<f64>() / n;
        let var = p.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
        mean - risk * var.sqrt()
    }

    /// Whether the forest is well formed (see [`Tree`]).
    pub fn valid(&self) -> bool {
        !self.trees.is_empty() && self.trees.iter().all(|t| t.valid(self.inputs))
    }
}

/// One pending node: its rows (indices into the training rows, bootstrap
/// repeats included), its depth and its index in the tree.
struct Pending {
    rows: Vec<u32>,
    depth: usize,
    node: usize,
}

/// Grows one tree on a bootstrap sample drawn with `seed`.
fn grow(rows: &Rows<'_>, cfg: &ForestConfig, seed: u64) -> Tree {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = rows.y.len();
    let sample: Vec<u32> = (0..n).map(|_| rng.random_range(0..n) as u32).collect();
    let mut tree = Tree {
        feature: Vec::new(),
        threshold: Vec::new(),
        left: Vec::new(),
        right: Vec::new(),
    };
    let root = tree.push(LEAF, 0.0);
    let mut stack = vec![Pending {
        rows: sample,
        depth: 0,
        node: root,
    }];
    // Inputs past the last index a node can name are never split on.
    let usable = rows.inputs.min(usize::from(LEAF));
    let tried = ((cfg.max_features * usable as f64).ceil() as usize).clamp(1, usable.max(1));
    let mut features: Vec<usize> = (0..usable).collect();
    while let Some(p) = stack.pop() {
        let split =
            (usable > 0 && p.depth < cfg.max_depth && p.rows.len() >= 2 * cfg.min_leaf.max(1))
                .then(|| {
                    // A random `tried` of the inputs: a partial Fisher-Yates shuffle.
                    for i in 0..tried {
                        let j = rng.random_range(i..features.len());
                        features.swap(i, j);
                    }
                    best_split(rows, &p.rows, &features[..tried], cfg.min_leaf.max(1))
                })
                .flatten();
        let Some(s) = split else {
            tree.threshold[p.node] = mean(rows.y, &p.rows);
            continue;
        };
        let (l, r): (Vec<u32>, Vec<u32>) = p
            .rows
            .iter()
            .partition(|&&i| rows.x[i as usize * rows.inputs + s.feature] <= s.threshold);
        tree.feature[p.node] = s.feature as u16;
        tree.threshold[p.node] = s.threshold;
        let (ln, rn) = (tree.push(LEAF, 0.0), tree.push(LEAF, 0.0));
        tree.left[p.node] = ln as u32;
        tree.right[p.node] = rn as u32;
        let depth = p.depth + 1;
        stack.push(Pending {
            rows: r,
            depth,
            node: rn,
        });
        stack.push(Pending {
            rows: l,
            depth,
            node: ln,
        });
    }
    tree
}

fn mean(y: &[f32], rows: &[u32]) -> f32 {
    let s: f64 = rows.iter().map(|&i| f64::from(y[i as usize])).sum();
    (s / rows.len().max(1) as f64) as f32
}

/// A split: rows with `x[feature] <= threshold` go left.
struct Split {
    feature: usize,
    threshold: f32,
    gain: f64,
}

/// The split of `node` over `features` that most reduces the squared
/// error, each side keeping at least `min_leaf` rows; `None` if none does.
fn best_split(rows: &Rows<'_>, node: &[u32], features: &[usize], min_leaf: usize) -> Option<Split> {
    let y = |i: u32| f64::from(rows.y[i as usize]);
    let total: f64 = node.iter().map(|&i| y(i)).sum();
    let n = node.len();
    let mut order: Vec<(f32, f64)> = Vec::with_capacity(n);
    let mut best: Option<Split> = None;
    for &f in features {
        order.clear();
        order.extend(
            node.iter()
                .map(|&i| (rows.x[i as usize * rows.inputs + f], y(i))),
        );
        order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        // Squared error falls by sl²/nl + sr²/nr - total²/n; the last
        // term is the node's, the same for every candidate.
        let mut sl = 0.0;
        for k in 0..n - 1 {
            sl += order[k].1;
            let nl = k + 1;
            if nl < min_leaf || n - nl < min_leaf || order[k].0 == order[k + 1].0 {
                continue;
            }
            let sr = total - sl;
            let gain = sl * sl / nl as f64 + sr * sr / (n - nl) as f64;
            if best.as_ref().is_none_or(|b| gain > b.gain) {
                let mid = 0.5 * (order[k].0 + order[k + 1].0);
                // The midpoint of two adjacent floats may round up to the
                // larger one; the smaller then still goes left.
                let threshold = if mid < order[k + 1].0 {
                    mid
                } else {
                    order[k].0
                };
                best = Some(Split {
                    feature: f,
                    threshold,
                    gain,
                });
            }
        }
    }
    let base = total * total / n as f64;
    best.filter(|b| b.gain > base + 1e-12)
}

#[cfg(test)]
mod tests;
