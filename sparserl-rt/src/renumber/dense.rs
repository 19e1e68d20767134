//! Dense matrices between the two numberings of a renumbered matrix: the
//! rows of `X` and `Y` of an SpMM ([`DeviceCsr::dense_to_internal`],
//! [`DeviceCsr::dense_to_user`]), as [`DeviceCsr::to_internal`] /
//! [`DeviceCsr::to_user`] do for vectors.
//!
//! An SpMM kernel runs on a renumbered matrix in its stored order
//! ([`DeviceCsr::internal`]): a GNN or a block method converts its dense
//! input once, runs every layer or iteration in the stored order, and
//! converts the result back.

use super::DevicePerm;
use crate::dense::{DenseLayout, DeviceDense};
use crate::device::{DeviceCsr, Gpu, Scalar};
use crate::error::RtError;
use crate::ops;
use cudarc::driver::{CudaSlice, PushKernelArg};

impl<T: Scalar> DeviceCsr<T> {
    /// `out = P X`: the rows of a dense matrix in the user's numbering put
    /// in the stored order (a copy for a matrix in the given order). `x` has
    /// as many rows as the matrix has rows or columns (a renumbered matrix
    /// is square); `out` has `x`'s shape and layout, any leading dimension.
    /// Only enqueues work, so it may be captured.
    ///
    /// ```no_run
    /// use sparserl_rt::{Csr, DeviceCsr, Gpu, Layouts, reorder::Reorder};
    /// use sparserl_rt::dense::{DenseLayout, DeviceDense};
    /// # fn run(a: &Csr, h: &[f32]) -> Result<(), sparserl_rt::RtError> {
    /// let gpu = Gpu::new(0)?;
    /// let m = DeviceCsr::<f32>::upload_with(&gpu, a, Layouts { reorder: Reorder::Rcm, ..Layouts::NONE })?;
    /// let x = DeviceDense::from_host(&gpu, a.rows(), 64, DenseLayout::RowMajor, h)?;
    /// let mut xi = DeviceDense::zeros(&gpu, a.rows(), 64, DenseLayout::RowMajor)?;
    /// m.dense_to_internal(&gpu, &x, &mut xi)?;
    /// // ... SpMM launches on `m.internal()` with `xi` ...
    /// let mut back = DeviceDense::zeros(&gpu, a.rows(), 64, DenseLayout::RowMajor)?;
    /// m.dense_to_user(&gpu, &xi, &mut back)?; // the rows of `x` again
    /// # Ok(()) }
    /// ```
    pub fn dense_to_internal(
        &self,
        gpu: &Gpu,
        x: &DeviceDense<T>,
        out: &mut DeviceDense<T>,
    ) -> Result<(), RtError> {
        self.convert_dense(gpu, true, x, out)
    }

    /// `out = Pᵀ X`: the rows of a dense matrix in the stored order put back
    /// in the user's numbering (a copy for a matrix in the given order).
    /// Shapes as [`DeviceCsr::dense_to_internal`].
    pub fn dense_to_user(
        &self,
        gpu: &Gpu,
        x: &DeviceDense<T>,
        out: &mut DeviceDense<T>,
    ) -> Result<(), RtError> {
        self.convert_dense(gpu, false, x, out)
    }

    fn convert_dense(
        &self,
        gpu: &Gpu,
        to_internal: bool,
        x: &DeviceDense<T>,
        out: &mut DeviceDense<T>,
    ) -> Result<(), RtError> {
        self.check_gpu(gpu)?;
        x.check_gpu(gpu, "the dense matrix to convert")?;
        out.check_gpu(gpu, "the converted dense matrix")?;
        let shape = |d: &DeviceDense<T>| (d.rows(), d.cols(), d.layout());
        check_shapes((self.rows(), self.cols()), shape(x), shape(out))?;
        let idx = self
            .perm()
            .map(|p: &DevicePerm<T>| if to_internal { &p.perm } else { &p.inv });
        gather_rows(gpu, idx, x, out)
    }
}

/// A dense operand's rows, columns and layout.
type Shape = (usize, usize, DenseLayout);

