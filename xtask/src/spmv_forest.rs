//! `cargo xtask spmv-forest`: the SpMV records' forest pick
//! (`sparserl_policies::forest_pick`). `build` trains it on the committed
//! records and writes the file a build embeds; `loco` judges it
//! leave-one-class-out beside the records' other picks (the 8 nearest
//! records' best mean, the knob pick the shipped rule falls back to), with
//! no learned policy involved, so it runs in minutes without libtorch.

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;
use sparserl_policies::forest::{DEFAULT_FOREST, ForestConfig};
use sparserl_policies::forest_pick::{ForestPick, best_of, blend, combine};
use sparserl_policies::knn::{Combine, NeighbourPick};
use sparserl_policies::knob_pick::{KnobPick, NEIGHBOURS};
use sparserl_policies::net::policy_space;
use sparserl_policies::prepared::Prepared;
use sparserl_policies::spmv_records::{SpmvRecords, fingerprint_of};
use sparserl_rt::Variant;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `spmv-forest`.
#[derive(Parser)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Train on every record and write the embedded file.
    Build {
        /// The records (gzipped JSON, `cargo xtask spmv-records`).
        #[arg(long, default_value = "policies/spmv-records.json.gz")]
        records: PathBuf,
        /// Output (gzipped JSON).
        #[arg(long, default_value = "policies/spmv-forest.json.gz")]
        out: PathBuf,
    },
    /// Leave-one-class-out over the records: JSON and Markdown at `<out>.json` / `.md`.
    Loco {
        /// The records.
        #[arg(long, default_value = "policies/spmv-records.json.gz")]
        records: PathBuf,
        /// Output stem.
        #[arg(long, default_value = "docs/policy/spmv-forest-loco")]
        out: PathBuf,
        /// Trees of the forest judged (default: the committed configuration's).
        #[arg(long)]
        trees: Option<usize>,
        /// Fewest rows per leaf of the forest judged.
        #[arg(long)]
        min_leaf: Option<usize>,
        /// Train the judged forest class-balanced: a record of a class
        /// smaller than the median class enters up to this many times
        /// (`class_repeats`); 1, the default, is the committed training.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
        balance_classes: u64,
    },
}

/// Runs `spmv-forest`.
pub fn run(args: Args) -> Result<()> {
    match args.cmd {
        Cmd::Build { records, out } => build(&records, &out),
        Cmd::Loco {
            records,
            out,
            trees,
            min_leaf,
            balance_classes,
        } => {
            let cfg = ForestConfig {
                trees: trees.unwrap_or(DEFAULT_FOREST.trees),
                min_leaf: min_leaf.unwrap_or(DEFAULT_FOREST.min_leaf),
                ..DEFAULT_FOREST
            };
            loco(&records, &out, &cfg, balance_classes as usize)
        }
    }
}

/// The records at `path`, prepared, and the file's fingerprint.
fn load(path: &Path) -> Result<(SpmvRecords, Vec<Prepared>, String)> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let records =
        SpmvRecords::from_gz(&bytes).with_context(|| format!("parsing {}", path.display()))?;
    let prepared = records.prepared();
    if prepared.is_empty() {
        bail!("{} holds no record", path.display());
    }
    Ok((records, prepared, fingerprint_of(&bytes)))
}

/// Trains the forest on the records at `records` and writes it to `out`.
pub fn build(records: &Path, out: &Path) -> Result<()> {
    let (_, prepared, fingerprint) = load(records)?;
    let train: Vec<&Prepared> = prepared.iter().collect();
    eprintln!(
        "training {} trees on {} records ...",
        DEFAULT_FOREST.trees,
        train.len()
    );
    let pick = ForestPick::fit(&train, &DEFAULT_FOREST, &fingerprint);
    let nodes: usize = pick.forest.trees.iter().map(|t| t.feature.len()).sum();
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(serde_json::to_string(&pick)?.as_bytes())?;
    let bytes = gz.finish()?;
    std::fs::write(out, &bytes).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "wrote {} trees ({nodes} nodes, {} KB) to {}",
        pick.forest.trees.len(),
        bytes.len() / 1024,
        out.display()
    );
    Ok(())
}

