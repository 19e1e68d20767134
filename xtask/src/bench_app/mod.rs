//! `cargo xtask bench-app`: whole iterations on the GPU. CG and PageRank
//! with our tuned kernels and fused epilogues (`sparserl_rt::solvers`) side
//! by side with the same algorithms written with cuSPARSE + cuBLAS
//! ([`crate::app_vendor`]: the graph-captured device-pointer form and the
//! textbook host-synchronised form), plus the fused-epilogue and graph-replay
//! checks. Writes `app-h200.json` and `app-h200.md` into `--out`.

pub mod check;
pub mod energy;
pub mod gcn;
pub mod kernel;
mod plot;
pub mod shipped;
#[cfg(test)]
mod tests;

use crate::app_vendor;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sparserl_build::search::SearchConfig;
use sparserl_rt::solvers::{self, Cg, CgOptions, PageRankOptions};
use sparserl_rt::{Csr, DeviceVec, Epilogue, Features, Gpu, Scalar, SpmvKernel, synth};
use std::path::PathBuf;

/// Arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output folder.
    #[arg(long, default_value = "docs/benchmarks")]
    pub out: PathBuf,
    /// CG iterations timed (both sides run exactly this many).
    #[arg(long, default_value_t = 200)]
    pub cg_iters: usize,
    /// PageRank iterations timed.
    #[arg(long, default_value_t = 50)]
    pub pr_iters: usize,
    /// Measured-search budget per matrix, seconds.
    #[arg(long, default_value_t = 6.0)]
    pub budget: f64,
    /// Folder of real graphs (Matrix Market) for PageRank.
    #[arg(long, default_value = ".device/matrices")]
    pub matrices: PathBuf,
    /// Real graphs to run PageRank on (file stems in --matrices).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "wiki-Vote,email-Enron,facebook_combined,polblogs,PGPgiantcompo,astro-ph,cnr-2000"
    )]
    pub graphs: Vec<String>,
    /// Recorded in the JSON: the commit that was built.
    #[arg(long, default_value = "unknown")]
    pub commit: String,
    /// Skip the fused-epilogue check.
    #[arg(long)]
    pub no_check: bool,
    /// Only rewrite `app-h200.md` and `app-h200.svg` from this JSON report.
    #[arg(long, value_name = "JSON")]
    pub replot: Option<PathBuf>,
    /// Hidden width of the GCN layers (`H W` is nodes x width times width x width).
    #[arg(long, default_value_t = 128)]
    pub gcn_width: usize,
    /// Real graphs of the GCN layer besides the GNN-sized generated one
    /// (file stems in --matrices).
    #[arg(long, value_delimiter = ',', default_value = "cnr-2000")]
    pub gcn_graphs: Vec<String>,
    /// Our GCN layer on the graph renumbered this way (`Â` and the features
    /// stored renumbered; the vendor layer in the given order), the row
    /// conversions of a forward pass timed apart.
    #[arg(long, value_enum, default_value = "none")]
    pub gcn_reorder: crate::bench_spmm::args::ReorderArg,
    /// Skip the GCN layers.
    #[arg(long)]
    pub no_gcn: bool,
    /// Run only the GCN layers and merge them into the existing
    /// `<out>/app-h200.json` (its other sections and keys are kept).
    #[arg(long, conflicts_with = "no_gcn")]
    pub gcn_only: bool,
    /// Also measure joules per CG and PageRank iteration, ours and
    /// cuSPARSE + cuBLAS (graph form), through NVML: about 2 s per case
    /// (some 20 s on a full run of about 95 s).
    #[arg(long)]
    pub energy: bool,
}

/// Time per iteration of ours and of the vendor's two forms, and of our
/// SpMV alone and fused (shared by the CG and PageRank cases).
#[derive(Debug, Serialize, Deserialize)]
struct Timing {
    ours_us_per_iter: f64,
    vendor_graph_us_per_iter: f64,
    vendor_textbook_us_per_iter: f64,
    speedup_vs_graph: f64,
    speedup_vs_textbook: f64,
    spmv_us: f64,
    spmv_fused_us: f64,
}

impl Timing {
    fn new(ours: f64, graph: f64, textbook: f64, spmv: f64, fused: f64) -> Timing {
        Timing {
            ours_us_per_iter: ours,
            vendor_graph_us_per_iter: graph,
            vendor_textbook_us_per_iter: textbook,
            speedup_vs_graph: graph / ours,
            speedup_vs_textbook: textbook / ours,
            spmv_us: spmv,
            spmv_fused_us: fused,
        }
    }
}