/// `x` has as many rows as the matrix (`a`: rows, columns) has rows or
/// columns; `out` has `x`'s shape and layout.
fn check_shapes(a: (usize, usize), x: Shape, out: Shape) -> Result<(), RtError> {
    if x.0 != a.0 && x.0 != a.1 {
        return Err(RtError::DimensionMismatch {
            what: "the dense matrix's rows (must be the matrix's rows or columns)",
            expected: a.0,
            found: x.0,
        });
    }
    ops::same_len("the output's rows (must be the input's)", x.0, out.0)?;
    ops::same_len("the output's columns (must be the input's)", x.1, out.1)?;
    if x.2 != out.2 {
        return Err(RtError::InvalidArgument(format!(
            "the output is {} and the input {}: a conversion keeps the layout",
            out.2.as_str(),
            x.2.as_str()
        )));
    }
    Ok(())
}

/// `out` row `i` = `x` row `idx[i]` (`idx` `None`: row `i`), on `gpu`'s
/// stream.
fn gather_rows<T: Scalar>(
    gpu: &Gpu,
    idx: Option<&CudaSlice<i32>>,
    x: &DeviceDense<T>,
    out: &mut DeviceDense<T>,
) -> Result<(), RtError> {
    let rows = ops::int_len(x.rows())?;
    let cols = ops::int_len(x.cols())?;
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let total = x.rows() * x.cols();
    let row_major = i32::from(x.layout() == DenseLayout::RowMajor);
    let (ld_src, ld_dst) = (x.ld() as i64, out.ld() as i64);
    let null: u64 = 0;
    let f = ops::func::<T>(
        gpu,
        ["sparserl_gather_rows_f32", "sparserl_gather_rows_f64"],
    )?;
    let s = gpu.enqueue("a renumbering gather of dense rows")?;
    let mut b = s.launch_builder(&f);
    b.arg(&rows).arg(&cols).arg(&row_major);
    match idx {
        Some(p) => b.arg(p),
        None => b.arg(&null),
    };
    b.arg(x.as_slice())
        .arg(&ld_src)
        .arg(out.as_mut_slice())
        .arg(&ld_dst);
    // SAFETY: (int rows, int cols, int row_major, const int* perm, const T*
    // src, long long ld_src, T* dst, long long ld_dst) as in vector_ops.cu.
    // `idx` is a permutation of 0..rows (a checked `Permutation` of a square
    // matrix of `rows` rows, or its inverse) or null (the identity);
    // `check_shapes` gave `x` and `out` the same shape and layout, and each
    // `DeviceDense` holds at least the elements its shape and leading
    // dimension occupy, so every index the kernel forms is in bounds. Both
    // belong to `gpu` (checked by the caller), whose stream runs the kernel.
    unsafe { b.launch(ops::config(gpu, total)) }?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use DenseLayout::{ColMajor, RowMajor};

    fn error(a: (usize, usize), x: Shape, out: Shape) -> Option<String> {
        check_shapes(a, x, out).err().map(|e| e.to_string())
    }

    #[test]
    fn conversions_keep_shape_and_layout() {
        assert_eq!(error((4, 4), (4, 3, RowMajor), (4, 3, RowMajor)), None);
        // A matrix in the given order may be rectangular: X has its columns' rows.
        assert_eq!(error((4, 6), (6, 3, ColMajor), (6, 3, ColMajor)), None);
        let e = error((4, 4), (5, 3, RowMajor), (5, 3, RowMajor)).unwrap();
        assert!(e.contains("rows or columns"), "{e}");
        let e = error((4, 4), (4, 3, RowMajor), (3, 3, RowMajor)).unwrap();
        assert!(e.contains("output's rows"), "{e}");
        let e = error((4, 4), (4, 3, RowMajor), (4, 2, RowMajor)).unwrap();
        assert!(e.contains("output's columns"), "{e}");
        let e = error((4, 4), (4, 3, RowMajor), (4, 3, ColMajor)).unwrap();
        assert!(e.contains("keeps the layout"), "{e}");
    }
}
