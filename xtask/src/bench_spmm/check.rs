//! The float64 side of `bench spmm` (and of the GCN layer of `bench-app`):
//! random inputs and the reference `A X` with the magnitudes of its terms,
//! computed in parallel threads (the large graphs at n = 256 are tens of
//! billions of multiply-adds). The per-row error is computed on the device
//! (`rowerr.cu`); the host form here, the measure of
//! `sparserl_rt::spmm::max_row_rel_err`, pins its definition in the tests.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::{Csr, Scalar};

/// `len` seeded random values in [-1, 1).
pub fn random_dense<T: Scalar>(len: usize, seed: u64) -> Vec<T> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect()
}

fn workers() -> usize {
    std::thread::available_parallelism()
        .map_or(4, |w| w.get())
        .clamp(1, 32)
}

/// The float64 reference of one SpMM, row-major whatever the layout.
pub struct Reference {
    /// `epi(A X)`, `rows x n` row-major.
    pub y: Vec<f64>,
    /// The magnitude of each entry's terms (`sum |a x|`, plus `|bias|`).
    pub mag: Vec<f64>,
    /// Columns.
    pub n: usize,
}

impl Reference {
    /// `A X` for `X` (`a.cols() x n` in `layout`, tightly stored) and `A`'s
    /// values rounded to `T` (what the device holds, as `SpmmBench` does);
    /// with `bias` (n entries) `relu(A X + bias[col])`, the `bias-relu`
    /// epilogue.
    pub fn new<T: Scalar>(
        a: &Csr,
        x: &[T],
        n: usize,
        layout: DenseLayout,
        bias: Option<&[f64]>,
    ) -> Reference {
        let cols = a.cols();
        let ldx = layout.packed_ld(cols, n);
        // X as float64, row-major, so every row's gather is contiguous.
        let mut xr = vec![0.0f64; cols * n];
        for (c, row) in xr.chunks_mut(n.max(1)).enumerate() {
            for (j, v) in row.iter_mut().enumerate() {
                *v = x[layout.index(c, j, ldx)].to_f64();
            }
        }
        let vals: Vec<f64> = a
            .values()
            .iter()
            .map(|&v| T::from_f64(v).to_f64())
            .collect();
        let mut y = vec![0.0f64; a.rows() * n];
        let mut mag = vec![0.0f64; a.rows() * n];
        let rows_per = a.rows().div_ceil(workers()).max(1);
        let chunk = rows_per * n.max(1);
        std::thread::scope(|s| {
            for (t, (yc, mc)) in y.chunks_mut(chunk).zip(mag.chunks_mut(chunk)).enumerate() {
                let (xr, vals) = (&xr, &vals);
                s.spawn(move || rows_of(a, vals, xr, n, t * rows_per, yc, mc, bias));
            }
        });
        Reference { y, mag, n }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.y.len() / self.n.max(1)
    }

    /// Largest per-row relative error of `y` (`rows x n` in `layout`,
    /// tightly stored): `||y_i - ref_i|| / max(||ref_i||, ROW_FLOOR
    /// ||mag_i||)` (a row whose reference and magnitudes are zero counts
    /// its absolute error), as `sparserl_rt::spmm::max_row_rel_err`.
    /// Non-finite values or a length mismatch give infinity.
    #[cfg(test)]
    pub fn max_row_rel_err<T: Scalar>(&self, y: &[T], layout: DenseLayout) -> f64 {
        let (rows, n) = (self.rows(), self.n);
        if y.len() != self.y.len() {
            return f64::INFINITY;
        }
        if n == 0 || rows == 0 {
            return 0.0;
        }
        let ld = layout.packed_ld(rows, n);
        let rows_per = rows.div_ceil(workers()).max(1);
        let worst: Vec<f64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..rows.div_ceil(rows_per))
                .map(|t| {
                    let r0 = t * rows_per;
                    let r1 = (r0 + rows_per).min(rows);
                    s.spawn(move || {
                        (r0..r1)
                            .map(|i| self.row_err(y, i, ld, layout))
                            .fold(0.0, f64::max)
                    })
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap_or(f64::INFINITY))
                .collect()
        });
        worst.into_iter().fold(0.0, f64::max)
    }

    #[cfg(test)]
    fn row_err<T: Scalar>(&self, y: &[T], i: usize, ld: usize, layout: DenseLayout) -> f64 {
        let (mut d, mut r, mut m) = (0.0, 0.0, 0.0);
        for j in 0..self.n {
            let got = y[layout.index(i, j, ld)].to_f64();
            if !got.is_finite() {
                return f64::INFINITY;
            }
            let (want, mg) = (self.y[i * self.n + j], self.mag[i * self.n + j]);
            d += (got - want) * (got - want);
            r += want * want;
            m += mg * mg;
        }
        let den = r
            .sqrt()
            .max(sparserl_rt::spmm::reference::ROW_FLOOR * m.sqrt());
        let e = if den > 0.0 { d.sqrt() / den } else { d.sqrt() };
        if e.is_nan() { f64::INFINITY } else { e }
    }
}

