//! cuSPARSE's side of the scale set: `cusparseSpMV` on the large upload's
//! own arrays with 32-bit index types where the matrix fits them, and with
//! 64-bit ones (`CUSPARSE_INDEX_64I` row offsets and columns, the columns
//! widened on the device by [`Index64`]). As `crate::cusparse`: the library
//! is checked loadable first, descriptors and work buffers are created once
//! per algorithm, `cusparseSpMV_preprocess` is used when present.
//!
//! Past 2^31 nonzeros: cuSPARSE documents `CUSPARSE_INDEX_64I` for
//! `cusparseSpMV` (docs.nvidia.com/cuda/cusparse, cusparseSpMV), but users
//! report `CUSPARSE_STATUS_INTERNAL_ERROR` there: JuliaGPU/CUDA.jl#2555
//! (SpMM / SpMV from 2^31 - 127 nonzeros on an H100, CUDA 12.4) and
//! cupy/cupy#9490 (64-bit SpMV / SpMM fail at 2^31 + 2^20 nonzeros with
//! cuSPARSE 12.5.4 and succeed with 12.8.0). Our first scale run saw the
//! error from `cusparseSpMV_preprocess` for all three algorithms on R-MAT
//! scale 28 (4.26e9 nonzeros). So when preprocessing fails, the error is
//! recorded, the matrix descriptor is created again and the algorithm runs
//! as plain `cusparseSpMV` on the `cusparseSpMV_bufferSize` buffer; its
//! output is checked against float64 like every other run, and a failure
//! of the plain call is reported as such ([`library_version`] names the
//! library that ran).
//!
//! So past 2^31 nonzeros cuSPARSE also runs the way a user gets around the
//! limit ([`IndexBits::Split32`]): the rows cut into blocks of fewer than
//! [`SPLIT_NNZ`] nonzeros, each a 32-bit CSR over the same column and value
//! arrays (its own rebased row offsets) and its slice of `y`, one
//! `cusparseSpMV` per block in one stream; a call is all the blocks.

use crate::cusparse::{Alg, check, data_type, has_symbol, library_status};
use anyhow::{Context, Result, anyhow, bail};
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use sparserl_rt::large::ops::Index64;
use sparserl_rt::large::{DeviceLargeCsr, MemoryNeed, RawOffsets};
use sparserl_rt::{DeviceVec, Gpu};
use std::ffi::c_void;
use std::sync::Arc;

/// Index types of a cuSPARSE run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum IndexBits {
    /// `CUSPARSE_INDEX_32I` offsets and columns (our own arrays read as `int`).
    #[serde(rename = "32")]
    I32,
    /// `CUSPARSE_INDEX_64I` offsets and columns.
    #[serde(rename = "64")]
    I64,
    /// `CUSPARSE_INDEX_32I` on row blocks of fewer than [`SPLIT_NNZ`]
    /// nonzeros each (a matrix past 2^31 nonzeros).
    #[serde(rename = "32-split")]
    Split32,
}

/// The most nonzeros of one row block of an [`IndexBits::Split32`] run:
/// 2^31 - 2^24, clear of the 32-bit limit and of the sizes just below it
/// where the reports above saw failures.
pub const SPLIT_NNZ: u64 = (1 << 31) - (1 << 24);

/// Row blocks `[r0, r1)` of `indptr`, in order, each with at most `limit`
/// nonzeros and as few blocks as that allows (greedy); a row of more than
/// `limit` nonzeros cannot be split this way.
pub fn row_blocks(indptr: &[u64], limit: u64) -> Result<Vec<(usize, usize)>> {
    let rows = indptr.len().saturating_sub(1);
    let mut blocks = Vec::new();
    let mut r0 = 0usize;
    while r0 < rows {
        // The last row end r1 with indptr[r1] - indptr[r0] <= limit.
        let cap = indptr[r0].saturating_add(limit);
        let r1 = indptr.partition_point(|&p| p <= cap) - 1;
        if r1 <= r0 {
            bail!(
                "row {r0} has {} nonzeros, more than a 32-bit block holds ({limit})",
                indptr[r0 + 1] - indptr[r0]
            );
        }
        let r1 = r1.min(rows);
        blocks.push((r0, r1));
        r0 = r1;
    }
    Ok(blocks)
}

