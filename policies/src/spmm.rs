//! The SpMM prior: a documented cost model that ranks `spmm_space(n,
//! layout)` for a matrix, and the SpMM template rule (the baseline).
//!
//! The learned (neural) policy does not cover SpMM (its vocabulary is the
//! SpMV space): the measured SpMM search ranks with this prior, and a build
//! without a GPU takes its first variant where the measured records
//! ([`crate::spmm_records`]) do not cover the value type and layout.
//! [`SPMM_PRIOR_VERSION`] goes into SpMM cache keys.

use crate::row_quantile;
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmStrategy, SpmmVariant, spmm_space};
use sparserl_rt::{Features, ValueType};

/// Version of the SpMM prior (part of SpMM cache keys).
pub const SPMM_PRIOR_VERSION: &str = "spmm-prior-9";

/// Lanes an H200-class GPU keeps busy at once (132 SMs x 2048 threads).
const CONCURRENT_LANES: f64 = 132.0 * 2048.0;

/// Bytes per microsecond of DRAM traffic (an H200's copy bandwidth, about
/// 4 TB/s), which turns a throughput step into time.
const DRAM_BYTES_PER_US: f64 = 4.0e6;

/// Microseconds of one dependent load under a full device (a step of a
/// critical path: the next load's address comes from the previous one).
const LOADED_LATENCY_US: f64 = 1.0;

/// The whole of `spmm_space(n, layout)` ranked by [`spmm_prior_score`] for
/// f32 values, best first (ties keep the space's order: deterministic).
pub fn spmm_prior(features: &Features, n: usize, layout: DenseLayout) -> Vec<SpmmVariant> {
    spmm_prior_for(features, ValueType::F32, n, layout)
}