/// One CG case.
#[derive(Debug, Serialize, Deserialize)]
struct CgCase {
    name: String,
    value: String,
    rows: usize,
    nnz: usize,
    variant: String,
    #[serde(flatten)]
    t: Timing,
    iterations: usize,
    ours_rel_residual: f64,
    vendor_rel_residual: f64,
    converge_iterations: usize,
    converge_rel_residual: f64,
    ours_matrix_bytes: usize,
    ours_work_bytes: usize,
    vendor_matrix_bytes: usize,
    vendor_spmv_buffer_bytes: usize,
    memory_ratio: f64,
    floor_us_per_iter: f64,
    /// Joules per iteration, both sides (`--energy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    energy: Option<energy::IterEnergy>,
}

/// One PageRank case.
#[derive(Debug, Serialize, Deserialize)]
struct PrCase {
    name: String,
    n: usize,
    nnz: usize,
    variant: String,
    #[serde(flatten)]
    t: Timing,
    iterations: usize,
    ours_l1_vs_cpu: f64,
    vendor_l1_vs_cpu: f64,
    ours_matrix_bytes: usize,
    vendor_device_bytes: usize,
    floor_us_per_iter: f64,
    /// Host seconds of the renumbering at upload (null: given order); the
    /// solver converts its vectors once and iterates in that order.
    #[serde(default)]
    reorder_host_seconds: Option<f64>,
    /// The gather floor of one SpMV of the matrix in its given order (the
    /// microbenchmark of `xtask bench`), microseconds; null when not measured.
    #[serde(default)]
    gather_floor_spmv_us: Option<f64>,
    /// Joules per iteration, both sides (`--energy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    energy: Option<energy::IterEnergy>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Summary {
    cg_poisson3d_f64_speedup: f64,
    cg_poisson2d_f32_speedup: f64,
    pagerank_powerlaw_f32_speedup: f64,
    pagerank_real_geomean_speedup: f64,
    poisson3d_memory_ratio: f64,
    /// Vendor / ours time of one GCN layer on the GNN-sized graph.
    #[serde(default)]
    gcn_layer_speedup: Option<f64>,
    /// Geometric mean of the same over the real graphs.
    #[serde(default)]
    gcn_layer_speedup_real: Option<f64>,
    /// Geomean over the CG cases of vendor joules per iteration / ours
    /// (`--energy`; null when not measured).
    #[serde(default)]
    cg_energy_ratio: Option<f64>,
    /// The same over the PageRank cases.
    #[serde(default)]
    pagerank_energy_ratio: Option<f64>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Report {
    gpu: String,
    commit: String,
    policy: String,
    command: String,
    copy_gbs: f64,
    cg: Vec<CgCase>,
    pagerank: Vec<PrCase>,
    fused_check: Option<check::FusedCheck>,
    /// GCN layers `relu(Â H W + b)`.
    #[serde(default)]
    gcn: Vec<gcn::GcnCase>,
    /// The commit the GCN layers were measured at (`--gcn-only` merges
    /// them into a report of another commit).
    #[serde(default)]
    gcn_commit: Option<String>,
    summary: Summary,
}

/// The measured search's winner for `a` (the product's build path).
fn tune(
    tuner: &sparserl_build::GpuTuner,
    a: &Csr,
    value: sparserl_rt::ValueType,
    budget: f64,
    epilogue: Epilogue,
) -> Result<sparserl_rt::Variant> {
    let policy = sparserl_policies::default_policy();
    let proposals: Vec<_> = policy
        .propose(&Features::compute(a), value, 16)
        .into_iter()
        .map(|p| p.variant)
        .collect();
    let cfg = SearchConfig {
        budget_seconds: budget,
        ..SearchConfig::default()
    };
    let out = tuner
        .tune_with(&[a], value, &proposals, &cfg, Some(epilogue))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!("  tuned: {} ({:.0} GB/s)", out.winner.id(), out.gbs);
    Ok(out.winner)
}

/// Microseconds per call of `f` replayed from a CUDA graph of 20 calls
/// (after one warm-up replay; median of 7 replays).
fn time_graph<'a>(
    gpu: &Gpu,
    mut f: impl FnMut() -> Result<(), sparserl_rt::RtError> + 'a,
) -> Result<f64> {
    f()?;
    gpu.synchronize()?;
    let graph = gpu.capture(|| {
        for _ in 0..20 {
            f()?;
        }
        Ok(())
    })?;
    graph.launch(gpu)?;
    gpu.synchronize()?;
    let mut t = Vec::new();
    for _ in 0..7 {
        let s = std::time::Instant::now();
        graph.launch(gpu)?;
        gpu.synchronize()?;
        t.push(s.elapsed().as_secs_f64() * 1e6 / 20.0);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[3])
}

