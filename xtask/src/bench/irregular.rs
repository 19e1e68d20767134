//! The large irregular suite (graphs and meshes whose `x` gathers are
//! irregular, most in a random numbering) and the same-order comparison
//! that separates a renumbering's gain from the kernel's.

use super::*;
use sparserl_rt::synth::Family;

/// One matrix of the irregular suite.
#[derive(Debug, Clone, PartialEq)]
pub struct IrregularSpec {
    /// Name in reports.
    pub name: &'static str,
    /// Structure class.
    pub class: &'static str,
    /// Generator.
    pub gen_: Family,
}

impl IrregularSpec {
    /// Generates the matrix (deterministic for a seed).
    pub fn build(&self, seed: u64) -> Result<Csr> {
        Ok(self.gen_.build(seed)?)
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
            gen_: Family::Rmat {
                scale: if quick { 14 } else { 20 },
                edge_factor: 16,
            },
        },
        IrregularSpec {
            name: "power-law-sym-2.2",
            class: "power-law-graph",
            gen_: Family::PowerLawGraph {
                rows: 1_500_000 / d,
                avg_degree: 6.0,
                exponent: 2.2,
            },
        },
        IrregularSpec {
            name: "power-law-sym-2.8",
            class: "power-law-graph",
            gen_: Family::PowerLawGraph {
                rows: 1_500_000 / d,
                avg_degree: 6.0,
                exponent: 2.8,
            },
        },
        IrregularSpec {
            name: "mesh-2d-random",
            class: "mesh",
            gen_: Family::Mesh2d {
                nx: 1400 / g2,
                ny: 1400 / g2,
            },
        },
        IrregularSpec {
            name: "mesh-3d-random",
            class: "mesh",
            gen_: Family::Mesh3d { n: 110 / g3 },
        },
        IrregularSpec {
            name: "road-random",
            class: "road",
            gen_: Family::Road {
                nx: 1500 / g2,
                ny: 1500 / g2,
            },
        },
        IrregularSpec {
            name: "circuit",
            class: "circuit",
            gen_: Family::Circuit {
                rows: 2_000_000 / d,
            },
        },
    ]
}

/// For a renumbered winner: the host cost of its ordering, our kernel alone
/// on the renumbered matrix (no permutation) and cuSPARSE's best algorithm
/// on that same renumbered matrix, and that matrix's gather floor. For a
/// winner in the given order the same-order numbers are the given-order
/// ones. Errors become notes.
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
        row.gather_floor_same_order_gbs = row.gather_floor_gbs;
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
    let reference = b.spmv_f64(&x64)?;
    let mut tmp = Row::default();
    match CusparseSpmv::new(gpu, bench.device_csr(), &x, bench.copies()) {
        Err(e) => row.notes.push(format!(
            "cuSPARSE setup on the renumbered matrix failed: {e:#}"
        )),
        Ok(mut cs) => {
            run_cusparse(ctx, &mut cs, &b, &reference, &mut tmp)?;
        }
    }
    super::gather::floor_same_order::<T>(ctx, &bench, row);
    row.cusparse_same_order_gbs = tmp.cusparse_gbs;
    row.cusparse_same_order_alg = tmp.cusparse_alg;
    row.speedup_same_order = ratio(row.ours_kernel_same_order_gbs, row.cusparse_same_order_gbs);
    Ok(())
}
