//! `cargo xtask retune` and `cargo xtask collect`: measured work on the GPU at hand.

use crate::common::{geomean, load_real_matrices, today};
use anyhow::{Context, Result, anyhow, bail};
use serde::Serialize;
use sparserl_build::builder::descriptor_fingerprint;
use sparserl_build::codegen::generator_fingerprint;
use sparserl_build::search::SampleResult;
use sparserl_build::{GpuTuner, LockEntry, LockFile, SearchConfig, read_descriptor};
use sparserl_policies::dataset::{Dataset, MatrixRecord};
use sparserl_policies::default_policy;
use sparserl_policies::provenance::Provenance;
use sparserl_rt::synth::Family;
use sparserl_rt::{Csr, Features, ValueType, Variant, full_space};
use std::path::PathBuf;
use std::time::Instant;

/// Arguments of `retune`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Crate directory whose Cargo.toml declares the kernels.
    #[arg(long, default_value = "example-app")]
    pub manifest_dir: PathBuf,
    /// Folder for the report (retune.json, retune.md, a copy of the lock file).
    #[arg(long, default_value = "target/retune")]
    pub out: PathBuf,
    /// Search budget per kernel in seconds (default: the descriptor's, else 30).
    #[arg(long)]
    pub budget: Option<f64>,
    /// Skip the exhaustive sweep of the core space used to judge the search.
    #[arg(long)]
    pub no_exhaustive: bool,
    /// Measure nothing: exit non-zero when a declared kernel has no lock
    /// entry or a stale one (descriptor, samples or generator changed). For CI.
    #[arg(long)]
    pub check: bool,
    /// Only these declared kernels (by name, repeated or comma-separated):
    /// the lock file's other entries are kept as they are. Default: every
    /// declared kernel.
    #[arg(long = "kernel", value_name = "NAME", value_delimiter = ',')]
    pub kernels: Vec<String>,
}

/// Indices of the declared kernels named in `names` (every kernel when
/// `names` is empty); an error naming the unknown ones and the declared ones.
fn selected(desc: &sparserl_build::Descriptor, names: &[String]) -> Result<Vec<usize>> {
    let declared: Vec<&str> = desc.kernels.iter().map(|k| k.name.as_str()).collect();
    let unknown: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| !declared.contains(n))
        .collect();
    if !unknown.is_empty() {
        bail!(
            "no kernel named {} in the manifest (declared: {})",
            unknown.join(", "),
            declared.join(", ")
        );
    }
    Ok((0..declared.len())
        .filter(|&i| names.is_empty() || names.iter().any(|n| n == declared[i]))
        .collect())
}

/// `retune --check`: every declared kernel must have a fresh lock entry.
fn check(dir: &std::path::Path, names: &[String]) -> Result<()> {
    let desc = read_descriptor(&dir.join("Cargo.toml"))?;
    let which = selected(&desc, names)?;
    let lock = LockFile::read(dir)?;
    let generator = sparserl_build::codegen::generator_fingerprint();
    let mut bad = Vec::new();
    for i in which {
        let decl = &desc.kernels[i];
        let fp = sparserl_build::builder::descriptor_fingerprint(&desc, i)?;
        let state = match &lock {
            _ if decl.spmm.is_some() => crate::retune_spmm::state(lock.as_ref(), &desc, i)?,
            None => "missing (no lock file)",
            Some(l) if l.fresh(&decl.name, &fp, &generator).is_some() => "fresh",
            Some(l) if l.kernel.iter().any(|e| e.name == decl.name) => {
                "stale (descriptor, samples or generator changed)"
            }
            Some(_) => "missing",
        };
        println!("retune --check: `{}`: {state}", decl.name);
        if state != "fresh" {
            bad.push(decl.name.clone());
        }
    }
    if !bad.is_empty() {
        bail!(
            "lock entries to refresh with `cargo xtask retune` on a GPU machine: {}",
            bad.join(", ")
        );
    }
    Ok(())
}

#[derive(Serialize)]
struct KernelOut {
    name: String,
    value: ValueType,
    samples: Vec<String>,
    budget_seconds: f64,
    search_wall_seconds: f64,
    candidates: usize,
    stopped: String,
    winner: String,
    winner_gbs: f64,
    winner_pct_copy: f64,
    /// Exhaustive comparison, re-measured side by side with more repetitions.
    exhaustive_best: Option<String>,
    exhaustive_best_gbs: Option<f64>,
    winner_gbs_remeasured: Option<f64>,
    winner_vs_exhaustive: Option<f64>,
    exhaustive_variants: Option<usize>,
    exhaustive_seconds: Option<f64>,
}