/// The rules judged, in report order.
const RULES: [&str; 21] = [
    "knn8",
    "knob-knn16",
    "forest",
    "forest-knob16",
    "first16-forest-knob16",
    "cautious0.5-forest",
    "cautious1-forest",
    "cautious0.5-forest-knob16",
    "cautious1-forest-knob16",
    "referee-knn8",
    "first16-mix",
    "first16-families",
    "first16-climb",
    "forest0.3-knob16",
    "forest0.7-knob16",
    "min-forest-knob16",
    "min-forest0.7-knob16",
    "forest-knob16-cautious",
    "forest-knob16-knn8",
    "mean3-forest-knob16-knn8",
    "min3-forest-knob16-knn8",
];

/// The score combinations ([`combinations`]), the last rules of [`RULES`].
const COMBINATIONS: usize = 8;

/// Index in [`RULES`] of the first score combination.
const COMBINED: usize = RULES.len() - COMBINATIONS;

/// Spreads of the trees the cautious rules subtract (`cautious<risk>`).
const RISKS: [f64; 2] = [0.5, 1.0];

/// Candidates of the first-k figure.
const FIRST_K: usize = 16;

/// One record's picks: rule to (variant id, fraction of the best).
#[derive(Debug, Serialize)]
struct Case {
    matrix: String,
    class: String,
    value: String,
    picks: BTreeMap<String, (String, f64)>,
}

/// Per rule: (pooled mean, class mean, worst class, its figure, classes below 0.9).
#[derive(Debug, Serialize)]
struct Summary {
    pooled: f64,
    class_mean: f64,
    worst_class: String,
    worst: f64,
    classes_below_0_9: usize,
    min_record: f64,
}

fn loco(records: &Path, out: &Path, cfg: &ForestConfig, balance: usize) -> Result<()> {
    let (recs, prepared, _) = load(records)?;
    let mut classes: Vec<&str> = prepared.iter().map(|r| r.class.as_str()).collect();
    classes.sort();
    classes.dedup();
    let started = std::time::Instant::now();
    let mut cases = Vec::new();
    for (i, class) in classes.iter().enumerate() {
        eprintln!(
            "[{}/{}] {class} ({:.0} s)",
            i + 1,
            classes.len(),
            started.elapsed().as_secs_f64()
        );
        let train: Vec<&Prepared> = prepared.iter().filter(|r| r.class != *class).collect();
        cases.extend(fold(&prepared, &train, class, cfg, balance));
    }
    let summary: BTreeMap<&str, Summary> =
        RULES.iter().map(|r| (*r, summarise(&cases, r))).collect();
    let per_class = per_class(&cases);
    let json = serde_json::json!({
        "description": "Leave-one-class-out over the SpMV records: each class's records picked by rules fitted on the other classes' records only; figures are fractions of each record's best measured variant of the policy space (a variant it cannot run counts 0).",
        "source": recs.source,
        "forest": cfg,
        "balance_classes": balance,
        "summary": summary,
        "classes": per_class,
        "cases": cases,
        "seconds": started.elapsed().as_secs_f64(),
    });
    let json_path = out.with_extension("json");
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)? + "\n")?;
    std::fs::write(
        out.with_extension("md"),
        markdown(&summary, &per_class, &recs.source, balance),
    )?;
    for (rule, s) in &summary {
        println!(
            "{rule:12} pooled {:.3}  class mean {:.3}  worst {} {:.3}  classes below 0.9: {}",
            s.pooled, s.class_mean, s.worst_class, s.worst, s.classes_below_0_9
        );
    }
    println!("wrote {} and .md", json_path.display());
    Ok(())
}

