//! Renumbering at scale: a locality order of a square [`LargeCsr`] and the
//! symmetric permutation `B = P A Pᵀ` (`B[i][j] = A[old(i)][old(j)]`) into
//! new owned arrays, in parallel on scoped threads.
//!
//! - [`degree_order`]: vertices by decreasing degree in `A + Aᵀ` (row length
//!   plus column count, the diagonal left out, as [`crate::reorder`] counts
//!   it; column counts in private per-thread arrays), ties by id; a
//!   parallel counting sort over the degrees. Hubs first,
//!   so the most read entries of `x` share cache lines.
//! - [`rcm_order`]: reverse Cuthill-McKee over the row pattern of `A` (the
//!   pattern of `A + Aᵀ` when `A` is structurally symmetric, as meshes are;
//!   for other matrices a search over out-edges, every vertex still placed
//!   once): per connected component a pseudo-peripheral root (George-Liu, at
//!   most two extra searches), breadth-first levels with neighbours by
//!   increasing row length (ties by id), the whole order reversed. Each level
//!   is expanded in parallel and gives exactly the sequential order: a vertex
//!   goes to the first vertex of the level before it that reaches it (an
//!   atomic minimum over parent positions), children in parent order.
//! - [`permute`]: `P A Pᵀ` into [`OwnedLargeCsr`] (rows gathered, columns
//!   mapped, each row sorted), over tasks of about 2^22 nonzeros; the only
//!   full-size allocation is the output.
//!
//! Not [`crate::reorder`] (the 32-bit path's `Csr`, `u32` row pointers):
//! this one takes either row-pointer width and never builds `A + Aᵀ`.

use super::LargeCsrError;
use super::host::{LargeCsr, Offset};
use crate::device::Scalar;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use thiserror::Error;

/// Why an order or a permutation was refused.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum ReorderError {
    /// A symmetric renumbering needs as many rows as columns.
    #[error("matrix is {rows} x {cols}; a symmetric renumbering needs a square matrix")]
    NotSquare {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// The order and the matrix disagree on the number of vertices.
    #[error("the order has {found} entries, the matrix {expected} rows")]
    Length {
        /// Rows of the matrix.
        expected: usize,
        /// Entries of the order.
        found: usize,
    },
    /// An entry out of range or repeated (the lowest such position).
    #[error(
        "the order is not a permutation: entry {position} ({vertex}) is out of range or repeated"
    )]
    NotAPermutation {
        /// Position in the order.
        position: usize,
        /// The entry there.
        vertex: u32,
    },
    /// The permuted arrays failed their validation (not reachable from a
    /// valid matrix and a permutation).
    #[error(transparent)]
    Csr(#[from] LargeCsrError),
}

/// Threads the renumbering uses: every available core.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |t| t.get())
}

/// `f(task)` for every task in `0..tasks`, handed out in turn to up to
/// [`threads`] scoped threads.
fn for_tasks(tasks: usize, f: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let t = next.fetch_add(1, Ordering::Relaxed);
            if t >= tasks {
                break;
            }
            f(t);
        }
    };
    let n = threads().min(tasks);
    if n <= 1 {
        work();
        return;
    }
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(work);
        }
    });
}

fn square<O: Offset, T: Scalar>(a: &LargeCsr<'_, O, T>) -> Result<usize, ReorderError> {
    if a.rows() != a.cols() {
        return Err(ReorderError::NotSquare {
            rows: a.rows(),
            cols: a.cols(),
        });
    }
    Ok(a.rows())
}

fn atomics32(n: usize, v: u32) -> Vec<AtomicU32> {
    std::iter::repeat_with(|| AtomicU32::new(v))
        .take(n)
        .collect()
}

fn plain32(v: Vec<AtomicU32>) -> Vec<u32> {
    v.into_iter().map(AtomicU32::into_inner).collect()
}

/// A permutation of `0..n` with its inverse: `new_to_old[i]` is the
/// original id of the vertex placed at `i`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargePermutation {
    new_to_old: Vec<u32>,
    old_to_new: Vec<u32>,
}

