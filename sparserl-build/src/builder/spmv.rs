//! The build of one SpMV kernel: lock -> cache -> measured search (GPU) or
//! the policy's pick (no GPU) -> codegen -> NVRTC PTX (and ptxas cubins)
//! per architecture -> the shipped-image check on the build GPU -> OUT_DIR.

use super::messages::Log;
use super::setup::Setup;
use super::{BuildError, Builder, COMPILE_OPTIONS, Mode, descriptor_fingerprint};
use crate::cache::{KeyBuilder, Lookup, write_atomic};
use crate::codegen::{self, KernelSource};
use crate::descriptor::{KernelDecl, Sample};
use crate::entry::{ArchImages, CacheStatus, Entry, FusedImage, KernelReport};
use crate::lock::LockEntry;
use crate::objective::ObjectiveRecord;
use crate::search::{SearchConfig, Trial};
use sparserl_policies::PolicyChoice;
use sparserl_rt::{Features, Provenance, Variant};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How a kernel's variant was chosen.
struct Choice {
    variant: Variant,
    provenance: Provenance,
    note: String,
    predicted: Option<f64>,
    measured_gbs: Option<f64>,
    tuned_on: Option<String>,
    trials: Vec<Trial>,
    /// The energy phase's record (an objective that needs energy).
    objective: Option<ObjectiveRecord>,
}

impl Choice {
    fn plain(variant: Variant, provenance: Provenance, note: String) -> Choice {
        Choice {
            variant,
            provenance,
            note,
            predicted: None,
            measured_gbs: None,
            tuned_on: None,
            trials: Vec::new(),
            objective: None,
        }
    }
}

impl Builder {
    /// Builds SpMV kernel `index` of the descriptor (declared as `decl`).
    pub(super) fn build_spmv(
        &self,
        run: &Setup,
        log: &Log,
        index: usize,
        decl: &KernelDecl,
    ) -> Result<KernelReport, BuildError> {
        let t0 = Instant::now();
        let descriptor_fp = descriptor_fingerprint(&run.desc, index)?;
        let locked = fresh_lock_entry(run, log, decl, &descriptor_fp)?;
        let key = cache_key(run, decl, &descriptor_fp, locked.as_ref());
        let (mut entry, status) = match run.cache.get::<Entry>(&key) {
            Lookup::Hit(e) => (e, CacheStatus::Hit),
            other => {
                if let Lookup::Corrupt(why) = other {
                    log.detail(&format!(
                        "damaged cache entry removed and regenerated: {why}"
                    ));
                }
                let samples = run.desc.load_samples(index)?;
                let e = self.generate(run, log, decl, &samples, locked.as_ref())?;
                if let Err(err) = run.cache.put(&key, &e) {
                    log.warn(&format!(
                        "cannot store cache entry ({err}); continuing uncached"
                    ));
                }
                (e, CacheStatus::Miss)
            }
        };
        self.verify_shipped(run, log, index, &mut entry, &key)?;
        let (source_path, ptx_path) = write_outputs(&run.kernel_dir, &decl.name, &entry)?;
        let secs = t0.elapsed().as_secs_f64();
        let what = match status {
            CacheStatus::Hit => "cache hit, no generation work".to_string(),
            CacheStatus::Miss => format!("generated in {secs:.1}s"),
        };
        log.detail(&format!(
            "kernel `{}` ({}): {} [{}] ({what})",
            decl.name, entry.value, entry.variant, entry.note
        ));
        Ok(KernelReport {
            name: decl.name.clone(),
            type_name: decl.type_name.clone(),
            cache: status,
            ptx_path: entry.ptx.as_ref().map(|_| ptx_path),
            entry,
            source_path,
            key,
            seconds: secs,
        })
    }

