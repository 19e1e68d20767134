//! `cargo xtask coverage`: how well training data covers evaluation
//! matrices. For each evaluation record, its distance in the policy's
//! normalised feature space (the network's transforms, then a z-score with
//! the training records' mean and standard deviation, as training does) to
//! the nearest training record, and to the nearest of another structure
//! class (what a leave-one-class-out fold sees). Distances are root mean
//! square over the 18 features: 1 is one standard deviation per feature.

use anyhow::{Result, bail};
use serde::Serialize;
use sparserl_policies::dataset::{Dataset, MatrixRecord};
use sparserl_policies::net::transform_features;
use std::fmt::Write as _;
use std::path::PathBuf;

/// Arguments of `cargo xtask coverage`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Training datasets.
    #[arg(long, num_args = 1.., required = true)]
    pub train: Vec<PathBuf>,
    /// Evaluation datasets.
    #[arg(long, num_args = 1.., required = true)]
    pub eval: Vec<PathBuf>,
    /// Output folder.
    #[arg(long, default_value = "docs/policy")]
    pub out: PathBuf,
    /// Output file stem (`.json`, `.md`).
    #[arg(long, default_value = "policy-coverage")]
    pub stem: String,
}

/// One evaluation record's coverage.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Covered {
    matrix: String,
    class: String,
    value: String,
    /// The record's own matrix is among the training records (any value type).
    in_training: bool,
    nearest: String,
    nearest_class: String,
    distance: f64,
    nearest_other_class: Option<String>,
    distance_other_class: Option<f64>,
}

