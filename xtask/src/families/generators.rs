//! The generators of the families corpus: each builds a CSR matrix from its
//! parameters and a seed (deterministic), through triplets.

use anyhow::{Result, bail};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use sparserl_rt::Csr;

/// A generator and its parameters (serialised into each record's provenance).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "generator", rename_all = "kebab-case")]
pub enum Gen {
    /// k nearest neighbours of uniform points in the unit square or cube.
    Knn {
        points: usize,
        dim: usize,
        k: usize,
        shuffled: bool,
    },
    /// Stochastic block model: communities of Zipf-skewed sizes, log-normal
    /// row degrees, `mix` of each row's entries outside its community.
    Sbm {
        nodes: usize,
        communities: usize,
        degree: f64,
        degree_cv: f64,
        mix: f64,
        size_skew: f64,
        ordered: bool,
    },
    /// Arrowhead: a full band plus `border` dense rows and columns.
    Arrow {
        rows: usize,
        band: usize,
        border: usize,
    },
    /// Block diagonal with random-density blocks plus a sparse border.
    Bordered {
        blocks: usize,
        block: usize,
        density: f64,
        border: usize,
        border_density: f64,
    },
    /// Tall least-squares-like: `per_row` entries around a drifting column.
    LeastSquares {
        rows: usize,
        cols: usize,
        per_row: usize,
        spread: usize,
    },
    /// Wide LP-like: Zipf-skewed column popularity, a few dense rows.
    Lp {
        rows: usize,
        cols: usize,
        per_row: f64,
        col_skew: f64,
        dense_rows: usize,
    },
    /// Pixel-neighbourhood operator on an image with random holes.
    Conv {
        height: usize,
        width: usize,
        radius: usize,
        holes: f64,
    },
    /// Image data: samples x pixels, each sample a noisy blob.
    Pixels {
        samples: usize,
        height: usize,
        width: usize,
        fill: f64,
    },
    /// Count matrix (genomics-like): log-normal row lengths, Zipf columns.
    Counts {
        rows: usize,
        cols: usize,
        per_row: f64,
        row_cv: f64,
        col_skew: f64,
    },
    /// Band with random fill plus a share of entries anywhere.
    BandedFill {
        rows: usize,
        bandwidth: usize,
        fill: f64,
        off_band: f64,
    },
    /// Circuit-like: near-diagonal entries plus dense rail rows and columns.
    Rails {
        rows: usize,
        local: usize,
        rails: usize,
        rail_density: f64,
    },
    /// Small dense-row matrix (input-output tables, kernel and Gram blocks):
    /// row lengths log-normal around `density * cols`, columns uniform.
    DenseRows {
        rows: usize,
        cols: usize,
        density: f64,
        row_cv: f64,
    },
    /// R-MAT / Kronecker graph with quadrant probabilities a, b, c (d = rest).
    Rmat {
        scale: u32,
        edge_factor: usize,
        a: f64,
        b: f64,
        c: f64,
        shuffled: bool,
    },
}

type Trip = Vec<(u32, u32, f64)>;

fn val(rng: &mut ChaCha8Rng) -> f64 {
    rng.random::<f64>() * 2.0 - 1.0
}

fn lognormal(rng: &mut ChaCha8Rng, mean: f64, cv: f64) -> f64 {
    let s = (cv * cv).ln_1p().sqrt();
    let (u1, u2): (f64, f64) = (rng.random::<f64>().max(1e-300), rng.random());
    let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
    mean * (s * z - s * s / 2.0).exp()
}

/// A Zipf-like index in `0..n` with exponent `s` (inverse transform of a
/// continuous power law; `s` near 0 is nearly uniform).
fn zipf(rng: &mut ChaCha8Rng, n: usize, s: f64) -> usize {
    let u: f64 = rng.random();
    let x = if (s - 1.0).abs() < 1e-6 {
        (n as f64).powf(u)
    } else {
        let e = 1.0 - s;
        (1.0 + u * ((n as f64).powf(e) - 1.0)).powf(1.0 / e)
    };
    (x as usize).saturating_sub(1).min(n - 1)
}

