//! Seeded, deterministic generators of synthetic sparse matrices.
//!
//! Every generator builds the CSR arrays row by row (no triplet sort), so the
//! cost is O(nnz) time (plus a small sort per row for random columns) and about
//! 12 bytes per nonzero plus 4 bytes per row of memory. The random generators
//! use a `ChaCha8Rng` seeded from the given `u64`: the same arguments always give
//! the same matrix. Random values are uniform in `[-1, 1)`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use thiserror::Error;

use crate::csr::{Csr, CsrError};

/// Irregular generators: R-MAT graphs, renumbered meshes, road networks, circuits.
pub mod irregular;

mod family;
pub use family::Family;

/// Why a generator could not build a matrix.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum SynthError {
    /// A parameter is out of its valid range.
    #[error("invalid parameter `{name}`: {reason}")]
    InvalidParameter {
        /// the parameter's name
        name: &'static str,
        /// what is wrong with it
        reason: String,
    },
    /// The matrix would not fit 32-bit kernel indices.
    #[error("{rows} x {cols} matrix with {nnz} nonzeros exceeds 32-bit indices")]
    TooLarge {
        /// rows
        rows: usize,
        /// columns
        cols: usize,
        /// (expected) nonzeros
        nnz: u64,
    },
    /// The generated arrays failed validation (a bug in a generator).
    #[error("generated matrix is invalid: {0}")]
    Csr(#[from] CsrError),
}

/// Largest dimension or nnz accepted (same bound as [`Csr::try_new`]).
const LIMIT: u64 = i32::MAX as u64 - 1;

fn invalid(name: &'static str, reason: impl Into<String>) -> SynthError {
    SynthError::InvalidParameter {
        name,
        reason: reason.into(),
    }
}

fn check_dims(rows: usize, cols: usize, nnz: u64) -> Result<(), SynthError> {
    if rows as u64 > LIMIT || cols as u64 > LIMIT || nnz > LIMIT {
        return Err(SynthError::TooLarge { rows, cols, nnz });
    }
    Ok(())
}

fn check_degree(avg_degree: f64, min: f64, max: f64) -> Result<(), SynthError> {
    if !avg_degree.is_finite() || avg_degree < min || avg_degree > max {
        return Err(invalid(
            "avg_degree",
            format!("{avg_degree} is not in [{min}, {max}]"),
        ));
    }
    Ok(())
}

/// A uniform value in `[-1, 1)`.
fn value(rng: &mut ChaCha8Rng) -> f64 {
    rng.random::<f64>() * 2.0 - 1.0
}

/// Rounds `x >= 0` up or down at random so that the expectation is `x`.
fn stochastic_round(rng: &mut ChaCha8Rng, x: f64) -> usize {
    let f = x.floor();
    let up = rng.random::<f64>() < x - f;
    f as usize + usize::from(up)
}

/// Draws `k` distinct values of `0..w`, appended to `out` in increasing order.
/// Uses selection sampling when `k` is a large share of `w` (O(w)); otherwise
/// draws, sorts, drops duplicates and redraws the missing ones (O(k log k),
/// cache-friendly even for huge `w`).
struct Sampler;

impl Sampler {
    fn new() -> Sampler {
        Sampler
    }

    fn sample(&mut self, rng: &mut ChaCha8Rng, w: usize, k: usize, out: &mut Vec<u32>) {
        let k = k.min(w);
        if k == 0 {
            return;
        }
        if k.saturating_mul(4) >= w {
            // Knuth's algorithm S: output is sorted.
            let mut needed = k;
            for i in 0..w {
                if rng.random_range(0..w - i) < needed {
                    out.push(i as u32);
                    needed -= 1;
                    if needed == 0 {
                        break;
                    }
                }
            }
            return;
        }
        let start = out.len();
        let mut have = 0;
        while have < k {
            for _ in have..k {
                out.push(rng.random_range(0..w) as u32);
            }
            out[start..].sort_unstable();
            let mut kept = start;
            for i in start..out.len() {
                if i == start || out[i] != out[kept - 1] {
                    out[kept] = out[i];
                    kept += 1;
                }
            }
            out.truncate(kept);
            have = kept - start;
        }
    }
}

