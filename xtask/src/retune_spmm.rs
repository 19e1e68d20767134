//! `cargo xtask retune` for `op = "spmm"` kernels: the measured SpMM search
//! per declared width on the GPU at hand, written as an `[[spmm]]` lock entry.

use anyhow::{Result, anyhow};
use sparserl_build::builder::descriptor_fingerprint;
use sparserl_build::codegen::spmm::spmm_generator_fingerprint;
use sparserl_build::descriptor::{Descriptor, SpmmDecl};
use sparserl_build::lock_spmm::{SpmmLockEntry, SpmmLockWidth};
use sparserl_build::search::spmm::SpmmSearchConfig;
use sparserl_build::{GpuTuner, LockFile};
use sparserl_rt::{Csr, Features};
use std::time::Instant;

/// The `retune --check` state of SpMM kernel `index`.
pub fn state(lock: Option<&LockFile>, desc: &Descriptor, index: usize) -> Result<&'static str> {
    let decl = &desc.kernels[index];
    let s = decl
        .spmm
        .as_ref()
        .ok_or_else(|| anyhow!("kernel `{}` is not an spmm kernel", decl.name))?;
    let fp = descriptor_fingerprint(desc, index)?;
    Ok(match lock {
        None => "missing (no lock file)",
        Some(l)
            if l.fresh_spmm(
                &decl.name,
                &fp,
                &spmm_generator_fingerprint(),
                &s.columns,
                s.dense,
            )
            .is_some() =>
        {
            "fresh"
        }
        Some(l) if l.has_entry(&decl.name) => {
            "stale (descriptor, widths, layout, samples or generator changed)"
        }
        Some(_) => "missing",
    })
}

/// Tunes SpMM kernel `index` (declaration `s`) and upserts its lock entry.
pub fn retune(
    tuner: &GpuTuner,
    desc: &Descriptor,
    index: usize,
    s: &SpmmDecl,
    budget: f64,
    lock: &mut LockFile,
) -> Result<()> {
    let decl = &desc.kernels[index];
    let samples = desc.load_samples(index)?;
    let mats: Vec<&Csr> = samples.iter().map(|x| &x.matrix).collect();
    let feats = Features::compute(mats[0]);
    let candidates = sparserl_build::builder::spmm_candidates(&feats, decl, s);
    println!(
        "\nspmm kernel `{}` ({}, {}, N = {:?}), {} sample(s)",
        decl.name,
        decl.value,
        s.dense.as_str(),
        s.columns,
        samples.len()
    );
    let cfg = SpmmSearchConfig {
        budget_seconds: budget,
        ..SpmmSearchConfig::default()
    };
    let t0 = Instant::now();
    let out =
        sparserl_build::gpu_spmm::tune_spmm(tuner, &mats, decl.value, s, &candidates, &cfg, &|m| {
            println!("  {m}")
        })
        .map_err(|e| anyhow!("search for `{}` failed: {e}", decl.name))?;
    let copy = tuner.copy_gbs();
    let mut width = Vec::new();
    for w in &out.widths {
        let pct = 100.0 * w.gbs / copy;
        println!(
            "  N = {}: {} candidates ({}), winner {} at {:.0} GB/s = {pct:.1}% of copy",
            w.n, w.candidates, w.stopped, w.winner, w.gbs
        );
        width.push(SpmmLockWidth {
            n: w.n,
            variant: w.winner.id(),
            gbs: (w.gbs * 10.0).round() / 10.0,
            pct_copy: (pct * 10.0).round() / 10.0,
        });
    }
    println!(
        "  searched in {:.1} s (budget {budget:.0} s)",
        t0.elapsed().as_secs_f64()
    );
    lock.upsert_spmm(SpmmLockEntry {
        name: decl.name.clone(),
        value: decl.value,
        dense: s.dense,
        descriptor: descriptor_fingerprint(desc, index)?,
        generator: spmm_generator_fingerprint(),
        gpu: tuner.name(),
        candidates: out.widths.iter().map(|w| w.candidates as u32).sum(),
        width,
    });
    Ok(())
}
