//! The one vocabulary of synthetic matrix families.
//!
//! A descriptor's synthetic `pattern` kinds, the benchmark's large and
//! irregular suites, the retune corpus and the checks all name their
//! matrices as a [`Family`] and generate them with [`Family::build`], so a
//! family has one definition, one generator and one label format.
//!
//! ```
//! use sparserl_rt::synth::Family;
//! let f = Family::Banded { rows: 1000, bandwidth: 8, avg_degree: 5.0 };
//! let a = f.build(7).unwrap();
//! assert_eq!(a.rows(), 1000);
//! assert_eq!(f.label(7), "banded 1000 rows, bandwidth 8, avg-degree 5, seed 7");
//! assert_eq!(f.expected_nnz(), Some(5000));
//! ```

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{SynthError, invalid};
use crate::csr::Csr;

/// A family of synthetic matrices and its parameters (the seed is given
/// to [`Family::build`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Family {
    /// [`super::stencil`]: a 2-D or 3-D finite-difference stencil (no seed).
    Stencil {
        /// Grid sizes (2 or 3 entries).
        grid: Vec<usize>,
        /// Stencil points: 5 / 9 in 2-D, 7 / 27 in 3-D.
        points: usize,
    },
    /// [`super::banded`]: random entries within a band (square).
    Banded {
        /// Rows.
        rows: usize,
        /// Band half-width.
        bandwidth: usize,
        /// Mean nonzeros per row.
        avg_degree: f64,
    },
    /// [`super::power_law`]: power-law row lengths, uniform columns (square).
    PowerLaw {
        /// Rows.
        rows: usize,
        /// Mean nonzeros per row.
        avg_degree: f64,
        /// Pareto exponent (> 1).
        exponent: f64,
    },
    /// A power-law matrix made structurally symmetric (`A + Aᵀ`): heavy
    /// tails in rows and columns, like a social or web graph.
    PowerLawGraph {
        /// Rows.
        rows: usize,
        /// Mean nonzeros per row of `A` before symmetrising.
        avg_degree: f64,
        /// Pareto exponent (> 1).
        exponent: f64,
    },
    /// [`super::uniform`]: uniformly random entries.
    Uniform {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
        /// Mean nonzeros per row.
        avg_degree: f64,
    },
    /// [`super::block`]: dense blocks at random block columns (square).
    Block {
        /// Rows.
        rows: usize,
        /// Block size `[r, c]`.
        block: [usize; 2],
        /// Blocks per block row.
        blocks_per_row: usize,
    },
    /// Square; row `r` has `2 + r % 5` random nonzeros, except `huge`
    /// evenly spread rows of `huge_len` nonzeros each.
    Skewed {
        /// Rows.
        rows: usize,
        /// Number of huge rows.
        huge: usize,
        /// Nonzeros of a huge row.
        huge_len: usize,
    },
    /// [`super::irregular::rmat`]: a Graph500-style recursive graph.
    Rmat {
        /// log2 of the vertex count.
        scale: u32,
        /// Directed edges per vertex before symmetrising.
        edge_factor: usize,
    },
    /// [`super::irregular::mesh_2d`]: a randomly numbered triangulated grid.
    Mesh2d {
        /// Grid width.
        nx: usize,
        /// Grid height.
        ny: usize,
    },
    /// [`super::irregular::mesh_3d`]: a randomly numbered tetrahedral grid.
    Mesh3d {
        /// Grid side.
        n: usize,
    },
    /// [`super::irregular::road`]: a randomly numbered planar road-like graph.
    Road {
        /// Grid width.
        nx: usize,
        /// Grid height.
        ny: usize,
    },
    /// [`super::irregular::circuit`]: near-diagonal entries plus dense rows
    /// and columns.
    Circuit {
        /// Rows.
        rows: usize,
    },
}

impl Family {
    /// Generates the matrix (deterministic for a seed; stencils ignore it).
    pub fn build(&self, seed: u64) -> Result<Csr, SynthError> {
        use super::irregular;
        match self {
            Family::Stencil { grid, points } => super::stencil(grid, *points),
            Family::Banded {
                rows,
                bandwidth,
                avg_degree,
            } => super::banded(*rows, *bandwidth, *avg_degree, seed),
            Family::PowerLaw {
                rows,
                avg_degree,
                exponent,
            } => super::power_law(*rows, *avg_degree, *exponent, seed),
            Family::PowerLawGraph {
                rows,
                avg_degree,
                exponent,
            } => symmetrize(&super::power_law(*rows, *avg_degree, *exponent, seed)?),
            Family::Uniform {
                rows,
                cols,
                avg_degree,
            } => super::uniform(*rows, *cols, *avg_degree, seed),
            Family::Block {
                rows,
                block,
                blocks_per_row,
            } => super::block(*rows, *block, *blocks_per_row, seed),
            Family::Skewed {
                rows,
                huge,
                huge_len,
            } => skewed(*rows, *huge, *huge_len, seed),
            Family::Rmat { scale, edge_factor } => irregular::rmat(*scale, *edge_factor, seed),
            Family::Mesh2d { nx, ny } => irregular::mesh_2d(*nx, *ny, seed),
            Family::Mesh3d { n } => irregular::mesh_3d(*n, seed),
            Family::Road { nx, ny } => irregular::road(*nx, *ny, seed),
            Family::Circuit { rows } => irregular::circuit(*rows, seed),
        }
    }

