//! Phase 1 of a build: resolve the descriptor, the lock file, the mode, the
//! GPU and NVRTC, the target architectures, the cache and the policy that
//! every kernel of the build shares.

use super::messages::Log;
use super::{BuildError, Builder, ENV_BUDGET, ENV_MODE, Mode, Output, env_var, spmm};
use crate::cache::Cache;
use crate::descriptor::{Descriptor, read_descriptor};
use crate::emit::KERNEL_DIR;
use crate::gpu::GpuTuner;
use crate::lock::LockFile;
use sparserl_policies::{PolicyInUse, policy_in_use};
use sparserl_rt::nvrtc::Toolkit;
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// Why kernels are not measured on this build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NotMeasured {
    /// They are (mode `full` with a GPU).
    No,
    /// Mode `full` was wanted but there is no usable GPU.
    NoGpu,
    /// Mode `policy` or `off` was asked for.
    ModeAsked,
}

/// What every kernel of one build shares.
pub(super) struct Setup {
    pub(super) out_dir: PathBuf,
    pub(super) kernel_dir: PathBuf,
    pub(super) desc: Descriptor,
    pub(super) lock: Option<LockFile>,
    pub(super) lock_path: PathBuf,
    pub(super) mode: Mode,
    pub(super) not_measured: NotMeasured,
    pub(super) gpu: Option<GpuTuner>,
    pub(super) toolkit: Option<&'static Toolkit>,
    /// Target architectures, lowest first (its PTX is the portable one).
    pub(super) archs: Vec<String>,
    pub(super) budget: f64,
    pub(super) cache: Cache,
    /// The policy actually in use (the prior when the embedded learned
    /// policy does not load): its version goes into every cache key.
    pub(super) policy: PolicyInUse,
    /// The generator fingerprint lock entries and cache keys are tied to.
    pub(super) generator: String,
    /// Whether the policy in use was announced (by the first kernel that
    /// consults it).
    pub(super) announced: Cell<bool>,
    /// Whether the SpMM prior was announced.
    pub(super) spmm_announced: Cell<bool>,
    /// The machine-wide GPU lock, held while this build measures.
    _gpu_lock: Option<std::fs::File>,
}

impl Setup {
    /// What SpMM kernels need of the setup.
    pub(super) fn spmm<'a>(&'a self, log: &'a Log) -> spmm::SpmmBuild<'a> {
        spmm::SpmmBuild {
            desc: &self.desc,
            lock: self.lock.as_ref(),
            mode: self.mode,
            gpu: self.gpu.as_ref(),
            archs: &self.archs,
            nvrtc: self.nvrtc_version(),
            budget: self.budget,
            cache: &self.cache,
            kernel_dir: &self.kernel_dir,
            announced: &self.spmm_announced,
            log,
        }
    }

    /// NVRTC's version, when found (PTX is compiled only then).
    pub(super) fn nvrtc_version(&self) -> Option<String> {
        self.toolkit
            .map(|t| format!("{}.{}", t.nvrtc_version.0, t.nvrtc_version.1))
    }
}

impl Builder {
    /// Resolves everything the kernels of this build share.
    pub(super) fn setup(&self, log: &Log) -> Result<Setup, BuildError> {
        let manifest_dir = self
            .manifest_dir
            .clone()
            .ok_or(BuildError::MissingEnv("CARGO_MANIFEST_DIR"))?;
        let out_dir = self
            .out_dir
            .clone()
            .ok_or(BuildError::MissingEnv("OUT_DIR"))?;
        let desc = read_descriptor(&manifest_dir.join("Cargo.toml"))?;
        self.watch_inputs(&desc, &manifest_dir);
        let requested = self.resolve_mode()?;
        let budget = self.resolve_budget(&desc)?;
        let cache = self.resolve_cache(&out_dir);
        if self.output == Output::BuildScript {
            for v in sparserl_rt::nvrtc::env_vars_read() {
                if !matches!(*v, "PATH" | "CARGO_MANIFEST_DIR") {
                    println!("cargo:rerun-if-env-changed={v}");
                }
            }
        }
        let lock = LockFile::read(&manifest_dir)?;
        let (mode, gpu, not_measured) = probe_gpu(requested, &desc, lock.as_ref(), log);
        let toolkit = locate_toolkit(log);
        let mut archs = target_archs(&desc, gpu.as_ref());
        let generator = self.generator_fp();
        let gpu_lock = if gpu.is_some()
            && mode == Mode::Full
            && anything_to_measure(&desc, lock.as_ref(), &generator)
        {
            take_gpu_lock(log)
        } else {
            None
        };
        archs.sort_by_key(|a| sparserl_rt::arch_number(a).unwrap_or(u32::MAX));
        archs.dedup();
        Ok(Setup {
            kernel_dir: out_dir.join(KERNEL_DIR),
            out_dir,
            desc,
            lock,
            lock_path: manifest_dir.join(crate::lock::LOCK_FILE),
            mode,
            not_measured,
            gpu,
            toolkit,
            archs,
            budget,
            cache,
            policy: policy_in_use(),
            generator,
            announced: Cell::new(false),
            spmm_announced: Cell::new(false),
            _gpu_lock: gpu_lock,
        })
    }

