//! The report: JSON and Markdown.

use super::*;

#[derive(Serialize)]
pub(super) struct Counts {
    pub(super) variants: usize,
    pub(super) fine_variants: usize,
    pub(super) matrices_real: usize,
    pub(super) matrices_edge: usize,
    /// (value type, matrix, variant) combinations checked.
    pub(super) combinations: usize,
    pub(super) passed: usize,
    pub(super) failed: usize,
}

#[derive(Serialize)]
pub(super) struct CompileFailure {
    pub(super) value: ValueType,
    pub(super) variant: String,
    pub(super) error: String,
}

#[derive(Serialize)]
pub(super) struct Summary {
    pub(super) gpu: String,
    pub(super) arch: String,
    pub(super) driver: String,
    pub(super) nvrtc: String,
    pub(super) date: String,
    pub(super) command: String,
    pub(super) matrix_dir: Option<String>,
    pub(super) variant_set: VariantSet,
    pub(super) checks_per_variant: u32,
    pub(super) tolerance_f32: f64,
    pub(super) tolerance_f64: f64,
    pub(super) passed: bool,
    pub(super) counts: Counts,
    pub(super) aborted: Option<Fatal>,
    pub(super) compile_failures: Vec<CompileFailure>,
    pub(super) skipped_files: Vec<Skipped>,
    pub(super) results: Vec<MatrixResult>,
    pub(super) sanitizer: Vec<SanitizerResult>,
    pub(super) seconds: f64,
}

