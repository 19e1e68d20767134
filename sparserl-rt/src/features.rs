//! The feature vector of a sparse matrix, computed in O(nnz) from CSR.
//!
//! The same code runs at build time (policy input, cache buckets) and at run
//! time (dispatch). The order of [`Features::NAMES`] is part of the policy file
//! format: append, never reorder.

use crate::csr::Csr;

/// Structural statistics of a CSR matrix. All fields are `f64`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Features {
    /// Number of rows.
    pub rows: f64,
    /// Number of columns.
    pub cols: f64,
    /// Stored nonzeros.
    pub nnz: f64,
    /// nnz / (rows * cols); 0 when rows or cols is 0.
    pub density: f64,
    /// Mean row length, nnz / rows; 0 when rows is 0.
    pub mean_row: f64,
    /// Standard deviation of row lengths (population, divides by rows).
    pub std_row: f64,
    /// std_row / mean_row (0 when mean is 0).
    pub cv_row: f64,
    /// Shortest row (0 when rows is 0).
    pub min_row: f64,
    /// Longest row (0 when rows is 0).
    pub max_row: f64,
    /// Median row length (nearest rank: the `ceil(0.5 rows)`-th smallest).
    pub p50_row: f64,
    /// 90th percentile row length (nearest rank: the `ceil(0.9 rows)`-th smallest).
    pub p90_row: f64,
    /// 99th percentile row length (nearest rank: the `ceil(0.99 rows)`-th smallest).
    pub p99_row: f64,
    /// Gini coefficient of row lengths (0 = all equal; 0 when nnz is 0):
    /// with lengths sorted ascending `x_1..x_n`,
    /// `2 sum(i x_i) / (n sum(x)) - (n + 1) / n`.
    pub gini_row: f64,
    /// Share of rows with no nonzeros (0 when rows is 0).
    pub empty_share: f64,
    /// max_row / mean_row (0 when mean is 0).
    pub max_over_mean: f64,
    /// Mean over nonzeros of |col/cols - row/rows| with 0-based indices
    /// (0 = on the diagonal); 0 when nnz is 0.
    pub diag_dist: f64,
    /// Distinct 128-byte segments of `x` (32 f32 values) touched per warp of 32
    /// consecutive rows, divided by the nonzeros of those rows; averaged over warps
    /// weighted by nonzeros (so: total distinct segments over all warps / nnz).
    /// Low = gathers of x are coalesced. 0 when nnz is 0.
    pub x_segments_per_nnz: f64,
    /// nnz / (16 * number of distinct 4x4 blocks touched): 1 = fully dense blocks.
    /// Blocks are aligned at multiples of 4 rows and columns. 0 when nnz is 0.
    pub block4_density: f64,
}

/// Smallest row length whose cumulative count reaches the nearest rank
/// `ceil(pct / 100 * n)` (at least 1) in a row-length histogram.
fn nearest_rank(hist: &[u64], n: u64, pct: u64) -> f64 {
    let rank = (n * pct).div_ceil(100).max(1);
    let mut cum = 0u64;
    for (len, &c) in hist.iter().enumerate() {
        cum += c;
        if cum >= rank {
            return len as f64;
        }
    }
    0.0
}

/// Ratio that is 0 instead of NaN or infinity when the denominator is 0.
fn ratio(num: f64, den: f64) -> f64 {
    if den > 0.0 { num / den } else { 0.0 }
}

impl Features {
    /// Feature names, in field order (the order of [`Features::to_vec`]).
    pub const NAMES: [&'static str; 18] = [
        "rows",
        "cols",
        "nnz",
        "density",
        "mean_row",
        "std_row",
        "cv_row",
        "min_row",
        "max_row",
        "p50_row",
        "p90_row",
        "p99_row",
        "gini_row",
        "empty_share",
        "max_over_mean",
        "diag_dist",
        "x_segments_per_nnz",
        "block4_density",
    ];

