//! `cargo xtask spmm-records`: builds the SpMM records a no-GPU build picks
//! from (`build`: the benchmark's per-case reports plus the matrices, whose
//! features are computed here) and judges that pick leave-one-class-out
//! against the analytic prior on the same cases (`loco`, offline).

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use flate2::Compression;
use flate2::write::GzEncoder;
use serde::Serialize;
use serde_json::Value;
use sparserl_policies::spmm_model::{Grouping, PickRule, RULE_GRID, SpmmModel};
use sparserl_policies::spmm_prior_for;
use sparserl_policies::spmm_records::{
    NEIGHBOURS, SpmmRecord, SpmmRecords, interleave, knn_vector,
};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmVariant, spmm_space};
use sparserl_rt::{Csr, Features, ValueType};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Arguments of `spmm-records`.
#[derive(Parser)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the records from `bench spmm` reports (`.json` or `.json.gz`).
    Build {
        /// Benchmark reports of the real-matrix suite.
        #[arg(long, num_args = 1.., required = true)]
        report: Vec<PathBuf>,
        /// Folder of the reports' matrices (`NAME.mtx` or `NAME.mtx.gz`).
        #[arg(long)]
        matrices: PathBuf,
        /// Output (gzipped JSON).
        #[arg(long, default_value = "policies/spmm-records.json.gz")]
        out: PathBuf,
    },
    /// Leave-one-class-out: the record pick against the prior's first variant.
    Loco {
        /// Records (gzipped JSON).
        #[arg(long, default_value = "policies/spmm-records.json.gz")]
        records: PathBuf,
        /// Output stem (`.json` and `.md` are written).
        #[arg(long, default_value = "docs/policy/spmm-loco-h200")]
        out: PathBuf,
    },
    /// Leave-one-class-out of the pick's grid widened by cautious rules
    /// (coverage and uncertainty terms), each widening chosen among by the
    /// same nested selection as the committed grid.
    Sweep {
        /// Records (gzipped JSON).
        #[arg(long, default_value = "policies/spmm-records.json.gz")]
        records: PathBuf,
        /// Also write the raw figures (inner scores and per-case fractions
        /// of every rule) as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Judges the picks of two sets of records on the measurements of one:
    /// each case of `--on` picked, leave-one-class-out, from the records of
    /// `--on` and from those of `--against`, each under the rules a
    /// leave-one-class-out over its own records chooses (what a build
    /// embedding either would ship).
    Cross {
        /// Records whose measurements judge both picks.
        #[arg(long, default_value = "policies/spmm-records.json.gz")]
        on: PathBuf,
        /// The other records.
        #[arg(long)]
        against: PathBuf,
    },
}

/// Runs `spmm-records`.
pub fn run(args: Args) -> Result<()> {
    match args.cmd {
        Cmd::Build {
            report,
            matrices,
            out,
        } => build(&report, &matrices, &out),
        Cmd::Loco { records, out } => crate::spmm_loco::run(&records, &out),
        Cmd::Sweep { records, json } => crate::spmm_sweep::run(&records, json.as_deref()),
        Cmd::Cross { on, against } => crate::spmm_cross::run(&on, &against),
    }
}