/// The command line, with the program shortened to its file name.
pub(super) fn command_line() -> String {
    let mut args: Vec<String> = std::env::args().collect();
    if let Some(first) = args.first_mut()
        && let Some(name) = Path::new(first.as_str()).file_name()
    {
        *first = name.to_string_lossy().into_owned();
    }
    args.iter()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Totals of one value type: (passed, total, worst error).
pub(super) fn totals(results: &[MatrixResult], value: ValueType) -> (usize, usize, f64) {
    results
        .iter()
        .filter(|r| r.value == value)
        .fold((0, 0, 0.0), |(p, t, w), r| {
            (
                p + r.variants_passed,
                t + r.variants_total,
                worse(w, r.worst_rel_err),
            )
        })
}

pub(super) fn totals_line(results: &[MatrixResult], value: ValueType) -> String {
    let (p, t, w) = totals(results, value);
    let n = results.iter().filter(|r| r.value == value).count();
    format!(
        "{value}: {n} matrices, {p}/{t} (matrix, variant) pairs passed, worst rel err {} (tolerance {:.0e})",
        fmt_err(w),
        tolerance(value)
    )
}

pub(super) fn markdown(s: &Summary) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# GPU correctness check\n");
    let _ = writeln!(md, "- GPU: {} ({})", s.gpu, s.arch);
    let _ = writeln!(md, "- Driver: {}", s.driver);
    let _ = writeln!(md, "- NVRTC: {}", s.nvrtc);
    let _ = writeln!(md, "- Date: {}", s.date);
    let _ = writeln!(md, "- Command: `{}`", s.command);
    let _ = writeln!(
        md,
        "- Variants: {} ({} core + {} layout + {} fine-knob), each compiled for f32 and f64; \
         layout variants run on the matrices that have their layout",
        s.counts.variants,
        core_space().len(),
        s.counts.variants - s.counts.fine_variants - core_space().len(),
        s.counts.fine_variants
    );
    let _ = writeln!(
        md,
        "- Matrices: {} real (from `{}`) + {} built-in edge cases",
        s.counts.matrices_real,
        s.matrix_dir.as_deref().unwrap_or("none"),
        s.counts.matrices_edge
    );
    let _ = writeln!(
        md,
        "- Method: {} checks per (value type, matrix, variant), each with a fresh random x and y \
         poisoned with NaN before the launch, against a float64 CPU reference; pass iff every \
         relative error is finite and <= {:.0e} (f32) / {:.0e} (f64)",
        s.checks_per_variant, s.tolerance_f32, s.tolerance_f64
    );
    let _ = writeln!(
        md,
        "- Result: **{}** ({} of {} combinations passed, {:.0} s)",
        if s.passed { "PASS" } else { "FAIL" },
        s.counts.passed,
        s.counts.combinations,
        s.seconds
    );
    if let Some(f) = &s.aborted {
        let _ = writeln!(md, "- **Aborted**: {f}");
    }
    for value in ValueType::ALL {
        let _ = writeln!(md, "\n## {value}\n");
        let _ = writeln!(
            md,
            "| matrix | rows | cols | nnz | variants passed | worst rel err |"
        );
        let _ = writeln!(md, "|---|---:|---:|---:|---:|---:|");
        for r in s.results.iter().filter(|r| r.value == value) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {}/{} | {} |",
                r.matrix,
                r.rows,
                r.cols,
                r.nnz,
                r.variants_passed,
                r.variants_total,
                fmt_err(r.worst_rel_err)
            );
        }
        let (p, t, w) = totals(&s.results, value);
        let _ = writeln!(md, "| **total** | | | | **{p}/{t}** | **{}** |", fmt_err(w));
    }
    let _ = writeln!(md, "\n## Failures\n");
    let failures: Vec<(&MatrixResult, &Failure)> = s
        .results
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| (r, f)))
        .collect();
    if failures.is_empty() && s.aborted.is_none() {
        let _ = writeln!(md, "none");
    }
    if let Some(f) = &s.aborted {
        let _ = writeln!(md, "- aborted: {f}");
    }
    if !failures.is_empty() {
        let _ = writeln!(
            md,
            "Cancellation factor c = || |A| |x| || / || A x || of the matrix for a random x is \
             given per line: rounding error of a sum grows with c and the row length.\n"
        );
    }
    for (r, f) in failures {
        let _ = write!(
            md,
            "- {} / {} (c = {}) / `{}`: rel err {}",
            r.value,
            r.matrix,
            fmt_err(r.cancellation),
            f.variant,
            fmt_err(f.rel_err)
        );
        match &f.error {
            Some(e) => {
                let _ = writeln!(md, " ({})", e.replace('|', "/"));
            }
            None => md.push('\n'),
        }
    }
    if !s.compile_failures.is_empty() {
        let _ = writeln!(md, "\n## Compile failures\n");
        for c in &s.compile_failures {
            let _ = writeln!(md, "- {} `{}`: {}", c.value, c.variant, c.error);
        }
    }
    if !s.skipped_files.is_empty() {
        let _ = writeln!(md, "\n## Skipped matrix files\n");
        for k in &s.skipped_files {
            let _ = writeln!(md, "- `{}`: {}", k.file, k.reason);
        }
    }
    let _ = writeln!(md, "\n## compute-sanitizer\n");
    let _ = writeln!(
        md,
        "One launch of every variant (f32 and f64) on five small edge cases \
         (empty rows, a long row, rectangular, diagonals, a mix of tile shapes).\n"
    );
    let _ = writeln!(md, "| tool | status | errors | exit code | seconds | log |");
    let _ = writeln!(md, "|---|---|---:|---:|---:|---|");
    for r in &s.sanitizer {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {:.0} | {} |",
            r.tool,
            r.status,
            r.errors.map_or("-".to_string(), |n| n.to_string()),
            r.exit_code.map_or("-".to_string(), |n| n.to_string()),
            r.seconds,
            r.log.as_deref().unwrap_or("-")
        );
    }
    md
}

pub(super) fn write_outputs(out: &Path, s: &Summary) -> Result<()> {
    let json = serde_json::to_string_pretty(s).context("serializing the summary")?;
    let jp = out.join("gpu-check.json");
    std::fs::write(&jp, json + "\n").with_context(|| format!("writing {}", jp.display()))?;
    let mp = out.join("gpu-check.md");
    std::fs::write(&mp, markdown(s)).with_context(|| format!("writing {}", mp.display()))?;
    Ok(())
}
