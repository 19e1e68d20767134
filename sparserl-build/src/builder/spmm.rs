//! The build of one `op = "spmm"` kernel: lock -> cache -> measured search
//! (GPU) or the SpMM prior (no GPU) -> codegen per declared width ->
//! NVRTC PTX (and ptxas cubins) per architecture -> OUT_DIR.

use super::{BuildError, Builder, COMPILE_OPTIONS, Mode};
use crate::cache::{Cache, KeyBuilder, Lookup, write_atomic};
use crate::codegen::spmm::generate_spmm;
use crate::descriptor::{Descriptor, KernelDecl, Sample, SpmmDecl};
use crate::entry::CacheStatus;
use crate::entry_spmm::{SpmmArchImage, SpmmEntry, SpmmKernelReport, SpmmModuleEntry};
use crate::lock::LockFile;
use crate::lock_spmm::SpmmLockEntry;
use crate::search::spmm::{SpmmSearchConfig, SpmmTuneOutcome};
use sparserl_policies::spmm_records::SEARCH_LEAD;
use sparserl_policies::{
    SPMM_PRIOR_VERSION, SpmmRecords, spmm_prior_for, spmm_prior_score, spmm_record_pick,
    spmm_search_order,
};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmVariant, spmm_space};
use sparserl_rt::{Features, Provenance, ValueType};
use std::cell::Cell;
use std::path::Path;
use std::time::Instant;

/// Version of the cached SpMM entry's format (part of its cache key).
const SPMM_ENTRY_FORMAT: &str = "spmm-1";

/// What every SpMM kernel of one build shares.
pub(super) struct SpmmBuild<'a> {
    pub(super) desc: &'a Descriptor,
    pub(super) lock: Option<&'a LockFile>,
    pub(super) mode: Mode,
    pub(super) gpu: Option<&'a crate::gpu::GpuTuner>,
    pub(super) archs: &'a [String],
    /// NVRTC's version, when found (PTX is compiled only then).
    pub(super) nvrtc: Option<String>,
    pub(super) budget: f64,
    pub(super) cache: &'a Cache,
    pub(super) kernel_dir: &'a Path,
    pub(super) announced: &'a Cell<bool>,
    pub(super) log: &'a super::messages::Log,
}

/// The fresh lock entry of SpMM kernel `index`, if any: same declaration,
/// samples, widths and layout, tuned with the current SpMM generator (its
/// fragments, codegen and the runtime's SpMM modules, not the SpMV one).
pub(super) fn fresh_entry<'l>(
    lock: Option<&'l LockFile>,
    desc: &Descriptor,
    index: usize,
) -> Option<&'l SpmmLockEntry> {
    let decl = desc.kernels.get(index)?;
    let s = decl.spmm.as_ref()?;
    let fp = super::descriptor_fingerprint(desc, index).ok()?;
    let generator = crate::codegen::spmm::spmm_generator_fingerprint();
    lock?.fresh_spmm(&decl.name, &fp, &generator, &s.columns, s.dense)
}