fn read_json(path: &Path) -> Result<Value> {
    let text = crate::common::read_text(path)?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// `name`'s matrix: a large graph of `bench spmm` regenerated as its run did,
/// else `NAME.mtx` or `NAME.mtx.gz` in `dir`.
fn read_matrix(dir: &Path, name: &str) -> Result<Csr> {
    if let Some(g) = crate::bench_spmm::suite::generate(name) {
        eprintln!("generating {name}");
        return g;
    }
    let path = ["mtx", "mtx.gz"]
        .iter()
        .map(|e| dir.join(format!("{name}.{e}")))
        .find(|p| p.exists())
        .with_context(|| format!("no {name}.mtx(.gz) in {}", dir.display()))?;
    Ok(sparserl_rt::mtx::read_matrix_market(&path)?)
}

/// Every correct variant's best median per case, as fractions of the case's fastest.
fn fractions(row: &Value) -> BTreeMap<String, f64> {
    let mut best: BTreeMap<String, f64> = BTreeMap::new();
    for t in row["search_trials"].as_array().into_iter().flatten() {
        let (Some(v), Some(us)) = (t["variant"].as_str(), t["median_us"].as_f64()) else {
            continue;
        };
        if t["correct"].as_bool() == Some(true) && us > 0.0 {
            let e = best.entry(v.to_string()).or_insert(f64::INFINITY);
            *e = e.min(us);
        }
    }
    let fastest = best.values().copied().fold(f64::INFINITY, f64::min);
    best.into_iter().map(|(v, us)| (v, fastest / us)).collect()
}

fn build(reports: &[PathBuf], matrices: &Path, out: &Path) -> Result<()> {
    let mut variants: Vec<String> = Vec::new();
    let mut index: HashMap<String, u32> = HashMap::new();
    let mut features: HashMap<String, Features> = HashMap::new();
    let mut records = Vec::new();
    let mut source = Vec::new();
    for path in reports {
        let rep = read_json(path)?;
        source.push(format!(
            "{} (commit {}, {}, {})",
            path.file_name()
                .map_or(String::new(), |f| f.to_string_lossy().into_owned()),
            rep["commit"].as_str().unwrap_or("?"),
            rep["gpu"].as_str().unwrap_or("?"),
            rep["policy"].as_str().unwrap_or("?")
        ));
        for row in rep["rows"].as_array().into_iter().flatten() {
            if let Some(r) = record(row, matrices, &mut features, &mut variants, &mut index)? {
                records.push(r);
            }
        }
        eprintln!("{}: {} records so far", path.display(), records.len());
    }
    if records.is_empty() {
        bail!("no measured case in the reports");
    }
    let all = SpmmRecords {
        source,
        variants,
        records,
    };
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(serde_json::to_string(&all)?.as_bytes())?;
    std::fs::write(out, gz.finish()?).with_context(|| format!("writing {}", out.display()))?;
    println!(
        "wrote {} ({} records, {} variants)",
        out.display(),
        all.records.len(),
        all.variants.len()
    );
    Ok(())
}

fn record(
    row: &Value,
    matrices: &Path,
    features: &mut HashMap<String, Features>,
    variants: &mut Vec<String>,
    index: &mut HashMap<String, u32>,
) -> Result<Option<SpmmRecord>> {
    let (Some(name), Some(n)) = (row["matrix"].as_str(), row["n"].as_u64()) else {
        return Ok(None);
    };
    if row["reorder"].as_str().is_some() {
        // Ours ran on the matrix renumbered (`bench spmm --reorder`): its
        // fractions belong to another matrix than the features would be of.
        return Ok(None);
    }
    let value = match row["value"].as_str() {
        Some("f32") => Some(ValueType::F32),
        Some("f64") => Some(ValueType::F64),
        _ => None,
    };
    let layout = row["layout"].as_str().and_then(DenseLayout::parse);
    let (Some(value), Some(layout)) = (value, layout) else {
        return Ok(None);
    };
    let fr = fractions(row);
    if fr.is_empty() {
        return Ok(None);
    }
    if !features.contains_key(name) {
        let csr = read_matrix(matrices, name)?;
        // The features must be of the matrix the report measured.
        let want = (row["rows"].as_u64(), row["nnz"].as_u64());
        let have = (Some(csr.rows() as u64), Some(csr.nnz() as u64));
        if want != have {
            bail!("{name}: the report measured (rows, nnz) {want:?}, the matrix here has {have:?}");
        }
        features.insert(name.to_string(), Features::compute(&csr));
    }
    let mut measured = Vec::with_capacity(fr.len());
    for (v, f) in fr {
        let i = *index.entry(v.clone()).or_insert_with(|| {
            variants.push(v);
            (variants.len() - 1) as u32
        });
        measured.push((i, f as f32));
    }
    Ok(Some(SpmmRecord {
        matrix: name.to_string(),
        class: row["class"].as_str().unwrap_or("unknown").to_string(),
        value,
        layout,
        n: n as usize,
        vector: knn_vector(&features[name], n as usize),
        measured,
        prior: row["prior_variant"].as_str().map(str::to_string),
        prior_head: spmm_prior_for(&features[name], value, n as usize, layout)
            .iter()
            .take(FIRST_K)
            .map(|v| v.id())
            .collect(),
    }))
}

/// One leave-one-class-out judgement: a case and the picks' fractions
/// (`None` where the benchmark's search did not measure the pick).
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    /// Matrix.
    pub matrix: String,
    /// Class.
    pub class: String,
    /// `f32 row-major` etc.
    pub key: String,
    /// Width.
    pub n: usize,
    /// The rule the record pick used: the one a leave-one-class-out over
    /// the other classes ranked first.
    pub rule: String,
    /// The record pick (records of other classes only).
    pub record_pick: Option<String>,
    /// Its fraction of the case's fastest measured time.
    pub record_fraction: Option<f64>,
    /// The former pick (8 nearest, equal weights, no regression).
    pub former_pick: Option<String>,
    /// Its fraction.
    pub former_fraction: Option<f64>,
    /// The prior's first variant (as the report's run ranked it).
    pub prior_pick: Option<String>,
    /// Its fraction.
    pub prior_fraction: Option<f64>,
    /// Mean standardised distance of the record pick's neighbours.
    pub distance: f64,
    /// The best fraction among the record ranking's first [`FIRST_K`]
    /// variants that the benchmark measured (what a search measuring them
    /// first would reach), `None` when it measured none of them.
    pub record_first16: Option<f64>,
    /// How many of those [`FIRST_K`] it measured.
    pub record_first16_measured: usize,
    /// The same for the prior's first [`FIRST_K`] (`None` in records built
    /// without them). The benchmark's search measured the prior's ranking
    /// in order first, so these are nearly all measured: the comparison
    /// leans the prior's way.
    pub prior_first16: Option<f64>,
    /// The same for the first [`FIRST_K`] of the search's order: the
    /// records' first [`SEARCH_LEAD`] and the prior's, alternately
    /// ([`interleave`]).
    pub order_first16: Option<f64>,
    /// The fraction of the pick of `rule` with each share of
    /// [`FOREST_SWEEP`] going to the forest, in that order.
    pub forest_sweep: Vec<Option<f64>>,
    /// The fraction of the pick of `rule` deciding each grouping of
    /// [`GROUP_SWEEP`] first, in that order.
    pub group_sweep: Vec<Option<f64>>,
}

