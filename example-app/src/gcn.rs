//! One GCN layer `H' = relu(Â H W + b)` on a power-law graph (f32): the
//! dense product `Z = H W` on the host (small: nodes x 64 times 64 x 64),
//! then the tuned SpMM with its fused `bias-relu` epilogue on the GPU,
//! checked per row against a float64 CPU result.

use crate::kernels;
use sparserl_rt::dense::{DenseLayout, DeviceDense};
use sparserl_rt::spmm::{SpmmCase, SpmmKernel, max_row_rel_err, spmm_reference};
use sparserl_rt::{Csr, DeviceCsr, DeviceVec, Gpu, synth};
use std::time::Instant;

/// Nodes of the graph (the declared pattern's family, another instance).
const NODES: usize = 200_000;
/// Hidden width (the declared `columns`).
const HIDDEN: usize = 64;

/// `Â = D^-1/2 (A + I) D^-1/2` of a graph's adjacency pattern (the graph
/// as given, not symmetrised; `D` its weighted row degrees).
fn normalized_adjacency(a: &Csr) -> Result<Csr, Box<dyn std::error::Error>> {
    let n = a.rows();
    let mut triplets: Vec<(u32, u32, f64)> = Vec::with_capacity(a.nnz() + n);
    for r in 0..n {
        for &c in &a.indices()[a.indptr()[r] as usize..a.indptr()[r + 1] as usize] {
            triplets.push((r as u32, c, 1.0));
        }
        triplets.push((r as u32, r as u32, 1.0));
    }
    let with_self = Csr::from_triplets(n, n, &triplets)?;
    // Weighted degrees: row sums (a repeated entry counts with its sum).
    let deg: Vec<f64> = (0..n)
        .map(|r| {
            let span = with_self.indptr()[r] as usize..with_self.indptr()[r + 1] as usize;
            with_self.values()[span].iter().sum::<f64>()
        })
        .collect();
    let mut values = Vec::with_capacity(with_self.nnz());
    for r in 0..n {
        let span = with_self.indptr()[r] as usize..with_self.indptr()[r + 1] as usize;
        for (&c, &v) in with_self.indices()[span.clone()]
            .iter()
            .zip(&with_self.values()[span])
        {
            values.push(v / (deg[r] * deg[c as usize]).sqrt());
        }
    }
    Ok(Csr::try_new(
        n,
        n,
        with_self.indptr().to_vec(),
        with_self.indices().to_vec(),
        values,
    )?)
}

/// A deterministic pseudo-random value in [-1, 1).
fn noise(i: usize, salt: u64) -> f64 {
    let mut z = (i as u64)
        .wrapping_add(salt)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z ^= z >> 27;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// Runs the layer and checks it.
pub fn gcn_layer(gpu: &Gpu) -> Result<(), Box<dyn std::error::Error>> {
    let graph = synth::power_law(NODES, 16.0, 2.1, 11)?;
    let a = normalized_adjacency(&graph)?;
    println!(
        "\nGCN layer: {} nodes, {} nonzeros in the normalised adjacency (self loops included), hidden width {HIDDEN}, f32",
        a.rows(),
        a.nnz()
    );
    // Z = H W on the host, in f64, rounded to f32 (row-major).
    let h: Vec<f64> = (0..NODES * HIDDEN).map(|i| noise(i, 1)).collect();
    let w: Vec<f64> = (0..HIDDEN * HIDDEN).map(|i| noise(i, 2) / 8.0).collect();
    let mut z = vec![0.0f64; NODES * HIDDEN];
    for r in 0..NODES {
        for k in 0..HIDDEN {
            let hv = h[r * HIDDEN + k];
            for c in 0..HIDDEN {
                z[r * HIDDEN + c] += hv * w[k * HIDDEN + c];
            }
        }
    }
    let z32: Vec<f32> = z.iter().map(|&v| v as f32).collect();
    let bias: Vec<f32> = (0..HIDDEN).map(|c| (noise(c, 3) / 4.0) as f32).collect();

    let k = kernels::Gcn;
    let layout = DenseLayout::RowMajor;
    let da = DeviceCsr::<f32>::upload(gpu, &a)?;
    let dz = DeviceDense::from_host(gpu, NODES, HIDDEN, layout, &z32)?;
    let db = DeviceVec::from_host(gpu, &bias)?;
    let mut dy = DeviceDense::<f32>::zeros(gpu, NODES, HIDDEN, layout)?;
    k.spmm_bias_relu(gpu, 1.0, &da, &dz, 0.0, &mut dy, &db)?;
    gpu.synchronize()?;
    let reps = 20;
    let t = Instant::now();
    for _ in 0..reps {
        k.spmm_bias_relu(gpu, 1.0, &da, &dz, 0.0, &mut dy, &db)?;
    }
    gpu.synchronize()?;
    let us = t.elapsed().as_secs_f64() * 1e6 / reps as f64;
    let y: Vec<f64> = dy.to_host(gpu)?.iter().map(|&v| f64::from(v)).collect();

    // The float64 reference on what the device holds (values, Z and bias in f32).
    let a32 = Csr::try_new(
        a.rows(),
        a.cols(),
        a.indptr().to_vec(),
        a.indices().to_vec(),
        a.values().iter().map(|&v| f64::from(v as f32)).collect(),
    )?;
    let z_dev: Vec<f64> = z32.iter().map(|&v| f64::from(v)).collect();
    let bias64: Vec<f64> = bias.iter().map(|&v| f64::from(v)).collect();
    let case = SpmmCase {
        alpha: 1.0,
        beta: 0.0,
        y0: None,
        bias: Some(&bias64),
    };
    let (reference, magnitude) = spmm_reference(&a32, &z_dev, HIDDEN, layout, &case)?;
    let err = max_row_rel_err(&y, &reference, &magnitude, NODES, HIDDEN, layout);
    let bytes = sparserl_rt::spmm::spmm_bytes(a.rows(), a.cols(), a.nnz(), HIDDEN, 4);
    let spec = k.spec();
    let (module, width) = spec.module_for(HIDDEN);
    println!(
        "GCN layer: SpMM + bias + ReLU in {us:.1} us ({:.0} GB/s of compulsory bytes), variant {} ({}), max per-row relative error vs CPU float64 {err:.2e}",
        bytes as f64 / (us * 1e3),
        module.variant.id(),
        width.map_or("generic width".to_string(), |n| format!(
            "tuned for N = {n}"
        )),
    );
    let tol = sparserl_rt::measure::tolerance(sparserl_rt::ValueType::F32);
    if err > tol {
        return Err(
            format!("GCN layer differs from the CPU reference ({err:.2e} > {tol:.0e})").into(),
        );
    }
    Ok(())
}