impl LargePermutation {
    /// Checks `order` (`order[i]` = the original id placed at `i`) and
    /// builds the inverse in parallel: [`ReorderError::NotAPermutation`]
    /// names the lowest position out of range or repeated.
    pub fn try_from_order(order: Vec<u32>) -> Result<LargePermutation, ReorderError> {
        let n = order.len();
        let inv = atomics32(n, u32::MAX);
        let bad = AtomicUsize::new(usize::MAX);
        let chunk = 1 << 20;
        for_tasks(n.div_ceil(chunk), |t| {
            let lo = t * chunk;
            for (i, &v) in order[lo..(lo + chunk).min(n)].iter().enumerate() {
                let fresh = inv.get(v as usize).is_some_and(|slot| {
                    slot.compare_exchange(
                        u32::MAX,
                        (lo + i) as u32,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                });
                if !fresh {
                    bad.fetch_min(lo + i, Ordering::Relaxed);
                }
            }
        });
        if bad.into_inner() != usize::MAX {
            return Err(first_bad(&order));
        }
        Ok(LargePermutation {
            new_to_old: order,
            old_to_new: plain32(inv),
        })
    }

    /// Vertices.
    pub fn len(&self) -> usize {
        self.new_to_old.len()
    }
    /// Whether it has no vertex.
    pub fn is_empty(&self) -> bool {
        self.new_to_old.is_empty()
    }
    /// `new_to_old[i]`: the original id of new id `i`.
    pub fn new_to_old(&self) -> &[u32] {
        &self.new_to_old
    }
    /// `old_to_new[j]`: the new id of original id `j`.
    pub fn old_to_new(&self) -> &[u32] {
        &self.old_to_new
    }
    /// `out[i] = v[new_to_old[i]]`: a vector in the new numbering.
    /// [`ReorderError::Length`] unless `v` has [`Self::len`] entries.
    pub fn to_new<T: Copy>(&self, v: &[T]) -> Result<Vec<T>, ReorderError> {
        if v.len() != self.len() {
            return Err(ReorderError::Length {
                expected: self.len(),
                found: v.len(),
            });
        }
        Ok(self.new_to_old.iter().map(|&o| v[o as usize]).collect())
    }
}

/// The lowest position of `order` that is out of range or repeats an
/// earlier entry (sequential: only on the error path).
fn first_bad(order: &[u32]) -> ReorderError {
    let mut seen = vec![false; order.len()];
    for (position, &vertex) in order.iter().enumerate() {
        match seen.get_mut(vertex as usize) {
            Some(s) if !*s => *s = true,
            _ => return ReorderError::NotAPermutation { position, vertex },
        }
    }
    // Unreachable for an order the parallel check refused; report its end.
    ReorderError::Length {
        expected: order.len(),
        found: order.len(),
    }
}

/// Vertex ids `0..n` sorted by `key` (decreasing when `descending`), ties
/// by id: a counting sort over contiguous id chunks, one histogram per
/// chunk; a comparison sort when the keys span too many bins.
fn counting_order(n: usize, key: &(impl Fn(usize) -> u64 + Sync), descending: bool) -> Vec<u32> {
    let chunks = threads().clamp(1, n.max(1));
    let per = n.div_ceil(chunks).max(1);
    let range = |c: usize| (c * per).min(n)..((c + 1) * per).min(n);
    let max = super::parallel_chunks(n, |lo, hi| (lo..hi).map(key).max().unwrap_or(0))
        .into_iter()
        .max()
        .unwrap_or(0);
    let bins = max as usize + 1;
    let slot = |k: u64| {
        if descending {
            (max - k) as usize
        } else {
            k as usize
        }
    };
    if bins.saturating_mul(chunks) > 1 << 27 {
        let mut ids: Vec<u32> = (0..n as u32).collect();
        ids.sort_by_key(|&v| slot(key(v as usize)));
        return ids;
    }
    let mut hist: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..chunks)
            .map(|c| {
                s.spawn(move || {
                    let mut h = vec![0u64; bins];
                    range(c).for_each(|v| h[slot(key(v))] += 1);
                    h
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut at = 0u64;
    for b in 0..bins {
        for h in hist.iter_mut() {
            let count = h[b];
            h[b] = at;
            at += count;
        }
    }
    let out = atomics32(n, 0);
    std::thread::scope(|s| {
        for (c, mut offsets) in hist.into_iter().enumerate() {
            let out = &out;
            s.spawn(move || {
                for v in range(c) {
                    let b = slot(key(v));
                    out[offsets[b] as usize].store(v as u32, Ordering::Relaxed);
                    offsets[b] += 1;
                }
            });
        }
    });
    plain32(out)
}

/// Rows per counting task.
const ROW_TASK: usize = 1 << 16;

/// Host memory the private column counts of [`degrees`] may take.
const COUNT_BUDGET: usize = 16 << 30;

/// Degrees in `A + Aᵀ` without the diagonal: off-diagonal entries of the
/// row plus those of the column. Column counts go to one private `u32`
/// array per counting thread (plain increments, no atomics; as many
/// threads as [`COUNT_BUDGET`] allows, at least one), summed per vertex
/// in parallel with the row lengths.
pub fn degrees<O: Offset, T: Scalar>(a: &LargeCsr<'_, O, T>) -> Vec<u64> {
    let n = a.rows();
    let tasks = n.div_ceil(ROW_TASK);
    let k = threads()
        .min(COUNT_BUDGET / (4 * a.cols().max(1)))
        .clamp(1, tasks.max(1));
    let next = AtomicUsize::new(0);
    let counts: Vec<Vec<u32>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..k)
            .map(|_| {
                s.spawn(|| {
                    // At most one count per row of this thread: fits u32.
                    let mut cnt = vec![0u32; a.cols()];
                    loop {
                        let t = next.fetch_add(1, Ordering::Relaxed);
                        if t >= tasks {
                            break cnt;
                        }
                        for r in t * ROW_TASK..((t + 1) * ROW_TASK).min(n) {
                            for &c in &a.indices()[a.row_range(r).unwrap_or(0..0)] {
                                cnt[c as usize] += (c as usize != r) as u32;
                            }
                        }
                    }
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    super::parallel_chunks(n, |lo, hi| {
        (lo..hi)
            .map(|v| {
                let row = &a.indices()[a.row_range(v).unwrap_or(0..0)];
                let diag = row.binary_search(&(v as u32)).is_ok() as u64;
                let cols: u64 = counts.iter().map(|c| c[v] as u64).sum();
                row.len() as u64 - diag + cols
            })
            .collect::<Vec<u64>>()
    })
    .concat()
}

/// Vertices by decreasing degree in `A + Aᵀ` ([`degrees`]), ties by id.
pub fn degree_order<O: Offset, T: Scalar>(
    a: &LargeCsr<'_, O, T>,
) -> Result<LargePermutation, ReorderError> {
    square(a)?;
    let deg = degrees(a);
    let order = counting_order(a.rows(), &|v| deg[v], true);
    LargePermutation::try_from_order(order)
}

/// Frontiers below this many vertices are expanded on the calling thread.
const PARALLEL_FRONTIER: usize = 1 << 14;

/// Breadth-first Cuthill-McKee state of [`rcm_order`]: `parent[v]` is
/// `u32::MAX` for an unplaced vertex, else the position of the vertex
/// that placed it (a root: its own position).
struct Search<'s, 'a, O: Offset, T: Scalar> {
    a: &'s LargeCsr<'a, O, T>,
    parent: Vec<AtomicU32>,
    /// Frontiers from this many vertices on are expanded in parallel.
    parallel_from: usize,
}

impl<O: Offset, T: Scalar> Search<'_, '_, O, T> {
    fn len(&self, v: u32) -> u64 {
        self.a.row_range(v as usize).map_or(0, |r| r.len() as u64)
    }

    fn neighbours(&self, v: u32) -> &[u32] {
        &self.a.indices()[self.a.row_range(v as usize).unwrap_or(0..0)]
    }

    fn unplaced(&self, v: u32) -> bool {
        self.parent[v as usize].load(Ordering::Relaxed) == u32::MAX
    }

    /// Cuthill-McKee from `root` into `out` (cleared; `out[i]` sits at
    /// position `base + i`): returns (levels - 1, start of the last level).
    fn cm(&self, root: u32, base: usize, out: &mut Vec<u32>) -> (usize, usize) {
        out.clear();
        out.push(root);
        self.parent[root as usize].store(base as u32, Ordering::Relaxed);
        let (mut lo, mut depth) = (0usize, 0usize);
        loop {
            let hi = out.len();
            let next = self.level(&out[lo..hi], (base + lo) as u32);
            if next.is_empty() {
                return (depth, lo);
            }
            out.extend(next);
            lo = hi;
            depth += 1;
        }
    }

    /// The next level of `frontier` (whose first vertex sits at `f0`).
    fn level(&self, frontier: &[u32], f0: u32) -> Vec<u32> {
        let chunk = if frontier.len() < self.parallel_from {
            frontier.len().max(1)
        } else {
            frontier.len().div_ceil(threads() * 4)
        };
        let tasks = frontier.len().div_ceil(chunk);
        let pieces = |t: usize| {
            (
                t * chunk,
                &frontier[t * chunk..((t + 1) * chunk).min(frontier.len())],
            )
        };
        let claim = |t: usize| {
            let (at, part) = pieces(t);
            for (j, &v) in part.iter().enumerate() {
                let pos = f0 + (at + j) as u32;
                for &w in self.neighbours(v) {
                    let p = &self.parent[w as usize];
                    if w != v && p.load(Ordering::Relaxed) >= f0 {
                        p.fetch_min(pos, Ordering::Relaxed);
                    }
                }
            }
        };
        let collect =
            |t: usize| {
                let (at, part) = pieces(t);
                let mut kids = Vec::new();
                for (j, &v) in part.iter().enumerate() {
                    let pos = f0 + (at + j) as u32;
                    let start = kids.len();
                    kids.extend(self.neighbours(v).iter().copied().filter(|&w| {
                        w != v && self.parent[w as usize].load(Ordering::Relaxed) == pos
                    }));
                    kids[start..].sort_unstable_by_key(|&w| (self.len(w), w));
                }
                kids
            };
        if tasks <= 1 {
            (0..tasks).for_each(claim);
            return (0..tasks).flat_map(collect).collect();
        }
        for_tasks(tasks, claim);
        let parts = Mutex::new(vec![Vec::new(); tasks]);
        for_tasks(tasks, |t| {
            let kids = collect(t);
            parts.lock().unwrap_or_else(|p| p.into_inner())[t] = kids;
        });
        parts
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .concat()
    }

    /// Marks the vertices of `placed` unplaced again (after a trial search).
    fn reset(&self, placed: &[u32]) {
        let chunk = 1 << 20;
        for_tasks(placed.len().div_ceil(chunk), |t| {
            for &v in &placed[t * chunk..((t + 1) * chunk).min(placed.len())] {
                self.parent[v as usize].store(u32::MAX, Ordering::Relaxed);
            }
        });
    }

    /// The least (row length, id) vertex of `vs`.
    fn least(&self, vs: &[u32]) -> u32 {
        vs.iter()
            .copied()
            .min_by_key(|&v| (self.len(v), v))
            .unwrap_or(0)
    }

    /// One component from `seed`: the pseudo-peripheral root search, then
    /// its Cuthill-McKee order into `scratch` at position `base`.
    /// Without `find_root`, the order from `seed` itself.
    fn component(&self, seed: u32, find_root: bool, base: usize, scratch: &mut Vec<u32>) {
        let mut root = seed;
        let (mut depth, mut last) = self.cm(root, base, scratch);
        for _ in 0..2 * find_root as usize {
            let cand = self.least(&scratch[last..]);
            if cand == root {
                return;
            }
            self.reset(scratch);
            let (d, l) = self.cm(cand, base, scratch);
            if d > depth {
                (root, depth, last) = (cand, d, l);
                continue;
            }
            if d < depth {
                // Shallower (a pattern that is not symmetric): back to root.
                self.reset(scratch);
                self.cm(root, base, scratch);
            }
            return;
        }
    }
}

/// Reverse Cuthill-McKee of a square matrix over its row pattern (see the
/// module docs): components seeded in increasing (row length, id) order.
pub fn rcm_order<O: Offset, T: Scalar>(
    a: &LargeCsr<'_, O, T>,
) -> Result<LargePermutation, ReorderError> {
    rcm_split(a, PARALLEL_FRONTIER)
}

/// [`rcm_order`] expanding frontiers of `parallel_from` vertices or more in
/// parallel.
fn rcm_split<O: Offset, T: Scalar>(
    a: &LargeCsr<'_, O, T>,
    parallel_from: usize,
) -> Result<LargePermutation, ReorderError> {
    let n = square(a)?;
    let search = Search {
        a,
        parent: atomics32(n, u32::MAX),
        parallel_from: parallel_from.max(1),
    };
    let seeds = counting_order(n, &|v| search.len(v as u32), false);
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let mut scratch = Vec::new();
    for &seed in &seeds {
        // A root found from the seed may not reach it back when the pattern
        // is not symmetric: the seed then starts a component of its own.
        for find_root in [true, false] {
            if search.unplaced(seed) {
                search.component(seed, find_root, order.len(), &mut scratch);
                order.extend_from_slice(&scratch);
            }
        }
    }
    drop(seeds);
    order.reverse();
    LargePermutation::try_from_order(order)
}

/// A CSR matrix in owned arrays (`u64` row pointers): what [`permute`]
/// returns.
#[derive(Debug, Clone, PartialEq)]
pub struct OwnedLargeCsr<T: Scalar> {
    rows: usize,
    cols: usize,
    indptr: Vec<u64>,
    indices: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> OwnedLargeCsr<T> {
    /// The arrays as a checked [`LargeCsr`] (validated in parallel, as
    /// every matrix that is uploaded).
    pub fn csr(&self) -> Result<LargeCsr<'_, u64, T>, LargeCsrError> {
        LargeCsr::try_from_parts(
            self.rows,
            self.cols,
            &self.indptr,
            &self.indices,
            &self.values,
        )
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Nonzeros.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
    /// Row pointers, column indices and values.
    pub fn into_parts(self) -> (Vec<u64>, Vec<u32>, Vec<T>) {
        (self.indptr, self.indices, self.values)
    }
}

/// Nonzeros per permutation task.
const NNZ_TASK: u64 = 1 << 22;

/// `P A Pᵀ` with `p` ([`LargePermutation::new_to_old`] gives each new
/// row's original): row `i` is row `old(i)` of `a`, columns mapped through
/// `old_to_new` and sorted. Parallel over tasks of about 2^22 nonzeros;
/// allocates the output arrays and a row of scratch per thread.
pub fn permute<O: Offset, T: Scalar>(
    a: &LargeCsr<'_, O, T>,
    p: &LargePermutation,
) -> Result<OwnedLargeCsr<T>, ReorderError> {
    permute_split(a, p, NNZ_TASK)
}

/// [`permute`] over tasks of about `task_nnz` nonzeros.
fn permute_split<O: Offset, T: Scalar>(
    a: &LargeCsr<'_, O, T>,
    p: &LargePermutation,
    task_nnz: u64,
) -> Result<OwnedLargeCsr<T>, ReorderError> {
    let n = square(a)?;
    if p.len() != n {
        return Err(ReorderError::Length {
            expected: n,
            found: p.len(),
        });
    }
    let indptr = permuted_indptr(a, p);
    let nnz = a.nnz();
    let mut indices = vec![0u32; nnz];
    let mut values = vec![T::default(); nnz];
    let jobs = Mutex::new(split_jobs(&indptr, task_nnz, &mut indices, &mut values));
    for_tasks(threads(), |_| {
        let mut row: Vec<(u32, T)> = Vec::new();
        loop {
            let job = jobs.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let Some((rows, idx, val)) = job else { break };
            let base = indptr[rows.start] as usize;
            for i in rows {
                let old = a.row_range(p.new_to_old[i] as usize).unwrap_or(0..0);
                row.clear();
                row.extend(
                    a.indices()[old.clone()]
                        .iter()
                        .zip(&a.values()[old])
                        .map(|(&c, &v)| (p.old_to_new[c as usize], v)),
                );
                row.sort_unstable_by_key(|e| e.0);
                let at = indptr[i] as usize - base;
                for (k, &(c, v)) in row.iter().enumerate() {
                    idx[at + k] = c;
                    val[at + k] = v;
                }
            }
        }
    });
    Ok(OwnedLargeCsr {
        rows: n,
        cols: n,
        indptr,
        indices,
        values,
    })
}

/// The row pointers of `P A Pᵀ`: new row lengths, then a prefix sum over
/// chunks (chunk totals first, then each chunk from its offset).
fn permuted_indptr<O: Offset, T: Scalar>(a: &LargeCsr<'_, O, T>, p: &LargePermutation) -> Vec<u64> {
    let n = a.rows();
    let len = |i: usize| {
        a.row_range(p.new_to_old[i] as usize)
            .map_or(0, |r| r.len() as u64)
    };
    let totals = super::parallel_chunks(n, |lo, hi| (lo..hi).map(len).sum::<u64>());
    let per = n.div_ceil(totals.len().max(1)).max(1);
    let mut indptr = vec![0u64; n + 1];
    std::thread::scope(|s| {
        let mut at = 0u64;
        for (c, (part, total)) in indptr[1..].chunks_mut(per).zip(&totals).enumerate() {
            let start = at;
            at += total;
            s.spawn(move || {
                let mut acc = start;
                for (k, slot) in part.iter_mut().enumerate() {
                    acc += len(c * per + k);
                    *slot = acc;
                }
            });
        }
    });
    indptr
}

/// A task of [`permute`]: its rows and their slices of the output.
type Job<'o, T> = (std::ops::Range<usize>, &'o mut [u32], &'o mut [T]);

/// The output cut at row boundaries into tasks of about `task_nnz`
/// nonzeros (a longer row is one task), in reverse order (popped first to
/// last).
fn split_jobs<'o, T>(
    indptr: &[u64],
    task_nnz: u64,
    mut idx: &'o mut [u32],
    mut val: &'o mut [T],
) -> Vec<Job<'o, T>> {
    let n = indptr.len() - 1;
    let mut jobs = Vec::new();
    let mut r0 = 0usize;
    while r0 < n {
        let target = indptr[r0] + task_nnz.max(1);
        // The last row boundary at or below the target, at least one row on.
        let r1 = (indptr.partition_point(|&q| q <= target) - 1).clamp(r0 + 1, n);
        let len = (indptr[r1] - indptr[r0]) as usize;
        let (i, it) = std::mem::take(&mut idx).split_at_mut(len);
        let (v, vt) = std::mem::take(&mut val).split_at_mut(len);
        (idx, val) = (it, vt);
        jobs.push((r0..r1, i, v));
        r0 = r1;
    }
    jobs.reverse();
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `n`-vertex matrix from undirected edges (both directions, plus
    /// the diagonal), values `1 + row + col / 1000`.
    fn symmetric(n: usize, edges: &[(u32, u32)]) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
        let mut rows: Vec<Vec<u32>> = (0..n as u32).map(|v| vec![v]).collect();
        for &(a, b) in edges {
            rows[a as usize].push(b);
            rows[b as usize].push(a);
        }
        let (mut ip, mut ix, mut vs) = (vec![0u64], Vec::new(), Vec::new());
        for (r, row) in rows.iter_mut().enumerate() {
            row.sort_unstable();
            row.dedup();
            for &c in row.iter() {
                ix.push(c);
                vs.push(1.0 + r as f32 + c as f32 / 1000.0);
            }
            ip.push(ix.len() as u64);
        }
        (ip, ix, vs)
    }

    /// A `side x side` grid numbered by a fixed scramble.
    fn scrambled_grid(side: u32) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
        let n = side * side;
        let id = |i: u32, j: u32| ((i * side + j) as u64 * 7919 % n as u64) as u32;
        let mut e = Vec::new();
        for i in 0..side {
            for j in 0..side {
                if i + 1 < side {
                    e.push((id(i, j), id(i + 1, j)));
                }
                if j + 1 < side {
                    e.push((id(i, j), id(i, j + 1)));
                }
            }
        }
        symmetric(n as usize, &e)
    }

    /// A pseudo-random symmetric graph of `n` vertices and `n * k` edges:
    /// breadth-first levels grow fast, past the parallel threshold.
    fn random_graph(n: u32, k: u32, seed: u64) -> (Vec<u64>, Vec<u32>, Vec<f32>) {
        let mut s = seed;
        let mut next = || {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) as u32 % n
        };
        let e: Vec<(u32, u32)> = (0..n * k).map(|_| (next(), next())).collect();
        symmetric(n as usize, &e)
    }

    fn bandwidth(m: &OwnedLargeCsr<f32>) -> u64 {
        let a = m.csr().unwrap();
        (0..a.rows())
            .flat_map(|r| {
                a.indices()[a.row_range(r).unwrap()]
                    .iter()
                    .map(move |&c| (c as i64 - r as i64).unsigned_abs())
            })
            .max()
            .unwrap_or(0)
    }

    /// Sequential Cuthill-McKee from `root` over unplaced vertices (the
    /// textbook queue), for comparison with the level-parallel search.
    fn sequential_cm(a: &LargeCsr<'_, u64, f32>, root: u32, placed: &mut [bool]) -> Vec<u32> {
        let len = |v: u32| a.row_range(v as usize).unwrap().len() as u64;
        let mut out = vec![root];
        placed[root as usize] = true;
        let mut head = 0;
        while head < out.len() {
            let v = out[head];
            head += 1;
            let mut kids: Vec<u32> = a.indices()[a.row_range(v as usize).unwrap()]
                .iter()
                .copied()
                .filter(|&w| !placed[w as usize])
                .collect();
            kids.sort_unstable_by_key(|&w| (len(w), w));
            for w in kids {
                placed[w as usize] = true;
                out.push(w);
            }
        }
        out
    }

    #[test]
    fn degree_order_puts_hubs_first_ties_by_id() {
        // Star around 3 plus an edge 0-1; vertex 5 isolated.
        let (ip, ix, vs) = symmetric(6, &[(3, 0), (3, 1), (3, 2), (3, 4), (0, 1)]);
        let a = LargeCsr::try_from_parts(6, 6, &ip, &ix, &vs).unwrap();
        assert_eq!(degrees(&a), vec![4, 4, 2, 8, 2, 0]);
        let p = degree_order(&a).unwrap();
        assert_eq!(p.new_to_old(), &[3, 0, 1, 2, 4, 5]);
        assert_eq!(p.old_to_new()[3], 0);
        // A directed hub column counts too: column 2 of every row.
        let (ip, ix, vs) = (vec![0u32, 1, 2, 3, 4], vec![2u32, 2, 3, 2], vec![1.0f32; 4]);
        let a = LargeCsr::try_from_parts(4, 4, &ip, &ix, &vs).unwrap();
        assert_eq!(degree_order(&a).unwrap().new_to_old()[0], 2);
    }

    #[test]
    fn rcm_narrows_a_scrambled_grid_and_covers_components() {
        let (ip, ix, vs) = scrambled_grid(30);
        let a = LargeCsr::try_from_parts(900, 900, &ip, &ix, &vs).unwrap();
        let given = OwnedLargeCsr {
            rows: 900,
            cols: 900,
            indptr: ip.clone(),
            indices: ix.clone(),
            values: vs.clone(),
        };
        let b = permute(&a, &rcm_order(&a).unwrap()).unwrap();
        assert!(bandwidth(&given) > 400, "scrambled: {}", bandwidth(&given));
        assert!(bandwidth(&b) <= 40, "rcm band {}", bandwidth(&b));
        // Two grids and isolated vertices: every vertex placed once.
        let (ip, ix, vs) = symmetric(10, &[(0, 5), (5, 9), (2, 3)]);
        let a = LargeCsr::try_from_parts(10, 10, &ip, &ix, &vs).unwrap();
        let p = rcm_order(&a).unwrap();
        let mut seen = p.new_to_old().to_vec();
        seen.sort_unstable();
        assert_eq!(seen, (0..10).collect::<Vec<u32>>());
    }

    #[test]
    fn parallel_levels_give_the_sequential_order() {
        let (ip, ix, vs) = random_graph(40_000, 3, 11);
        let a = LargeCsr::try_from_parts(40_000, 40_000, &ip, &ix, &vs).unwrap();
        let search = Search {
            a: &a,
            parent: atomics32(40_000, u32::MAX),
            parallel_from: 64,
        };
        let mut got = Vec::new();
        search.cm(17, 0, &mut got);
        let mut placed = vec![false; 40_000];
        assert_eq!(got, sequential_cm(&a, 17, &mut placed));
        assert!(got.len() > 30_000, "one big component");
        // The whole order with parallel frontiers equals the sequential one.
        assert_eq!(
            rcm_split(&a, 64).unwrap(),
            rcm_split(&a, usize::MAX).unwrap()
        );
    }

    #[test]
    fn permuted_spmv_equals_the_permuted_reference() {
        let (ip, ix, vs) = random_graph(3000, 4, 5);
        let n = 3000;
        let a = LargeCsr::try_from_parts(n, n, &ip, &ix, &vs).unwrap();
        let x: Vec<f32> = (0..n)
            .map(|i| ((i * 37) % 101) as f32 / 50.0 - 1.0)
            .collect();
        for p in [degree_order(&a).unwrap(), rcm_order(&a).unwrap()] {
            // Many small tasks: the output slices are cut at row boundaries.
            let b = permute_split(&a, &p, 100).unwrap();
            let bc = b.csr().expect("rows sorted, pointers monotone");
            assert_eq!(bc.nnz(), a.nnz());
            let xp = p.to_new(&x).unwrap();
            for i in 0..n {
                let want = a.row_dot_f64(p.new_to_old()[i] as usize, &x).unwrap().0;
                let got = bc.row_dot_f64(i, &xp).unwrap().0;
                assert!((want - got).abs() <= 1e-9 * want.abs().max(1.0), "row {i}");
            }
        }
    }

    #[test]
    fn bad_orders_and_shapes_are_refused() {
        assert_eq!(
            LargePermutation::try_from_order(vec![0, 2, 2]).unwrap_err(),
            ReorderError::NotAPermutation {
                position: 2,
                vertex: 2
            }
        );
        assert_eq!(
            LargePermutation::try_from_order(vec![1, 3, 0]).unwrap_err(),
            ReorderError::NotAPermutation {
                position: 1,
                vertex: 3
            }
        );
        let p = LargePermutation::try_from_order(vec![2, 0, 1]).unwrap();
        assert_eq!(p.old_to_new(), &[1, 2, 0]);
        assert_eq!(p.to_new(&[10, 20, 30]).unwrap(), vec![30, 10, 20]);
        assert!(p.to_new(&[1]).is_err());
        let (ip, ix, vs) = (vec![0u64, 1, 2], vec![0u32, 2], vec![1.0f32; 2]);
        let rect = LargeCsr::try_from_parts(2, 3, &ip, &ix, &vs).unwrap();
        assert!(matches!(
            degree_order(&rect),
            Err(ReorderError::NotSquare { .. })
        ));
        assert!(matches!(
            rcm_order(&rect),
            Err(ReorderError::NotSquare { .. })
        ));
        let (ip, ix, vs) = symmetric(4, &[(0, 1)]);
        let sq = LargeCsr::try_from_parts(4, 4, &ip, &ix, &vs).unwrap();
        assert!(matches!(permute(&sq, &p), Err(ReorderError::Length { .. })));
    }
}
