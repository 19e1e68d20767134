//! `cargo xtask eval-classes`: the committed learned policy per structure
//! class, over repeated measurement runs (no GPU; every GB/s is read from the
//! recorded runs).
//!
//! Inputs: per run, the oracle sweep of a `xtask bench` run (`--runs`, a
//! `Dataset`: every applicable variant of the design space measured per
//! matrix) and the benchmark report of the same run (`--bench`, same order).
//! Per run and record (matrix, value type), as fractions of the record's
//! oracle (the best correct GB/s of that run's sweep):
//!
//! - zero-shot: the policy's first proposal as measured in the sweep. A pick
//!   the sweep did not measure (or measured incorrect) counts as a miss,
//!   fraction 0, and is counted and named in the report;
//! - top-16: the best measured among the first 16 candidates in the order the
//!   shipped search takes them (`policy::search_order`, as `eval-policy`), 0
//!   when none of them was measured;
//! - ours and cuSPARSE: the benchmark's search winner (`ours_gbs`) and best
//!   cuSPARSE algorithm over the same run's sweep oracle (ours can exceed 1:
//!   its winner may renumber the matrix, which the sweep does not).
//!
//! Per class: the arithmetic mean over the class's records within a run,
//! then mean, min, max and sample standard deviation over the runs. Each
//! class is marked by whether its exact name occurs among the classes the
//! policy trained on (the records of its training dataset and extra
//! datasets, found in `--training-data` by the sha256 values of the policy's
//! metadata, minus its held-out names and classes), with a fixed list of
//! related training class names ([`RELATED`]).

use crate::common::workspace_root;
mod render;

use crate::policy::{measured, oracle_variant, runnable, search_order, sha256_file};
use anyhow::{Context, Result, anyhow, bail};
use render::{fmt_spread, markdown};
use serde::Serialize;
use serde_json::{Value, json};
use sparserl_policies::dataset::{Dataset, MatrixRecord};
use sparserl_policies::{LearnedPolicy, Policy, Proposal};
use sparserl_rt::Features;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Target: zero-shot pick, fraction of the oracle (per class, mean over runs).
pub const TARGET_ZERO_SHOT: f64 = 0.93;
/// Target: best of the first 16 search candidates, fraction of the oracle.
pub const TARGET_TOP16: f64 = 0.99;
/// Candidates of the top-k column.
const K: usize = 16;

/// Training class names that look related to an evaluated class (fixed;
/// names only, the generators differ): meshes, road networks and circuits
/// by name; R-MAT and symmetric power-law graphs to the power-law row
/// family and the skewed real graphs.
pub const RELATED: &[(&str, &[&str])] = &[
    ("recursive", &["power-law", "social-graph", "web-graph"]),
    (
        "power-law-graph",
        &["power-law", "social-graph", "web-graph"],
    ),
    ("mesh", &["2D-mesh", "3D-mesh"]),
    ("road", &["road-network"]),
    ("circuit", &["circuit"]),
];

/// Metric keys, in report order, with their labels.
const METRICS: [(&str, &str); 5] = [
    ("zero_shot", "zero-shot"),
    ("top16", "top-16"),
    ("ours", "ours (search winner)"),
    ("ours_vs_bench_oracle", "ours / bench oracle"),
    ("cusparse", "cuSPARSE"),
];

/// Arguments of `cargo xtask eval-classes`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Oracle sweeps (`Dataset`, `.json.gz`), one per measurement run.
    #[arg(long, num_args = 1.., required = true)]
    pub runs: Vec<PathBuf>,
    /// Benchmark reports of the same runs (same count, same order).
    #[arg(long, num_args = 1.., required = true)]
    pub bench: Vec<PathBuf>,
    /// Policy file.
    #[arg(long, default_value = "policies/policy.json")]
    pub policy: PathBuf,
    /// Folder searched for the policy's training datasets (by sha256).
    #[arg(long, default_value = "policies/data")]
    pub training_data: PathBuf,
    /// Output folder.
    #[arg(long, default_value = "docs/policy")]
    pub out: PathBuf,
    /// Output file stem (`.md`, `.json`).
    #[arg(long, default_value = "policy-classes-h200")]
    pub stem: String,
}

