//! The large synthetic suite.

use super::*;

/// How a large synthetic matrix is generated.
#[derive(Debug, Clone, PartialEq)]
pub enum Gen {
    /// `synth::uniform`.
    Uniform {
        /// rows
        rows: usize,
        /// columns
        cols: usize,
        /// mean nonzeros per row
        avg: f64,
    },
    /// `synth::power_law` (square).
    PowerLaw {
        /// rows
        rows: usize,
        /// mean nonzeros per row
        avg: f64,
        /// Pareto exponent
        exponent: f64,
    },
    /// `synth::stencil`.
    Stencil {
        /// grid dimensions
        grid: Vec<usize>,
        /// stencil points
        points: usize,
    },
    /// `synth::banded`.
    Banded {
        /// rows
        rows: usize,
        /// half bandwidth
        bandwidth: usize,
        /// mean nonzeros per row
        avg: f64,
    },
    /// Square; row `r` has `2 + r % 5` random nonzeros, except `huge` evenly
    /// spread rows with `huge_len` nonzeros each.
    Skewed {
        /// rows
        rows: usize,
        /// number of huge rows
        huge: usize,
        /// nonzeros of a huge row
        huge_len: usize,
    },
}

/// One matrix of the large suite.
#[derive(Debug, Clone, PartialEq)]
pub struct LargeSpec {
    /// Name in reports.
    pub name: &'static str,
    /// Structure class.
    pub class: &'static str,
    /// Generator.
    pub gen_: Gen,
}

pub(super) fn skewed_is_huge(r: usize, rows: usize, huge: usize) -> bool {
    let every = (rows / huge.max(1)).max(1);
    r % every == every / 2 && r / every < huge
}

impl LargeSpec {
    /// Nonzeros, computed from the parameters without generating (exact for
    /// stencils, the expectation for random generators).
    pub fn expected_nnz(&self) -> u64 {
        match &self.gen_ {
            Gen::Uniform { rows, avg, .. }
            | Gen::PowerLaw { rows, avg, .. }
            | Gen::Banded { rows, avg, .. } => (*rows as f64 * avg).round() as u64,
            Gen::Stencil { grid, points } => {
                let n: Vec<u64> = if grid.len() == 2 {
                    vec![1, grid[0] as u64, grid[1] as u64]
                } else {
                    grid.iter().map(|&g| g as u64).collect()
                };
                let size: u64 = n.iter().product();
                if *points == 9 || *points == 27 {
                    n.iter().map(|&x| 3 * x - 2).product()
                } else {
                    size + n.iter().map(|&x| 2 * (x - 1) * (size / x)).sum::<u64>()
                }
            }
            Gen::Skewed {
                rows,
                huge,
                huge_len,
            } => {
                // Short rows cycle through 2..=6 nonzeros.
                (0..*rows)
                    .map(|r| {
                        if skewed_is_huge(r, *rows, *huge) {
                            *huge_len as u64
                        } else {
                            2 + (r % 5) as u64
                        }
                    })
                    .sum()
            }
        }
    }

    /// Generates the matrix (deterministic for a seed).
    pub fn build(&self, seed: u64) -> Result<Csr> {
        use sparserl_rt::synth;
        let csr = match &self.gen_ {
            Gen::Uniform { rows, cols, avg } => synth::uniform(*rows, *cols, *avg, seed)?,
            Gen::PowerLaw {
                rows,
                avg,
                exponent,
            } => synth::power_law(*rows, *avg, *exponent, seed)?,
            Gen::Stencil { grid, points } => synth::stencil(grid, *points)?,
            Gen::Banded {
                rows,
                bandwidth,
                avg,
            } => synth::banded(*rows, *bandwidth, *avg, seed)?,
            Gen::Skewed {
                rows,
                huge,
                huge_len,
            } => skewed(*rows, *huge, *huge_len, seed)?,
        };
        Ok(csr)
    }
}

/// The skewed generator of [`Gen::Skewed`].
pub(super) fn skewed(rows: usize, huge: usize, huge_len: usize, seed: u64) -> Result<Csr> {
    let cols = rows;
    anyhow::ensure!(huge_len <= cols && rows >= 8, "skewed matrix too small");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let cap = rows * 4 + huge * huge_len;
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices: Vec<u32> = Vec::with_capacity(cap);
    let mut values: Vec<f64> = Vec::with_capacity(cap);
    indptr.push(0u32);
    let step = cols / huge_len.max(1);
    for r in 0..rows {
        if skewed_is_huge(r, rows, huge) {
            for j in 0..huge_len {
                indices.push((j * step + rng.random_range(0..step.max(1))) as u32);
            }
        } else {
            let start = indices.len();
            for _ in 0..2 + r % 5 {
                indices.push(rng.random_range(0..cols) as u32);
            }
            indices[start..].sort_unstable();
            let mut kept = start;
            for i in start..indices.len() {
                if i == start || indices[i] != indices[kept - 1] {
                    indices[kept] = indices[i];
                    kept += 1;
                }
            }
            indices.truncate(kept);
        }
        while values.len() < indices.len() {
            values.push(rng.random_range(-1.0..1.0));
        }
        indptr.push(u32::try_from(indices.len()).context("skewed matrix too large")?);
    }
    Ok(Csr::try_new(rows, cols, indptr, indices, values)?)
}

/// The large synthetic suite: every matrix 20-110 M nonzeros (about 1/64 of
/// that with `quick`).
pub fn large_suite(quick: bool) -> Vec<LargeSpec> {
    let d = if quick { 64 } else { 1 };
    let (g2, g3) = if quick { (8, 4) } else { (1, 1) };
    vec![
        LargeSpec {
            name: "uniform-random",
            class: "uniform",
            gen_: Gen::Uniform {
                rows: 4_000_000 / d,
                cols: 4_000_000 / d,
                avg: 12.0,
            },
        },
        LargeSpec {
            name: "power-law",
            class: "power-law",
            gen_: Gen::PowerLaw {
                rows: 4_000_000 / d,
                avg: 10.0,
                exponent: 2.5,
            },
        },
        LargeSpec {
            name: "stencil-2d-5pt",
            class: "stencil",
            gen_: Gen::Stencil {
                grid: vec![3000 / g2, 3000 / g2],
                points: 5,
            },
        },
        LargeSpec {
            name: "stencil-3d-27pt",
            class: "stencil",
            gen_: Gen::Stencil {
                grid: vec![130 / g3, 130 / g3, 130 / g3],
                points: 27,
            },
        },
        LargeSpec {
            name: "banded",
            class: "banded",
            gen_: Gen::Banded {
                rows: 4_000_000 / d,
                bandwidth: 100,
                avg: 16.0,
            },
        },
        LargeSpec {
            name: "short-rows",
            class: "short-rows",
            gen_: Gen::Uniform {
                rows: 16_000_000 / d,
                cols: 16_000_000 / d,
                avg: 2.0,
            },
        },
        LargeSpec {
            name: "long-rows",
            class: "long-rows",
            gen_: Gen::Uniform {
                rows: 10_000 / d,
                cols: 2_000_000 / (d / 8).max(1),
                avg: 4000.0,
            },
        },
        LargeSpec {
            name: "skewed-huge-rows",
            class: "skewed",
            gen_: Gen::Skewed {
                rows: 8_000_000 / d,
                huge: 8,
                huge_len: 1_000_000 / d,
            },
        },
    ]
}