/// Fits the record picks on `train` and picks for every record of `class`.
fn fold(
    all: &[Prepared],
    train: &[&Prepared],
    class: &str,
    cfg: &ForestConfig,
    balance: usize,
) -> Vec<Case> {
    let space = policy_space();
    let knn8 = NeighbourPick::new(train, 8);
    let knn16 = NeighbourPick::new(train, NEIGHBOURS);
    let knob = KnobPick::new(&knn16, None);
    let forest = ForestPick::fit_balanced(train, cfg, &format!("fold {class}"), balance);
    all.iter()
        .filter(|r| r.class == class)
        .map(|r| {
            let runnable = |v: &Variant| !r.cannot_run.contains(&v.strategy);
            let mean = knn8.scores(&r.features, r.value, Combine::Mean);
            let mean: Vec<Option<f64>> = mean.into_iter().map(Some).collect();
            let fs = forest.space_scores(&r.features, r.value);
            let ks = knob.scores(&r.features, r.value);
            let both = blend(&fs, &ks);
            let cautious: Vec<Vec<Option<f64>>> = RISKS
                .iter()
                .map(|&risk| forest.cautious_space_scores(&r.features, r.value, risk))
                .collect();
            let cautious_blend = blend(&cautious[0], &ks);
            let picks = [
                best_of(&mean, &runnable),
                best_of(&ks, &runnable),
                best_of(&fs, &runnable),
                best_of(&both, &runnable),
                None,
                best_of(&cautious[0], &runnable),
                best_of(&cautious[1], &runnable),
                best_of(&cautious_blend, &runnable),
                best_of(&blend(&cautious[1], &ks), &runnable),
                referee(&[&fs, &ks, &both], &mean, &runnable),
            ];
            let frac = |j: usize| r.measured[j].unwrap_or(0.0).max(0.0);
            let mut picks: BTreeMap<String, (String, f64)> = RULES
                .iter()
                .zip(picks)
                .map(|(rule, j)| {
                    let id = j.map(|j| space[j].id()).unwrap_or_default();
                    (rule.to_string(), (id, j.map_or(0.0, frac)))
                })
                .collect();
            // The runnable variants by the blend's, the forest's, the knob
            // pick's and the 8 nearest records' scores, best first.
            let orders: Vec<Vec<usize>> = [&both, &fs, &ks, &mean]
                .iter()
                .map(|sc| ranked(&space, sc, &runnable))
                .collect();
            let firsts = first_k_figures(&space, &orders, &both, &frac);
            for (rule, f) in [RULES[4], RULES[10], RULES[11], RULES[12]]
                .iter()
                .zip(firsts)
            {
                picks.insert(rule.to_string(), (String::new(), f));
            }
            for (i, sc) in combinations(&fs, &ks, &both, &cautious_blend, &mean)
                .iter()
                .enumerate()
            {
                let j = best_of(sc, &runnable);
                let id = j.map(|j| space[j].id()).unwrap_or_default();
                picks.insert(RULES[COMBINED + i].to_string(), (id, j.map_or(0.0, frac)));
            }
            Case {
                matrix: r.name.clone(),
                class: r.class.clone(),
                value: r.value.to_string(),
                picks,
            }
        })
        .collect()
}

/// The best measured fraction among the first [`FIRST_K`] candidates of
/// four orders, for the `first16-*` rules (`RULES[4]`, `[10]`, `[11]`,
/// `[12]`): the blend's own order (`orders[0]`); the four rankings of
/// `orders` taken in turn, repeats skipped; the blend's best variant of
/// every family first (in its order), then the rest of its order; its
/// first half then the build's single-knob climb.
fn first_k_figures(
    space: &[Variant],
    orders: &[Vec<usize>],
    both: &[Option<f64>],
    frac: &dyn Fn(usize) -> f64,
) -> [f64; 4] {
    let best = |js: &[usize]| js.iter().map(|&j| frac(j)).fold(0.0, f64::max);
    let blend_order = &orders[0];
    let top: Vec<usize> = blend_order.iter().take(FIRST_K).copied().collect();
    let mix = first_k_mix(orders, FIRST_K);
    let mut heads: Vec<usize> = Vec::new();
    for &j in blend_order {
        if !heads
            .iter()
            .any(|&h| space[h].strategy == space[j].strategy)
        {
            heads.push(j);
        }
    }
    let fam = first_k_mix(&[heads, blend_order.clone()], FIRST_K);
    let climbed = climb(space, blend_order, both, frac, FIRST_K / 2, FIRST_K);
    [best(&top), best(&mix), best(&fam), climbed]
}

