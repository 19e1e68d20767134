//! The large irregular suite (graphs and meshes whose `x` gathers are
//! irregular, most in a random numbering) and the same-order comparison
//! that separates a renumbering's gain from the kernel's.

use super::*;
use sparserl_rt::synth::irregular;

/// How a matrix of the irregular suite is generated.
#[derive(Debug, Clone, PartialEq)]
pub enum IrregularGen {
    /// `irregular::rmat` (Graph500-style, scrambled ids).
    Rmat {
        /// log2 of the vertex count
        scale: u32,
        /// directed edges per vertex before symmetrising
        edge_factor: usize,
    },
    /// `synth::power_law` made structurally symmetric (`A + Aᵀ`): heavy
    /// tails in rows and columns, random numbering.
    PowerLawSym {
        /// rows
        rows: usize,
        /// mean nonzeros per row of `A` before symmetrising
        avg: f64,
        /// Pareto exponent
        exponent: f64,
    },
    /// `irregular::mesh_2d`, randomly numbered.
    Mesh2d {
        /// grid side
        n: usize,
    },
    /// `irregular::mesh_3d`, randomly numbered.
    Mesh3d {
        /// grid side
        n: usize,
    },
    /// `irregular::road`, randomly numbered.
    Road {
        /// grid side
        n: usize,
    },
    /// `irregular::circuit` (dense rows and columns, near-diagonal rest).
    Circuit {
        /// rows
        rows: usize,
    },
}

/// One matrix of the irregular suite.
#[derive(Debug, Clone, PartialEq)]
pub struct IrregularSpec {
    /// Name in reports.
    pub name: &'static str,
    /// Structure class.
    pub class: &'static str,
    /// Generator.
    pub gen_: IrregularGen,
}

/// `A + Aᵀ` (pattern; values of `A` where present, else of `Aᵀ`).
fn symmetrize(a: &Csr) -> Result<Csr> {
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
    t.sort_unstable_by_key(|&(r, c, _)| (r, c));
    t.dedup_by_key(|e| (e.0, e.1));
    Ok(Csr::from_triplets(a.rows(), a.cols(), &t)?)
}

impl IrregularSpec {
    /// Generates the matrix (deterministic for a seed).
    pub fn build(&self, seed: u64) -> Result<Csr> {
        Ok(match &self.gen_ {
            IrregularGen::Rmat { scale, edge_factor } => {
                irregular::rmat(*scale, *edge_factor, seed)?
            }
            IrregularGen::PowerLawSym {
                rows,
                avg,
                exponent,
            } => symmetrize(&sparserl_rt::synth::power_law(
                *rows, *avg, *exponent, seed,
            )?)?,
            IrregularGen::Mesh2d { n } => irregular::mesh_2d(*n, *n, seed)?,
            IrregularGen::Mesh3d { n } => irregular::mesh_3d(*n, seed)?,
            IrregularGen::Road { n } => irregular::road(*n, *n, seed)?,
            IrregularGen::Circuit { rows } => irregular::circuit(*rows, seed)?,
        })
    }
}

/// The large irregular suite: 7-30 M nonzeros each, 1-2.3 M rows (about
/// 1/64 of the rows with `quick`).
pub fn irregular_suite(quick: bool) -> Vec<IrregularSpec> {
    let d = if quick { 64 } else { 1 };
    let (g2, g3) = if quick { (8, 4) } else { (1, 1) };
    vec![
        IrregularSpec {
            name: "rmat-s20",
            class: "recursive",
            gen_: IrregularGen::Rmat {
                scale: if quick { 14 } else { 20 },
                edge_factor: 16,
            },
        },
        IrregularSpec {
            name: "power-law-sym-2.2",
            class: "power-law-graph",
            gen_: IrregularGen::PowerLawSym {
                rows: 1_500_000 / d,
                avg: 6.0,
                exponent: 2.2,
            },
        },
        IrregularSpec {
            name: "power-law-sym-2.8",
            class: "power-law-graph",
            gen_: IrregularGen::PowerLawSym {
                rows: 1_500_000 / d,
                avg: 6.0,
                exponent: 2.8,
            },
        },
        IrregularSpec {
            name: "mesh-2d-random",
            class: "mesh",
            gen_: IrregularGen::Mesh2d { n: 1400 / g2 },
        },
        IrregularSpec {
            name: "mesh-3d-random",
            class: "mesh",
            gen_: IrregularGen::Mesh3d { n: 110 / g3 },
        },
        IrregularSpec {
            name: "road-random",
            class: "road",
            gen_: IrregularGen::Road { n: 1500 / g2 },
        },
        IrregularSpec {
            name: "circuit",
            class: "circuit",
            gen_: IrregularGen::Circuit {
                rows: 2_000_000 / d,
            },
        },
    ]
}

/// For a renumbered winner: the host cost of its ordering, our kernel alone
/// on the renumbered matrix (no permutation) and cuSPARSE's best algorithm
/// on that same renumbered matrix. For a winner in the given order the
/// same-order numbers are the given-order ones. Errors become notes.
pub(super) fn same_order<T: Scalar>(
    ctx: &Ctx,
    csr: &Csr,
    winner: Option<Variant>,
    row: &mut Row,
) -> Result<()> {
    let Some(w) = winner else { return Ok(()) };
    row.reorder = Some(w.reorder.as_str().to_string());
    if w.reorder.is_none() {
        row.ours_kernel_same_order_gbs = row.ours_gbs;
        row.cusparse_same_order_gbs = row.cusparse_gbs;
        row.speedup_same_order = ratio(row.ours_gbs, row.cusparse_gbs);
        return Ok(());
    }
    let t = Instant::now();
    let Some(p) = w.reorder.permutation(csr) else {
        return Ok(());
    };
    let b = p
        .apply(csr)
        .context("the permutation does not fit the matrix")?;
    row.reorder_host_seconds = Some(t.elapsed().as_secs_f64());
    let gpu = ctx.tuner.gpu();
    let bench = Bench::<T>::new(gpu, &b).context("uploading the renumbered matrix")?;
    let m = measure_ours(ctx, &bench, &w.kernel())?;
    if m.correct {
        row.ours_kernel_same_order_gbs = Some(m.gbs);
    } else {
        row.notes.push(format!(
            "our kernel on the renumbered matrix failed: {}",
            m.error.unwrap_or_default()
        ));
    }
    let x: Vec<T> = random_x(b.cols(), 0x0b5e_55ed);
    let x64: Vec<f64> = x.iter().map(|v| v.to_f64()).collect();
    let reference = b.spmv_f64(&x64);
    let mut tmp = Row::default();
    match CusparseSpmv::new(gpu, bench.device_csr(), &x, bench.copies()) {
        Err(e) => row.notes.push(format!(
            "cuSPARSE setup on the renumbered matrix failed: {e:#}"
        )),
        Ok(mut cs) => {
            run_cusparse(ctx, &mut cs, &b, &reference, &mut tmp)?;
        }
    }
    row.cusparse_same_order_gbs = tmp.cusparse_gbs;
    row.cusparse_same_order_alg = tmp.cusparse_alg;
    row.speedup_same_order = ratio(row.ours_kernel_same_order_gbs, row.cusparse_same_order_gbs);
    Ok(())
}
