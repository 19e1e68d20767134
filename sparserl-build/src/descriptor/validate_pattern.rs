//! Validation of a kernel's `pattern` table: the model's [`RawPattern`] into
//! a [`Pattern`], key by key, in the order the keys are documented.

use super::*;

/// What `pattern` expects: shown when it is missing or not a table.
pub(super) const PATTERN_EXPECTED: &str =
    "a table such as { kind = \"stencil\", grid = [1024, 1024], points = 5 }";

/// Reads the `pattern` value at key path `path`.
pub(super) fn validate_pattern(
    cx: &Cx<'_>,
    path: &str,
    value: &Value,
) -> Result<Pattern, DescriptorError> {
    if !value.is_table() {
        return Err(cx.err(
            path,
            format!("found {}, expected {PATTERN_EXPECTED}", found_typed(value)),
        ));
    }
    let kinds = one_of(KINDS);
    let raw = deserialize_at::<RawPattern>(value, path.to_string())
        .map_err(|e| e.into_descriptor_error(cx.manifest, Some(("kind", &kinds))))?;
    let p = PatternKeys { cx, path };
    match raw {
        RawPattern::MatrixMarket { path } => p.matrix_market(&path),
        RawPattern::Samples { dir } => p.samples_dir(&dir),
        RawPattern::Stencil {
            grid,
            points,
            seed,
            samples,
        } => p.stencil(&grid, &points, &seed, &samples),
        RawPattern::Banded {
            rows,
            bandwidth,
            avg_degree,
            seed,
            samples,
        } => {
            let rows = p.positive("rows", &rows)?;
            let bandwidth = p.positive("bandwidth", &bandwidth)?;
            let avg_degree = p.degree(&avg_degree, rows)?;
            p.nnz_fits(rows, avg_degree)?;
            Ok(Pattern::Banded {
                rows,
                bandwidth,
                avg_degree,
                seed: p.seed(&seed)?,
                samples: p.samples(&samples, 2)?,
            })
        }
        RawPattern::PowerLaw {
            rows,
            avg_degree,
            exponent,
            seed,
            samples,
        } => {
            let rows = p.positive("rows", &rows)?;
            let avg_degree = p.degree(&avg_degree, rows)?;
            let exponent = p.exponent(&exponent)?;
            p.nnz_fits(rows, avg_degree)?;
            Ok(Pattern::PowerLaw {
                rows,
                avg_degree,
                exponent,
                seed: p.seed(&seed)?,
                samples: p.samples(&samples, 2)?,
            })
        }
        RawPattern::Uniform {
            rows,
            cols,
            avg_degree,
            seed,
            samples,
        } => {
            let rows = p.positive("rows", &rows)?;
            let cols = p.positive("cols", &cols)?;
            let avg_degree = p.degree(&avg_degree, cols)?;
            p.nnz_fits(rows, avg_degree)?;
            Ok(Pattern::Uniform {
                rows,
                cols,
                avg_degree,
                seed: p.seed(&seed)?,
                samples: p.samples(&samples, 2)?,
            })
        }
        RawPattern::Block {
            rows,
            block,
            blocks_per_row,
            seed,
            samples,
        } => p.block(&rows, &block, &blocks_per_row, &seed, &samples),
    }
}

/// The keys of one pattern table (at key path `path`).
struct PatternKeys<'a> {
    cx: &'a Cx<'a>,
    path: &'a str,
}

