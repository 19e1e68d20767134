//! `bench spmm --merge`: several reports of one GPU as one (rows and
//! skipped cases together, the summary re-derived over all of them), with
//! its Markdown and SVG views: the figures over the real and large sets
//! together, from the committed runs, without a GPU. The rows keep every
//! figure but the per-measurement logs (`search_trials`, `variants`), which
//! stay in the merged reports.

use super::render;
use super::report::{Report, Row, summarize};
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

/// One report from `reports` (`.json` or `.json.gz`): the same GPU, rows and
/// skipped cases in the given order, commits and policies listed once each.
pub fn merge(reports: &[Report], names: &[String]) -> Result<Report> {
    let Some(first) = reports.first() else {
        bail!("--merge needs at least one report");
    };
    if let Some(r) = reports.iter().find(|r| r.gpu != first.gpu) {
        bail!(
            "the reports ran on different GPUs ({} and {})",
            first.gpu,
            r.gpu
        );
    }
    let joined = |f: fn(&Report) -> &str| {
        let mut seen: Vec<&str> = Vec::new();
        for r in reports {
            if !seen.contains(&f(r)) {
                seen.push(f(r));
            }
        }
        seen.join(" + ")
    };
    let mut out = Report {
        gpu: first.gpu.clone(),
        driver: joined(|r| &r.driver),
        date: joined(|r| &r.date),
        command: format!("cargo xtask bench spmm --merge {}", names.join(" ")),
        commit: joined(|r| &r.commit),
        policy: joined(|r| &r.policy),
        ours_choice: joined(|r| &r.ours_choice),
        copy_gbs: first.copy_gbs,
        l2_bytes: first.l2_bytes,
        ..Report::default()
    };
    for r in reports {
        out.rows.extend(r.rows.iter().map(|row| Row {
            search_trials: Vec::new(),
            variants: Vec::new(),
            ..row.clone()
        }));
        out.skipped.extend(r.skipped.iter().cloned());
        out.elapsed_seconds += r.elapsed_seconds;
        out.quick |= r.quick;
        out.partial |= r.partial;
    }
    out.summary = summarize(&out.rows, out.skipped.len());
    Ok(out)
}

/// Reads `paths`, merges them and writes `<out>/<stem>.json` (compact: the merged front-page
/// reports are the largest files of the repository), `.md` and `.svg`.
pub fn run(paths: &[PathBuf], out: &Path, stem: &str) -> Result<()> {
    let mut reports = Vec::with_capacity(paths.len());
    let mut names = Vec::with_capacity(paths.len());
    for p in paths {
        let text = crate::common::read_text(p)?;
        let r: Report = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a bench spmm report", p.display()))?;
        reports.push(r);
        names.push(p.file_name().map_or_else(
            || p.display().to_string(),
            |f| f.to_string_lossy().into_owned(),
        ));
    }
    let merged = merge(&reports, &names)?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let json = out.join(format!("{stem}.json"));
    std::fs::write(&json, serde_json::to_string(&merged)?)
        .with_context(|| format!("writing {}", json.display()))?;
    render::rerender(&json)?;
    print!("{}", render::summary_md(&merged));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(gpu: &str, commit: &str, suite: &str, speedups: &[f64]) -> Report {
        let rows = speedups
            .iter()
            .enumerate()
            .map(|(i, &s)| Row {
                matrix: format!("{suite}-{i}"),
                suite: suite.into(),
                n: 32,
                ours_us: Some(10.0),
                cusparse_us: Some(10.0 * s),
                speedup: Some(s),
                ..Row::default()
            })
            .collect();
        Report {
            gpu: gpu.into(),
            commit: commit.into(),
            rows,
            ..Report::default()
        }
    }

    #[test]
    fn merged_reports_summarise_all_their_rows() {
        let a = report("H200", "abc", "real", &[1.0, 4.0]);
        let b = report("H200", "abc", "large", &[2.0]);
        let m = merge(&[a, b], &["a.json".into(), "b.json".into()]).unwrap();
        assert_eq!(m.rows.len(), 3);
        assert_eq!(m.commit, "abc");
        let g = m.summary.geomean_speedup_spmm_n32.unwrap();
        assert!((g - 2.0).abs() < 1e-12, "{g}");
        assert_eq!(m.summary.min_speedup_spmm, Some(1.0));
        assert!(m.command.ends_with("--merge a.json b.json"));
    }

    #[test]
    fn reports_of_different_gpus_do_not_merge() {
        let a = report("H200", "abc", "real", &[1.0]);
        let b = report("H100", "def", "large", &[2.0]);
        let e = merge(&[a, b], &[]).unwrap_err().to_string();
        assert!(e.contains("different GPUs"), "{e}");
        assert!(merge(&[], &[]).is_err());
    }
}
