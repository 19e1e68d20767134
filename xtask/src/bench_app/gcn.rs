//! One GCN layer `H' = relu(Â H W + b)` (f32, row-major features), ours vs
//! the vendor route ([`crate::app_vendor::gcn`]).
//!
//! `Â = D^-1/2 (A + I) D^-1/2` of a graph. Ours: the same cuBLAS GEMM
//! `T = H W`, then our SpMM with the fused `bias-relu` epilogue
//! (`SpmmKernel::spmm_bias_relu`), the variant the product's measured
//! search (`search_spmm`, as a build runs it) picks over
//! `spmm_space(f_out, row-major)` for the fused entry (every candidate
//! checked against float64 with the bias and ReLU, then timed). Both layers are captured into a CUDA graph and replayed; the
//! layer's output is compared with a float64 CPU layer per row.

use crate::app_vendor::Blas;
use crate::app_vendor::gcn::{GcnLayer, run_gcn, time_layer};
use crate::bench_spmm::check::{Reference, random_dense};
use crate::bench_spmm::ours::{Built, RuntimeSpmm, compile_all};
use crate::bench_spmm::renumbered;
use crate::bench_spmm::rowerr::{DeviceReference, poison};
use anyhow::{Context, Result, anyhow};
use serde::{Deserialize, Serialize};
use sparserl_build::search::spmm::{SpmmSearchConfig, SpmmSource, search_head, search_spmm};
use sparserl_build::search::{SampleResult, SearchError};
use sparserl_policies::{SpmmRecords, spmm_search_order};
use sparserl_rt::dense::{DenseLayout, DeviceDense};
use sparserl_rt::measure::{stats, time_launches};
use sparserl_rt::reorder::Reorder;
use sparserl_rt::spmm::{SpmmEpilogue, SpmmKernel, SpmmVariant, spmm_bytes};
use sparserl_rt::{Csr, DeviceCsr, DeviceVec, Features, Gpu, Layouts, ValueType, tolerance};
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Instant;

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
    /// Candidates the layer's SpMM search measured (0 in reports of runs
    /// before the search: those took the fastest of the prior's first 16).
    #[serde(default)]
    pub search_candidates: usize,
    /// Our microseconds per layer (graph replay).
    pub ours_us_per_layer: f64,
    /// The vendor's microseconds per layer (graph replay).
    pub vendor_us_per_layer: f64,
    /// vendor / ours.
    pub speedup: f64,
    /// Our fused SpMM alone, microseconds.
    pub ours_spmm_us: f64,
    /// The same variant's plain entry (`Y = Â T`, no epilogue), microseconds
    /// (absent in reports of older runs).
    #[serde(default)]
    pub ours_spmm_plain_us: Option<f64>,
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
    /// The renumbering our layer ran in (`--gcn-reorder`: `Â` and H stored
    /// renumbered, as a GNN keeps its graph and features after loading;
    /// the vendor layer in the given order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<String>,
    /// H into the stored order plus the output back (`dense_to_internal` +
    /// `dense_to_user`), microseconds: paid once per forward pass, not per
    /// layer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convert_us: Option<f64>,
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

/// Variants compiled in parallel before the layer's search (the prior's
/// first ones and the first of every family); the others are compiled when
/// the search reaches them.
const GCN_PRECOMPILE: usize = 16;

/// Budget of the layer's SpMM search, seconds (compiles of candidates not
/// compiled ahead, loads, checks and timings).
const GCN_SEARCH_SECONDS: f64 = 12.0;

/// The layer's fused SpMM as an [`SpmmSource`]: a candidate is compiled (or
/// taken from the precompiled ones), its fused bias-relu entry run on a
/// NaN-poisoned Y and checked against float64 per row, then timed.
struct LayerSource<'a> {
    gpu: &'a Gpu,
    a: &'a DeviceCsr<f32>,
    x: DeviceDense<f32>,
    y: DeviceDense<f32>,
    bias: &'a DeviceVec<f32>,
    dref: DeviceReference,
    /// The layer's SpMM without bias and ReLU (for the plain entry's check).
    plain: Option<DeviceReference>,
    fo: usize,
    bytes: f64,
    specs: HashMap<SpmmVariant, Built>,
}

