//! Trains a policy on a measured dataset and writes the policy file.
//!
//! ```text
//! cargo run -p sparserl-policies --features train --bin train -- \
//!     --dataset policies/data/h200-round1.json.gz --out policies/policy.json \
//!     --holdout-class road-network --holdout some-matrix --seed 0 --epochs 300
//! ```

use anyhow::{Context, Result, bail};
use clap::Parser;
use sparserl_policies::dataset::Dataset;
use sparserl_policies::train::{SplitSummary, TrainConfig, train};
use std::path::PathBuf;

/// Train a SparseRL policy (REINFORCE with a learned baseline) on a dataset.
#[derive(Parser, Debug)]
struct Args {
    /// Dataset (`.json.gz` or `.json`) written by `cargo xtask collect`.
    #[arg(long, required_unless_present = "synthetic")]
    dataset: Option<PathBuf>,
    /// Further measured datasets merged into the training data (held-out
    /// matrices and classes are excluded from them too). The policy records
    /// `--dataset`'s sha256 (the evaluation dataset) and these files' hashes.
    #[arg(long = "extra-dataset", num_args = 1.., requires = "dataset")]
    extra_dataset: Vec<PathBuf>,
    /// Train on a synthetic dataset with this seed instead (development only;
    /// never commit a policy trained on it).
    #[arg(long, conflicts_with = "dataset")]
    synthetic: Option<u64>,
    /// Output policy file.
    #[arg(long)]
    out: PathBuf,
    /// Matrices held out of training, by name.
    #[arg(long, num_args = 1..)]
    holdout: Vec<String>,
    /// Structure classes held out of training.
    #[arg(long = "holdout-class", num_args = 1..)]
    holdout_class: Vec<String>,
    /// Seed (weights and episode sampling).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Policy-gradient epochs.
    #[arg(long, default_value_t = 300)]
    epochs: usize,
    /// Episodes per training record per epoch.
    #[arg(long, default_value_t = 32)]
    samples: usize,
    /// Cost-head warm-up steps.
    #[arg(long, default_value_t = 400)]
    cost_steps: usize,
    /// Adam learning rate.
    #[arg(long, default_value_t = 3e-3)]
    lr: f64,
    /// Entropy bonus weight.
    #[arg(long, default_value_t = 0.01)]
    entropy: f64,
    /// Trunk and cost-head width.
    #[arg(long, default_value_t = 64)]
    hidden: i64,
    /// Training round recorded in the policy file.
    #[arg(long, default_value_t = 0)]
    round: u32,
    /// libtorch threads (1 is bit-reproducible).
    #[arg(long, default_value_t = 1)]
    threads: i32,
    /// Weight of energy in the reward, 0 to 1 (time gets the rest); only
    /// records measured with `collect --energy-top` carry energy.
    #[arg(long, default_value_t = 0.0)]
    energy_weight: f64,
    /// Also write the per-epoch report as JSON here.
    #[arg(long)]
    report: Option<PathBuf>,
}

fn line(name: &str, s: &SplitSummary) {
    println!(
        "{name:>8}: {:>3} records | learned pick {:.3} (expected {:.3}) | uniform {:.3} | template {:.3} | prior {:.3} | cost RMSE(ln) {:.3} | predicted/measured {:.2}",
        s.records,
        s.learned_greedy,
        s.learned_expected,
        s.uniform,
        s.template_rule,
        s.prior,
        s.cost_rmse_ln,
        s.predicted_over_measured
    );
}