/// [`spmm_prior`] for a given value type.
pub fn spmm_prior_for(
    features: &Features,
    value: ValueType,
    n: usize,
    layout: DenseLayout,
) -> Vec<SpmmVariant> {
    let mut scored: Vec<(SpmmVariant, f64)> = spmm_space(n, layout)
        .into_iter()
        .map(|v| (v, spmm_prior_score(&v, features, value, n, layout)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored.into_iter().map(|(v, _)| v).collect()
}

/// The prior's estimate of the fraction of copy bandwidth `v` reaches on a
/// matrix with features `f` at width `n` (an estimate: the measured search
/// has the last word).
///
/// A *step* is one lane loading one vector (`vec` columns) of an X row for
/// one nonzero; the matrix needs `W = nnz n / vec` steps, `w = W / 270k`
/// perfectly spread over the device's lanes. The estimate is
/// `w / max(w / e, c, 1) x knobs`, with `e` the efficiency and `c` the
/// critical path (steps of the longest sequential piece), so small
/// problems (latency-bound) prefer short critical paths, as in the SpMV
/// prior. The efficiency multiplies:
/// - column use: a work item covers `chunk` columns per pass, so
///   `n / (chunk ceil(n / chunk))` of its lanes do useful work;
/// - traffic: A (`nnz (v + 4)` bytes) is read once per pass of column
///   chunks (`ceil(n / chunk)` passes), against the compulsory bytes
///   `nnz (v + 4) + (rows + 1) 4 + (rows + cols) n v`; the re-reads count
///   half (the chunks of a row run together, so they hit in L2);
/// - load balance: row-warp (one row per group of `g` lanes, `32 / g` rows
///   per warp, each lane walking the whole row) lasts as long as its
///   longest row, the row length at quantile `1 - 1 / (k + 1)` for `k`
///   rows per warp, so `m / q_k`; col-tile (the `g` lanes split the row)
///   `m / (g max(1, q_k / g + 0.5))`; nnz-split is balanced by
///   construction and pays the atomics of rows cut at range edges
///   (`0.85 / (1 + 0.3 min(4, m / (32 items)))`) and its pre-pass (x 0.9);
/// - gathers: row-major X rows are contiguous (vector loads of 1 / 2 / 4
///   columns: x 0.8 / 0.93 / 1.0; col-tile loads `min(tile, 4)` columns
///   at once, and a step is one such load); a col-major X row is strided, so lanes
///   over columns (row-warp, nnz-split) use `v / 32` of the bytes they
///   fetch (one sector per value) while col-tile's lanes over rows of one
///   column share the sectors of their rows' columns
///   ([`col_major_rows_gathers`]; spmm-prior-6: prior-5 rated them 0.5 and
///   0.9, which ranked a warp per row over columns first at wide widths,
///   measured 3-6x slower than a thread per row on road networks).
///
/// The critical path: row-warp `max_row coarsen / unroll` (its
/// batches of X-row loads in flight; split over `s` groups `max_row
/// coarsen / (unroll s)`, balanced over the `block / (g s)` rows of a
/// block, x 0.97 for the shared-memory sums, spmm-prior-9), col-tile
/// `ceil(max_row / (g unroll)) tile / min(tile, 4)` (row-major; batches of
/// `unroll` nonzeros in flight, spmm-prior-6), nnz-split the sum of
/// `range coarsen / min(unroll, g)`, `2 min(range / m, range)` and
/// `log2(rows) / log2(g)` (the range walked one nonzero at a time with that
/// many loads in flight, a dependent row-pointer load per row boundary, the
/// first row's `g`-way search by the stream's lanes; the range is `32 items
/// / sub` nonzeros, spmm-prior-7).
///
/// A critical-path step is a dependent load, about [`LOADED_LATENCY_US`]
/// on a busy device, while a throughput step (every lane loading one
/// vector) lasts `lanes vec v / DRAM rate`: the critical path is scaled by
/// their ratio (spmm-prior-5; prior-4 counted both alike, which ranked a
/// warp per hub row first at wide widths with 2-column loads).
///
/// Knobs: `__ldg` (x 1 / 0.97), block 256 (x 1, 128 / 512 x 0.99, else
/// 0.98; 128 first when the launch is less than one wave), unroll 4 on rows
/// of 8+ nonzeros (x 1.01).
pub fn spmm_prior_score(
    v: &SpmmVariant,
    f: &Features,
    value: ValueType,
    n: usize,
    layout: DenseLayout,
) -> f64 {
    let v = v.canonical();
    if v.trans {
        return transposed_score(&v, f, value, n);
    }
    let n = n.max(1) as f64;
    let m = f.mean_row.max(1e-9);
    let vs = value.size() as f64;
    let chunk = f64::from(v.chunk().max(1));
    let passes = (n / chunk).ceil().max(1.0);
    let col_use = n / (chunk * passes);
    let a_bytes = f.nnz * (vs + 4.0);
    let compulsory = a_bytes + (f.rows + 1.0) * 4.0 + (f.rows + f.cols) * n * vs;
    // The chunks of one row are neighbouring work items, run at about the
    // same time: A's re-reads hit in L2, at about twice the DRAM rate.
    let traffic = compulsory / (compulsory + 0.5 * a_bytes * (passes - 1.0)).max(1e-9);
    let g = f64::from(v.group.max(1));
    let (balance, critical) = match v.strategy {
        SpmmStrategy::RowWarp if v.split > 1 => {
            // spmm-prior-9: `split` groups share a row and wait at the
            // block's barrier for its slowest of `block / (g split)` rows,
            // each walking a `split`-th of it; the shared-memory sums cost
            // a little (x 0.97).
            let s = f64::from(v.split);
            let k = (f64::from(v.block) / (g * s)).max(1.0);
            let qk = row_quantile(f, 1.0 - 1.0 / (k + 1.0)).max(m);
            let in_flight = f64::from(v.unroll.max(1));
            (
                0.97 * m / qk,
                f.max_row * f64::from(v.coarsen) / (in_flight * s),
            )
        }
        SpmmStrategy::RowWarp => {
            let k = 32.0 / g;
            let qk = row_quantile(f, 1.0 - 1.0 / (k + 1.0)).max(m);
            // Each lane loads `coarsen` vectors per nonzero of the row,
            // `unroll` nonzeros' loads in flight (spmm-prior-5: a step covers
            // max(g, unroll) nonzeros; prior-4 counted min(unroll, g)).
            let in_flight = f64::from(v.unroll.max(1));
            (m / qk, f.max_row * f64::from(v.coarsen) / in_flight)
        }
        SpmmStrategy::ColTile => {
            let k = 32.0 / g;
            let qk = row_quantile(f, 1.0 - 1.0 / (k + 1.0)).max(m);
            (
                m / (g * (qk / g + 0.5).max(1.0)),
                (f.max_row / (g * f64::from(v.unroll.max(1)))).ceil() * f64::from(v.tile)
                    / f64::from(col_tile_vec(&v, layout)),
            )
        }
        SpmmStrategy::NnzSplit => {
            let range = f64::from(v.range());
            let atomics = 1.0 / (1.0 + 0.3 * (m / range).min(4.0));
            // A stream's lanes walk the range's nonzeros one at a
            // time (coarsen loads each), min(unroll, g) loads in flight; each
            // row boundary inside the range is a dependent load of the row
            // pointers (2 steps); finding the first row is a binary search
            // (a g-way search of the stream's lanes: log_g(rows) rounds).
            let in_flight = f64::from(v.unroll.min(v.group).max(1));
            let search = f.rows.max(2.0).log2() / g.log2().max(1.0);
            (
                0.85 * atomics * 0.9,
                range * f64::from(v.coarsen) / in_flight + 2.0 * (range / m).min(range) + search,
            )
        }
    };
    let vec = match v.strategy {
        SpmmStrategy::ColTile => col_tile_vec(&v, layout),
        _ => v.vec.max(1),
    };
    let gathers = match (layout, v.strategy) {
        (DenseLayout::RowMajor, _) => match vec {
            1 => 0.8,
            2 => 0.93,
            _ => 1.0,
        },
        (DenseLayout::ColMajor, SpmmStrategy::ColTile) => col_major_rows_gathers(f, vs),
        (DenseLayout::ColMajor, _) => vs / SECTOR_BYTES,
    };
    let eff = (col_use * traffic * balance * gathers).max(1e-9);
    let w = (f.nnz * n / f64::from(vec) / CONCURRENT_LANES).max(1e-9);
    // A critical-path step is a dependent load (LOADED_LATENCY_US); a
    // throughput step moves one vector per lane of the device at DRAM rate
    // (spmm-prior-5: narrow loads make a throughput step short, so a long
    // serial chain costs more of them).
    let step_us = CONCURRENT_LANES * f64::from(vec) * vs / DRAM_BYTES_PER_US;
    let critical = critical * LOADED_LATENCY_US / step_us.max(1e-9);
    let base = w / (w / eff).max(critical).max(1.0);
    let ldg = if v.ldg_x { 1.0 } else { 0.97 };
    let block = block_factor(&v, f, n);
    let unroll = if v.unroll >= 4 && m >= 8.0 { 1.01 } else { 1.0 };
    (base * ldg * block * unroll).clamp(1e-6, 1.0)
}

/// Microseconds a transpose launch costs beyond its traffic (launch and
/// tail of a short kernel).
const TRANSPOSE_LAUNCH_US: f64 = 1.5;

/// The transposed path (spmm-prior-8): the row-major variant's estimate
/// turned into time (`compulsory / (rate score)`), plus the two transposes
/// (X in, Y out: each reads and writes its dense matrix once, at 0.8 of
/// the copy rate) and their launches, turned back into a fraction.
fn transposed_score(v: &SpmmVariant, f: &Features, value: ValueType, n: usize) -> f64 {
    let rm = SpmmVariant { trans: false, ..*v };
    let score = spmm_prior_score(&rm, f, value, n, DenseLayout::RowMajor);
    let vs = value.size() as f64;
    let dense = (f.rows + f.cols) * n.max(1) as f64 * vs;
    let compulsory = f.nnz * (vs + 4.0) + (f.rows + 1.0) * 4.0 + dense;
    let t = compulsory / (DRAM_BYTES_PER_US * score)
        + 2.0 * dense / (0.8 * DRAM_BYTES_PER_US)
        + 2.0 * TRANSPOSE_LAUNCH_US;
    (compulsory / (DRAM_BYTES_PER_US * t)).clamp(1e-6, 1.0)
}

/// Bytes of the smallest transaction of a gather (a 32-byte sector).
const SECTOR_BYTES: f64 = 32.0;

/// Share of the fetched bytes a column-major gather uses when the lanes of
/// a warp run over neighbouring rows at one column (col-tile): the warp
/// fetches the distinct sectors its rows' columns fall in, about two per
/// distinct 128-byte segment (`x_segments_per_nnz`: 2.9 / 1.6 / 1.6 sectors
/// per segment on MIT8 / road_NW / email-Enron), so `v / (32 x 2 seg)`,
/// at most 0.9. Lanes over the columns of one row (row-warp, nnz-split)
/// fetch one sector per value (`v / 32`): the values of one X row lie `ld`
/// apart.
fn col_major_rows_gathers(f: &Features, vs: f64) -> f64 {
    let sectors_per_nnz = (2.0 * f.x_segments_per_nnz).clamp(vs / SECTOR_BYTES, 1.0);
    (vs / (SECTOR_BYTES * sectors_per_nnz)).min(0.9)
}

/// Columns col-tile loads at once: `min(tile, 4)` from a row-major X
/// (vector loads), 1 from a column-major one.
fn col_tile_vec(v: &SpmmVariant, layout: DenseLayout) -> u32 {
    match layout {
        DenseLayout::RowMajor => v.tile.clamp(1, 4),
        DenseLayout::ColMajor => 1,
    }
}

/// Block size knob: 256 (x 1, 128 / 512 x 0.99, else 0.98), except that a
/// launch of less than one wave of the device prefers 128 (more, smaller
/// blocks spread over more SMs).
fn block_factor(v: &SpmmVariant, f: &Features, n: f64) -> f64 {
    let shape = (f.rows as usize, f.cols as usize, f.nnz as usize, n as usize);
    let threads = f64::from(v.grid(shape)) * f64::from(v.block);
    match (v.block, threads < CONCURRENT_LANES) {
        (128, true) | (256, false) => 1.0,
        (128 | 256 | 512, _) => 0.99,
        _ => 0.98,
    }
}

/// The SpMM template rule, the fixed choice a hand-written library makes:
/// one warp per row with lanes over the columns (row-warp, 32 lanes), the
/// widest vector load the layout and width allow (4 columns row-major for
/// `n >= 128`, 2 for `n >= 64`, else 1), one slice per lane, block 256,
/// `__ldg` loads; narrower groups (several rows per warp) only when `n`
/// is below 32, so that no lane idles. A point of `spmm_space(n, layout)`.
pub fn spmm_template_rule(n: usize, layout: DenseLayout) -> SpmmVariant {
    let vec = match layout {
        DenseLayout::ColMajor => 1,
        DenseLayout::RowMajor if n >= 128 => 4,
        DenseLayout::RowMajor if n >= 64 => 2,
        DenseLayout::RowMajor => 1,
    };
    let width = n.max(1).next_power_of_two().min(32) as u32;
    SpmmVariant {
        group: (width / vec).clamp(1, 32),
        vec,
        coarsen: 1,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    }
}

#[cfg(test)]
mod tests;