impl LayerSource<'_> {
    fn kernel(&mut self, v: &SpmmVariant) -> Result<RuntimeSpmm<f32>, String> {
        let key = (ValueType::F32, DenseLayout::RowMajor, self.fo);
        let arch = self.gpu.arch();
        let spec = self
            .specs
            .entry(*v)
            .or_insert_with(|| compile_all(&[(key, *v)], &arch, EPILOGUES).remove(0))
            .clone()?;
        RuntimeSpmm::<f32>::from_spec(spec).map_err(|e| format!("{e:#}"))
    }

    /// `v`'s fused entry (bias-relu, checked against `dref`) or its plain
    /// entry (`Y = A X`, against `plain`) on a NaN-poisoned Y, checked per
    /// row against float64, then timed: (error, median microseconds).
    fn check_and_time(
        &mut self,
        v: &SpmmVariant,
        fused: bool,
        reps: u32,
    ) -> Result<(f64, f64), String> {
        let k = self.kernel(v)?;
        let (gpu, a, bias, fo) = (self.gpu, self.a, self.bias, self.fo);
        let (x, y) = (&self.x, &mut self.y);
        let reference = match fused {
            true => &mut self.dref,
            false => self.plain.as_mut().ok_or("no plain reference")?,
        };
        let run = |y: &mut DeviceDense<f32>| match fused {
            true => k.spmm_bias_relu(gpu, 1.0, a, x, 0.0, y, bias),
            false => k.spmm(gpu, 1.0, a, x, 0.0, y),
        };
        // SAFETY: used on the Gpu's stream within this call.
        poison(gpu, unsafe { y.raw_mut() }).map_err(|e| format!("{e:#}"))?;
        run(y).map_err(|e| format!("launch: {e}"))?;
        // SAFETY: as above.
        let err = reference
            .max_row_rel_err(unsafe { y.raw() }, DenseLayout::RowMajor, fo)
            .map_err(|e| format!("{e:#}"))?;
        if err > tolerance(ValueType::F32) {
            return Err(format!("max row error {err:.2e}"));
        }
        let mut launch = || -> Result<()> { Ok(run(y)?) };
        let times = time_launches::<anyhow::Error>(gpu, &mut launch, 2, reps, 0.5)
            .map_err(|e| format!("{e:#}"))?;
        let median = stats(&times).ok_or("not timed")?.median;
        Ok((err, median))
    }
}

impl SpmmSource for LayerSource<'_> {
    fn samples(&self) -> usize {
        1
    }

    fn measure(
        &mut self,
        v: &SpmmVariant,
        _n: usize,
        reps: u32,
    ) -> Result<(Vec<SampleResult>, f64), SearchError> {
        let t0 = Instant::now();
        let r = match self.check_and_time(v, true, reps) {
            Ok((err, us)) => SampleResult {
                correct: true,
                rel_err: err,
                gbs: self.bytes / us / 1e3,
                median_us: us,
                error: None,
            },
            Err(e) => SampleResult::failed(e),
        };
        Ok((vec![r], t0.elapsed().as_secs_f64()))
    }
}

/// Our fused SpMM for the layer, chosen by the product's measured search
/// (`search_spmm` over the whole space in the product's order, records of
/// class `exclude` left out, as a build runs it, on the fused entry),
/// re-timed, and its plain entry timed too.
fn pick_variant(
    gpu: &Gpu,
    exclude: Option<&str>,
    a_hat: &Csr,
    a: &DeviceCsr<f32>,
    bias: &DeviceVec<f32>,
    b64: &[f64],
    fo: usize,
) -> Result<Picked> {
    let t: Vec<f32> = random_dense(a_hat.cols() * fo, 0x6c_0002);
    let dref = DeviceReference::upload(
        gpu,
        &Reference::new(a_hat, &t, fo, DenseLayout::RowMajor, Some(b64)),
    )?;
    let order = spmm_search_order(
        &Features::compute(a_hat),
        ValueType::F32,
        fo,
        DenseLayout::RowMajor,
        exclude,
    );
    let ahead = search_head(&order, GCN_PRECOMPILE);
    let key = (ValueType::F32, DenseLayout::RowMajor, fo);
    let jobs: Vec<_> = ahead.iter().map(|v| (key, *v)).collect();
    let built = compile_all(&jobs, &gpu.arch(), EPILOGUES);
    let mut src = LayerSource {
        gpu,
        a,
        x: DeviceDense::from_host(gpu, a_hat.cols(), fo, DenseLayout::RowMajor, &t)?,
        y: DeviceDense::<f32>::zeros(gpu, a_hat.rows(), fo, DenseLayout::RowMajor)?,
        bias,
        dref,
        plain: None,
        fo,
        bytes: spmm_bytes(a_hat.rows(), a_hat.cols(), a_hat.nnz(), fo, 4) as f64,
        specs: ahead.into_iter().zip(built).collect(),
    };
    let cfg = SpmmSearchConfig {
        budget_seconds: GCN_SEARCH_SECONDS,
        ..SpmmSearchConfig::default()
    };
    let out = search_spmm(&[(fo, order)], &mut src, &cfg)
        .map_err(|e| anyhow!("the layer's SpMM search failed: {e}"))?;
    let w = &out.widths[0];
    let (_, us) = src
        .check_and_time(&w.winner, true, cfg.final_reps)
        .map_err(|e| anyhow!("re-timing {}: {e}", w.winner.id()))?;
    src.plain = Some(DeviceReference::upload(
        gpu,
        &Reference::new(a_hat, &t, fo, DenseLayout::RowMajor, None),
    )?);
    let (_, plain_us) = src
        .check_and_time(&w.winner, false, cfg.final_reps)
        .map_err(|e| anyhow!("{} (plain entry): {e}", w.winner.id()))?;
    let k = src.kernel(&w.winner).map_err(|e| anyhow!(e))?;
    Ok(Picked {
        kernel: k,
        variant: w.winner.id(),
        us,
        plain_us,
        candidates: w.candidates,
    })
}

