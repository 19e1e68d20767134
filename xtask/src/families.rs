//! The families corpus of `cargo xtask collect --corpus families`: seeded
//! random instances of structure families the training corpus lacked
//! (k-nearest-neighbour graphs, community graphs, arrow and bordered
//! matrices, least-squares and LP-like rectangles, image-like and count
//! matrices, banded with random fill, circuits with rails, R-MAT with several
//! parameter sets), from latency-bound sizes to past the L2 cache. Each
//! instance's generator, parameters and seed become its record's provenance.
//!
//! The generators live here, not in `sparserl-rt::synth`, whose files are
//! part of the generator fingerprint.

mod generators;

use anyhow::Result;
pub use generators::Gen;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sparserl_policies::provenance::Provenance;
use sparserl_rt::{Csr, ValueType};

/// One planned matrix of the corpus (built on demand: [`FamilyMatrix::build`]).
#[derive(Debug, Clone, PartialEq)]
pub struct FamilyMatrix {
    /// Unique name.
    pub name: String,
    /// Structure class (shared with the real matrices' class where the
    /// family imitates one: `circuit`, `least-squares-rect`, `LP-rect`).
    pub class: String,
    /// The value type this instance is measured in.
    pub value: ValueType,
    /// Generator and parameters.
    pub spec: Gen,
    /// Seed given to the generator.
    pub seed: u64,
    /// Size tier: 0 latency-bound, 1 medium, 2 past the L2 cache.
    pub tier: usize,
}

impl FamilyMatrix {
    /// Generates the matrix.
    pub fn build(&self) -> Result<Csr> {
        self.spec.build(self.seed)
    }

    /// The record's provenance.
    pub fn provenance(&self) -> Provenance {
        let mut params = serde_json::to_value(&self.spec).unwrap_or_default();
        if let Some(o) = params.as_object_mut() {
            o.remove("generator");
        }
        Provenance::Generated {
            generator: self.spec.name(),
            params,
            seed: self.seed,
        }
    }
}

/// Target nonzeros of the tiers: latency-bound, medium (in L2), past L2.
const TIER_NNZ: [(f64, f64); 3] = [(2e4, 3e5), (6e5, 4e6), (9e6, 1.6e7)];

/// Families (class, drawer) in corpus order.
type Draw = fn(f64, &mut ChaCha8Rng) -> Gen;
const FAMILIES: [(&str, Draw, bool); 12] = [
    ("knn-graph", draw_knn, true),
    ("community", draw_sbm, true),
    ("arrow", draw_arrow, true),
    ("bordered", draw_bordered, false),
    ("least-squares-rect", draw_lsq, false),
    ("LP-rect", draw_lp, false),
    ("image-conv", draw_conv, false),
    ("image-data", draw_pixels, false),
    ("counts", draw_counts, true),
    ("banded-fill", draw_banded_fill, false),
    ("circuit", draw_rails, true),
    ("kronecker", draw_rmat, true),
];

/// Families added after the twelve above, drawn after all of their
/// instances so that an earlier seed's instances of the twelve are unchanged:
/// (class, drawer, instances in each of the latency-bound and medium tiers).
const LATER_FAMILIES: [(&str, Draw, usize); 1] = [("dense-rows", draw_dense_rows, 4)];

fn lu(rng: &mut ChaCha8Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + rng.random::<f64>() * (hi.ln() - lo.ln())).exp()
}