/// The score lists of the combined rules, in [`RULES`] order from
/// [`COMBINED`]: other shares of the forest in the blend, the lower of the
/// two learners' scores (a variant either learner rates poorly is avoided),
/// the mean of that and the 0.7 blend, the lower of the blend and its
/// cautious form, and the blend with the log of the 8 nearest records' mean
/// fraction as a third learner (2:1, equal thirds, the lowest of three).
fn combinations(
    fs: &[Option<f64>],
    ks: &[Option<f64>],
    both: &[Option<f64>],
    cautious_blend: &[Option<f64>],
    knn8: &[Option<f64>],
) -> [Vec<Option<f64>>; COMBINATIONS] {
    let log8: Vec<Option<f64>> = knn8.iter().map(|m| m.map(|m| m.max(1e-3).ln())).collect();
    let lower = combine(fs, ks, f64::min);
    let share7 = combine(fs, ks, |f, k| 0.7 * f + 0.3 * k);
    [
        combine(fs, ks, |f, k| 0.3 * f + 0.7 * k),
        share7.clone(),
        lower.clone(),
        combine(&share7, &lower, |a, b| 0.5 * (a + b)),
        combine(both, cautious_blend, f64::min),
        combine(both, &log8, |a, b| (2.0 * a + b) / 3.0),
        combine(&combine(fs, ks, |f, k| f + k), &log8, |a, b| (a + b) / 3.0),
        combine(&lower, &log8, f64::min),
    ]
}

/// The runnable variants `scores` scores, best first.
fn ranked(
    space: &[Variant],
    scores: &[Option<f64>],
    runnable: &dyn Fn(&Variant) -> bool,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..space.len())
        .filter(|&j| runnable(&space[j]) && scores[j].is_some())
        .collect();
    order.sort_by(|&a, &b| {
        scores[b]
            .unwrap_or(0.0)
            .total_cmp(&scores[a].unwrap_or(0.0))
    });
    order
}

/// The best fraction a search reaches in `k` measurements (`frac` looks a
/// measurement up): the first `explore` of `order`, then, one at a time,
/// the best-scored unmeasured single-knob neighbour of the best measured so
/// far (`sparserl_build::search::neighbors`, as the build's climb), or the
/// next of `order` when it has none.
fn climb(
    space: &[Variant],
    order: &[usize],
    scores: &[Option<f64>],
    frac: &dyn Fn(usize) -> f64,
    explore: usize,
    k: usize,
) -> f64 {
    let mut done: Vec<usize> = order.iter().take(explore).copied().collect();
    while done.len() < k.min(order.len()) {
        let best = done
            .iter()
            .copied()
            .max_by(|&a, &b| frac(a).total_cmp(&frac(b)));
        let next = best.and_then(|b| {
            sparserl_build::search::neighbors(&space[b])
                .iter()
                .filter_map(|v| space.iter().position(|s| s == v))
                .filter(|j| scores[*j].is_some() && !done.contains(j))
                .max_by(|&a, &b| {
                    scores[a]
                        .unwrap_or(0.0)
                        .total_cmp(&scores[b].unwrap_or(0.0))
                })
        });
        match next.or_else(|| order.iter().copied().find(|j| !done.contains(j))) {
            Some(j) => done.push(j),
            None => break,
        }
    }
    done.into_iter().map(frac).fold(0.0, f64::max)
}

/// The first `k` distinct entries of `orders` taken one from each in turn.
fn first_k_mix(orders: &[Vec<usize>], k: usize) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    let longest = orders.iter().map(Vec::len).max().unwrap_or(0);
    for i in 0..longest {
        for o in orders {
            if let Some(&j) = o.get(i)
                && !out.contains(&j)
            {
                out.push(j);
                if out.len() == k {
                    return out;
                }
            }
        }
    }
    out
}

/// Of the picks of `scores` (the first on ties), the one `judge` scores
/// highest: the 8 nearest records referee between the forest, the knob pick
/// and their blend.
fn referee(
    scores: &[&Vec<Option<f64>>],
    judge: &[Option<f64>],
    runnable: &dyn Fn(&Variant) -> bool,
) -> Option<usize> {
    let picks = scores.iter().filter_map(|s| best_of(s, runnable));
    picks.fold(None::<usize>, |b, j| match b {
        Some(b) if judge[b].unwrap_or(f64::MIN) >= judge[j].unwrap_or(f64::MIN) => Some(b),
        _ => Some(j),
    })
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

/// Per class, per rule: mean fraction of the class's records.
fn per_class(cases: &[Case]) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut out: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for rule in RULES {
        let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
        for c in cases {
            by.entry(&c.class).or_default().push(c.picks[rule].1);
        }
        for (class, xs) in by {
            out.entry(class.to_string())
                .or_default()
                .insert(rule.to_string(), mean(&xs));
        }
    }
    out
}

