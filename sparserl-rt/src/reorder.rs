//! Locality renumbering of square matrices: which order a matrix is stored
//! in on the device.
//!
//! A symmetric permutation `B = P A Pᵀ` (`B[i][j] = A[perm[i]][perm[j]]`)
//! keeps the matrix's meaning but changes which entries of `x` neighbouring
//! rows read. A mesh read in a random order gathers `x` from all over memory;
//! after reverse Cuthill-McKee the same gathers hit a narrow band of cached
//! lines. A power-law graph gathers most often from its hubs; sorted by
//! degree, the hubs share a few lines that stay in cache.
//!
//! Orders are computed on the host, in `O(nnz log nnz)`; the upload that asks
//! for one ([`Layouts::reorder`](crate::Layouts)) reports what it cost
//! ([`DeviceCsr::reorder_cost`](crate::DeviceCsr::reorder_cost)).
//! Rectangular matrices keep their numbering: a row-only permutation would
//! not change where `x` is read, and a column permutation without the
//! matching row permutation would not keep vectors in one space.
//!
//! ```
//! use sparserl_rt::{Csr, reorder::Reorder};
//! // A path 0-2-1 numbered badly: RCM makes it tridiagonal.
//! let a = Csr::from_triplets(3, 3, &[(0, 0, 2.0), (0, 2, 1.0), (2, 0, 1.0),
//!     (2, 2, 2.0), (2, 1, 1.0), (1, 2, 1.0), (1, 1, 2.0)]).unwrap();
//! let p = Reorder::Rcm.permutation(&a).unwrap();
//! let b = p.apply(&a).unwrap();
//! assert!(b.indptr().windows(2).enumerate().all(|(r, w)| {
//!     b.indices()[w[0] as usize..w[1] as usize].iter().all(|&c| (c as i64 - r as i64).abs() <= 1)
//! }));
//! ```

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::csr::Csr;

/// Which renumbering an upload applies (a knob of [`crate::Variant`]: the
/// search measures renumbered variants with the permutation's cost inside
/// the timing).
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Reorder {
    /// The given numbering.
    #[default]
    None,
    /// Reverse Cuthill-McKee on the pattern of `A + Aᵀ`: breadth-first from a
    /// pseudo-peripheral vertex of each connected component, neighbours by
    /// increasing degree, the whole order reversed. Narrows the band of
    /// meshes and other graphs with a geometry.
    Rcm,
    /// Vertices sorted by decreasing degree in `A + Aᵀ` (ties keep their
    /// order): hubs first, so the most read entries of `x` share cache
    /// lines. For power-law graphs.
    Degree,
}

impl Reorder {
    /// Every renumbering, `None` first.
    pub const ALL: [Reorder; 3] = [Reorder::None, Reorder::Rcm, Reorder::Degree];

    /// Whether this is the given numbering.
    pub const fn is_none(&self) -> bool {
        matches!(self, Reorder::None)
    }

    /// Short stable name (also the suffix of a renumbered variant's id).
    pub const fn as_str(self) -> &'static str {
        match self {
            Reorder::None => "none",
            Reorder::Rcm => "rcm",
            Reorder::Degree => "degree",
        }
    }

    /// The permutation of `a` (`None` for [`Reorder::None`] and for
    /// rectangular matrices, which keep their numbering).
    pub fn permutation(self, a: &Csr) -> Option<Permutation> {
        if a.rows() != a.cols() {
            return None;
        }
        let order = match self {
            Reorder::None => return None,
            Reorder::Rcm => SymPattern::of(a).rcm(),
            Reorder::Degree => by_degree(a),
        };
        Some(Permutation::from_order(order))
    }
}

impl fmt::Display for Reorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A permutation of `0..n`: `new_to_old[i]` is the original index of the
/// `i`-th vertex of the new order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permutation {
    new_to_old: Vec<u32>,
    old_to_new: Vec<u32>,
}

