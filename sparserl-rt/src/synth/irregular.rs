//! Irregular synthetic matrices: scale-free graphs, unstructured meshes, road
//! networks and circuit-like matrices, the structures of sparse collections
//! that regular stencils and uniform random patterns do not cover.
//!
//! Patterns are built from a sorted list of undirected edges (8 bytes per
//! edge, then 12 per nonzero) or row by row straight into the renumbered order
//! (12 bytes per nonzero, 8 per row). Values are numerically symmetric:
//! off-diagonal values are uniform in `[-1, 1)` and a diagonal entry, where
//! present, is the row's off-diagonal count plus one, so the matrices are
//! strictly diagonally dominant (symmetric positive definite).

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Sampler, SynthError, check_dims, invalid, value};
use crate::csr::Csr;

/// A random permutation `perm[old] = new` of `0..n`.
fn random_permutation(n: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let mut perm: Vec<u32> = (0..n as u32).collect();
    perm.shuffle(rng);
    perm
}

/// The inverse of a permutation: `inv[new] = old`.
fn inverse(perm: &[u32]) -> Vec<u32> {
    let mut inv = vec![0u32; perm.len()];
    for (old, &new) in perm.iter().enumerate() {
        inv[new as usize] = old as u32;
    }
    inv
}

/// Values for a structurally symmetric pattern with sorted rows: each entry
/// above the diagonal gets a random value in `[-1, 1)`, its mirror below the
/// diagonal the same value, and a diagonal entry the row's off-diagonal count
/// plus one. Rows are walked in order with one cursor per row pointing at the
/// next entry above the diagonal still to be mirrored.
fn symmetric_values(indptr: &[u32], indices: &[u32], rng: &mut ChaCha8Rng) -> Vec<f64> {
    let n = indptr.len() - 1;
    let mut values = vec![0.0; indices.len()];
    let mut next = vec![0u32; n];
    for r in 0..n {
        let (start, end) = (indptr[r] as usize, indptr[r + 1] as usize);
        let mut upper = end;
        for p in start..end {
            let c = indices[p] as usize;
            values[p] = if c < r {
                let q = next[c] as usize;
                if q < indptr[c + 1] as usize && indices[q] as usize == r {
                    next[c] += 1;
                    values[q]
                } else {
                    // Unreachable for the symmetric patterns built here.
                    value(rng)
                }
            } else if c == r {
                (end - start) as f64
            } else {
                upper = upper.min(p);
                value(rng)
            };
        }
        next[r] = upper as u32;
    }
    values
}

/// Packs an undirected edge `{u, v}` (`u != v`) as `min << 32 | max`.
fn pack(u: u32, v: u32) -> u64 {
    (u64::from(u.min(v)) << 32) | u64::from(u.max(v))
}

/// A symmetric `n x n` matrix from undirected edges packed by [`pack`]:
/// sorts and merges duplicates, then scatters both directions of every edge
/// (and the diagonal if asked). Walking the sorted edges by their smaller end
/// fills every row in increasing column order, so no row needs sorting.
fn symmetric_from_edges(
    n: usize,
    mut edges: Vec<u64>,
    diagonal: bool,
    rng: &mut ChaCha8Rng,
) -> Result<Csr, SynthError> {
    edges.sort_unstable();
    edges.dedup();
    let nnz = 2 * edges.len() as u64 + if diagonal { n as u64 } else { 0 };
    check_dims(n, n, nnz)?;
    let mut next = vec![u32::from(diagonal); n];
    for &e in &edges {
        next[(e >> 32) as usize] += 1;
        next[e as u32 as usize] += 1;
    }
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0u32);
    let mut acc = 0u32;
    for slot in next.iter_mut() {
        let len = *slot;
        *slot = acc;
        acc += len;
        indptr.push(acc);
    }
    let mut indices = vec![0u32; nnz as usize];
    let mut k = 0;
    for r in 0..n {
        if diagonal {
            indices[next[r] as usize] = r as u32;
            next[r] += 1;
        }
        while k < edges.len() && (edges[k] >> 32) as usize == r {
            let v = edges[k] as u32;
            indices[next[r] as usize] = v;
            next[r] += 1;
            indices[next[v as usize] as usize] = r as u32;
            next[v as usize] += 1;
            k += 1;
        }
    }
    drop(edges);
    drop(next);
    let values = symmetric_values(&indptr, &indices, rng);
    Ok(Csr::try_new(n, n, indptr, indices, values)?)
}