    /// Computes the features of `m` in O(rows + cols + nnz). Every value is
    /// finite, also for matrices with no rows or no nonzeros.
    pub fn compute(m: &Csr) -> Features {
        let (rows, cols, nnz) = (m.rows(), m.cols(), m.nnz());
        let indptr = m.indptr();
        let indices = m.indices();
        let (rf, cf, nf) = (rows as f64, cols as f64, nnz as f64);

        // Row-length histogram (lengths are <= nnz, so O(nnz) entries).
        let mut max_len = 0usize;
        let mut min_len = usize::MAX;
        for r in 0..rows {
            let l = m.row_len(r);
            max_len = max_len.max(l);
            min_len = min_len.min(l);
        }
        if rows == 0 {
            min_len = 0;
        }
        let mut hist = vec![0u64; max_len + 1];
        for r in 0..rows {
            hist[m.row_len(r)] += 1;
        }
        let mean = ratio(nf, rf);
        let var = ratio(
            hist.iter()
                .enumerate()
                .map(|(l, &c)| c as f64 * (l as f64 - mean).powi(2))
                .sum::<f64>(),
            rf,
        );
        let std = var.sqrt();
        let n = rows as u64;
        let (p50, p90, p99) = if rows == 0 {
            (0.0, 0.0, 0.0)
        } else {
            (
                nearest_rank(&hist, n, 50),
                nearest_rank(&hist, n, 90),
                nearest_rank(&hist, n, 99),
            )
        };
        // Gini over lengths sorted ascending: ranks pos+1..=pos+c share length l.
        let mut weighted = 0.0f64;
        let mut pos = 0u64;
        for (l, &c) in hist.iter().enumerate() {
            if c > 0 {
                let rank_sum = (c * pos) as f64 + (c as f64) * (c as f64 + 1.0) / 2.0;
                weighted += l as f64 * rank_sum;
                pos += c;
            }
        }
        let gini = if nnz == 0 || rows == 0 {
            0.0
        } else {
            (2.0 * weighted / (rf * nf) - (rf + 1.0) / rf).max(0.0)
        };

        // diag_dist, x segments per warp and 4x4 blocks in one pass over rows.
        let mut diag_sum = 0.0f64;
        let mut segments = 0u64;
        let mut blocks = 0u64;
        let mut seg_mark = vec![u32::MAX; cols.div_ceil(32)];
        let mut blk_mark = vec![u32::MAX; cols.div_ceil(4)];
        for r in 0..rows {
            let (a, b) = (indptr[r] as usize, indptr[r + 1] as usize);
            let row_pos = r as f64 / rf;
            let (warp, brow) = ((r / 32) as u32, (r / 4) as u32);
            for &c in &indices[a..b] {
                diag_sum += (c as f64 / cf - row_pos).abs();
                let s = &mut seg_mark[c as usize / 32];
                if *s != warp {
                    *s = warp;
                    segments += 1;
                }
                let k = &mut blk_mark[c as usize / 4];
                if *k != brow {
                    *k = brow;
                    blocks += 1;
                }
            }
        }

        Features {
            rows: rf,
            cols: cf,
            nnz: nf,
            density: ratio(nf, rf * cf),
            mean_row: mean,
            std_row: std,
            cv_row: ratio(std, mean),
            min_row: min_len as f64,
            max_row: max_len as f64,
            p50_row: p50,
            p90_row: p90,
            p99_row: p99,
            gini_row: gini,
            empty_share: ratio(hist.first().copied().unwrap_or(0) as f64, rf),
            max_over_mean: ratio(max_len as f64, mean),
            diag_dist: ratio(diag_sum, nf),
            x_segments_per_nnz: ratio(segments as f64, nf),
            block4_density: ratio(nf, 16.0 * blocks as f64),
        }
    }

    /// The features as an array, in the order of [`Features::NAMES`].
    pub fn to_vec(&self) -> [f64; 18] {
        [
            self.rows,
            self.cols,
            self.nnz,
            self.density,
            self.mean_row,
            self.std_row,
            self.cv_row,
            self.min_row,
            self.max_row,
            self.p50_row,
            self.p90_row,
            self.p99_row,
            self.gini_row,
            self.empty_share,
            self.max_over_mean,
            self.diag_dist,
            self.x_segments_per_nnz,
            self.block4_density,
        ]
    }

    /// The inverse of [`Features::to_vec`]: rebuilds the features from values
    /// in [`Features::NAMES`] order (missing trailing entries are 0).
    pub fn from_slice(v: &[f64]) -> Features {
        let g = |i: usize| v.get(i).copied().unwrap_or(0.0);
        Features {
            rows: g(0),
            cols: g(1),
            nnz: g(2),
            density: g(3),
            mean_row: g(4),
            std_row: g(5),
            cv_row: g(6),
            min_row: g(7),
            max_row: g(8),
            p50_row: g(9),
            p90_row: g(10),
            p99_row: g(11),
            gini_row: g(12),
            empty_share: g(13),
            max_over_mean: g(14),
            diag_dist: g(15),
            x_segments_per_nnz: g(16),
            block4_density: g(17),
        }
    }
}

#[cfg(all(test, feature = "tools"))]
mod tests {
    use super::*;

    #[test]
    fn from_slice_inverts_to_vec() {
        let m = Csr::from_triplets(3, 4, &[(0, 0, 1.0), (0, 3, 2.0), (2, 1, 3.0)]).unwrap();
        let f = Features::compute(&m);
        assert_eq!(Features::from_slice(&f.to_vec()), f);
    }

    fn close(got: &Features, want: [f64; 18]) {
        for ((name, g), w) in Features::NAMES.iter().zip(got.to_vec()).zip(want) {
            assert!((g - w).abs() <= 1e-12, "{name}: got {g}, want {w}");
        }
    }

