//! The X-row gather floor of SpMM: a microbenchmark of the rate at which the
//! GPU serves the traffic every CSR SpMM `Y = A X` of one matrix must do in
//! its order (`floor.cu`: the CSR arrays streamed once, the whole X row of
//! every nonzero gathered in CSR order, `Y` written once, no row structure,
//! no reuse beyond what L1 and L2 keep by themselves). For column-major X the
//! rows are gathered column by column, every (nonzero, column chunk) pair in
//! parallel ([`group_lanes`]).
//!
//! Why it bounds CSR kernels: a kernel that reads X only through the
//! caches must fetch, per nonzero, the N values of its X row; balanced
//! perfectly and with the memory-level parallelism of `floor.cu` that stream
//! runs at the floor's rate. A kernel can beat it only by reusing X rows
//! explicitly (registers or shared memory across the nonzeros of a block) or
//! by reading less than CSR; so `ours / floor` above 1 is reuse, below 1 is
//! room. It is a measurement of one access pattern, not a proof of a limit:
//! for column-major X the transposed path (`.t` variants) gathers whole rows
//! from a row-major copy made by two dense transposes, an order this floor
//! does not model, so there it bounds only the direct column-major path.

use anyhow::{Context, Result};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::measure::{stats, time_launches};
use sparserl_rt::{DeviceCsr, Gpu, Scalar, ValueType};

/// CUDA source of the floor kernels (both value types and layouts).
pub const SOURCE: &str = include_str!("floor.cu");

/// Threads per block (`FLOOR_BLOCK` in the source).
const BLOCK: u32 = 256;

/// Nonzeros in flight per lane group (`FLOOR_UNROLL` in the source).
const UNROLL: usize = 4;

/// Columns per lane of the column-major floor (`FLOOR_COL_CHUNK`).
const COL_CHUNK: usize = 8;

/// Values per vector load: 4 f32 / 2 f64 for row-major X when `n` is a
/// multiple of it, else 1.
pub fn vector_width(value: ValueType, n: usize, layout: DenseLayout) -> usize {
    let vw = 16 / value.size();
    if layout == DenseLayout::RowMajor && n.is_multiple_of(vw) {
        vw
    } else {
        1
    }
}

/// Lanes per nonzero. Row-major: the power of two covering `n / vw` lanes,
/// at most 32 (a nonzero's X row read by neighbouring lanes). Column-major:
/// 1, a lane per (nonzero, chunk of [`COL_CHUNK`] columns), so a warp reads
/// one column of X for 32 neighbouring nonzeros at a time (an SpMV's gather,
/// column by column): the order in which a column-wise kernel reads X.
/// Gathering whole rows of column-major X instead (one sector per value)
/// measured 3.3x slower than cuSPARSE's column-wise algorithm, and one lane
/// looping over all the columns of its nonzero was a latency chain (45x
/// cuSPARSE's time on a 7k-nonzero matrix at N = 256): neither bounds
/// anything.
pub fn group_lanes(n: usize, vw: usize, layout: DenseLayout) -> usize {
    match layout {
        DenseLayout::RowMajor => n.div_ceil(vw.max(1)).next_power_of_two().clamp(1, 32),
        DenseLayout::ColMajor => 1,
    }
}

/// Entry point for a value type, layout and vector width.
pub fn entry(value: ValueType, layout: DenseLayout, vw: usize) -> String {
    let l = match layout {
        DenseLayout::RowMajor => "row",
        DenseLayout::ColMajor => "col",
    };
    format!("sparserl_spmm_floor_{}_{l}_v{vw}", value.as_str())
}

fn function(gpu: &Gpu, entry: &str) -> Result<CudaFunction> {
    let arch = gpu.arch();
    // SAFETY: this entry name is this module's own (no other code loads it) and names the code its closure compiles.
    Ok(unsafe {
        gpu.function_or_load(entry, || {
            sparserl_rt::nvrtc::compile_ptx(SOURCE, &arch, &[])
                .map_err(|e| sparserl_rt::RtError::Compile(e.to_string()))
        })?
    })
}

