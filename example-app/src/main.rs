//! example-app: a real user of SparseRL.
//!
//! - Conjugate gradients on a 3-D Poisson problem (f64, 7-point Laplacian on
//!   a 128^3 grid), converged to a relative residual below 1e-8.
//! - PageRank on a power-law graph of one million pages (f32), compared with a
//!   float64 CPU PageRank computed with sprs.
//! - One SpMV with a real power-network matrix (f64) against the CPU.
//!
//! Both solvers run entirely on the GPU (`sparserl_rt::solvers`): the tuned
//! SpMV with its fused epilogue, fused vector updates, scalars kept on the
//! device, iterations replayed as CUDA graphs; the host only checks
//! convergence once per chunk of iterations.

use sparserl_rt::solvers::{self, Cg, CgOptions, PageRankOptions};
use sparserl_rt::{Csr, DeviceCsr, DeviceVec, Gpu, KernelSpec, RtError, SpmvKernel, synth};
use std::process::ExitCode;
use std::time::Instant;

mod kernels {
    include!(concat!(env!("OUT_DIR"), "/sparserl_kernels.rs"));
}

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn describe(spec: &KernelSpec) {
    let images: Vec<String> = spec
        .ptx_by_arch
        .iter()
        .map(|a| {
            format!(
                "{} {}",
                a.arch,
                if a.cubin.is_some() {
                    "PTX + cubin"
                } else {
                    "PTX"
                }
            )
        })
        .collect();
    println!(
        "kernel {:<10} {}  variant {:<34} chosen by {:?}, embedded: {}",
        spec.name,
        spec.value,
        spec.variant.id(),
        spec.provenance,
        if images.is_empty() {
            "source only (compiled at first use)".to_string()
        } else {
            images.join(", ")
        }
    );
}

/// Times `reps` SpMVs (after one warm-up) and returns microseconds per call.
fn time_spmv<K: SpmvKernel>(
    k: &K,
    gpu: &Gpu,
    a: &DeviceCsr<K::Value>,
    x: &DeviceVec<K::Value>,
    y: &mut DeviceVec<K::Value>,
    reps: usize,
) -> std::result::Result<f64, RtError> {
    k.spmv(gpu, a, x, y)?;
    gpu.synchronize()?;
    let t = Instant::now();
    for _ in 0..reps {
        k.spmv(gpu, a, x, y)?;
    }
    gpu.synchronize()?;
    Ok(t.elapsed().as_secs_f64() * 1e6 / reps as f64)
}

fn report_speed(name: &str, m: &Csr, value_size: usize, us: f64) {
    let gbs = m.compulsory_bytes(value_size) as f64 / (us * 1e3);
    println!("{name}: {us:.1} us per SpMV, {gbs:.0} GB/s effective (compulsory bytes / time)");
}

