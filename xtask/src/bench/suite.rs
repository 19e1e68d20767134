//! The large synthetic suite.

use super::*;

/// How a large synthetic matrix is generated: the shared vocabulary of
/// synthetic families.
pub use sparserl_rt::synth::Family as Gen;

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

impl LargeSpec {
    /// Nonzeros computed from the parameters without generating (exact for
    /// stencils, the expectation for random generators).
    pub fn expected_nnz(&self) -> u64 {
        self.gen_.expected_nnz().unwrap_or(0)
    }

    /// Generates the matrix (deterministic for a seed).
    pub fn build(&self, seed: u64) -> Result<Csr> {
        Ok(self.gen_.build(seed)?)
    }
}

/// The skewed family (see [`Gen::Skewed`]).
#[cfg(test)]
pub(super) fn skewed(rows: usize, huge: usize, huge_len: usize, seed: u64) -> Result<Csr> {
    LargeSpec {
        name: "skewed",
        class: "skewed",
        gen_: Gen::Skewed {
            rows,
            huge,
            huge_len,
        },
    }
    .build(seed)
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
                avg_degree: 12.0,
            },
        },
        LargeSpec {
            name: "power-law",
            class: "power-law",
            gen_: Gen::PowerLaw {
                rows: 4_000_000 / d,
                avg_degree: 10.0,
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
                avg_degree: 16.0,
            },
        },
        LargeSpec {
            name: "short-rows",
            class: "short-rows",
            gen_: Gen::Uniform {
                rows: 16_000_000 / d,
                cols: 16_000_000 / d,
                avg_degree: 2.0,
            },
        },
        LargeSpec {
            name: "long-rows",
            class: "long-rows",
            gen_: Gen::Uniform {
                rows: 10_000 / d,
                cols: 2_000_000 / (d / 8).max(1),
                avg_degree: 4000.0,
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
