//! The matrices checked: real ones from a folder and built-in edge cases.

use super::*;

/// One matrix to check on.
pub(super) struct TestMatrix {
    pub(super) name: String,
    /// `real` (from the matrix directory) or `edge` (built in).
    pub(super) source: &'static str,
    pub(super) class: String,
    pub(super) csr: Csr,
}

impl TestMatrix {
    pub(super) fn edge(name: &str, csr: Csr) -> TestMatrix {
        TestMatrix {
            name: name.to_string(),
            source: "edge",
            class: "edge-case".to_string(),
            csr,
        }
    }
}

/// A uniform value in `[-1, 1)` that is never exactly zero.
pub(super) fn random_value(rng: &mut ChaCha8Rng) -> f64 {
    let v: f64 = rng.random_range(-1.0..1.0);
    if v == 0.0 { 0.5 } else { v }
}

/// `len` distinct sorted columns in `0..cols` (`len` is capped at `cols`).
pub(super) fn sample_columns(rng: &mut ChaCha8Rng, cols: usize, len: usize) -> Vec<u32> {
    let len = len.min(cols);
    if len * 4 >= cols {
        // Selection sampling: one pass over all columns.
        let mut out = Vec::with_capacity(len);
        let mut needed = len;
        for c in 0..cols {
            if needed == 0 {
                break;
            }
            if rng.random_range(0..cols - c) < needed {
                out.push(c as u32);
                needed -= 1;
            }
        }
        out
    } else {
        let mut set = BTreeSet::new();
        while set.len() < len {
            set.insert(rng.random_range(0..cols) as u32);
        }
        set.into_iter().collect()
    }
}

/// A `rows x cols` matrix whose row `r` has `len_of(r, rng)` random distinct
/// columns (capped at `cols`) and random values.
pub(super) fn build_rows(
    rows: usize,
    cols: usize,
    seed: u64,
    mut len_of: impl FnMut(usize, &mut ChaCha8Rng) -> usize,
) -> Result<Csr> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut indptr = Vec::with_capacity(rows + 1);
    let mut indices = Vec::new();
    indptr.push(0u32);
    for r in 0..rows {
        let len = len_of(r, &mut rng);
        indices.extend(sample_columns(&mut rng, cols, len));
        let end = u32::try_from(indices.len()).context("edge case has too many nonzeros")?;
        indptr.push(end);
    }
    let values = (0..indices.len()).map(|_| random_value(&mut rng)).collect();
    Csr::try_new(rows, cols, indptr, indices, values)
        .with_context(|| format!("building a {rows} x {cols} edge case"))
}

/// A matrix without nonzeros.
pub(super) fn empty_matrix(rows: usize, cols: usize) -> Result<Csr> {
    Csr::try_new(rows, cols, vec![0; rows + 1], Vec::new(), Vec::new())
        .with_context(|| format!("building an empty {rows} x {cols} matrix"))
}

/// Every third row empty, plus empty first and last rows; other rows 1..=20 nonzeros.
pub(super) fn empty_rows_matrix(rows: usize, cols: usize, seed: u64) -> Result<Csr> {
    build_rows(rows, cols, seed, |r, rng| {
        if r == 0 || r + 1 == rows || r.is_multiple_of(3) {
            0
        } else {
            rng.random_range(1..=20)
        }
    })
}

/// `per_row` nonzeros in every row except `heavy`, which holds at least as
/// many nonzeros as all other rows together (capped at `cols`).
pub(super) fn half_row_matrix(
    rows: usize,
    cols: usize,
    per_row: usize,
    heavy: usize,
    seed: u64,
) -> Result<Csr> {
    let others = per_row * rows.saturating_sub(1);
    build_rows(rows, cols, seed, |r, _| {
        if r == heavy { others.max(1) } else { per_row }
    })
}

/// `per_row` nonzeros per row except row `long`, which has `long_len`.
pub(super) fn long_row_matrix(
    rows: usize,
    cols: usize,
    long: usize,
    long_len: usize,
    per_row: usize,
    seed: u64,
) -> Result<Csr> {
    build_rows(
        rows,
        cols,
        seed,
        |r, _| if r == long { long_len } else { per_row },
    )
}

/// Short rows (1-2 nonzeros) with a row of 40-239 nonzeros every 50 rows and
/// a run of `rows / 3` empty rows in the middle: tiled kernels meet tiles of
/// many short rows holding a row that a whole warp sums, and tiles cut at
/// the 1024-row cap.
pub(super) fn tile_mix_matrix(rows: usize, cols: usize, seed: u64) -> Result<Csr> {
    let (gap0, gap1) = (rows / 3, 2 * rows / 3);
    build_rows(rows, cols, seed, |r, rng| {
        if (gap0..gap1).contains(&r) {
            0
        } else if r % 50 == 7 {
            (40 + r % 200).min(cols)
        } else {
            rng.random_range(1..=2)
        }
    })
}

/// A rectangular matrix on the diagonals -37, -1, 0, 2 and 64 (zero-free
/// where they fit): qualifies for the diagonal layout, whose padding then
/// reaches past both the first and the last column.
pub(super) fn diagonal_matrix(rows: usize, cols: usize) -> Result<Csr> {
    let mut t = Vec::new();
    for r in 0..rows as i64 {
        for d in [-37i64, -1, 0, 2, 64] {
            let c = r + d;
            if c >= 0 && c < cols as i64 {
                t.push((r as u32, c as u32, 1.0 + ((r * 7 + d) % 5) as f64 / 4.0));
            }
        }
    }
    Csr::from_triplets(rows, cols, &t).context("building the diagonal edge case")
}