fn geo_correct(res: &[SampleResult]) -> f64 {
    if res.is_empty() || res.iter().any(|r| !r.correct) {
        return 0.0;
    }
    geomean(&res.iter().map(|r| r.gbs).collect::<Vec<_>>())
}

/// Median over `rounds` re-measurements with `reps` repetitions each.
fn remeasure(
    tuner: &GpuTuner,
    mats: &[&Csr],
    value: ValueType,
    variants: &[Variant],
    rounds: usize,
    reps: u32,
) -> Result<Vec<f64>> {
    let mut per: Vec<Vec<f64>> = vec![Vec::new(); variants.len()];
    for _ in 0..rounds {
        let r = tuner
            .sweep(mats, value, variants, reps)
            .map_err(|e| anyhow!("{e}"))?;
        for (i, (_, res)) in r.iter().enumerate() {
            per[i].push(geo_correct(res));
        }
    }
    Ok(per
        .into_iter()
        .map(|mut v| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        })
        .collect())
}

/// Applies `decl`'s objective to its time search's outcome `out` (the
/// build's energy phase, [`sparserl_build::gpu_energy::apply_objective`]):
/// the outcome with the objective's pick as its winner, and the record.
pub(crate) fn apply_objective(
    tuner: &GpuTuner,
    mats: &[&Csr],
    decl: &sparserl_build::KernelDecl,
    mut out: sparserl_build::TuneOutcome,
) -> Result<(
    sparserl_build::TuneOutcome,
    Option<sparserl_build::ObjectiveRecord>,
)> {
    let choice = sparserl_build::gpu_energy::apply_objective(
        tuner,
        mats,
        decl.value,
        sparserl_build::gpu::measured_epilogue(&decl.epilogues),
        &decl.objective,
        &out,
        &mut |m| eprintln!("warning: {m}"),
    )
    .map_err(|e| anyhow!("energy phase for `{}` failed: {e}", decl.name))?;
    if let Some(r) = &choice.record {
        println!("  {}", r.summary());
    }
    out.winner = choice.winner;
    out.gbs = choice.gbs;
    Ok((out, choice.record))
}

/// The lock entry of kernel `i` of `desc` for the search outcome `out` on
/// `tuner` (its winner: the objective's pick) and the objective's record.
pub(crate) fn lock_entry(
    desc: &sparserl_build::Descriptor,
    i: usize,
    tuner: &GpuTuner,
    out: &sparserl_build::TuneOutcome,
    objective: Option<sparserl_build::ObjectiveRecord>,
) -> Result<LockEntry> {
    let decl = &desc.kernels[i];
    let pct = 100.0 * out.gbs / tuner.copy_gbs();
    Ok(LockEntry {
        name: decl.name.clone(),
        value: decl.value,
        descriptor: descriptor_fingerprint(desc, i)?,
        generator: generator_fingerprint(),
        gpu: tuner.name(),
        gbs: (out.gbs * 10.0).round() / 10.0,
        pct_copy: (pct * 10.0).round() / 10.0,
        candidates: out.candidates as u32,
        variant: out.winner,
        objective,
    })
}