fn cg(gpu: &Gpu) -> Result<()> {
    let n = 128;
    let a = synth::stencil(&[n, n, n], 7)?;
    let rows = a.rows();
    println!(
        "\nCG: 3-D Poisson, {n}^3 grid, {rows} rows, {} nonzeros, f64",
        a.nnz()
    );
    let k = kernels::Poisson3d;
    // Only what the tuned kernel reads (the diagonal layout holds no indices).
    let da = k.upload_lean(gpu, &a)?;
    println!(
        "CG: matrix holds {:.1} MB on the device (CSR would be {:.1} MB)",
        da.total_device_bytes() as f64 / 1e6,
        (a.nnz() * 12 + (rows + 1) * 4) as f64 / 1e6
    );
    // b = A x_true for a smooth x_true.
    let x_true: Vec<f64> = (0..rows).map(|i| ((i % 97) as f64 / 97.0).sin()).collect();
    let b = a.spmv_f64(&x_true);
    let db = DeviceVec::from_host(gpu, &b)?;
    let mut dx = DeviceVec::<f64>::zeros(gpu, rows)?;
    let mut cg = Cg::new(gpu, &k, &da, None)?;
    let opts = CgOptions {
        tol: 1e-9,
        max_iters: 2000,
        chunk: 25,
    };
    // A two-iteration warm-up solve first: the first launch of each kernel
    // includes the driver's one-time module loading (JIT of the embedded
    // PTX on a device without a cached image), which is not per-iteration work.
    let warm = CgOptions {
        tol: 0.0,
        max_iters: 2,
        chunk: 2,
    };
    cg.solve(gpu, &da, &db, &mut dx, &warm)?;
    dx = DeviceVec::<f64>::zeros(gpu, rows)?;
    let rep = cg.solve(gpu, &da, &db, &mut dx, &opts)?;
    // True residual, computed on the CPU in float64.
    let x = dx.to_host(gpu)?;
    let ax = a.spmv_f64(&x);
    let bnorm = b.iter().map(|v| v * v).sum::<f64>().sqrt();
    let res: f64 = ax
        .iter()
        .zip(&b)
        .map(|(u, v)| (u - v).powi(2))
        .sum::<f64>()
        .sqrt()
        / bnorm;
    println!(
        "CG: {} iterations ({} launched) in {:.2} ms, {:.1} us per iteration, true relative residual {res:.2e} ({})",
        rep.iterations,
        rep.launched,
        rep.seconds * 1e3,
        rep.seconds * 1e6 / rep.launched.max(1) as f64,
        if res < 1e-8 {
            "converged"
        } else {
            "NOT converged"
        }
    );
    let mut dq = DeviceVec::<f64>::zeros(gpu, rows)?;
    let us = time_spmv(&k, gpu, &da, &dx, &mut dq, 50)?;
    report_speed("CG SpMV", &a, 8, us);
    if res >= 1e-8 {
        return Err("CG did not reach a relative residual of 1e-8".into());
    }
    Ok(())
}

fn pagerank(gpu: &Gpu) -> Result<()> {
    // m[i][j] = 1 when page j links to page i; in-degrees follow a power law.
    let links = synth::power_law(1_000_000, 16.0, 2.1, 7)?;
    let n = links.rows();
    let mut outdeg = vec![0u32; n];
    for &j in links.indices() {
        outdeg[j as usize] += 1;
    }
    let values: Vec<f64> = links
        .indices()
        .iter()
        .map(|&j| 1.0 / outdeg[j as usize] as f64)
        .collect();
    let m = Csr::try_new(
        n,
        n,
        links.indptr().to_vec(),
        links.indices().to_vec(),
        values,
    )?;
    println!("\nPageRank: {n} pages, {} links, f32", m.nnz());
    let dm = kernels::Pagerank.upload(gpu, &m)?;
    if let Some(cost) = dm.reorder_cost() {
        println!(
            "PageRank: matrix stored renumbered ({}, {:.1} ms on the host at upload); the solver \
             iterates in that order, single SpMV calls permute x and y on the device",
            dm.renumbering(),
            cost.as_secs_f64() * 1e3
        );
    }
    let d = 0.85;
    let iters = 50;
    // CPU reference in float64 with sprs.
    let sm = m.to_sprs();
    let mut xr = vec![1.0 / n as f64; n];
    for _ in 0..iters {
        let dangling: f64 = (0..n).filter(|&j| outdeg[j] == 0).map(|j| xr[j]).sum();
        let mut dense = vec![0.0; n];
        sprs::prod::mul_acc_mat_vec_csr(sm.view(), &xr[..], &mut dense[..]);
        let base = (1.0 - d) / n as f64 + d * dangling / n as f64;
        xr = dense.iter().map(|v| base + d * v).collect();
    }
    // GPU: the whole power iteration on the device with the tuned kernel.
    let k = kernels::Pagerank;
    let mask: Vec<f32> = solvers::dangling_mask(&m)
        .iter()
        .map(|&v| v as f32)
        .collect();
    let dmask = DeviceVec::from_host(gpu, &mask)?;
    let mut dx = DeviceVec::from_host(gpu, &vec![1.0f32 / n as f32; n])?;
    let opts = PageRankOptions {
        damping: d,
        tol: 0.0,
        max_iters: iters,
        chunk: 10,
    };
    // Warm-up (one-time module loading), then the timed solve from 1/n.
    let warm = PageRankOptions {
        max_iters: 2,
        chunk: 2,
        ..opts
    };
    solvers::pagerank(gpu, &k, &dm, &dmask, &mut dx, &warm)?;
    dx.copy_from_host(gpu, &vec![1.0f32 / n as f32; n])?;
    let rep = solvers::pagerank(gpu, &k, &dm, &dmask, &mut dx, &opts)?;
    let x = dx.to_host(gpu)?;
    let t_us = rep.seconds * 1e6 / rep.iterations.max(1) as f64;
    let max_diff = x
        .iter()
        .zip(&xr)
        .map(|(a, b)| (*a as f64 - b).abs())
        .fold(0.0, f64::max);
    let l1: f64 = x.iter().zip(&xr).map(|(a, b)| (*a as f64 - b).abs()).sum();
    println!(
        "PageRank: {} iterations, {t_us:.1} us per iteration; vs CPU float64: max |diff| {max_diff:.2e}, L1 {l1:.2e} ({})",
        rep.iterations,
        if l1 <= 1e-5 { "match" } else { "MISMATCH" }
    );
    let mut dy = DeviceVec::<f32>::zeros(gpu, n)?;
    let us = time_spmv(&k, gpu, &dm, &dx, &mut dy, 50)?;
    report_speed("PageRank SpMV", &m, 4, us);
    if l1 > 1e-5 {
        return Err("PageRank differs from the CPU result by more than 1e-5 (L1)".into());
    }
    Ok(())
}