impl Builder {
    /// Builds SpMM kernel `index` of `b.desc`, whose SpMM declaration is `s`.
    pub(super) fn build_spmm(
        &self,
        b: &SpmmBuild<'_>,
        index: usize,
        s: &SpmmDecl,
    ) -> Result<SpmmKernelReport, BuildError> {
        let t0 = Instant::now();
        let decl = b
            .desc
            .kernels
            .get(index)
            .ok_or(BuildError::NoSuchKernel(index))?;
        let generator = crate::codegen::spmm::spmm_generator_fingerprint();
        let descriptor_fp = super::descriptor_fingerprint(b.desc, index)?;
        let locked = fresh_entry(b.lock, b.desc, index);
        if locked.is_none() && b.lock.is_some_and(|l| l.has_entry(&decl.name)) {
            b.log.warn(&format!(
                "lock entry for `{}` is stale (descriptor, widths, layout, samples or generator changed); run `cargo xtask retune`",
                decl.name
            ));
        }
        let choice = match (locked, b.mode, b.gpu) {
            (Some(l), _, _) => format!(
                "lock:{}:{}",
                serde_json::to_string(&l.width).unwrap_or_default(),
                l.gpu
            ),
            (None, Mode::Off, _) => "fallback".to_string(),
            (None, Mode::Full, Some(g)) => format!("measured:{}:{}", g.name(), b.budget),
            _ => format!(
                "policy:{SPMM_PRIOR_VERSION}+{}",
                SpmmRecords::embedded_fingerprint()
            ),
        };
        let columns: Vec<String> = s.columns.iter().map(|n| n.to_string()).collect();
        let mut key = KeyBuilder::new();
        key.text("descriptor", &descriptor_fp)
            .text("generator", &generator)
            .text("policy", SPMM_PRIOR_VERSION)
            .text("choice", &choice)
            .text("entry-format", SPMM_ENTRY_FORMAT)
            .text("columns", &columns.join(","))
            .text("dense", s.dense.as_str())
            .text("arch", &b.archs.join(","))
            .text("nvrtc", b.nvrtc.as_deref().unwrap_or("none"))
            .text("options", &COMPILE_OPTIONS.join(" "))
            .text("cubins", if cubins_wanted(b) { "ptxas" } else { "none" });
        let key = key.finish();
        let (entry, status) = match b.cache.get::<SpmmEntry>(&key) {
            Lookup::Hit(e) => (e, CacheStatus::Hit),
            other => {
                if let Lookup::Corrupt(why) = other {
                    b.log.detail(&format!(
                        "damaged cache entry removed and regenerated: {why}"
                    ));
                }
                let samples = b.desc.load_samples(index)?;
                let e = self.generate_spmm_entry(b, decl, s, &samples, locked)?;
                if let Err(err) = b.cache.put(&key, &e) {
                    b.log.warn(&format!(
                        "cannot store cache entry ({err}); continuing uncached"
                    ));
                }
                (e, CacheStatus::Miss)
            }
        };
        let source_paths = write_outputs(b.kernel_dir, &entry)?;
        let secs = t0.elapsed().as_secs_f64();
        let what = match status {
            CacheStatus::Hit => "cache hit, no generation work".to_string(),
            CacheStatus::Miss => format!("generated in {secs:.1}s"),
        };
        let widths: Vec<String> = entry
            .widths
            .iter()
            .map(|m| format!("N = {}: {}", m.width.unwrap_or(0), m.variant))
            .collect();
        b.log.detail(&format!(
            "spmm kernel `{}` ({}, {}): {} [{}] ({what})",
            decl.name,
            entry.value,
            entry.layout.as_str(),
            widths.join(", "),
            entry.note
        ));
        Ok(SpmmKernelReport {
            name: decl.name.clone(),
            type_name: decl.type_name.clone(),
            cache: status,
            entry,
            source_paths,
            key,
            seconds: secs,
        })
    }

    /// Chooses a variant per width and generates and compiles its module.
    fn generate_spmm_entry(
        &self,
        b: &SpmmBuild<'_>,
        decl: &KernelDecl,
        s: &SpmmDecl,
        samples: &[Sample],
        locked: Option<&SpmmLockEntry>,
    ) -> Result<SpmmEntry, BuildError> {
        let feats: Vec<Features> = samples
            .iter()
            .map(|x| Features::compute(&x.matrix))
            .collect();
        let first = feats.first().copied().unwrap_or_default();
        let chosen = self.choose_spmm(b, decl, s, samples, &first, locked)?;
        let mut widths = Vec::with_capacity(chosen.picks.len());
        for p in &chosen.picks {
            let mut m = compile_module(b, decl, s, p.variant, Some(p.n))?;
            m.measured_gbs = p.gbs;
            m.predicted = p.predicted;
            widths.push(m);
        }
        let fallback = compile_module(b, decl, s, SpmmVariant::FALLBACK, None)?;
        Ok(SpmmEntry {
            name: decl.name.clone(),
            value: decl.value,
            layout: s.dense,
            epilogues: s.epilogues.clone(),
            provenance: chosen.provenance,
            note: chosen.note,
            arch: b.archs.to_vec(),
            tuned_on: chosen.tuned_on,
            widths,
            fallback,
            trials: chosen.trials,
        })
    }