/// Accumulates CSR arrays row by row.
struct Builder {
    rows: usize,
    cols: usize,
    indptr: Vec<u32>,
    indices: Vec<u32>,
    values: Vec<f64>,
}

impl Builder {
    fn new(rows: usize, cols: usize, nnz_hint: u64) -> Builder {
        let mut indptr = Vec::with_capacity(rows + 1);
        indptr.push(0);
        // The hint is bounded by LIMIT, checked by the caller; cap the reservation
        // anyway for the estimated (random) cases.
        let cap = nnz_hint.min(LIMIT) as usize;
        Builder {
            rows,
            cols,
            indptr,
            indices: Vec::with_capacity(cap),
            values: Vec::with_capacity(cap),
        }
    }

    /// Closes the current row; fails if nnz outgrows 32-bit indices.
    fn end_row(&mut self) -> Result<(), SynthError> {
        let nnz = self.indices.len() as u64;
        if nnz > LIMIT {
            return Err(SynthError::TooLarge {
                rows: self.rows,
                cols: self.cols,
                nnz,
            });
        }
        self.indptr.push(nnz as u32);
        Ok(())
    }

    fn finish(self) -> Result<Csr, SynthError> {
        Ok(Csr::try_new(
            self.rows,
            self.cols,
            self.indptr,
            self.indices,
            self.values,
        )?)
    }
}

/// A finite-difference stencil matrix on a 2-D (`grid = [n0, n1]`) or 3-D
/// (`grid = [n0, n1, n2]`) grid, points numbered row-major (last index fastest).
///
/// `points`: 5 (star) or 9 (3x3 box) in 2-D, 7 (star) or 27 (3x3x3 box) in
/// 3-D. Neighbours outside the grid are dropped (Dirichlet boundary), so
/// boundary rows are shorter. Values: neighbours -1; the centre is `2 * dims` for
/// the star stencils (the SPD Laplacian) and `points - 1` for the box stencils.
/// Deterministic (no seed).
pub fn stencil(grid: &[usize], points: usize) -> Result<Csr, SynthError> {
    let dims = grid.len();
    let boxed = match (dims, points) {
        (2, 5) | (3, 7) => false,
        (2, 9) | (3, 27) => true,
        (2 | 3, _) => {
            return Err(invalid(
                "points",
                format!(
                    "{points} is not a {dims}-D stencil (use {})",
                    if dims == 2 { "5 or 9" } else { "7 or 27" }
                ),
            ));
        }
        _ => {
            return Err(invalid(
                "grid",
                format!("needs 2 or 3 dimensions, got {dims}"),
            ));
        }
    };
    if let Some(d) = grid.iter().position(|&n| n == 0) {
        return Err(invalid("grid", format!("dimension {d} is zero")));
    }
    // Normalise to 3-D with a leading dimension of 1.
    let n: [u64; 3] = if dims == 2 {
        [1, grid[0] as u64, grid[1] as u64]
    } else {
        [grid[0] as u64, grid[1] as u64, grid[2] as u64]
    };
    let size = n
        .iter()
        .try_fold(1u64, |acc, &x| acc.checked_mul(x))
        .unwrap_or(u64::MAX);
    // Exact nnz: box = prod(3 n - 2); star = N + sum_d 2 (n_d - 1) N / n_d.
    let nnz = if size > LIMIT {
        u64::MAX
    } else if boxed {
        n.iter().map(|&x| 3 * x - 2).product()
    } else {
        size + n.iter().map(|&x| 2 * (x - 1) * (size / x)).sum::<u64>()
    };
    let total = usize::try_from(size).unwrap_or(usize::MAX);
    check_dims(total, total, nnz)?;
    let center = if boxed { points - 1 } else { 2 * dims } as f64;
    let (n0, n1, n2) = (n[0] as i64, n[1] as i64, n[2] as i64);
    let mut b = Builder::new(total, total, nnz);
    for i0 in 0..n0 {
        for i1 in 0..n1 {
            for i2 in 0..n2 {
                // Offsets in lexicographic order give increasing column indices.
                for d0 in -1i64..=1 {
                    for d1 in -1i64..=1 {
                        for d2 in -1i64..=1 {
                            let manhattan = d0.abs() + d1.abs() + d2.abs();
                            if !boxed && manhattan > 1 {
                                continue;
                            }
                            let (j0, j1, j2) = (i0 + d0, i1 + d1, i2 + d2);
                            if !(0..n0).contains(&j0)
                                || !(0..n1).contains(&j1)
                                || !(0..n2).contains(&j2)
                            {
                                continue;
                            }
                            b.indices.push(((j0 * n1 + j1) * n2 + j2) as u32);
                            b.values.push(if manhattan == 0 { center } else { -1.0 });
                        }
                    }
                }
                b.end_row()?;
            }
        }
    }
    b.finish()
}

