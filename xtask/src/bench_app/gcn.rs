//! One GCN layer `H' = relu(Â H W + b)` (f32, row-major features), ours vs
//! the vendor route ([`crate::app_vendor::gcn`]).
//!
//! `Â = D^-1/2 (A + I) D^-1/2` of a graph. Ours: the same cuBLAS GEMM
//! `T = H W`, then our SpMM with the fused `bias-relu` epilogue
//! (`SpmmKernel::spmm_bias_relu`), the variant the measured choice over
//! `spmm_space(f_out, row-major)` picks for the fused entry (every variant
//! checked against float64 with the bias and ReLU, then timed; fastest
//! kept). Both layers are captured into a CUDA graph and replayed; the
//! layer's output is compared with a float64 CPU layer per row.

use crate::app_vendor::Blas;
use crate::app_vendor::gcn::{GcnLayer, run_gcn, time_layer};
use crate::bench_spmm::check::{Reference, random_dense};
use crate::bench_spmm::ours::{RuntimeSpmm, compile_all};
use crate::bench_spmm::rowerr::{DeviceReference, poison};
use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};
use sparserl_policies::spmm_prior_for;
use sparserl_rt::dense::{DenseLayout, DeviceDense};
use sparserl_rt::measure::{stats, time_launches};
use sparserl_rt::spmm::{SpmmEpilogue, SpmmKernel};
use sparserl_rt::{Csr, DeviceCsr, DeviceVec, Features, Gpu, Layouts, ValueType, tolerance};

/// The fused epilogue of the layer.
const EPILOGUES: &[SpmmEpilogue] = &[SpmmEpilogue::BiasRelu];

/// One GCN layer case.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GcnCase {
    /// Graph.
    pub name: String,
    /// Nodes.
    pub nodes: usize,
    /// Nonzeros of `Â` (edges both ways plus self loops).
    pub nnz: usize,
    /// Input and output widths.
    pub f_in: usize,
    /// Output width.
    pub f_out: usize,
    /// Our SpMM variant (fused bias-relu entry).
    pub variant: String,
    /// Our microseconds per layer (graph replay).
    pub ours_us_per_layer: f64,
    /// The vendor's microseconds per layer (graph replay).
    pub vendor_us_per_layer: f64,
    /// vendor / ours.
    pub speedup: f64,
    /// Our fused SpMM alone, microseconds.
    pub ours_spmm_us: f64,
    /// cuSPARSE's SpMM alone (best algorithm), microseconds.
    pub vendor_spmm_us: f64,
    /// The cuSPARSE algorithm.
    pub vendor_alg: String,
    /// Largest per-row relative error of our layer against float64.
    pub ours_max_row_rel_err: f64,
    /// The same for the vendor layer.
    pub vendor_max_row_rel_err: f64,
    /// Both layers timed as CUDA-graph replays (else back to back).
    pub graphed: bool,
}

/// `D^-1/2 (A + I) D^-1/2` of `g`'s pattern (values ignored), `D` the row
/// sums of `A + I`; built row by row in `O(nnz)` (the diagonal merged into
/// each sorted row).
pub fn normalized_adjacency(g: &Csr) -> Result<Csr> {
    anyhow::ensure!(g.rows() == g.cols(), "a GCN graph must be square");
    let n = g.rows();
    let mut indptr = Vec::with_capacity(n + 1);
    let mut indices: Vec<u32> = Vec::with_capacity(g.nnz() + n);
    indptr.push(0u32);
    for r in 0..n {
        let (lo, hi) = (g.indptr()[r] as usize, g.indptr()[r + 1] as usize);
        let row = &g.indices()[lo..hi];
        let split = row.partition_point(|&c| (c as usize) < r);
        indices.extend_from_slice(&row[..split]);
        indices.push(r as u32);
        indices.extend(row[split..].iter().filter(|&&c| c as usize != r));
        indptr.push(u32::try_from(indices.len()).context("too many nonzeros for 32-bit CSR")?);
    }
    let deg: Vec<f64> = indptr.windows(2).map(|w| f64::from(w[1] - w[0])).collect();
    let mut values = Vec::with_capacity(indices.len());
    for r in 0..n {
        for &c in &indices[indptr[r] as usize..indptr[r + 1] as usize] {
            values.push(1.0 / (deg[r] * deg[c as usize]).sqrt());
        }
    }
    Ok(Csr::try_new(n, n, indptr, indices, values)?)
}

