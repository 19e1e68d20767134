//! The large graphs of `bench spmm`: generated on the machine that runs the
//! benchmark (seeded, deterministic), in the numbering a graph code would
//! hand over.

use anyhow::{Context, Result};
use sparserl_rt::Csr;
use sparserl_rt::reorder::Reorder;
use sparserl_rt::synth::Family;

/// One generated graph.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphSpec {
    /// Name in reports.
    pub name: &'static str,
    /// Structure class.
    pub class: &'static str,
    /// Generator.
    pub family: Family,
    /// Numbering applied after generating (`Reorder::None`: as generated).
    pub order: Reorder,
}

impl GraphSpec {
    /// Generates the graph and applies its numbering (deterministic for a seed).
    pub fn build(&self, seed: u64) -> Result<Csr> {
        let a = self
            .family
            .build(seed)
            .with_context(|| format!("generating {}", self.name))?;
        if self.order == Reorder::None {
            return Ok(a);
        }
        let p = self
            .order
            .permutation(&a)
            .with_context(|| format!("{} has no {} order", self.name, self.order.as_str()))?;
        p.apply(&a)
            .with_context(|| format!("renumbering {}", self.name))
    }
}

/// Seed of the first large graph; graph `i` of an unfiltered run uses
/// `SEED_BASE + i`.
pub const SEED_BASE: u64 = 0x5b_a000;

/// The full-size large graph called `name` as an unfiltered benchmark run
/// generates it (`None`: no such graph).
pub fn generate(name: &str) -> Option<Result<Csr>> {
    let all = large_graphs(false);
    let i = all.iter().position(|s| s.name == name)?;
    Some(all[i].build(SEED_BASE + i as u64))
}

/// The large graphs: 1M-vertex R-MAT and power-law graphs in degree order
/// (hubs first, as graph libraries often store them), uniform random
/// 1M x 1M with 16 per row, a randomly numbered 2-D mesh, and a GNN-sized
/// power-law graph of about 2.5M nodes and 60M edges as generated. `quick`:
/// about 1/64 of the rows, for a smoke run.
pub fn large_graphs(quick: bool) -> Vec<GraphSpec> {
    let d = if quick { 64 } else { 1 };
    vec![
        GraphSpec {
            name: "rmat-1M-degree",
            class: "recursive",
            family: Family::Rmat {
                scale: if quick { 14 } else { 20 },
                edge_factor: 8,
            },
            order: Reorder::Degree,
        },
        GraphSpec {
            name: "power-law-hubs-1M-degree",
            class: "power-law-graph",
            family: Family::PowerLawGraph {
                rows: 1_000_000 / d,
                avg_degree: 8.0,
                exponent: 2.1,
            },
            order: Reorder::Degree,
        },
        GraphSpec {
            name: "uniform-1M-16",
            class: "uniform",
            family: Family::Uniform {
                rows: 1_000_000 / d,
                cols: 1_000_000 / d,
                avg_degree: 16.0,
            },
            order: Reorder::None,
        },
        GraphSpec {
            name: "mesh-2d-random",
            class: "mesh",
            family: Family::Mesh2d {
                nx: 1000 / if quick { 8 } else { 1 },
                ny: 1000 / if quick { 8 } else { 1 },
            },
            order: Reorder::None,
        },
        GraphSpec {
            name: "gnn-2.5M-60M",
            class: "power-law-graph",
            family: Family::PowerLawGraph {
                rows: 2_500_000 / d,
                avg_degree: 12.5,
                exponent: 2.3,
            },
            order: Reorder::None,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_graphs_build_in_their_order() {
        for s in large_graphs(true) {
            if s.name == "gnn-2.5M-60M" {
                continue; // the largest; its family is the power-law graph above
            }
            let a = s.build(1).unwrap();
            assert_eq!(a.rows(), a.cols(), "{}", s.name);
            assert!(a.nnz() > a.rows(), "{}: {} nonzeros", s.name, a.nnz());
            if s.order == Reorder::Degree {
                // Degree order puts the longest rows first.
                let first = a.row_len(0);
                let max = (0..a.rows()).map(|r| a.row_len(r)).max().unwrap();
                assert!(
                    first * 2 >= max,
                    "{}: first row {first}, longest {max}",
                    s.name
                );
            }
        }
        let names: std::collections::HashSet<_> =
            large_graphs(false).iter().map(|s| s.name).collect();
        assert_eq!(names.len(), 5);
    }
}
