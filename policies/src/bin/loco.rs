//! Leave-one-class-out evaluation on measured datasets (see
//! `sparserl_policies::loco`): trains one policy per structure class
//! without it and writes `<out>/policy-loco-<name>.{json,md}`.
//!
//! ```text
//! cargo run --release -p sparserl-policies --features train --bin loco -- \
//!     --dataset policies/data/h200-round3.json.gz \
//!     --extra-dataset policies/data/h200-bench-sweep2.json.gz --name h200
//! ```

use anyhow::{Context, Result, bail};
use clap::Parser;
use sparserl_policies::dataset::Dataset;
use sparserl_policies::loco::{self, LocoRecord};
use sparserl_policies::pick::{PickRule, RiskRule};
use sparserl_policies::train::TrainConfig;
use std::path::PathBuf;

/// Leave-one-class-out evaluation of the training pipeline.
#[derive(Parser, Debug)]
struct Args {
    /// Dataset (`.json.gz`).
    #[arg(long)]
    dataset: PathBuf,
    /// Further datasets merged in (as `train --extra-dataset`).
    #[arg(long = "extra-dataset", num_args = 1..)]
    extra_dataset: Vec<PathBuf>,
    /// Output folder.
    #[arg(long, default_value = "docs/policy")]
    out: PathBuf,
    /// Report name: writes `policy-loco-<name>.json` and `.md`.
    #[arg(long, default_value = "h200")]
    name: String,
    /// Only these classes (default: every class of the data).
    #[arg(long, num_args = 1..)]
    classes: Vec<String>,
    /// Training seeds; each class is trained and judged once per seed.
    #[arg(long, num_args = 1.., default_values_t = [0u64])]
    seeds: Vec<u64>,
    /// Policy-gradient epochs per fold.
    #[arg(long, default_value_t = 120)]
    epochs: usize,
    /// Episodes per training record per epoch.
    #[arg(long, default_value_t = 16)]
    samples: usize,
    /// Cost-head warm-up steps.
    #[arg(long, default_value_t = 300)]
    cost_steps: usize,
    /// Trunk and cost-head width.
    #[arg(long, default_value_t = 64)]
    hidden: i64,
    /// An earlier report of this binary: its records of the folds asked for
    /// (same seeds and classes) are reused instead of trained again. The
    /// training settings must be the same (checked).
    #[arg(long)]
    resume: Option<PathBuf>,
    /// libtorch threads.
    #[arg(long, default_value_t = 1)]
    threads: i32,
    /// The rule whose figures head the summary (default: the shipped
    /// no-GPU pick, `spmv_records::no_gpu_pick`).
    #[arg(long, default_value = "forest-knob16")]
    primary: String,
}

/// The merged dataset and the sha256 of every file read.
fn load(args: &Args) -> Result<(Dataset, Vec<serde_json::Value>)> {
    let paths: Vec<&std::path::Path> = std::iter::once(&args.dataset)
        .chain(&args.extra_dataset)
        .map(|p| p.as_path())
        .collect();
    let (ds, hashes) = Dataset::read_merged(&paths)?.context("no dataset")?;
    let hashes = paths
        .iter()
        .zip(hashes)
        .map(|(p, h)| serde_json::json!({"file": p.display().to_string(), "sha256": h}))
        .collect();
    Ok((ds, hashes))
}

/// The records of `path` (an earlier report) for the seeds asked for.
fn resumed(path: &std::path::Path, args: &Args) -> Result<Vec<LocoRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)?;
    let t = &v["meta"]["train"];
    let same = t["epochs"] == args.epochs
        && t["samples"] == args.samples
        && t["cost_steps"] == args.cost_steps
        && t["hidden"] == args.hidden;
    if !same {
        bail!(
            "--resume {}: trained with other settings ({t})",
            path.display()
        );
    }
    let all: Vec<LocoRecord> = serde_json::from_value(v["records"].clone())?;
    Ok(all
        .into_iter()
        .filter(|r| args.seeds.contains(&r.seed))
        .collect())
}