impl PatternKeys<'_> {
    fn key(&self, key: &str) -> String {
        join_key(self.path, key)
    }

    fn required<'v>(
        &self,
        key: &str,
        value: &'v Option<Value>,
        expected: &str,
    ) -> Result<&'v Value, DescriptorError> {
        self.cx.required(self.path, key, value, expected)
    }

    /// A required positive integer (a size).
    fn positive(&self, key: &str, value: &Option<Value>) -> Result<usize, DescriptorError> {
        let v = self.required(key, value, "a positive integer")?;
        positive_int(self.cx, &self.key(key), v, MAX_DIM)
    }

    /// `avg-degree`: a positive number no larger than the `cols` columns.
    fn degree(&self, value: &Option<Value>, cols: usize) -> Result<f64, DescriptorError> {
        let key = self.key("avg-degree");
        let d = positive_number(
            self.cx,
            &key,
            self.required("avg-degree", value, "a positive number")?,
        )?;
        if d > cols as f64 {
            return Err(self.cx.err(
                &key,
                format!("found {d}, expected a positive number no larger than the {cols} columns"),
            ));
        }
        Ok(d)
    }

    /// `seed`: a non-negative integer, 0 when absent.
    fn seed(&self, value: &Option<Value>) -> Result<u64, DescriptorError> {
        match value {
            None => Ok(0),
            Some(Value::Integer(i)) if *i >= 0 => Ok(i.unsigned_abs()),
            Some(v) => Err(self.cx.err(
                &self.key("seed"),
                format!("found {}, expected a non-negative integer", found_typed(v)),
            )),
        }
    }

    /// `samples`: an integer in `1..=MAX_SAMPLES`, `default` when absent.
    fn samples(&self, value: &Option<Value>, default: u32) -> Result<u32, DescriptorError> {
        match value {
            None => Ok(default),
            Some(Value::Integer(i)) if (1..=i64::from(MAX_SAMPLES)).contains(i) => {
                Ok(u32::try_from(*i).unwrap_or(1))
            }
            Some(v) => Err(self.cx.err(
                &self.key("samples"),
                format!(
                    "found {}, expected an integer in 1..={MAX_SAMPLES}",
                    found_typed(v)
                ),
            )),
        }
    }

    /// The matrix must stay addressable with 32-bit indices.
    fn nnz_fits(&self, rows: usize, per_row: f64) -> Result<(), DescriptorError> {
        let nnz = rows as f64 * per_row;
        if nnz >= MAX_DIM as f64 {
            return Err(self.cx.err(
                self.path,
                format!(
                    "found a pattern with about {nnz:.0} nonzeros, expected fewer than {MAX_DIM} \
                     (32-bit kernel indices)"
                ),
            ));
        }
        Ok(())
    }

    fn matrix_market(&self, path: &Option<Value>) -> Result<Pattern, DescriptorError> {
        let cx = self.cx;
        let key = self.key("path");
        let p = string(
            cx,
            &key,
            self.required(
                "path",
                path,
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
        Ok(Pattern::MatrixMarket {
            path: PathBuf::from(p),
        })
    }

    fn samples_dir(&self, dir: &Option<Value>) -> Result<Pattern, DescriptorError> {
        let cx = self.cx;
        let key = self.key("dir");
        let d = string(
            cx,
            &key,
            self.required(
                "dir",
                dir,
                "a directory of .mtx / .mtx.gz files, relative to the manifest",
            )?,
        )?;
        checked_mtx_files(cx.manifest, &key, Path::new(d), &cx.dir.join(d))?;
        Ok(Pattern::Samples {
            dir: PathBuf::from(d),
        })
    }

    fn stencil(
        &self,
        grid: &Option<Value>,
        points: &Option<Value>,
        seed: &Option<Value>,
        samples: &Option<Value>,
    ) -> Result<Pattern, DescriptorError> {
        let cx = self.cx;
        let key = self.key("grid");
        let grid = match self.required("grid", grid, "an array of 2 or 3 positive integers")? {
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
                format!(
                    "found a grid of more than {MAX_DIM} points, expected at most {MAX_DIM} \
                     (32-bit kernel indices)"
                ),
            ));
        };
        let allowed: [usize; 2] = if grid.len() == 2 { [5, 9] } else { [7, 27] };
        let points_key = self.key("points");
        let expected = format!(
            "one of {}, {} for a {}-D grid",
            allowed[0],
            allowed[1],
            grid.len()
        );
        let pv = self.required("points", points, &expected)?;
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
        self.seed(seed)?;
        if self.samples(samples, 1)? != 1 {
            return Err(cx.err(
                &self.key("samples"),
                format!(
                    "found {}, expected 1 (stencils are deterministic, so every instance \
                     would be the same matrix)",
                    samples.as_ref().map(found).unwrap_or_default()
                ),
            ));
        }
        self.nnz_fits(rows, points as f64)?;
        Ok(Pattern::Stencil { grid, points })
    }

    /// `power-law`'s `exponent`: a finite number greater than 1.
    fn exponent(&self, value: &Option<Value>) -> Result<f64, DescriptorError> {
        let key = self.key("exponent");
        let ev = self.required("exponent", value, "a number greater than 1")?;
        let exponent = match ev {
            Value::Integer(i) => *i as f64,
            Value::Float(x) => *x,
            v => {
                return Err(self.cx.err(
                    &key,
                    format!("found {}, expected a number greater than 1", found_typed(v)),
                ));
            }
        };
        if !(exponent.is_finite() && exponent > 1.0) {
            return Err(self.cx.err(
                &key,
                format!(
                    "found {}, expected a finite number greater than 1",
                    found(ev)
                ),
            ));
        }
        Ok(exponent)
    }

    fn block(
        &self,
        rows: &Option<Value>,
        block: &Option<Value>,
        blocks_per_row: &Option<Value>,
        seed: &Option<Value>,
        samples: &Option<Value>,
    ) -> Result<Pattern, DescriptorError> {
        let cx = self.cx;
        let rows = self.positive("rows", rows)?;
        let key = self.key("block");
        let block = match self.required("block", block, "an array [r, c] of 2 positive integers")? {
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
        let blocks_per_row = self.positive("blocks-per-row", blocks_per_row)?;
        if blocks_per_row > block_cols {
            return Err(cx.err(
                &self.key("blocks-per-row"),
                format!(
                    "found {blocks_per_row}, expected at most {block_cols} (the number of \
                     block columns, rows / c)"
                ),
            ));
        }
        self.nnz_fits(rows, (blocks_per_row as f64) * (block[1] as f64))?;
        Ok(Pattern::Block {
            rows,
            block,
            blocks_per_row,
            seed: self.seed(seed)?,
            samples: self.samples(samples, 2)?,
        })
    }
}