/// The benchmark's row of a record.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BenchRow {
    ours_gbs: Option<f64>,
    ours_variant: Option<String>,
    reorder: Option<String>,
    bench_oracle_gbs: Option<f64>,
    cusparse_gbs: Option<f64>,
    cusparse_alg: Option<String>,
}

/// One record in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordRun {
    matrix: String,
    class: String,
    value: String,
    oracle_gbs: f64,
    oracle_variant: String,
    zero_shot_variant: String,
    zero_shot_gbs: Option<f64>,
    /// `measured`, `incorrect in the sweep` or `not in the sweep`.
    zero_shot_status: String,
    top16_gbs: Option<f64>,
    /// How many of the first 16 candidates the sweep measured correct.
    top16_measured: usize,
    /// Fractions of `oracle_gbs`, by metric key (a missing zero-shot or
    /// top-16 measurement is 0; ours and cuSPARSE are absent without a
    /// benchmark row).
    fractions: BTreeMap<String, Option<f64>>,
    bench: Option<BenchRow>,
}

/// Evaluates one run: every record of the sweep with a correct measurement.
pub fn eval_run(
    ds: &Dataset,
    bench_rows: &[Value],
    propose: &dyn Fn(&MatrixRecord) -> Vec<Proposal>,
) -> Vec<RecordRun> {
    let mut out = Vec::new();
    for rec in ds.matrices.iter().filter(|r| r.best_gbs() > 0.0) {
        let oracle = rec.best_gbs();
        let props = propose(rec);
        let Some(&pick) = runnable(ds, rec, &props).first() else {
            continue;
        };
        let zs = measured(ds, rec, &pick);
        let in_sweep = rec
            .results
            .iter()
            .any(|r| ds.variants.get(r.0).map(|x| x.canonical()) == Some(pick.canonical()));
        let status = match (zs, in_sweep) {
            (Some(_), _) => "measured",
            (None, true) => "incorrect in the sweep",
            (None, false) => "not in the sweep",
        };
        let top: Vec<f64> = search_order(ds, rec, &props)
            .iter()
            .take(K)
            .filter_map(|v| measured(ds, rec, v))
            .collect();
        let top16 = top.iter().copied().reduce(f64::max);
        let value = rec.value.to_string();
        let bench = bench_rows
            .iter()
            .find(|b| b["matrix"] == rec.name.as_str() && b["value"] == value.as_str())
            .map(|b| {
                let s = |k: &str| b[k].as_str().map(str::to_string);
                BenchRow {
                    ours_gbs: b["ours_gbs"].as_f64(),
                    ours_variant: s("variant"),
                    reorder: s("reorder"),
                    bench_oracle_gbs: b["oracle_gbs"].as_f64(),
                    cusparse_gbs: b["cusparse_gbs"].as_f64(),
                    cusparse_alg: s("cusparse_alg"),
                }
            });
        let b = bench.clone().unwrap_or_default();
        let fractions = BTreeMap::from([
            ("zero_shot".into(), Some(zs.unwrap_or(0.0) / oracle)),
            ("top16".into(), Some(top16.unwrap_or(0.0) / oracle)),
            ("ours".into(), b.ours_gbs.map(|g| g / oracle)),
            (
                "ours_vs_bench_oracle".into(),
                b.ours_gbs
                    .zip(b.bench_oracle_gbs.filter(|o| *o > 0.0))
                    .map(|(g, o)| g / o),
            ),
            ("cusparse".into(), b.cusparse_gbs.map(|g| g / oracle)),
        ]);
        out.push(RecordRun {
            matrix: rec.name.clone(),
            class: rec.class.clone(),
            value,
            oracle_gbs: oracle,
            oracle_variant: oracle_variant(ds, rec),
            zero_shot_variant: pick.to_string(),
            zero_shot_gbs: zs,
            zero_shot_status: status.into(),
            top16_gbs: top16,
            top16_measured: top.len(),
            fractions,
            bench,
        });
    }
    out
}

/// Mean and spread of one metric over the runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    mean: f64,
    min: f64,
    max: f64,
    /// Sample standard deviation (n - 1; 0 for one run).
    sd: f64,
    runs: usize,
}