fn main() -> Result<()> {
    let args = Args::parse();
    let (ds, hashes) = load(&args)?;
    let classes = if args.classes.is_empty() {
        loco::classes(&ds)
    } else {
        args.classes.clone()
    };
    for c in &classes {
        if !ds.matrices.iter().any(|m| &m.class == c) {
            bail!("--classes {c}: no such class in the data");
        }
    }
    let rules: Vec<(String, PickRule)> = vec![
        ("argmax".into(), PickRule::Argmax),
        ("risk".into(), PickRule::Risk(RiskRule::DEFAULT)),
        // The default before it took the first 3 proposals only.
        (
            "risk-c8".into(),
            PickRule::Risk(RiskRule {
                candidates: 8,
                ..RiskRule::DEFAULT
            }),
        ),
    ];
    let names: Vec<String> = rules
        .iter()
        .map(|r| r.0.clone())
        .chain(loco::NEIGHBOUR_RULES.iter().map(|s| s.to_string()))
        .collect();
    if !names.contains(&args.primary) {
        bail!(
            "--primary {}: not a rule of the report ({})",
            args.primary,
            names.join(", ")
        );
    }
    let primary = args.primary.as_str();
    println!(
        "loco: {} records, {} classes, seeds {:?}, {} epochs x {} samples",
        ds.matrices.len(),
        classes.len(),
        args.seeds,
        args.epochs,
        args.samples
    );
    let t0 = std::time::Instant::now();
    let mut records: Vec<LocoRecord> = match &args.resume {
        Some(p) => resumed(p, &args)?,
        None => Vec::new(),
    };
    for &seed in &args.seeds {
        let base = TrainConfig {
            seed,
            epochs: args.epochs,
            samples: args.samples,
            cost_steps: args.cost_steps,
            hidden: args.hidden,
            cost_hidden: args.hidden,
            threads: args.threads,
            ..TrainConfig::default()
        };
        for c in &classes {
            if records.iter().any(|r| r.seed == seed && &r.class == c) {
                println!(
                    "  seed {seed} {c}: reused from {}",
                    args.resume
                        .as_ref()
                        .map(|p| p.display().to_string())
                        .unwrap_or_default()
                );
                continue;
            }
            let recs = loco::fold(&ds, c, &base, &rules)?;
            for r in &recs {
                let z: Vec<String> = r
                    .zero_shot
                    .iter()
                    .map(|(k, v)| format!("{k} {:.3}", v.1))
                    .collect();
                println!(
                    "  [{:>5.0}s] seed {seed} {c:<22} {:<28} {} {:<5} {} | template {:.3} | first16 {:.3} | first16, records first {:.3}",
                    t0.elapsed().as_secs_f64(),
                    r.matrix,
                    r.value,
                    r.size,
                    z.join(" "),
                    r.template,
                    r.first16,
                    r.first16_knn
                );
            }
            records.extend(recs);
        }
    }
    let meta = serde_json::json!({
        "command": format!("cargo run -p sparserl-policies --features train --bin loco -- {}", std::env::args().skip(1).collect::<Vec<_>>().join(" ")),
        "datasets": hashes,
        "gpu": ds.gpu,
        "seeds": args.seeds,
        "train": {"epochs": args.epochs, "samples": args.samples, "cost_steps": args.cost_steps, "hidden": args.hidden, "threads": args.threads},
        "rules": {
            "argmax": "most probable variant",
            "risk": format!("{:?}", RiskRule::DEFAULT),
            "risk-c8": format!("{:?}", RiskRule { candidates: 8, ..RiskRule::DEFAULT }),
            "knn8": "the variant with the best mean measured fraction of the oracle over the 8 training records nearest in feature space (same value type)",
            "knn8-cautious": "as knn8, scoring mean minus half the standard deviation over the neighbours",
            "policy8-knn8": "among the learned policy's first 8 proposals, the best mean over the 8 nearest training records",
            "risk-knn8-m0.1": "the default rule's pick, unless the knn8 pick's mean over the 8 nearest training records beats the default pick's by more than 0.1",
            "risk-knn8-m0.25": "as risk-knn8-m0.1 with a margin of 0.25",
            "unsure0.2-knn8": "the knn8 pick when the learned policy's most probable variant has probability below 0.2, else the default rule's pick",
            "unsure0.4-knn8": "as unsure0.2-knn8 below 0.4",
            "near1.5-knn8": "the knn8 pick when the 8 nearest training records lie within a mean standardised distance of 1.5, else the default rule's pick",
            "near2.5-knn8": "as near1.5-knn8 within 2.5",
            "forest": "the runnable variant the records' forest (sparserl_policies::forest_pick, trained on the training records) predicts best",
            "forest-knob16": "the runnable variant with the best mean of the forest's and knob-knn16's scores (log fractions), through the shipped no-GPU pick",
            "unsure0.4-forest": "the forest pick when the learned policy's most probable variant has probability below 0.4, else the default rule's pick",
            "unsure0.4-forest-knob16": "the forest-knob16 pick when the learned policy's most probable variant has probability below 0.4, else the default rule's pick",
        },
        "large_bytes": loco::LARGE_BYTES,
        "seconds": t0.elapsed().as_secs_f64(),
    });
    let report = loco::report(&records, &names, primary, meta);
    std::fs::create_dir_all(&args.out)?;
    let stem = args.out.join(format!("policy-loco-{}", args.name));
    std::fs::write(
        stem.with_extension("json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let md = loco::report::markdown(
        &format!("Leave-one-class-out evaluation ({})", args.name),
        &report,
        &names,
    );
    std::fs::write(stem.with_extension("md"), &md)?;
    println!(
        "{md}\nwrote {}.json and .md in {:.0} s",
        stem.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