    /// Tells cargo which files rerun the build script.
    fn watch_inputs(&self, desc: &Descriptor, manifest_dir: &Path) {
        if self.output != Output::BuildScript {
            return;
        }
        for p in desc.watched_paths() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        // Watching a file that does not exist would rerun the build script
        // every time; `cargo xtask retune` touches the manifest when it
        // creates the lock file, so its first appearance is noticed too.
        let lock_path = manifest_dir.join(crate::lock::LOCK_FILE);
        if lock_path.exists() {
            println!("cargo:rerun-if-changed={}", lock_path.display());
        }
    }

    fn resolve_mode(&self) -> Result<Option<Mode>, BuildError> {
        if let Some(m) = self.mode {
            return Ok(Some(m));
        }
        match env_var(self.output, ENV_MODE) {
            None => Ok(None),
            Some(v) if v.is_empty() => Ok(None),
            Some(v) => Mode::parse(&v).map(Some).ok_or(BuildError::BadEnv {
                var: ENV_MODE,
                value: v,
                expected: "one of \"full\", \"policy\", \"off\"",
            }),
        }
    }

    /// The per-kernel search budget: the builder's, `SPARSERL_BUDGET_SECONDS`,
    /// the descriptor's, else 30 s.
    fn resolve_budget(&self, desc: &Descriptor) -> Result<f64, BuildError> {
        let budget = match self.budget {
            Some(b) => Some(b),
            None => match env_var(self.output, ENV_BUDGET) {
                Some(v) => Some(v.trim().parse::<f64>().ok().filter(|b| *b > 0.0).ok_or(
                    BuildError::BadEnv {
                        var: ENV_BUDGET,
                        value: v,
                        expected: "a positive number of seconds",
                    },
                )?),
                None => None,
            },
        };
        Ok(budget.or(desc.budget_seconds).unwrap_or(30.0))
    }
}

/// The mode and the GPU: the GPU is probed only when measuring could be
/// wanted; without one, the policy (or the lock file) chooses.
fn probe_gpu(
    requested: Option<Mode>,
    desc: &Descriptor,
    lock: Option<&LockFile>,
    log: &Log,
) -> (Mode, Option<GpuTuner>, NotMeasured) {
    match requested {
        Some(Mode::Full) | None => match GpuTuner::probe() {
            Ok(t) => (Mode::Full, Some(t), NotMeasured::No),
            Err(why) => {
                let all_locked = desc
                    .kernels
                    .iter()
                    .all(|k| lock.is_some_and(|l| l.has_entry(&k.name)));
                if all_locked {
                    log.detail(&format!(
                        "no GPU available for measuring ({why}); every kernel has a lock-file entry, nothing to measure (shipped images not checked on a device)"
                    ));
                } else {
                    log.detail(&format!(
                        "no GPU available for measuring ({why}); using the lock file or the policy's pick (shipped images not checked on a device)"
                    ));
                }
                (Mode::Policy, None, NotMeasured::NoGpu)
            }
        },
        Some(m) => (m, None, NotMeasured::ModeAsked),
    }
}

/// NVRTC, when found; without it, one warning with the fix (the places
/// searched go to the report).
fn locate_toolkit(log: &Log) -> Option<&'static Toolkit> {
    match sparserl_rt::nvrtc::locate() {
        Ok(t) => Some(t),
        Err(e) => {
            log.warn(
                "NVRTC not found: the kernels ship as CUDA source without PTX and compile when \
                 first used (NVRTC is then needed at run time); to fix, install the CUDA toolkit \
                 or set SPARSERL_CUDA_ROOT to it (the places searched are in the report)",
            );
            log.detail(&format!("NVRTC search: {e}"));
            None
        }
    }
}

/// Targets: the descriptor's list plus the build GPU's architecture;
/// without a list, the build GPU's alone, else sm_80 + sm_90 (unsorted).
fn target_archs(desc: &Descriptor, gpu: Option<&GpuTuner>) -> Vec<String> {
    match (&desc.arch, gpu) {
        (Some(list), Some(g)) => list.iter().cloned().chain([g.arch()]).collect(),
        (Some(list), None) => list.clone(),
        (None, Some(g)) => vec![g.arch()],
        (None, None) => crate::descriptor::DEFAULT_ARCH
            .iter()
            .map(|a| a.to_string())
            .collect(),
    }
}

/// Whether some kernel lacks a fresh lock entry (so the build would measure).
fn anything_to_measure(desc: &Descriptor, lock: Option<&LockFile>, generator: &str) -> bool {
    desc.kernels.iter().enumerate().any(|(i, k)| {
        if k.spmm.is_some() {
            return spmm::fresh_entry(lock, desc, i).is_none();
        }
        let fp = super::descriptor_fingerprint(desc, i).unwrap_or_default();
        lock.is_none_or(|l| l.fresh(&k.name, &fp, generator).is_none())
    })
}

/// Measuring: one build on this machine at a time (Cargo runs build scripts
/// in parallel; two searches on one GPU would skew each other).
fn take_gpu_lock(log: &Log) -> Option<std::fs::File> {
    let taken = crate::gpu_lock::take(|path| {
        log.progress(&format!(
            "waiting for another build that is measuring on this machine's GPU (lock {})",
            path.display()
        ))
    });
    match taken {
        crate::gpu_lock::Taken::Held { file, .. } => Some(file),
        crate::gpu_lock::Taken::Unavailable(why) => {
            log.warn(&format!(
                "measuring without the machine-wide GPU lock: {why}"
            ));
            None
        }
    }
}