    /// The variant of every declared width: from the lock entry, the
    /// measured search, the prior, or the fallback (mode `off`).
    fn choose_spmm(
        &self,
        b: &SpmmBuild<'_>,
        decl: &KernelDecl,
        s: &SpmmDecl,
        samples: &[Sample],
        first: &Features,
        locked: Option<&SpmmLockEntry>,
    ) -> Result<Chosen, BuildError> {
        if let Some(l) = locked {
            let picks = l
                .width
                .iter()
                .zip(l.variants())
                .map(|(w, (n, variant))| Pick {
                    n,
                    variant,
                    gbs: Some(w.gbs),
                    predicted: None,
                })
                .collect();
            return Ok(Chosen {
                picks,
                provenance: Provenance::LockFile,
                note: format!("from the lock file, tuned on {}", l.gpu),
                tuned_on: Some(l.gpu.clone()),
                trials: Vec::new(),
            });
        }
        match (b.mode, b.gpu) {
            (Mode::Off, _) => Ok(Chosen {
                picks: s
                    .columns
                    .iter()
                    .map(|&n| Pick {
                        n,
                        variant: SpmmVariant::FALLBACK,
                        gbs: None,
                        predicted: None,
                    })
                    .collect(),
                provenance: Provenance::Fallback,
                note: "fallback (search off)".into(),
                tuned_on: None,
                trials: Vec::new(),
            }),
            (Mode::Full, Some(g)) => self.measure_spmm(b, g, decl, s, samples, first),
            _ => {
                announce_spmm_prior(b);
                let picks: Vec<(Pick, bool)> = s
                    .columns
                    .iter()
                    .map(|&n| policy_pick(first, decl.value, n, s.dense))
                    .collect();
                let from_records = picks.iter().filter(|p| p.1).count();
                Ok(Chosen {
                    picks: picks.into_iter().map(|p| p.0).collect(),
                    provenance: Provenance::Policy,
                    note: format!(
                        "SpMM no-GPU pick, not measured: {from_records} of {} widths from the \
                         measured records ({}), the rest from the prior ({SPMM_PRIOR_VERSION})",
                        s.columns.len(),
                        SpmmRecords::embedded_fingerprint()
                    ),
                    tuned_on: None,
                    trials: Vec::new(),
                })
            }
        }
    }

    /// The measured SpMM search on the build GPU.
    fn measure_spmm(
        &self,
        b: &SpmmBuild<'_>,
        g: &crate::gpu::GpuTuner,
        decl: &KernelDecl,
        s: &SpmmDecl,
        samples: &[Sample],
        first: &Features,
    ) -> Result<Chosen, BuildError> {
        announce_spmm_prior(b);
        let candidates = spmm_candidates(first, decl, s);
        let cfg = SpmmSearchConfig {
            budget_seconds: b.budget,
            ..SpmmSearchConfig::default()
        };
        let matrices: Vec<&sparserl_rt::Csr> = samples.iter().map(|x| &x.matrix).collect();
        let out: SpmmTuneOutcome =
            crate::gpu_spmm::tune_spmm(g, &matrices, decl.value, s, &candidates, &cfg, &|m| {
                b.log.detail(m)
            })
            .map_err(|source| BuildError::Search {
                kernel: decl.name.clone(),
                source,
            })?;
        let copy = g.copy_gbs();
        let summary: Vec<String> = out
            .widths
            .iter()
            .map(|w| {
                format!(
                    "N = {}: {} at {:.0} GB/s ({:.0}% of copy, {} candidates, {})",
                    w.n,
                    w.winner,
                    w.gbs,
                    100.0 * w.gbs / copy,
                    w.candidates,
                    w.stopped
                )
            })
            .collect();
        b.log.progress(&format!(
            "spmm kernel `{}`: searched in {:.1}s; {}",
            decl.name,
            out.seconds,
            summary.join("; ")
        ));
        let candidates: usize = out.widths.iter().map(|w| w.candidates).sum();
        Ok(Chosen {
            picks: out
                .widths
                .iter()
                .map(|w| Pick {
                    n: w.n,
                    variant: w.winner,
                    gbs: Some(w.gbs),
                    predicted: None,
                })
                .collect(),
            provenance: Provenance::Measured,
            note: format!("measured on {}, {candidates} candidates", g.name()),
            tuned_on: Some(g.name()),
            trials: out.trials,
        })
    }
}

/// A no-GPU build's variant for width `n`: the nearest measured records'
/// first ([`spmm_record_pick`]) where records of this value type and layout
/// exist, else the prior's first (with its predicted fraction of copy
/// bandwidth); and whether the records chose it.
fn policy_pick(first: &Features, value: ValueType, n: usize, dense: DenseLayout) -> (Pick, bool) {
    let space = spmm_space(n, dense);
    if let Some((variant, _)) = spmm_record_pick(first, value, n, dense, &space) {
        let pick = Pick {
            n,
            variant,
            gbs: None,
            predicted: None,
        };
        return (pick, true);
    }
    let ranked = spmm_prior_for(first, value, n, dense);
    let variant = ranked.first().copied().unwrap_or(SpmmVariant::FALLBACK);
    let pick = Pick {
        n,
        variant,
        gbs: None,
        predicted: Some(spmm_prior_score(&variant, first, value, n, dense)),
    };
    (pick, false)
}