/// Candidates of the first-k figure: as many as the SpMV policy's
/// first-16 evaluation.
pub const FIRST_K: usize = 16;

/// Forest shares the leave-one-class-out reports beside the rule's pick.
pub const FOREST_SWEEP: [f64; 4] = [0.25, 0.5, 0.75, 1.0];

/// Groupings the leave-one-class-out reports beside the rule's pick.
pub const GROUP_SWEEP: [Grouping; 2] = [Grouping::Path, Grouping::Family];

/// `variant`'s fraction of `r`'s fastest time, where measured.
pub(crate) fn fraction(all: &SpmmRecords, r: &SpmmRecord, variant: &SpmmVariant) -> Option<f64> {
    let id = variant.id();
    r.measured
        .iter()
        .find(|(i, _)| all.variants[*i as usize] == id)
        .map(|&(_, f)| f64::from(f))
}

/// The classes of the records, sorted.
pub(crate) fn classes(all: &SpmmRecords) -> Vec<&str> {
    let mut c: Vec<&str> = all.records.iter().map(|r| r.class.as_str()).collect();
    c.sort_unstable();
    c.dedup();
    c
}

/// A value type and dense layout: the records of one key are one model's.
pub type Key = (ValueType, DenseLayout);

/// For each class `held` but `outer`, each value type and layout: the
/// records of `held` picked by a model fitted without `held` and `outer`,
/// under every rule of `grid`; per key and rule the sum of the log
/// fractions of the measured picks, their count and the cases judged
/// (measured or not).
pub(crate) fn inner_scores_of(
    fits: &Fits,
    outer: Option<&str>,
    grid: &[PickRule],
) -> HashMap<Key, Vec<(f64, usize, usize)>> {
    let all = fits.all;
    let mut acc: HashMap<Key, Vec<(f64, usize, usize)>> = HashMap::new();
    for held in classes(all).into_iter().filter(|c| Some(*c) != outer) {
        let mut exclude: Vec<&str> = outer.into_iter().collect();
        exclude.push(held);
        for r in all.records.iter().filter(|r| r.class == held) {
            let model = fits.get(r, &exclude);
            let space = spmm_space(r.n, r.layout);
            let key_acc = acc
                .entry((r.value, r.layout))
                .or_insert_with(|| vec![(0.0, 0, 0); grid.len()]);
            for (rule, a) in grid.iter().zip(key_acc.iter_mut()) {
                let pick = model.rank(&r.vector, &space, *rule).first().map(|p| p.0);
                if let Some(f) = pick.and_then(|p| fraction(all, r, &p)) {
                    a.0 += f.ln();
                    a.1 += 1;
                }
                a.2 += 1;
            }
        }
    }
    acc
}