fn true_residual(a: &Csr, x: &[f64], b: &[f64]) -> f64 {
    let Ok(ax) = a.spmv_f64(x) else {
        return f64::NAN;
    };
    let r: f64 = ax
        .iter()
        .zip(b)
        .map(|(u, v)| (u - v).powi(2))
        .sum::<f64>()
        .sqrt();
    let bn: f64 = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    r / bn.max(1e-300)
}

fn cg_case<T: Scalar>(
    (gpu, tuner, meter): (&Gpu, &sparserl_build::GpuTuner, Option<&energy::Energy>),
    name: &str,
    a: &Csr,
    args: &Args,
    copy_gbs: f64,
) -> Result<CgCase> {
    eprintln!(
        "CG {name}: {} rows, {} nonzeros, {}",
        a.rows(),
        a.nnz(),
        T::TYPE
    );
    let variant = tune(tuner, a, T::TYPE, args.budget, Epilogue::Dot)?;
    let k = kernel::build::<T>(name, &variant, &[Epilogue::Dot], &gpu.arch())?;
    let da = k.upload_lean(gpu, a)?;
    let n = a.rows();
    let x_true: Vec<f64> = (0..n).map(|i| ((i % 97) as f64 / 97.0).sin()).collect();
    let b = a.spmv_f64(&x_true)?;
    let bt: Vec<T> = b.iter().map(|&v| T::from_f64(v)).collect();
    let db = DeviceVec::from_host(gpu, &bt)?;
    let mut cg = Cg::new(gpu, &k, &da, None)?;
    // Fixed iterations, timed.
    let mut x = DeviceVec::<T>::zeros(gpu, n)?;
    let fixed = CgOptions {
        tol: 0.0,
        max_iters: args.cg_iters,
        chunk: 50,
    };
    let rep = cg.solve(gpu, &da, &db, &mut x, &fixed)?;
    let ours_us = rep.seconds * 1e6 / rep.launched.max(1) as f64;
    let xs: Vec<f64> = x.to_host(gpu)?.iter().map(|v| v.to_f64()).collect();
    let ours_res = true_residual(a, &xs, &b);
    // To convergence.
    let mut x2 = DeviceVec::<T>::zeros(gpu, n)?;
    let tol = if T::TYPE == sparserl_rt::ValueType::F64 {
        1e-8
    } else {
        1e-5
    };
    let conv = cg.solve(
        gpu,
        &da,
        &db,
        &mut x2,
        &CgOptions {
            tol,
            max_iters: 5000,
            chunk: 25,
        },
    )?;
    let xs2: Vec<f64> = x2.to_host(gpu)?.iter().map(|v| v.to_f64()).collect();
    let conv_res = true_residual(a, &xs2, &b);
    // The SpMV alone and with its fused dot, to separate kernel from updates.
    let mut q = DeviceVec::<T>::zeros(gpu, n)?;
    let spmv_us = time_graph(gpu, || k.spmv(gpu, &da.internal(), &x, &mut q))?;
    let pq = sparserl_rt::DeviceScalar::new(gpu)?;
    let spmv_fused_us = time_graph(gpu, || k.spmv_dot(gpu, &da.internal(), &x, &mut q, &pq))?;
    let v = app_vendor::run_cg::<T>(gpu, a, &b, rep.launched, 50)?;
    let vsize = std::mem::size_of::<T>();
    let matrix_bytes = da.total_device_bytes();
    // Floor: the matrix as we hold it, plus 10 vector passes (SpMV: p, q;
    // r update: q, r, r; x/p update: x, p, r, x, p).
    let floor_bytes = matrix_bytes + 10 * n * vsize;
    let ours_mem = matrix_bytes;
    let vendor_mem = v.device_bytes;
    eprintln!(
        "  ours {ours_us:.1} us/iter, vendor graph {:.1}, textbook {:.1}; residual {ours_res:.2e} vs {:.2e}",
        v.graph_us_per_iter, v.textbook_us_per_iter, v.rel_residual
    );
    let energy = match meter {
        None => None,
        Some(m) => {
            let mut vcg = app_vendor::VendorCg::<T>::new(gpu, a, &b)?;
            let opts = |n| CgOptions {
                tol: 0.0,
                max_iters: n,
                chunk: 50,
            };
            Some(m.case(
                (ours_us, &mut |n| {
                    Ok(cg.solve(gpu, &da, &db, &mut x2, &opts(n))?.launched as u64)
                }),
                (v.graph_us_per_iter, &mut |n| {
                    vcg.time_graph(n, 50)?;
                    Ok(n as u64)
                }),
                50,
            )?)
        }
    };
    Ok(CgCase {
        name: name.into(),
        value: T::TYPE.to_string(),
        rows: n,
        nnz: a.nnz(),
        variant: variant.id(),
        t: Timing::new(
            ours_us,
            v.graph_us_per_iter,
            v.textbook_us_per_iter,
            spmv_us,
            spmv_fused_us,
        ),
        iterations: rep.launched,
        ours_rel_residual: ours_res,
        vendor_rel_residual: v.rel_residual,
        converge_iterations: conv.iterations,
        converge_rel_residual: conv_res,
        ours_matrix_bytes: ours_mem,
        ours_work_bytes: cg.device_bytes() + 2 * n * vsize,
        vendor_matrix_bytes: v.csr_bytes,
        vendor_spmv_buffer_bytes: v.spmv_buffer_bytes,
        memory_ratio: ours_mem as f64 / vendor_mem.max(1) as f64,
        floor_us_per_iter: floor_bytes as f64 / (copy_gbs * 1e3),
        energy,
    })
}

