//! `cargo xtask train` and `cargo xtask eval-policy`.
//!
//! `train` installs libtorch into `.tools/torch` when missing (PyPI wheels)
//! and runs the training binary of `sparserl-policies` (feature `train`) with
//! `LIBTORCH` set, so xtask itself never links libtorch. Without arguments
//! it reruns the command that produced the committed `policies/policy.json`.
//!
//! `eval-policy` (no libtorch): on the held-out matrices recorded in the
//! committed policy, it reads measured GB/s from H200 sweeps and the cuSPARSE
//! numbers from the benchmark JSON (with `--measure`, it first benchmarks the
//! held-out matrices itself), and compares the policy's zero-shot pick, the
//! best of the first k candidates the measured search takes (the policy's
//! proposals with the layout strategies inserted where the matrix has their
//! layout), the template rule, the analytic prior, the oracle and cuSPARSE.

use crate::common::{geomean, workspace_root};
use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sparserl_build::search::{LAYOUT_AFTER, layout_proposals};
use sparserl_policies::dataset::{Dataset, MatrixRecord};
use sparserl_policies::{LearnedPolicy, Policy, Prior, Proposal, template_rule};
use sparserl_rt::{Features, Variant};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// libtorch wheels (the CPU part of the torch wheel is enough; its libraries
/// also link the CUDA runtime and CUPTI from the two small wheels).
pub const TORCH_WHEELS: &[&str] = &[
    "torch==2.13.0",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-cupti==13.0.85",
];

/// Arguments of the command that trained the committed `policies/policy.json`
/// (used by `cargo xtask train` without arguments).
pub const COMMITTED_TRAIN_ARGS: &[&str] = &[
    "--dataset",
    "policies/data/h200-round3.json.gz",
    "--extra-dataset",
    "policies/data/h200-bench-sweep2.json.gz",
    "policies/data/h200-large-sweep3.json.gz",
    "policies/data/h200-large4.json.gz",
    "--out",
    "policies/policy.json",
    "--holdout-class",
    "road-network",
    "--holdout",
    "email-Enron",
    "wiki-Vote",
    "polblogs",
    "powerlaw-400k-d16-e2.1",
    "bcsstk16",
    "cti",
    "uniform-500k-d8",
    "--seed",
    "0",
    "--epochs",
    "300",
    "--round",
    "4",
];

/// Installs libtorch into `.tools/torch` unless present; returns `LIBTORCH`
/// (an absolute path).
pub fn provision_torch() -> Result<PathBuf> {
    let target = workspace_root().join(".tools/torch");
    let libtorch = target.join("torch");
    if libtorch.join("lib/libtorch_cpu.so").exists() {
        eprintln!("provision: libtorch present in {}", libtorch.display());
        return Ok(libtorch);
    }
    eprintln!(
        "provision: installing {} into {} (about 1.3 GB)",
        TORCH_WHEELS.join(" "),
        target.display()
    );
    crate::provision::pip_install(&target, TORCH_WHEELS)?;
    if !libtorch.join("lib/libtorch_cpu.so").exists() {
        bail!(
            "the wheels did not provide {}",
            libtorch.join("lib/libtorch_cpu.so").display()
        );
    }
    Ok(libtorch)
}

