//! The scale set's generators, row by row in parallel: no global sort, no
//! edge list. Each row's columns come from a generator seeded by the row
//! id alone (so threads agree whatever the split), are sorted and
//! deduplicated within the row, and land in the final arrays through one
//! copy per chunk of rows; values are a hash of the nonzero's position.
//!
//! - R-MAT (`a, b, c, d = 0.57, 0.19, 0.19, 0.05`, Graph500's): the row
//!   marginal is a product over the row's bits (`a + b` for a 0 bit, `c +
//!   d` for a 1 bit), so a row's degree is drawn as Poisson with mean
//!   `edges x product`, and each of its columns bit by bit given the row's
//!   bit (`a / (a + b)` or `c / (c + d)` for a 0 column bit). Duplicates
//!   merge. Vertices are then numbered by a random bijection (a Feistel
//!   network, as Graph500 scrambles): no locality in the given order.
//! - A 3-D 7-point mesh on an `s^3` grid, numbered by a random bijection.
//! - A power-law graph with hub columns: Pareto row lengths (exponent 2.5,
//!   mean 8) and columns `n u^3` (a few columns take a large share of the
//!   nonzeros), numbered by a random bijection.

use anyhow::{Result, ensure};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// SplitMix64: a small, fast, seedable generator (one per row).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// The generator of `row` under `seed`.
    pub fn for_row(seed: u64, row: u64) -> SplitMix {
        SplitMix(mix(seed ^ row.wrapping_mul(0x9e37_79b9_7f4a_7c15)))
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// The SplitMix64 finaliser.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A random bijection of `0..n`: a 4-round Feistel network over the
/// smallest even number of bits covering `n`, cycle-walking back into
/// range.
#[derive(Debug, Clone, Copy)]
pub struct Bijection {
    n: u64,
    half: u32,
    keys: [u64; 4],
}

impl Bijection {
    /// The bijection of `0..n` (`n >= 1`) under `seed`.
    pub fn new(n: u64, seed: u64) -> Bijection {
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        let half = bits.div_ceil(2).max(1);
        let mut g = SplitMix::for_row(seed, 0xb1_ec7);
        Bijection {
            n,
            half,
            keys: [g.next_u64(), g.next_u64(), g.next_u64(), g.next_u64()],
        }
    }
    fn round(&self, v: u64, k: usize) -> u64 {
        mix(v ^ self.keys[k]) & ((1u64 << self.half) - 1)
    }
    fn forward_once(&self, v: u64) -> u64 {
        let m = (1u64 << self.half) - 1;
        let (mut l, mut r) = (v >> self.half, v & m);
        for k in 0..4 {
            (l, r) = (r, l ^ self.round(r, k));
        }
        (l << self.half) | r
    }
    fn inverse_once(&self, v: u64) -> u64 {
        let m = (1u64 << self.half) - 1;
        let (mut l, mut r) = (v >> self.half, v & m);
        for k in (0..4).rev() {
            (l, r) = (r ^ self.round(l, k), l);
        }
        (l << self.half) | r
    }
    /// The image of `v < n`.
    pub fn apply(&self, v: u64) -> u64 {
        let mut w = self.forward_once(v);
        while w >= self.n {
            w = self.forward_once(w);
        }
        w
    }
    /// The preimage of `v < n`.
    pub fn invert(&self, v: u64) -> u64 {
        let mut w = self.inverse_once(v);
        while w >= self.n {
            w = self.inverse_once(w);
        }
        w
    }
}

/// A generated matrix (square), its arrays and how long they took.
pub struct Generated {
    /// Name in reports.
    pub name: String,
    /// Family (`rmat`, `mesh3d`, `powerlaw`).
    pub family: &'static str,
    /// Rows = columns.
    pub n: usize,
    /// Row pointers.
    pub indptr: Vec<u64>,
    /// Column indices.
    pub indices: Vec<u32>,
    /// Values, uniform in `[-1, 1)`.
    pub values: Vec<f32>,
    /// Seconds to generate.
    pub seconds: f64,
}

/// Rows per generation task.
const TASK_ROWS: usize = 1 << 15;

/// The rows of one generation task: the task's index, its columns (rows
/// in order) and its row lengths.
struct Task {
    index: usize,
    cols: Vec<u32>,
    lens: Vec<u32>,
}

/// Builds an `n x n` matrix row by row: `row(r, rng, out)` appends row
/// `r`'s columns (any order, repeats allowed) given its own generator; they
/// are sorted and deduplicated here. Parallel over tasks of rows on every
/// core; one copy of the columns from the tasks into the final array.
pub fn assemble(
    name: String,
    family: &'static str,
    n: usize,
    seed: u64,
    row: impl Fn(u64, &mut SplitMix, &mut Vec<u32>) + Sync,
) -> Result<Generated> {
    ensure!(
        n >= 1 && n as u64 <= u32::MAX as u64,
        "n = {n} out of range"
    );
    let t0 = Instant::now();
    let tasks = run_tasks(n, seed, &row);
    ensure!(
        tasks.len() == n.div_ceil(TASK_ROWS),
        "a generation thread failed"
    );
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0u64);
    for t in &tasks {
        for &l in &t.lens {
            indptr.push(indptr[indptr.len() - 1] + l as u64);
        }
    }
    let nnz = indptr[n] as usize;
    let indices = gather(tasks.into_iter().map(|t| t.cols).collect(), nnz);
    let values = hashed_values(seed, nnz);
    Ok(Generated {
        name,
        family,
        n,
        indptr,
        indices,
        values,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Every task of [`TASK_ROWS`] rows, taken by the threads in turn, sorted
/// back into row order (a thread that panicked leaves its tasks out).
fn run_tasks(
    n: usize,
    seed: u64,
    row: &(impl Fn(u64, &mut SplitMix, &mut Vec<u32>) + Sync),
) -> Vec<Task> {
    let count = n.div_ceil(TASK_ROWS);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let next = AtomicUsize::new(0);
    let one = |index: usize, scratch: &mut Vec<u32>| {
        let (lo, hi) = (index * TASK_ROWS, ((index + 1) * TASK_ROWS).min(n));
        let mut t = Task {
            index,
            cols: Vec::new(),
            lens: Vec::with_capacity(hi - lo),
        };
        for r in lo..hi {
            scratch.clear();
            let mut g = SplitMix::for_row(seed, r as u64);
            row(r as u64, &mut g, scratch);
            scratch.sort_unstable();
            scratch.dedup();
            t.lens.push(scratch.len() as u32);
            t.cols.extend_from_slice(scratch);
        }
        t
    };
    let mut tasks: Vec<Task> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let (mut mine, mut scratch) = (Vec::new(), Vec::new());
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count {
                            break mine;
                        }
                        mine.push(one(i, &mut scratch));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    tasks.sort_unstable_by_key(|t| t.index);
    tasks
}

/// The tasks' columns in order in one array of `nnz`, copied in parallel
/// (each chunk freed as soon as it is copied).
fn gather(chunks: Vec<Vec<u32>>, nnz: usize) -> Vec<u32> {
    let mut out = vec![0u32; nnz];
    let mut rest: &mut [u32] = &mut out;
    let mut jobs = Vec::with_capacity(chunks.len());
    for c in chunks {
        let (head, tail) = rest.split_at_mut(c.len());
        jobs.push((head, c));
        rest = tail;
    }
    let jobs = std::sync::Mutex::new(jobs);
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let job = jobs.lock().unwrap_or_else(|p| p.into_inner()).pop();
                    let Some((dst, src)) = job else { break };
                    dst.copy_from_slice(&src);
                }
            });
        }
    });
    out
}