/// The column-stochastic link matrix of a graph: nonzero (i, j) is a link
/// j -> i, value 1 / outdeg(j).
pub(crate) fn link_matrix(g: &Csr) -> Result<Csr> {
    let mut outdeg = vec![0u32; g.cols()];
    for &j in g.indices() {
        outdeg[j as usize] += 1;
    }
    let values = g
        .indices()
        .iter()
        .map(|&j| 1.0 / outdeg[j as usize] as f64)
        .collect();
    Ok(Csr::try_new(
        g.rows(),
        g.cols(),
        g.indptr().to_vec(),
        g.indices().to_vec(),
        values,
    )?)
}

fn cpu_pagerank(m: &Csr, mask: &[f64], d: f64, iters: usize) -> Vec<f64> {
    let n = m.rows();
    let mut x = vec![1.0 / n as f64; n];
    for _ in 0..iters {
        let dangling: f64 = x.iter().zip(mask).map(|(a, b)| a * b).sum();
        let Ok(y) = m.spmv_f64(&x) else {
            return Vec::new();
        };
        let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
        x = y.iter().map(|v| base + d * v).collect();
    }
    x
}

fn pr_case(
    (gpu, tuner, meter): (&Gpu, &sparserl_build::GpuTuner, Option<&energy::Energy>),
    name: &str,
    m: &Csr,
    args: &Args,
    copy_gbs: f64,
) -> Result<PrCase> {
    eprintln!("PageRank {name}: {} pages, {} links", m.rows(), m.nnz());
    let variant = tune(
        tuner,
        m,
        sparserl_rt::ValueType::F32,
        args.budget,
        Epilogue::AxpbyDot,
    )?;
    let k = kernel::build::<f32>(name, &variant, &[Epilogue::AxpbyDot], &gpu.arch())?;
    let dm = k.upload_lean(gpu, m)?;
    let n = m.rows();
    let mask = solvers::dangling_mask(m);
    let maskf: Vec<f32> = mask.iter().map(|&v| v as f32).collect();
    let dmask = DeviceVec::from_host(gpu, &maskf)?;
    let mut x = DeviceVec::from_host(gpu, &vec![1.0f32 / n as f32; n])?;
    let opts = PageRankOptions {
        damping: 0.85,
        tol: 0.0,
        max_iters: args.pr_iters,
        chunk: 10,
    };
    // Warm-up solve (module load, graph upload), then the timed one.
    solvers::pagerank(gpu, &k, &dm, &dmask, &mut x, &opts)?;
    x.copy_from_host(gpu, &vec![1.0f32 / n as f32; n])?;
    let rep = solvers::pagerank(gpu, &k, &dm, &dmask, &mut x, &opts)?;
    let ours_us = rep.seconds * 1e6 / rep.iterations.max(1) as f64;
    let reference = cpu_pagerank(m, &mask, 0.85, rep.iterations);
    let l1 = |v: &[f32]| -> f64 {
        v.iter()
            .zip(&reference)
            .map(|(a, b)| (*a as f64 - b).abs())
            .sum()
    };
    let ours_l1 = l1(&x.to_host(gpu)?);
    let mut y = DeviceVec::<f32>::zeros(gpu, n)?;
    // The kernel as the solver runs it: in the matrix's stored order.
    let spmv_us = time_graph(gpu, || k.spmv(gpu, &dm.internal(), &x, &mut y))?;
    let coefs =
        sparserl_rt::DeviceCoefs::with_gamma_dot(gpu, 0.85, 0.0, 0.15 / n as f64, 0.85 / n as f64)?;
    let dd = sparserl_rt::DeviceScalar::new(gpu)?;
    let spmv_fused_us = time_graph(gpu, || {
        k.spmv_fused(
            gpu,
            &dm.internal(),
            &x,
            &mut y,
            sparserl_rt::Fused::AxpbyDot {
                coefs: &coefs,
                w: &dmask,
                dot: &dd,
            },
        )
    })?;
    let dangling: Vec<u32> = (0..n as u32).filter(|&j| mask[j as usize] != 0.0).collect();
    let v = app_vendor::run_pagerank(gpu, m, &dangling, 0.85, rep.iterations, 10)?;
    let vendor_l1 = l1(&v.x);
    let floor_bytes = dm.total_device_bytes() + 4 * n * 4;
    let gather_floor_spmv_us = gather_floor_us(gpu, m);
    eprintln!(
        "  ours {ours_us:.1} us/iter, vendor graph {:.1}, textbook {:.1}; L1 {ours_l1:.2e} vs {vendor_l1:.2e}",
        v.graph_us_per_iter, v.textbook_us_per_iter
    );
    let energy = match meter {
        None => None,
        Some(e) => {
            let mut vpr = app_vendor::VendorPr::new(gpu, m, &dangling, 0.85)?;
            Some(e.case(
                (ours_us, &mut |n| {
                    let o = PageRankOptions {
                        max_iters: n,
                        ..opts
                    };
                    Ok(solvers::pagerank(gpu, &k, &dm, &dmask, &mut x, &o)?.iterations as u64)
                }),
                (v.graph_us_per_iter, &mut |n| {
                    vpr.time_graph(n, 10)?;
                    Ok(n as u64)
                }),
                10,
            )?)
        }
    };
    Ok(PrCase {
        name: name.into(),
        n,
        nnz: m.nnz(),
        variant: variant.id(),
        t: Timing::new(
            ours_us,
            v.graph_us_per_iter,
            v.textbook_us_per_iter,
            spmv_us,
            spmv_fused_us,
        ),
        iterations: rep.iterations,
        ours_l1_vs_cpu: ours_l1,
        vendor_l1_vs_cpu: vendor_l1,
        ours_matrix_bytes: dm.total_device_bytes(),
        vendor_device_bytes: v.device_bytes,
        floor_us_per_iter: floor_bytes as f64 / (copy_gbs * 1e3),
        reorder_host_seconds: dm.reorder_cost().map(|d| d.as_secs_f64()),
        gather_floor_spmv_us,
        energy,
    })
}