fn power_bus(gpu: &Gpu) -> Result<()> {
    // Embedded at compile time: the binary needs no file at run time, from any directory.
    const BUS: &str = include_str!("../matrices/1138_bus.mtx");
    let a = sparserl_rt::mtx::read_matrix_market_from(BUS.as_bytes(), "1138_bus.mtx")?;
    println!(
        "\n1138_bus: {} x {}, {} nonzeros, f64",
        a.rows(),
        a.cols(),
        a.nnz()
    );
    let x: Vec<f64> = (0..a.cols()).map(|i| 1.0 + (i % 13) as f64 * 0.1).collect();
    let k = kernels::PowerBus;
    let da = k.upload(gpu, &a)?;
    let dx = DeviceVec::from_host(gpu, &x)?;
    let mut dy = DeviceVec::<f64>::zeros(gpu, a.rows())?;
    k.spmv(gpu, &da, &dx, &mut dy)?;
    let y = dy.to_host(gpu)?;
    let reference = a.spmv_f64(&x);
    let err = sparserl_rt::measure::rel_err(&y, &reference);
    println!("1138_bus: relative error vs CPU float64 {err:.2e}");
    let us = time_spmv(&k, gpu, &da, &dx, &mut dy, 200)?;
    report_speed("1138_bus SpMV", &a, 8, us);
    if err > 1e-12 {
        return Err("1138_bus SpMV differs from the CPU reference".into());
    }
    Ok(())
}

fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    println!("example-app: kernels generated at build time");
    for spec in kernels::ALL_KERNELS {
        describe(spec);
    }
    let gpu = match Gpu::new(0) {
        Ok(g) => g,
        Err(e) => {
            println!(
                "\nno GPU here ({e}); the kernels above were generated but cannot run. Nothing else to do."
            );
            return ExitCode::SUCCESS;
        }
    };
    println!("\nGPU: {} ({})", gpu.name(), gpu.arch());
    for spec in kernels::ALL_KERNELS {
        match spec.images_for(gpu.compute_capability()) {
            Some((image, _)) => println!("kernel {:<10} loads the {}", spec.name, image.describe()),
            None if spec.ptx_by_arch.is_empty() => println!(
                "kernel {:<10} has no compiled image: its CUDA source is compiled at first use \
                 (with the `jit` feature of sparserl-rt)",
                spec.name
            ),
            None => println!(
                "kernel {:<10} has no image for this device: every embedded architecture is newer",
                spec.name
            ),
        }
    }
    let mut failed = false;
    for (name, f) in [
        ("CG", cg as fn(&Gpu) -> Result<()>),
        ("PageRank", pagerank),
        ("1138_bus", power_bus),
    ] {
        if let Err(e) = f(&gpu) {
            eprintln!("{name} failed: {e}");
            failed = true;
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
