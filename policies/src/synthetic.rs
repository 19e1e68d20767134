//! A synthetic dataset from a hidden ground-truth cost function, for
//! developing and testing training before (or without) measured data.
//!
//! Matrices are drawn per structure class with analytic feature vectors
//! (row lengths modelled as log-normal); every variant of the core space
//! gets a GB/s from a step-count model in the spirit of SpMV on a large GPU
//! (lane utilisation within warps, critical path of the longest row, atomics
//! of nnz-split, latency floor for small matrices, `__ldg` helping scattered
//! `x`, unrolling helping long rows, block size mattering for small grids),
//! with different constants from the [`crate::Prior`], multiplicative noise
//! and a few incorrect results. It is NOT a measurement: never train a
//! committed policy on it.

use crate::dataset::{Dataset, MatrixRecord};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sparserl_rt::{Features, Strategy, ValueType, Variant};

/// Structure classes drawn.
pub const CLASSES: [&str; 7] = [
    "stencil",
    "banded",
    "power-law",
    "uniform",
    "block",
    "road-network",
    "long-rows",
];

fn erf(x: f64) -> f64 {
    // Abramowitz-Stegun 7.1.26.
    let t = 1.0 / (1.0 + 0.3275911 * x.abs());
    let y = 1.0
        - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
            + 0.254829592)
            * t
            * (-x * x).exp();
    if x >= 0.0 { y } else { -y }
}

/// Feature vector of a matrix with `rows` rows, mean row length `m` and
/// log-normal row lengths of coefficient of variation `cv`.
fn features(rows: f64, m: f64, cv: f64, diag: f64, xseg: f64, b4: f64) -> Features {
    let s = (cv * cv).ln_1p().sqrt();
    let p50 = m * (-s * s / 2.0).exp();
    let q = |z: f64| (p50 * (s * z).exp()).round().max(0.0);
    let max_row = (p50 * (s * (2.0 * rows.ln()).sqrt()).exp())
        .round()
        .min(rows)
        .max(m.ceil());
    let min_row = q(-3.0).min(p50.floor());
    let empty = if min_row < 1.0 {
        0.5 * (1.0 + erf(((0.5f64).ln() - p50.ln()) / (s.max(1e-6) * 2f64.sqrt())))
    } else {
        0.0
    };
    Features {
        rows,
        cols: rows,
        nnz: (rows * m).round(),
        density: m / rows,
        mean_row: m,
        std_row: cv * m,
        cv_row: cv,
        min_row,
        max_row,
        p50_row: p50.round(),
        p90_row: q(1.2816),
        p99_row: q(2.3263),
        gini_row: erf(s / 2.0),
        empty_share: empty.clamp(0.0, 1.0),
        max_over_mean: max_row / m,
        diag_dist: diag,
        x_segments_per_nnz: xseg,
        block4_density: b4,
    }
}

fn loguniform(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

/// One shape parameter of a class: fixed, or drawn uniformly from a range.
#[derive(Clone, Copy)]
enum Param {
    Fixed(f64),
    Uniform(f64, f64),
}

impl Param {
    fn draw(self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            Param::Fixed(v) => v,
            Param::Uniform(a, b) => a + rng.random::<f64>() * (b - a),
        }
    }
}

/// Draws the features of one matrix of `class`.
pub fn draw(class: &str, rng: &mut ChaCha8Rng) -> Features {
    use Param::{Fixed as F, Uniform as U};
    // Each class: mean row length m, then rows r, then the remaining
    // arguments of `features` [cv, diag, xseg, b4], drawn in that order.
    let (m, r, params) = match class {
        "stencil" => {
            let m = [5.0, 7.0, 9.0, 27.0][rng.random_range(0..4)];
            let r = loguniform(rng, 1e4, 8e6);
            let p = [F(0.05), F(0.001), U(0.05, 0.2), U(0.2, 0.4)];
            (m * 0.98, r, p)
        }
        "banded" => {
            let m = loguniform(rng, 8.0, 128.0);
            let r = loguniform(rng, 1e4, 4e6);
            let p = [U(0.05, 0.3), F(0.002), U(0.03, 0.1), U(0.3, 0.6)];
            (m, r, p)
        }
        "power-law" => {
            let m = loguniform(rng, 3.0, 40.0);
            let r = loguniform(rng, 5e4, 4e6);
            let p = [U(1.5, 8.0), U(0.2, 0.35), U(0.6, 1.0), U(0.07, 0.1)];
            (m, r, p)
        }
        "uniform" => {
            let m = loguniform(rng, 1.5, 600.0);
            let r = loguniform(rng, 2e3, 2e6).min(2e8 / m);
            let p = [F(1.0 / m.sqrt()), F(0.33), U(0.8, 1.0), F(0.0625)];
            (m, r, p)
        }
        "block" => {
            let m = loguniform(rng, 8.0, 64.0);
            let r = loguniform(rng, 1e4, 1e6);
            let p = [U(0.1, 0.6), U(0.05, 0.2), U(0.05, 0.2), U(0.8, 1.0)];
            (m, r, p)
        }
        "road-network" => {
            let m = U(2.2, 3.0).draw(rng);
            let r = loguniform(rng, 1e5, 2e7);
            let p = [U(0.3, 0.5), U(0.01, 0.1), U(0.4, 0.8), U(0.07, 0.12)];
            (m, r, p)
        }
        _ => {
            let m = loguniform(rng, 500.0, 20000.0);
            let r = loguniform(rng, 200.0, 2e4);
            let p = [U(0.05, 1.0), F(0.3), U(0.1, 0.9), U(0.1, 1.0)];
            (m.min(r), r, p)
        }
    };
    let [cv, diag, xseg, b4] = params.map(|p| p.draw(rng));
    features(r, m, cv, diag, xseg, b4)
}