    /// Whether the seed changes the matrix (all but stencils).
    pub fn is_seeded(&self) -> bool {
        !matches!(self, Family::Stencil { .. })
    }

    /// A readable label of one instance (stable: build messages show it).
    pub fn label(&self, seed: u64) -> String {
        match self {
            Family::Stencil { grid, points } => {
                let dims: Vec<String> = grid.iter().map(|g| g.to_string()).collect();
                format!("stencil {} {points}-pt", dims.join("x"))
            }
            Family::Banded {
                rows,
                bandwidth,
                avg_degree,
            } => format!(
                "banded {rows} rows, bandwidth {bandwidth}, avg-degree {avg_degree}, seed {seed}"
            ),
            Family::PowerLaw {
                rows,
                avg_degree,
                exponent,
            } => format!(
                "power-law {rows} rows, avg-degree {avg_degree}, exponent {exponent}, seed {seed}"
            ),
            Family::PowerLawGraph {
                rows,
                avg_degree,
                exponent,
            } => format!(
                "power-law graph {rows} vertices, avg-degree {avg_degree}, exponent {exponent}, seed {seed}"
            ),
            Family::Uniform {
                rows,
                cols,
                avg_degree,
            } => format!("uniform {rows}x{cols}, avg-degree {avg_degree}, seed {seed}"),
            Family::Block {
                rows,
                block,
                blocks_per_row,
            } => format!(
                "block {rows} rows, {}x{} blocks, {blocks_per_row} per row, seed {seed}",
                block[0], block[1]
            ),
            Family::Skewed {
                rows,
                huge,
                huge_len,
            } => format!("skewed {rows} rows, {huge} rows of {huge_len}, seed {seed}"),
            Family::Rmat { scale, edge_factor } => {
                format!("rmat scale {scale}, edge factor {edge_factor}, seed {seed}")
            }
            Family::Mesh2d { nx, ny } => format!("mesh-2d {nx}x{ny}, seed {seed}"),
            Family::Mesh3d { n } => format!("mesh-3d {n}^3, seed {seed}"),
            Family::Road { nx, ny } => format!("road {nx}x{ny}, seed {seed}"),
            Family::Circuit { rows } => format!("circuit {rows} rows, seed {seed}"),
        }
    }

    /// Nonzeros computed from the parameters without generating: exact for
    /// stencils, the expectation for the random row lengths of banded,
    /// power-law and uniform ones, an upper bound for skewed ones (their
    /// short rows merge repeated columns); `None` where only generating
    /// tells (graphs and meshes).
    pub fn expected_nnz(&self) -> Option<u64> {
        match self {
            Family::Uniform {
                rows, avg_degree, ..
            }
            | Family::PowerLaw {
                rows, avg_degree, ..
            }
            | Family::Banded {
                rows, avg_degree, ..
            } => Some((*rows as f64 * avg_degree).round() as u64),
            Family::Stencil { grid, points } => {
                let n: Vec<u64> = if grid.len() == 2 {
                    vec![1, grid[0] as u64, grid[1] as u64]
                } else {
                    grid.iter().map(|&g| g as u64).collect()
                };
                let size: u64 = n.iter().product();
                Some(if *points == 9 || *points == 27 {
                    n.iter().map(|&x| 3 * x - 2).product()
                } else {
                    size + n.iter().map(|&x| 2 * (x - 1) * (size / x)).sum::<u64>()
                })
            }
            Family::Skewed {
                rows,
                huge,
                huge_len,
            } => Some(
                (0..*rows)
                    .map(|r| {
                        if skewed_is_huge(r, *rows, *huge) {
                            *huge_len as u64
                        } else {
                            2 + (r % 5) as u64
                        }
                    })
                    .sum(),
            ),
            _ => None,
        }
    }
}

/// Whether row `r` of a skewed matrix is one of its `huge` rows.
fn skewed_is_huge(r: usize, rows: usize, huge: usize) -> bool {
    let every = (rows / huge.max(1)).max(1);
    r % every == every / 2 && r / every < huge
}