impl Permutation {
    /// From an order (`order[i]` = the original index placed at `i`); must
    /// be a permutation of `0..order.len()` (the orders above are).
    fn from_order(order: Vec<u32>) -> Permutation {
        let mut old_to_new = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            old_to_new[old as usize] = new as u32;
        }
        Permutation {
            new_to_old: order,
            old_to_new,
        }
    }

    /// Checks and wraps an order; `None` unless it is a permutation.
    pub fn try_from_order(order: Vec<u32>) -> Option<Permutation> {
        let mut seen = vec![false; order.len()];
        for &o in &order {
            let slot = seen.get_mut(o as usize)?;
            if std::mem::replace(slot, true) {
                return None;
            }
        }
        Some(Permutation::from_order(order))
    }

    /// Length.
    pub fn len(&self) -> usize {
        self.new_to_old.len()
    }

    /// Whether it permutes nothing.
    pub fn is_empty(&self) -> bool {
        self.new_to_old.is_empty()
    }

    /// `new_to_old[i]`: the original index of new index `i`.
    pub fn new_to_old(&self) -> &[u32] {
        &self.new_to_old
    }

    /// `old_to_new[j]`: the new index of original index `j`.
    pub fn old_to_new(&self) -> &[u32] {
        &self.old_to_new
    }

    /// `P A Pᵀ`: row `i` is row `new_to_old[i]` of `a`, columns renumbered
    /// and sorted; `None` unless `a` is square of this length. Rows of a
    /// large matrix are written in parallel (up to one thread per core and
    /// per million nonzeros, at most 16).
    pub fn apply(&self, a: &Csr) -> Option<Csr> {
        self.apply_split(a, 1 << 20)
    }

    /// [`Permutation::apply`] with one thread per `per_thread` nonzeros.
    fn apply_split(&self, a: &Csr, per_thread: usize) -> Option<Csr> {
        let n = self.len();
        if a.rows() != n || a.cols() != n {
            return None;
        }
        let mut indptr = Vec::with_capacity(n + 1);
        indptr.push(0u32);
        let mut at = 0u32;
        for &old in &self.new_to_old {
            // Below nnz <= i32::MAX: `a` is a valid matrix.
            at += a.indptr()[old as usize + 1] - a.indptr()[old as usize];
            indptr.push(at);
        }
        let mut indices = vec![0u32; a.nnz()];
        let mut values = vec![0f64; a.nnz()];
        // Threads only where they pay (a million nonzeros each in `apply`).
        let threads = std::thread::available_parallelism()
            .map_or(1, |t| t.get())
            .clamp(1, 16)
            .min(a.nnz() / per_thread.max(1) + 1);
        // Row ranges of about equal nonzeros, one per thread.
        let mut cuts = vec![0usize];
        for k in 1..threads {
            let target = (a.nnz() * k / threads) as u32;
            let r = indptr.partition_point(|&p| p < target).min(n);
            if r > *cuts.last().unwrap_or(&0) {
                cuts.push(r);
            }
        }
        cuts.push(n);
        std::thread::scope(|scope| {
            let (mut idx_rest, mut val_rest) = (&mut indices[..], &mut values[..]);
            for w in cuts.windows(2) {
                let (r0, r1) = (w[0], w[1]);
                let len = (indptr[r1] - indptr[r0]) as usize;
                let (idx, i_tail) = std::mem::take(&mut idx_rest).split_at_mut(len);
                let (val, v_tail) = std::mem::take(&mut val_rest).split_at_mut(len);
                idx_rest = i_tail;
                val_rest = v_tail;
                let indptr = &indptr;
                scope.spawn(move || self.fill_rows(a, r0..r1, indptr, idx, val));
            }
        });
        Csr::try_new(n, n, indptr, indices, values).ok()
    }

    /// Rows `rows` of `P A Pᵀ` into `idx` / `val` (which start at row
    /// `rows.start`'s first nonzero).
    fn fill_rows(
        &self,
        a: &Csr,
        rows: std::ops::Range<usize>,
        indptr: &[u32],
        idx: &mut [u32],
        val: &mut [f64],
    ) {
        let base = indptr[rows.start] as usize;
        let mut row: Vec<(u32, f64)> = Vec::new();
        for i in rows {
            let old = self.new_to_old[i] as usize;
            let (s, e) = (a.indptr()[old] as usize, a.indptr()[old + 1] as usize);
            row.clear();
            row.extend(
                a.indices()[s..e]
                    .iter()
                    .zip(&a.values()[s..e])
                    .map(|(&c, &v)| (self.old_to_new[c as usize], v)),
            );
            row.sort_unstable_by_key(|&(c, _)| c);
            let at = indptr[i] as usize - base;
            for (k, &(c, v)) in row.iter().enumerate() {
                idx[at + k] = c;
                val[at + k] = v;
            }
        }
    }

    /// `out[i] = v[new_to_old[i]]`: a vector in the new numbering.
    pub fn to_new<T: Copy>(&self, v: &[T]) -> Vec<T> {
        self.new_to_old.iter().map(|&o| v[o as usize]).collect()
    }

    /// `out[new_to_old[i]] = v[i]`: a vector back in the original numbering.
    pub fn to_old<T: Copy>(&self, v: &[T]) -> Vec<T> {
        self.old_to_new.iter().map(|&n| v[n as usize]).collect()
    }
}

/// Vertices by decreasing degree in `A + Aᵀ` (ties in index order), the
/// degree counted as off-diagonal entries of the row plus those of the
/// column (an entry present in both `A` and `Aᵀ` counts twice, which only
/// reinforces the order of symmetric hubs); `O(nnz + n log n)`.
fn by_degree(a: &Csr) -> Vec<u32> {
    let n = a.rows();
    let mut deg = vec![0u32; n];
    for r in 0..n {
        for &c in &a.indices()[a.indptr()[r] as usize..a.indptr()[r + 1] as usize] {
            if c as usize != r {
                deg[r] += 1;
                deg[c as usize] += 1;
            }
        }
    }
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.sort_by_key(|&v| std::cmp::Reverse(deg[v as usize]));
    order
}