/// One row block's cuSPARSE state (the whole matrix when not split).
struct Part {
    /// Rows.
    rows: usize,
    /// First nonzero and nonzeros.
    k0: u64,
    nnz: u64,
    /// Rebased 32-bit row offsets (split runs only).
    indptr: Option<CudaSlice<i32>>,
    mat: sys::cusparseSpMatDescr_t,
    yd: sys::cusparseDnVecDescr_t,
    work: [Option<CudaSlice<u8>>; 3],
    /// Per algorithm: whether `cusparseSpMV_preprocess` ran, or its error.
    preprocessed: [Option<std::result::Result<(), String>>; 3],
}

/// `y = A x` through `cusparseSpMV` on a [`DeviceLargeCsr`].
pub struct LargeCusparse<'a> {
    gpu: Gpu,
    handle: sys::cusparseHandle_t,
    xd: sys::cusparseDnVecDescr_t,
    parts: Vec<Part>,
    preprocess: bool,
    bits: IndexBits,
    x: DeviceVec<f32>,
    y: DeviceVec<f32>,
    _a: &'a DeviceLargeCsr<f32>,
    _index: Option<&'a Index64>,
}

impl<'a> LargeCusparse<'a> {
    /// Descriptors over `a` (with `index`'s 64-bit arrays for
    /// [`IndexBits::I64`], the row blocks of `host_indptr`, `a`'s row
    /// offsets on the host, for [`IndexBits::Split32`]) and the vectors `x`,
    /// `y`, owned from here on (their buffers stay where the descriptors
    /// point).
    pub fn new(
        gpu: &Gpu,
        a: &'a DeviceLargeCsr<f32>,
        bits: IndexBits,
        index: Option<&'a Index64>,
        host_indptr: Option<&[u64]>,
        x: DeviceVec<f32>,
        y: DeviceVec<f32>,
    ) -> Result<Self> {
        library_status()?;
        anyhow::ensure!(x.len() == a.cols() && y.len() == a.rows(), "x / y lengths");
        a.check_gpu(gpu)?;
        x.check_gpu(gpu, "x")?;
        y.check_gpu(gpu, "y")?;
        let blocks = match (bits, host_indptr) {
            (IndexBits::Split32, Some(ip)) => {
                anyhow::ensure!(
                    ip.len() == a.rows() + 1,
                    "host row offsets of another matrix"
                );
                anyhow::ensure!(a.cols() < (1 << 31), "columns past i32");
                row_blocks(ip, SPLIT_NNZ)?
            }
            (IndexBits::Split32, None) => bail!("a split run needs the host row offsets"),
            _ => vec![(0, a.rows())],
        };
        // SAFETY: the raw-handle contract of `crate::app_vendor` (one thread
        // per Gpu, no sparserl-rt capture in progress, own work on own buffers).
        unsafe { gpu.context() }.bind_to_thread()?;
        // SAFETY: as above.
        let stream = unsafe { gpu.stream() }.clone();
        let mut handle: sys::cusparseHandle_t = std::ptr::null_mut();
        // SAFETY: the library is loaded (checked above); a valid out-pointer.
        check(
            unsafe { sys::cusparseCreate(&mut handle) },
            "cusparseCreate",
        )?;
        let mut me = LargeCusparse {
            gpu: gpu.clone(),
            handle,
            xd: std::ptr::null_mut(),
            parts: Vec::new(),
            preprocess: has_symbol("cusparseSpMV_preprocess"),
            bits,
            x,
            y,
            _a: a,
            _index: index,
        };
        // SAFETY: a live handle; the stream outlives it (the Gpu is held).
        check(
            unsafe { sys::cusparseSetStream(me.handle, stream.cu_stream() as sys::cudaStream_t) },
            "cusparseSetStream",
        )?;
        // SAFETY: x is used on this stream only and is owned by the value the
        // descriptor belongs to (destroyed first, in Drop); cuSPARSE reads it.
        let (xp, _gx) = unsafe { me.x.raw() }.device_ptr(&stream);
        drop(_gx);
        let value = data_type(sparserl_rt::ValueType::F32);
        // SAFETY: x holds cols elements; a valid out-pointer.
        check(
            unsafe {
                sys::cusparseCreateDnVec(&mut me.xd, a.cols() as i64, xp as *mut c_void, value)
            },
            "cusparseCreateDnVec(x)",
        )?;
        for (r0, r1) in blocks {
            let part = me.part(&stream, host_indptr, r0, r1)?;
            me.parts.push(part);
        }
        Ok(me)
    }

