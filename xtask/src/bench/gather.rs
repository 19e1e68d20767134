//! The gather floor: a microbenchmark of the rate at which the GPU serves the
//! memory traffic of a perfectly balanced CSR SpMV of one matrix in a given
//! order (`gather.cu`: the row pointers, indices and values streamed once,
//! `x[indices[k]]` gathered for every nonzero in the matrix's order, `y`
//! written once, no row structure). On large irregular matrices the random
//! gathers of `x` (a 32-byte sector each) bound every CSR kernel; the floor
//! measures that bound for the given order, timed like ours and cuSPARSE.
//! It is a measurement of one access pattern, not a proof of a limit.

use super::*;
use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

/// CUDA source of the gather-floor kernels (both value types, both flavours).
pub const SOURCE: &str = include_str!("gather.cu");

/// Threads per block (`GATHER_BLOCK` in the source).
const BLOCK: u32 = 256;

/// Nonzeros per thread and loop trip (`GATHER_UNROLL` in the source).
const UNROLL: usize = 4;

/// Ours and cuSPARSE are "at the gather limit" when both are within this
/// fraction of the floor (either side).
pub const AT_LIMIT: f64 = 0.05;

/// How the kernel loads `x`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Load {
    /// Plain global loads.
    Plain,
    /// `__ldg` (read-only data cache).
    Ldg,
}

impl Load {
    /// Both flavours, in the order they are timed.
    pub const ALL: [Load; 2] = [Load::Plain, Load::Ldg];

    /// Name in reports and in the entry point.
    pub fn name(self) -> &'static str {
        match self {
            Load::Plain => "plain",
            Load::Ldg => "ldg",
        }
    }
}

/// Entry point of the kernel for `value` and `load`.
pub fn entry(value: ValueType, load: Load) -> String {
    format!("sparserl_gather_floor_{}_{}", value.as_str(), load.name())
}

/// The speedup over cuSPARSE (on the given order) of a CSR kernel that ran
/// at the gather floor: `(given, renumbered)`. `given`: at the floor of the
/// given order. `renumbered` (rows whose winner is renumbered): at the floor
/// of the renumbered matrix plus this run's cost of the permutations of a
/// launch in the user's numbering (ours minus our kernel alone, never below
/// zero). All rates are of the same compulsory bytes, so their inverses add
/// as times.
pub fn at_floor(row: &Row) -> (Option<f64>, Option<f64>) {
    let given = ratio(row.gather_floor_gbs, row.cusparse_gbs);
    let renumbered = match row.reorder.as_deref() {
        Some(o) if o != "none" => at_floor_renumbered(row),
        _ => None,
    };
    (given, renumbered)
}

/// [`at_floor`]'s renumbered bound, in times (inverse rates).
fn at_floor_renumbered(row: &Row) -> Option<f64> {
    let time = |g: Option<f64>| g.filter(|g| g.is_finite() && *g > 0.0).map(|g| 1.0 / g);
    let perms = (time(row.ours_gbs)? - time(row.ours_kernel_same_order_gbs)?).max(0.0);
    Some(time(row.cusparse_gbs)? / (time(row.gather_floor_same_order_gbs)? + perms))
}

/// The better of ours and [`at_floor`]'s bounds: what this run shows
/// reachable on the row, in speedup over cuSPARSE on the given order (a
/// layout that reads fewer bytes than CSR can go beyond the floor, so ours
/// counts where it is faster).
pub fn reachable(row: &Row) -> Option<f64> {
    let (given, renumbered) = at_floor(row);
    [ratio(row.ours_gbs, row.cusparse_gbs), given, renumbered]
        .into_iter()
        .flatten()
        .max_by(f64::total_cmp)
}

/// Whether ours and cuSPARSE are both within [`AT_LIMIT`] of the row's
/// gather floor (given order).
pub fn at_gather_limit(row: &Row) -> bool {
    let near = |g: Option<f64>| {
        ratio(g, row.gather_floor_gbs).is_some_and(|r| (r - 1.0).abs() <= AT_LIMIT)
    };
    near(row.ours_gbs) && near(row.cusparse_gbs)
}

/// Whether the row gets a gather floor: the bandwidth-bound suites, unless
/// `--no-gather`.
fn measured(ctx: &Ctx, row: &Row) -> bool {
    ctx.gather && (row.suite == "large" || row.suite == "irregular")
}

/// The gather floor of the bench's matrix in the given order into `row`
/// (bandwidth-bound suites only, unless `--no-gather`). A failure becomes a
/// note.
pub(super) fn floor_row<T: Scalar>(ctx: &Ctx, bench: &Bench<T>, row: &mut Row) {
    if !measured(ctx, row) {
        return;
    }
    match measure(ctx, bench) {
        Ok(Some((gbs, load))) => {
            row.gather_floor_gbs = Some(gbs);
            row.gather_floor_load = Some(load.name().to_string());
        }
        Ok(None) => {}
        Err(e) => row.notes.push(format!("gather floor failed: {e:#}")),
    }
}