/// Of the rules `subset` (indices into the grid scored), the one with the
/// best geometric mean fraction over `scores` (sum of log fractions,
/// measured picks, cases), the first on ties; a rule with no measured pick
/// ranks last.
pub(crate) fn best_of(scores: &[(f64, usize, usize)], subset: &[usize]) -> usize {
    let mean = |i: usize| {
        let (s, m, _) = scores[i];
        if m == 0 {
            f64::NEG_INFINITY
        } else {
            s / m as f64
        }
    };
    subset
        .iter()
        .copied()
        .rev()
        .max_by(|&a, &b| mean(a).total_cmp(&mean(b)))
        .unwrap_or(0)
}

/// For each value type and layout, the rule of [`RULE_GRID`] with the best
/// geometric mean fraction in a leave-one-class-out over the classes other
/// than `outer` (the first on ties); with `outer` `None`, over every class.
/// Chosen apart per key (`spmm-blend-5`): a choice pooled over every key let
/// the row-major records decide the f64 and column-major rules, and left
/// several classes' rules flipping when one key's records changed.
pub fn choose_rules(all: &SpmmRecords, outer: Option<&str>) -> HashMap<Key, PickRule> {
    choose_rules_with(&Fits::new(all), outer)
}

/// [`choose_rules`] with the models of `fits`.
pub fn choose_rules_with(fits: &Fits, outer: Option<&str>) -> HashMap<Key, PickRule> {
    let all: Vec<usize> = (0..RULE_GRID.len()).collect();
    inner_scores_of(fits, outer, &RULE_GRID)
        .into_iter()
        .map(|(k, scores)| (k, RULE_GRID[best_of(&scores, &all)]))
        .collect()
}

/// Models fitted once per value type, layout, vector length and set of
/// left-out classes, shared by the threads of a leave-one-class-out: the
/// inner fold that leaves out classes a and b is the same for the outer
/// fold of a as for that of b, so each is fitted (and its knob regression
/// solved) once.
pub struct Fits<'a> {
    all: &'a SpmmRecords,
    models: Mutex<HashMap<FitKey, Arc<OnceLock<Arc<SpmmModel<'a>>>>>>,
}

type FitKey = (ValueType, DenseLayout, usize, Vec<String>);

impl<'a> Fits<'a> {
    /// No model fitted yet.
    pub fn new(all: &'a SpmmRecords) -> Fits<'a> {
        Fits {
            all,
            models: Mutex::default(),
        }
    }

    /// The model of `r`'s value type, layout and vector length without the
    /// classes of `exclude` (fitted on first use).
    pub fn get(&self, r: &SpmmRecord, exclude: &[&str]) -> Arc<SpmmModel<'a>> {
        let mut left: Vec<String> = exclude.iter().map(|c| c.to_string()).collect();
        left.sort_unstable();
        left.dedup();
        let key = (r.value, r.layout, r.vector.len(), left);
        let cell = self
            .models
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .clone();
        cell.get_or_init(|| {
            Arc::new(SpmmModel::fit(
                self.all,
                r.value,
                r.layout,
                r.vector.len(),
                exclude,
            ))
        })
        .clone()
    }
}

