//! How the SpMM record pick scores a variant: the nearest records' mean
//! fraction of the fastest (optionally weighted by nearness rank), blended
//! with a per-variant ridge regression of the log fraction on the matrix
//! features and a regression over the variants' knobs shared by all
//! variants ([`crate::spmm_knobs`]), all fitted on the records of one value
//! type and layout.

use crate::linalg::cholesky_solve;
use crate::spmm_forest::SpmmForest;
use crate::spmm_knobs::{KnobModel, expand};
use crate::spmm_records::{MIN_VOTES, NEIGHBOURS, SIZE_DIMS, SpmmRecord, SpmmRecords};
use sparserl_rt::ValueType;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::SpmmVariant;
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// Which group of variants a pick decides on before the variant: the
/// group whose best measured fraction the nearest records rate highest
/// goes first, its variants in the score's order, then the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// No group decision: the score alone ranks.
    None,
    /// The path: the transposed column-major path (`.t`) or the direct one.
    Path,
    /// The family within the path (`row-warp`, `nnz-split.t`, ...).
    Family,
}

impl Grouping {
    /// The group of variant id `id`.
    pub fn of(self, id: &str) -> String {
        let path = if id.ends_with(".t") { ".t" } else { "" };
        match self {
            Grouping::None => String::new(),
            Grouping::Path => path.to_string(),
            Grouping::Family => format!("{}{path}", id.split('.').next().unwrap_or_default()),
        }
    }

    /// A short name for rule names (empty for [`Grouping::None`]).
    pub fn name(self) -> &'static str {
        match self {
            Grouping::None => "",
            Grouping::Path => "-path-first",
            Grouping::Family => "-family-first",
        }
    }
}

/// How a pick scores a variant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PickRule {
    /// Nearest records whose measured fractions are averaged.
    pub neighbours: usize,
    /// Whether the i-th nearest record (from 0) weighs 1 / (1 + i), else 1.
    pub rank_weighted: bool,
    /// Weight of the ridge prediction of the log fraction; the rest goes to
    /// the log of the neighbours' mean fraction (0: the mean alone).
    pub ridge_share: f64,
    /// Weight of the knob regression's prediction ([`crate::spmm_knobs`]);
    /// the rest goes to the score above, taken as a log fraction.
    pub knob_share: f64,
    /// Whether a variant too few of the nearest records measured may still
    /// be ranked when [`MIN_VOTES`] of the [`NEIGHBOURS`] records nearest
    /// in size alone ([`crate::spmm_records::SIZE_DIMS`] and the width)
    /// measured it, with those records' mean in place of the nearest
    /// records'. What suits a large problem (X past the L2, many waves of
    /// blocks) is measured on the few large records, which a matrix of
    /// another shape does not have among its nearest.
    pub size_votes: bool,
    /// Weight of the forest's prediction ([`crate::spmm_forest`]); the rest
    /// goes to the score above, taken as a log fraction.
    pub forest_share: f64,
    /// The group decided before the variant.
    pub grouping: Grouping,
    /// Weight of the log of a variant's coverage (the rank-weighted share
    /// of the `neighbours` nearest records that measured it) added to the
    /// neighbours' log mean: a variant the searches of many neighbours
    /// measured is preferred to one few measured (0: none).
    pub coverage: f64,
    /// Multiple of the standard error of the neighbours' log fractions
    /// (their spread over the square root of how many measured the
    /// variant) taken off the neighbours' log mean: a lower bound rather
    /// than a mean (0: none).
    pub uncertainty: f64,
}

impl PickRule {
    /// A short name, e.g. `k16-rank-ridge0.5` or `k16-rank-ridge0.5-knob0.25`.
    pub fn name(&self) -> String {
        let w = if self.rank_weighted { "rank" } else { "flat" };
        let knob = if self.knob_share > 0.0 {
            format!("-knob{}", self.knob_share)
        } else {
            String::new()
        };
        let size = if self.size_votes { "-size" } else { "" };
        let forest = if self.forest_share > 0.0 {
            format!("-forest{}", self.forest_share)
        } else {
            String::new()
        };
        let cov = if self.coverage > 0.0 {
            format!("-cov{}", self.coverage)
        } else {
            String::new()
        };
        let lcb = if self.uncertainty > 0.0 {
            format!("-lcb{}", self.uncertainty)
        } else {
            String::new()
        };
        format!(
            "k{}-{w}-ridge{}{knob}{size}{forest}{}{cov}{lcb}",
            self.neighbours,
            self.ridge_share,
            self.grouping.name()
        )
    }