/// `nnz` values uniform in `[-1, 1)`, value `k` a hash of `(seed, k)`.
pub fn hashed_values(seed: u64, nnz: usize) -> Vec<f32> {
    let mut v = vec![0f32; nnz];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per = nnz.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (i, chunk) in v.chunks_mut(per).enumerate() {
            s.spawn(move || {
                for (j, x) in chunk.iter_mut().enumerate() {
                    let h = mix(seed
                        ^ 0x5ca1e
                        ^ ((i * per + j) as u64).wrapping_mul(0xd6e8_feb8_6659_fd93));
                    *x = ((h >> 40) as f64 / (1u64 << 23) as f64 - 1.0) as f32;
                }
            });
        }
    });
    v
}

/// Graph500's R-MAT probabilities.
const RMAT: (f64, f64, f64, f64) = (0.57, 0.19, 0.19, 0.05);

/// A Poisson draw of mean `lambda` (Knuth's product for small means, the
/// rounded normal approximation from 64 on).
fn poisson(lambda: f64, g: &mut SplitMix) -> u64 {
    if lambda < 64.0 {
        let limit = (-lambda).exp();
        let (mut k, mut p) = (0u64, g.unit());
        while p > limit {
            k += 1;
            p *= g.unit();
        }
        return k;
    }
    // Box-Muller.
    let (u1, u2) = (1.0 - g.unit(), g.unit());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    (lambda + lambda.sqrt() * z).round().max(0.0) as u64
}