/// The generator of [`Family::Skewed`].
fn skewed(rows: usize, huge: usize, huge_len: usize, seed: u64) -> Result<Csr, SynthError> {
    let cols = rows;
    if rows < 8 {
        return Err(invalid("rows", "must be at least 8"));
    }
    if huge_len == 0 || huge_len > cols {
        return Err(invalid("huge_len", format!("must be in 1..={cols}")));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cap = rows * 4 + huge * huge_len;
    super::check_dims(rows, cols, cap as u64)?;
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices: Vec<u32> = Vec::with_capacity(cap);
    let mut values: Vec<f64> = Vec::with_capacity(cap);
    indptr.push(0u32);
    let step = cols / huge_len;
    for r in 0..rows {
        if skewed_is_huge(r, rows, huge) {
            for j in 0..huge_len {
                indices.push((j * step + rng.random_range(0..step.max(1))) as u32);
            }
        } else {
            let mut row: Vec<u32> = (0..2 + r % 5)
                .map(|_| rng.random_range(0..cols) as u32)
                .collect();
            row.sort_unstable();
            row.dedup();
            indices.extend(row);
        }
        while values.len() < indices.len() {
            values.push(rng.random_range(-1.0..1.0));
        }
        indptr.push(indices.len() as u32);
    }
    Ok(Csr::try_new(rows, cols, indptr, indices, values)?)
}

/// `A + Aᵀ` (pattern; the value of `A` where present, else of `Aᵀ`).
fn symmetrize(a: &Csr) -> Result<Csr, SynthError> {
    let mut t: Vec<(u32, u32, f64)> = Vec::with_capacity(2 * a.nnz());
    for r in 0..a.rows() {
        let (s, e) = (a.indptr()[r] as usize, a.indptr()[r + 1] as usize);
        for (&c, &v) in a.indices()[s..e].iter().zip(&a.values()[s..e]) {
            t.push((r as u32, c, v));
            if c as usize != r {
                t.push((c, r as u32, v));
            }
        }
    }
    // Stable: an entry of A comes before its mirror, and dedup keeps the first.
    t.sort_by_key(|&(r, c, _)| (r, c));
    t.dedup_by_key(|e| (e.0, e.1));
    Ok(Csr::from_triplets(a.rows(), a.cols(), &t)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_builds_and_is_deterministic() {
        let all = [
            Family::Stencil {
                grid: vec![7, 5],
                points: 5,
            },
            Family::Banded {
                rows: 500,
                bandwidth: 10,
                avg_degree: 4.0,
            },
            Family::PowerLaw {
                rows: 500,
                avg_degree: 6.0,
                exponent: 2.2,
            },
            Family::PowerLawGraph {
                rows: 500,
                avg_degree: 3.0,
                exponent: 2.2,
            },
            Family::Uniform {
                rows: 300,
                cols: 400,
                avg_degree: 5.0,
            },
            Family::Block {
                rows: 64,
                block: [4, 4],
                blocks_per_row: 2,
            },
            Family::Skewed {
                rows: 1000,
                huge: 4,
                huge_len: 300,
            },
            Family::Rmat {
                scale: 9,
                edge_factor: 8,
            },
            Family::Mesh2d { nx: 12, ny: 9 },
            Family::Mesh3d { n: 5 },
            Family::Road { nx: 12, ny: 10 },
            Family::Circuit { rows: 400 },
        ];
        for f in &all {
            let a = f.build(3).unwrap();
            assert_eq!(a, f.build(3).unwrap(), "{f:?}");
            if let Some(n) = f.expected_nnz() {
                let exact = matches!(f, Family::Stencil { .. });
                let tol = if exact { 0.0 } else { 0.15 * n as f64 };
                assert!(
                    (a.nnz() as f64 - n as f64).abs() <= tol,
                    "{f:?}: {} vs {n}",
                    a.nnz()
                );
            }
            assert!(!f.label(3).is_empty());
        }
    }

    #[test]
    fn skewed_has_its_huge_rows_and_the_graph_is_symmetric() {
        let m = Family::Skewed {
            rows: 1000,
            huge: 4,
            huge_len: 300,
        }
        .build(1)
        .unwrap();
        let huge = (0..m.rows()).filter(|&r| m.row_len(r) == 300).count();
        assert_eq!(huge, 4);
        let g = Family::PowerLawGraph {
            rows: 300,
            avg_degree: 4.0,
            exponent: 2.1,
        }
        .build(2)
        .unwrap();
        let has = |r: usize, c: u32| {
            g.indices()[g.indptr()[r] as usize..g.indptr()[r + 1] as usize].contains(&c)
        };
        for r in 0..g.rows() {
            for &c in &g.indices()[g.indptr()[r] as usize..g.indptr()[r + 1] as usize] {
                assert!(has(c as usize, r as u32));
            }
        }
        assert!(
            Family::Skewed {
                rows: 4,
                huge: 1,
                huge_len: 2
            }
            .build(0)
            .is_err()
        );
    }
}
