//! `cargo xtask bench-scale`: SpMV past the 32-bit path on one GPU.
//!
//! Generates the scale set on the host in parallel (`generate.rs`: R-MAT scale
//! 24..28 with 16 edges per vertex, a randomly numbered 3-D 7-point mesh of
//! 470^3 = 104 M rows, a power-law graph with hub columns of 100 M
//! vertices; f32), validates it through `LargeCsr::try_from_parts`, and per
//! matrix runs two numberings: the given one (random) and the one the
//! product renumbers to (`run::renumber_rule`: degree order for skewed row
//! lengths, reverse Cuthill-McKee otherwise), computed on the host on every
//! core while the given order runs on the device, timed, and built as new
//! arrays (`P A Pᵀ`). On each numbering: upload with the memory check; the
//! cost model's first [`SELECTION_TOP`] variants checked against float64
//! on sampled rows, then timed (every variant on the first matrix, to see
//! how far the pick is from the best); cuSPARSE with 64-bit index types
//! and, where the matrix fits, 32-bit ones on the same arrays, each
//! algorithm checked the same way before it is timed; the device arrays
//! freed before the next upload. The product's speedup is cuSPARSE on the
//! given order over ours renumbered; the DRAM traffic floor at the copy
//! bandwidth measured in the same run; one PageRank-shaped iteration (ours
//! renumbered, cuSPARSE given) with the same vector kernels. The report is
//! rewritten after every matrix (`partial` until the end); progress goes to
//! stderr. Without a GPU it generates, validates and renumbers only (a
//! smoke test: `--small`).

mod generate;
mod report;
mod run;
#[cfg(test)]
mod tests;
mod vendor;

use anyhow::{Context, Result};
use report::{Report, render_markdown};
use std::path::PathBuf;
use std::time::Instant;

/// How many of the cost model's ranked variants the selection measures.
pub const SELECTION_TOP: usize = 4;

/// Arguments of `cargo xtask bench-scale`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output folder of the report.
    #[arg(long, default_value = "docs/benchmarks")]
    pub out: PathBuf,
    /// File stem of the report (`<stem>.json`, `<stem>.md`).
    #[arg(long, default_value = "spmv-scale-h200")]
    pub stem: String,
    /// The commit that was built (recorded in the report).
    #[arg(long, default_value = "unknown")]
    pub commit: String,
    /// R-MAT scales (2^scale vertices, 16 edges per vertex).
    #[arg(long, value_delimiter = ',', default_value = "24,25,26,27,28")]
    pub scales: Vec<u32>,
    /// Time guard for the whole run, seconds: a matrix is started only when
    /// its predicted time (from the matrices done) fits in what is left.
    #[arg(long, default_value_t = 420.0)]
    pub max_seconds: f64,
    /// Leave out the 3-D mesh.
    #[arg(long)]
    pub skip_mesh: bool,
    /// Leave out the power-law graph.
    #[arg(long)]
    pub skip_powerlaw: bool,
    /// Tiny sizes (R-MAT scales 10 and 12, a 24^3 mesh, a 20 000-vertex
    /// power-law graph): a smoke test, with or without a GPU.
    #[arg(long)]
    pub small: bool,
    /// Timed calls per variant (at most; each within a 1 s guard).
    #[arg(long, default_value_t = 10)]
    pub reps: u32,
    /// Side of the 3-D mesh (`side^3` rows; the default 470 gives 104 M).
    #[arg(long, default_value_t = 470)]
    pub mesh_side: u64,
    /// Vertices of the power-law graph.
    #[arg(long, default_value_t = 100_000_000)]
    pub powerlaw_n: u64,
    /// Seed of the generators and of `x`.
    #[arg(long, default_value_t = 0x5ca1e)]
    pub seed: u64,
}

/// One matrix to generate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Spec {
    /// R-MAT of `2^scale` vertices, 16 edges per vertex.
    Rmat(u32),
    /// A `side^3` 7-point mesh.
    Mesh(u64),
    /// A power-law graph of `n` vertices.
    Powerlaw(u64),
}

