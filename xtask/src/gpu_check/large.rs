//! The large path's section of `gpu-check` (`--large-only`): every
//! [`LargeVariant`] with 32- and 64-bit row pointers and f32 / f64 values
//! on edge-case matrices built here (empty rows at the ends and inside,
//! one row longer than many tiles, rows of exactly a tile and one either
//! side, more rows than a tile has nonzeros, fewer nonzeros than one tile,
//! a heavy-tailed graph), every row compared with a float64 reference by
//! the selection's own rule ([`select::compare`]). Writes
//! `large-check.json`; the sanitizer pass runs the same checks.

use anyhow::{Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use sparserl_rt::large::select::{Reference, compare};
use sparserl_rt::large::{DeviceLargeCsr, LargeCsr, LargeVariant, OffsetWidth};
use sparserl_rt::{DeviceVec, Gpu, Scalar};
use std::path::Path;
use std::time::Instant;

/// One edge-case matrix: name, shape and arrays (row lengths given).
struct Edge {
    name: &'static str,
    cols: usize,
    indptr: Vec<u64>,
    indices: Vec<u32>,
}

/// A matrix of `cols` columns with the given row lengths (capped at
/// `cols`), columns drawn without repeats and sorted (seeded).
fn edge(name: &'static str, cols: usize, lens: &[usize], seed: u64) -> Edge {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut indptr = vec![0u64];
    let mut indices = Vec::new();
    for &len in lens {
        indices.extend(super::sample_columns(&mut rng, cols, len));
        indptr.push(indices.len() as u64);
    }
    Edge {
        name,
        cols,
        indptr,
        indices,
    }
}

/// The edge cases.
fn edges() -> Vec<Edge> {
    let cycle = [0usize, 0, 3, 1, 0, 700, 2, 0, 0, 5, 1, 1, 1, 40, 0, 0];
    let empty_inside: Vec<usize> = cycle.iter().cycle().take(3000).copied().collect();
    let mut hub = vec![2usize; 6000];
    hub[3000] = 9000;
    hub[0] = 0;
    let tiles: Vec<usize> = [1024usize, 1023, 1025, 2048, 2047, 2049, 1, 0]
        .iter()
        .cycle()
        .take(64)
        .copied()
        .collect();
    let mut last_only = vec![0usize; 5000];
    last_only[4999] = 3;
    let heavy: Vec<usize> = (0..20_000)
        .map(|i| (3000.0 / (1.0 + i as f64).powf(0.9)) as usize + (i % 3))
        .collect();
    vec![
        edge("empty-rows-inside-and-at-the-ends", 2000, &empty_inside, 1),
        edge("one-row-of-many-tiles", 10_000, &hub, 2),
        edge("rows-of-a-tile-and-either-side", 4096, &tiles, 3),
        edge("only-the-last-row", 100, &last_only, 4),
        edge("one-nonzero-per-row", 50_000, &vec![1; 50_000], 5),
        edge("fewer-nonzeros-than-a-tile", 7, &[1, 0, 3, 0, 2], 6),
        edge("heavy-tailed", 20_000, &heavy, 7),
    ]
}

/// One failed check.
#[derive(Debug, Clone, Serialize)]
struct Failure {
    matrix: String,
    variant: String,
    offsets: String,
    value: String,
    reason: String,
}

/// The section's outcome.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct LargeSection {
    /// Edge-case matrices.
    pub(super) matrices: usize,
    /// Checks that passed (variant x offsets x value type x matrix).
    pub(super) passed: usize,
    /// Checks that failed (each listed).
    pub(super) failed: usize,
    failures: Vec<Failure>,
    /// Seconds.
    pub(super) seconds: f64,
}

/// Every variant, both offset widths and both value types on every edge
/// case; writes `large-check.json` under `out` when given.
pub(super) fn run(gpu: &Gpu, out: Option<&Path>) -> Result<LargeSection> {
    let t0 = Instant::now();
    let cases = edges();
    let mut s = LargeSection {
        matrices: cases.len(),
        ..LargeSection::default()
    };
    for e in &cases {
        check_value::<f32>(gpu, e, &mut s)?;
        check_value::<f64>(gpu, e, &mut s)?;
    }
    s.seconds = t0.elapsed().as_secs_f64();
    println!(
        "large path: {} checks passed, {} failed ({} matrices, {} variants, u32 / u64 offsets, f32 / f64; {:.1} s)",
        s.passed,
        s.failed,
        s.matrices,
        LargeVariant::SPACE.len(),
        s.seconds
    );
    for f in &s.failures {
        println!(
            "  FAILED {} {} {} {}: {}",
            f.matrix, f.variant, f.offsets, f.value, f.reason
        );
    }
    if let Some(dir) = out {
        let path = dir.join("large-check.json");
        std::fs::write(&path, serde_json::to_string_pretty(&s)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(s)
}

fn check_value<T: Scalar>(gpu: &Gpu, e: &Edge, s: &mut LargeSection) -> Result<()> {
    let rows = e.indptr.len() - 1;
    let mut rng = ChaCha8Rng::seed_from_u64(0x1a29e + rows as u64);
    let values: Vec<T> = (0..e.indices.len())
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let x: Vec<T> = (0..e.cols)
        .map(|_| T::from_f64(rng.random_range(-1.0..1.0)))
        .collect();
    let a = LargeCsr::try_from_parts(rows, e.cols, &e.indptr, &e.indices, &values)?;
    let mut reference = Reference { rows: Vec::new() };
    for r in 0..rows {
        let (sum, mag) = a.row_dot_f64(r, &x)?;
        reference.rows.push((r, sum, mag));
    }
    let xd = DeviceVec::from_host(gpu, &x)?;
    let mut y = DeviceVec::<T>::zeros(gpu, rows)?;
    for width in [OffsetWidth::U32, OffsetWidth::U64] {
        let d = DeviceLargeCsr::upload_with(gpu, &a, width)?;
        for v in LargeVariant::SPACE {
            let outcome = (|| -> Result<Option<String>> {
                sparserl_rt::large::ops::fill(gpu, T::from_f64(f64::NAN), &mut y)?;
                d.spmv(gpu, v, &xd, &mut y)?;
                let c = compare(&y.to_host(gpu)?, &reference);
                Ok((!c.passed).then(|| {
                    format!(
                        "max rel err {:.2e}, {} non-finite rows",
                        c.max_rel_err, c.nonfinite_rows
                    )
                }))
            })();
            let reason = match outcome {
                Ok(None) => {
                    s.passed += 1;
                    continue;
                }
                Ok(Some(r)) => r,
                Err(err) => format!("{err:#}"),
            };
            s.failed += 1;
            s.failures.push(Failure {
                matrix: e.name.into(),
                variant: v.id(),
                offsets: width.as_str().into(),
                value: T::TYPE.as_str().into(),
                reason,
            });
        }
    }
    Ok(())
}