    /// Chooses the variant, generates its kernel and the fallback, and
    /// compiles both for every target.
    fn generate(
        &self,
        run: &Setup,
        log: &Log,
        decl: &KernelDecl,
        samples: &[Sample],
        locked: Option<&LockEntry>,
    ) -> Result<Entry, BuildError> {
        let feats: Vec<Features> = samples
            .iter()
            .map(|s| Features::compute(&s.matrix))
            .collect();
        let n = feats.len().max(1) as f64;
        let avg = |f: fn(&Features) -> f64| feats.iter().map(f).sum::<f64>() / n;
        let tuned_for = sparserl_rt::TunedFor {
            mean_row: avg(|f| f.mean_row),
            cv_row: avg(|f| f.cv_row),
            max_over_mean: avg(|f| f.max_over_mean),
        };
        let first = feats.first().copied().unwrap_or_default();
        let choice = match locked {
            Some(l) => Choice {
                measured_gbs: Some(l.gbs),
                tuned_on: Some(l.gpu.clone()),
                objective: l.objective.clone(),
                ..Choice::plain(
                    l.variant,
                    Provenance::LockFile,
                    format!("from the lock file: {:.0} GB/s on {}", l.gbs, l.gpu),
                )
            },
            None => self.choose(run, log, decl, samples, &first)?,
        };
        let codegen_err = |source: codegen::CodegenError| BuildError::Codegen {
            kernel: decl.name.clone(),
            source,
        };
        let chosen = codegen::generate_with(&choice.variant, decl.value, &decl.epilogues)
            .map_err(codegen_err)?;
        let fallback =
            codegen::generate_fallback(decl.value, &decl.epilogues).map_err(codegen_err)?;
        let fused = fused_images(decl, &chosen, &fallback);
        let images = if run.toolkit.is_some() {
            compile_images(decl, &chosen.source, &fallback.source, &run.archs)?
        } else {
            Vec::new()
        };
        let lowest = images.first();
        Ok(Entry {
            name: decl.name.clone(),
            value: decl.value,
            variant: choice.variant,
            provenance: choice.provenance,
            note: choice.note,
            predicted: choice.predicted,
            measured_gbs: choice.measured_gbs,
            arch: run.archs.to_vec(),
            ptx: lowest.map(|l| l.ptx.clone()),
            fallback_ptx: lowest.map(|l| l.fallback_ptx.clone()),
            images,
            tuned_on: choice.tuned_on,
            entry: chosen.entry,
            source: chosen.source,
            fallback_entry: fallback.entry,
            fallback_source: fallback.source,
            fused,
            tuned_for,
            sample_features: feats.iter().map(|f| f.to_vec().to_vec()).collect(),
            trials: choice.trials,
            checked_on: None,
            objective: choice.objective,
        })
    }

    /// The variant of a kernel without a fresh lock entry: the fallback
    /// (mode `off`), the measured search (a GPU), else the policy's pick.
    fn choose(
        &self,
        run: &Setup,
        log: &Log,
        decl: &KernelDecl,
        samples: &[Sample],
        first: &Features,
    ) -> Result<Choice, BuildError> {
        match (run.mode, run.gpu.as_ref()) {
            (Mode::Off, _) => Ok(Choice::plain(
                Variant::FALLBACK,
                Provenance::Fallback,
                "fallback (search off)".to_string(),
            )),
            (Mode::Full, Some(g)) => {
                announce_policy(run, log);
                measure(run, log, g, decl, samples, first)
            }
            _ => {
                announce_policy(run, log);
                Ok(policy_pick(run, log, decl, first))
            }
        }
    }

    /// Checks the images `entry` ships on the build GPU (when there is one
    /// and they were not checked on it yet; [`crate::verify`]), recording
    /// the device in the entry and the cache. A wrong image stops the build.
    fn verify_shipped(
        &self,
        run: &Setup,
        log: &Log,
        index: usize,
        entry: &mut Entry,
        key: &str,
    ) -> Result<(), BuildError> {
        let Some(g) = run
            .gpu
            .as_ref()
            .filter(|g| crate::verify::needs_check(entry, &crate::verify::device_label(g.gpu())))
        else {
            return Ok(());
        };
        let samples = run.desc.load_samples(index)?;
        let matrices: Vec<&sparserl_rt::Csr> = samples.iter().map(|s| &s.matrix).collect();
        let report = crate::verify::check_entry(g.gpu(), entry, &matrices).map_err(|source| {
            BuildError::Shipped {
                kernel: entry.name.clone(),
                source: Box::new(source),
            }
        })?;
        log.detail(&report.summary(&entry.name));
        entry.checked_on = Some(report.device);
        if let Err(err) = run.cache.put(key, entry) {
            log.warn(&format!(
                "cannot store cache entry ({err}); continuing uncached"
            ));
        }
        Ok(())
    }
}

/// The fresh lock entry of `decl`, checked against the declaration; a stale
/// one is a warning (the user retunes).
fn fresh_lock_entry(
    run: &Setup,
    log: &Log,
    decl: &KernelDecl,
    descriptor_fp: &str,
) -> Result<Option<LockEntry>, BuildError> {
    let Some(lock) = &run.lock else {
        return Ok(None);
    };
    let locked = lock
        .fresh_checked(&run.lock_path, decl, descriptor_fp, &run.generator)?
        .cloned();
    if locked.is_none() && lock.kernel.iter().any(|e| e.name == decl.name) {
        log.warn(&format!(
            "lock entry for `{}` is stale (descriptor, samples or generator changed); run `cargo xtask retune`",
            decl.name
        ));
    }
    Ok(locked)
}