/// The gather floor of one SpMV of `m` (f32, given order) in microseconds;
/// `None`, with a message, when it could not be measured.
fn gather_floor_us(gpu: &Gpu, m: &Csr) -> Option<f64> {
    // The CSR arrays alone: the microbenchmark reads nothing else.
    let measured = sparserl_rt::DeviceCsr::<f32>::upload_with(gpu, m, sparserl_rt::Layouts::NONE)
        .map_err(anyhow::Error::from)
        .and_then(|a| crate::bench::gather::floor_gbs(gpu, &a, m, 2, 30));
    match measured {
        Ok(floor) => floor.map(|(gbs, _)| m.compulsory_bytes(4) as f64 / (gbs * 1e3)),
        Err(e) => {
            eprintln!("  gather floor not measured: {e:#}");
            None
        }
    }
}

fn markdown(r: &Report) -> String {
    let mut s = format!(
        "# Whole iterations on {}\n\nCommit `{}`, policy `{}`, command `{}`; copy bandwidth {:.0} GB/s.\n\
         Times are microseconds per iteration; \"vendor graph\" is cuSPARSE + cuBLAS with device pointer mode \
         and the loop captured in CUDA graphs, \"textbook\" the host-synchronised form (see xtask/src/app_vendor.rs). \
         Floor = bytes one iteration must move (our matrix bytes + the vector passes) / copy bandwidth.\n\n\
         ## Conjugate gradients\n\n| matrix | value | variant | ours | vendor graph | textbook | speedup (graph) | floor | SpMV / fused SpMV | iters | residual ours / vendor | to convergence | memory ours / vendor |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
        r.gpu, r.commit, r.policy, r.command, r.copy_gbs
    );
    for c in &r.cg {
        s += &format!(
            "| {} | {} | {} | {:.1} | {:.1} | {:.1} | **{:.2}x** | {:.1} | {:.1} / {:.1} | {} | {:.2e} / {:.2e} | {} it, {:.1e} | {:.1} / {:.1} MB ({:.2}) |\n",
            c.name,
            c.value,
            c.variant,
            c.t.ours_us_per_iter,
            c.t.vendor_graph_us_per_iter,
            c.t.vendor_textbook_us_per_iter,
            c.t.speedup_vs_graph,
            c.floor_us_per_iter,
            c.t.spmv_us,
            c.t.spmv_fused_us,
            c.iterations,
            c.ours_rel_residual,
            c.vendor_rel_residual,
            c.converge_iterations,
            c.converge_rel_residual,
            c.ours_matrix_bytes as f64 / 1e6,
            (c.vendor_matrix_bytes + c.vendor_spmv_buffer_bytes) as f64 / 1e6,
            c.memory_ratio
        );
    }
    s += "\n## PageRank (f32, damping 0.85)\n\n| graph | pages | links | variant | ours | vendor graph | textbook | speedup (graph) | floor | SpMV / fused SpMV | iters | L1 vs CPU f64 ours / vendor | memory ours / vendor |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for c in &r.pagerank {
        s += &format!(
            "| {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | **{:.2}x** | {:.1} | {:.1} / {:.1} | {} | {:.1e} / {:.1e} | {:.1} / {:.1} MB |\n",
            c.name,
            c.n,
            c.nnz,
            c.variant,
            c.t.ours_us_per_iter,
            c.t.vendor_graph_us_per_iter,
            c.t.vendor_textbook_us_per_iter,
            c.t.speedup_vs_graph,
            c.floor_us_per_iter,
            c.t.spmv_us,
            c.t.spmv_fused_us,
            c.iterations,
            c.ours_l1_vs_cpu,
            c.vendor_l1_vs_cpu,
            c.ours_matrix_bytes as f64 / 1e6,
            c.vendor_device_bytes as f64 / 1e6
        );
    }
    s += &energy_markdown(r);
    let floors: Vec<String> = r
        .pagerank
        .iter()
        .filter_map(|c| {
            let f = c.gather_floor_spmv_us?;
            Some(format!(
                "{} {f:.1} us (our SpMV in its stored order {:.2}x of it)",
                c.name,
                c.t.spmv_us / f
            ))
        })
        .collect();
    if !floors.is_empty() {
        s += &format!(
            "\nGather floor of one SpMV in the given order (the microbenchmark of `xtask bench`: \
             the traffic of a perfectly balanced CSR SpMV with no row structure): {}.\n",
            floors.join("; ")
        );
    }
    if !r.gcn.is_empty() {
        s += &gcn_markdown(&r.gcn);
        if let Some(c) = r.gcn_commit.as_deref().filter(|c| *c != r.commit) {
            s += &format!("\nThe GCN layers were measured at commit `{c}`.\n");
        }
    }
    if let Some(f) = &r.fused_check {
        let refused = f.misuse.iter().filter(|m| m.1).count();
        s += &format!(
            "\nAPI misuse on the device refused with the expected error: {refused} / {}{}.\n",
            f.misuse.len(),
            f.misuse
                .iter()
                .map(|(w, ok)| format!("{}{w}", if *ok { "; " } else { "; NOT REFUSED: " }))
                .collect::<String>()
        );
        s += &format!(
            "\n## Fused epilogue check\n\n{} / {} (variant, epilogue, matrix, value) combinations within tolerance of the float64 reference \
             (max relative error y {:.1e}, fused dot {:.1e}); CUDA-graph replay check: {}.\n",
            f.passed,
            f.checked,
            f.max_err_y,
            f.max_err_dot,
            if f.graph_replay { "pass" } else { "FAIL" }
        );
        for e in &f.failures {
            s += &format!("- {e}\n");
        }
    }
    s
}