/// `H W` in float64 (row-major), in parallel over rows.
fn gemm_f64(h: &[f32], w: &[f32], rows: usize, fi: usize, fo: usize) -> Vec<f64> {
    let w64: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let mut t = vec![0.0f64; rows * fo];
    let workers = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .clamp(1, 32);
    let per = rows.div_ceil(workers).max(1);
    std::thread::scope(|s| {
        for (k, chunk) in t.chunks_mut(per * fo).enumerate() {
            let w64 = &w64;
            s.spawn(move || {
                for (i, out) in chunk.chunks_mut(fo).enumerate() {
                    let hr = &h[(k * per + i) * fi..][..fi];
                    for (p, &hv) in hr.iter().enumerate() {
                        let hv = hv as f64;
                        for (o, wv) in out.iter_mut().zip(&w64[p * fo..(p + 1) * fo]) {
                            *o += hv * wv;
                        }
                    }
                }
            });
        }
    });
    t
}

/// Variants the layer's measured choice compiles, checks and times: the
/// SpMM prior's first ones for the graph (the whole space at width 64 takes
/// minutes to compile on the device for a single layer).
const GCN_CANDIDATES: usize = 16;

/// Our fused SpMM over the prior's first [`GCN_CANDIDATES`] variants: the
/// fastest whose fused entry passes the check on a random `T`, and its
/// microseconds.
fn pick_variant(
    gpu: &Gpu,
    a_hat: &Csr,
    a: &DeviceCsr<f32>,
    bias: &DeviceVec<f32>,
    b64: &[f64],
    fo: usize,
) -> Result<(RuntimeSpmm<f32>, String, f64)> {
    let t: Vec<f32> = random_dense(a_hat.cols() * fo, 0x6c_0002);
    let mut dref = DeviceReference::upload(
        gpu,
        &Reference::new(a_hat, &t, fo, DenseLayout::RowMajor, Some(b64)),
    )?;
    let x = DeviceDense::from_host(gpu, a_hat.cols(), fo, DenseLayout::RowMajor, &t)?;
    let mut y = DeviceDense::<f32>::zeros(gpu, a_hat.rows(), fo, DenseLayout::RowMajor)?;
    let key = (ValueType::F32, DenseLayout::RowMajor, fo);
    let features = Features::compute(a_hat);
    let jobs: Vec<_> = spmm_prior_for(&features, ValueType::F32, fo, DenseLayout::RowMajor)
        .into_iter()
        .take(GCN_CANDIDATES)
        .map(|v| (key, v))
        .collect();
    let specs = compile_all(&jobs, &gpu.arch(), EPILOGUES);
    let mut best: Option<(RuntimeSpmm<f32>, String, f64)> = None;
    for ((_, v), spec) in jobs.iter().zip(specs) {
        let Ok(spec) = spec else { continue };
        let k = RuntimeSpmm::<f32>::from_spec(spec)?;
        // SAFETY: used on the Gpu's stream within this call.
        poison(gpu, unsafe { y.raw_mut() })?;
        if k.spmm_bias_relu(gpu, 1.0, a, &x, 0.0, &mut y, bias)
            .is_err()
        {
            continue;
        }
        // SAFETY: as above.
        let err = dref.max_row_rel_err(unsafe { y.raw() }, DenseLayout::RowMajor, fo)?;
        if err > tolerance(ValueType::F32) {
            continue;
        }
        let mut launch =
            || -> Result<()> { Ok(k.spmm_bias_relu(gpu, 1.0, a, &x, 0.0, &mut y, bias)?) };
        let times = time_launches::<anyhow::Error>(gpu, &mut launch, 2, 10, 0.5)?;
        if let Some(s) = stats(&times)
            && best.as_ref().is_none_or(|b| s.median < b.2)
        {
            best = Some((k, v.id(), s.median));
        }
    }
    best.ok_or_else(|| anyhow!("no SpMM variant passed the fused check"))
}