    #[test]
    fn names_follow_field_order() {
        let mut v = [0.0; 18];
        for (i, x) in v.iter_mut().enumerate() {
            *x = i as f64;
        }
        let f = Features {
            rows: 0.0,
            cols: 1.0,
            nnz: 2.0,
            density: 3.0,
            mean_row: 4.0,
            std_row: 5.0,
            cv_row: 6.0,
            min_row: 7.0,
            max_row: 8.0,
            p50_row: 9.0,
            p90_row: 10.0,
            p99_row: 11.0,
            gini_row: 12.0,
            empty_share: 13.0,
            max_over_mean: 14.0,
            diag_dist: 15.0,
            x_segments_per_nnz: 16.0,
            block4_density: 17.0,
        };
        assert_eq!(f.to_vec(), v);
        // Debug prints fields in declaration order.
        let dbg = format!("{f:?}");
        let names: Vec<&str> = dbg
            .trim_start_matches("Features {")
            .split(',')
            .map(|kv| kv.split(':').next().unwrap_or("").trim())
            .collect();
        assert_eq!(names, Features::NAMES);
    }

    #[test]
    fn small_rectangular_with_empty_row() {
        // [x x . .]
        // [. . . .]
        // [. x x x]
        let m = Csr::from_triplets(
            3,
            4,
            &[
                (0, 0, 1.0),
                (0, 1, 2.0),
                (2, 1, 3.0),
                (2, 2, 4.0),
                (2, 3, 5.0),
            ],
        )
        .unwrap();
        let std = 14f64.sqrt() / 3.0;
        close(
            &Features::compute(&m),
            [
                3.0,
                4.0,
                5.0,
                5.0 / 12.0,
                5.0 / 3.0,
                std,
                std / (5.0 / 3.0),
                0.0,
                3.0,
                2.0,
                3.0,
                3.0,
                0.4,
                1.0 / 3.0,
                1.8,
                11.0 / 60.0,
                1.0 / 5.0,
                5.0 / 16.0,
            ],
        );
    }

    #[test]
    fn identity_64() {
        let t: Vec<(u32, u32, f64)> = (0..64).map(|i| (i, i, 1.0)).collect();
        let m = Csr::from_triplets(64, 64, &t).unwrap();
        close(
            &Features::compute(&m),
            [
                64.0,
                64.0,
                64.0,
                1.0 / 64.0,
                1.0,
                0.0,
                0.0,
                1.0,
                1.0,
                1.0,
                1.0,
                1.0,
                0.0,
                0.0,
                1.0,
                0.0,
                2.0 / 64.0,
                0.25,
            ],
        );
    }

    #[test]
    fn dense_4x4() {
        let t: Vec<(u32, u32, f64)> = (0..16).map(|k| (k / 4, k % 4, 1.0)).collect();
        let m = Csr::from_triplets(4, 4, &t).unwrap();
        close(
            &Features::compute(&m),
            [
                4.0,
                4.0,
                16.0,
                1.0,
                4.0,
                0.0,
                0.0,
                4.0,
                4.0,
                4.0,
                4.0,
                4.0,
                0.0,
                0.0,
                1.0,
                5.0 / 16.0,
                1.0 / 16.0,
                1.0,
            ],
        );
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        // Row lengths 1..=10 (row r has r + 1 entries).
        let mut t = Vec::new();
        for r in 0..10u32 {
            for c in 0..=r {
                t.push((r, c, 1.0));
            }
        }
        let f = Features::compute(&Csr::from_triplets(10, 10, &t).unwrap());
        assert_eq!((f.p50_row, f.p90_row, f.p99_row), (5.0, 9.0, 10.0));
        assert_eq!((f.min_row, f.max_row, f.mean_row), (1.0, 10.0, 5.5));
    }

    #[test]
    fn empty_matrices_are_finite() {
        let zero = Csr::try_new(0, 0, vec![0], vec![], vec![]).unwrap();
        let f = Features::compute(&zero);
        assert_eq!(f.to_vec(), [0.0; 18]);
        let none = Csr::try_new(5, 3, vec![0; 6], vec![], vec![]).unwrap();
        let f = Features::compute(&none);
        let mut want = [0.0; 18];
        want[0] = 5.0;
        want[1] = 3.0;
        want[13] = 1.0; // empty_share
        assert_eq!(f.to_vec(), want);
        let no_cols = Csr::try_new(2, 0, vec![0; 3], vec![], vec![]).unwrap();
        assert!(
            Features::compute(&no_cols)
                .to_vec()
                .iter()
                .all(|v| v.is_finite())
        );
    }

    #[test]
    fn stencil_is_regular_and_power_law_is_skewed() {
        let s = Features::compute(&crate::synth::stencil(&[100, 100], 5).unwrap());
        assert!(s.cv_row < 0.1, "stencil cv {}", s.cv_row);
        assert!(s.gini_row < 0.05, "stencil gini {}", s.gini_row);
        assert_eq!((s.min_row, s.max_row, s.p50_row), (3.0, 5.0, 5.0));
        let p = Features::compute(&crate::synth::power_law(10_000, 8.0, 2.0, 1).unwrap());
        assert!(p.gini_row > 0.4, "power-law gini {}", p.gini_row);
        assert!(p.cv_row > 1.0, "power-law cv {}", p.cv_row);
        assert!(p.to_vec().iter().all(|v| v.is_finite()));
    }
}