fn perm(n: usize, rng: &mut ChaCha8Rng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    p.shuffle(rng);
    p
}

fn csr(rows: usize, cols: usize, t: &Trip) -> Result<Csr> {
    if rows == 0 || cols == 0 || t.is_empty() {
        bail!("empty matrix ({rows} x {cols}, {} entries)", t.len());
    }
    Ok(Csr::from_triplets(rows, cols, t)?)
}

impl Gen {
    /// The generator's name (the provenance's `generator`).
    pub fn name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v["generator"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// Builds the matrix.
    pub fn build(&self, seed: u64) -> Result<Csr> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let r = &mut rng;
        match *self {
            Gen::Knn {
                points,
                dim,
                k,
                shuffled,
            } => knn(points, dim, k, shuffled, r),
            Gen::Sbm { .. } => sbm(self, r),
            Gen::Arrow { rows, band, border } => arrow(rows, band, border, r),
            Gen::Bordered { .. } => bordered(self, r),
            Gen::LeastSquares {
                rows,
                cols,
                per_row,
                spread,
            } => least_squares(rows, cols, per_row, spread, r),
            Gen::Lp {
                rows,
                cols,
                per_row,
                col_skew,
                dense_rows,
            } => lp(rows, cols, per_row, col_skew, dense_rows, r),
            Gen::Conv {
                height,
                width,
                radius,
                holes,
            } => conv(height, width, radius, holes, r),
            Gen::Pixels {
                samples,
                height,
                width,
                fill,
            } => pixels(samples, height, width, fill, r),
            Gen::Counts {
                rows,
                cols,
                per_row,
                row_cv,
                col_skew,
            } => counts(rows, cols, per_row, row_cv, col_skew, r),
            Gen::BandedFill {
                rows,
                bandwidth,
                fill,
                off_band,
            } => banded_fill(rows, bandwidth, fill, off_band, r),
            Gen::Rails {
                rows,
                local,
                rails,
                rail_density,
            } => rails_matrix(rows, local, rails, rail_density, r),
            Gen::DenseRows {
                rows,
                cols,
                density,
                row_cv,
            } => dense_rows(rows, cols, density, row_cv, r),
            Gen::Rmat {
                scale,
                edge_factor,
                a,
                b,
                c,
                shuffled,
            } => rmat(scale, edge_factor, [a, b, c], shuffled, r),
        }
    }
}

fn knn(n: usize, dim: usize, k: usize, shuffled: bool, rng: &mut ChaCha8Rng) -> Result<Csr> {
    if !(2..=3).contains(&dim) || k == 0 || n <= k {
        bail!("knn: dim {dim}, k {k}, points {n}");
    }
    // Cells holding about k points each; points numbered cell by cell.
    let side = ((n as f64 / k as f64).powf(1.0 / dim as f64).floor() as usize).max(1);
    let cells = side.pow(dim as u32);
    let mut pts: Vec<(usize, [f64; 3])> = (0..n)
        .map(|_| {
            let p = [
                rng.random::<f64>(),
                rng.random::<f64>(),
                if dim == 3 { rng.random::<f64>() } else { 0.0 },
            ];
            let c = |x: f64| ((x * side as f64) as usize).min(side - 1);
            let cell = c(p[0]) + side * c(p[1]) + if dim == 3 { side * side * c(p[2]) } else { 0 };
            (cell, p)
        })
        .collect();
    pts.sort_by_key(|p| p.0);
    let mut start = vec![0usize; cells + 1];
    for p in &pts {
        start[p.0 + 1] += 1;
    }
    for i in 0..cells {
        start[i + 1] += start[i];
    }
    let ids = if shuffled {
        perm(n, rng)
    } else {
        (0..n as u32).collect()
    };
    let mut t = Vec::with_capacity(n * k);
    for (i, &(cell, p)) in pts.iter().enumerate() {
        let (cx, cy, cz) = (cell % side, (cell / side) % side, cell / (side * side));
        let mut cand: Vec<(f64, usize)> = Vec::new();
        let zr: Vec<usize> = if dim == 3 {
            (cz.saturating_sub(1)..=(cz + 1).min(side - 1)).collect()
        } else {
            vec![0]
        };
        for z in zr {
            for y in cy.saturating_sub(1)..=(cy + 1).min(side - 1) {
                for x in cx.saturating_sub(1)..=(cx + 1).min(side - 1) {
                    let c = x + side * y + side * side * z;
                    for (j, q) in pts.iter().enumerate().take(start[c + 1]).skip(start[c]) {
                        if j != i {
                            let d: f64 = (0..3).map(|a| (p[a] - q.1[a]).powi(2)).sum();
                            cand.push((d, j));
                        }
                    }
                }
            }
        }
        cand.sort_by(|a, b| a.0.total_cmp(&b.0));
        for &(_, j) in cand.iter().take(k) {
            t.push((ids[i], ids[j], val(rng)));
        }
        t.push((ids[i], ids[i], k as f64 + 1.0));
    }
    csr(n, n, &t)
}