/// Runs `retune`.
pub fn run(args: Args) -> Result<()> {
    let root = crate::common::workspace_root();
    let dir = root.join(&args.manifest_dir);
    if args.check {
        return check(&dir, &args.kernels);
    }
    let desc = read_descriptor(&dir.join("Cargo.toml"))?;
    let which = selected(&desc, &args.kernels)?;
    let tuner = GpuTuner::probe().map_err(|e| anyhow!("no GPU: {e}"))?;
    let copy = tuner.copy_gbs();
    println!(
        "retune: {} ({}), copy bandwidth {copy:.0} GB/s, {} kernels",
        tuner.name(),
        tuner.arch(),
        which.len()
    );
    let existing = LockFile::read(&dir)?;
    let had_lock = existing.is_some();
    let mut lock = existing.unwrap_or_default();
    let policy = default_policy();
    let mut outs = Vec::new();
    for i in which {
        let decl = &desc.kernels[i];
        if let Some(s) = &decl.spmm {
            let budget = args.budget.or(desc.budget_seconds).unwrap_or(30.0);
            crate::retune_spmm::retune(&tuner, &desc, i, s, budget, &mut lock)?;
            continue;
        }
        let samples = desc.load_samples(i)?;
        let mats: Vec<&Csr> = samples.iter().map(|s| &s.matrix).collect();
        let feats = Features::compute(mats[0]);
        let proposals: Vec<Variant> = policy
            .propose(&feats, decl.value, 16)
            .into_iter()
            .map(|p| p.variant)
            .collect();
        let budget = args.budget.or(desc.budget_seconds).unwrap_or(30.0);
        let cfg = SearchConfig {
            budget_seconds: budget,
            reorders: decl.allowed_reorders(),
            ..SearchConfig::default()
        };
        println!(
            "\nkernel `{}` ({}), {} sample(s): {}",
            decl.name,
            decl.value,
            samples.len(),
            samples
                .iter()
                .map(|s| s.label.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(e) = sparserl_build::gpu::measured_epilogue(&decl.epilogues) {
            println!("  measured with its fused `{e}` epilogue (what its solver launches)");
        }
        let t0 = Instant::now();
        let out = tuner
            .tune_with(
                &mats,
                decl.value,
                &proposals,
                &cfg,
                sparserl_build::gpu::measured_epilogue(&decl.epilogues),
            )
            .map_err(|e| anyhow!("search for `{}` failed: {e}", decl.name))?;
        let wall = t0.elapsed().as_secs_f64();
        println!(
            "  search: {} candidates in {wall:.1} s (budget {budget:.0} s; {}), winner {} at {:.0} GB/s = {:.1}% of copy",
            out.candidates,
            out.stopped,
            out.winner,
            out.gbs,
            100.0 * out.gbs / copy
        );
        let (out, objective) = apply_objective(&tuner, &mats, decl, out)?;
        let pct = 100.0 * out.gbs / copy;
        let mut k = KernelOut {
            name: decl.name.clone(),
            value: decl.value,
            samples: samples.iter().map(|s| s.label.clone()).collect(),
            budget_seconds: budget,
            search_wall_seconds: wall,
            candidates: out.candidates,
            stopped: out.stopped.clone(),
            winner: out.winner.id(),
            winner_gbs: out.gbs,
            winner_pct_copy: pct,
            exhaustive_best: None,
            exhaustive_best_gbs: None,
            winner_gbs_remeasured: None,
            winner_vs_exhaustive: None,
            exhaustive_variants: None,
            exhaustive_seconds: None,
        };
        if !args.no_exhaustive {
            let t1 = Instant::now();
            let space = full_space();
            let sweep = tuner
                .sweep(&mats, decl.value, &space, 10)
                .map_err(|e| anyhow!("{e}"))?;
            let mut ranked: Vec<(Variant, f64)> =
                sweep.iter().map(|(v, r)| (*v, geo_correct(r))).collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            // Side by side, more repetitions: the sweep's top three and the winner.
            let mut finalists: Vec<Variant> = ranked.iter().take(3).map(|r| r.0).collect();
            if !finalists.contains(&out.winner) {
                finalists.push(out.winner);
            }
            let med = remeasure(&tuner, &mats, decl.value, &finalists, 3, 100)?;
            let (bi, best) = med
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map(|(i, g)| (i, *g))
                .unwrap_or((0, 0.0));
            let wi = finalists.iter().position(|v| *v == out.winner).unwrap_or(0);
            let ratio = if best > 0.0 { med[wi] / best } else { 0.0 };
            println!(
                "  exhaustive: {} variants in {:.1} s; best {} at {best:.0} GB/s; winner re-measured {:.0} GB/s = {:.1}% of the exhaustive best",
                sweep.len(),
                t1.elapsed().as_secs_f64(),
                finalists[bi],
                med[wi],
                100.0 * ratio
            );
            k.exhaustive_best = Some(finalists[bi].id());
            k.exhaustive_best_gbs = Some(best);
            k.winner_gbs_remeasured = Some(med[wi]);
            k.winner_vs_exhaustive = Some(ratio);
            k.exhaustive_variants = Some(sweep.len());
            k.exhaustive_seconds = Some(t1.elapsed().as_secs_f64());
        }
        lock.upsert(lock_entry(&desc, i, &tuner, &out, objective)?);
        outs.push(k);
    }
    let lock_path = lock.write(&dir)?;
    if !had_lock {
        // Builds watch the lock file only once it exists: bump the manifest's
        // modification time so the next `cargo build` notices the new file.
        if let Ok(f) = std::fs::File::options()
            .append(true)
            .open(dir.join("Cargo.toml"))
        {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
    }
    std::fs::create_dir_all(&args.out)?;
    std::fs::copy(&lock_path, args.out.join(sparserl_build::LOCK_FILE))?;
    let report = serde_json::json!({
        "gpu": tuner.name(),
        "arch": tuner.arch(),
        "driver": crate::common::driver_version(),
        "date": today(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
        "copy_gbs": copy,
        "kernels": outs,
    });
    std::fs::write(
        args.out.join("retune.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    let mut md = format!(
        "# Retune on {}\n\nDate {}, copy bandwidth {copy:.0} GB/s, command `{}`.\n\n| kernel | value | candidates | search s (budget) | winner | GB/s | % copy | exhaustive best | best GB/s | winner / best |\n|---|---|---|---|---|---|---|---|---|---|\n",
        tuner.name(),
        today(),
        std::env::args().collect::<Vec<_>>().join(" ")
    );
    for k in &outs {
        md += &format!(
            "| {} | {} | {} | {:.1} ({:.0}) | `{}` | {:.0} | {:.1} | {} | {} | {} |\n",
            k.name,
            k.value,
            k.candidates,
            k.search_wall_seconds,
            k.budget_seconds,
            k.winner,
            k.winner_gbs,
            k.winner_pct_copy,
            k.exhaustive_best
                .as_deref()
                .map(|s| format!("`{s}`"))
                .unwrap_or("-".into()),
            k.exhaustive_best_gbs
                .map(|g| format!("{g:.0}"))
                .unwrap_or("-".into()),
            k.winner_vs_exhaustive
                .map(|r| format!("{:.1}%", 100.0 * r))
                .unwrap_or("-".into()),
        );
    }
    std::fs::write(args.out.join("retune.md"), &md)?;
    println!("\n{md}\nlock file written to {}", lock_path.display());
    Ok(())
}

/// Arguments of `collect`.
#[derive(clap::Args, Debug)]
pub struct CollectArgs {
    /// Folder of real Matrix Market matrices (with MANIFEST.tsv for classes).
    #[arg(long)]
    pub matrices: Option<PathBuf>,
    /// Output dataset (.json.gz).
    #[arg(long, default_value = "target/collect/dataset.json.gz")]
    pub out: PathBuf,
    /// Value types to measure: f32, f64 or both.
    #[arg(long, default_value = "both")]
    pub value: String,
    /// Timed repetitions per variant.
    #[arg(long, default_value_t = 10)]
    pub reps: u32,
    /// Stop starting new matrices after this many seconds.
    #[arg(long, default_value_t = 300.0)]
    pub max_seconds: f64,
    /// Instead of the whole core space, measure the policy's top proposals
    /// (this many per matrix) and merge them into `--append`.
    #[arg(long)]
    pub from_policy: Option<usize>,
    /// Existing dataset to merge into.
    #[arg(long)]
    pub append: Option<PathBuf>,
    /// Also measure the energy per call (NVML) of each record's this many
    /// fastest correct variants (0: time only).
    #[arg(long, default_value_t = 0)]
    pub energy_top: usize,
    /// Which design space to measure (without `--from-policy`): `core` (CSR
    /// strategies), `layout` (strategies that need another layout, measured
    /// only on matrices that have it) or `full` (both).
    #[arg(long, value_enum, default_value = "full")]
    pub space: SpaceArg,
    /// Smaller synthetic matrices (smoke runs).
    #[arg(long)]
    pub quick: bool,
    /// Which matrices to measure: `training` (the real matrices and the
    /// synthetic families), `large` (bandwidth-bound synthetic matrices of
    /// the training families, see [`large_corpus`]) or `families` (further
    /// structure families, see [`crate::families::corpus`]).
    #[arg(long, value_enum, default_value = "training")]
    pub corpus: CorpusArg,
    /// Seed of the families corpus (`--corpus families`).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// With `--corpus families`: only these classes (comma-separated, e.g.
    /// `dense-rows`); every family when absent.
    #[arg(long, value_delimiter = ',')]
    pub family: Vec<String>,
    /// Build every matrix and print what would be measured; no GPU needed.
    #[arg(long)]
    pub dry_run: bool,
}

/// Corpus of `collect`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorpusArg {
    /// Real matrices (`--matrices`) and [`synthetic_corpus`].
    Training,
    /// [`large_corpus`].
    Large,
    /// The families corpus ([`crate::families::corpus`]): seeded random
    /// instances of further structure families, small to past L2, each in
    /// one value type (`--value` filters them).
    Families,
}

/// Design space of `collect`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceArg {
    /// `sparserl_rt::core_space()`.
    Core,
    /// `sparserl_rt::layout_space()`.
    Layout,
    /// `sparserl_rt::full_space()`.
    Full,
}

/// The synthetic part of the training corpus: (name, class, matrix).
pub fn synthetic_corpus(quick: bool) -> Result<Vec<(String, String, Csr)>> {
    let s = if quick { 8 } else { 1 };
    let g2 = |n: usize| n / (s as f64).sqrt() as usize;
    // The shared vocabulary of synthetic families, with the seed of each.
    let mut out = vec![
        (
            "stencil2d-5pt-1024".to_string(),
            "stencil",
            (
                Family::Stencil {
                    grid: vec![g2(1024), g2(1024)],
                    points: 5,
                },
                0,
            ),
        ),
        (
            "stencil2d-9pt-512".into(),
            "stencil",
            (
                Family::Stencil {
                    grid: vec![g2(512), g2(512)],
                    points: 9,
                },
                0,
            ),
        ),
        (
            "stencil3d-7pt-96".into(),
            "stencil",
            (
                Family::Stencil {
                    grid: vec![96 / s.min(4), 96, 96],
                    points: 7,
                },
                0,
            ),
        ),
        (
            "stencil3d-27pt-48".into(),
            "stencil",
            (
                Family::Stencil {
                    grid: vec![48 / s.min(4), 48, 48],
                    points: 27,
                },
                0,
            ),
        ),
        (
            "banded-200k-bw16-d8".into(),
            "banded",
            (
                Family::Banded {
                    rows: 200_000 / s,
                    bandwidth: 16,
                    avg_degree: 8.0,
                },
                1,
            ),
        ),
        (
            "banded-1m-bw64-d24".into(),
            "banded",
            (
                Family::Banded {
                    rows: 1_000_000 / s,
                    bandwidth: 64,
                    avg_degree: 24.0,
                },
                2,
            ),
        ),
        (
            "powerlaw-200k-d8-e2.0".into(),
            "power-law",
            (
                Family::PowerLaw {
                    rows: 200_000 / s,
                    avg_degree: 8.0,
                    exponent: 2.0,
                },
                3,
            ),
        ),
        (
            "powerlaw-400k-d16-e2.1".into(),
            "power-law",
            (
                Family::PowerLaw {
                    rows: 400_000 / s,
                    avg_degree: 16.0,
                    exponent: 2.1,
                },
                4,
            ),
        ),
        (
            "powerlaw-500k-d4-e1.8".into(),
            "power-law",
            (
                Family::PowerLaw {
                    rows: 500_000 / s,
                    avg_degree: 4.0,
                    exponent: 1.8,
                },
                5,
            ),
        ),
        (
            "uniform-1m-d2".into(),
            "uniform",
            (
                Family::Uniform {
                    rows: 1_000_000 / s,
                    cols: 1_000_000 / s,
                    avg_degree: 2.0,
                },
                6,
            ),
        ),
        (
            "uniform-500k-d8".into(),
            "uniform",
            (
                Family::Uniform {
                    rows: 500_000 / s,
                    cols: 500_000 / s,
                    avg_degree: 8.0,
                },
                7,
            ),
        ),
        (
            "uniform-100k-d64".into(),
            "uniform",
            (
                Family::Uniform {
                    rows: 100_000 / s,
                    cols: 100_000 / s,
                    avg_degree: 64.0,
                },
                8,
            ),
        ),
        (
            "uniform-20k-d512".into(),
            "uniform",
            (
                Family::Uniform {
                    rows: 20_000 / s,
                    cols: 20_000 / s,
                    avg_degree: 512.0,
                },
                9,
            ),
        ),
        (
            "block-300k-4x4-b4".into(),
            "block",
            (
                Family::Block {
                    rows: 300_000 / s / 4 * 4,
                    block: [4, 4],
                    blocks_per_row: 4,
                },
                10,
            ),
        ),
        (
            "block-120k-8x8-b2".into(),
            "block",
            (
                Family::Block {
                    rows: 120_000 / s / 8 * 8,
                    block: [8, 8],
                    blocks_per_row: 2,
                },
                11,
            ),
        ),
    ]
    .into_iter()
    .map(|(n, c, (family, seed))| Ok((n, c.to_string(), family.build(seed)?)))
    .collect::<Result<Vec<_>>>()?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Large matrices of the training families (15-40 M nonzeros, larger than
/// the L2 cache: the bandwidth-bound regime), with parameters other than
/// the benchmark's large suite; `quick` divides the sizes by 64. None is of
/// a structure class the irregular benchmark set evaluates the policy on
/// (recursive, power-law graph, mesh, road, circuit).
pub fn large_corpus(quick: bool) -> Result<Vec<(String, String, Csr)>> {
    large_families(quick)
        .into_iter()
        .enumerate()
        .map(|(i, (n, c, family))| {
            Ok((n.to_string(), c.to_string(), family.build(100 + i as u64)?))
        })
        .collect()
}

/// The (name, class, family) list of [`large_corpus`].
fn large_families(quick: bool) -> Vec<(&'static str, &'static str, Family)> {
    let d = if quick { 64 } else { 1 };
    let pl = |rows: usize, avg_degree: f64, exponent: f64| Family::PowerLaw {
        rows: rows / d,
        avg_degree,
        exponent,
    };
    let uni = |rows: usize, cols: usize, avg_degree: f64| Family::Uniform {
        rows: rows / d,
        cols: cols / d,
        avg_degree,
    };
    vec![
        (
            "large-powerlaw-2m-d8-e2.2",
            "power-law",
            pl(2_000_000, 8.0, 2.2),
        ),
        (
            "large-powerlaw-3m-d6-e3.0",
            "power-law",
            pl(3_000_000, 6.0, 3.0),
        ),
        (
            "large-powerlaw-1m-d24-e1.9",
            "power-law",
            pl(1_000_000, 24.0, 1.9),
        ),
        (
            "large-uniform-2m-d10",
            "uniform",
            uni(2_000_000, 2_000_000, 10.0),
        ),
        (
            "large-uniform-6m-d3",
            "short-rows",
            uni(6_000_000, 6_000_000, 3.0),
        ),
        (
            "large-uniform-40k-d800",
            "long-rows",
            uni(40_000, 1_000_000, 800.0),
        ),
        (
            "large-banded-2m-bw32-d12",
            "banded",
            Family::Banded {
                rows: 2_000_000 / d,
                bandwidth: 32,
                avg_degree: 12.0,
            },
        ),
        (
            "large-block-1m-4x4-b4",
            "block",
            Family::Block {
                rows: 1_000_000 / d / 4 * 4,
                block: [4, 4],
                blocks_per_row: 4,
            },
        ),
        (
            "large-stencil2d-9pt-1500",
            "stencil",
            Family::Stencil {
                grid: vec![1500 / d.isqrt(), 1500 / d.isqrt()],
                points: 9,
            },
        ),
        (
            "large-skewed-4m-h4",
            "skewed",
            Family::Skewed {
                rows: 4_000_000 / d,
                huge: 4,
                huge_len: 500_000 / d,
            },
        ),
    ]
}

/// One matrix of a `collect` run: built already, or planned (built when
/// its turn comes, so the time guard also skips its generation).
enum Source {
    Built(Csr),
    Planned(crate::families::FamilyMatrix),
}

/// A matrix to measure, with the value types to measure it in.
struct Entry {
    name: String,
    class: String,
    values: Vec<ValueType>,
    provenance: Option<Provenance>,
    source: Source,
}

/// Provenance of a real matrix: the folder's name, the file and its sha256.
fn real_provenance(dir: &std::path::Path, name: &str) -> Option<Provenance> {
    let files = crate::common::mtx_files(dir).ok()?;
    let p = files
        .iter()
        .find(|p| crate::common::matrix_name(p) == name)?;
    let bytes = std::fs::read(p).ok()?;
    let origin = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let file = p.file_name()?.to_string_lossy().to_string();
    Some(Provenance::real(&origin, &file, None, &bytes))
}

/// The matrices of a `collect` run.
fn collect_entries(args: &CollectArgs, values: &[ValueType]) -> Result<Vec<Entry>> {
    let built = |(name, class, csr): (String, String, Csr)| Entry {
        provenance: Some(Provenance::Generated {
            generator: "sparserl-rt::synth::Family".into(),
            params: serde_json::json!({ "name": name }),
            seed: 0,
        }),
        name,
        class,
        values: values.to_vec(),
        source: Source::Built(csr),
    };
    match args.corpus {
        CorpusArg::Large => Ok(large_corpus(args.quick)?.into_iter().map(built).collect()),
        CorpusArg::Families => {
            let plan = crate::families::corpus(args.seed, args.quick);
            if let Some(f) = args
                .family
                .iter()
                .find(|f| !plan.iter().any(|m| m.class == **f))
            {
                let mut known: Vec<_> = plan.iter().map(|m| m.class.as_str()).collect();
                known.sort_unstable();
                known.dedup();
                bail!("--family {f}: no such family (known: {})", known.join(", "));
            }
            Ok(plan
                .into_iter()
                .filter(|m| values.contains(&m.value))
                .filter(|m| args.family.is_empty() || args.family.contains(&m.class))
                .map(|m| Entry {
                    name: m.name.clone(),
                    class: m.class.clone(),
                    values: vec![m.value],
                    provenance: Some(m.provenance()),
                    source: Source::Planned(m),
                })
                .collect())
        }
        CorpusArg::Training => {
            let dir = args.matrices.clone().unwrap_or_else(|| {
                let d = PathBuf::from(".device/matrices");
                if d.exists() {
                    d
                } else {
                    PathBuf::from("tests/fixtures/matrices")
                }
            });
            // Real matrices first: they are quick, and the time guard then
            // only trims the larger synthetic ones.
            let mut out = Vec::new();
            for m in
                load_real_matrices(&dir).with_context(|| format!("reading {}", dir.display()))?
            {
                out.push(Entry {
                    provenance: real_provenance(&dir, &m.name),
                    name: m.name,
                    class: m.class,
                    values: values.to_vec(),
                    source: Source::Built(m.csr),
                });
            }
            out.extend(synthetic_corpus(args.quick)?.into_iter().map(built));
            Ok(out)
        }
    }
}

/// Measures `variants` of one matrix and value type into a record (`None`
/// when no variant of the space applies).
fn measure(
    tuner: &GpuTuner,
    ds: &mut Dataset,
    csr: &Csr,
    value: ValueType,
    variants: &[Variant],
    reps: u32,
) -> Result<Vec<(usize, f64, f64, bool)>> {
    let res = tuner
        .sweep(&[csr], value, variants, reps)
        .map_err(|e| anyhow!("{e}"))?;
    let mut results = Vec::new();
    for (v, r) in &res {
        let idx = match ds.variant_index(v) {
            Some(i) => i,
            None => {
                ds.variants.push(*v);
                ds.variants.len() - 1
            }
        };
        let s = &r[0];
        results.push((
            idx,
            if s.correct { s.gbs } else { 0.0 },
            sparserl_policies::dataset::finite_err(s.rel_err),
            s.correct,
        ));
    }
    Ok(results)
}

/// `collect --dry-run`: builds every matrix and prints what would be measured.
fn dry_run(entries: Vec<Entry>, max_seconds: f64) -> Result<()> {
    let t0 = Instant::now();
    let mut total = 0usize;
    for e in entries {
        if t0.elapsed().as_secs_f64() > max_seconds {
            println!("  {:<40} skipped for time", e.name);
            continue;
        }
        let t1 = Instant::now();
        let csr = match e.source {
            Source::Built(c) => c,
            Source::Planned(m) => m.build().with_context(|| e.name.clone())?,
        };
        let f = Features::compute(&csr);
        total += csr.nnz();
        println!(
            "  {:<40} {:<18} {:<8} {}x{} nnz {:>9} cv {:>5.2} max/mean {:>8.1} built in {:.2}s | {}",
            e.name,
            e.class,
            e.values
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("+"),
            csr.rows(),
            csr.cols(),
            csr.nnz(),
            f.cv_row,
            f.max_over_mean,
            t1.elapsed().as_secs_f64(),
            e.provenance
                .as_ref()
                .map(Provenance::describe)
                .unwrap_or_default()
        );
    }
    println!(
        "collect --dry-run: {total} nonzeros in {:.0} s (nothing measured)",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

fn parse_values(v: &str) -> Result<Vec<ValueType>> {
    match v {
        "f32" => Ok(vec![ValueType::F32]),
        "f64" => Ok(vec![ValueType::F64]),
        "both" => Ok(vec![ValueType::F32, ValueType::F64]),
        other => Err(anyhow!("--value {other}: expected f32, f64 or both")),
    }
}

/// Runs `collect`.
pub fn collect(args: CollectArgs) -> Result<()> {
    let t0 = Instant::now();
    let values = parse_values(&args.value)?;
    let entries = collect_entries(&args, &values)?;
    if args.dry_run {
        return dry_run(entries, args.max_seconds);
    }
    let tuner = GpuTuner::probe().map_err(|e| anyhow!("no GPU: {e}"))?;
    let space = match args.space {
        SpaceArg::Core => sparserl_rt::core_space(),
        SpaceArg::Layout => sparserl_rt::layout_space(),
        SpaceArg::Full => full_space(),
    };
    let meter = (args.energy_top > 0)
        .then(|| crate::collect_energy::CollectMeter::open(&tuner))
        .transpose()?;
    let policy = default_policy();
    let mut ds = Dataset {
        gpu: tuner.name(),
        copy_gbs: tuner.copy_gbs(),
        date: today(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        feature_names: Features::NAMES.iter().map(|s| s.to_string()).collect(),
        variants: Vec::new(),
        matrices: Vec::new(),
    };
    println!(
        "collect: {} matrices on {} (copy {:.0} GB/s)",
        entries.len(),
        ds.gpu,
        ds.copy_gbs
    );
    let mut skipped = 0;
    for e in entries {
        if t0.elapsed().as_secs_f64() > args.max_seconds {
            skipped += e.values.len();
            continue;
        }
        let csr = match e.source {
            Source::Built(c) => c,
            Source::Planned(m) => m.build().with_context(|| e.name.clone())?,
        };
        let feats = Features::compute(&csr);
        for &value in &e.values {
            if t0.elapsed().as_secs_f64() > args.max_seconds {
                skipped += 1;
                continue;
            }
            let t1 = Instant::now();
            let variants: Vec<Variant> = match args.from_policy {
                Some(k) => policy
                    .propose(&feats, value, k)
                    .into_iter()
                    .map(|p| p.variant)
                    .collect(),
                None => space.clone(),
            };
            let results = measure(&tuner, &mut ds, &csr, value, &variants, args.reps)
                .with_context(|| e.name.clone())?;
            let energy = match &meter {
                Some(m) => m
                    .fastest(&tuner, &csr, value, &ds.variants, &results, args.energy_top)
                    .with_context(|| e.name.clone())?,
                None => Vec::new(),
            };
            let rec = MatrixRecord {
                energy,
                name: e.name.clone(),
                class: e.class.clone(),
                value,
                features: feats.to_vec().to_vec(),
                results,
                cannot_run: Vec::new(),
                provenance: e.provenance.clone(),
            };
            let name = &e.name;
            if rec.results.is_empty() {
                println!("  {name:<28} {value} no variant of this space applies");
                continue;
            }
            let wrong = rec.results.iter().filter(|r| !r.3).count();
            println!(
                "  {name:<28} {value} nnz {:>9}  best {:>7.0} GB/s  {} variants ({} wrong)  {:.1}s",
                csr.nnz(),
                rec.best_gbs(),
                rec.results.len(),
                wrong,
                t1.elapsed().as_secs_f64()
            );
            ds.matrices.push(rec);
            // Written after every matrix: a run cut short keeps what it measured.
            if args.append.is_none() {
                ds.write(&args.out)?;
            }
        }
    }
    if let Some(base) = &args.append {
        let mut merged = Dataset::read(base)?;
        merged.command = format!("{} ; {}", merged.command, ds.command);
        merged.merge(ds);
        ds = merged;
    }
    ds.write(&args.out)?;
    println!(
        "collect: {} records, {} variants, {skipped} skipped for time, written to {} in {:.0} s",
        ds.matrices.len(),
        ds.variants.len(),
        args.out.display(),
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_large_corpus_is_large_and_of_training_classes_only() {
        for (name, class, family) in large_families(false) {
            let nnz = match family {
                Family::Block {
                    rows,
                    block,
                    blocks_per_row,
                } => (rows * block[1] * blocks_per_row) as u64,
                f => f.expected_nnz().unwrap_or(0),
            };
            assert!((12_000_000..=45_000_000).contains(&nnz), "{name}: {nnz}");
            let evaluated = ["recursive", "power-law-graph", "mesh", "road", "circuit"];
            assert!(!evaluated.contains(&class), "{name}");
        }
        let quick = large_corpus(true).unwrap();
        assert_eq!(quick.len(), large_families(true).len());
        let names: std::collections::BTreeSet<_> = quick.iter().map(|m| &m.0).collect();
        assert_eq!(names.len(), quick.len());
        assert!(quick.iter().all(|m| m.2.nnz() > 0));
    }

    /// A copy of example-app's declarations and lock file in a temp dir.
    fn copy_example(dir: &std::path::Path) {
        let src = crate::common::workspace_root().join("example-app");
        std::fs::create_dir_all(dir.join("matrices")).unwrap();
        for f in ["Cargo.toml", "SparseRL.lock", "matrices/1138_bus.mtx"] {
            std::fs::copy(src.join(f), dir.join(f)).unwrap();
        }
    }

    #[test]
    fn check_passes_on_the_committed_lock_and_fails_when_stale_or_missing() {
        let tmp = tempfile::tempdir().unwrap();
        copy_example(tmp.path());
        check(tmp.path(), &[]).expect("example-app's committed lock file is fresh");
        // Another grid: the poisson3d entry no longer describes the kernel.
        let manifest = tmp.path().join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest).unwrap();
        std::fs::write(&manifest, text.replace("[128, 128, 128]", "[64, 64, 64]")).unwrap();
        let err = check(tmp.path(), &[]).unwrap_err().to_string();
        assert!(
            err.contains("poisson3d") && !err.contains("pagerank"),
            "{err}"
        );
        // Only the kernels named: the stale one is not among them.
        check(tmp.path(), &["pagerank".into(), "gcn".into()]).expect("those entries are fresh");
        let err = check(tmp.path(), &["nope".into()]).unwrap_err().to_string();
        assert!(
            err.contains("no kernel named nope") && err.contains("poisson3d, pagerank"),
            "{err}"
        );
        std::fs::remove_file(tmp.path().join(sparserl_build::LOCK_FILE)).unwrap();
        let err = check(tmp.path(), &[]).unwrap_err().to_string();
        assert!(err.contains("poisson3d, pagerank, power_bus"), "{err}");
    }
}