fn spread(xs: &[f64]) -> Option<Spread> {
    if xs.is_empty() {
        return None;
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = if xs.len() > 1 {
        xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    Some(Spread {
        mean,
        min: xs.iter().copied().fold(f64::INFINITY, f64::min),
        max: xs.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        sd: var.sqrt(),
        runs: xs.len(),
    })
}

/// A group of records (a class, or all) in one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupRun {
    records: usize,
    /// Records whose zero-shot pick has no correct measurement (fraction 0).
    zero_shot_missing: usize,
    /// Arithmetic mean of the records' fractions, by metric key.
    means: BTreeMap<String, Option<f64>>,
}

/// A group over all runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupSummary {
    runs: Vec<GroupRun>,
    /// Spread of the per-run means, by metric key.
    stats: BTreeMap<String, Option<Spread>>,
    pass_zero_shot: bool,
    pass_top16: bool,
    /// The targets met in every run, not only on the mean.
    pass_zero_shot_every_run: bool,
    pass_top16_every_run: bool,
}

fn group(runs: &[Vec<RecordRun>], keep: &dyn Fn(&RecordRun) -> bool) -> GroupSummary {
    let runs: Vec<GroupRun> = runs
        .iter()
        .map(|run| {
            let recs: Vec<&RecordRun> = run.iter().filter(|r| keep(r)).collect();
            let means = METRICS
                .iter()
                .map(|(k, _)| {
                    let xs: Vec<f64> = recs.iter().filter_map(|r| r.fractions[*k]).collect();
                    let m = (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
                    (k.to_string(), m)
                })
                .collect();
            GroupRun {
                records: recs.len(),
                zero_shot_missing: recs.iter().filter(|r| r.zero_shot_gbs.is_none()).count(),
                means,
            }
        })
        .collect();
    let stats: BTreeMap<String, Option<Spread>> = METRICS
        .iter()
        .map(|(k, _)| {
            let xs: Vec<f64> = runs.iter().filter_map(|r| r.means[*k]).collect();
            (k.to_string(), spread(&xs))
        })
        .collect();
    let at =
        |k: &str, f: &dyn Fn(&Spread) -> f64, t: f64| stats[k].as_ref().is_some_and(|s| f(s) >= t);
    GroupSummary {
        pass_zero_shot: at("zero_shot", &|s| s.mean, TARGET_ZERO_SHOT),
        pass_top16: at("top16", &|s| s.mean, TARGET_TOP16),
        pass_zero_shot_every_run: at("zero_shot", &|s| s.min, TARGET_ZERO_SHOT),
        pass_top16_every_run: at("top16", &|s| s.min, TARGET_TOP16),
        runs,
        stats,
    }
}

/// What the policy trained on.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Training {
    /// Classes with at least one training record.
    classes: BTreeSet<String>,
    /// Classes in the datasets without a training record (held out).
    held_out_classes: BTreeSet<String>,
    /// Matrix names with at least one training record.
    names: BTreeSet<String>,
    records: usize,
}

/// Training records: every record of `datasets` not held out by name or
/// class (as the training binary splits them).
pub fn training(
    datasets: &[&Dataset],
    holdout_names: &[String],
    holdout_classes: &[String],
) -> Training {
    let mut t = Training::default();
    let mut all = BTreeSet::new();
    for rec in datasets.iter().flat_map(|d| &d.matrices) {
        all.insert(rec.class.clone());
        if holdout_names.contains(&rec.name) || holdout_classes.contains(&rec.class) {
            continue;
        }
        t.classes.insert(rec.class.clone());
        t.names.insert(rec.name.clone());
        t.records += 1;
    }
    t.held_out_classes = all.difference(&t.classes).cloned().collect();
    t
}

/// A class's relation to the training data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassStatus {
    in_training: bool,
    label: String,
    /// Related training class names (see [`RELATED`]) and their status.
    related: Vec<(String, String)>,
}