/// A square banded matrix: row `r` has about `avg_degree` nonzeros (always
/// including the diagonal) at distinct random columns in
/// `[r - bandwidth, r + bandwidth]` (clipped to the matrix).
///
/// Row lengths are `avg_degree` rounded up or down at random (expectation
/// `avg_degree`), capped by the width of the row's band, so rows near the
/// first and last ones may be shorter. Requires `1 <= avg_degree <= 2 bandwidth + 1`
/// and `avg_degree <= rows`.
pub fn banded(
    rows: usize,
    bandwidth: usize,
    avg_degree: f64,
    seed: u64,
) -> Result<Csr, SynthError> {
    if rows == 0 {
        return Err(invalid("rows", "must be at least 1"));
    }
    let band = bandwidth.saturating_mul(2).saturating_add(1);
    check_degree(avg_degree, 1.0, band.min(rows) as f64)?;
    let est = (rows as f64 * avg_degree).ceil() as u64;
    check_dims(rows, rows, est)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut sampler = Sampler::new();
    let mut b = Builder::new(rows, rows, est);
    let mut scratch = Vec::new();
    for r in 0..rows {
        let lo = r.saturating_sub(bandwidth);
        let hi = r.saturating_add(bandwidth).min(rows - 1);
        let width = hi - lo + 1;
        let k = stochastic_round(&mut rng, avg_degree).clamp(1, width);
        // k - 1 off-diagonal columns out of the width - 1 non-diagonal positions.
        scratch.clear();
        sampler.sample(&mut rng, width - 1, k - 1, &mut scratch);
        let diag_pos = r - lo;
        let mut diag_done = false;
        for &p in &scratch {
            let p = p as usize;
            let c = if p >= diag_pos { p + 1 } else { p };
            if !diag_done && c > diag_pos {
                b.indices.push(r as u32);
                b.values.push(value(&mut rng));
                diag_done = true;
            }
            b.indices.push((lo + c) as u32);
            b.values.push(value(&mut rng));
        }
        if !diag_done {
            b.indices.push(r as u32);
            b.values.push(value(&mut rng));
        }
        b.end_row()?;
    }
    b.finish()
}