fn sbm(g: &Gen, rng: &mut ChaCha8Rng) -> Result<Csr> {
    let Gen::Sbm {
        nodes,
        communities,
        degree,
        degree_cv,
        mix,
        size_skew,
        ordered,
    } = *g
    else {
        unreachable!()
    };
    if communities == 0 || nodes < communities {
        bail!("sbm: {nodes} nodes, {communities} communities");
    }
    // Community of each node (Zipf sizes), then their contiguous ranges.
    let mut comm: Vec<usize> = (0..nodes)
        .map(|_| zipf(rng, communities, size_skew))
        .collect();
    comm.sort_unstable();
    let mut start = vec![0usize; communities + 1];
    for &c in &comm {
        start[c + 1] += 1;
    }
    for i in 0..communities {
        start[i + 1] += start[i];
    }
    let ids = if ordered {
        (0..nodes as u32).collect()
    } else {
        perm(nodes, rng)
    };
    let mut t = Vec::new();
    for (i, &c) in comm.iter().enumerate() {
        let d = lognormal(rng, degree, degree_cv).round().max(1.0) as usize;
        let (lo, hi) = (start[c], start[c + 1]);
        for _ in 0..d.min(nodes) {
            let j = if rng.random::<f64>() < mix || hi - lo < 2 {
                rng.random_range(0..nodes)
            } else {
                rng.random_range(lo..hi)
            };
            t.push((ids[i], ids[j], val(rng)));
        }
    }
    csr(nodes, nodes, &t)
}

fn arrow(rows: usize, band: usize, border: usize, rng: &mut ChaCha8Rng) -> Result<Csr> {
    let mut t = Vec::new();
    for r in 0..rows {
        for c in r.saturating_sub(band)..=(r + band).min(rows - 1) {
            t.push((r as u32, c as u32, val(rng)));
        }
        if r < border {
            t.extend((0..rows).map(|c| (r as u32, c as u32, val(rng))));
        } else {
            t.extend((0..border.min(rows)).map(|c| (r as u32, c as u32, val(rng))));
        }
    }
    csr(rows, rows, &t)
}

fn bordered(g: &Gen, rng: &mut ChaCha8Rng) -> Result<Csr> {
    let Gen::Bordered {
        blocks,
        block,
        density,
        border,
        border_density,
    } = *g
    else {
        unreachable!()
    };
    let n = blocks * block + border;
    let mut t = Vec::new();
    for b in 0..blocks {
        let d = density * (0.5 + rng.random::<f64>());
        for i in 0..block {
            let r = (b * block + i) as u32;
            t.push((r, r, block as f64));
            for j in 0..block {
                if rng.random::<f64>() < d {
                    t.push((r, (b * block + j) as u32, val(rng)));
                }
            }
            for k in 0..border {
                if rng.random::<f64>() < border_density {
                    let c = (blocks * block + k) as u32;
                    t.push((r, c, val(rng)));
                    t.push((c, r, val(rng)));
                }
            }
        }
    }
    for k in blocks * block..n {
        t.push((k as u32, k as u32, 1.0));
    }
    csr(n, n, &t)
}