impl Spec {
    /// Name in reports.
    pub fn name(self) -> String {
        match self {
            Spec::Rmat(s) => format!("rmat-s{s}"),
            Spec::Mesh(side) => format!("mesh3d-{side}"),
            Spec::Powerlaw(n) => format!("powerlaw-{n}"),
        }
    }
    /// Rows.
    pub fn rows(self) -> u64 {
        match self {
            Spec::Rmat(s) => 1 << s,
            Spec::Mesh(side) => side * side * side,
            Spec::Powerlaw(n) => n,
        }
    }
    /// An upper estimate of the nonzeros (R-MAT before duplicates merge).
    pub fn nnz_estimate(self) -> u64 {
        match self {
            Spec::Rmat(s) => 16u64 << s,
            Spec::Mesh(side) => 7 * side * side * side,
            Spec::Powerlaw(n) => 8 * n,
        }
    }
    /// Generates the matrix.
    pub fn generate(self, seed: u64) -> Result<generate::Generated> {
        match self {
            Spec::Rmat(s) => generate::rmat(s, 16, seed),
            Spec::Mesh(side) => generate::mesh3d(side, seed),
            Spec::Powerlaw(n) => generate::powerlaw(n, seed),
        }
    }
}

/// The matrices of a run, in the order they run: the smallest R-MAT first
/// (a quick sanity point and the first time estimate), then the largest
/// (the one past 2^31 nonzeros), the mesh and the power-law graph, then
/// the other scales.
pub fn plan(args: &Args) -> Vec<Spec> {
    let mut scales: Vec<u32> = if args.small {
        vec![10, 12]
    } else {
        args.scales.clone()
    };
    scales.sort_unstable();
    scales.dedup();
    let mut out = Vec::new();
    let mut rest = scales.clone();
    if let Some(&first) = scales.first() {
        out.push(Spec::Rmat(first));
        rest.retain(|&s| s != first);
    }
    if let Some(&last) = rest.last() {
        out.push(Spec::Rmat(last));
        rest.pop();
    }
    if !args.skip_mesh {
        out.push(Spec::Mesh(if args.small { 24 } else { args.mesh_side }));
    }
    if !args.skip_powerlaw {
        out.push(Spec::Powerlaw(if args.small {
            20_000
        } else {
            args.powerlaw_n
        }));
    }
    out.extend(rest.into_iter().map(Spec::Rmat));
    out
}

/// Runs the benchmark.
pub fn run(args: Args) -> Result<()> {
    let start = Instant::now();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let gpu = match sparserl_rt::Gpu::new(0) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("bench-scale: no GPU ({e}); generating and validating only");
            None
        }
    };
    let mut report = Report {
        gpu: gpu.as_ref().map_or("none".into(), |g| g.name().to_string()),
        commit: args.commit.clone(),
        command,
        date: crate::common::today(),
        driver: crate::common::driver_version(),
        cusparse_version: gpu.as_ref().and_then(|_| vendor::library_version()),
        policy: "none: measured selection".into(),
        selection: format!(
            "the cost model ranks the space from the row-length statistics; its first \
             {SELECTION_TOP} variants are checked against float64 on sampled rows, then \
             timed, and the selection is the fastest of them (on the first matrix every \
             variant is checked and timed, on both orders: `best` is then the fastest of all)"
        ),
        renumber_rule: format!(
            "degree order (decreasing degree in A + A^T, ties by id) when the row-length \
             coefficient of variation exceeds {}, else reverse Cuthill-McKee; computed on the \
             host on every core while the given order runs on the device",
            run::DEGREE_CV
        ),
        partial: true,
        ..Report::default()
    };
    let mut runner = run::Runner::new(gpu, &args, start)?;
    report.copy_gbs = runner.copy_gbs();
    for (i, spec) in plan(&args).into_iter().enumerate() {
        runner.case(spec, i == 0, &mut report);
        runner.finish_report(&mut report);
        write(&args, &report)?;
    }
    report.partial = false;
    runner.finish_report(&mut report);
    write(&args, &report)?;
    eprintln!(
        "bench-scale: done in {:.0} s, report {}",
        start.elapsed().as_secs_f64(),
        args.out.join(format!("{}.json", args.stem)).display()
    );
    Ok(())
}

/// Writes the JSON and Markdown reports.
fn write(args: &Args, report: &Report) -> Result<()> {
    let json = args.out.join(format!("{}.json", args.stem));
    let md = args.out.join(format!("{}.md", args.stem));
    std::fs::write(&json, serde_json::to_string_pretty(report)?)
        .with_context(|| format!("writing {}", json.display()))?;
    std::fs::write(&md, render_markdown(report))
        .with_context(|| format!("writing {}", md.display()))?;
    Ok(())
}