/// The `--energy` table: joules per iteration, both sides (empty when
/// energy was not measured).
fn energy_markdown(r: &Report) -> String {
    let rows: Vec<(&str, &energy::IterEnergy)> =
        r.cg.iter()
            .filter_map(|c| Some((c.name.as_str(), c.energy.as_ref()?)))
            .chain(
                r.pagerank
                    .iter()
                    .filter_map(|c| Some((c.name.as_str(), c.energy.as_ref()?))),
            )
            .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\n## Energy per iteration (NVML, whole card)\n\nCG {} and PageRank {} (vendor J / ours, \
         geomean). Each side runs whole solver calls of about {:.0} ms back to back; {} windows \
         of at least {:.1} s; spread = (max - min) / median over the windows.\n\n\
         | case | ours mJ/iter | W | spread | vendor mJ/iter | W | spread | vendor J / ours J |\n\
         |---|---|---|---|---|---|---|---|\n",
        r.summary
            .cg_energy_ratio
            .map_or("-".into(), |x| format!("{x:.2}x")),
        r.summary
            .pagerank_energy_ratio
            .map_or("-".into(), |x| format!("{x:.2}x")),
        energy::CALL_SECONDS * 1e3,
        energy::REPEATS,
        energy::WINDOW_S
    );
    for (name, e) in rows {
        s += &format!(
            "| {name} | {:.4} | {:.0} | {:.1}% | {:.4} | {:.0} | {:.1}% | **{:.2}x** |\n",
            e.ours_joules_per_iter * 1e3,
            e.ours_avg_power_w,
            e.ours_spread * 100.0,
            e.vendor_joules_per_iter * 1e3,
            e.vendor_avg_power_w,
            e.vendor_spread * 100.0,
            e.energy_ratio
        );
    }
    s
}

