//! The `pattern` table of a kernel declaration.

use super::*;

pub(super) const SYNTH_EXTRA: &[&str] = &["seed", "samples"];

pub(super) fn allowed_keys(kind: &str) -> Vec<&'static str> {
    let own: &[&str] = match kind {
        "matrix-market" => &["path"],
        "samples" => &["dir"],
        "stencil" => &["grid", "points"],
        "banded" => &["rows", "bandwidth", "avg-degree"],
        "power-law" => &["rows", "avg-degree", "exponent"],
        "uniform" => &["rows", "cols", "avg-degree"],
        "block" => &["rows", "block", "blocks-per-row"],
        _ => &[],
    };
    let mut keys = vec!["kind"];
    keys.extend_from_slice(own);
    if !matches!(kind, "matrix-market" | "samples") {
        keys.extend_from_slice(SYNTH_EXTRA);
    }
    keys
}

pub(super) fn parse_pattern(
    cx: &Cx<'_>,
    path: String,
    table: &Table,
) -> Result<Pattern, DescriptorError> {
    let f = Fields { cx, path, table };
    let kind_path = f.key("kind");
    let kind = string(cx, &kind_path, f.req("kind", &one_of(KINDS))?)?;
    if !KINDS.contains(&kind) {
        return Err(cx.err(
            &kind_path,
            format!("found {}, expected {}", quote(kind), one_of(KINDS)),
        ));
    }
    f.check_keys(&allowed_keys(kind))?;

    let pos = |key: &str, what: &str| -> Result<usize, DescriptorError> {
        positive_int(cx, &f.key(key), f.req(key, what)?, MAX_DIM)
    };
    let number = |key: &str| -> Result<f64, DescriptorError> {
        positive_number(cx, &f.key(key), f.req(key, "a positive number")?)
    };
    let seed = || -> Result<u64, DescriptorError> {
        match f.opt("seed") {
            None => Ok(0),
            Some(Value::Integer(i)) if *i >= 0 => Ok(i.unsigned_abs()),
            Some(v) => Err(cx.err(
                &f.key("seed"),
                format!("found {}, expected a non-negative integer", found_typed(v)),
            )),
        }
    };
    let samples = |default: u32| -> Result<u32, DescriptorError> {
        match f.opt("samples") {
            None => Ok(default),
            Some(Value::Integer(i)) if (1..=i64::from(MAX_SAMPLES)).contains(i) => {
                Ok(u32::try_from(*i).unwrap_or(1))
            }
            Some(v) => Err(cx.err(
                &f.key("samples"),
                format!(
                    "found {}, expected an integer in 1..={MAX_SAMPLES}",
                    found_typed(v)
                ),
            )),
        }
    };
    let degree = |key_cols: usize| -> Result<f64, DescriptorError> {
        let d = number("avg-degree")?;
        if d > key_cols as f64 {
            return Err(cx.err(
                &f.key("avg-degree"),
                format!(
                    "found {d}, expected a positive number no larger than the {key_cols} columns"
                ),
            ));
        }
        Ok(d)
    };
    let nnz_fits = |rows: usize, per_row: f64| -> Result<(), DescriptorError> {
        let nnz = rows as f64 * per_row;
        if nnz >= MAX_DIM as f64 {
            return Err(cx.err(
                &f.path,
                format!(
                    "found a pattern with about {nnz:.0} nonzeros, expected fewer than {MAX_DIM} \
                     (32-bit kernel indices)"
                ),
            ));
        }
        Ok(())
    };

    let pattern = match kind {
        "matrix-market" => {
            let key = f.key("path");
            let p = string(
                cx,
                &key,
                f.req(
                    "path",
                    "a path to a .mtx or .mtx.gz file, relative to the manifest",
                )?,
            )?;
            let lower = p.to_ascii_lowercase();
            if !(lower.ends_with(".mtx") || lower.ends_with(".mtx.gz")) {
                return Err(cx.err(
                    &key,
                    format!(
                        "found {}, expected a path ending in .mtx or .mtx.gz",
                        quote(p)
                    ),
                ));
            }
            let resolved = cx.dir.join(p);
            if !resolved.is_file() {
                let why = if resolved.exists() {
                    "is not a file"
                } else {
                    "does not exist"
                };
                return Err(cx.err(
                    &key,
                    format!(
                        "found {}, expected an existing Matrix Market file; {} {why}",
                        quote(p),
                        resolved.display()
                    ),
                ));
            }
            Pattern::MatrixMarket {
                path: PathBuf::from(p),
            }
        }
        "samples" => {
            let key = f.key("dir");
            let d = string(
                cx,
                &key,
                f.req(
                    "dir",
                    "a directory of .mtx / .mtx.gz files, relative to the manifest",
                )?,
            )?;
            checked_mtx_files(cx.manifest, &key, Path::new(d), &cx.dir.join(d))?;
            Pattern::Samples {
                dir: PathBuf::from(d),
            }
        }
        "stencil" => {
            let key = f.key("grid");
            let grid = match f.req("grid", "an array of 2 or 3 positive integers")? {
                Value::Array(a) if (2..=3).contains(&a.len()) => a
                    .iter()
                    .enumerate()
                    .map(|(i, v)| positive_int(cx, &format!("{key}[{i}]"), v, MAX_DIM))
                    .collect::<Result<Vec<usize>, _>>()?,
                v => {
                    return Err(cx.err(
                        &key,
                        format!(
                            "found {}, expected an array of 2 or 3 positive integers",
                            found_typed(v)
                        ),
                    ));
                }
            };
            let rows = grid
                .iter()
                .try_fold(1usize, |acc, &g| acc.checked_mul(g))
                .filter(|&r| r <= MAX_DIM);
            let Some(rows) = rows else {
                return Err(cx.err(
                    &key,
                    format!("found a grid of more than {MAX_DIM} points, expected at most {MAX_DIM} (32-bit kernel indices)"),
                ));
            };
            let allowed: [usize; 2] = if grid.len() == 2 { [5, 9] } else { [7, 27] };
            let points_key = f.key("points");
            let expected = format!(
                "one of {}, {} for a {}-D grid",
                allowed[0],
                allowed[1],
                grid.len()
            );
            let pv = f.req("points", &expected)?;
            let points = match pv {
                Value::Integer(i) if allowed.iter().any(|&a| a as i64 == *i) => {
                    usize::try_from(*i).unwrap_or(allowed[0])
                }
                Value::Integer(_) => {
                    return Err(cx.err(
                        &points_key,
                        format!("found {}, expected {expected}", found(pv)),
                    ));
                }
                v => {
                    return Err(cx.err(
                        &points_key,
                        format!("found {}, expected {expected}", found_typed(v)),
                    ));
                }
            };
            seed()?;
            if samples(1)? != 1 {
                return Err(cx.err(
                    &f.key("samples"),
                    format!(
                        "found {}, expected 1 (stencils are deterministic, so every instance \
                         would be the same matrix)",
                        f.opt("samples").map(found).unwrap_or_default()
                    ),
                ));
            }
            nnz_fits(rows, points as f64)?;
            Pattern::Stencil { grid, points }
        }
        "banded" => {
            let rows = pos("rows", "a positive integer")?;
            let bandwidth = pos("bandwidth", "a positive integer")?;
            let avg_degree = degree(rows)?;
            nnz_fits(rows, avg_degree)?;
            Pattern::Banded {
                rows,
                bandwidth,
                avg_degree,
                seed: seed()?,
                samples: samples(2)?,
            }
        }
        "power-law" => {
            let rows = pos("rows", "a positive integer")?;
            let avg_degree = degree(rows)?;
            let key = f.key("exponent");
            let ev = f.req("exponent", "a number greater than 1")?;
            let exponent = match ev {
                Value::Integer(i) => *i as f64,
                Value::Float(x) => *x,
                v => {
                    return Err(cx.err(
                        &key,
                        format!("found {}, expected a number greater than 1", found_typed(v)),
                    ));
                }
            };
            if !(exponent.is_finite() && exponent > 1.0) {
                return Err(cx.err(
                    &key,
                    format!(
                        "found {}, expected a finite number greater than 1",
                        found(ev)
                    ),
                ));
            }
            nnz_fits(rows, avg_degree)?;
            Pattern::PowerLaw {
                rows,
                avg_degree,
                exponent,
                seed: seed()?,
                samples: samples(2)?,
            }
        }
        "uniform" => {
            let rows = pos("rows", "a positive integer")?;
            let cols = pos("cols", "a positive integer")?;
            let avg_degree = degree(cols)?;
            nnz_fits(rows, avg_degree)?;
            Pattern::Uniform {
                rows,
                cols,
                avg_degree,
                seed: seed()?,
                samples: samples(2)?,
            }
        }
        "block" => {
            let rows = pos("rows", "a positive integer")?;
            let key = f.key("block");
            let block = match f.req("block", "an array [r, c] of 2 positive integers")? {
                Value::Array(a) if a.len() == 2 => [
                    positive_int(cx, &format!("{key}[0]"), &a[0], MAX_DIM)?,
                    positive_int(cx, &format!("{key}[1]"), &a[1], MAX_DIM)?,
                ],
                v => {
                    return Err(cx.err(
                        &key,
                        format!(
                            "found {}, expected an array [r, c] of 2 positive integers",
                            found_typed(v)
                        ),
                    ));
                }
            };
            for (i, b) in block.iter().enumerate() {
                // `rows / b * b` rather than `%`/`is_multiple_of` keeps the 1.85 MSRV lint-clean.
                if rows / b * b != rows {
                    return Err(cx.err(
                        &format!("{key}[{i}]"),
                        format!(
                            "found {b}, expected a divisor of rows = {rows} (blocks must tile \
                             the {rows} x {rows} matrix)"
                        ),
                    ));
                }
            }
            let block_cols = rows / block[1];
            let blocks_per_row = pos("blocks-per-row", "a positive integer")?;
            if blocks_per_row > block_cols {
                return Err(cx.err(
                    &f.key("blocks-per-row"),
                    format!(
                        "found {blocks_per_row}, expected at most {block_cols} (the number of \
                         block columns, rows / c)"
                    ),
                ));
            }
            nnz_fits(rows, (blocks_per_row as f64) * (block[1] as f64))?;
            Pattern::Block {
                rows,
                block,
                blocks_per_row,
                seed: seed()?,
                samples: samples(2)?,
            }
        }
        _ => {
            return Err(cx.err(
                &kind_path,
                format!("found {}, expected {}", quote(kind), one_of(KINDS)),
            ));
        }
    };
    Ok(pattern)
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------