/// Runs one layer case: ours and the vendor's, each checked and timed.
pub fn gcn_case(gpu: &Gpu, name: &str, graph: &Csr, f: usize, reps: usize) -> Result<GcnCase> {
    let a_hat = normalized_adjacency(graph)?;
    let nodes = a_hat.rows();
    eprintln!(
        "GCN {name}: {nodes} nodes, {} nonzeros of Â, width {f}",
        a_hat.nnz()
    );
    let h: Vec<f32> = random_dense(nodes * f, 0x6c_0003);
    let scale = 1.0 / (f as f32).sqrt();
    let w: Vec<f32> = random_dense::<f32>(f * f, 0x6c_0004)
        .into_iter()
        .map(|v| v * scale)
        .collect();
    let bias: Vec<f32> = random_dense::<f32>(f, 0x6c_0005)
        .into_iter()
        .map(|v| 0.1 * v)
        .collect();
    let b64: Vec<f64> = bias.iter().map(|&v| v as f64).collect();
    let t64 = gemm_f64(&h, &w, nodes, f, f);
    let mut layer_ref = DeviceReference::upload(
        gpu,
        &Reference::new(&a_hat, &t64, f, DenseLayout::RowMajor, Some(&b64)),
    )?;
    drop(t64);
    let a = DeviceCsr::<f32>::upload_with(gpu, &a_hat, Layouts::NONE)?;
    let dbias = DeviceVec::from_host(gpu, &bias)?;
    let (k, variant, spmm_us) = pick_variant(gpu, &a_hat, &a, &dbias, &b64, f)?;
    let blas = Blas::new(gpu)?;
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
    let stream = unsafe { gpu.stream() };
    let (dh, dw) = (stream.clone_htod(&h)?, stream.clone_htod(&w)?);
    let mut t = DeviceDense::<f32>::zeros(gpu, nodes, f, DenseLayout::RowMajor)?;
    let mut y = DeviceDense::<f32>::zeros(gpu, nodes, f, DenseLayout::RowMajor)?;
    let step = |t: &mut DeviceDense<f32>, y: &mut DeviceDense<f32>| -> Result<()> {
        // SAFETY: T is written by cuBLAS on the Gpu's stream (the handle is
        // bound to it) and read by the SpMM queued after it on that stream.
        blas.gemm_row_major((nodes, f, f), &dh, &dw, unsafe { t.raw_mut() })?;
        Ok(k.spmm_bias_relu(gpu, 1.0, &a, t, 0.0, y, &dbias)?)
    };
    step(&mut t, &mut y)?;
    // SAFETY: read on the Gpu's stream after the layer.
    let ours_err = layer_ref.max_row_rel_err(unsafe { y.raw() }, DenseLayout::RowMajor, f)?;
    let (ours_us, ours_graphed) = time_layer(gpu, &mut || step(&mut t, &mut y), reps)?;
    let layer = GcnLayer {
        a_hat: &a_hat,
        h: &h,
        w: &w,
        bias: &bias,
        f_in: f,
        f_out: f,
    };
    let v = run_gcn(gpu, &layer, &mut layer_ref, reps)?;
    eprintln!(
        "  ours {ours_us:.1} us/layer ({variant}), vendor {:.1} ({}); error {ours_err:.1e} vs {:.1e}",
        v.us_per_layer, v.alg, v.max_row_rel_err
    );
    Ok(GcnCase {
        name: name.into(),
        nodes,
        nnz: a_hat.nnz(),
        f_in: f,
        f_out: f,
        variant,
        ours_us_per_layer: ours_us,
        vendor_us_per_layer: v.us_per_layer,
        speedup: v.us_per_layer / ours_us,
        ours_spmm_us: spmm_us,
        vendor_spmm_us: v.spmm_us,
        vendor_alg: v.alg,
        ours_max_row_rel_err: ours_err,
        vendor_max_row_rel_err: v.max_row_rel_err,
        graphed: ours_graphed && v.graphed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normalized_adjacency_has_self_loops_and_symmetric_weights() {
        // Path 0 - 1 - 2 with a self loop already on 1.
        let g = Csr::from_triplets(
            3,
            3,
            &[
                (0, 1, 1.0),
                (1, 0, 1.0),
                (1, 1, 5.0),
                (1, 2, 1.0),
                (2, 1, 1.0),
            ],
        )
        .unwrap();
        let a = normalized_adjacency(&g).unwrap();
        assert_eq!(a.nnz(), 7);
        let at = |r: usize, c: u32| {
            let (lo, hi) = (a.indptr()[r] as usize, a.indptr()[r + 1] as usize);
            a.indices()[lo..hi]
                .iter()
                .position(|&x| x == c)
                .map(|p| a.values()[lo + p])
        };
        // Degrees with the self loop: 2, 3, 2.
        assert!((at(0, 0).unwrap() - 0.5).abs() < 1e-15);
        assert!((at(1, 1).unwrap() - 1.0 / 3.0).abs() < 1e-15);
        assert!((at(0, 1).unwrap() - 1.0 / 6f64.sqrt()).abs() < 1e-15);
        assert_eq!(at(0, 1), at(1, 0));
        assert_eq!(at(0, 2), None);
    }

    #[test]
    fn the_float64_gemm_is_row_major() {
        // H = [1 2; 3 4], W = [1 0 2; 0 1 3]
        let t = gemm_f64(
            &[1.0, 2.0, 3.0, 4.0],
            &[1.0, 0.0, 2.0, 0.0, 1.0, 3.0],
            2,
            2,
            3,
        );
        assert_eq!(t, vec![1.0, 2.0, 8.0, 3.0, 4.0, 18.0]);
    }
}
