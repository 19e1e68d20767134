//! `cargo xtask spmv-records`: builds the SpMV records whose pick a no-GPU
//! build ships (`sparserl_policies::spmv_records`) from the training datasets, merged
//! as `policy-loco` merges them, and the forest trained on them.

use anyhow::{Context, Result};
use clap::Parser;
use flate2::Compression;
use flate2::write::GzEncoder;
use sparserl_policies::dataset::Dataset;
use sparserl_policies::prepared::prepare_all;
use sparserl_policies::spmv_records::SpmvRecords;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Arguments of `spmv-records`.
#[derive(Parser)]
pub struct Args {
    /// Datasets (gzipped JSON), the first marked for layouts its matrices
    /// lack, the others merged in.
    #[arg(long, num_args = 1.., required = true)]
    dataset: Vec<PathBuf>,
    /// Output (gzipped JSON).
    #[arg(long, default_value = "policies/spmv-records.json.gz")]
    out: PathBuf,
    /// The forest trained on the new records (`cargo xtask spmv-forest
    /// build`), written with them so the two never disagree.
    #[arg(long, default_value = "policies/spmv-forest.json.gz")]
    forest_out: PathBuf,
}

/// Runs `spmv-records`.
pub fn run(args: Args) -> Result<()> {
    let paths: Vec<&Path> = args.dataset.iter().map(PathBuf::as_path).collect();
    let (ds, hashes) = Dataset::read_merged(&paths)?.context("no dataset")?;
    let source = paths
        .iter()
        .zip(hashes)
        .map(|(p, h)| {
            let name = p
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into());
            format!("{name} (sha256 {h})")
        })
        .collect();
    let records = SpmvRecords::from_prepared(&prepare_all(&ds), source);
    let mut gz = GzEncoder::new(Vec::new(), Compression::best());
    gz.write_all(serde_json::to_string(&records)?.as_bytes())?;
    std::fs::write(&args.out, gz.finish()?)
        .with_context(|| format!("writing {}", args.out.display()))?;
    println!(
        "wrote {} records over {} variants to {}",
        records.records.len(),
        records.variants.len(),
        args.out.display()
    );
    crate::spmv_forest::build(&args.out, &args.forest_out)
}