    /// The state of rows `[r0, r1)`: rebased offsets (split runs), the
    /// matrix descriptor and the descriptor of y's slice.
    fn part(
        &mut self,
        stream: &Arc<CudaStream>,
        host_indptr: Option<&[u64]>,
        r0: usize,
        r1: usize,
    ) -> Result<Part> {
        let (k0, k1) = match host_indptr {
            Some(ip) => (ip[r0], ip[r1]),
            None => (0, self._a.nnz() as u64),
        };
        let mut part = Part {
            rows: r1 - r0,
            k0,
            nnz: k1 - k0,
            indptr: None,
            mat: std::ptr::null_mut(),
            yd: std::ptr::null_mut(),
            work: [None, None, None],
            preprocessed: [None, None, None],
        };
        if let (IndexBits::Split32, Some(ip)) = (self.bits, host_indptr) {
            MemoryNeed::check(
                &self.gpu,
                "a row block's 32-bit offsets",
                4 * (r1 - r0 + 1) as u64,
            )?;
            let rebased: Vec<i32> = ip[r0..=r1].iter().map(|&p| (p - k0) as i32).collect();
            part.indptr = Some(stream.clone_htod(&rebased)?);
        }
        part.mat = matrix(stream, self._a, self.bits, self._index, &part)?;
        // SAFETY: y is used on this stream only and is owned by the value
        // the descriptor belongs to (destroyed first, in Drop); cuSPARSE
        // writes rows [r0, r1) of it, inside its rows.
        let (yp, _gy) = unsafe { self.y.raw_mut() }.device_ptr_mut(stream);
        drop(_gy);
        let yp = yp + (r0 * std::mem::size_of::<f32>()) as u64;
        let value = data_type(sparserl_rt::ValueType::F32);
        // SAFETY: y + r0 holds rows - r0 elements; a valid out-pointer.
        check(
            unsafe {
                sys::cusparseCreateDnVec(&mut part.yd, part.rows as i64, yp as *mut c_void, value)
            },
            "cusparseCreateDnVec(y)",
        )?;
        Ok(part)
    }

    /// The number of row blocks a call runs (1 unless split).
    pub fn row_blocks(&self) -> usize {
        self.parts.len()
    }

    /// The input vector (writable: its buffer stays where the descriptor
    /// points).
    pub fn x_mut(&mut self) -> &mut DeviceVec<f32> {
        &mut self.x
    }

    /// The output vector and the input, for a check or an iteration's
    /// vector kernels.
    pub fn vectors(&mut self) -> (&mut DeviceVec<f32>, &mut DeviceVec<f32>) {
        (&mut self.x, &mut self.y)
    }

    /// Work buffers (memory checked first) and preprocessing of `alg` for
    /// every row block, once.
    pub fn prepare(&mut self, alg: Alg) -> Result<()> {
        for i in 0..self.parts.len() {
            self.prepare_part(i, alg)?;
        }
        Ok(())
    }

    fn prepare_part(&mut self, i: usize, alg: Alg) -> Result<()> {
        if self.parts[i].work[alg.index()].is_some() {
            return Ok(());
        }
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        unsafe { self.gpu.context() }.bind_to_thread()?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let op = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;
        let value = data_type(sparserl_rt::ValueType::F32);
        let (handle, xd) = (self.handle, self.xd);
        let (mat, yd) = (self.parts[i].mat, self.parts[i].yd);
        let mut size = 0usize;
        // SAFETY: live handle and descriptors; host scalars; out-pointer.
        check(
            unsafe {
                sys::cusparseSpMV_bufferSize(
                    handle,
                    op,
                    &alpha as *const f32 as *const c_void,
                    mat,
                    xd,
                    &beta as *const f32 as *const c_void,
                    yd,
                    value,
                    alg.raw(),
                    &mut size,
                )
            },
            &format!("cusparseSpMV_bufferSize({})", alg.name()),
        )?;
        MemoryNeed::check(&self.gpu, "the cuSPARSE work buffer", size as u64)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let stream = unsafe { self.gpu.stream() }.clone();
        let mut buf = stream.alloc_zeros::<u8>(size.max(1))?;
        if self.preprocess {
            let (bp, _g) = buf.device_ptr_mut(&stream);
            // SAFETY: as bufferSize; the buffer has the size asked for and
            // is kept in the part's `work` for every later call.
            let pre = check(
                unsafe {
                    sys::cusparseSpMV_preprocess(
                        handle,
                        op,
                        &alpha as *const f32 as *const c_void,
                        mat,
                        xd,
                        &beta as *const f32 as *const c_void,
                        yd,
                        value,
                        alg.raw(),
                        bp as *mut c_void,
                    )
                },
                &format!("cusparseSpMV_preprocess({})", alg.name()),
            );
            drop(_g);
            if pre.is_err() {
                // A fresh descriptor for the plain call (the failed one may
                // hold partial preprocessing state).
                stream.synchronize()?;
                self.rebuild_matrix(i)?;
            }
            self.parts[i].preprocessed[alg.index()] = Some(pre.map_err(|e| format!("{e:#}")));
        }
        stream.synchronize()?;
        self.parts[i].work[alg.index()] = Some(buf);
        Ok(())
    }