fn gcn_markdown(cases: &[gcn::GcnCase]) -> String {
    let mut s = String::from(
        "\n## GCN layer `H' = relu(Â H W + b)` (f32, row-major features)\n\n\
         `Â = D^-1/2 (A + I) D^-1/2`. Ours: cuBLAS GEMM `T = H W`, then our SpMM with the fused \
         bias-relu epilogue, chosen by the product's measured SpMM search over the whole space \
         on the fused entry (12 s budget; every candidate checked against float64 with the \
         bias and ReLU first; candidates measured in brackets). \
         Vendor: the same GEMM, cuSPARSE SpMM with its fastest correct CSR algorithm \
         (preprocessed), then a bias-and-ReLU kernel. One layer captured into a CUDA graph, \
         microseconds per replay (median); error: largest per-row relative error of the \
         layer's output against a float64 CPU layer.\n\n\
         | graph | nodes | nnz of Â | width | ours us | vendor us | speedup | our SpMM us (variant) | cuSPARSE SpMM us (alg) | error ours / vendor |\n\
         |---|---:|---:|---:|---:|---:|---:|---|---|---|\n",
    );
    for c in cases {
        s += &format!(
            "| {}{} | {} | {} | {} | {:.1} | {:.1} | **{:.2}x** | {:.1} ({}, {}) | {:.1} ({}) | {:.1e} / {:.1e} |\n",
            c.name,
            if c.graphed {
                ""
            } else {
                " (timed back to back: capture failed)"
            },
            c.nodes,
            c.nnz,
            c.f_out,
            c.ours_us_per_layer,
            c.vendor_us_per_layer,
            c.speedup,
            c.ours_spmm_us,
            c.variant,
            match c.search_candidates {
                0 => "prior's first 16".to_string(),
                k => format!("{k} searched"),
            },
            c.vendor_spmm_us,
            c.vendor_alg
                .strip_prefix("CUSPARSE_SPMM_")
                .unwrap_or(&c.vendor_alg),
            c.ours_max_row_rel_err,
            c.vendor_max_row_rel_err,
        );
    }
    s
}

/// Writes the Markdown table and the SVG plot of `report` into `out`.
fn write_views(report: &Report, out: &std::path::Path) -> Result<()> {
    std::fs::write(out.join("app-h200.md"), markdown(report))?;
    plot::write(report, &out.join("app-h200.svg"))?;
    eprintln!("bench-app: wrote {}", out.join("app-h200.md").display());
    Ok(())
}