/// How `class` relates to the training classes.
pub fn class_status(class: &str, t: &Training) -> ClassStatus {
    let in_training = t.classes.contains(class);
    let of = |c: &str| {
        if t.classes.contains(c) {
            "trained"
        } else if t.held_out_classes.contains(c) {
            "held out (never trained)"
        } else {
            "not in the training data"
        }
    };
    let related = RELATED
        .iter()
        .find(|(c, _)| *c == class)
        .map(|(_, r)| {
            r.iter()
                .map(|n| (n.to_string(), of(n).to_string()))
                .collect()
        })
        .unwrap_or_default();
    ClassStatus {
        in_training,
        label: if in_training {
            "also in training (as a class name)"
        } else {
            "never in training"
        }
        .into(),
        related,
    }
}

/// `p` as given, relative to the workspace root (no machine paths).
fn shown(root: &Path, p: &Path) -> String {
    if p.is_relative() {
        return p.display().to_string();
    }
    match p.strip_prefix(root) {
        Ok(r) => r.display().to_string(),
        Err(_) => format!(
            "(outside the workspace)/{}",
            p.file_name().and_then(|n| n.to_str()).unwrap_or("?")
        ),
    }
}

/// Finds the dataset file with sha256 `sha` in `dir`.
fn find_by_sha(dir: &Path, sha: &str) -> Result<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.to_str()
                .is_some_and(|s| s.ends_with(".json.gz") || s.ends_with(".json"))
        })
        .collect();
    files.sort();
    for f in files {
        if sha256_file(&f)? == sha {
            return Ok(f);
        }
    }
    bail!("no dataset with sha256 {sha} in {}", dir.display())
}