/// Says once per build that SpMM variants come from the analytic prior.
fn announce_spmm_prior(b: &SpmmBuild<'_>) {
    if !b.announced.replace(true) {
        b.log.detail(&format!(
            "SpMM kernels without a GPU: the nearest measured records' pick ({}) where they cover the value type and layout, else the analytic prior ({SPMM_PRIOR_VERSION}); the measured search tries the records' first {SEARCH_LEAD} and the prior's alternately, then the prior's ranking", SpmmRecords::embedded_fingerprint()
        ));
    }
}

/// Per declared width, the order the search measures the space in: the
/// measured records' first few and the prior's alternately, then the
/// prior's ranking
/// ([`spmm_search_order`]).
pub fn spmm_candidates(
    first: &Features,
    decl: &KernelDecl,
    s: &SpmmDecl,
) -> Vec<(usize, Vec<SpmmVariant>)> {
    s.columns
        .iter()
        .map(|&n| (n, spmm_search_order(first, decl.value, n, s.dense, None)))
        .collect()
}

/// One width's choice.
struct Pick {
    n: usize,
    variant: SpmmVariant,
    gbs: Option<f64>,
    predicted: Option<f64>,
}

/// Every width's choice and how it was made.
struct Chosen {
    picks: Vec<Pick>,
    provenance: Provenance,
    note: String,
    tuned_on: Option<String>,
    trials: Vec<crate::search::spmm::SpmmTrial>,
}

fn cubins_wanted(b: &SpmmBuild<'_>) -> bool {
    b.nvrtc.is_some() && sparserl_rt::nvrtc::ptxas_available()
}

/// Generates the module of `variant` (a compile-time width `width`, or
/// generic only) and compiles it for every target.
fn compile_module(
    b: &SpmmBuild<'_>,
    decl: &KernelDecl,
    s: &SpmmDecl,
    variant: SpmmVariant,
    width: Option<usize>,
) -> Result<SpmmModuleEntry, BuildError> {
    let source = generate_spmm(&variant, decl.value, s.dense, width, &s.epilogues)
        .map_err(|source| BuildError::Codegen {
            kernel: decl.name.clone(),
            source,
        })?
        .source;
    let compile_err = |source| BuildError::Compile {
        kernel: decl.name.clone(),
        source,
    };
    let mut images = Vec::new();
    if b.nvrtc.is_some() {
        let opts: Vec<String> = COMPILE_OPTIONS.iter().map(|o| o.to_string()).collect();
        for arch in b.archs {
            let ptx = sparserl_rt::nvrtc::compile_ptx(&source, arch, &opts).map_err(compile_err)?;
            let cubin = if cubins_wanted(b) {
                Some(sparserl_rt::nvrtc::assemble_cubin(&ptx, arch).map_err(compile_err)?)
            } else {
                None
            };
            images.push(SpmmArchImage {
                arch: arch.clone(),
                ptx,
                cubin,
            });
        }
    }
    Ok(SpmmModuleEntry {
        variant,
        width,
        measured_gbs: None,
        predicted: None,
        source,
        images,
    })
}

/// Writes every module's source, PTX and cubins; the source paths.
fn write_outputs(dir: &Path, e: &SpmmEntry) -> Result<Vec<std::path::PathBuf>, BuildError> {
    let write = |p: &Path, bytes: &[u8]| {
        write_atomic(p, bytes).map_err(|source| BuildError::Io {
            path: p.to_path_buf(),
            source,
        })
    };
    let mut sources = Vec::new();
    for m in e.widths.iter().chain([&e.fallback]) {
        let stem = m.stem(&e.name);
        let src = dir.join(format!("{stem}.cu"));
        write(&src, m.source.as_bytes())?;
        sources.push(src);
        for img in &m.images {
            write(
                &dir.join(format!("{stem}.{}.ptx", img.arch)),
                img.ptx.as_bytes(),
            )?;
            if let Some(c) = &img.cubin {
                write(&dir.join(format!("{stem}.{}.cubin", img.arch)), c)?;
            }
        }
    }
    Ok(sources)
}