    /// Whether `alg` was preprocessed: `None` when it was not tried (the
    /// library has no `cusparseSpMV_preprocess`, or `alg` is unprepared),
    /// else the outcome (the first row block's error when one failed and
    /// the plain call ran).
    pub fn preprocess_outcome(&self, alg: Alg) -> Option<std::result::Result<(), String>> {
        let mut all = self
            .parts
            .iter()
            .map(|p| p.preprocessed[alg.index()].clone());
        let first = all.next()??;
        all.try_fold(first, |acc, p| Some(acc.and(p?)))
    }

    /// Destroys row block `i`'s matrix descriptor and creates it again over
    /// the same arrays.
    fn rebuild_matrix(&mut self, i: usize) -> Result<()> {
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let stream = unsafe { self.gpu.stream() }.clone();
        let part = &mut self.parts[i];
        if !part.mat.is_null() {
            // SAFETY: created by cusparseCreateCsr, destroyed once; no work
            // on it is queued (the stream was synchronized).
            unsafe { sys::cusparseDestroySpMat(part.mat) };
            part.mat = std::ptr::null_mut();
        }
        part.mat = matrix(&stream, self._a, self.bits, self._index, part)?;
        Ok(())
    }

    /// Enqueues `y = A x` with `alg` (prepared first): one `cusparseSpMV`
    /// per row block.
    pub fn launch(&mut self, alg: Alg) -> Result<()> {
        self.prepare(alg)?;
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let stream = unsafe { self.gpu.stream() }.clone();
        let (handle, xd) = (self.handle, self.xd);
        for part in &mut self.parts {
            let buf = part.work[alg.index()]
                .as_mut()
                .ok_or_else(|| anyhow!("work buffer of {} missing", alg.name()))?;
            let (bp, _g) = buf.device_ptr_mut(&stream);
            let (alpha, beta) = (1.0f32, 0.0f32);
            // SAFETY: live handle and descriptors over buffers that outlive
            // `self`; the work buffer sized by bufferSize for this
            // algorithm and this row block.
            check(
                unsafe {
                    sys::cusparseSpMV(
                        handle,
                        sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE,
                        &alpha as *const f32 as *const c_void,
                        part.mat,
                        xd,
                        &beta as *const f32 as *const c_void,
                        part.yd,
                        data_type(sparserl_rt::ValueType::F32),
                        alg.raw(),
                        bp as *mut c_void,
                    )
                },
                &format!("cusparseSpMV({})", alg.name()),
            )?;
        }
        Ok(())
    }
}

/// The loaded cuSPARSE's version (`major.minor.patch`), `None` when the
/// library cannot be loaded or does not answer.
pub fn library_version() -> Option<String> {
    library_status().ok()?;
    let mut parts = [0i32; 3];
    for (p, kind) in parts.iter_mut().zip([
        sys::libraryPropertyType::MAJOR_VERSION,
        sys::libraryPropertyType::MINOR_VERSION,
        sys::libraryPropertyType::PATCH_LEVEL,
    ]) {
        // SAFETY: the library is loaded (checked above); a valid out-pointer.
        let st = unsafe { sys::cusparseGetProperty(kind, p) };
        if st != sys::cusparseStatus_t::CUSPARSE_STATUS_SUCCESS {
            return None;
        }
    }
    Some(format!("{}.{}.{}", parts[0], parts[1], parts[2]))
}