/// A symmetric `n x n` matrix over points `0..n` whose neighbours (including
/// the point itself, in a symmetric relation) `neighbours(point, out)`
/// appends, built directly in a random numbering: the new row `k` is old point
/// `inv[k]` with its neighbours renamed and sorted. `max_row` bounds a row's
/// length (for the size check), `mean_row` sizes the allocation.
fn renumbered(
    n: usize,
    max_row: usize,
    mean_row: usize,
    rng: &mut ChaCha8Rng,
    mut neighbours: impl FnMut(usize, &mut Vec<u32>),
) -> Result<Csr, SynthError> {
    check_dims(n, n, (n as u64).saturating_mul(max_row as u64))?;
    let perm = random_permutation(n, rng);
    let inv = inverse(&perm);
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0u32);
    let mut indices = Vec::with_capacity(n * mean_row);
    let mut buf = Vec::with_capacity(max_row);
    for &old in &inv {
        buf.clear();
        neighbours(old as usize, &mut buf);
        buf.iter_mut().for_each(|c| *c = perm[*c as usize]);
        buf.sort_unstable();
        indices.extend_from_slice(&buf);
        indptr.push(indices.len() as u32);
    }
    drop(inv);
    drop(perm);
    let values = symmetric_values(&indptr, &indices, rng);
    Ok(Csr::try_new(n, n, indptr, indices, values)?)
}

