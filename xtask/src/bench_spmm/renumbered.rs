//! `bench spmm --reorder`: ours on the renumbered matrix `P A Pᵀ` with X's
//! rows permuted (the kernel in the stored order, as an application runs
//! it after `DeviceCsr::dense_to_internal`), and the cost of the two row
//! conversions around a call timed apart. A matrix is renumbered once for
//! all its cases, and uploaded renumbered once per value type for the
//! conversions.

use anyhow::{Context, Result};
use sparserl_rt::dense::{DenseLayout, DeviceDense};
use sparserl_rt::measure::{stats, time_launches};
use sparserl_rt::reorder::Reorder;
use sparserl_rt::{Csr, DeviceCsr, Gpu, Layouts, Scalar};

/// One matrix renumbered, once for all its cases.
pub struct JobRenum {
    /// `P A Pᵀ`.
    pub csr: Csr,
    /// Row `i` of `P A Pᵀ` is row `new_to_old[i]` of A.
    pub new_to_old: Vec<u32>,
    /// Host seconds: the order and the permuted matrix.
    pub host_seconds: f64,
}

/// `a` renumbered by `reorder`; `None` when `reorder` keeps the given order
/// (`Reorder::None` or a rectangular matrix).
pub fn renumber(a: &Csr, reorder: Reorder) -> Option<JobRenum> {
    let t = std::time::Instant::now();
    let perm = reorder.permutation(a)?;
    let csr = perm.apply(a)?;
    Some(JobRenum {
        csr,
        new_to_old: perm.new_to_old().to_vec(),
        host_seconds: t.elapsed().as_secs_f64(),
    })
}

/// Row `i` of the result = row `new_to_old[i]` of `x` (`new_to_old.len()`
/// rows of `n` columns, packed in `layout`).
pub fn permute_rows<T: Copy>(x: &[T], new_to_old: &[u32], n: usize, layout: DenseLayout) -> Vec<T> {
    let rows = new_to_old.len();
    let ld = layout.packed_ld(rows, n);
    // Output positions in storage order: (row, column) of each.
    (0..rows * n)
        .map(|p| match layout {
            DenseLayout::RowMajor => (p / n, p % n),
            DenseLayout::ColMajor => (p % rows, p / rows),
        })
        .map(|(i, j)| x[layout.index(new_to_old[i] as usize, j, ld)])
        .collect()
}

/// A dense shape (layout, width) of a case.
pub type Shape = (DenseLayout, usize);

/// Per shape, the conversions' median microseconds (none: no timed sample).
pub type ConvertTimes = Vec<(Shape, Option<f64>)>;

/// Per (layout, width): median microseconds of `dense_to_internal` on X
/// plus `dense_to_user` on Y (`rows x n`) for `a` uploaded once, renumbered
/// by `reorder`.
pub fn convert_us<T: Scalar>(
    gpu: &Gpu,
    a: &Csr,
    reorder: Reorder,
    cases: &[Shape],
    reps: u32,
) -> Result<ConvertTimes> {
    let m = DeviceCsr::<T>::upload_with(
        gpu,
        a,
        Layouts {
            reorder,
            ..Layouts::NONE
        },
    )
    .context("uploading the renumbered matrix")?;
    let rows = a.rows();
    let mut out = Vec::with_capacity(cases.len());
    for &(layout, n) in cases {
        let dense = || DeviceDense::<T>::zeros(gpu, rows, n, layout);
        let (x, mut xi, yi, mut y) = (dense()?, dense()?, dense()?, dense()?);
        let mut launch = || -> Result<()> {
            m.dense_to_internal(gpu, &x, &mut xi)?;
            m.dense_to_user(gpu, &yi, &mut y)?;
            Ok(())
        };
        let times = time_launches::<anyhow::Error>(gpu, &mut launch, 3, reps, 1.0)?;
        out.push(((layout, n), stats(&times).map(|s| s.median)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_move_with_the_permutation_in_both_layouts() {
        // 3 rows x 2 columns: element (i, j) = 10 i + j.
        let new_to_old = [2u32, 0, 1];
        for layout in DenseLayout::ALL {
            let ld = layout.packed_ld(3, 2);
            let mut x = vec![0.0f64; 6];
            for i in 0..3 {
                for j in 0..2 {
                    x[layout.index(i, j, ld)] = (10 * i + j) as f64;
                }
            }
            let y = permute_rows(&x, &new_to_old, 2, layout);
            for (i, &old) in new_to_old.iter().enumerate() {
                for j in 0..2 {
                    assert_eq!(y[layout.index(i, j, ld)], (10 * old as usize + j) as f64);
                }
            }
        }
    }

    #[test]
    fn the_given_order_and_rectangles_are_not_renumbered() {
        let sq = Csr::from_triplets(3, 3, &[(0, 2, 1.0), (2, 0, 1.0), (1, 1, 1.0)]).unwrap();
        assert!(renumber(&sq, Reorder::None).is_none());
        let r = renumber(&sq, Reorder::Rcm).unwrap();
        assert_eq!(r.csr.nnz(), 3);
        let mut seen = r.new_to_old.clone();
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 1, 2]);
        let rect = Csr::from_triplets(2, 3, &[(0, 2, 1.0)]).unwrap();
        assert!(renumber(&rect, Reorder::Rcm).is_none());
    }
}