/// Judges every record with the records of the other classes, under the
/// rule a leave-one-class-out over those other classes chooses for its
/// value type and layout (nested: the held-out class never decides the
/// rule), beside the former rule.
pub fn judge(fits: &Fits) -> Vec<Judged> {
    let all = fits.all;
    let rules: HashMap<&str, HashMap<Key, PickRule>> = std::thread::scope(|s| {
        let handles: Vec<_> = classes(all)
            .into_iter()
            .map(|c| s.spawn(move || (c, choose_rules_with(fits, Some(c)))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("no panic"))
            .collect()
    });
    // One model per held-out class, value type and layout.
    all.records
        .iter()
        .map(|r| {
            let model = fits.get(r, &[&r.class]);
            // A key only the held-out class has records of: no other
            // class's figures, so the first rule (never reached: such a
            // model ranks nothing).
            let rule = rules[r.class.as_str()]
                .get(&(r.value, r.layout))
                .copied()
                .unwrap_or(RULE_GRID[0]);
            judge_one(all, &model, r, rule)
        })
        .collect()
}

fn judge_one(all: &SpmmRecords, model: &SpmmModel, r: &SpmmRecord, rule: PickRule) -> Judged {
    let space = spmm_space(r.n, r.layout);
    let ranking: Vec<SpmmVariant> = model
        .rank(&r.vector, &space, rule)
        .into_iter()
        .map(|p| p.0)
        .collect();
    let pick = ranking.first().copied();
    let head: Vec<f64> = ranking
        .iter()
        .take(FIRST_K)
        .filter_map(|v| fraction(all, r, v))
        .collect();
    let prior_head: Vec<SpmmVariant> = r
        .prior_head
        .iter()
        .filter_map(|id| SpmmVariant::parse(id).ok())
        .collect();
    let order = interleave(&ranking, &prior_head);
    let best_of = |vs: &[SpmmVariant]| {
        vs.iter()
            .take(FIRST_K)
            .filter_map(|v| fraction(all, r, v))
            .reduce(f64::max)
    };
    let former = model
        .rank(&r.vector, &space, RULE_GRID[0])
        .first()
        .map(|p| p.0);
    let prior = r.prior.as_deref().and_then(|p| SpmmVariant::parse(p).ok());
    let first_of = |rule: PickRule| {
        let pick = model.rank(&r.vector, &space, rule);
        pick.first().and_then(|p| fraction(all, r, &p.0))
    };
    let near = model.nearest(&r.vector, NEIGHBOURS);
    let distance = near.iter().map(|n| n.0).sum::<f64>() / near.len().max(1) as f64;
    Judged {
        matrix: r.matrix.clone(),
        class: r.class.clone(),
        key: format!("{} {}", r.value, r.layout.as_str()),
        n: r.n,
        rule: rule.name(),
        record_pick: pick.map(|p| p.id()),
        record_fraction: pick.and_then(|p| fraction(all, r, &p)),
        former_pick: former.map(|p| p.id()),
        former_fraction: former.and_then(|p| fraction(all, r, &p)),
        prior_pick: prior.map(|p| p.id()),
        prior_fraction: prior.and_then(|p| fraction(all, r, &p)),
        distance,
        record_first16: head.iter().copied().reduce(f64::max),
        record_first16_measured: head.len(),
        prior_first16: best_of(&prior_head),
        order_first16: (!prior_head.is_empty()).then(|| best_of(&order)).flatten(),
        forest_sweep: FOREST_SWEEP
            .iter()
            .map(|&share| first_of(rule.with_forest(share)))
            .collect(),
        group_sweep: GROUP_SWEEP
            .iter()
            .map(|&g| first_of(rule.with_grouping(g)))
            .collect(),
    }
}