/// Arguments of `cargo xtask train`.
#[derive(clap::Args, Debug)]
pub struct TrainArgs {
    /// Arguments for the training binary (see `policies/README.md`); none:
    /// the command that trained the committed `policies/policy.json`.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// Arguments of the leave-one-class-out run whose report is committed as
/// `docs/policy/policy-loco-h200-committed-data.{json,md}` (used by
/// `cargo xtask policy-loco` without arguments): the committed policy's
/// datasets, three seeds, training sized for a small CPU.
pub const COMMITTED_LOCO_ARGS: &[&str] = &[
    "--dataset",
    "policies/data/h200-round3.json.gz",
    "--extra-dataset",
    "policies/data/h200-bench-sweep2.json.gz",
    "policies/data/h200-large-sweep3.json.gz",
    "policies/data/h200-large4.json.gz",
    "--out",
    "docs/policy",
    "--name",
    "h200-committed-data",
    "--seeds",
    "0",
    "1",
    "2",
    "--epochs",
    "100",
    "--samples",
    "16",
    "--cost-steps",
    "300",
];

/// Provisions libtorch and runs the training binary.
pub fn train(args: TrainArgs) -> Result<()> {
    run_policies_bin("train", args, COMMITTED_TRAIN_ARGS)
}

/// Provisions libtorch and runs the leave-one-class-out binary (arguments
/// as `policies/src/bin/loco.rs`; none: [`COMMITTED_LOCO_ARGS`]).
pub fn loco(args: TrainArgs) -> Result<()> {
    run_policies_bin("loco", args, COMMITTED_LOCO_ARGS)
}

/// Runs a binary of `sparserl-policies` (feature `train`) with `LIBTORCH`
/// set, with `args` or else `default`.
fn run_policies_bin(bin: &str, args: TrainArgs, default: &[&str]) -> Result<()> {
    let libtorch = provision_torch()?;
    let train_args: Vec<String> = if args.args.is_empty() {
        default.iter().map(|s| s.to_string()).collect()
    } else {
        args.args
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd_args: Vec<String> = [
        "run",
        "--release",
        "-p",
        "sparserl-policies",
        "--features",
        "train",
        "--bin",
        bin,
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    cmd_args.extend(train_args);
    eprintln!(
        "xtask train: LIBTORCH={} cargo {}",
        libtorch.display(),
        cmd_args.join(" ")
    );
    let status = Command::new(cargo)
        .args(&cmd_args)
        .env("LIBTORCH", &libtorch)
        .current_dir(workspace_root())
        .status()
        .context("running cargo")?;
    if !status.success() {
        bail!("{bin} failed");
    }
    Ok(())
}

/// Arguments of `cargo xtask eval-policy`.
#[derive(clap::Args, Debug)]
pub struct EvalArgs {
    /// Policy file (its metadata names the held-out matrices).
    #[arg(long, default_value = "policies/policy.json")]
    pub policy: PathBuf,
    /// Measured dataset (every variant per matrix; the default, round 3's
    /// training data, measured the whole space, SELL-C-sigma included, on
    /// every held-out matrix of the policy).
    #[arg(long, default_value = "policies/data/h200-round3.json.gz")]
    pub dataset: PathBuf,
    /// The benchmark's oracle sweep (same run as the cuSPARSE numbers).
    #[arg(long, default_value = "policies/data/h200-bench-sweep2.json.gz")]
    pub sweep: PathBuf,
    /// Benchmark JSON with the cuSPARSE numbers.
    #[arg(long, default_value = "docs/benchmarks/spmv-h200.json")]
    pub bench: PathBuf,
    /// Output folder.
    #[arg(long, default_value = "docs/policy")]
    pub out: PathBuf,
    /// Output file stem (`.md`, `.json`, `.svg`).
    #[arg(long, default_value = "policy-eval-h200")]
    pub stem: String,
    /// Measure instead of reading recorded files (needs a GPU): benchmark the
    /// held-out matrices now (every core variant, the template rule, the
    /// shipped search and every cuSPARSE algorithm, through `xtask bench`),
    /// write `<stem>-bench.*` and `<stem>-sweep.json.gz` into `--out`, and
    /// evaluate on those; `--dataset`, `--sweep` and `--bench` are ignored.
    #[arg(long)]
    pub measure: bool,
    /// With `--measure`: folder of the real matrices (as for `bench`).
    #[arg(long)]
    pub matrices: Option<PathBuf>,
    /// With `--measure`: time guard in seconds for the benchmark.
    #[arg(long, default_value_t = 400.0)]
    pub max_seconds: f64,
}

/// A summary column: GB/s of one choice on a record.
type Column = Box<dyn Fn(&EvalRow) -> Option<f64>>;

/// Proposal counts of the measured top-k searches.
const TOP_K: [usize; 3] = [1, 4, 16];
/// Proposals the benchmark's search gets from the policy.
const PROPOSALS: usize = 16;

/// One held-out record.
#[derive(Debug, Clone, Serialize)]
struct EvalRow {
    matrix: String,
    class: String,
    value: String,
    nnz: f64,
    cv_row: f64,
    oracle_gbs: f64,
    oracle_variant: String,
    zero_shot_variant: String,
    zero_shot_gbs: Option<f64>,
    zero_shot_predicted_gbs: f64,
    /// The risk-adjusted pick, which a build without a GPU uses where the
    /// policy is sure (elsewhere the embedded records decide, and they hold
    /// these matrices, so that part is judged leave-one-class-out only),
    /// and its measured GB/s.
    no_gpu_variant: String,
    no_gpu_gbs: Option<f64>,
    /// Best measured GB/s among the first k candidates of the search (see
    /// [`search_order`]), for k in [`TOP_K`].
    top_k_gbs: BTreeMap<String, Option<f64>>,
    template_variant: String,
    template_gbs: Option<f64>,
    prior_variant: String,
    prior_gbs: Option<f64>,
    /// From the benchmark run (absent when the matrix is not in it).
    cusparse: Option<CusparseCmp>,
}

/// cuSPARSE against the policy, all from the benchmark run.
#[derive(Debug, Clone, Serialize)]
struct CusparseCmp {
    alg: String,
    gbs: f64,
    /// Best of the benchmark's 150-variant sweep (the same run).
    bench_oracle_gbs: f64,
    /// The zero-shot pick measured in the benchmark's sweep.
    zero_shot_bench_gbs: Option<f64>,
}

pub(crate) fn sha256_file(p: &Path) -> Result<String> {
    let bytes = std::fs::read(p).with_context(|| format!("reading {}", p.display()))?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Measured GB/s of `v` on `rec` (canonical match); `None` when not
/// measured or incorrect.
pub(crate) fn measured(ds: &Dataset, rec: &MatrixRecord, v: &Variant) -> Option<f64> {
    let c = v.canonical();
    rec.results
        .iter()
        .find(|r| ds.variants.get(r.0).map(|x| x.canonical()) == Some(c))
        .filter(|r| r.3 && r.1 > 0.0)
        .map(|r| r.1)
}

pub(crate) fn oracle_variant(ds: &Dataset, rec: &MatrixRecord) -> String {
    rec.results
        .iter()
        .filter(|r| r.3)
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .and_then(|r| ds.variants.get(r.0))
        .map(|v| v.to_string())
        .unwrap_or_else(|| "-".into())
}

/// The policy's proposals that `rec`'s matrix can run, best first: the
/// first is the zero-shot pick. A matrix cannot run a strategy whose layout
/// it lacks (SELL-C-sigma), as a sweep shows by measuring every variant that
/// can run ([`Dataset::infer_cannot_run`]); the search skips such proposals
/// the same way (`MeasureSource::applicable`).
pub(crate) fn runnable(ds: &Dataset, rec: &MatrixRecord, props: &[Proposal]) -> Vec<Variant> {
    let cannot = ds.infer_cannot_run(rec);
    props
        .iter()
        .map(|p| p.variant)
        .filter(|v| !cannot.contains(&v.strategy))
        .collect()
}

/// The first candidates the product's measured search takes for `rec`: the
/// policy's proposals it can run with the layout proposals inserted after
/// the first [`LAYOUT_AFTER`] of them (`sparserl_build::search`), the layout
/// ones only where the record's matrix has the layout (the sweeps measure a
/// layout variant exactly where it applies).
pub(crate) fn search_order(ds: &Dataset, rec: &MatrixRecord, props: &[Proposal]) -> Vec<Variant> {
    let policy = runnable(ds, rec, props);
    let in_record = |v: &Variant| {
        let c = v.canonical();
        rec.results
            .iter()
            .any(|r| ds.variants.get(r.0).map(|x| x.canonical()) == Some(c))
    };
    let head = policy.len().min(LAYOUT_AFTER);
    let mut out: Vec<Variant> = policy[..head].to_vec();
    for v in layout_proposals(&policy) {
        if in_record(&v) && !out.contains(&v) {
            out.push(v);
        }
    }
    for v in &policy[head..] {
        if !out.contains(v) {
            out.push(*v);
        }
    }
    out
}

/// Geometric mean of the `Some` values and how many there were.
fn gm(xs: impl Iterator<Item = Option<f64>>) -> (f64, usize) {
    let v: Vec<f64> = xs.flatten().filter(|x| *x > 0.0).collect();
    (geomean(&v), v.len())
}

/// Runs the evaluation (offline from recorded files, or measuring first with
/// `--measure`) and writes the report.
pub fn eval(mut args: EvalArgs) -> Result<()> {
    let root = workspace_root();
    if args.measure {
        let policy_path = if args.policy.is_absolute() {
            args.policy.clone()
        } else {
            root.join(&args.policy)
        };
        let meta = LearnedPolicy::load(&policy_path)
            .map_err(|e| anyhow!("loading {}: {e}", policy_path.display()))?
            .file()
            .clone();
        let stem = format!("{}-bench", args.stem);
        let sweep = args.out.join(format!("{}-sweep.json.gz", args.stem));
        println!(
            "eval-policy: measuring the held-out matrices {:?} and classes {:?}",
            meta.holdout_names, meta.holdout_classes
        );
        crate::bench::run(crate::bench::Args {
            op: None,
            suite: crate::bench::SuiteArg::Real,
            value: crate::bench::ValueArg::Both,
            large_value: crate::bench::ValueArg::F32,
            matrices: args.matrices.clone(),
            out: args.out.clone(),
            budget_large: 6.0,
            budget_real: 2.0,
            quick: false,
            max_seconds: args.max_seconds,
            dataset: Some(sweep.clone()),
            sweep_reps: 10,
            reps: 50,
            only: meta
                .holdout_names
                .iter()
                .chain(&meta.holdout_classes)
                .cloned()
                .collect(),
            corpus: vec!["all".into()],
            stem: stem.clone(),
            commit: "unknown".into(),
            no_oracle: false,
            no_gather: false,
            render: None,
        })?;
        args.dataset = sweep.clone();
        args.sweep = sweep;
        args.bench = args.out.join(format!("{stem}.json"));
    }
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        }
    };
    let (policy_path, ds_path, sweep_path, bench_path, out_dir) = (
        abs(&args.policy),
        abs(&args.dataset),
        abs(&args.sweep),
        abs(&args.bench),
        abs(&args.out),
    );
    let policy = LearnedPolicy::load(&policy_path)
        .map_err(|e| anyhow!("loading {}: {e}", policy_path.display()))?;
    let meta = policy.file().clone();
    let ds = Dataset::read(&ds_path)?;
    let ds_sha = sha256_file(&ds_path)?;
    if meta.dataset_sha256 != ds_sha {
        eprintln!(
            "eval-policy: warning: the policy was trained on dataset sha256 {}, {} has {}",
            meta.dataset_sha256,
            args.dataset.display(),
            ds_sha
        );
    }
    let sweep = Dataset::read(&sweep_path)?;
    let bench: Value = serde_json::from_str(
        &std::fs::read_to_string(&bench_path)
            .with_context(|| format!("reading {}", bench_path.display()))?,
    )
    .with_context(|| format!("parsing {}", bench_path.display()))?;
    let bench_rows = bench["rows"].as_array().cloned().unwrap_or_default();

    let held = |r: &MatrixRecord| {
        meta.holdout_names.contains(&r.name) || meta.holdout_classes.contains(&r.class)
    };
    let mut recs: Vec<&MatrixRecord> = ds
        .matrices
        .iter()
        .filter(|r| held(r) && r.best_gbs() > 0.0)
        .collect();
    if recs.is_empty() {
        bail!("no held-out records of the policy in {}", ds_path.display());
    }
    recs.sort_by(|a, b| (&a.class, &a.name, a.value).cmp(&(&b.class, &b.name, b.value)));

    let mut rows = Vec::new();
    for rec in recs {
        let f = Features::from_slice(&rec.features);
        let props = policy.propose(&f, rec.value, PROPOSALS);
        let Some(&pick) = runnable(&ds, rec, &props).first() else {
            bail!("{}: none of the policy's proposals can run", rec.name);
        };
        let cannot = ds.infer_cannot_run(rec);
        // What a build without a GPU uses where the policy is sure.
        let no_gpu = policy
            .pick_with(
                &f,
                rec.value,
                &sparserl_policies::pick::DEFAULT_RULE,
                &|v| !cannot.contains(&v.strategy),
            )
            .map_or(pick, |p| p.variant);
        let order = search_order(&ds, rec, &props);
        let top_k_gbs = TOP_K
            .iter()
            .map(|&k| {
                let best = order
                    .iter()
                    .take(k)
                    .filter_map(|v| measured(&ds, rec, v))
                    .fold(None, |acc: Option<f64>, g| {
                        Some(acc.map_or(g, |a| a.max(g)))
                    });
                (format!("top{k}"), best)
            })
            .collect();
        let template = template_rule(&f);
        let prior = Prior.propose(&f, rec.value, 1)[0].variant;
        let value = rec.value.to_string();
        let cusparse = bench_rows
            .iter()
            .find(|b| b["matrix"] == rec.name.as_str() && b["value"] == value.as_str())
            .and_then(|b| {
                let gbs = b["cusparse_gbs"].as_f64()?;
                let in_sweep = sweep
                    .matrices
                    .iter()
                    .find(|m| m.name == rec.name && m.value == rec.value);
                Some(CusparseCmp {
                    alg: b["cusparse_alg"].as_str().unwrap_or("?").to_string(),
                    gbs,
                    bench_oracle_gbs: in_sweep
                        .map(|m| m.best_gbs())
                        .filter(|g| *g > 0.0)
                        .or_else(|| b["oracle_gbs"].as_f64())
                        .unwrap_or(0.0),
                    zero_shot_bench_gbs: in_sweep.and_then(|m| measured(&sweep, m, &pick)),
                })
            });
        rows.push(EvalRow {
            matrix: rec.name.clone(),
            class: rec.class.clone(),
            value,
            nnz: f.nnz,
            cv_row: f.cv_row,
            oracle_gbs: rec.best_gbs(),
            oracle_variant: oracle_variant(&ds, rec),
            zero_shot_variant: pick.to_string(),
            zero_shot_gbs: measured(&ds, rec, &pick),
            zero_shot_predicted_gbs: policy.predicted_gbs(&f, rec.value, &pick),
            no_gpu_variant: no_gpu.to_string(),
            no_gpu_gbs: measured(&ds, rec, &no_gpu),
            top_k_gbs,
            template_variant: template.to_string(),
            template_gbs: measured(&ds, rec, &template),
            prior_variant: prior.to_string(),
            prior_gbs: measured(&ds, rec, &prior),
            cusparse,
        });
    }

    // Summary: geomeans of GB/s and of fractions of the oracle.
    let norm = |r: &EvalRow, g: Option<f64>| g.map(|g| g / r.oracle_gbs);
    let columns: Vec<(String, Column)> = {
        let mut c: Vec<(String, Column)> =
            vec![("zero_shot".into(), Box::new(|r: &EvalRow| r.zero_shot_gbs))];
        c.push(("no_gpu".into(), Box::new(|r: &EvalRow| r.no_gpu_gbs)));
        for k in TOP_K {
            let key = format!("top{k}");
            c.push((
                key.clone(),
                Box::new(move |r: &EvalRow| r.top_k_gbs.get(&key).copied().flatten()),
            ));
        }
        c.push(("template".into(), Box::new(|r: &EvalRow| r.template_gbs)));
        c.push(("prior".into(), Box::new(|r: &EvalRow| r.prior_gbs)));
        c.push(("oracle".into(), Box::new(|r: &EvalRow| Some(r.oracle_gbs))));
        c
    };
    let mut geo_norm = BTreeMap::new();
    let mut geo_gbs = BTreeMap::new();
    let mut missing = BTreeMap::new();
    for (name, get) in &columns {
        let (g, n) = gm(rows.iter().map(|r| norm(r, get(r))));
        geo_norm.insert(name.clone(), g);
        geo_gbs.insert(name.clone(), gm(rows.iter().map(get)).0);
        missing.insert(name.clone(), rows.len() - n);
    }
    let with_cu: Vec<&EvalRow> = rows.iter().filter(|r| r.cusparse.is_some()).collect();
    let cu = |r: &EvalRow| r.cusparse.clone().expect("filtered");
    let (cu_norm, _) = gm(with_cu.iter().map(|r| {
        let c = cu(r);
        (c.bench_oracle_gbs > 0.0).then(|| c.gbs / c.bench_oracle_gbs)
    }));
    let (cu_gbs, _) = gm(with_cu.iter().map(|r| Some(cu(r).gbs)));
    let (zs_over_cu, zs_cu_n) = gm(with_cu
        .iter()
        .map(|r| cu(r).zero_shot_bench_gbs.map(|z| z / cu(r).gbs)));
    let (oracle_over_cu, _) = gm(with_cu.iter().map(|r| {
        let c = cu(r);
        Some(c.bench_oracle_gbs / c.gbs)
    }));
    let irregular: Vec<&EvalRow> = rows.iter().filter(|r| r.cv_row > 1.0).collect();
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    let (irr_zs_tpl, irr_n) = gm(irregular
        .iter()
        .map(|r| ratio(r.zero_shot_gbs, r.template_gbs)));
    let (all_zs_tpl, _) = gm(rows.iter().map(|r| ratio(r.zero_shot_gbs, r.template_gbs)));
    let (irr_zs_norm, _) = gm(irregular.iter().map(|r| norm(r, r.zero_shot_gbs)));
    let (irr_tpl_norm, _) = gm(irregular.iter().map(|r| norm(r, r.template_gbs)));
    let held_matrices: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r.matrix.as_str()).collect();

    let summary = json!({
        "records": rows.len(),
        "matrices": held_matrices.len(),
        "geomean_fraction_of_oracle": geo_norm,
        "geomean_gbs": geo_gbs,
        "records_without_correct_measurement": missing,
        "zero_shot_over_template": all_zs_tpl,
        "cv_row_gt_1": {
            "records": irr_n,
            "zero_shot_over_template": irr_zs_tpl,
            "zero_shot_fraction_of_oracle": irr_zs_norm,
            "template_fraction_of_oracle": irr_tpl_norm,
        },
        "cusparse": {
            "records": with_cu.len(),
            "cusparse_fraction_of_bench_oracle": cu_norm,
            "cusparse_gbs": cu_gbs,
            "zero_shot_over_cusparse": zs_over_cu,
            "zero_shot_over_cusparse_records": zs_cu_n,
            "oracle_over_cusparse": oracle_over_cu,
        },
    });
    let sources = json!({
        "policy": {
            "file": args.policy.display().to_string(),
            "sha256": sha256_file(&policy_path)?,
            "round": meta.round,
            "gpu": meta.gpu,
            "dataset_sha256": meta.dataset_sha256,
            "holdout_names": meta.holdout_names,
            "holdout_classes": meta.holdout_classes,
            "seed": meta.seed,
            "algorithm": meta.algorithm,
        },
        "dataset": {
            "file": args.dataset.display().to_string(),
            "sha256": ds_sha,
            "gpu": ds.gpu,
            "date": ds.date,
            "command": ds.command,
        },
        "sweep": {
            "file": args.sweep.display().to_string(),
            "sha256": sha256_file(&sweep_path)?,
            "gpu": sweep.gpu,
            "date": sweep.date,
            "command": sweep.command,
        },
        "bench": {
            "file": args.bench.display().to_string(),
            "gpu": bench["gpu"],
            "date": bench["date"],
            "command": bench["command"],
        },
    });
    let report = json!({
        "note": if args.measure {
            "Every GB/s was measured in this run (`eval-policy --measure`: the benchmark of the held-out matrices named in `sources`, with a sweep of every core variant and every cuSPARSE algorithm); nothing is estimated except `zero_shot_predicted_gbs`, the policy's own prediction, shown for reference."
        } else {
            "Every GB/s is a measurement taken on an H200 machine (the datasets and benchmark named in `sources`), combined offline; nothing is estimated except `zero_shot_predicted_gbs`, the policy's own prediction, shown for reference."
        },
        "sources": sources,
        "summary": summary,
        "rows": rows,
    });
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let json_path = out_dir.join(format!("{}.json", args.stem));
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    let svg_path = out_dir.join(format!("{}.svg", args.stem));
    render_svg(&rows, &svg_path)?;
    let md_path = out_dir.join(format!("{}.md", args.stem));
    let md = markdown(&args, &report, &rows, &format!("{}.svg", args.stem));
    std::fs::write(&md_path, md).with_context(|| format!("writing {}", md_path.display()))?;

    println!(
        "held-out: {} records ({} matrices); geomean fraction of oracle: zero-shot {:.3}, no-GPU pick {:.3}, top-1 {:.3}, top-4 {:.3}, top-16 {:.3}, template {:.3}, prior {:.3}",
        rows.len(),
        held_matrices.len(),
        geo_norm["zero_shot"],
        geo_norm["no_gpu"],
        geo_norm["top1"],
        geo_norm["top4"],
        geo_norm["top16"],
        geo_norm["template"],
        geo_norm["prior"]
    );
    println!(
        "cv_row > 1: {irr_n} records, zero-shot / template {irr_zs_tpl:.3}; vs cuSPARSE ({} records, same benchmark run): zero-shot / cuSPARSE {zs_over_cu:.3}, oracle / cuSPARSE {oracle_over_cu:.3}",
        with_cu.len()
    );
    println!(
        "wrote {}, {}, {}",
        md_path.display(),
        json_path.display(),
        svg_path.display()
    );
    Ok(())
}

fn markdown(args: &EvalArgs, report: &Value, rows: &[EvalRow], svg: &str) -> String {
    let s = &report["summary"];
    let src = &report["sources"];
    let p = &src["policy"];
    let f = |v: &Value| v.as_f64().map(|x| format!("{x:.3}")).unwrap_or("-".into());
    let g = |v: &Value| v.as_f64().map(|x| format!("{x:.0}")).unwrap_or("-".into());
    let mut out = String::new();
    let _ = writeln!(out, "# Learned policy on held-out matrices (H200)\n");
    let how = if args.measure {
        "measured in one run of `cargo xtask eval-policy --measure` (the held-out matrices \
         benchmarked, then evaluated)"
    } else {
        "combined offline by `cargo xtask eval-policy` from recorded runs"
    };
    let _ = writeln!(
        out,
        "Every GB/s below is a **measurement taken on an H200 machine**, {how}; nothing is \
         estimated (the one exception, the policy's own predicted GB/s of its pick, is labelled \
         as a prediction). Sources:\n"
    );
    let _ = writeln!(
        out,
        "- measured dataset `{}` ({}, {}; `{}`; sha256 `{}`): every variant of the design space that \
         applies, per matrix and value type;",
        args.dataset.display(),
        src["dataset"]["gpu"].as_str().unwrap_or("?"),
        src["dataset"]["date"].as_str().unwrap_or("?"),
        src["dataset"]["command"].as_str().unwrap_or("?"),
        src["dataset"]["sha256"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        out,
        "- the benchmark `{}` ({}, {}; `{}`) for cuSPARSE (best of its CSR algorithms) and its \
         oracle sweep `{}` ({}) for our variants in the same run;",
        args.bench.display(),
        src["bench"]["gpu"].as_str().unwrap_or("?"),
        src["bench"]["date"].as_str().unwrap_or("?"),
        src["bench"]["command"].as_str().unwrap_or("?"),
        args.sweep.display(),
        src["sweep"]["date"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        out,
        "- the policy `{}` (round {}, seed {}, trained on dataset sha256 `{}`, policy sha256 `{}`).\n",
        args.policy.display(),
        p["round"],
        p["seed"],
        p["dataset_sha256"].as_str().unwrap_or("?"),
        p["sha256"].as_str().unwrap_or("?")
    );
    let names: Vec<String> = p["holdout_names"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let classes: Vec<String> = p["holdout_classes"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "Held out of training (no loss, no feature normalisation): classes {}; matrices {}. \
         That is {} records ({} matrices, f32 and f64).\n",
        classes.join(", "),
        names.join(", "),
        s["records"],
        s["matrices"]
    );
    let _ = writeln!(out, "## Summary (geomeans over the held-out records)\n");
    let _ = writeln!(
        out,
        "| choice | fraction of oracle | GB/s |\n|---|---:|---:|"
    );
    let labels = [
        ("zero_shot", "policy, zero-shot pick (no search)"),
        (
            "no_gpu",
            "policy, risk-adjusted pick (a no-GPU build's where the policy is sure)",
        ),
        ("top1", "policy, top-1 (measured)"),
        (
            "top4",
            "policy + search, best of the first 4 candidates the search measures",
        ),
        (
            "top16",
            "policy + search, best of the first 16 candidates the search measures",
        ),
        ("template", "template rule (lanes from the mean row length)"),
        ("prior", "analytic prior, first proposal"),
        (
            "oracle",
            "oracle (best of every variant measured: core and layout spaces)",
        ),
    ];
    for (k, label) in labels {
        let _ = writeln!(
            out,
            "| {label} | {} | {} |",
            f(&s["geomean_fraction_of_oracle"][k]),
            g(&s["geomean_gbs"][k])
        );
    }
    let c = &s["cusparse"];
    let _ = writeln!(
        out,
        "| cuSPARSE, best algorithm (benchmark run; fraction of that run's sweep oracle) | {} | {} |\n",
        f(&c["cusparse_fraction_of_bench_oracle"]),
        g(&c["cusparse_gbs"])
    );
    let irr = &s["cv_row_gt_1"];
    let _ = writeln!(
        out,
        "- Zero-shot / template rule: {} on all held-out records; **{}** on the {} records with \
         row-length cv > 1 (zero-shot {} vs template {} of the oracle there).",
        f(&s["zero_shot_over_template"]),
        f(&irr["zero_shot_over_template"]),
        irr["records"],
        f(&irr["zero_shot_fraction_of_oracle"]),
        f(&irr["template_fraction_of_oracle"])
    );
    let _ = writeln!(
        out,
        "- Against cuSPARSE ({} held-out records present in the benchmark; both sides measured in \
         the same benchmark run): zero-shot pick / cuSPARSE {}, oracle / cuSPARSE {}.\n",
        c["records"],
        f(&c["zero_shot_over_cusparse"]),
        f(&c["oracle_over_cusparse"])
    );
    let _ = writeln!(out, "![fraction of oracle per held-out record]({svg})\n");
    let _ = writeln!(out, "## Per record\n");
    let _ = writeln!(
        out,
        "GB/s (fraction of the oracle). cuSPARSE and \"zero-shot (bench)\" come from the \
         benchmark run (fractions of the best of its 150-variant sweep); the other columns from the \
         measured dataset.\n"
    );
    let _ = writeln!(
        out,
        "| matrix | class | value | cv_row | oracle | zero-shot pick | zero-shot | top-4 | top-16 | template | prior | cuSPARSE | zero-shot (bench) |\n|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
    );
    let cell = |gb: Option<f64>, den: f64| match gb {
        Some(x) => format!("{x:.0} ({:.2})", x / den),
        None => "-".into(),
    };
    for r in rows {
        let (cu, zb) = match &r.cusparse {
            Some(c) => (
                format!("{:.0} ({:.2})", c.gbs, c.gbs / c.bench_oracle_gbs.max(1e-9)),
                cell(c.zero_shot_bench_gbs, c.bench_oracle_gbs.max(1e-9)),
            ),
            None => ("-".into(), "-".into()),
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.2} | {:.0} | `{}` | {} | {} | {} | {} | {} | {} | {} |",
            r.matrix,
            r.class,
            r.value,
            r.cv_row,
            r.oracle_gbs,
            r.zero_shot_variant,
            cell(r.zero_shot_gbs, r.oracle_gbs),
            cell(r.top_k_gbs["top4"], r.oracle_gbs),
            cell(r.top_k_gbs["top16"], r.oracle_gbs),
            cell(r.template_gbs, r.oracle_gbs),
            cell(r.prior_gbs, r.oracle_gbs),
            cu,
            zb
        );
    }
    let _ = writeln!(
        out,
        "\nReproduce: `cargo xtask eval-policy` (offline, no GPU). Machine-readable: `{}.json`.",
        args.stem
    );
    out
}

/// Per held-out record: zero-shot, top-16 and template GB/s as fractions of
/// the oracle.
fn render_svg(rows: &[EvalRow], path: &Path) -> Result<()> {
    use plotters::prelude::*;
    let n = rows.len();
    let series = |get: &dyn Fn(&EvalRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .enumerate()
            .filter_map(|(i, r)| get(r).map(|g| (i as f64, g / r.oracle_gbs)))
            .collect()
    };
    let zs = series(&|r| r.zero_shot_gbs);
    let t16 = series(&|r| r.top_k_gbs["top16"]);
    let tpl = series(&|r| r.template_gbs);
    let labels: Vec<String> = rows
        .iter()
        .map(|r| format!("{} {}", r.matrix, r.value))
        .collect();
    let err = |e: &dyn std::fmt::Display| anyhow!("drawing {}: {e}", path.display());
    let root = SVGBackend::new(path, (1100, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Held-out matrices (H200, measured): fraction of the oracle",
            ("sans-serif", 22),
        )
        .margin(14)
        .x_label_area_size(170)
        .y_label_area_size(56)
        .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..1.12)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("GB/s / oracle GB/s")
        .y_label_formatter(&|v| format!("{v:.1}"))
        .draw()
        .map_err(|e| err(&e))?;
    chart
        .draw_series(LineSeries::new(
            vec![(-0.5, 1.0), (n as f64 - 0.5, 1.0)],
            BLACK.stroke_width(1),
        ))
        .map_err(|e| err(&e))?
        .label("oracle")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], BLACK));
    chart
        .draw_series(t16.iter().map(|&(x, y)| {
            Rectangle::new([(x - 0.3, 0.0), (x + 0.3, y)], GREEN.mix(0.35).filled())
        }))
        .map_err(|e| err(&e))?
        .label("best of top-16 proposals")
        .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], GREEN.mix(0.35).filled()));
    chart
        .draw_series(
            zs.iter()
                .map(|&(x, y)| Circle::new((x, y), 5, BLUE.filled())),
        )
        .map_err(|e| err(&e))?
        .label("zero-shot pick")
        .legend(|(x, y)| Circle::new((x + 9, y), 5, BLUE.filled()));
    chart
        .draw_series(
            tpl.iter()
                .map(|&(x, y)| TriangleMarker::new((x, y), 6, RED.filled())),
        )
        .map_err(|e| err(&e))?
        .label("template rule")
        .legend(|(x, y)| TriangleMarker::new((x + 9, y), 6, RED.filled()));
    // Record names below the axis, rotated, starting at the axis.
    let style = TextStyle::from(("sans-serif", 12).into_font())
        .transform(FontTransform::Rotate90)
        .pos(plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ));
    for (i, label) in labels.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64, 0.0));
        root.draw(&Text::new(label.clone(), (px, py + 8), style.clone()))
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .border_style(BLACK)
        .background_style(WHITE.mix(0.85))
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
