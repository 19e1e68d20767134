//! The per-row error check on the device: the float64 reference and its
//! magnitudes uploaded once per case, one kernel (`rowerr.cu`) per check
//! reduces a result to its largest per-row relative error, so checking a
//! 2.5 GB result costs milliseconds instead of a download. The measure is
//! [`Reference::max_row_rel_err`]'s (a unit test compares the two).

use super::check::Reference;
use anyhow::{Context, Result};
use cudarc::driver::{CudaFunction, CudaSlice, LaunchConfig, PushKernelArg};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::reference::ROW_FLOOR;
use sparserl_rt::{Gpu, Scalar, ValueType};

/// CUDA source of the check kernels.
pub const SOURCE: &str = include_str!("rowerr.cu");

/// Threads per block (`ROWERR_BLOCK`).
const BLOCK: u32 = 256;

/// Most blocks of one check (their maxima come back to the host).
const MAX_BLOCKS: usize = 2048;

fn entry(value: ValueType) -> String {
    format!("sparserl_spmm_rowerr_{}", value.as_str())
}

fn function(gpu: &Gpu, value: ValueType) -> Result<CudaFunction> {
    load(gpu, &entry(value))
}

fn load(gpu: &Gpu, entry: &str) -> Result<CudaFunction> {
    let arch = gpu.arch();
    // SAFETY: this entry name is this module's own (no other code loads it) and names the code its closure compiles.
    Ok(unsafe {
        gpu.function_or_load(entry, || {
            sparserl_rt::nvrtc::compile_ptx(SOURCE, &arch, &[])
                .map_err(|e| sparserl_rt::RtError::Compile(e.to_string()))
        })?
    })
}

/// Fills `buf` with NaN (all-ones words) on the GPU's stream: the poison
/// a checked result must overwrite everywhere.
pub fn poison<T: Scalar>(gpu: &Gpu, buf: &mut CudaSlice<T>) -> Result<()> {
    let words = (buf.len() * std::mem::size_of::<T>() / 4) as i64;
    if words == 0 {
        return Ok(());
    }
    let func = load(gpu, "sparserl_spmm_fill_nan")?;
    let blocks = (words as usize)
        .div_ceil(BLOCK as usize)
        .clamp(1, gpu.sm_count() * 16);
    let cfg = LaunchConfig {
        grid_dim: (blocks as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
    let mut b = unsafe { gpu.stream() }.launch_builder(&func);
    b.arg(&mut *buf).arg(&words);
    // SAFETY: the entry takes (unsigned int*, long long); `buf` holds
    // len * size_of::<T>() bytes = `words` 32-bit words (T is f32 or f64),
    // on this stream; any bit pattern is a valid f32 / f64.
    unsafe { b.launch(cfg) }?;
    Ok(())
}

/// A reference on the device.
pub struct DeviceReference {
    gpu: Gpu,
    y: CudaSlice<f64>,
    mag: CudaSlice<f64>,
    rows: usize,
    n: usize,
    out: CudaSlice<f64>,
}

impl DeviceReference {
    /// Uploads `r` to `gpu`.
    pub fn upload(gpu: &Gpu, r: &Reference) -> Result<Self> {
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { gpu.stream() };
        let pad = |v: &[f64]| -> Result<CudaSlice<f64>> {
            if v.is_empty() {
                Ok(stream.alloc_zeros::<f64>(1)?)
            } else {
                Ok(stream.clone_htod(v)?)
            }
        };
        Ok(DeviceReference {
            gpu: gpu.clone(),
            y: pad(&r.y).context("uploading the reference")?,
            mag: pad(&r.mag).context("uploading the reference")?,
            rows: r.rows(),
            n: r.n,
            out: stream.alloc_zeros::<f64>(MAX_BLOCKS)?,
        })
    }

    /// The largest per-row relative error of `y` (`rows x n` in `layout`
    /// at leading dimension `ld`, on this reference's GPU).
    pub fn max_row_rel_err<T: Scalar>(
        &mut self,
        y: &CudaSlice<T>,
        layout: DenseLayout,
        ld: usize,
    ) -> Result<f64> {
        let (rows, n) = (self.rows, self.n);
        if rows == 0 || n == 0 {
            return Ok(0.0);
        }
        let outer = if layout == DenseLayout::RowMajor {
            rows
        } else {
            n
        };
        let inner = if layout == DenseLayout::RowMajor {
            n
        } else {
            rows
        };
        anyhow::ensure!(
            ld >= inner && y.len() >= (outer - 1) * ld + inner,
            "the result holds {} values, its shape {rows} x {n} at ld {ld} needs more",
            y.len()
        );
        let blocks = rows.div_ceil(BLOCK as usize / 32).clamp(1, MAX_BLOCKS);
        let func = function(&self.gpu, T::TYPE)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread per Gpu, own work on own buffers, no other stream).
        let stream = unsafe { self.gpu.stream() }.clone();
        let (ldy, row_major) = (ld as i64, i32::from(layout == DenseLayout::RowMajor));
        let (ri, ni) = (i32::try_from(rows)?, i32::try_from(n)?);
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = stream.launch_builder(&func);
        b.arg(y)
            .arg(&ldy)
            .arg(&row_major)
            .arg(&self.y)
            .arg(&self.mag)
            .arg(&ri)
            .arg(&ni)
            .arg(&ROW_FLOOR)
            .arg(&mut self.out);
        // SAFETY: the arguments match ROWERR_ENTRY's parameters for T (T*,
        // long long, int, double*, double*, int, int, double, double*); y
        // holds the rows x n shape at ld (checked above), the reference and
        // magnitudes rows x n values each, out MAX_BLOCKS >= blocks; all on
        // this stream, and the read below waits for the kernel.
        unsafe { b.launch(cfg) }?;
        let maxima = stream.clone_dtoh(&self.out)?;
        Ok(maxima[..blocks].iter().copied().fold(0.0, f64::max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both tool kernels compile with NVRTC (where NVRTC is installed).
    #[test]
    fn tool_kernels_compile() {
        if sparserl_rt::nvrtc::locate().is_err() {
            eprintln!("NVRTC not found: not compiled");
            return;
        }
        for src in [SOURCE, super::super::floor::SOURCE] {
            let ptx = sparserl_rt::nvrtc::compile_ptx(src, "sm_90", &[]).unwrap();
            assert!(ptx.contains(".entry"), "no entry in the PTX");
        }
        let ptx = sparserl_rt::nvrtc::compile_ptx(SOURCE, "sm_90", &[]).unwrap();
        for v in [ValueType::F32, ValueType::F64] {
            assert!(ptx.contains(&entry(v)), "{}", entry(v));
        }
    }
}
