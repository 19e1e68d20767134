//! The float64 SpMM reference with epilogue and the per-row error measure.

use crate::csr::{Csr, CsrError};
use crate::dense::DenseLayout;

/// What one checked SpMM computes: `Y = epi(alpha A X + beta Y0)`, with
/// `epi` = `relu(. + bias[col])` when `bias` is given.
#[derive(Debug, Clone, Copy)]
pub struct SpmmCase<'a> {
    /// Scale of the product.
    pub alpha: f64,
    /// Scale of the previous `Y` (`0`: `Y0` is not read; it may be NaN).
    pub beta: f64,
    /// The previous `Y` (packed, the layout of the result), read when `beta != 0`.
    pub y0: Option<&'a [f64]>,
    /// The bias of the `bias-relu` epilogue (`n` entries).
    pub bias: Option<&'a [f64]>,
}

impl SpmmCase<'_> {
    /// `Y = A X`.
    pub const PLAIN: SpmmCase<'static> = SpmmCase {
        alpha: 1.0,
        beta: 0.0,
        y0: None,
        bias: None,
    };
}

/// The reference result and, per entry, the magnitude of its terms (`|alpha|
/// sum |a x| + |beta y0| + |bias|`), both packed in `layout`.
pub fn spmm_reference(
    csr: &Csr,
    x: &[f64],
    n: usize,
    layout: DenseLayout,
    case: &SpmmCase<'_>,
) -> Result<(Vec<f64>, Vec<f64>), CsrError> {
    let rows = csr.rows();
    let mut y = csr.spmm_f64(x, n, layout)?;
    let abs_vals: Vec<f64> = csr.values().iter().map(|v| v.abs()).collect();
    let abs_csr = Csr::try_new(
        rows,
        csr.cols(),
        csr.indptr().to_vec(),
        csr.indices().to_vec(),
        abs_vals,
    )?;
    let abs_x: Vec<f64> = x.iter().map(|v| v.abs()).collect();
    let mut mag = abs_csr.spmm_f64(&abs_x, n, layout)?;
    let ld = layout.packed_ld(rows, n);
    let read_y0 = case.beta != 0.0;
    if let Some(y0) = case.y0.filter(|_| read_y0)
        && y0.len() != y.len()
    {
        return Err(CsrError::DenseLength {
            what: "y0 (rows x n)",
            expected: y.len(),
            found: y0.len(),
        });
    }
    if let Some(b) = case.bias
        && b.len() != n
    {
        return Err(CsrError::DenseLength {
            what: "bias (n)",
            expected: n,
            found: b.len(),
        });
    }
    for i in 0..rows {
        for j in 0..n {
            let k = layout.index(i, j, ld);
            let mut v = case.alpha * y[k];
            let mut m = case.alpha.abs() * mag[k];
            if let Some(y0) = case.y0.filter(|_| read_y0) {
                v += case.beta * y0[k];
                m += (case.beta * y0[k]).abs();
            }
            if let Some(b) = case.bias {
                v = (v + b[j]).max(0.0);
                m += b[j].abs();
            }
            y[k] = v;
            mag[k] = m;
        }
    }
    Ok((y, mag))
}

/// Floor of the per-row error's denominator, as a share of the norm of the
/// row's term magnitudes: a row whose terms cancel to (almost) zero is judged
/// against the size of what was summed, not against its tiny result. 1, the
/// SpMV check's rule (`measure::row_errors`: summation error is bounded by
/// the magnitudes whatever the cancellation).
pub const ROW_FLOOR: f64 = 1.0;