/// The built-in edge cases of the full check.
pub(super) fn edge_cases() -> Result<Vec<TestMatrix>> {
    let synth_err = |what: &str| format!("generating the {what} edge case");
    Ok(vec![
        TestMatrix::edge(
            "edge-1x1",
            Csr::from_triplets(1, 1, &[(0, 0, 1.5)]).context("building the 1 x 1 edge case")?,
        ),
        TestMatrix::edge("edge-1x1-nnz0", empty_matrix(1, 1)?),
        TestMatrix::edge(
            "edge-1000x1",
            build_rows(1000, 1, SEED, |r, _| usize::from(r % 10 != 3))?,
        ),
        TestMatrix::edge(
            "edge-1x100000-dense-row",
            build_rows(1, 100_000, SEED + 1, |_, _| 100_000)?,
        ),
        TestMatrix::edge(
            "edge-rect-3000x700",
            synth::uniform(3000, 700, 8.0, SEED + 2).with_context(|| synth_err("3000 x 700"))?,
        ),
        TestMatrix::edge(
            "edge-rect-2000x5000",
            synth::uniform(2000, 5000, 12.0, SEED + 3).with_context(|| synth_err("2000 x 5000"))?,
        ),
        TestMatrix::edge(
            "edge-empty-rows-3000",
            empty_rows_matrix(3000, 3000, SEED + 4)?,
        ),
        TestMatrix::edge(
            "edge-half-nnz-in-row-17",
            half_row_matrix(10_000, 40_000, 3, 17, SEED + 5)?,
        ),
        TestMatrix::edge("edge-nnz0-500x400", empty_matrix(500, 400)?),
        TestMatrix::edge(
            "edge-stencil5-64x64",
            synth::stencil(&[64, 64], 5).with_context(|| synth_err("stencil"))?,
        ),
        TestMatrix::edge(
            "edge-power-law-50000",
            synth::power_law(50_000, 8.0, 1.8, SEED + 6).with_context(|| synth_err("power-law"))?,
        ),
        TestMatrix::edge(
            "edge-row-of-70000",
            long_row_matrix(2000, 100_000, 1000, 70_000, 5, SEED + 7)?,
        ),
        TestMatrix::edge(
            "edge-stencil27-24x24x24",
            synth::stencil(&[24, 24, 24], 27).with_context(|| synth_err("27-point stencil"))?,
        ),
        TestMatrix::edge(
            "edge-diagonals-rect-3000x2500",
            diagonal_matrix(3000, 2500)?,
        ),
        TestMatrix::edge(
            "edge-tile-mix-40000",
            tile_mix_matrix(40_000, 30_000, SEED + 8)?,
        ),
    ])
}

/// The five small edge cases launched under compute-sanitizer.
pub(super) fn sanitizer_matrices() -> Result<Vec<TestMatrix>> {
    Ok(vec![
        TestMatrix::edge(
            "san-empty-rows-300",
            empty_rows_matrix(300, 300, SEED + 10)?,
        ),
        // Rows of 20000 and 3000 nonzeros: the tiled kernels' pieces of a
        // row cut in three (atomics and completion tickets) and of a row
        // of one piece (written directly).
        TestMatrix::edge(
            "san-long-rows-20000-3000",
            build_rows(64, 40_000, SEED + 11, |r, _| match r {
                31 => 20_000,
                47 => 3_000,
                _ => 4,
            })?,
        ),
        TestMatrix::edge(
            "san-rect-300x70",
            synth::uniform(300, 70, 6.0, SEED + 12)
                .context("generating the 300 x 70 sanitizer case")?,
        ),
        TestMatrix::edge("san-diagonals-rect-200x150", diagonal_matrix(200, 150)?),
        TestMatrix::edge("san-tile-mix-4000", tile_mix_matrix(4000, 3000, SEED + 13)?),
    ])
}

/// A file of the matrix directory that could not be used.
#[derive(Serialize)]
pub(super) struct Skipped {
    pub(super) file: String,
    pub(super) reason: String,
}

/// The default matrix directory: `.device/matrices`, else `tests/fixtures/matrices`
/// (relative to the current directory, then to the workspace root).
pub(super) fn default_matrix_dir() -> Option<PathBuf> {
    let root = common::workspace_root();
    [
        PathBuf::from(".device/matrices"),
        root.join(".device/matrices"),
        PathBuf::from("tests/fixtures/matrices"),
        root.join("tests/fixtures/matrices"),
    ]
    .into_iter()
    .find(|p| p.is_dir())
}

/// Reads every Matrix Market file of `dir`; unreadable or empty-dimension
/// files are returned as skipped instead of failing the run.
pub(super) fn load_matrix_dir(dir: &Path) -> Result<(Vec<TestMatrix>, Vec<Skipped>)> {
    let classes = common::manifest_classes(dir);
    let mut ok = Vec::new();
    let mut skipped = Vec::new();
    for path in common::mtx_files(dir)? {
        let name = common::matrix_name(&path);
        let file = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| name.clone());
        match sparserl_rt::mtx::read_matrix_market(&path) {
            Ok(csr) if csr.rows() == 0 || csr.cols() == 0 => skipped.push(Skipped {
                file,
                reason: format!(
                    "{} x {} matrix has nothing to multiply",
                    csr.rows(),
                    csr.cols()
                ),
            }),
            Ok(csr) => ok.push(TestMatrix {
                class: classes
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| "unknown".into()),
                name,
                source: "real",
                csr,
            }),
            Err(e) => skipped.push(Skipped {
                file,
                reason: first_line(&e.to_string()),
            }),
        }
    }
    Ok((ok, skipped))
}