/// Z-scored transformed features of records, with the statistics of `train`.
fn normaliser(train: &[&MatrixRecord]) -> impl Fn(&MatrixRecord) -> Vec<f64> {
    let t: Vec<Vec<f64>> = train
        .iter()
        .map(|r| transform_features(&r.features))
        .collect();
    let n = t.len().max(1) as f64;
    let mean: Vec<f64> = (0..18)
        .map(|j| t.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let std: Vec<f64> = (0..18)
        .map(|j| {
            let v = (t.iter().map(|r| (r[j] - mean[j]).powi(2)).sum::<f64>() / n).sqrt();
            if v > 1e-6 { v } else { 1.0 }
        })
        .collect();
    move |r: &MatrixRecord| {
        transform_features(&r.features)
            .iter()
            .enumerate()
            .map(|(j, x)| (x - mean[j]) / std[j])
            .collect()
    }
}

fn rms(a: &[f64], b: &[f64]) -> f64 {
    (a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / a.len().max(1) as f64).sqrt()
}

/// Coverage of every `eval` record by `train` (records of the same matrix
/// name are skipped as neighbours, so a record is never its own).
pub fn coverage(train: &[&MatrixRecord], eval: &[&MatrixRecord]) -> Vec<Covered> {
    let norm = normaliser(train);
    let tz: Vec<Vec<f64>> = train.iter().map(|r| norm(r)).collect();
    eval.iter()
        .map(|e| {
            let z = norm(e);
            let mut best: Option<(f64, usize)> = None;
            let mut other: Option<(f64, usize)> = None;
            for (i, t) in train.iter().enumerate() {
                if t.name == e.name {
                    continue;
                }
                let d = rms(&z, &tz[i]);
                if best.is_none_or(|b| d < b.0) {
                    best = Some((d, i));
                }
                if t.class != e.class && other.is_none_or(|b| d < b.0) {
                    other = Some((d, i));
                }
            }
            let (d, i) = best.unwrap_or((f64::INFINITY, 0));
            Covered {
                matrix: e.name.clone(),
                class: e.class.clone(),
                value: e.value.to_string(),
                in_training: train.iter().any(|t| t.name == e.name),
                nearest: train.get(i).map(|t| t.name.clone()).unwrap_or_default(),
                nearest_class: train.get(i).map(|t| t.class.clone()).unwrap_or_default(),
                distance: d,
                nearest_other_class: other.map(|o| train[o.1].name.clone()),
                distance_other_class: other.map(|o| o.0),
            }
        })
        .collect()
}

fn read_all(paths: &[PathBuf]) -> Result<Vec<MatrixRecord>> {
    let mut out: Vec<MatrixRecord> = Vec::new();
    for p in paths {
        for r in Dataset::read(p)?.matrices {
            if r.features.len() == 18 && !out.iter().any(|o| o.name == r.name && o.value == r.value)
            {
                out.push(r);
            }
        }
    }
    Ok(out)
}

/// Runs `coverage`.
pub fn run(args: Args) -> Result<()> {
    let train = read_all(&args.train)?;
    let eval = read_all(&args.eval)?;
    if train.is_empty() || eval.is_empty() {
        bail!("no records with 18 features in the training or evaluation data");
    }
    let rows = coverage(
        &train.iter().collect::<Vec<_>>(),
        &eval.iter().collect::<Vec<_>>(),
    );
    let mut md = format!(
        "# Feature-space coverage\n\nTraining: {} records ({}); evaluation: {} records ({}). Distance: RMS over the 18 normalised features (1 = one training standard deviation per feature) to the nearest training record of another matrix, and to the nearest of another class.\n\n| matrix | class | value | in training | nearest | distance | nearest of another class | distance |\n|---|---|---|---|---|---|---|---|\n",
        train.len(),
        args.train
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
        eval.len(),
        args.eval
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    let mut sorted = rows.clone();
    sorted.sort_by(|a, b| {
        b.distance_other_class
            .unwrap_or(0.0)
            .total_cmp(&a.distance_other_class.unwrap_or(0.0))
    });
    for r in &sorted {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} ({}) | {:.2} | {} | {} |",
            r.matrix,
            r.class,
            r.value,
            r.in_training,
            r.nearest,
            r.nearest_class,
            r.distance,
            r.nearest_other_class.as_deref().unwrap_or("-"),
            r.distance_other_class
                .map_or("-".into(), |d| format!("{d:.2}")),
        );
    }
    std::fs::create_dir_all(&args.out)?;
    let json = serde_json::json!({
        "train": args.train, "eval": args.eval,
        "train_records": train.len(), "eval_records": eval.len(),
        "records": rows,
    });
    std::fs::write(
        args.out.join(format!("{}.json", args.stem)),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    std::fs::write(args.out.join(format!("{}.md", args.stem)), &md)?;
    println!(
        "coverage: {} evaluation records, written to {}/{}.{{json,md}}",
        rows.len(),
        args.out.display(),
        args.stem
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sparserl_rt::ValueType;

    fn rec(name: &str, class: &str, scale: f64) -> MatrixRecord {
        MatrixRecord {
            energy: Vec::new(),
            name: name.into(),
            class: class.into(),
            value: ValueType::F32,
            features: (0..18).map(|j| scale * (1.0 + j as f64)).collect(),
            results: Vec::new(),
            cannot_run: Vec::new(),
            provenance: None,
        }
    }

    #[test]
    fn the_nearest_training_record_is_found_and_its_own_matrix_is_skipped() {
        let train = [rec("a", "x", 1.0), rec("b", "y", 10.0), rec("c", "y", 12.0)];
        let t: Vec<&MatrixRecord> = train.iter().collect();
        let e = [rec("c", "y", 12.0), rec("d", "x", 1.1)];
        let out = coverage(&t, &e.iter().collect::<Vec<_>>());
        // c is in training but not its own neighbour: b (same class) is nearest.
        assert!(out[0].in_training);
        assert_eq!(
            (out[0].nearest.as_str(), out[0].nearest_class.as_str()),
            ("b", "y")
        );
        assert_eq!(out[0].nearest_other_class.as_deref(), Some("a"));
        assert!(out[0].distance_other_class.unwrap() > out[0].distance);
        // d sits next to a.
        assert!(!out[1].in_training);
        assert_eq!(out[1].nearest, "a");
        assert!(out[1].distance < 0.2, "{}", out[1].distance);
        assert_eq!(out[1].nearest_other_class.as_deref(), Some("b"));
    }
}