fn least_squares(
    rows: usize,
    cols: usize,
    per_row: usize,
    spread: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Csr> {
    let mut t = Vec::with_capacity(rows * per_row);
    for r in 0..rows {
        let centre = r * cols / rows.max(1);
        for _ in 0..per_row {
            let off = rng.random_range(0..=2 * spread) as i64 - spread as i64;
            let c = (centre as i64 + off).clamp(0, cols as i64 - 1);
            t.push((r as u32, c as u32, val(rng)));
        }
    }
    csr(rows, cols, &t)
}

fn lp(
    rows: usize,
    cols: usize,
    per_row: f64,
    col_skew: f64,
    dense: usize,
    rng: &mut ChaCha8Rng,
) -> Result<Csr> {
    let colperm = perm(cols, rng);
    let mut t = Vec::new();
    for r in 0..rows {
        let d = if r < dense {
            cols / 2
        } else {
            lognormal(rng, per_row, 0.8).round().max(1.0) as usize
        };
        for _ in 0..d {
            t.push((r as u32, colperm[zipf(rng, cols, col_skew)], val(rng)));
        }
    }
    // Every column has an entry (an LP's variables all appear somewhere).
    for c in (0..cols).step_by(7) {
        t.push((rng.random_range(0..rows) as u32, c as u32, val(rng)));
    }
    csr(rows, cols, &t)
}

fn conv(h: usize, w: usize, radius: usize, holes: f64, rng: &mut ChaCha8Rng) -> Result<Csr> {
    let hole: Vec<bool> = (0..h * w).map(|_| rng.random::<f64>() < holes).collect();
    let ri = radius as i64;
    let mut t = Vec::new();
    for y in 0..h as i64 {
        for x in 0..w as i64 {
            let p = (y * w as i64 + x) as usize;
            if hole[p] {
                continue;
            }
            for dy in -ri..=ri {
                for dx in -ri..=ri {
                    let (yy, xx) = (y + dy, x + dx);
                    if yy >= 0 && xx >= 0 && yy < h as i64 && xx < w as i64 {
                        let q = (yy * w as i64 + xx) as usize;
                        if !hole[q] {
                            t.push((p as u32, q as u32, val(rng)));
                        }
                    }
                }
            }
        }
    }
    csr(h * w, h * w, &t)
}

fn pixels(samples: usize, h: usize, w: usize, fill: f64, rng: &mut ChaCha8Rng) -> Result<Csr> {
    let mut t = Vec::new();
    for s in 0..samples {
        let (cy, cx) = (
            h as f64 * (0.35 + 0.3 * rng.random::<f64>()),
            w as f64 * (0.35 + 0.3 * rng.random::<f64>()),
        );
        let rad = (h.min(w) as f64) * (0.15 + 0.25 * rng.random::<f64>());
        for y in 0..h {
            for x in 0..w {
                let d = ((y as f64 - cy).powi(2) + (x as f64 - cx).powi(2)).sqrt() / rad;
                if rng.random::<f64>() < fill * (-(d * d)).exp() * 2.0 {
                    t.push((s as u32, (y * w + x) as u32, rng.random::<f64>()));
                }
            }
        }
    }
    csr(samples, h * w, &t)
}

fn counts(
    rows: usize,
    cols: usize,
    per_row: f64,
    row_cv: f64,
    col_skew: f64,
    rng: &mut ChaCha8Rng,
) -> Result<Csr> {
    let colperm = perm(cols, rng);
    let mut t = Vec::new();
    for r in 0..rows {
        let d = lognormal(rng, per_row, row_cv)
            .round()
            .clamp(1.0, cols as f64) as usize;
        for _ in 0..d {
            let count = 1.0 + (-rng.random::<f64>().max(1e-12).ln() * 2.0).floor();
            t.push((r as u32, colperm[zipf(rng, cols, col_skew)], count));
        }
    }
    csr(rows, cols, &t)
}

fn banded_fill(
    rows: usize,
    bw: usize,
    fill: f64,
    off_band: f64,
    rng: &mut ChaCha8Rng,
) -> Result<Csr> {
    let mut t = Vec::new();
    for r in 0..rows {
        t.push((r as u32, r as u32, bw as f64));
        for c in r.saturating_sub(bw)..=(r + bw).min(rows - 1) {
            if c != r && rng.random::<f64>() < fill {
                t.push((r as u32, c as u32, val(rng)));
            }
        }
        let far = (off_band * bw as f64 * fill * 2.0) as usize
            + usize::from(rng.random::<f64>() < off_band);
        for _ in 0..far {
            t.push((r as u32, rng.random_range(0..rows) as u32, val(rng)));
        }
    }
    csr(rows, rows, &t)
}

fn rails_matrix(
    rows: usize,
    local: usize,
    rails: usize,
    density: f64,
    rng: &mut ChaCha8Rng,
) -> Result<Csr> {
    let rail: Vec<usize> = (0..rails).map(|_| rng.random_range(0..rows)).collect();
    let mut t = Vec::new();
    for r in 0..rows {
        t.push((r as u32, r as u32, 4.0));
        for _ in 0..rng.random_range(1..=local.max(1)) {
            let off = rng.random_range(1..=8.max(local * 4)) as i64
                * if rng.random::<bool>() { 1 } else { -1 };
            let c = (r as i64 + off).clamp(0, rows as i64 - 1) as u32;
            t.push((r as u32, c, val(rng)));
        }
        for &k in &rail {
            if rng.random::<f64>() < density {
                t.push((r as u32, k as u32, val(rng)));
                t.push((k as u32, r as u32, val(rng)));
            }
        }
    }
    csr(rows, rows, &t)
}

fn dense_rows(
    rows: usize,
    cols: usize,
    density: f64,
    row_cv: f64,
    rng: &mut ChaCha8Rng,
) -> Result<Csr> {
    if cols == 0 || !(density > 0.0 && density <= 1.0) {
        bail!("dense-rows: {cols} columns, density {density}");
    }
    let mut t = Vec::new();
    let mut pick: Vec<u32> = (0..cols as u32).collect();
    for r in 0..rows {
        let d = lognormal(rng, density * cols as f64, row_cv)
            .round()
            .clamp(1.0, cols as f64) as usize;
        // The first d of a partial shuffle: d distinct uniform columns.
        for i in 0..d {
            let j = rng.random_range(i..cols);
            pick.swap(i, j);
            t.push((r as u32, pick[i], val(rng)));
        }
    }
    csr(rows, cols, &t)
}

fn rmat(scale: u32, ef: usize, p: [f64; 3], shuffled: bool, rng: &mut ChaCha8Rng) -> Result<Csr> {
    if !(4..=26).contains(&scale) || p.iter().sum::<f64>() >= 1.0 {
        bail!("rmat: scale {scale}, probabilities {p:?}");
    }
    let n = 1usize << scale;
    let ids = if shuffled {
        perm(n, rng)
    } else {
        (0..n as u32).collect()
    };
    let mut t = Vec::with_capacity(n * ef);
    for _ in 0..n * ef {
        let (mut r, mut c) = (0usize, 0usize);
        for _ in 0..scale {
            let u: f64 = rng.random();
            let (dr, dc) = if u < p[0] {
                (0, 0)
            } else if u < p[0] + p[1] {
                (0, 1)
            } else if u < p[0] + p[1] + p[2] {
                (1, 0)
            } else {
                (1, 1)
            };
            r = 2 * r + dr;
            c = 2 * c + dc;
        }
        t.push((ids[r], ids[c], val(rng)));
    }
    csr(n, n, &t)
}