/// The largest per-row relative error of `y` against `reference`:
/// `||y_i - ref_i|| / max(||ref_i||, ROW_FLOOR ||mag_i||)` over rows `i`
/// (Euclidean norms over the row's `n` entries; a row whose reference and
/// magnitudes are all zero must be exactly zero, else the error is
/// infinite). Any non-finite entry of `y` or a length mismatch gives infinity.
pub fn max_row_rel_err(
    y: &[f64],
    reference: &[f64],
    magnitude: &[f64],
    rows: usize,
    n: usize,
    layout: DenseLayout,
) -> f64 {
    let len = rows * n;
    if y.len() != len || reference.len() != len || magnitude.len() != len {
        return f64::INFINITY;
    }
    if y.iter().any(|v| !v.is_finite()) {
        return f64::INFINITY;
    }
    let ld = layout.packed_ld(rows, n);
    let row_err = |i: usize| {
        let (mut d, mut r, mut m) = (0.0, 0.0, 0.0);
        for j in 0..n {
            let k = layout.index(i, j, ld);
            d += (y[k] - reference[k]).powi(2);
            r += reference[k].powi(2);
            m += magnitude[k].powi(2);
        }
        let den = r.sqrt().max(ROW_FLOOR * m.sqrt());
        let e = match (den > 0.0, d == 0.0) {
            (true, _) => d.sqrt() / den,
            (false, true) => 0.0,
            (false, false) => f64::INFINITY,
        };
        if e.is_nan() { f64::INFINITY } else { e }
    };
    let worst_of = |lo: usize, hi: usize| (lo..hi).map(row_err).fold(0.0f64, f64::max);
    // Large results are split over threads (a check sweep compares hundreds
    // of thousands of them); the maximum does not depend on the split.
    let threads = if len < PARALLEL_MIN {
        1
    } else {
        std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .min(16)
    };
    if threads == 1 {
        return worst_of(0, rows);
    }
    let per = rows.div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = (0..threads)
            .map(|t| {
                let worst_of = &worst_of;
                s.spawn(move || worst_of((t * per).min(rows), ((t + 1) * per).min(rows)))
            })
            .collect();
        parts
            .into_iter()
            .map(|h| h.join().unwrap_or(f64::INFINITY))
            .fold(0.0f64, f64::max)
    })
}

/// Results of at least this many entries are compared on several threads.
const PARALLEL_MIN: usize = 1 << 16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epilogue_and_beta_follow_the_definition() {
        let m = Csr::from_triplets(2, 2, &[(0, 0, 1.0), (0, 1, -3.0), (1, 1, 2.0)]).unwrap();
        let x = [1.0, 2.0, 1.0, -1.0]; // row-major 2 x 2
        let y0 = [f64::NAN; 4];
        let (y, _) = spmm_reference(
            &m,
            &x,
            2,
            DenseLayout::RowMajor,
            &SpmmCase {
                alpha: 2.0,
                beta: 0.0,
                y0: Some(&y0),
                bias: Some(&[1.0, 0.5]),
            },
        )
        .unwrap();
        // A X = [[-2, 5], [2, -2]]; 2 A X + bias = [[-3, 10.5], [5, -3.5]].
        assert_eq!(y, vec![0.0, 10.5, 5.0, 0.0]);
        let y0 = [1.0, 1.0, 1.0, 1.0];
        let (y, mag) = spmm_reference(
            &m,
            &x,
            2,
            DenseLayout::RowMajor,
            &SpmmCase {
                alpha: 1.0,
                beta: -1.0,
                y0: Some(&y0),
                bias: None,
            },
        )
        .unwrap();
        assert_eq!(y, vec![-3.0, 4.0, 1.0, -3.0]);
        assert_eq!(mag, vec![5.0, 6.0, 3.0, 3.0]);
    }

    #[test]
    fn row_errors_use_a_floor_and_catch_nan() {
        let r = [1.0, 0.0, 0.0, 0.0];
        let mag = [1.0, 0.0, 1e6, 1e6];
        let l = DenseLayout::RowMajor;
        assert_eq!(max_row_rel_err(&r, &r, &mag, 2, 2, l), 0.0);
        // Row 1 cancels to zero: judged against its magnitudes.
        let y = [1.0, 0.0, 1.0, 0.0];
        let e = max_row_rel_err(&y, &r, &mag, 2, 2, l);
        assert!((e - 1.0 / (2f64.sqrt() * 1e6)).abs() < 1e-15, "{e}");
        let y = [1.0, f64::NAN, 0.0, 0.0];
        assert_eq!(max_row_rel_err(&y, &r, &mag, 2, 2, l), f64::INFINITY);
        assert_eq!(max_row_rel_err(&r[..2], &r, &mag, 2, 2, l), f64::INFINITY);
        // An empty row (all zero) must be exactly zero.
        let zero = [0.0; 4];
        assert_eq!(max_row_rel_err(&zero, &zero, &zero, 2, 2, l), 0.0);
        let e = max_row_rel_err(&[0.0, 0.0, 1e-30, 0.0], &zero, &zero, 2, 2, l);
        assert_eq!(e, f64::INFINITY);
    }
}