/// The gather floor of a renumbered matrix (the one our kernel alone and
/// cuSPARSE run on in the same-order comparison) into `row`.
pub(super) fn floor_same_order<T: Scalar>(ctx: &Ctx, bench: &Bench<T>, row: &mut Row) {
    if !measured(ctx, row) {
        return;
    }
    match measure(ctx, bench) {
        Ok(g) => row.gather_floor_same_order_gbs = g.map(|g| g.0),
        Err(e) => row.notes.push(format!(
            "gather floor on the renumbered matrix failed: {e:#}"
        )),
    }
}

/// The kernel for `T` and `load`, compiled with NVRTC at its first use on
/// this GPU.
fn function<T: Scalar>(gpu: &Gpu, load: Load) -> Result<CudaFunction> {
    let arch = gpu.arch();
    let compile = || {
        sparserl_rt::nvrtc::compile_ptx(SOURCE, &arch, &[])
            .map_err(|e| sparserl_rt::RtError::Compile(e.to_string()))
    };
    // SAFETY: `entry` names one kernel of `SOURCE` per value type and load
    // flavour; it is launched with that kernel's arguments below.
    let f = unsafe { gpu.function_or_load(&entry(T::TYPE, load), compile) }?;
    Ok(f)
}

/// Times both flavours on the bench's matrix in its given order (warm-up 5,
/// `ctx.reps` samples, at most 2 s each, through [`time_launches`] like ours
/// and cuSPARSE) with as many rotated `x`/`y` buffers as the bench uses: the
/// faster median as GB/s of the matrix's compulsory CSR bytes, and its
/// flavour; `None` for a matrix without nonzeros.
fn measure<T: Scalar>(ctx: &Ctx, bench: &Bench<T>) -> Result<Option<(f64, Load)>> {
    floor_gbs(
        ctx.tuner.gpu(),
        bench.device_csr(),
        bench.csr(),
        bench.copies(),
        ctx.reps,
    )
}

/// The gather floor of `a` (the upload of `csr` on `gpu`), timed as
/// [`measure`] describes with `copies` rotated `x`/`y` buffers and `reps`
/// samples: the faster flavour's GB/s of `csr`'s compulsory bytes and the
/// flavour; `None` for a matrix without nonzeros. Also used by `bench-app`.
pub(crate) fn floor_gbs<T: Scalar>(
    gpu: &Gpu,
    a: &sparserl_rt::DeviceCsr<T>,
    csr: &Csr,
    copies: usize,
    reps: u32,
) -> Result<Option<(f64, Load)>> {
    let bytes = csr.compulsory_bytes(T::TYPE.size()) as f64;
    a.check_gpu(gpu)?;
    if a.nnz() == 0 || a.rows() == 0 {
        return Ok(None);
    }
    let rows = i32::try_from(a.rows()).context("rows exceed the kernel's int")?;
    let nnz = i32::try_from(a.nnz()).context("nonzeros exceed the kernel's int")?;
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per
    // Gpu, no sparserl-rt capture in progress, own work on own buffers).
    let stream = unsafe { gpu.stream() };
    let x: Vec<T> = random_x(a.cols(), 0x0b5e_55ed);
    let mut xs: Vec<CudaSlice<T>> = Vec::new();
    let mut ys: Vec<CudaSlice<T>> = Vec::new();
    for _ in 0..copies.max(1) {
        xs.push(stream.clone_htod(&x).context("uploading x")?);
        ys.push(stream.alloc_zeros::<T>(a.rows()).context("allocating y")?);
    }
    // SAFETY: the arrays are used only on the matrix's stream (`check_gpu`
    // above: it is this Gpu's), only read (the kernel's `const` parameters),
    // and every launch has completed before this function returns (the
    // synchronize below, on success and on error), while `a` is borrowed.
    let (indptr, indices, values) = unsafe { a.raw_csr() };
    let mut best: Option<(f64, Load)> = None;
    let mut time_both = || -> Result<()> {
        for load in Load::ALL {
            let func = function::<T>(gpu, load)?;
            let per_sm = func
                .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
                .context("occupancy of the gather kernel")?
                .max(1) as usize;
            let want = a.nnz().max(a.rows() + 1).div_ceil(BLOCK as usize * UNROLL);
            let cfg = LaunchConfig {
                grid_dim: (want.min(gpu.sm_count() * per_sm).max(1) as u32, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut next = 0;
            let mut launch = || -> Result<()> {
                let i = next % xs.len();
                next += 1;
                let mut b = stream.launch_builder(&func);
                b.arg(indptr)
                    .arg(indices)
                    .arg(values)
                    .arg(&xs[i])
                    .arg(&mut ys[i])
                    .arg(&rows)
                    .arg(&nnz);
                // SAFETY: the arguments match `GATHER_ENTRY`'s parameters in type
                // and order for T (int*, int*, T*, T*, T*, int, int); indptr holds
                // rows + 1 entries, indices and values at least nnz, x cols (the
                // indices were validated below cols at upload), y rows; all on
                // this stream.
                unsafe { b.launch(cfg) }?;
                Ok(())
            };
            let times = time_launches::<anyhow::Error>(gpu, &mut launch, 5, reps, 2.0)?;
            if let Some(m) = median(&times) {
                let gbs = bytes / (m * 1e3);
                if best.is_none_or(|b| gbs > b.0) {
                    best = Some((gbs, load));
                }
            }
        }
        Ok(())
    };
    let timed = time_both();
    gpu.synchronize()?;
    timed?;
    Ok(best)
}