/// Median microseconds of the floor kernel on `a` (uploaded on `gpu`) for
/// `n` columns in `layout`, with `copies` rotated `X`/`Y` buffers (random
/// X), warm-up 5 and `reps` samples through [`time_launches`] like ours and
/// cuSPARSE; `None` for a matrix without nonzeros or rows.
pub fn floor_us<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceCsr<T>,
    n: usize,
    layout: DenseLayout,
    copies: usize,
    reps: u32,
) -> Result<Option<f64>> {
    a.check_gpu(gpu)?;
    if a.nnz() == 0 || a.rows() == 0 || n == 0 {
        return Ok(None);
    }
    let rows = i32::try_from(a.rows()).context("rows exceed the kernel's int")?;
    let nnz = i32::try_from(a.nnz()).context("nonzeros exceed the kernel's int")?;
    let nn = i32::try_from(n).context("columns exceed the kernel's int")?;
    let vw = vector_width(T::TYPE, n, layout);
    let g = group_lanes(n, vw, layout);
    let gi = g as i32;
    let ldx = crate::cusparse_spmm::leading_dim(a.cols(), n, layout) as i64;
    let func = function(gpu, &entry(T::TYPE, layout, vw))?;
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
    let stream = unsafe { gpu.stream() };
    let x: Vec<T> = super::random_dense(a.cols() * n, 0x00f1_00e5);
    let mut xs: Vec<CudaSlice<T>> = Vec::new();
    let mut ys: Vec<CudaSlice<T>> = Vec::new();
    for _ in 0..copies.max(1) {
        xs.push(stream.clone_htod(&x).context("uploading X")?);
        ys.push(
            stream
                .alloc_zeros::<T>(a.rows() * n)
                .context("allocating Y")?,
        );
    }
    let per_sm = func
        .occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0, None)
        .context("occupancy of the floor kernel")?
        .max(1) as usize;
    let want = match layout {
        DenseLayout::RowMajor => a.nnz().div_ceil(BLOCK as usize / g * UNROLL),
        // One lane per (nonzero, chunk of columns): `spmm_floor_col`.
        DenseLayout::ColMajor => (a.nnz() * n.div_ceil(COL_CHUNK)).div_ceil(BLOCK as usize),
    }
    .max(1);
    let cfg = LaunchConfig {
        grid_dim: (want.min(gpu.sm_count() * per_sm).max(1) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arrays are used only on the matrix's stream (`check_gpu`
    // above), only read (the kernel's `const` parameters), and every launch
    // has completed before this function returns (the synchronize below, on
    // success and on error), while `a` is borrowed.
    let (indptr, indices, values) = unsafe { a.raw_csr() };
    let mut next = 0;
    let mut launch = || -> Result<()> {
        let i = next % xs.len();
        next += 1;
        let mut b = stream.launch_builder(&func);
        b.arg(indptr)
            .arg(indices)
            .arg(values)
            .arg(&xs[i])
            .arg(&ldx)
            .arg(&mut ys[i])
            .arg(&rows)
            .arg(&nnz)
            .arg(&nn)
            .arg(&gi);
        // SAFETY: the arguments match FLOOR_ENTRY's parameters in type and
        // order for T (int*, int*, T*, T*, long long, T*, int, int, int,
        // int); indptr holds rows + 1 entries, indices and values at least
        // nnz (indices validated below cols at upload), X cols x n values
        // with leading dimension ldx (row-major: n, a multiple of the vector
        // width for the vector entries, so every vector load is aligned;
        // column-major: cols), Y rows x n; g divides the block size.
        unsafe { b.launch(cfg) }?;
        Ok(())
    };
    let timed = time_launches::<anyhow::Error>(gpu, &mut launch, 5, reps, 2.0);
    gpu.synchronize()?;
    Ok(stats(&timed?).map(|s| s.median))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_groups_cover_the_row() {
        assert_eq!(vector_width(ValueType::F32, 64, DenseLayout::RowMajor), 4);
        assert_eq!(vector_width(ValueType::F32, 30, DenseLayout::RowMajor), 1);
        assert_eq!(vector_width(ValueType::F64, 64, DenseLayout::RowMajor), 2);
        assert_eq!(vector_width(ValueType::F32, 64, DenseLayout::ColMajor), 1);
        let row = DenseLayout::RowMajor;
        assert_eq!(group_lanes(16, 4, row), 4);
        assert_eq!(group_lanes(256, 4, row), 32);
        assert_eq!(group_lanes(1, 1, row), 1);
        assert_eq!(group_lanes(30, 1, row), 32);
        assert_eq!(group_lanes(3, 1, row), 4);
        for (n, vw) in [(16, 4), (256, 4), (1, 1), (7, 1), (64, 2)] {
            assert_eq!(32 % group_lanes(n, vw, row), 0);
        }
        // Column-major: one lane per nonzero at every width (column-wise gathers).
        for n in [1, 16, 256] {
            assert_eq!(group_lanes(n, 1, DenseLayout::ColMajor), 1);
        }
    }

    #[test]
    fn the_column_chunk_matches_the_source() {
        assert!(SOURCE.contains(&format!("#define FLOOR_COL_CHUNK {COL_CHUNK}\n")));
    }

    #[test]
    fn every_entry_is_in_the_source() {
        for v in [ValueType::F32, ValueType::F64] {
            for l in [DenseLayout::RowMajor, DenseLayout::ColMajor] {
                for n in [1, 16, 30, 64] {
                    let e = entry(v, l, vector_width(v, n, l));
                    assert!(SOURCE.contains(&format!("FLOOR_ENTRY({e},")), "{e}");
                }
            }
        }
    }
}
