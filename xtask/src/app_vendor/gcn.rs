//! The vendor side of one GCN layer `H' = relu(Â H W + b)` (f32, row-major
//! features): cuBLAS GEMM `T = H W`, cuSPARSE SpMM `Y = Â T` with the
//! fastest correct CSR algorithm (measured on this matrix and width,
//! preprocessed), then a bias-and-ReLU kernel over `Y`; one layer captured
//! into a CUDA graph and replayed. All buffers, descriptors and the SpMM
//! work buffer are created once.

use super::*;
use crate::bench_spmm::check::Reference;
use crate::bench_spmm::rowerr::DeviceReference;
use crate::cusparse_spmm::{CusparseSpmm, SpmmAlg};
use sparserl_rt::dense::DenseLayout;

/// Entry of the bias-and-ReLU kernel.
const BIAS_RELU: &str = "sparserl_vendor_bias_relu_f32";

/// Its source: `y[i] = max(y[i] + bias[i % f], 0)` over `rows x f` values.
const BIAS_RELU_SOURCE: &str = r#"
extern "C" __global__ void sparserl_vendor_bias_relu_f32(float* __restrict__ y,
        const float* __restrict__ bias, long long len, int f) {
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < len;
         i += (long long)gridDim.x * blockDim.x) {
        y[i] = fmaxf(y[i] + bias[i % f], 0.0f);
    }
}
"#;

/// One layer's inputs (host, row-major).
pub struct GcnLayer<'a> {
    /// The normalised adjacency `Â` (`nodes x nodes`).
    pub a_hat: &'a Csr,
    /// Features `H` (`nodes x f_in`).
    pub h: &'a [f32],
    /// Weights `W` (`f_in x f_out`).
    pub w: &'a [f32],
    /// Bias `b` (`f_out`).
    pub bias: &'a [f32],
    /// Input width.
    pub f_in: usize,
    /// Output width.
    pub f_out: usize,
}

/// The vendor layer's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct VendorGcn {
    /// Median microseconds per layer (graph replay).
    pub us_per_layer: f64,
    /// The cuSPARSE algorithm used.
    pub alg: String,
    /// Every algorithm's check and time on the SpMM alone.
    pub algs: Vec<crate::bench_spmm::report::AlgResult>,
    /// The SpMM alone, microseconds.
    pub spmm_us: f64,
    /// Largest per-row relative error of the layer against float64.
    pub max_row_rel_err: f64,
    /// Timed as CUDA-graph replays (else back to back: capture failed).
    pub graphed: bool,
}

/// Median microseconds of `reps` replays of `graph` (after one untimed),
/// each between its own pair of events.
pub fn time_replays(gpu: &Gpu, graph: &CudaGraph, reps: usize) -> Result<f64> {
    graph.launch().context("warm-up replay")?;
    gpu.synchronize()?;
    let mut t = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        t.push(timed_ms(gpu, || Ok(graph.launch()?))? * 1e3);
    }
    sparserl_rt::measure::stats(&t)
        .map(|s| s.median)
        .ok_or_else(|| anyhow!("no replay timed"))
}

/// Microseconds per layer: `step` captured into a CUDA graph and replayed
/// (median of `reps` replays; `true`), or, where capture fails, `reps`
/// steps queued back to back between two events (`false`, reported).
pub fn time_layer(
    gpu: &Gpu,
    step: &mut dyn FnMut() -> Result<()>,
    reps: usize,
) -> Result<(f64, bool)> {
    match capture_one(gpu, step) {
        Ok(g) => Ok((time_replays(gpu, &g, reps)?, true)),
        Err(e) => {
            eprintln!("  CUDA-graph capture failed ({e:#}); timing the layer back to back");
            gpu.synchronize()?;
            step()?;
            let n = reps.max(1);
            let ms = timed_ms(gpu, || {
                for _ in 0..n {
                    step()?;
                }
                Ok(())
            })?;
            Ok((ms * 1e3 / n as f64, false))
        }
    }
}