    /// The same rule with coverage weight `coverage` and uncertainty
    /// multiple `uncertainty` on the neighbours' mean.
    pub const fn with_caution(self, coverage: f64, uncertainty: f64) -> PickRule {
        PickRule {
            coverage,
            uncertainty,
            ..self
        }
    }

    /// The same rule deciding on `grouping`'s group first.
    pub const fn with_grouping(self, grouping: Grouping) -> PickRule {
        PickRule { grouping, ..self }
    }

    /// The same rule with `share` of the score going to the forest.
    pub const fn with_forest(self, share: f64) -> PickRule {
        PickRule {
            forest_share: share,
            ..self
        }
    }
}

/// The rules a leave-one-class-out selection chooses among: the former
/// rule (8 neighbours, equal weights, no regression) and rank-weighted 16,
/// each with ridge shares 0, 1/4, 1/2 and 3/4, then rank-weighted 16 with
/// those ridge shares and a quarter or a half to the knob regression, then
/// four of those with the size votes.
pub const RULE_GRID: [PickRule; 20] = {
    const fn r(neighbours: usize, rank_weighted: bool, ridge_share: f64) -> PickRule {
        PickRule {
            neighbours,
            rank_weighted,
            ridge_share,
            knob_share: 0.0,
            size_votes: false,
            forest_share: 0.0,
            grouping: Grouping::None,
            coverage: 0.0,
            uncertainty: 0.0,
        }
    }
    const fn s(ridge_share: f64, knob_share: f64) -> PickRule {
        PickRule {
            size_votes: true,
            ..k(ridge_share, knob_share)
        }
    }
    const fn k(ridge_share: f64, knob_share: f64) -> PickRule {
        PickRule {
            knob_share,
            ..r(16, true, ridge_share)
        }
    }
    [
        r(8, false, 0.0),
        r(8, false, 0.25),
        r(8, false, 0.5),
        r(8, false, 0.75),
        r(16, true, 0.0),
        r(16, true, 0.25),
        r(16, true, 0.5),
        r(16, true, 0.75),
        k(0.0, 0.25),
        k(0.25, 0.25),
        k(0.5, 0.25),
        k(0.75, 0.25),
        k(0.0, 0.5),
        k(0.25, 0.5),
        k(0.5, 0.5),
        k(0.75, 0.5),
        s(0.0, 0.25),
        s(0.25, 0.25),
        s(0.5, 0.25),
        s(0.25, 0.5),
    ]
};

/// The rule of the no-GPU pick for a value type and dense layout: the one
/// of [`RULE_GRID`] that leave-one-class-out over all committed records of
/// that value type and layout ranks first (`cargo xtask spmm-records loco`
/// prints them; a rule per value type and layout since `spmm-blend-5`, f64
/// column-major records since `spmm-blend-6`).
/// Value types and layouts without records rank nothing (the prior's pick
/// applies), so their rule is only a default.
pub const fn pick_rule(value: ValueType, layout: DenseLayout) -> PickRule {
    match (value, layout) {
        (ValueType::F32, _) => RULE_GRID[19],
        (ValueType::F64, DenseLayout::ColMajor) => RULE_GRID[5],
        _ => RULE_GRID[17],
    }
}

/// Ridge penalty on the standardised features (not on the intercept).
pub const RIDGE_PENALTY: f64 = 10.0;

/// Records a variant needs to have measured for its regression to be fitted.
const MIN_FIT: usize = 5;

/// The records of one value type and layout (less some classes), their
/// standardisation and one ridge fit per variant.
#[derive(Debug, Clone)]
pub struct SpmmModel<'a> {
    pool: Vec<&'a SpmmRecord>,
    mean: Vec<f64>,
    scale: Vec<f64>,
    variants: Vec<Option<SpmmVariant>>,
    ridge: Vec<Option<Vec<f64>>>,
    ids: &'a [String],
    knobs: OnceLock<Option<KnobModel>>,
    forest: OnceLock<Option<SpmmForest>>,
}