/// A square matrix with heavy-tailed row lengths and uniform random columns.
///
/// Raw row lengths are drawn from a Pareto distribution with density
/// `~ x^-exponent` (`x >= 1`), then scaled by a common factor (found by
/// fixed-point iteration) so that the mean of `min(scaled, cols)` is
/// `avg_degree`, and rounded up or down at random. Columns within a row are
/// distinct, sorted and uniform. Rows may be empty. Requires `exponent > 1` and
/// `0 < avg_degree <= rows`.
pub fn power_law(
    rows: usize,
    avg_degree: f64,
    exponent: f64,
    seed: u64,
) -> Result<Csr, SynthError> {
    if rows == 0 {
        return Err(invalid("rows", "must be at least 1"));
    }
    if !exponent.is_finite() || exponent <= 1.0 {
        return Err(invalid("exponent", format!("{exponent} must be > 1")));
    }
    check_degree(avg_degree, f64::MIN_POSITIVE, rows as f64)?;
    let cols = rows;
    check_dims(rows, cols, (rows as f64 * avg_degree).ceil() as u64)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let inv = -1.0 / (exponent - 1.0);
    let raw: Vec<f64> = (0..rows)
        .map(|_| {
            let u = 1.0 - rng.random::<f64>(); // (0, 1]
            u.powf(inv).min(1e12)
        })
        .collect();
    let cap = cols as f64;
    let target = avg_degree * rows as f64;
    let total = |s: f64| raw.iter().map(|&x| (x * s).min(cap)).sum::<f64>();
    let mut s = target / raw.iter().sum::<f64>();
    // sum(min(x s, cap)) is concave in s through 0, so this increases monotonically
    // towards the solution.
    for _ in 0..200 {
        let t = total(s);
        if t <= 0.0 || (t - target).abs() <= 1e-6 * target {
            break;
        }
        s *= target / t;
    }
    let mut indptr = Vec::with_capacity(rows + 1);
    indptr.push(0u32);
    let mut nnz: u64 = 0;
    let mut lens = Vec::with_capacity(rows);
    for &x in &raw {
        let len = stochastic_round(&mut rng, (x * s).min(cap)).min(cols);
        nnz += len as u64;
        check_dims(rows, cols, nnz)?;
        indptr.push(nnz as u32);
        lens.push(len);
    }
    drop(raw);
    let mut indices = Vec::with_capacity(nnz as usize);
    let mut values = Vec::with_capacity(nnz as usize);
    let mut sampler = Sampler::new();
    for len in lens {
        sampler.sample(&mut rng, cols, len, &mut indices);
        for _ in 0..len {
            values.push(value(&mut rng));
        }
    }
    Ok(Csr::try_new(rows, cols, indptr, indices, values)?)
}

/// A `rows x cols` matrix whose row lengths are binomial(`cols`,
/// `avg_degree / cols`) (exactly, for dense-ish rows; Poisson or normal
/// approximations otherwise) with distinct uniform random columns.
/// Requires `0 <= avg_degree <= cols`.
pub fn uniform(rows: usize, cols: usize, avg_degree: f64, seed: u64) -> Result<Csr, SynthError> {
    if rows == 0 {
        return Err(invalid("rows", "must be at least 1"));
    }
    if cols == 0 {
        return Err(invalid("cols", "must be at least 1"));
    }
    check_degree(avg_degree, 0.0, cols as f64)?;
    let est = (rows as f64 * avg_degree).ceil() as u64;
    check_dims(rows, cols, est)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut sampler = Sampler::new();
    let mut b = Builder::new(rows, cols, est);
    let p = avg_degree / cols as f64;
    let exact = (cols as f64) <= 4.0 * avg_degree + 64.0;
    let poisson_limit = (-avg_degree).exp();
    let sd = (avg_degree * (1.0 - p)).sqrt();
    for _ in 0..rows {
        let start = b.indices.len();
        if exact {
            // One Bernoulli trial per column: exactly binomial, already sorted.
            for c in 0..cols {
                if rng.random::<f64>() < p {
                    b.indices.push(c as u32);
                }
            }
        } else {
            let k = if avg_degree < 30.0 {
                // Knuth's Poisson sampler.
                let mut k = 0usize;
                let mut prod = rng.random::<f64>();
                while prod > poisson_limit {
                    k += 1;
                    prod *= rng.random::<f64>();
                }
                k
            } else {
                // Normal approximation (Box-Muller).
                let u1 = 1.0 - rng.random::<f64>();
                let u2 = rng.random::<f64>();
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                (avg_degree + sd * z).round().max(0.0) as usize
            };
            sampler.sample(&mut rng, cols, k.min(cols), &mut b.indices);
        }
        for _ in start..b.indices.len() {
            b.values.push(value(&mut rng));
        }
        b.end_row()?;
    }
    b.finish()
}