/// Captures one step into a CUDA graph.
pub fn capture_one(gpu: &Gpu, step: &mut dyn FnMut() -> Result<()>) -> Result<CudaGraph> {
    capture_graph(gpu, 1, &mut |_| step())
}

fn bias_relu(
    gpu: &Gpu,
    f: &CudaFunction,
    y: &mut CudaSlice<f32>,
    b: &CudaSlice<f32>,
    rows: usize,
    fo: usize,
) -> Result<()> {
    let len = (rows * fo) as i64;
    let fi = c_len(fo)?;
    let grid = ((rows * fo).div_ceil(256)).clamp(1, gpu.sm_count() * 8) as u32;
    let cfg = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
    let mut l = unsafe { gpu.stream() }.launch_builder(f);
    l.arg(y).arg(b).arg(&len).arg(&fi);
    // SAFETY: BIAS_RELU takes (float*, const float*, long long, int); `y`
    // holds rows x f_out values and `b` f_out (checked by the caller), both
    // on this stream; every index is below len or f.
    unsafe { l.launch(cfg) }?;
    Ok(())
}

/// Runs and times the vendor layer; `reference` is the float64 layer output.
pub fn run_gcn(
    gpu: &Gpu,
    layer: &GcnLayer,
    reference: &mut DeviceReference,
    reps: usize,
) -> Result<VendorGcn> {
    let (nodes, fi, fo) = (layer.a_hat.rows(), layer.f_in, layer.f_out);
    ensure!(layer.h.len() == nodes * fi && layer.w.len() == fi * fo && layer.bias.len() == fo);
    library_status()?;
    let blas = Blas::new(gpu)?;
    let a = DeviceCsr::<f32>::upload_with(gpu, layer.a_hat, Layouts::NONE)?;
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
    let stream = unsafe { gpu.stream() };
    let h = stream.clone_htod(layer.h)?;
    let w = stream.clone_htod(layer.w)?;
    let b = stream.clone_htod(layer.bias)?;
    // The SpMM alone on a random T: the fastest correct algorithm.
    let t0: Vec<f32> = crate::bench_spmm::random_dense(nodes * fo, 0x6c_0001);
    let mut cs = CusparseSpmm::new(gpu, &a, &t0, fo, DenseLayout::RowMajor, 1)?;
    let spmm_ref = Reference::new(layer.a_hat, &t0, fo, DenseLayout::RowMajor, None);
    let mut spmm_dref = DeviceReference::upload(gpu, &spmm_ref)?;
    drop(spmm_ref);
    let (algs, best) = crate::bench_spmm::best_alg(&mut cs, &mut spmm_dref, 20)?;
    drop(spmm_dref);
    let (alg, spmm_us): (SpmmAlg, f64) =
        best.ok_or_else(|| anyhow!("no cuSPARSE SpMM algorithm passed the check"))?;
    // SAFETY: this entry name is this module's own (no other code loads it)
    // and names the code its closure compiles.
    let f = unsafe {
        gpu.function_or_load(BIAS_RELU, || {
            sparserl_rt::nvrtc::compile_ptx(BIAS_RELU_SOURCE, &gpu.arch(), &[])
                .map_err(|e| RtError::Compile(e.to_string()))
        })
    }
    .context("loading the bias-ReLU kernel")?;
    let run = |cs: &mut CusparseSpmm<'_, f32>| -> Result<()> {
        blas.gemm_row_major((nodes, fi, fo), &h, &w, cs.x0_mut())?;
        cs.launch(alg, 0)?;
        bias_relu(gpu, &f, cs.y0_mut(), &b, nodes, fo)
    };
    run(&mut cs)?;
    let err = reference.max_row_rel_err(cs.y0(), DenseLayout::RowMajor, fo)?;
    let (us, graphed) = time_layer(gpu, &mut || run(&mut cs), reps)?;
    Ok(VendorGcn {
        us_per_layer: us,
        alg: alg.name().to_string(),
        algs,
        spmm_us,
        max_row_rel_err: err,
        graphed,
    })
}