/// The cache key of a kernel: everything its entry depends on.
fn cache_key(
    run: &Setup,
    decl: &KernelDecl,
    descriptor_fp: &str,
    locked: Option<&LockEntry>,
) -> String {
    let policy_version = run.policy.choice.version();
    let source_label = match (locked, run.mode, run.gpu.as_ref()) {
        // The entry embeds the GPU the lock entry was tuned on and
        // its note names the measured GB/s: both are part of the key.
        (Some(l), _, _) => format!(
            "lock:{}:{}:{}",
            serde_json::to_string(&l.variant).unwrap_or_default(),
            l.gpu,
            l.gbs
        ),
        (None, Mode::Off, _) => "fallback".to_string(),
        (None, Mode::Full, Some(g)) => format!(
            "measured:{}:{}{}",
            g.name(),
            run.budget,
            super::objective::key_suffix(decl)
        ),
        _ => format!(
            "policy:{policy_version}:{}",
            sparserl_policies::spmv_records::no_gpu_rule_id()
        ),
    };
    let mut key = KeyBuilder::new();
    key.text("descriptor", descriptor_fp)
        .text("generator", &run.generator)
        .text("policy", &policy_version)
        .text("choice", &source_label)
        .text("entry-format", "5")
        .text("arch", &run.archs.join(","))
        .text(
            "nvrtc",
            &run.nvrtc_version().unwrap_or_else(|| "none".into()),
        )
        .text("options", &COMPILE_OPTIONS.join(" "))
        .text(
            "cubins",
            if sparserl_rt::nvrtc::ptxas_available() {
                "ptxas"
            } else {
                "none"
            },
        );
    key.finish()
}

/// Says once per build which policy proposes the variants: the learned
/// one with its file hash and round, or the prior and why (a warning
/// when the embedded learned policy does not load).
fn announce_policy(run: &Setup, log: &Log) {
    if run.announced.replace(true) {
        return;
    }
    let choice = &run.policy.choice;
    let msg = format!("policy: {}", choice.describe());
    match choice {
        PolicyChoice::PriorUnusable { .. } => log.warn(&msg),
        _ => log.detail(&msg),
    }
}

/// The measured search on the build GPU, started from the policy's
/// proposals.
fn measure(
    run: &Setup,
    log: &Log,
    g: &crate::gpu::GpuTuner,
    decl: &KernelDecl,
    samples: &[Sample],
    first: &Features,
) -> Result<Choice, BuildError> {
    let proposals: Vec<Variant> = run
        .policy
        .policy
        .propose(first, decl.value, 16)
        .into_iter()
        .map(|p| p.variant)
        .collect();
    let cfg = SearchConfig {
        budget_seconds: run.budget,
        reorders: decl.allowed_reorders(),
        ..SearchConfig::default()
    };
    let matrices: Vec<&sparserl_rt::Csr> = samples.iter().map(|s| &s.matrix).collect();
    let epilogue = crate::gpu::measured_epilogue(&decl.epilogues);
    let mut out = g
        .tune_with(&matrices, decl.value, &proposals, &cfg, epilogue)
        .map_err(|source| BuildError::Search {
            kernel: decl.name.clone(),
            source,
        })?;
    let objective = super::objective::apply_objective(log, g, decl, &matrices, &mut out)?;
    let pct = 100.0 * out.gbs / g.copy_gbs();
    let fused = epilogue
        .map(|e| format!(" (measured with its fused `{e}` epilogue)"))
        .unwrap_or_default();
    log.progress(&format!(
        "kernel `{}`{fused}: {} candidates in {:.1}s, best {:.0} GB/s ({pct:.0}% of copy bandwidth), {}",
        decl.name, out.candidates, out.seconds, out.gbs, out.stopped
    ));
    Ok(Choice {
        variant: out.winner,
        provenance: Provenance::Measured,
        note: format!(
            "measured: {:.0} GB/s, {pct:.0}% of copy, {} candidates",
            out.gbs, out.candidates
        ),
        predicted: None,
        measured_gbs: Some(out.gbs),
        tuned_on: Some(g.name()),
        trials: out.trials,
        objective,
    })
}