/// Runs the benchmark.
pub fn run(args: Args) -> Result<()> {
    if let Some(json) = &args.replot {
        let report: Report = serde_json::from_str(
            &std::fs::read_to_string(json)
                .with_context(|| format!("reading {}", json.display()))?,
        )?;
        std::fs::create_dir_all(&args.out)?;
        return write_views(&report, &args.out);
    }
    let gpu = crate::bench_spmm::probe_gpu("bench-app")?;
    crate::cusparse::library_status()?;
    app_vendor::blas_library_status()?;
    if args.gcn_only {
        return gcn_only(&gpu, &args);
    }
    let tuner = sparserl_build::GpuTuner::probe().map_err(|e| anyhow::anyhow!(e))?;
    let copy_gbs = sparserl_rt::copy_bandwidth_gbs(&gpu)?;
    eprintln!(
        "bench-app on {} ({}), copy {copy_gbs:.0} GB/s",
        gpu.name(),
        gpu.arch()
    );
    let meter = if args.energy {
        Some(energy::Energy::open(&gpu)?)
    } else {
        None
    };
    let on = (&gpu, &tuner, meter.as_ref());
    let fused_check = if args.no_check {
        None
    } else {
        Some(check::run(&gpu, false)?)
    };
    let cg = vec![
        cg_case::<f64>(
            on,
            "poisson3d-128",
            &synth::stencil(&[128, 128, 128], 7)?,
            &args,
            copy_gbs,
        )?,
        cg_case::<f32>(
            on,
            "poisson2d-2048",
            &synth::stencil(&[2048, 2048], 5)?,
            &args,
            copy_gbs,
        )?,
    ];
    let mut pagerank = vec![pr_case(
        on,
        "power-law-1M",
        &link_matrix(&synth::power_law(1_000_000, 16.0, 2.1, 7)?)?,
        &args,
        copy_gbs,
    )?];
    for g in &args.graphs {
        let p = ["mtx", "mtx.gz"]
            .iter()
            .map(|e| args.matrices.join(format!("{g}.{e}")))
            .find(|p| p.exists());
        let Some(p) = p else {
            eprintln!("skipping graph {g}: not in {}", args.matrices.display());
            continue;
        };
        let a = sparserl_rt::mtx::read_matrix_market(&p)?;
        if a.rows() != a.cols() {
            eprintln!("skipping graph {g}: not square");
            continue;
        }
        pagerank.push(pr_case(on, g, &link_matrix(&a)?, &args, copy_gbs)?);
    }
    let gcn = if args.no_gcn {
        Vec::new()
    } else {
        // A failed GCN layer must not cost the CG and PageRank results.
        gcn_cases(&gpu, &args).unwrap_or_else(|e| {
            eprintln!("GCN layers FAILED: {e:#}");
            let _ = gpu.synchronize();
            Vec::new()
        })
    };
    let real: Vec<f64> = pagerank[1..].iter().map(|c| c.t.speedup_vs_graph).collect();
    let report = Report {
        gpu: gpu.name().to_string(),
        commit: args.commit.clone(),
        policy: sparserl_policies::default_policy().name().to_string(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        copy_gbs,
        summary: Summary {
            cg_poisson3d_f64_speedup: cg[0].t.speedup_vs_graph,
            cg_poisson2d_f32_speedup: cg[1].t.speedup_vs_graph,
            pagerank_powerlaw_f32_speedup: pagerank[0].t.speedup_vs_graph,
            pagerank_real_geomean_speedup: crate::common::geomean(&real),
            poisson3d_memory_ratio: cg[0].memory_ratio,
            gcn_layer_speedup: None,
            gcn_layer_speedup_real: None,
            cg_energy_ratio: energy::geomean_ratio(cg.iter().map(|c| c.energy.as_ref())),
            pagerank_energy_ratio: energy::geomean_ratio(
                pagerank.iter().map(|c| c.energy.as_ref()),
            ),
        },
        cg,
        pagerank,
        fused_check,
        gcn: Vec::new(),
        gcn_commit: Some(args.commit.clone()),
    };
    let mut report = report;
    set_gcn(&mut report, gcn);
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(
        args.out.join("app-h200.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    std::fs::write(args.out.join("app-h200.md"), markdown(&report))?;
    eprintln!(
        "bench-app: wrote {}",
        args.out.join("app-h200.md").display()
    );
    Ok(())
}

/// The GCN layer cases: the GNN-sized generated graph, then `--gcn-graphs`.
fn gcn_cases(gpu: &Gpu, args: &Args) -> Result<Vec<gcn::GcnCase>> {
    let spec = crate::bench_spmm::suite::large_graphs(false)
        .into_iter()
        .find(|s| s.name == "gnn-2.5M-60M")
        .context("the GNN-sized graph is missing from the SpMM suite")?;
    let g = spec.build(0x6c_0000)?;
    let mut out = vec![gcn::gcn_case(
        gpu,
        spec.name,
        &g,
        args.gcn_width,
        20,
        args.gcn_reorder.reorder(),
    )?];
    drop(g);
    for name in &args.gcn_graphs {
        let p = ["mtx", "mtx.gz"]
            .iter()
            .map(|e| args.matrices.join(format!("{name}.{e}")))
            .find(|p| p.exists());
        let Some(p) = p else {
            eprintln!(
                "skipping GCN graph {name}: not in {}",
                args.matrices.display()
            );
            continue;
        };
        let a = sparserl_rt::mtx::read_matrix_market(&p)?;
        if a.rows() != a.cols() {
            eprintln!("skipping GCN graph {name}: not square");
            continue;
        }
        match gcn::gcn_case(
            gpu,
            name,
            &a,
            args.gcn_width,
            20,
            args.gcn_reorder.reorder(),
        ) {
            Ok(c) => out.push(c),
            Err(e) => eprintln!("GCN {name} FAILED: {e:#}"),
        }
    }
    Ok(out)
}

/// Puts the GCN cases and their summary keys into `report`.
fn set_gcn(report: &mut Report, gcn: Vec<gcn::GcnCase>) {
    report.summary.gcn_layer_speedup = gcn.first().map(|c| c.speedup);
    let real: Vec<f64> = gcn.iter().skip(1).map(|c| c.speedup).collect();
    report.summary.gcn_layer_speedup_real =
        (!real.is_empty()).then(|| crate::common::geomean(&real));
    report.gcn = gcn;
}

/// `--gcn-only`: the GCN layers merged into the existing report.
fn gcn_only(gpu: &Gpu, args: &Args) -> Result<()> {
    let path = args.out.join("app-h200.json");
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "--gcn-only merges into an existing report: reading {}",
            path.display()
        )
    })?;
    let mut report: Report = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a bench-app report", path.display()))?;
    set_gcn(&mut report, gcn_cases(gpu, args)?);
    report.gcn_commit = Some(args.commit.clone());
    std::fs::write(&path, serde_json::to_string_pretty(&report)?)?;
    write_views(&report, &args.out)
}