/// The pattern of `A + Aᵀ` without the diagonal, as adjacency lists (an
/// entry of both `A` and `Aᵀ` listed twice).
struct SymPattern {
    ptr: Vec<usize>,
    adj: Vec<u32>,
}

impl SymPattern {
    fn of(a: &Csr) -> SymPattern {
        let n = a.rows();
        let mut deg = vec![0usize; n + 1];
        for r in 0..n {
            for &c in &a.indices()[a.indptr()[r] as usize..a.indptr()[r + 1] as usize] {
                if c as usize != r {
                    deg[r] += 1;
                    deg[c as usize] += 1;
                }
            }
        }
        let mut ptr = vec![0usize; n + 1];
        for r in 0..n {
            ptr[r + 1] = ptr[r] + deg[r];
        }
        let mut fill = ptr.clone();
        let mut adj = vec![0u32; ptr[n]];
        for r in 0..n {
            for &c in &a.indices()[a.indptr()[r] as usize..a.indptr()[r + 1] as usize] {
                if c as usize != r {
                    adj[fill[r]] = c;
                    fill[r] += 1;
                    adj[fill[c as usize]] = r as u32;
                    fill[c as usize] += 1;
                }
            }
        }
        // Not sorted or merged: an entry present in A and Aᵀ appears twice,
        // which breadth-first search ignores (visited marks) and which only
        // weighs on degree ties.
        SymPattern { ptr, adj }
    }

    fn n(&self) -> usize {
        self.ptr.len() - 1
    }

    fn degree(&self, v: usize) -> usize {
        self.ptr[v + 1] - self.ptr[v]
    }

    fn neighbours(&self, v: usize) -> &[u32] {
        &self.adj[self.ptr[v]..self.ptr[v + 1]]
    }

    /// Breadth-first search from `root` over the vertices not yet placed
    /// (`mark != u32::MAX`), stamping visited ones with `stamp`: the visit
    /// order goes to `order`; returns (start of the last level, depth).
    fn bfs(
        &self,
        root: usize,
        mark: &mut [u32],
        stamp: u32,
        order: &mut Vec<u32>,
    ) -> (usize, usize) {
        order.clear();
        order.push(root as u32);
        mark[root] = stamp;
        let (mut level_start, mut depth) = (0usize, 0usize);
        loop {
            let level_end = order.len();
            for i in level_start..level_end {
                let v = order[i] as usize;
                for &w in self.neighbours(v) {
                    let m = &mut mark[w as usize];
                    if *m != stamp && *m != u32::MAX {
                        *m = stamp;
                        order.push(w);
                    }
                }
            }
            if order.len() == level_end {
                return (level_start, depth);
            }
            level_start = level_end;
            depth += 1;
        }
    }

    /// Reverse Cuthill-McKee over every connected component.
    fn rcm(&self) -> Vec<u32> {
        let n = self.n();
        // mark: u32::MAX = placed in the final order; stamps for trial BFSs.
        let mut mark = vec![0u32; n];
        let mut stamp = 0u32;
        let mut result: Vec<u32> = Vec::with_capacity(n);
        let mut scratch = Vec::new();
        let mut by_degree: Vec<u32> = (0..n as u32).collect();
        by_degree.sort_by_key(|&v| self.degree(v as usize));
        let mut nbrs: Vec<u32> = Vec::new();
        for &seed in &by_degree {
            if mark[seed as usize] == u32::MAX {
                continue;
            }
            // Pseudo-peripheral root (George-Liu): jump to a least-degree
            // vertex of the last level while the eccentricity grows.
            let mut root = seed as usize;
            let mut depth = 0usize;
            // Two searches find a good root on meshes and graphs alike; each
            // more costs a full pass over the component for little gain.
            for _ in 0..2 {
                stamp += 1;
                let (last, levels) = self.bfs(root, &mut mark, stamp, &mut scratch);
                let cand = scratch[last..]
                    .iter()
                    .copied()
                    .min_by_key(|&v| self.degree(v as usize))
                    .map_or(root, |v| v as usize);
                if levels <= depth || cand == root {
                    break;
                }
                depth = levels;
                root = cand;
            }
            // Cuthill-McKee from the root; neighbours by increasing degree.
            let start = result.len();
            result.push(root as u32);
            mark[root] = u32::MAX;
            let mut head = start;
            while head < result.len() {
                let v = result[head] as usize;
                head += 1;
                nbrs.clear();
                nbrs.extend(
                    self.neighbours(v)
                        .iter()
                        .copied()
                        .filter(|&w| mark[w as usize] != u32::MAX),
                );
                nbrs.sort_by_key(|&w| (self.degree(w as usize), w));
                nbrs.dedup(); // an entry of both A and Aᵀ is listed twice
                for &w in &nbrs {
                    mark[w as usize] = u32::MAX;
                    result.push(w);
                }
            }
        }
        result.reverse();
        result
    }
}

#[cfg(test)]
mod tests;