fn draw_knn(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let k = [4, 6, 8, 12, 16][r.random_range(0..5)];
    Gen::Knn {
        points: (nnz / (k + 1) as f64) as usize,
        dim: r.random_range(2..=3),
        k,
        shuffled: r.random(),
    }
}
fn draw_sbm(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let degree = lu(r, 4.0, 48.0);
    Gen::Sbm {
        nodes: (nnz / degree) as usize,
        communities: lu(r, 4.0, 2000.0) as usize,
        degree,
        degree_cv: r.random_range(0.1..1.5),
        mix: r.random_range(0.02..0.4),
        size_skew: r.random_range(0.0..1.5),
        ordered: r.random(),
    }
}
fn draw_arrow(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let band = r.random_range(0..=4);
    let border = r.random_range(1..=8);
    Gen::Arrow {
        rows: (nnz / (2 * band + 1 + 2 * border) as f64) as usize,
        band,
        border,
    }
}
fn draw_bordered(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let block = lu(r, 8.0, 96.0) as usize;
    let density = r.random_range(0.05..0.5);
    Gen::Bordered {
        blocks: ((nnz / (block as f64 * block as f64 * density)) as usize).max(2),
        block,
        density,
        border: r.random_range(4..=64),
        border_density: r.random_range(0.001..0.05),
    }
}
fn draw_lsq(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let per_row = r.random_range(2..=24);
    let rows = (nnz / per_row as f64) as usize;
    Gen::LeastSquares {
        rows,
        cols: (rows as f64 / r.random_range(1.5..20.0)) as usize,
        per_row,
        spread: lu(r, 2.0, 5000.0) as usize,
    }
}
fn draw_lp(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let per_row = lu(r, 3.0, 60.0);
    let rows = (nnz / per_row) as usize;
    Gen::Lp {
        rows,
        cols: (rows as f64 * r.random_range(1.2..6.0)) as usize,
        per_row,
        col_skew: r.random_range(0.3..1.4),
        dense_rows: r.random_range(0..=4),
    }
}
fn draw_conv(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let radius = r.random_range(1..=3);
    let side = (nnz / ((2 * radius + 1) as f64).powi(2)).sqrt();
    let aspect: f64 = r.random_range(0.5..2.0);
    Gen::Conv {
        height: (side * aspect.sqrt()) as usize,
        width: (side / aspect.sqrt()) as usize,
        radius,
        holes: r.random_range(0.0..0.4),
    }
}
fn draw_pixels(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let side = [16, 28, 32, 64][r.random_range(0..4)];
    let fill = r.random_range(0.1..0.5);
    let per = (side * side) as f64 * fill * 0.6;
    Gen::Pixels {
        samples: (nnz / per).max(2.0) as usize,
        height: side,
        width: side,
        fill,
    }
}
fn draw_counts(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let per_row = lu(r, 20.0, 3000.0);
    let rows = ((nnz / per_row) as usize).max(16);
    Gen::Counts {
        rows,
        cols: (lu(r, 2000.0, 60000.0) as usize).max(per_row as usize * 2),
        per_row,
        row_cv: r.random_range(0.3..1.2),
        col_skew: r.random_range(0.5..1.3),
    }
}
fn draw_banded_fill(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let bandwidth = lu(r, 4.0, 400.0) as usize;
    let fill = r.random_range(0.05..0.9);
    let per = 1.0 + 2.0 * bandwidth as f64 * fill;
    Gen::BandedFill {
        rows: (nnz / per) as usize,
        bandwidth,
        fill,
        off_band: r.random_range(0.0..0.1),
    }
}
fn draw_rails(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    let local = r.random_range(1..=6);
    let rails = r.random_range(1..=12);
    let rail_density = r.random_range(0.001..0.05);
    let per = 1.0 + (local as f64 + 1.0) / 2.0 + 2.0 * rails as f64 * rail_density;
    Gen::Rails {
        rows: (nnz / per) as usize,
        local,
        rails,
        rail_density,
    }
}
fn draw_dense_rows(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    // Square to 4:1 either way; at most 60% dense.
    let aspect = lu(r, 0.25, 4.0);
    let density = lu(r, 0.02, 0.6);
    let rows = ((nnz / (density * aspect)).sqrt() as usize).max(8);
    Gen::DenseRows {
        rows,
        cols: ((rows as f64 * aspect) as usize).max(8),
        density,
        row_cv: r.random_range(0.0..1.0),
    }
}
fn draw_rmat(nnz: f64, r: &mut ChaCha8Rng) -> Gen {
    // Graph500, a social-like, a very skewed and a nearly uniform set.
    let sets = [
        (0.57, 0.19, 0.19),
        (0.45, 0.22, 0.22),
        (0.7, 0.12, 0.12),
        (0.3, 0.25, 0.25),
    ];
    let (a, b, c) = sets[r.random_range(0..4)];
    let edge_factor = r.random_range(4..=32);
    let scale = (nnz / edge_factor as f64).log2().round().clamp(8.0, 24.0) as u32;
    Gen::Rmat {
        scale,
        edge_factor,
        a,
        b,
        c,
        shuffled: r.random(),
    }
}

/// The corpus: per family two latency-bound and two medium instances (one
/// f32, one f64 each) and, for the families marked large, one f32 instance
/// past the L2 cache; then the later families' instances (f32 and f64
/// alternating); ordered small to large so `--max-seconds` trims the large
/// ones first. `quick` divides every size by 16 (smoke runs).
pub fn corpus(seed: u64, quick: bool) -> Vec<FamilyMatrix> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for tier in 0..TIER_NNZ.len() {
        for (fi, (class, draw, large)) in FAMILIES.iter().enumerate() {
            let n = match tier {
                0 | 1 => 2,
                _ => usize::from(*large),
            };
            for i in 0..n {
                out.push(instance(
                    &mut rng,
                    (seed, quick),
                    (tier, fi, i),
                    class,
                    *draw,
                ));
            }
        }
    }
    for tier in 0..2 {
        for (k, (class, draw, n)) in LATER_FAMILIES.iter().enumerate() {
            for i in 0..*n {
                let fi = FAMILIES.len() + k;
                out.push(instance(
                    &mut rng,
                    (seed, quick),
                    (tier, fi, i),
                    class,
                    *draw,
                ));
            }
        }
    }
    // Stable: within a tier the order of the draws.
    out.sort_by_key(|m| m.tier);
    out
}

/// Draws one instance: the corpus's (seed, quick), its (tier, family index,
/// instance index); odd instances below tier 2 are f64.
fn instance(
    rng: &mut ChaCha8Rng,
    (seed, quick): (u64, bool),
    (tier, fi, i): (usize, usize, usize),
    class: &str,
    draw: Draw,
) -> FamilyMatrix {
    let (lo, hi) = TIER_NNZ[tier];
    let nnz = lu(rng, lo, hi) / if quick { 16.0 } else { 1.0 };
    let spec = draw(nnz, rng);
    let s = seed * 1000 + (tier * 100 + fi * 4 + i) as u64;
    let value = if tier < 2 && i % 2 == 1 {
        ValueType::F64
    } else {
        ValueType::F32
    };
    FamilyMatrix {
        name: format!("fam-{}-{}-t{tier}-{i}", spec.name(), s),
        class: class.to_string(),
        value,
        spec,
        seed: s,
        tier,
    }
}

#[cfg(test)]
mod tests;