fn quantile(f: &Features, q: f64) -> f64 {
    let pts = [
        (0.5, f.p50_row),
        (0.9, f.p90_row.max(f.p50_row)),
        (0.99, f.p99_row.max(f.p90_row)),
        (1.0, f.max_row.max(f.p99_row)),
    ];
    let q = q.clamp(0.5, 1.0);
    for w in pts.windows(2) {
        if q <= w[1].0 {
            return w[0].1 + (w[1].1 - w[0].1) * (q - w[0].0) / (w[1].0 - w[0].0);
        }
    }
    pts[3].1
}

/// The hidden ground truth: fraction of copy bandwidth of `v` on `f`.
pub fn truth(v: &Variant, f: &Features, value: ValueType) -> f64 {
    let m = f.mean_row.max(1e-9);
    let wide = value == ValueType::F64;
    // Lanes busy at once; fewer with 8-byte values (register pressure).
    let lanes_busy = if wide { 180_000.0 } else { 240_000.0 };
    let w = (f.nnz / lanes_busy).max(1e-9);
    let (eff, crit) = match v.strategy {
        Strategy::ThreadPerRow | Strategy::GroupPerRow => {
            let l = if v.strategy == Strategy::ThreadPerRow {
                1.0
            } else {
                v.lanes as f64
            };
            let k = 32.0 / l;
            let qk = quantile(f, 1.0 - 1.0 / (k + 1.0)).max(m);
            let mut e = m / (l * (qk / l + 0.7).max(1.0));
            // Uncoalesced row reads for few lanes on long rows.
            e *= 0.5 + 0.5 / (1.0 + (m / (6.0 * l)).max(0.0)).sqrt().max(1.0);
            // Shuffle reduction cost grows with lanes.
            e /= 1.0 + 0.02 * l.log2();
            (e, f.max_row / l + l.log2())
        }
        Strategy::BlockPerRow => {
            let b = v.block as f64;
            let e = m / (b * (m / b).ceil().max(1.0)) * 0.9;
            (e, f.max_row / b + 12.0)
        }
        Strategy::NnzSplit => {
            let items = v.items as f64;
            let best = if wide { 4.0 } else { 8.0 };
            let mismatch = (items / best).log2().abs();
            let atomics = 1.0 / (1.0 + 0.8 * (items / m).min(1.0) / items.sqrt());
            (
                0.78 * atomics / (1.0 + 0.06 * mismatch),
                items + f.rows.max(2.0).log2() / 6.0,
            )
        }
        // The synthetic world models the core (CSR) space only; layout
        // strategies are very slow in it.
        Strategy::Diagonal
        | Strategy::Binned
        | Strategy::Tiled
        | Strategy::Narrow
        | Strategy::Sell => (1e-9, f.max_row),
    };
    let mut frac = w / ((w / eff.max(1e-9)).max(crit).max(1.0) + 2.0);
    // __ldg helps when x is gathered from scattered segments.
    let scatter = f.x_segments_per_nnz.clamp(0.0, 1.0);
    frac *= if v.ldg_x { 1.0 } else { 1.0 - 0.15 * scatter };
    // Small grids want small blocks, large ones 256.
    let blocks_needed = f.nnz / (v.block as f64 * 4.0);
    frac *= match v.block {
        128 => {
            if blocks_needed < 2000.0 {
                1.0
            } else {
                0.97
            }
        }
        256 => 0.99,
        _ => {
            if blocks_needed < 2000.0 {
                0.9
            } else {
                0.98
            }
        }
    };
    if v.strategy != Strategy::NnzSplit {
        let per_lane = m / match v.strategy {
            Strategy::GroupPerRow => v.lanes as f64,
            Strategy::BlockPerRow => v.block as f64,
            _ => 1.0,
        };
        frac *= match v.unroll {
            1 => 1.0,
            u => {
                if per_lane >= 2.0 * u as f64 {
                    1.0 + 0.03 * (u as f64).log2()
                } else {
                    0.96
                }
            }
        };
    }
    frac.clamp(1e-5, 1.0)
}

/// A synthetic dataset: `per_class` matrices of every class in
/// [`CLASSES`], each for f32 and f64, every variant of the policy space
/// (the tiled ones, outside the synthetic world's model, as very slow).
pub fn dataset(seed: u64, per_class: usize) -> Dataset {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let variants = crate::net::policy_space();
    let copy_gbs = 4000.0;
    let mut matrices = Vec::new();
    for class in CLASSES {
        for i in 0..per_class {
            let f = draw(class, &mut rng);
            for value in ValueType::ALL {
                let results = variants
                    .iter()
                    .enumerate()
                    .map(|(idx, v)| {
                        let noise: f64 = (rng.random::<f64>() - 0.5) * 0.08;
                        let gbs = copy_gbs * truth(v, &f, value) * noise.exp();
                        if rng.random::<f64>() < 0.01 {
                            (idx, 0.0, 0.3, false)
                        } else {
                            (idx, gbs, 1e-7, true)
                        }
                    })
                    .collect();
                matrices.push(MatrixRecord {
                    energy: Vec::new(),
                    name: format!("{class}-{i}"),
                    class: class.to_string(),
                    value,
                    features: f.to_vec().to_vec(),
                    results,
                    cannot_run: Vec::new(),
                    provenance: None,
                });
            }
        }
    }
    Dataset {
        gpu: "synthetic".into(),
        copy_gbs,
        date: "synthetic".into(),
        command: format!("synthetic::dataset({seed}, {per_class})"),
        feature_names: Features::NAMES.iter().map(|s| s.to_string()).collect(),
        variants,
        matrices,
    }
}