/// The policy's no-GPU pick (`Policy::pick`: for the learned policy the
/// measured records' pick, a forest blended with the knob pick; see
/// `sparserl_policies::spmv_records::no_gpu_pick`), in the numbering the
/// descriptor asks for; the
/// fallback (a warning) when it has none.
fn policy_pick(run: &Setup, log: &Log, decl: &KernelDecl, first: &Features) -> Choice {
    let policy = run.policy.policy.as_ref();
    let best = policy.pick(first, decl.value);
    match best.as_ref() {
        Some(p) => Choice {
            predicted: Some(p.score),
            ..Choice::plain(
                // A numbering the descriptor asks for; else the given one.
                Variant {
                    reorder: decl.reorder.unwrap_or_default(),
                    ..p.variant
                },
                Provenance::Policy,
                format!(
                    "policy pick ({}), predicted {}",
                    policy.name(),
                    super::gpu_estimate_note(p.score)
                ),
            )
        },
        None => {
            log.warn(&format!(
                "kernel `{}`: the policy had no proposal; it ships the safe fallback variant",
                decl.name
            ));
            Choice::plain(
                Variant::FALLBACK,
                Provenance::Fallback,
                "fallback (policy had no proposal)".into(),
            )
        }
    }
}

/// The fused entry points of every declared epilogue, in the chosen kernel
/// and in the fallback.
fn fused_images(
    decl: &KernelDecl,
    chosen: &KernelSource,
    fallback: &KernelSource,
) -> Vec<FusedImage> {
    let entry_of =
        |g: &KernelSource, e| g.fused.iter().find(|(f, _)| f == e).map(|(_, n)| n.clone());
    decl.epilogues
        .iter()
        .map(|e| FusedImage {
            epilogue: *e,
            entry: entry_of(chosen, e),
            fallback_entry: entry_of(fallback, e).unwrap_or_default(),
        })
        .collect()
}

/// PTX of both kernels for every target, and cubins (SASS) when ptxas is
/// found, so a device of a listed architecture loads the kernel without
/// compiling; PTX stays for newer devices.
fn compile_images(
    decl: &KernelDecl,
    chosen: &str,
    fallback: &str,
    archs: &[String],
) -> Result<Vec<ArchImages>, BuildError> {
    let compile_err = |source| BuildError::Compile {
        kernel: decl.name.clone(),
        source,
    };
    let opts: Vec<String> = COMPILE_OPTIONS.iter().map(|s| s.to_string()).collect();
    let ptx = |src: &str, arch: &str| {
        sparserl_rt::nvrtc::compile_ptx(src, arch, &opts).map_err(compile_err)
    };
    let cubin =
        |ptx: &str, arch: &str| sparserl_rt::nvrtc::assemble_cubin(ptx, arch).map_err(compile_err);
    let with_cubins = sparserl_rt::nvrtc::ptxas_available();
    let mut images = Vec::new();
    for arch in archs {
        let (p, f) = (ptx(chosen, arch)?, ptx(fallback, arch)?);
        let cubins = if with_cubins {
            Some((cubin(&p, arch)?, cubin(&f, arch)?))
        } else {
            None
        };
        images.push(ArchImages {
            arch: arch.clone(),
            ptx: p,
            fallback_ptx: f,
            cubins,
        });
    }
    Ok(images)
}

/// Writes the kernel's sources, PTX, cubins and trials under `dir`; the
/// paths of its source and its lowest target's PTX.
fn write_outputs(dir: &Path, name: &str, entry: &Entry) -> Result<(PathBuf, PathBuf), BuildError> {
    let write = |p: &Path, bytes: &[u8]| {
        write_atomic(p, bytes).map_err(|source| BuildError::Io {
            path: p.to_path_buf(),
            source,
        })
    };
    let source_path = dir.join(format!("{name}.cu"));
    let ptx_path = dir.join(format!("{name}.ptx"));
    write(&source_path, entry.source.as_bytes())?;
    write(
        &dir.join(format!("{name}.fallback.cu")),
        entry.fallback_source.as_bytes(),
    )?;
    if let Some(p) = &entry.ptx {
        write(&ptx_path, p.as_bytes())?;
    }
    if let Some(p) = &entry.fallback_ptx {
        write(&dir.join(format!("{name}.fallback.ptx")), p.as_bytes())?;
    }
    for img in &entry.images {
        let arch = &img.arch;
        write(&dir.join(format!("{name}.{arch}.ptx")), img.ptx.as_bytes())?;
        write(
            &dir.join(format!("{name}.fallback.{arch}.ptx")),
            img.fallback_ptx.as_bytes(),
        )?;
        if let Some((c, f)) = &img.cubins {
            write(&dir.join(format!("{name}.{arch}.cubin")), c)?;
            write(&dir.join(format!("{name}.fallback.{arch}.cubin")), f)?;
        }
    }
    write(
        &dir.join(format!("{name}.trials.json")),
        serde_json::to_string_pretty(&entry.trials)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    Ok((source_path, ptx_path))
}