fn summarise(cases: &[Case], rule: &str) -> Summary {
    let all: Vec<f64> = cases.iter().map(|c| c.picks[rule].1).collect();
    let per = per_class(cases);
    let figs: Vec<(&String, f64)> = per.iter().map(|(c, m)| (c, m[rule])).collect();
    let (worst_class, worst) = figs
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or((String::new(), 0.0), |(c, f)| ((*c).clone(), *f));
    Summary {
        pooled: mean(&all),
        class_mean: mean(&figs.iter().map(|f| f.1).collect::<Vec<_>>()),
        worst_class,
        worst,
        classes_below_0_9: figs.iter().filter(|f| f.1 < 0.9).count(),
        min_record: all.iter().copied().fold(f64::INFINITY, f64::min),
    }
}

fn markdown(
    summary: &BTreeMap<&str, Summary>,
    per_class: &BTreeMap<String, BTreeMap<String, f64>>,
    source: &[String],
    balance: usize,
) -> String {
    let mut s = String::from("# SpMV record picks, leave-one-class-out\n\n");
    if balance > 1 {
        s += &format!(
            "Every forest here is trained class-balanced (`--balance-classes {balance}`): a record \
             of a class smaller than the median class enters the training set up to {balance} \
             times (the median class size over its class's size, rounded); the committed pick \
             trains each record once.\n\n"
        );
    }
    s += "Each class's records are picked by rules fitted on the other classes' records only \
          (no learned policy involved): `knn8` the best mean fraction over the 8 nearest records, \
          `knob-knn16` the knob pick, `forest` the forest pick (`sparserl_policies::forest_pick`), \
          `forest-knob16` the mean of the forest's and the knob pick's scores (`forest_pick::blend`). \
          `first16-forest-knob16` is not a pick: the best of that blend's first 16 runnable \
          variants, what a search measuring them first would reach at least. \
          `cautious<r>-forest` and `cautious<r>-forest-knob16` take the trees' mean less r times \
          their standard deviation in place of the forest's mean (a variant the trees disagree on \
          may miss badly; not shipped). `referee-knn8` takes, of the forest's, the knob pick's \
          and the blend's picks, the one the 8 nearest records' mean fraction ranks highest (not \
          shipped). `first16-mix` is not a pick either: the best of the first 16 distinct variants \
          of four rankings taken in turn (the blend's, the forest's, the knob pick's and the 8 \
          nearest records'); `first16-families` the blend's best variant of every family first, \
          then the rest of the blend's order; `first16-climb` the blend's first 8, then 8 steps \
          of the build's climb (the best-scored unmeasured single-knob neighbour of the best \
          measured so far; none shipped). The score combinations (none shipped): \
          `forest<s>-knob16` the blend with a forest share of s instead of 0.5; \
          `min-forest-knob16` the lower of the forest's and the knob pick's scores; \
          `min-forest0.7-knob16` the mean of that and `forest0.7-knob16`; \
          `forest-knob16-cautious` the lower of the blend and `cautious0.5-forest-knob16`; \
          `forest-knob16-knn8` two thirds the blend and one third the log of the 8 nearest \
          records' mean fraction, `mean3-forest-knob16-knn8` the three learners in equal thirds, \
          `min3-forest-knob16-knn8` the lowest of the three. Figures are \
          fractions of each record's best measured variant of the policy space.\n\n";
    s += &format!("Records: {}.\n\n", source.join("; "));
    s += "| rule | pooled | class mean | worst class | classes below 0.9 | worst record |\n|---|---:|---:|---|---:|---:|\n";
    for rule in RULES {
        let x = &summary[rule];
        s += &format!(
            "| {rule} | {:.3} | {:.3} | {} {:.3} | {} | {:.3} |\n",
            x.pooled, x.class_mean, x.worst_class, x.worst, x.classes_below_0_9, x.min_record
        );
    }
    s += &format!(
        "\n| class | {} |\n|---|{}\n",
        RULES.join(" | "),
        "---:|".repeat(RULES.len())
    );
    for (class, m) in per_class {
        let figs: Vec<String> = RULES.iter().map(|r| format!("{:.3}", m[*r])).collect();
        s += &format!("| {class} | {} |\n", figs.join(" | "));
    }
    s
}