/// The CSR descriptor of `part` of `a` with `bits` index types.
fn matrix(
    stream: &Arc<CudaStream>,
    a: &DeviceLargeCsr<f32>,
    bits: IndexBits,
    index: Option<&Index64>,
    part: &Part,
) -> Result<sys::cusparseSpMatDescr_t> {
    // SAFETY: read only, on the matrix's stream, by a descriptor destroyed
    // (in Drop) before the matrix and `index` (borrowed for as long).
    let (ip, ix, vs) = unsafe { a.raw() };
    let (va, _g3) = vs.device_ptr(stream);
    let (rp, ci, va, kind, _g1, _g2) = match (bits, ip, index) {
        (IndexBits::I32, RawOffsets::U32(p), _) => {
            anyhow::ensure!(a.cols() < (1 << 31), "columns past i32");
            let (rp, g1) = p.device_ptr(stream);
            let (ci, g2) = ix.device_ptr(stream);
            let kind = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
            (rp, ci, va, kind, Some(g1), Some(g2))
        }
        (IndexBits::I32, RawOffsets::U64(_), _) => bail!("64-bit offsets: no 32-bit cuSPARSE run"),
        (IndexBits::Split32, _, _) => {
            let own = part
                .indptr
                .as_ref()
                .ok_or_else(|| anyhow!("row block without its 32-bit offsets"))?;
            let (rp, g1) = own.device_ptr(stream);
            let (ci, g2) = ix.device_ptr(stream);
            // The block's columns and values start at its first nonzero.
            let skip = part.k0 * 4;
            let kind = sys::cusparseIndexType_t::CUSPARSE_INDEX_32I;
            (rp, ci + skip, va + skip, kind, Some(g1), Some(g2))
        }
        (IndexBits::I64, p, Some(w)) => {
            let rp = match (w.indptr(), p) {
                (Some(wide), _) => wide.device_ptr(stream).0,
                (None, RawOffsets::U64(own)) => own.device_ptr(stream).0,
                (None, RawOffsets::U32(_)) => bail!("u32 offsets without a widened copy"),
            };
            let (ci, _) = w.indices().device_ptr(stream);
            let kind = sys::cusparseIndexType_t::CUSPARSE_INDEX_64I;
            (rp, ci, va, kind, None, None)
        }
        (IndexBits::I64, _, None) => bail!("64-bit cuSPARSE run without 64-bit index copies"),
    };
    let mut mat: sys::cusparseSpMatDescr_t = std::ptr::null_mut();
    // SAFETY: the arrays hold rows + 1 offsets and nnz columns and values of
    // the index type named (u32 offsets below 2^31 and columns below 2^31
    // read as int are the same bits; u64 offsets below 2^63 as int64; a row
    // block's rebased offsets run from 0 to its nnz < 2^31 over the columns
    // and values from its first nonzero), and live as long as the
    // descriptor; cuSPARSE only reads them.
    check(
        unsafe {
            sys::cusparseCreateCsr(
                &mut mat,
                part.rows as i64,
                a.cols() as i64,
                part.nnz as i64,
                rp as *mut c_void,
                ci as *mut c_void,
                va as *mut c_void,
                kind,
                kind,
                sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                data_type(sparserl_rt::ValueType::F32),
            )
        },
        "cusparseCreateCsr",
    )
    .context("creating the cuSPARSE matrix")?;
    Ok(mat)
}

impl Drop for LargeCusparse<'_> {
    fn drop(&mut self) {
        // SAFETY: the raw-handle contract of `crate::app_vendor`.
        let _ = unsafe { self.gpu.stream() }.synchronize();
        // SAFETY: as above.
        let _ = unsafe { self.gpu.context() }.bind_to_thread();
        let vecs = self.parts.iter().map(|p| p.yd).chain([self.xd]);
        for d in vecs.filter(|d| !d.is_null()) {
            // SAFETY: created by cusparseCreateDnVec, destroyed once; the
            // queued work has finished.
            unsafe { sys::cusparseDestroyDnVec(d) };
        }
        for m in self.parts.iter().map(|p| p.mat).filter(|m| !m.is_null()) {
            // SAFETY: created by cusparseCreateCsr, destroyed once.
            unsafe { sys::cusparseDestroySpMat(m) };
        }
        if !self.handle.is_null() {
            // SAFETY: created by cusparseCreate, destroyed once, last.
            unsafe { sys::cusparseDestroy(self.handle) };
        }
    }
}