/// What [`pick_variant`] chose.
struct Picked {
    kernel: RuntimeSpmm<f32>,
    variant: String,
    /// The fused entry's microseconds.
    us: f64,
    /// The same variant's plain entry (`Y = A X`), microseconds.
    plain_us: f64,
    /// Candidates the search measured.
    candidates: usize,
}

/// Runs one layer case: ours and the vendor's, each checked and timed.
pub fn gcn_case(
    gpu: &Gpu,
    name: &str,
    graph: &Csr,
    f: usize,
    reps: usize,
    reorder: Reorder,
) -> Result<GcnCase> {
    // The search leaves out the records of the graph's own class, if the
    // records hold the graph: the layer is judged as on an unseen graph.
    let records = SpmmRecords::embedded();
    let exclude = records.and_then(|r| r.class_of(name));
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
    // Ours in the renumbered order when asked: `P Â Pᵀ`, H's rows permuted,
    // its own float64 reference (`P T`).
    let renum = renumbered::renumber(&a_hat, reorder);
    let rm = DenseLayout::RowMajor;
    let (a_ours, h_ours, mut ours_ref) = match &renum {
        None => (&a_hat, Cow::Borrowed(&h[..]), None),
        Some(r) => {
            eprintln!(
                "  ours renumbered ({}) in {:.2} s",
                reorder.as_str(),
                r.host_seconds
            );
            let t_r = renumbered::permute_rows(&t64, &r.new_to_old, f, rm);
            let reference = Reference::new(&r.csr, &t_r, f, rm, Some(&b64));
            let h_r = renumbered::permute_rows(&h, &r.new_to_old, f, rm);
            let dref = DeviceReference::upload(gpu, &reference)?;
            (&r.csr, Cow::Owned(h_r), Some(dref))
        }
    };
    drop(t64);
    let a = DeviceCsr::<f32>::upload_with(gpu, a_ours, Layouts::NONE)?;
    let dbias = DeviceVec::from_host(gpu, &bias)?;
    let Picked {
        kernel: k,
        variant,
        us: spmm_us,
        plain_us,
        candidates,
    } = pick_variant(gpu, exclude, a_ours, &a, &dbias, &b64, f)?;
    let blas = Blas::new(gpu)?;
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
    let stream = unsafe { gpu.stream() };
    let (dh, dw) = (stream.clone_htod(&h_ours[..])?, stream.clone_htod(&w)?);
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
    let ours_err = ours_ref
        .as_mut()
        .unwrap_or(&mut layer_ref)
        .max_row_rel_err(unsafe { y.raw() }, DenseLayout::RowMajor, f)?;
    drop(ours_ref);
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
    let convert_us = match renum {
        Some(_) => renumbered::convert_us::<f32>(gpu, &a_hat, reorder, &[(rm, f)], reps as u32)?
            .first()
            .and_then(|c| c.1),
        None => None,
    };
    eprintln!(
        "  ours {ours_us:.1} us/layer ({variant}, {candidates} candidates searched; its SpMM \
         {spmm_us:.1} us fused, {plain_us:.1} us plain), vendor {:.1} ({}; its SpMM {:.1} us); \
         error {ours_err:.1e} vs {:.1e}",
        v.us_per_layer, v.alg, v.spmm_us, v.max_row_rel_err
    );
    Ok(GcnCase {
        name: name.into(),
        nodes,
        nnz: a_hat.nnz(),
        f_in: f,
        f_out: f,
        variant,
        search_candidates: candidates,
        ours_us_per_layer: ours_us,
        vendor_us_per_layer: v.us_per_layer,
        speedup: v.us_per_layer / ours_us,
        ours_spmm_us: spmm_us,
        ours_spmm_plain_us: Some(plain_us),
        vendor_spmm_us: v.spmm_us,
        vendor_alg: v.alg,
        ours_max_row_rel_err: ours_err,
        vendor_max_row_rel_err: v.max_row_rel_err,
        graphed: ours_graphed && v.graphed,
        reorder: (!reorder.is_none()).then(|| reorder.as_str().to_string()),
        convert_us,
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