/// Rows `r0..` of the reference into `y` / `mag` (whole rows of `n`), with
/// `vals` as `a`'s values.
#[allow(clippy::too_many_arguments)]
fn rows_of(
    a: &Csr,
    vals: &[f64],
    xr: &[f64],
    n: usize,
    r0: usize,
    y: &mut [f64],
    mag: &mut [f64],
    bias: Option<&[f64]>,
) {
    let n1 = n.max(1);
    for (i, (yr, mr)) in y.chunks_mut(n1).zip(mag.chunks_mut(n1)).enumerate() {
        let r = r0 + i;
        let (lo, hi) = (a.indptr()[r] as usize, a.indptr()[r + 1] as usize);
        for k in lo..hi {
            let v = vals[k];
            let xrow = &xr[a.indices()[k] as usize * n..][..n];
            for ((o, m), xv) in yr.iter_mut().zip(mr.iter_mut()).zip(xrow) {
                *o += v * xv;
                *m += (v * xv).abs();
            }
        }
        if let Some(b) = bias {
            for ((o, m), bj) in yr.iter_mut().zip(mr.iter_mut()).zip(b) {
                *o = (*o + bj).max(0.0);
                *m += bj.abs();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparserl_rt::spmm::{SpmmCase, max_row_rel_err, spmm_reference};

    fn small() -> Csr {
        // 3 x 2: [1 2; 0 0; 0 -1]
        Csr::from_triplets(3, 2, &[(0, 0, 1.0), (0, 1, 2.0), (2, 1, -1.0)]).unwrap()
    }

    #[test]
    fn reference_is_the_product_in_both_layouts() {
        let a = small();
        // X = [1 2 3; 4 5 6] (2 x 3)
        let xr = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        let xc = [1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0];
        let want = vec![9.0, 12.0, 15.0, 0.0, 0.0, 0.0, -4.0, -5.0, -6.0];
        assert_eq!(
            Reference::new(&a, &xr, 3, DenseLayout::RowMajor, None).y,
            want
        );
        assert_eq!(
            Reference::new(&a, &xc, 3, DenseLayout::ColMajor, None).y,
            want
        );
        let r = Reference::new(&a, &xr, 3, DenseLayout::RowMajor, Some(&[1.0, -13.0, 0.0]));
        assert_eq!(r.y, vec![10.0, 0.0, 15.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        assert_eq!(r.mag[..3], [10.0, 25.0, 15.0]);
    }

    #[test]
    fn row_errors_catch_one_bad_row_and_poison() {
        let a = small();
        let xr = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
        let r = Reference::new(&a, &xr, 3, DenseLayout::RowMajor, None);
        let mut y: Vec<f32> = r.y.iter().map(|&v| v as f32).collect();
        assert_eq!(r.max_row_rel_err(&y, DenseLayout::RowMajor), 0.0);
        y[7] = -5.5;
        let e = r.max_row_rel_err(&y, DenseLayout::RowMajor);
        assert!(e > 0.05 && e < 0.1, "{e}");
        y[7] = f32::NAN;
        assert_eq!(r.max_row_rel_err(&y, DenseLayout::RowMajor), f64::INFINITY);
        // Column-major reads the same element at another index.
        let yc = vec![9.0f64, 0.0, -4.0, 12.0, 0.0, -5.0, 15.0, 0.0, -6.0];
        assert_eq!(r.max_row_rel_err(&yc, DenseLayout::ColMajor), 0.0);
        // An empty row that is not zero counts its absolute error.
        let mut yz = yc.clone();
        yz[1] = 0.5;
        assert_eq!(r.max_row_rel_err(&yz, DenseLayout::ColMajor), 0.5);
        assert_eq!(
            r.max_row_rel_err(&yz[..3], DenseLayout::ColMajor),
            f64::INFINITY
        );
    }

    #[test]
    fn values_are_rounded_to_the_device_type() {
        let a = Csr::from_triplets(1, 1, &[(0, 0, 0.1)]).unwrap();
        let r32 = Reference::new(&a, &[1.0f32], 1, DenseLayout::RowMajor, None);
        let r64 = Reference::new(&a, &[1.0f64], 1, DenseLayout::RowMajor, None);
        assert_eq!(r32.y[0], 0.1f32 as f64);
        assert_eq!(r64.y[0], 0.1);
    }

    #[test]
    fn the_measure_is_the_runtimes() {
        let a = sparserl_rt::synth::power_law(300, 6.0, 2.1, 3).unwrap();
        for layout in DenseLayout::ALL {
            let n = 7;
            let x: Vec<f64> = random_dense(a.cols() * n, 9);
            let ours = Reference::new(&a, &x, n, layout, None);
            let (want, mag) = spmm_reference(&a, &x, n, layout, &SpmmCase::PLAIN).unwrap();
            let ld = layout.packed_ld(a.rows(), n);
            let packed = |v: &[f64]| -> Vec<f64> {
                let mut p = vec![0.0; v.len()];
                for i in 0..a.rows() {
                    for j in 0..n {
                        p[layout.index(i, j, ld)] = v[i * n + j];
                    }
                }
                p
            };
            let (oy, om) = (packed(&ours.y), packed(&ours.mag));
            for k in 0..want.len() {
                assert!((oy[k] - want[k]).abs() <= 1e-12 * (1.0 + mag[k]), "{k}");
                assert!((om[k] - mag[k]).abs() <= 1e-12 * (1.0 + mag[k]), "{k}");
            }
            // A perturbed result: both measures agree.
            let mut y = want.clone();
            for (k, v) in y.iter_mut().enumerate() {
                *v += 1e-6 * ((k % 13) as f64 - 6.0);
            }
            let theirs = max_row_rel_err(&y, &want, &mag, a.rows(), n, layout);
            let mine = ours.max_row_rel_err(&y, layout);
            assert!(
                (theirs - mine).abs() <= 1e-9 * theirs.max(1e-30),
                "{theirs} vs {mine}"
            );
        }
    }
}