impl<'a> SpmmModel<'a> {
    /// Fits on the records of `value` and `layout` with vectors of `dims`
    /// entries, leaving out those of the classes in `exclude`.
    pub fn fit(
        records: &'a SpmmRecords,
        value: ValueType,
        layout: DenseLayout,
        dims: usize,
        exclude: &[&str],
    ) -> SpmmModel<'a> {
        let pool: Vec<&SpmmRecord> = records
            .records
            .iter()
            .filter(|r| r.value == value && r.layout == layout && r.vector.len() == dims)
            .filter(|r| !exclude.contains(&r.class.as_str()))
            .collect();
        let (mean, scale) = moments(&pool, dims);
        let mut model = SpmmModel {
            pool,
            mean,
            scale,
            variants: records
                .variants
                .iter()
                .map(|id| SpmmVariant::parse(id).ok())
                .collect(),
            ridge: Vec::new(),
            ids: &records.variants,
            knobs: OnceLock::new(),
            forest: OnceLock::new(),
        };
        model.ridge = model.fit_ridge(records.variants.len());
        model
    }

    /// Whether no record applies.
    pub fn is_empty(&self) -> bool {
        self.pool.is_empty()
    }

    /// `[1, standardised vector]`: the regression's inputs.
    fn inputs(&self, vector: &[f64]) -> Vec<f64> {
        with_constant(&self.standardised(vector))
    }

    fn standardised(&self, vector: &[f64]) -> Vec<f64> {
        vector
            .iter()
            .zip(&self.mean)
            .zip(&self.scale)
            .map(|((x, m), s)| (x - m) / s)
            .collect()
    }

    /// Where the width (log2 N) sits in the records' vectors: last
    /// ([`crate::spmm_records::knn_vector`]).
    fn width_index(&self) -> Option<usize> {
        self.mean.len().checked_sub(1)
    }

    /// The knob regression over the pool, fitted on first use.
    fn knobs(&self) -> Option<&KnobModel> {
        self.knobs
            .get_or_init(|| {
                let samples = self.pool.iter().map(|r| {
                    (
                        expand(&self.standardised(&r.vector), self.width_index()),
                        &r.measured[..],
                    )
                });
                KnobModel::fit(self.ids, samples)
            })
            .as_ref()
    }

    /// The forest over the pool, fitted on first use.
    fn forest(&self) -> Option<&SpmmForest> {
        self.forest
            .get_or_init(|| SpmmForest::fit(self.ids, &self.pool))
            .as_ref()
    }

    /// Per variant, the ridge coefficients of ln(fraction) on
    /// [`Self::inputs`], where [`MIN_FIT`] records measured it.
    fn fit_ridge(&self, variants: usize) -> Vec<Option<Vec<f64>>> {
        let d = self.mean.len() + 1;
        let mut gram = vec![vec![0.0; d * d]; variants];
        let mut rhs = vec![vec![0.0; d]; variants];
        let mut count = vec![0usize; variants];
        for r in &self.pool {
            let a = self.inputs(&r.vector);
            for &(i, frac) in &r.measured {
                let i = i as usize;
                let y = f64::from(frac).max(1e-6).ln();
                for (p, ap) in a.iter().enumerate() {
                    rhs[i][p] += ap * y;
                    for (q, aq) in a.iter().enumerate() {
                        gram[i][p * d + q] += ap * aq;
                    }
                }
                count[i] += 1;
            }
        }
        gram.into_iter()
            .zip(rhs)
            .zip(count)
            .map(|((mut g, b), k)| {
                if k < MIN_FIT {
                    return None;
                }
                for p in 0..d {
                    g[p * d + p] += if p == 0 { 1e-6 } else { RIDGE_PENALTY };
                }
                cholesky_solve(g, b)
            })
            .collect()
    }

    /// Indices into the pool, nearest to `vector` first, with distances.
    fn order(&self, vector: &[f64]) -> Vec<(f64, usize)> {
        let mut near: Vec<(f64, usize)> = self
            .pool
            .iter()
            .enumerate()
            .map(|(i, r)| (distance(&r.vector, vector, &self.scale), i))
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near
    }

    /// Indices into the pool, nearest to `vector` in size first
    /// ([`crate::spmm_records::SIZE_DIMS`] and the width), with distances.
    fn size_order(&self, vector: &[f64]) -> Vec<(f64, usize)> {
        let mut dims: Vec<usize> = SIZE_DIMS
            .iter()
            .copied()
            .chain(self.width_index())
            .filter(|&d| d < vector.len() && d < self.mean.len())
            .collect();
        dims.dedup();
        let distance = |x: &[f64]| {
            dims.iter()
                .map(|&d| ((x[d] - vector[d]) / self.scale[d]).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let mut near: Vec<(f64, usize)> = self
            .pool
            .iter()
            .enumerate()
            .map(|(i, r)| (distance(&r.vector), i))
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0));
        near
    }

    /// The `k` records nearest to `vector` (standardised distance), nearest
    /// first, with their distances.
    pub fn nearest(&self, vector: &[f64], k: usize) -> Vec<(f64, &'a SpmmRecord)> {
        let mut near = self.order(vector);
        near.truncate(k);
        near.into_iter().map(|(d, i)| (d, self.pool[i])).collect()
    }

    /// Per variant over the `order`ed pool, a [`Tally`] of the first
    /// `rule.neighbours` records (and the votes of the first
    /// [`NEIGHBOURS`]), and the sum of those records' weights.
    fn tally(&self, order: &[(f64, usize)], rule: PickRule) -> (Vec<Tally>, f64) {
        let mut acc = vec![Tally::default(); self.variants.len()];
        let mut total = 0.0;
        for (rank, &(_, i)) in order
            .iter()
            .take(rule.neighbours.max(NEIGHBOURS))
            .enumerate()
        {
            let w = if rule.rank_weighted {
                1.0 / (1.0 + rank as f64)
            } else {
                1.0
            };
            if rank < rule.neighbours {
                total += w;
            }
            for &(v, frac) in &self.pool[i].measured {
                let e = &mut acc[v as usize];
                if rank < rule.neighbours {
                    let frac = f64::from(frac);
                    let y = frac.max(1e-6).ln();
                    e.sum += w * frac;
                    e.weight += w;
                    e.log_sum += w * y;
                    e.log_square += w * y * y;
                    e.count += 1;
                }
                e.votes += usize::from(rank < NEIGHBOURS);
            }
        }
        (acc, total)
    }

    /// Per variant, the neighbours' mean fraction and the rule's caution
    /// (a log adjustment: [`PickRule::coverage`] and
    /// [`PickRule::uncertainty`]) where [`MIN_VOTES`] of the nearest
    /// measured it, else (with `rule.size_votes`) the same of the records
    /// nearest in size where as many of those measured it.
    fn neighbour_means(&self, vector: &[f64], rule: PickRule) -> Vec<Option<(f64, f64)>> {
        let mean = |e: &Tally, total: f64| {
            (e.votes >= MIN_VOTES && e.weight > 0.0)
                .then(|| (e.sum / e.weight, e.caution(total, rule)))
        };
        let (near, total) = self.tally(&self.order(vector), rule);
        let sized = rule
            .size_votes
            .then(|| self.tally(&self.size_order(vector), rule));
        near.iter()
            .enumerate()
            .map(|(i, e)| {
                mean(e, total).or_else(|| sized.as_ref().and_then(|(s, t)| mean(&s[i], *t)))
            })
            .collect()
    }

    /// The variants of `space` ranked by `rule`'s score, best first; a
    /// variant needs [`MIN_VOTES`] of the [`NEIGHBOURS`] nearest records to
    /// have measured it (or, with `rule.size_votes`, of the nearest in
    /// size), and a regression where `rule` blends one in.
    pub fn rank(
        &self,
        vector: &[f64],
        space: &[SpmmVariant],
        rule: PickRule,
    ) -> Vec<(SpmmVariant, f64)> {
        let z = self.standardised(vector);
        let a = with_constant(&z);
        let knobs = if rule.knob_share > 0.0 {
            Some((self.knobs(), expand(&z, self.width_index())))
        } else {
            None
        };
        let forest = (rule.forest_share > 0.0).then(|| self.forest()).flatten();
        let mut out: Vec<(SpmmVariant, f64)> = self
            .neighbour_means(vector, rule)
            .into_iter()
            .enumerate()
            .filter_map(|(i, mean)| {
                let (mean, caution) = mean?;
                let v = self.variants[i].filter(|v| space.contains(v))?;
                if rule.ridge_share <= 0.0 && knobs.is_none() && forest.is_none() {
                    return Some((v, mean * caution.exp()));
                }
                let mut score = mean.max(1e-6).ln() + caution;
                if rule.ridge_share > 0.0 {
                    let pred: f64 = self.ridge[i]
                        .as_ref()?
                        .iter()
                        .zip(&a)
                        .map(|(c, x)| c * x)
                        .sum();
                    score = rule.ridge_share * pred + (1.0 - rule.ridge_share) * score;
                }
                if let Some((model, x)) = &knobs {
                    let pred = model.as_ref()?.predict(x, i);
                    score = rule.knob_share * pred + (1.0 - rule.knob_share) * score;
                }
                if let Some(pred) = forest.and_then(|f| f.predict(vector, i)) {
                    score = rule.forest_share * pred + (1.0 - rule.forest_share) * score;
                }
                Some((v, score))
            })
            .collect();
        out.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        if let Some(first) = self.best_group(vector, rule, &out) {
            let g = rule.grouping;
            out.sort_by_cached_key(|(v, _)| g.of(&v.id()) != first);
        }
        out
    }

    /// The group of `ranked`'s variants whose best measured fraction the
    /// `rule.neighbours` nearest records rate highest (rank-weighted as
    /// the rule weighs them); a group counts only where [`MIN_VOTES`] of
    /// those records measured a variant of it. `None` without grouping.
    fn best_group(
        &self,
        vector: &[f64],
        rule: PickRule,
        ranked: &[(SpmmVariant, f64)],
    ) -> Option<String> {
        if rule.grouping == Grouping::None {
            return None;
        }
        let g = rule.grouping;
        let mut acc: BTreeMap<String, (f64, f64, usize)> = ranked
            .iter()
            .map(|(v, _)| (g.of(&v.id()), (0.0, 0.0, 0)))
            .collect();
        for (rank, &(_, i)) in self.order(vector).iter().take(rule.neighbours).enumerate() {
            let w = if rule.rank_weighted {
                1.0 / (1.0 + rank as f64)
            } else {
                1.0
            };
            let mut best: BTreeMap<String, f64> = BTreeMap::new();
            for &(v, frac) in &self.pool[i].measured {
                let e = best.entry(g.of(&self.ids[v as usize])).or_insert(0.0);
                *e = e.max(f64::from(frac));
            }
            for (group, frac) in best {
                if let Some(e) = acc.get_mut(&group) {
                    *e = (e.0 + w * frac, e.1 + w, e.2 + 1);
                }
            }
        }
        acc.into_iter()
            .filter(|(_, e)| e.2 >= MIN_VOTES && e.1 > 0.0)
            .map(|(group, e)| (group, e.0 / e.1))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(group, _)| group)
    }
}