/// A square block-sparse matrix: the rows are split into block-rows of
/// `block[0]` rows; each block-row holds `blocks_per_row` dense
/// `block[0] x block[1]` blocks at distinct random block-columns (of width
/// `block[1]`). nnz is exactly `rows * blocks_per_row * block[1]`.
///
/// Requires `rows` to be a multiple of both `block[0]` and `block[1]`, and
/// `1 <= blocks_per_row <= rows / block[1]`.
pub fn block(
    rows: usize,
    block: [usize; 2],
    blocks_per_row: usize,
    seed: u64,
) -> Result<Csr, SynthError> {
    let [br, bc] = block;
    if rows == 0 {
        return Err(invalid("rows", "must be at least 1"));
    }
    if br == 0 || bc == 0 {
        return Err(invalid("block", "block sizes must be at least 1"));
    }
    // (Not `%`/`is_multiple_of`: the latter needs a newer Rust than the MSRV.)
    if (rows / br) * br != rows || (rows / bc) * bc != rows {
        return Err(invalid(
            "rows",
            format!("{rows} is not a multiple of both block sizes {br} and {bc}"),
        ));
    }
    let block_cols = rows / bc;
    if blocks_per_row == 0 || blocks_per_row > block_cols {
        return Err(invalid(
            "blocks_per_row",
            format!("{blocks_per_row} is not in [1, {block_cols}]"),
        ));
    }
    let nnz = (rows as u64)
        .saturating_mul(blocks_per_row as u64)
        .saturating_mul(bc as u64);
    check_dims(rows, rows, nnz)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut sampler = Sampler::new();
    let mut b = Builder::new(rows, rows, nnz);
    let mut chosen = Vec::with_capacity(blocks_per_row);
    for _ in 0..rows / br {
        chosen.clear();
        sampler.sample(&mut rng, block_cols, blocks_per_row, &mut chosen);
        for _ in 0..br {
            for &bj in &chosen {
                let c0 = bj as usize * bc;
                for c in c0..c0 + bc {
                    b.indices.push(c as u32);
                    b.values.push(value(&mut rng));
                }
            }
            b.end_row()?;
        }
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_cv(m: &Csr) -> (f64, f64) {
        let n = m.rows() as f64;
        let mean = m.nnz() as f64 / n;
        let var = (0..m.rows())
            .map(|r| (m.row_len(r) as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var.sqrt() / mean)
    }

    fn revalidate(m: &Csr) {
        let again = Csr::try_new(
            m.rows(),
            m.cols(),
            m.indptr().to_vec(),
            m.indices().to_vec(),
            m.values().to_vec(),
        );
        assert_eq!(again.as_ref(), Ok(m));
        assert!(m.values().iter().all(|v| v.is_finite()));
    }

    #[test]
    fn stencil_shapes_and_exact_nnz() {
        let m = stencil(&[4, 3], 5).unwrap();
        assert_eq!((m.rows(), m.cols(), m.nnz()), (12, 12, 46));
        let m9 = stencil(&[4, 3], 9).unwrap();
        assert_eq!(m9.nnz(), 10 * 7);
        let m7 = stencil(&[2, 3, 4], 7).unwrap();
        assert_eq!(m7.rows(), 24);
        assert_eq!(m7.nnz(), 24 + 2 * 12 + 2 * 2 * 8 + 2 * 3 * 6);
        let m27 = stencil(&[2, 3, 4], 27).unwrap();
        assert_eq!(m27.nnz(), 4 * 7 * 10);
        let one = stencil(&[1, 1, 1], 27).unwrap();
        assert_eq!(one.nnz(), 1);
        for m in [&m, &m9, &m7, &m27, &one] {
            revalidate(m);
        }
    }

    #[test]
    fn stencil_values() {
        // Star: SPD Laplacian, symmetric, row sums >= 0, interior row sums 0.
        for (grid, pts, center) in [
            (vec![4usize, 3], 5usize, 4.0),
            (vec![3, 3, 3], 7, 6.0),
            (vec![4, 3], 9, 8.0),
            (vec![3, 3, 3], 27, 26.0),
        ] {
            let m = stencil(&grid, pts).unwrap();
            let t = Csr::from_sprs(&m.to_sprs().transpose_view().to_csr()).unwrap();
            assert_eq!(m, t, "symmetric");
            let sums = m.spmv_f64(&vec![1.0; m.cols()]).unwrap();
            assert!(sums.iter().all(|&s| s >= 0.0));
            assert!(sums.contains(&0.0), "an interior row sums to 0");
            for r in 0..m.rows() {
                let (a, b) = (m.indptr()[r] as usize, m.indptr()[r + 1] as usize);
                for k in a..b {
                    let want = if m.indices()[k] as usize == r {
                        center
                    } else {
                        -1.0
                    };
                    assert_eq!(m.values()[k], want);
                }
            }
        }
        // 5-point on 4x3, row 4 = grid point (1, 1): neighbours 1, 3, 5, 7.
        let m = stencil(&[4, 3], 5).unwrap();
        let r = 4;
        let (a, b) = (m.indptr()[r] as usize, m.indptr()[r + 1] as usize);
        assert_eq!(&m.indices()[a..b], &[1, 3, 4, 5, 7]);
    }

    #[test]
    fn random_generators_are_deterministic() {
        type Gen = fn(u64) -> Result<Csr, SynthError>;
        let gens: [Gen; 4] = [
            |s| banded(500, 20, 7.5, s),
            |s| power_law(500, 6.0, 2.0, s),
            |s| uniform(500, 300, 5.0, s),
            |s| block(480, [4, 2], 3, s),
        ];
        for g in gens {
            let a = g(1).unwrap();
            revalidate(&a);
            assert_eq!(a, g(1).unwrap());
            assert_ne!(a, g(2).unwrap());
        }
    }

    #[test]
    fn random_generators_hit_the_mean() {
        let n = 10_000;
        for (name, m, avg) in [
            ("banded", banded(n, 50, 12.0, 3).unwrap(), 12.0),
            ("banded narrow", banded(n, 2, 4.5, 3).unwrap(), 4.5),
            ("power_law", power_law(n, 8.0, 2.0, 3).unwrap(), 8.0),
            ("power_law steep", power_law(n, 3.0, 3.5, 3).unwrap(), 3.0),
            ("uniform", uniform(n, 20_000, 10.0, 3).unwrap(), 10.0),
            (
                "uniform big avg",
                uniform(n, 100_000, 60.0, 3).unwrap(),
                60.0,
            ),
            ("uniform dense", uniform(n, 40, 25.0, 3).unwrap(), 25.0),
        ] {
            revalidate(&m);
            let (mean, _) = mean_cv(&m);
            assert!((mean - avg).abs() <= 0.1 * avg, "{name}: mean {mean}");
            assert_eq!((m.rows(), m.cols()), (n, m.cols()));
        }
        let (_, cv) = mean_cv(&power_law(n, 8.0, 2.0, 3).unwrap());
        assert!(cv > 1.0, "power-law cv {cv}");
        let (_, cv) = mean_cv(&uniform(n, 20_000, 10.0, 3).unwrap());
        assert!(cv < 0.5, "uniform cv {cv}");
    }

    #[test]
    fn banded_stays_in_band_with_diagonal() {
        let m = banded(1000, 5, 6.0, 9).unwrap();
        for r in 0..m.rows() {
            let row = &m.indices()[m.indptr()[r] as usize..m.indptr()[r + 1] as usize];
            assert!(row.contains(&(r as u32)), "diagonal of row {r}");
            assert!(row.iter().all(|&c| (c as i64 - r as i64).abs() <= 5));
        }
        // Full band.
        let full = banded(10, 1, 3.0, 1).unwrap();
        assert_eq!(full.nnz(), 28);
    }

    #[test]
    fn block_structure() {
        let m = block(48, [4, 3], 2, 5).unwrap();
        assert_eq!((m.rows(), m.cols(), m.nnz()), (48, 48, 48 * 2 * 3));
        for r in 0..48 {
            let row = &m.indices()[m.indptr()[r] as usize..m.indptr()[r + 1] as usize];
            let first = &m.indices()[m.indptr()[r / 4 * 4] as usize..][..6];
            assert_eq!(row, first, "rows of a block-row share columns");
            assert_eq!(row[0] % 3, 0);
            assert_eq!(row[1], row[0] + 1);
            assert_eq!(row[2], row[0] + 2);
            assert_eq!(row[3] % 3, 0);
        }
        // Every block column.
        let d = block(12, [2, 2], 6, 1).unwrap();
        assert_eq!(d.nnz(), 144);
    }

    #[test]
    fn invalid_parameters_are_named() {
        let name = |e: SynthError| match e {
            SynthError::InvalidParameter { name, .. } => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(name(stencil(&[4, 3], 7).unwrap_err()), "points");
        assert_eq!(name(stencil(&[4, 3, 2], 9).unwrap_err()), "points");
        assert_eq!(name(stencil(&[4], 5).unwrap_err()), "grid");
        assert_eq!(name(stencil(&[4, 0], 5).unwrap_err()), "grid");
        assert_eq!(name(banded(0, 1, 1.0, 0).unwrap_err()), "rows");
        assert_eq!(name(banded(10, 1, 4.0, 0).unwrap_err()), "avg_degree");
        assert_eq!(name(banded(10, 1, 0.5, 0).unwrap_err()), "avg_degree");
        assert_eq!(name(power_law(10, 3.0, 1.0, 0).unwrap_err()), "exponent");
        assert_eq!(name(power_law(10, 11.0, 2.0, 0).unwrap_err()), "avg_degree");
        assert_eq!(name(uniform(10, 5, 6.0, 0).unwrap_err()), "avg_degree");
        assert_eq!(name(uniform(10, 5, f64::NAN, 0).unwrap_err()), "avg_degree");
        assert_eq!(name(uniform(10, 0, 0.0, 0).unwrap_err()), "cols");
        assert_eq!(name(block(10, [4, 2], 1, 0).unwrap_err()), "rows");
        assert_eq!(name(block(12, [0, 2], 1, 0).unwrap_err()), "block");
        assert_eq!(name(block(12, [4, 2], 7, 0).unwrap_err()), "blocks_per_row");
        assert_eq!(name(block(12, [4, 2], 0, 0).unwrap_err()), "blocks_per_row");
        assert!(
            stencil(&[2000, 2000, 2000], 7)
                .unwrap_err()
                .to_string()
                .contains("32-bit")
        );
        assert!(matches!(
            uniform(100_000_000, 100, 50.0, 0),
            Err(SynthError::TooLarge { .. })
        ));
        let msg = block(12, [4, 2], 7, 0).unwrap_err().to_string();
        assert!(msg.contains("blocks_per_row"), "{msg}");
    }
}

#[cfg(test)]
mod large {
    use super::*;

    /// About 100 M nonzeros per generator (needs ~1.3 GB); run with --release.
    #[test]
    #[ignore = "slow and memory hungry; run with --release"]
    fn hundred_million_nonzeros() {
        let n = 10_000_000;
        type Gen = fn() -> Result<Csr, SynthError>;
        let cases: [(&str, Gen); 5] = [
            ("uniform", || uniform(10_000_000, 10_000_000, 10.0, 1)),
            ("banded", || banded(10_000_000, 64, 10.0, 1)),
            ("power_law", || power_law(10_000_000, 10.0, 2.0, 1)),
            ("block", || block(10_000_000, [4, 4], 3, 1)),
            ("stencil", || stencil(&[215, 215, 215], 7)),
        ];
        for (name, g) in cases {
            let t = std::time::Instant::now();
            let m = g().unwrap();
            println!(
                "{name}: {} rows, {} nnz in {:?}",
                m.rows(),
                m.nnz(),
                t.elapsed()
            );
            assert!(m.nnz() as f64 > 0.6 * n as f64 * 10.0 || name == "stencil");
        }
    }
}