/// Runs the evaluation and writes `<stem>.md` and `<stem>.json`.
pub fn run(args: Args) -> Result<()> {
    if args.runs.len() != args.bench.len() {
        bail!(
            "--runs has {} files, --bench {}: one benchmark report per sweep, in the same order",
            args.runs.len(),
            args.bench.len()
        );
    }
    let root = workspace_root();
    let abs = |p: &Path| {
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            root.join(p)
        }
    };
    let policy_path = abs(&args.policy);
    let policy = LearnedPolicy::load(&policy_path)
        .map_err(|e| anyhow!("loading {}: {e}", policy_path.display()))?;
    let meta = policy.file().clone();
    let policy_sha = sha256_file(&policy_path)?;

    // The training data, found by the sha256 values in the policy's metadata.
    let data_dir = abs(&args.training_data);
    let mut shas = vec![("dataset", meta.dataset_sha256.clone())];
    for e in meta.report["extra_datasets"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let sha = e["sha256"]
            .as_str()
            .ok_or_else(|| anyhow!("extra dataset without sha256"))?;
        shas.push(("extra dataset", sha.to_string()));
    }
    let mut train_sets = Vec::new();
    let mut train_src = Vec::new();
    for (role, sha) in shas {
        let f = find_by_sha(&data_dir, &sha).with_context(|| format!("the policy's {role}"))?;
        train_src.push(json!({"role": role, "file": shown(&root, &f), "sha256": sha}));
        train_sets.push(Dataset::read(&f)?);
    }
    let refs: Vec<&Dataset> = train_sets.iter().collect();
    let trained = training(&refs, &meta.holdout_names, &meta.holdout_classes);

    // The runs.
    let policy_id = format!("learned-1-{policy_sha}");
    let propose =
        |rec: &MatrixRecord| policy.propose(&Features::from_slice(&rec.features), rec.value, K);
    let mut runs = Vec::new();
    let mut run_src = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for (i, (sp, bp)) in args.runs.iter().zip(&args.bench).enumerate() {
        let sweep = Dataset::read(&abs(sp))?;
        let text = std::fs::read_to_string(abs(bp))
            .with_context(|| format!("reading {}", bp.display()))?;
        let bench: Value =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", bp.display()))?;
        let bcmd = bench["command"].as_str().unwrap_or("");
        if !bcmd.is_empty() && !sweep.command.is_empty() && bcmd != sweep.command {
            bail!(
                "run {}: {} and {} come from different commands (`{}` vs `{bcmd}`)",
                i + 1,
                sp.display(),
                bp.display(),
                sweep.command
            );
        }
        if bench["policy"].as_str().is_some_and(|p| p != policy_id) {
            notes.push(format!(
                "Run {}: the benchmark ran policy `{}`, not `{}`: its ours column is another policy's search.",
                i + 1,
                bench["policy"].as_str().unwrap_or("?"),
                policy_id
            ));
        }
        let rows = bench["rows"].as_array().cloned().unwrap_or_default();
        let recs = eval_run(&sweep, &rows, &propose);
        if recs.is_empty() {
            bail!("{}: no record with a correct measurement", sp.display());
        }
        run_src.push(json!({
            "run": i + 1,
            "sweep": {"file": shown(&root, sp), "sha256": sha256_file(&abs(sp))?, "gpu": sweep.gpu,
                      "date": sweep.date, "command": sweep.command, "variants": sweep.variants.len()},
            "bench": {"file": shown(&root, bp), "sha256": sha256_file(&abs(bp))?, "gpu": bench["gpu"],
                      "date": bench["date"], "command": bench["command"], "commit": bench["commit"],
                      "policy": bench["policy"]},
        }));
        runs.push(recs);
    }

    let mut classes: Vec<String> = Vec::new();
    for r in runs.iter().flatten() {
        if !classes.contains(&r.class) {
            classes.push(r.class.clone());
        }
    }
    let class_rows: Vec<Value> = classes
        .iter()
        .map(|c| {
            let g = group(&runs, &|r| &r.class == c);
            json!({"class": c, "training": class_status(c, &trained), "summary": g})
        })
        .collect();
    let never = |r: &RecordRun| !trained.classes.contains(&r.class);
    let overall = json!({
        "all": group(&runs, &|_| true),
        "never_in_training": group(&runs, &never),
        "classes": classes.len(),
        "classes_pass_zero_shot": class_rows.iter().filter(|c| c["summary"]["pass_zero_shot"] == true).count(),
        "classes_pass_top16": class_rows.iter().filter(|c| c["summary"]["pass_top16"] == true).count(),
    });
    let matrices_in_training: BTreeSet<&str> = runs
        .iter()
        .flatten()
        .filter(|r| trained.names.contains(&r.matrix))
        .map(|r| r.matrix.as_str())
        .collect();
    let report = json!({
        "note": "Every GB/s is a measurement read from the runs named in `sources` (H200 benchmark runs and their oracle sweeps); nothing is estimated. Fractions are of each record's oracle: the best correct GB/s of that run's sweep.",
        "targets": {"zero_shot": TARGET_ZERO_SHOT, "top16": TARGET_TOP16,
                    "rule": "per class, mean over the runs of the class's mean fraction of the oracle"},
        "sources": {
            "policy": {"file": shown(&root, &args.policy), "sha256": policy_sha, "round": meta.round,
                       "dataset_sha256": meta.dataset_sha256, "holdout_names": meta.holdout_names,
                       "holdout_classes": meta.holdout_classes},
            "training": {"datasets": train_src, "records": trained.records, "classes": trained.classes,
                         "held_out_classes": trained.held_out_classes},
            "runs": run_src,
        },
        "related_class_names": RELATED.iter().map(|(c, r)| json!({"class": c, "related": r})).collect::<Vec<_>>(),
        "matrices_in_training": matrices_in_training,
        "notes": notes,
        "classes": class_rows,
        "overall": overall,
        "runs": runs,
    });
    let out_dir = abs(&args.out);
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let json_path = out_dir.join(format!("{}.json", args.stem));
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    let md_path = out_dir.join(format!("{}.md", args.stem));
    std::fs::write(&md_path, markdown(&report, &runs, &args))
        .with_context(|| format!("writing {}", md_path.display()))?;
    for c in &class_rows {
        let s = &c["summary"]["stats"];
        println!(
            "{:16} zero-shot {} | top-16 {} | {}",
            c["class"].as_str().unwrap_or("?"),
            fmt_spread(&s["zero_shot"]),
            fmt_spread(&s["top16"]),
            c["training"]["label"].as_str().unwrap_or("?")
        );
    }
    println!(
        "wrote {}, {}",
        shown(&root, &md_path),
        shown(&root, &json_path)
    );
    Ok(())
}

#[cfg(test)]
mod tests;