/// The dataset of `--dataset` (merged with every `--extra-dataset`) or
/// `--synthetic`, its sha256 (or synthetic label), and the extra files' hashes.
fn load_dataset(args: &Args) -> Result<(Dataset, String, Vec<serde_json::Value>)> {
    let mut extra_hashes = Vec::new();
    let (ds, sha) = match (&args.dataset, args.synthetic) {
        (Some(p), _) => {
            // The first file's own records say which matrices lack a layout.
            let paths: Vec<&std::path::Path> = std::iter::once(p)
                .chain(&args.extra_dataset)
                .map(|p| p.as_path())
                .collect();
            let (ds, hashes) = Dataset::read_merged(&paths)?.context("no dataset")?;
            let (sha, extra) = hashes.split_first().context("no dataset hash")?;
            extra_hashes = args
                .extra_dataset
                .iter()
                .zip(extra)
                .map(|(e, h)| serde_json::json!({"file": e.display().to_string(), "sha256": h}))
                .collect();
            (ds, sha.clone())
        }
        (None, Some(seed)) => (
            sparserl_policies::synthetic::dataset(seed, 12),
            format!("synthetic-{seed}"),
        ),
        (None, None) => bail!("--dataset or --synthetic is required"),
    };
    for n in &args.holdout {
        if !ds.matrices.iter().any(|m| &m.name == n) {
            bail!("--holdout {n}: no such matrix in the dataset");
        }
    }
    for c in &args.holdout_class {
        if !ds.matrices.iter().any(|m| &m.class == c) {
            bail!("--holdout-class {c}: no such class in the dataset");
        }
    }
    Ok((ds, sha, extra_hashes))
}

fn main() -> Result<()> {
    let args = Args::parse();
    let (ds, sha, extra_hashes) = load_dataset(&args)?;
    let cfg = TrainConfig {
        seed: args.seed,
        epochs: args.epochs,
        samples: args.samples,
        cost_steps: args.cost_steps,
        lr: args.lr,
        entropy_coef: args.entropy,
        hidden: args.hidden,
        cost_hidden: args.hidden,
        holdout_names: args.holdout.clone(),
        holdout_classes: args.holdout_class.clone(),
        round: args.round,
        dataset_sha256: sha,
        threads: args.threads,
        energy_weight: args.energy_weight,
        ..TrainConfig::default()
    };
    println!(
        "train: {} records on {} (copy {:.0} GB/s), {} variants; holdout names {:?}, classes {:?}",
        ds.matrices.len(),
        ds.gpu,
        ds.copy_gbs,
        ds.variants.len(),
        cfg.holdout_names,
        cfg.holdout_classes
    );
    let t0 = std::time::Instant::now();
    let every = (args.epochs / 20).max(1);
    let out = train(&ds, &cfg, |r| {
        if r.epoch % every == 0 || r.epoch == 1 || r.epoch == args.epochs {
            println!(
                "epoch {:>4}: train sampled {:.3} expected {:.3} | held-out expected {:.3} greedy {:.3} | entropy {:.2} | cost mse {:.3}",
                r.epoch,
                r.train_sampled,
                r.train_expected,
                r.heldout_expected,
                r.heldout_greedy,
                r.entropy,
                r.cost_mse
            );
        }
    })?;
    println!("trained in {:.1} s", t0.elapsed().as_secs_f64());
    line("train", &out.train);
    line("held-out", &out.heldout);
    println!(
        "estimated rewards (variant not measured): {:.2}% of episodes",
        100.0 * out.estimated_share
    );
    println!("held-out records: {}", out.heldout_names.join(", "));
    // Provenance: the exact command and the dataset it read.
    let mut file = out.file;
    if let Some(report) = file.report.as_object_mut() {
        let argv: Vec<String> = std::env::args().skip(1).collect();
        report.insert(
            "command".into(),
            format!(
                "cargo run --release -p sparserl-policies --features train --bin train -- {}",
                argv.join(" ")
            )
            .into(),
        );
        report.insert("extra_datasets".into(), extra_hashes.clone().into());
        report.insert(
            "dataset".into(),
            serde_json::json!({
                "file": args.dataset.as_ref().map(|p| p.display().to_string()),
                "gpu": ds.gpu,
                "date": ds.date,
                "command": ds.command,
            }),
        );
    }
    let json = serde_json::to_string(&file)?;
    if let Some(dir) = args.out.parent() {
        std::fs::create_dir_all(dir).ok();
    }
    std::fs::write(&args.out, json + "\n")
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!("wrote {}", args.out.display());
    if let Some(p) = &args.report {
        std::fs::write(p, serde_json::to_string_pretty(&out.epochs)?)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