/// R-MAT of `2^scale` vertices and `edge_factor 2^scale` drawn edges.
pub fn rmat(scale: u32, edge_factor: u64, seed: u64) -> Result<Generated> {
    ensure!((1..=31).contains(&scale), "scale {scale} not in 1..=31");
    let n = 1u64 << scale;
    let perm = Bijection::new(n, seed ^ 0x7e_4a7);
    let (a, b, c, d) = RMAT;
    let edges = (edge_factor * n) as f64;
    // 16-bit thresholds of a 0 column bit given the row bit.
    let t0 = ((a / (a + b)) * 65536.0) as u64;
    let t1 = ((c / (c + d)) * 65536.0) as u64;
    assemble(
        format!("rmat-s{scale}"),
        "rmat",
        n as usize,
        seed,
        |r, g, out| {
            let old = perm.invert(r);
            let ones = old.count_ones() as i32;
            let lambda = edges * (a + b).powi(scale as i32 - ones) * (c + d).powi(ones);
            for _ in 0..poisson(lambda, g) {
                let mut col = 0u64;
                let mut bits = 0u64;
                for level in 0..scale {
                    if level % 4 == 0 {
                        bits = g.next_u64();
                    }
                    let row_bit = (old >> (scale - 1 - level)) & 1;
                    let t = if row_bit == 0 { t0 } else { t1 };
                    col = (col << 1) | ((bits & 0xffff) >= t) as u64;
                    bits >>= 16;
                }
                out.push(perm.apply(col) as u32);
            }
        },
    )
}

/// A `side^3` 7-point mesh, vertices numbered by a random bijection.
pub fn mesh3d(side: u64, seed: u64) -> Result<Generated> {
    ensure!(side >= 2, "side {side} below 2");
    let n = side * side * side;
    let perm = Bijection::new(n, seed ^ 0x3e5);
    assemble(
        format!("mesh3d-{side}"),
        "mesh3d",
        n as usize,
        seed,
        |r, _, out| {
            let v = perm.invert(r);
            let (i, j, k) = (v % side, (v / side) % side, v / (side * side));
            out.push(r as u32);
            let mut push = |di: i64, dj: i64, dk: i64| {
                let (a, b, c) = (i as i64 + di, j as i64 + dj, k as i64 + dk);
                let s = side as i64;
                if (0..s).contains(&a) && (0..s).contains(&b) && (0..s).contains(&c) {
                    out.push(perm.apply((a + s * (b + s * c)) as u64) as u32);
                }
            };
            push(-1, 0, 0);
            push(1, 0, 0);
            push(0, -1, 0);
            push(0, 1, 0);
            push(0, 0, -1);
            push(0, 0, 1);
        },
    )
}

/// A power-law graph of `n` vertices: Pareto row lengths of exponent 2.5
/// scaled to mean 8 (randomly rounded, at most 2^20), hub columns
/// `n u^3` (column ids then scrambled).
pub fn powerlaw(n: u64, seed: u64) -> Result<Generated> {
    let perm = Bijection::new(n, seed ^ 0x9a1);
    // Pareto(x_m = 1, alpha = 1.5 for the survival function): mean 3.
    let scale = 8.0 / 3.0;
    let cap = n.min(1 << 20) as f64;
    assemble(
        format!("powerlaw-{n}"),
        "powerlaw",
        n as usize,
        seed,
        |_, g, out| {
            let raw = (1.0 - g.unit()).powf(-1.0 / 1.5) * scale;
            let len = (raw.floor() + (g.unit() < raw.fract()) as u64 as f64).min(cap) as u64;
            for _ in 0..len {
                let u = g.unit();
                let c = ((n as f64 * u * u * u) as u64).min(n - 1);
                out.push(perm.apply(c) as u32);
            }
        },
    )
}