/// One variant's measurements among a pick's nearest records.
#[derive(Debug, Clone, Copy, Default)]
struct Tally {
    /// Weighted sum of the fractions of the rule's neighbours.
    sum: f64,
    /// Sum of those neighbours' weights.
    weight: f64,
    /// Weighted sum of their log fractions.
    log_sum: f64,
    /// Weighted sum of their squared log fractions.
    log_square: f64,
    /// How many of those neighbours measured the variant.
    count: usize,
    /// How many of the first [`NEIGHBOURS`] measured it.
    votes: usize,
}

impl Tally {
    /// The log adjustment `rule` makes to the neighbours' mean: its
    /// coverage weight times the log of the measured share of `total`
    /// (the weight of all the rule's neighbours), less its uncertainty
    /// multiple times the standard error of the log fractions (their
    /// weighted spread over the square root of the count).
    fn caution(&self, total: f64, rule: PickRule) -> f64 {
        let mut out = 0.0;
        if rule.coverage > 0.0 && total > 0.0 {
            out += rule.coverage * (self.weight / total).clamp(1e-6, 1.0).ln();
        }
        if rule.uncertainty > 0.0 && self.weight > 0.0 && self.count > 0 {
            let m = self.log_sum / self.weight;
            let var = (self.log_square / self.weight - m * m).max(0.0);
            out -= rule.uncertainty * var.sqrt() / (self.count as f64).sqrt();
        }
        out
    }
}

/// `[1, z]`.
fn with_constant(z: &[f64]) -> Vec<f64> {
    std::iter::once(1.0).chain(z.iter().copied()).collect()
}

/// Mean and standard deviation per dimension over `pool` (deviation 1
/// where it is 0).
fn moments(pool: &[&SpmmRecord], dims: usize) -> (Vec<f64>, Vec<f64>) {
    let n = pool.len().max(1) as f64;
    (0..dims)
        .map(|d| {
            let mean = pool.iter().map(|r| r.vector[d]).sum::<f64>() / n;
            let var = pool
                .iter()
                .map(|r| (r.vector[d] - mean).powi(2))
                .sum::<f64>()
                / n;
            (mean, if var > 1e-18 { var.sqrt() } else { 1.0 })
        })
        .unzip()
}

fn distance(a: &[f64], b: &[f64], scale: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .zip(scale)
        .map(|((x, y), s)| ((x - y) / s).powi(2))
        .sum::<f64>()
        .sqrt()
}

#[cfg(test)]
mod tests;