/// Checks grid extents (each at least 1) and returns the point count,
/// saturated on overflow so that the size check rejects it.
fn grid_points(extents: &[(&'static str, usize)]) -> Result<usize, SynthError> {
    let mut n = 1usize;
    for &(name, e) in extents {
        if e == 0 {
            return Err(invalid(name, "must be at least 1"));
        }
        n = n.saturating_mul(e);
    }
    Ok(n)
}

/// Appends `p` and the points `p ± o` inside a `dims` grid (x fastest) for
/// every nonzero 0/1 offset `o` in the grid's dimensions: the edges of the
/// Kuhn (Freudenthal) simplicial triangulation, whose simplices all share the
/// main `(1, .., 1)` diagonal of their cell.
fn kuhn_neighbours(dims: [usize; 3], p: usize, out: &mut Vec<u32>) {
    let [nx, ny, nz] = dims;
    let (x, y, z) = (p % nx, (p / nx) % ny, p / (nx * ny));
    out.push(p as u32);
    for mask in 1..8 {
        let (dx, dy, dz) = (mask & 1, (mask >> 1) & 1, mask >> 2);
        if x + dx < nx && y + dy < ny && z + dz < nz {
            out.push((p + dx + nx * (dy + ny * dz)) as u32);
        }
        if x >= dx && y >= dy && z >= dz {
            out.push((p - dx - nx * (dy + ny * dz)) as u32);
        }
    }
}

/// R-MAT quadrant thresholds out of 2^16: a = 0.57, a + b = 0.76,
/// a + b + c = 0.95 (d = 0.05).
const RMAT_AB_C: [u32; 3] = [37_356, 49_807, 62_259];

/// A Graph500-style R-MAT (recursive Kronecker) graph on `n = 2^scale`
/// vertices, as a symmetric adjacency pattern without diagonal.
///
/// Draws `edge_factor * n` directed edges; each picks one of the four
/// quadrants of the adjacency matrix with probabilities `a = 0.57`,
/// `b = 0.19`, `c = 0.19`, `d = 0.05` at each of the `scale` levels. Self
/// loops are dropped, each edge `(u, v)` also gives `(v, u)`, duplicates are
/// merged, and vertex ids are scrambled by a random permutation (as Graph500
/// does), so the given order carries no locality. The result imitates
/// scale-free networks (web, social and citation graphs): a heavy-tailed
/// degree distribution with a few hubs of very high degree and many vertices of
/// degree 0 or 1. Values are symmetric, uniform in `[-1, 1)`. Requires
/// `1 <= scale <= 30` and `edge_factor >= 1`.
pub fn rmat(scale: u32, edge_factor: usize, seed: u64) -> Result<Csr, SynthError> {
    if !(1..=30).contains(&scale) {
        return Err(invalid("scale", format!("{scale} is not in [1, 30]")));
    }
    if edge_factor == 0 {
        return Err(invalid("edge_factor", "must be at least 1"));
    }
    let n = 1usize << scale;
    let edges = (edge_factor as u64).saturating_mul(n as u64);
    check_dims(n, n, edges.saturating_mul(2))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let perm = random_permutation(n, &mut rng);
    let mut list = Vec::with_capacity(edges as usize);
    for _ in 0..edges {
        let (mut u, mut v) = (0u32, 0u32);
        let mut bits = 0u64;
        for level in 0..scale {
            if level % 4 == 0 {
                bits = rng.random::<u64>();
            }
            let r = (bits & 0xFFFF) as u32;
            bits >>= 16;
            // Quadrant 0..4 = a, b, c, d: row bit q >> 1, column bit q & 1.
            let q = RMAT_AB_C.iter().filter(|&&t| r >= t).count() as u32;
            u = (u << 1) | (q >> 1);
            v = (v << 1) | (q & 1);
        }
        if u != v {
            list.push(pack(perm[u as usize], perm[v as usize]));
        }
    }
    drop(perm);
    symmetric_from_edges(n, list, false, &mut rng)
}

/// A triangulated `nx x ny` grid (each square cut along its `(1, 1)`
/// diagonal), randomly renumbered.
///
/// Vertex `(x, y)` is joined to itself and to `(x ± 1, y)`, `(x, y ± 1)`,
/// `(x + 1, y + 1)` and `(x - 1, y - 1)`: 7 nonzeros in an interior row, 3 to 5
/// on the boundary. The vertices are numbered by a random permutation, so the
/// matrix imitates a 2-D linear finite-element mesh read in an arbitrary order
/// (no band, poor locality until reordered). Symmetric and diagonally dominant.
pub fn mesh_2d(nx: usize, ny: usize, seed: u64) -> Result<Csr, SynthError> {
    let n = grid_points(&[("nx", nx), ("ny", ny)])?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    renumbered(n, 7, 7, &mut rng, |p, out| {
        kuhn_neighbours([nx, ny, 1], p, out)
    })
}

/// An `n x n x n` grid cut into tetrahedra by the Kuhn (Freudenthal)
/// triangulation (six tetrahedra per cube sharing its main diagonal), randomly
/// renumbered.
///
/// Vertex `(x, y, z)` is joined to itself and its neighbours at `±(1,0,0)`,
/// `±(0,1,0)`, `±(0,0,1)`, `±(1,1,0)`, `±(0,1,1)`, `±(1,0,1)` and `±(1,1,1)`:
/// 15 nonzeros in an interior row, fewer on the boundary. The random numbering
/// imitates a 3-D linear finite-element mesh (structural mechanics, diffusion)
/// stored in an arbitrary order. Symmetric and diagonally dominant.
pub fn mesh_3d(n: usize, seed: u64) -> Result<Csr, SynthError> {
    let points = grid_points(&[("n", n), ("n", n), ("n", n)])?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    renumbered(points, 15, 15, &mut rng, |p, out| {
        kuhn_neighbours([n, n, n], p, out)
    })
}

/// Road-graph flags of a grid vertex: its edge to `(x + 1, y)`, its edge to
/// `(x, y + 1)`, and the diagonal of its cell `[x, x + 1] x [y, y + 1]`.
const EAST: u8 = 1;
const NORTH: u8 = 2;
const DIAG: u8 = 4;
const ANTI: u8 = 8;

/// A planar road-network-like graph on an `nx x ny` grid, randomly renumbered.
///
/// Each grid edge is kept with probability 0.7 and 5% of the cells get one
/// diagonal shortcut (either diagonal, never both, so the graph stays planar).
/// Every vertex keeps its diagonal entry: 1 to 9 nonzeros a row, about 3.9 on
/// average. Imitates road networks (low, nearly uniform degree, huge diameter,
/// no useful order as stored). Symmetric and diagonally dominant.
pub fn road(nx: usize, ny: usize, seed: u64) -> Result<Csr, SynthError> {
    let n = grid_points(&[("nx", nx), ("ny", ny)])?;
    check_dims(n, n, (n as u64).saturating_mul(9))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut flags = vec![0u8; n];
    for (p, f) in flags.iter_mut().enumerate() {
        let (x, y) = (p % nx, p / nx);
        if x + 1 < nx && rng.random_bool(0.7) {
            *f |= EAST;
        }
        if y + 1 < ny && rng.random_bool(0.7) {
            *f |= NORTH;
        }
        if x + 1 < nx && y + 1 < ny && rng.random_bool(0.05) {
            *f |= if rng.random_bool(0.5) { DIAG } else { ANTI };
        }
    }
    renumbered(n, 9, 4, &mut rng, |p, out| {
        let (x, y) = (p % nx, p / nx);
        let has = |q: usize, bit: u8| flags[q] & bit != 0;
        // The anti-diagonal of cell (x - 1, y) joins (x, y) to (x - 1, y + 1);
        // that of cell (x, y - 1) joins (x + 1, y - 1) to (x, y).
        let candidates = [
            (true, p),
            (has(p, EAST), p + 1),
            (has(p, NORTH), p + nx),
            (has(p, DIAG), p + nx + 1),
            (x > 0 && has(p - 1, EAST), p.wrapping_sub(1)),
            (y > 0 && has(p - nx, NORTH), p.wrapping_sub(nx)),
            (
                x > 0 && y > 0 && has(p - nx - 1, DIAG),
                p.wrapping_sub(nx + 1),
            ),
            (x > 0 && has(p - 1, ANTI), p + nx - 1),
            (y > 0 && has(p - nx, ANTI), (p + 1).wrapping_sub(nx)),
        ];
        out.extend(candidates.iter().filter(|c| c.0).map(|c| c.1 as u32));
    })
}

/// Dense rows (and columns) of [`circuit`].
const DENSE: usize = 8;
/// Half-width of the window of [`circuit`]'s local couplings.
const NEAR: usize = 64;

/// A circuit-simulation-like square matrix (modified nodal analysis).
///
/// Every row has its diagonal and draws 2 to 4 off-diagonal couplings, 80% of
/// them to a random node within ±64 (locally numbered devices) and 20% to any
/// node (long wires); the pattern is then made structurally symmetric
/// (duplicates merged). On top, `8` random nodes play supply / ground nets:
/// each is coupled to a random 5% of all nodes, giving 8 dense rows and the
/// matching dense columns, the load-imbalance hazard of real circuit matrices.
/// Not renumbered. Values are symmetric and diagonally dominant. Requires
/// `rows >= 16`.
pub fn circuit(rows: usize, seed: u64) -> Result<Csr, SynthError> {
    if rows < 2 * DENSE {
        return Err(invalid("rows", format!("{rows} is below {}", 2 * DENSE)));
    }
    let share = rows.div_ceil(20);
    let dense = (share as u64).saturating_mul(2 * DENSE as u64);
    check_dims(rows, rows, (rows as u64 * 9).saturating_add(dense))?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut list = Vec::with_capacity(rows * 3 + DENSE * share);
    for r in 0..rows {
        for _ in 0..rng.random_range(2..=4) {
            let (lo, hi) = if rng.random_bool(0.8) {
                (r.saturating_sub(NEAR), (r + NEAR).min(rows - 1))
            } else {
                (0, rows - 1)
            };
            // A column of lo..=hi other than r.
            let c = rng.random_range(lo..hi);
            let c = if c >= r { c + 1 } else { c };
            list.push(pack(r as u32, c as u32));
        }
    }
    let mut sampler = Sampler::new();
    let mut nets = Vec::with_capacity(DENSE);
    sampler.sample(&mut rng, rows, DENSE, &mut nets);
    let mut targets = Vec::with_capacity(share);
    for &d in &nets {
        targets.clear();
        sampler.sample(&mut rng, rows, share, &mut targets);
        list.extend(targets.iter().filter(|&&t| t != d).map(|&t| pack(d, t)));
    }
    symmetric_from_edges(rows, list, true, &mut rng)
}

/// A symmetric random renumbering `B = P A P^T` of a square matrix: row and
/// column `i` of `A` become row and column `perm[i]` of `B` for a random
/// permutation `perm`. Keeps the values, the nonzero count, the multiset of row
/// lengths, symmetry and the spectrum, and destroys any locality of the given
/// order (as matrices read in an arbitrary numbering). Requires a square matrix.
pub fn scramble(csr: &Csr, seed: u64) -> Result<Csr, SynthError> {
    let n = csr.rows();
    if csr.cols() != n {
        return Err(invalid(
            "csr",
            format!("{n} x {} matrix is not square", csr.cols()),
        ));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let perm = random_permutation(n, &mut rng);
    let (ip, ix, vals) = (csr.indptr(), csr.indices(), csr.values());
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0u32);
    let mut indices = Vec::with_capacity(csr.nnz());
    let mut values = Vec::with_capacity(csr.nnz());
    let mut row: Vec<(u32, f64)> = Vec::new();
    for old in inverse(&perm) {
        let span = ip[old as usize] as usize..ip[old as usize + 1] as usize;
        row.clear();
        row.extend(span.map(|p| (perm[ix[p] as usize], vals[p])));
        row.sort_unstable_by_key(|e| e.0);
        indices.extend(row.iter().map(|e| e.0));
        values.extend(row.iter().map(|e| e.1));
        indptr.push(indices.len() as u32);
    }
    Ok(Csr::try_new(n, n, indptr, indices, values)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks validity, squareness, pattern and value symmetry, and (when
    /// `diag`) a dominant diagonal equal to the off-diagonal count plus one.
    fn check_symmetric(m: &Csr, diag: bool) {
        let (ip, ix) = (m.indptr(), m.indices());
        Csr::validate_parts(m.rows(), m.cols(), ip, ix, m.values().len()).unwrap();
        assert_eq!(m.rows(), m.cols());
        let mut fwd = Vec::with_capacity(m.nnz());
        for r in 0..m.rows() {
            let has_diag = m.indices()[span(m, r)].contains(&(r as u32));
            assert_eq!(has_diag, diag, "row {r}");
            for p in span(m, r) {
                let (c, v) = (m.indices()[p], m.values()[p]);
                if c as usize == r {
                    assert_eq!(v, m.row_len(r) as f64);
                } else {
                    assert!((-1.0..1.0).contains(&v));
                }
                fwd.push((r as u32, c, v.to_bits()));
            }
        }
        let back = sorted(fwd.iter().map(|&(r, c, v)| (c, r, v)).collect());
        assert_eq!(fwd, back, "A == A^T");
    }

    fn span(m: &Csr, r: usize) -> std::ops::Range<usize> {
        m.indptr()[r] as usize..m.indptr()[r + 1] as usize
    }

    fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
        v.sort_unstable();
        v
    }

    fn lens(m: &Csr) -> Vec<usize> {
        (0..m.rows()).map(|r| m.row_len(r)).collect()
    }

    /// `|row - column|` of every entry.
    fn distances(m: &Csr) -> Vec<usize> {
        (0..m.rows())
            .flat_map(|r| {
                m.indices()[span(m, r)]
                    .iter()
                    .map(move |&c| r.abs_diff(c as usize))
            })
            .collect()
    }

    fn count_len(m: &Csr, len: usize) -> usize {
        lens(m).iter().filter(|&&l| l == len).count()
    }

    fn deterministic(g: impl Fn(u64) -> Result<Csr, SynthError>) -> Csr {
        let a = g(7).unwrap();
        assert_eq!(a, g(7).unwrap(), "same seed");
        assert_ne!(a, g(8).unwrap(), "other seed");
        a
    }

    #[test]
    fn rmat_is_scale_free() {
        let m = deterministic(|s| rmat(10, 8, s));
        assert_eq!((m.rows(), m.cols()), (1024, 1024));
        check_symmetric(&m, false);
        assert!(m.nnz() > 4 * 1024 && m.nnz() <= 16 * 1024, "{}", m.nnz());
        let max = *lens(&m).iter().max().unwrap();
        let mean = m.nnz() as f64 / m.rows() as f64;
        assert!(max as f64 > 8.0 * mean, "max {max} mean {mean}");
        assert!(count_len(&m, 0) > 0, "isolated vertices");
        // Scrambled ids: the hub is not vertex 0 and the first rows hold no more
        // than their share.
        let first: usize = (0..64).map(|r| m.row_len(r)).sum();
        assert!(first < m.nnz() / 4, "{first}");
        assert_eq!(rmat(1, 1, 3).unwrap().rows(), 2);
    }

    #[test]
    fn mesh_2d_is_a_triangulation() {
        let (nx, ny) = (9, 7);
        let m = deterministic(|s| mesh_2d(nx, ny, s));
        assert_eq!((m.rows(), m.cols()), (nx * ny, nx * ny));
        check_symmetric(&m, true);
        let edges = (nx - 1) * ny + nx * (ny - 1) + (nx - 1) * (ny - 1);
        assert_eq!(m.nnz(), nx * ny + 2 * edges);
        assert_eq!(count_len(&m, 7), (nx - 2) * (ny - 2));
        assert_eq!(*lens(&m).iter().max().unwrap(), 7);
        assert_eq!(*lens(&m).iter().min().unwrap(), 3);
        // Renumbered: far from banded.
        let band = distances(&m).into_iter().max().unwrap();
        assert!(band > 2 * nx, "bandwidth {band}");
        assert_eq!(mesh_2d(1, 1, 0).unwrap().nnz(), 1);
    }

    #[test]
    fn mesh_3d_is_a_kuhn_triangulation() {
        let n = 5;
        let m = deterministic(|s| mesh_3d(n, s));
        assert_eq!(m.rows(), n * n * n);
        check_symmetric(&m, true);
        let edges = 3 * n * n * (n - 1) + 3 * n * (n - 1) * (n - 1) + (n - 1).pow(3);
        assert_eq!(m.nnz(), n.pow(3) + 2 * edges);
        assert_eq!(*lens(&m).iter().max().unwrap(), 15);
        assert_eq!(count_len(&m, 15), (n - 2).pow(3));
    }

    #[test]
    fn road_is_sparse_and_planar_like() {
        let (nx, ny) = (40, 30);
        let m = deterministic(|s| road(nx, ny, s));
        assert_eq!(m.rows(), nx * ny);
        check_symmetric(&m, true);
        let mean = m.nnz() as f64 / m.rows() as f64;
        assert!((2.5..5.0).contains(&mean), "mean {mean}");
        assert!(*lens(&m).iter().max().unwrap() <= 9);
        let edges = (m.nnz() - m.rows()) / 2;
        let grid = (nx - 1) * ny + nx * (ny - 1);
        let diags = (nx - 1) * (ny - 1);
        assert!(edges > grid / 2 && edges < grid + diags / 10, "{edges}");
        assert_eq!(road(1, 1, 0).unwrap().nnz(), 1);
        assert_eq!(road(3, 1, 0).unwrap().rows(), 3);
    }

    #[test]
    fn circuit_has_dense_rows_and_columns() {
        let rows = 2000;
        let m = deterministic(|s| circuit(rows, s));
        assert_eq!((m.rows(), m.cols()), (rows, rows));
        check_symmetric(&m, true);
        let dense = lens(&m).iter().filter(|&&l| l * 25 >= rows).count();
        assert_eq!(dense, DENSE);
        let mean = m.nnz() as f64 / rows as f64;
        assert!((5.0..12.0).contains(&mean), "mean {mean}");
        // Most couplings are local (not renumbered).
        let near = distances(&m).iter().filter(|&&d| d <= NEAR).count();
        assert!(near * 2 > m.nnz(), "{near} of {}", m.nnz());
        check_symmetric(&circuit(16, 1).unwrap(), true);
    }

    #[test]
    fn scramble_permutes_symmetrically() {
        let a = circuit(300, 5).unwrap();
        let b = scramble(&a, 11).unwrap();
        assert_eq!(b, scramble(&a, 11).unwrap());
        assert_ne!(b, scramble(&a, 12).unwrap());
        assert_eq!((b.rows(), b.cols(), b.nnz()), (a.rows(), a.cols(), a.nnz()));
        check_symmetric(&b, true);
        assert_eq!(sorted(lens(&a)), sorted(lens(&b)));
        // Same rows as multisets of values.
        let rows = |m: &Csr| {
            let row = |r| sorted(m.values()[span(m, r)].iter().map(|x| x.to_bits()).collect());
            sorted((0..m.rows()).map(row).collect())
        };
        assert_eq!(rows(&a), rows(&b));
        let rect = Csr::try_new(1, 2, vec![0, 1], vec![1], vec![1.0]).unwrap();
        assert!(matches!(
            scramble(&rect, 0),
            Err(SynthError::InvalidParameter { name: "csr", .. })
        ));
    }

    #[test]
    fn bad_parameters_are_errors() {
        let param = |r: Result<Csr, SynthError>| match r {
            Err(SynthError::InvalidParameter { name, .. }) => name,
            other => panic!("expected an invalid parameter, got {other:?}"),
        };
        assert_eq!(param(rmat(0, 8, 0)), "scale");
        assert_eq!(param(rmat(31, 8, 0)), "scale");
        assert_eq!(param(rmat(4, 0, 0)), "edge_factor");
        assert_eq!(param(mesh_2d(0, 3, 0)), "nx");
        assert_eq!(param(mesh_2d(3, 0, 0)), "ny");
        assert_eq!(param(mesh_3d(0, 0)), "n");
        assert_eq!(param(road(0, 2, 0)), "nx");
        assert_eq!(param(road(2, 0, 0)), "ny");
        assert_eq!(param(circuit(15, 0)), "rows");
        let too_large = |r: Result<Csr, SynthError>| {
            assert!(matches!(r, Err(SynthError::TooLarge { .. })), "{r:?}")
        };
        too_large(rmat(30, 16, 0));
        too_large(mesh_3d(2000, 0));
        too_large(mesh_2d(usize::MAX, 3, 0));
        too_large(road(1 << 20, 1 << 20, 0));
        too_large(circuit(1 << 30, 0));
    }
}
