//! The build-script driver: descriptors in, generated module out.

use crate::cache::{Cache, KeyBuilder, Lookup, write_atomic};
use crate::codegen::{self, generator_fingerprint};
use crate::descriptor::{Descriptor, DescriptorError, KernelDecl, read_descriptor};
use crate::emit::{self, KERNEL_DIR, MODULE_FILE};
use crate::lock::{LockError, LockFile};
use crate::search::SearchConfig;
use serde::{Deserialize, Serialize};
use sparserl_policies::{PolicyChoice, PolicyInUse, policy_in_use};
use sparserl_rt::{Features, Variant};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::time::Instant;
use thiserror::Error;

mod objective;
mod spmm;

pub use spmm::spmm_candidates;

pub use crate::entry::{ArchImages, BuildReport, CacheStatus, Entry, FusedImage, KernelReport};
use sparserl_rt::Provenance;

/// Env var selecting the mode: `full`, `policy` or `off`.
pub const ENV_MODE: &str = "SPARSERL_MODE";
/// Env var overriding the persistent cache directory.
pub const ENV_CACHE_DIR: &str = "SPARSERL_CACHE_DIR";
/// Env var disabling the persistent cache when set to `off` / `0`.
pub const ENV_CACHE: &str = "SPARSERL_CACHE";
/// Env var overriding the per-kernel search budget (seconds).
pub const ENV_BUDGET: &str = "SPARSERL_BUDGET_SECONDS";
/// Env var pointing at a target directory (cargo's own).
const ENV_TARGET_DIR: &str = "CARGO_TARGET_DIR";

/// NVRTC options every kernel is compiled with (part of the cache key).
pub const COMPILE_OPTIONS: &[&str] = &["-std=c++17"];

/// How kernels are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Measure on the build machine's GPU (fresh lock entries still win).
    Full,
    /// No measuring: the policy's pick (fresh lock entries still win).
    Policy,
    /// Lock file entries, else the safe fallback variant.
    Off,
}

impl Mode {
    fn parse(s: &str) -> Option<Mode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "full" => Some(Mode::Full),
            "policy" => Some(Mode::Policy),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }
}

/// Everything that can stop a build.
#[derive(Debug, Error)]
pub enum BuildError {
    /// Bad descriptor (names manifest and key path).
    #[error(transparent)]
    Descriptor(#[from] DescriptorError),
    /// Bad lock file.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// A required cargo env var is missing (not running under cargo?).
    #[error(
        "environment variable {0} is not set; call sparserl_build::build() from a build script"
    )]
    MissingEnv(&'static str),
    /// Bad value in an env var.
    #[error("environment variable {var}={value:?} is invalid: expected {expected}")]
    BadEnv {
        /// variable
        var: &'static str,
        /// value found
        value: String,
        /// what is allowed
        expected: &'static str,
    },
    /// Code generation failed (an internal error: please report).
    #[error("code generation failed for kernel `{kernel}`: {source}")]
    Codegen {
        /// kernel name
        kernel: String,
        /// cause
        #[source]
        source: codegen::CodegenError,
    },
    /// NVRTC or ptxas rejected generated code (an internal error: please report).
    #[error("NVRTC failed on kernel `{kernel}`: {source}")]
    Compile {
        /// kernel name
        kernel: String,
        /// cause
        #[source]
        source: sparserl_rt::nvrtc::NvrtcError,
    },
    /// The measured search broke down (the device was lost, ...).
    #[error("measuring kernel `{kernel}` failed: {source}")]
    Search {
        /// kernel name
        kernel: String,
        /// cause
        #[source]
        source: crate::search::SearchError,
    },
    /// An image the build would embed computes a wrong result on the build
    /// GPU (or does not load there); the build stops instead of shipping it.
    #[error(
        "kernel `{kernel}`: a shipped image failed its check against float64 on the build GPU: {source}"
    )]
    Shipped {
        /// kernel name
        kernel: String,
        /// what failed
        #[source]
        source: Box<crate::verify::VerifyError>,
    },
    /// A kernel index beyond the descriptor's kernels.
    #[error("no kernel with index {0} in the descriptor")]
    NoSuchKernel(usize),
    /// Writing outputs failed.
    #[error("cannot write {path}: {source}")]
    Io {
        /// path
        path: PathBuf,
        /// cause
        source: std::io::Error,
    },
}

/// How the build talks to the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Build-script messages (`cargo:warning` via build-print) and cargo directives.
    BuildScript,
    /// Plain lines on stderr (xtask and other binaries); no cargo directives.
    Terminal,
    /// Nothing.
    Quiet,
}

/// Configures and runs the generation for one crate.
///
/// In `build.rs`'s `main`:
///
/// ```no_run
/// sparserl_build::Builder::from_env()
///     .budget_seconds(10.0)
///     .run();
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    manifest_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    mode: Option<Mode>,
    cache_dir: Option<Option<PathBuf>>,
    output: Output,
    budget: Option<f64>,
    generator: Option<String>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            manifest_dir: None,
            out_dir: None,
            mode: None,
            cache_dir: None,
            output: Output::BuildScript,
            budget: None,
            generator: None,
        }
    }
}

fn env_var(out: Output, name: &str) -> Option<String> {
    if out == Output::BuildScript {
        println!("cargo:rerun-if-env-changed={name}");
    }
    std::env::var(name).ok()
}

impl Builder {
    /// A builder for the crate cargo is building (reads `CARGO_MANIFEST_DIR`
    /// and `OUT_DIR`), reporting through build-script messages.
    pub fn from_env() -> Builder {
        Builder {
            manifest_dir: std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from),
            out_dir: std::env::var_os("OUT_DIR").map(PathBuf::from),
            ..Builder::default()
        }
    }

    /// A builder for an explicit crate directory and output directory.
    pub fn new(manifest_dir: impl Into<PathBuf>, out_dir: impl Into<PathBuf>) -> Builder {
        Builder {
            manifest_dir: Some(manifest_dir.into()),
            out_dir: Some(out_dir.into()),
            ..Builder::default()
        }
    }

    /// Forces a mode (default: `SPARSERL_MODE`, else `full` with a GPU, `policy` without).
    pub fn mode(&mut self, mode: Mode) -> &mut Self {
        self.mode = Some(mode);
        self
    }

    /// Sets the persistent cache directory (`None` disables it).
    pub fn cache_dir(&mut self, dir: Option<PathBuf>) -> &mut Self {
        self.cache_dir = Some(dir);
        self
    }

    /// Sets how messages are shown.
    pub fn output(&mut self, output: Output) -> &mut Self {
        self.output = output;
        self
    }

    /// Overrides the per-kernel search budget in seconds.
    pub fn budget_seconds(&mut self, seconds: f64) -> &mut Self {
        self.budget = Some(seconds);
        self
    }

    /// Uses `fingerprint` as the generator fingerprint instead of
    /// [`generator_fingerprint`] (for tests: the fingerprint a changed
    /// generator would have, [`codegen::fingerprint_of`]).
    #[doc(hidden)]
    pub fn generator(&mut self, fingerprint: String) -> &mut Self {
        self.generator = Some(fingerprint);
        self
    }

    fn generator_fp(&self) -> String {
        self.generator.clone().unwrap_or_else(generator_fingerprint)
    }

    fn info(&self, msg: &str) {
        match self.output {
            Output::BuildScript => {
                for line in msg.lines() {
                    build_print::info!("{line}");
                }
            }
            Output::Terminal => eprintln!("sparserl: {msg}"),
            Output::Quiet => {}
        }
    }

    fn warn(&self, msg: &str) {
        match self.output {
            Output::BuildScript => {
                for line in msg.lines() {
                    build_print::warn!("{line}");
                }
            }
            Output::Terminal => eprintln!("sparserl: warning: {msg}"),
            Output::Quiet => {}
        }
    }

    /// Says once per build which policy proposes the variants: the learned
    /// one with its file hash and round, or the prior and why (a warning
    /// when the embedded learned policy does not load).
    fn announce_policy(&self, choice: &PolicyChoice, announced: &Cell<bool>) {
        if announced.replace(true) {
            return;
        }
        let msg = format!("policy: {}", choice.describe());
        match choice {
            PolicyChoice::PriorUnusable { .. } => self.warn(&msg),
            _ => self.info(&msg),
        }
    }

    /// Runs the build; on error prints one message and exits with status 1
    /// (the build-script convention). Use [`Builder::try_run`] to handle errors.
    pub fn run(&self) -> BuildReport {
        match self.try_run() {
            Ok(r) => r,
            Err(e) => {
                match self.output {
                    Output::BuildScript => {
                        for line in e.to_string().lines() {
                            build_print::error!("{line}");
                        }
                    }
                    _ => eprintln!("sparserl: error: {e}"),
                }
                std::process::exit(1);
            }
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

    fn resolve_cache(&self, out_dir: &Path) -> Cache {
        if let Some(choice) = &self.cache_dir {
            return choice
                .clone()
                .map(Cache::at)
                .unwrap_or_else(Cache::disabled);
        }
        if let Some(v) = env_var(self.output, ENV_CACHE)
            && matches!(v.trim(), "off" | "0" | "false")
        {
            return Cache::disabled();
        }
        if let Some(d) = env_var(self.output, ENV_CACHE_DIR) {
            return Cache::at(d);
        }
        let target = env_var(self.output, ENV_TARGET_DIR).filter(|t| !t.is_empty());
        Cache::at(crate::cache::target_cache_dir(
            target.as_deref().map(Path::new),
            out_dir,
        ))
    }

    /// Runs the build and returns a report.
    pub fn try_run(&self) -> Result<BuildReport, BuildError> {
        let manifest_dir = self
            .manifest_dir
            .clone()
            .ok_or(BuildError::MissingEnv("CARGO_MANIFEST_DIR"))?;
        let out_dir = self
            .out_dir
            .clone()
            .ok_or(BuildError::MissingEnv("OUT_DIR"))?;
        let manifest = manifest_dir.join("Cargo.toml");
        let desc = read_descriptor(&manifest)?;
        if self.output == Output::BuildScript {
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
        let requested = self.resolve_mode()?;
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
        }
        .or(desc.budget_seconds)
        .unwrap_or(30.0);
        let cache = self.resolve_cache(&out_dir);
        if self.output == Output::BuildScript {
            for v in sparserl_rt::nvrtc::env_vars_read() {
                if !matches!(*v, "PATH" | "CARGO_MANIFEST_DIR") {
                    println!("cargo:rerun-if-env-changed={v}");
                }
            }
        }
        let lock = LockFile::read(&manifest_dir)?;
        let lock_path = manifest_dir.join(crate::lock::LOCK_FILE);

        // The GPU is probed only when measuring could be wanted.
        let mut gpu: Option<crate::gpu::GpuTuner> = None;
        let mode = match requested {
            Some(Mode::Full) | None => match crate::gpu::GpuTuner::probe() {
                Ok(t) => {
                    gpu = Some(t);
                    Mode::Full
                }
                Err(why) => {
                    let all_locked = desc
                        .kernels
                        .iter()
                        .all(|k| lock.as_ref().is_some_and(|l| l.has_entry(&k.name)));
                    if all_locked {
                        self.info(&format!(
                            "no GPU available for measuring ({why}); every kernel has a lock-file entry, nothing to measure (shipped images not checked on a device)"
                        ));
                    } else {
                        self.info(&format!(
                            "no GPU available for measuring ({why}); using the lock file or the policy's pick (shipped images not checked on a device)"
                        ));
                    }
                    Mode::Policy
                }
            },
            Some(m) => m,
        };
        let toolkit = match sparserl_rt::nvrtc::locate() {
            Ok(t) => Some(t),
            Err(e) => {
                self.info(&format!(
                    "NVRTC not found, writing CUDA sources without PTX (kernels compile at first use): {e}"
                ));
                None
            }
        };
        // Targets: the descriptor's list plus the build GPU's architecture;
        // without a list, the build GPU's alone, else sm_80 + sm_90; lowest
        // first (its PTX is the portable one).
        let mut archs: Vec<String> = match (&desc.arch, &gpu) {
            (Some(list), Some(g)) => list.iter().cloned().chain([g.arch()]).collect(),
            (Some(list), None) => list.clone(),
            (None, Some(g)) => vec![g.arch()],
            (None, None) => crate::descriptor::DEFAULT_ARCH
                .iter()
                .map(|a| a.to_string())
                .collect(),
        };
        // Measuring: one build on this machine at a time (Cargo runs build
        // scripts in parallel; two searches on one GPU would skew each other).
        let _gpu_lock = if gpu.is_some()
            && mode == Mode::Full
            && desc.kernels.iter().enumerate().any(|(i, k)| {
                if k.spmm.is_some() {
                    return spmm::fresh_entry(lock.as_ref(), &desc, i, &generator_fingerprint())
                        .is_none();
                }
                let fp = descriptor_fingerprint(&desc, i).unwrap_or_default();
                lock.as_ref()
                    .is_none_or(|l| l.fresh(&k.name, &fp, &self.generator_fp()).is_none())
            }) {
            match crate::gpu_lock::take(|path| {
                self.info(&format!(
                    "waiting for another build that is measuring on this machine's GPU (lock {})",
                    path.display()
                ))
            }) {
                crate::gpu_lock::Taken::Held { file, .. } => Some(file),
                crate::gpu_lock::Taken::Unavailable(why) => {
                    self.warn(&format!(
                        "measuring without the machine-wide GPU lock: {why}"
                    ));
                    None
                }
            }
        } else {
            None
        };
        archs.sort_by_key(|a| sparserl_rt::arch_number(a).unwrap_or(u32::MAX));
        archs.dedup();
        // The policy actually in use (the prior when the embedded learned
        // policy does not load): its version goes into every cache key, and
        // the first kernel that consults it says which one it is.
        let policy = policy_in_use();
        let policy_version = policy.choice.version();
        let announced = Cell::new(false);
        let kernel_dir = out_dir.join(KERNEL_DIR);
        let mut reports = Vec::new();
        let spmm_announced = Cell::new(false);
        let spmm_build = spmm::SpmmBuild {
            desc: &desc,
            lock: lock.as_ref(),
            mode,
            gpu: gpu.as_ref(),
            archs: &archs,
            nvrtc: toolkit
                .as_ref()
                .map(|t| format!("{}.{}", t.nvrtc_version.0, t.nvrtc_version.1)),
            budget,
            cache: &cache,
            kernel_dir: &kernel_dir,
            announced: &spmm_announced,
        };
        let mut spmm_reports = Vec::new();
        for (index, decl) in desc.kernels.iter().enumerate() {
            if let Some(s) = &decl.spmm {
                spmm_reports.push(self.build_spmm(&spmm_build, index, s)?);
                continue;
            }
            let t0 = Instant::now();
            let descriptor_fp = descriptor_fingerprint(&desc, index)?;
            let generator = self.generator_fp();
            // A fresh entry is checked against the declaration before use.
            let locked = match &lock {
                Some(l) => l
                    .fresh_checked(&lock_path, decl, &descriptor_fp, &generator)?
                    .cloned(),
                None => None,
            };
            if lock
                .as_ref()
                .is_some_and(|l| l.kernel.iter().any(|e| e.name == decl.name))
                && locked.is_none()
            {
                self.warn(&format!(
                    "lock entry for `{}` is stale (descriptor, samples or generator changed); run `cargo xtask retune`",
                    decl.name
                ));
            }
            let source_label = match (&locked, mode, &gpu) {
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
                    "measured:{}:{budget}{}",
                    g.name(),
                    objective::key_suffix(decl)
                ),
                _ => format!("policy:{policy_version}"),
            };
            let mut key = KeyBuilder::new();
            key.text("descriptor", &descriptor_fp)
                .text("generator", &generator)
                .text("policy", &policy_version)
                .text("choice", &source_label)
                .text("entry-format", "5")
                .text("arch", &archs.join(","))
                .text(
                    "nvrtc",
                    &toolkit
                        .map(|t| format!("{}.{}", t.nvrtc_version.0, t.nvrtc_version.1))
                        .unwrap_or_else(|| "none".into()),
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
            let key = key.finish();
            let (mut entry, status) = match cache.get::<Entry>(&key) {
                Lookup::Hit(e) => (e, CacheStatus::Hit),
                other => {
                    if let Lookup::Corrupt(why) = other {
                        self.warn(&format!(
                            "damaged cache entry removed and regenerated: {why}"
                        ));
                    }
                    let samples = desc.load_samples(index)?;
                    let e = self.generate(
                        decl,
                        &samples,
                        locked.as_ref(),
                        mode,
                        gpu.as_ref(),
                        (&policy, &announced),
                        toolkit.is_some(),
                        &archs,
                        budget,
                    )?;
                    if let Err(err) = cache.put(&key, &e) {
                        self.warn(&format!(
                            "cannot store cache entry ({err}); continuing uncached"
                        ));
                    }
                    (e, CacheStatus::Miss)
                }
            };
            self.verify_shipped((gpu.as_ref(), &desc, index), &mut entry, (&cache, &key))?;
            let source_path = kernel_dir.join(format!("{}.cu", decl.name));
            let ptx_path = kernel_dir.join(format!("{}.ptx", decl.name));
            let write = |p: &Path, s: &str| {
                write_atomic(p, s.as_bytes()).map_err(|source| BuildError::Io {
                    path: p.to_path_buf(),
                    source,
                })
            };
            write(&source_path, &entry.source)?;
            write(
                &kernel_dir.join(format!("{}.fallback.cu", decl.name)),
                &entry.fallback_source,
            )?;
            if let Some(p) = &entry.ptx {
                write(&ptx_path, p)?;
            }
            if let Some(p) = &entry.fallback_ptx {
                write(&kernel_dir.join(format!("{}.fallback.ptx", decl.name)), p)?;
            }
            for img in &entry.images {
                let arch = &img.arch;
                write(
                    &kernel_dir.join(format!("{}.{arch}.ptx", decl.name)),
                    &img.ptx,
                )?;
                write(
                    &kernel_dir.join(format!("{}.fallback.{arch}.ptx", decl.name)),
                    &img.fallback_ptx,
                )?;
                let Some((c, f)) = &img.cubins else { continue };
                for (path, bytes) in [
                    (kernel_dir.join(format!("{}.{arch}.cubin", decl.name)), c),
                    (
                        kernel_dir.join(format!("{}.fallback.{arch}.cubin", decl.name)),
                        f,
                    ),
                ] {
                    write_atomic(&path, bytes).map_err(|source| BuildError::Io {
                        path: path.clone(),
                        source,
                    })?;
                }
            }
            write(
                &kernel_dir.join(format!("{}.trials.json", decl.name)),
                &serde_json::to_string_pretty(&entry.trials).unwrap_or_default(),
            )?;
            let secs = t0.elapsed().as_secs_f64();
            let what = match status {
                CacheStatus::Hit => "cache hit, no generation work".to_string(),
                CacheStatus::Miss => format!("generated in {secs:.1}s"),
            };
            self.info(&format!(
                "kernel `{}` ({}): {} [{}] ({what})",
                decl.name, entry.value, entry.variant, entry.note
            ));
            reports.push(KernelReport {
                name: decl.name.clone(),
                type_name: decl.type_name.clone(),
                cache: status,
                ptx_path: entry.ptx.as_ref().map(|_| ptx_path.clone()),
                entry,
                source_path,
                key,
                seconds: secs,
            });
        }
        let module = out_dir.join(MODULE_FILE);
        let pairs: Vec<(String, Entry)> = reports
            .iter()
            .map(|r| (r.type_name.clone(), r.entry.clone()))
            .collect();
        let spmm_pairs: Vec<(String, crate::entry_spmm::SpmmEntry)> = spmm_reports
            .iter()
            .map(|r| (r.type_name.clone(), r.entry.clone()))
            .collect();
        let text = emit::render(&pairs) + &crate::emit_spmm::render(&spmm_pairs);
        write_atomic(&module, text.as_bytes()).map_err(|source| BuildError::Io {
            path: module.clone(),
            source,
        })?;
        Ok(BuildReport {
            mode,
            kernels: reports,
            spmm_kernels: spmm_reports,
            module,
            cache_dir: cache.root().map(Path::to_path_buf),
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn generate(
        &self,
        decl: &KernelDecl,
        samples: &[crate::descriptor::Sample],
        locked: Option<&crate::lock::LockEntry>,
        mode: Mode,
        gpu: Option<&crate::gpu::GpuTuner>,
        (in_use, announced): (&PolicyInUse, &Cell<bool>),
        compile: bool,
        archs: &[String],
        budget: f64,
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
        let policy = in_use.policy.as_ref();
        let mut trials = Vec::new();
        let mut predicted = None;
        let mut measured_gbs = None;
        let mut tuned_on = None;
        let mut objective = None;
        let (variant, provenance, note) = if let Some(l) = locked {
            objective = l.objective.clone();
            measured_gbs = Some(l.gbs);
            tuned_on = Some(l.gpu.clone());
            (
                l.variant,
                Provenance::LockFile,
                format!("from the lock file: {:.0} GB/s on {}", l.gbs, l.gpu),
            )
        } else {
            match (mode, gpu) {
                (Mode::Off, _) => (
                    Variant::FALLBACK,
                    Provenance::Fallback,
                    "fallback (search off)".to_string(),
                ),
                (Mode::Full, Some(g)) => {
                    self.announce_policy(&in_use.choice, announced);
                    let proposals: Vec<Variant> = policy
                        .propose(&first, decl.value, 16)
                        .into_iter()
                        .map(|p| p.variant)
                        .collect();
                    let cfg = SearchConfig {
                        budget_seconds: budget,
                        reorders: decl.allowed_reorders(),
                        ..SearchConfig::default()
                    };
                    let matrices: Vec<&sparserl_rt::Csr> =
                        samples.iter().map(|s| &s.matrix).collect();
                    let out = g
                        .tune_with(
                            &matrices,
                            decl.value,
                            &proposals,
                            &cfg,
                            crate::gpu::measured_epilogue(&decl.epilogues),
                        )
                        .map_err(|source| BuildError::Search {
                            kernel: decl.name.clone(),
                            source,
                        })?;
                    let mut out = out;
                    objective = self.apply_objective(g, decl, &matrices, &mut out)?;
                    let pct = 100.0 * out.gbs / g.copy_gbs();
                    let fused = crate::gpu::measured_epilogue(&decl.epilogues)
                        .map(|e| format!(" (measured with its fused `{e}` epilogue)"))
                        .unwrap_or_default();
                    self.info(&format!(
                        "kernel `{}`{fused}: {} candidates in {:.1}s, best {:.0} GB/s ({pct:.0}% of copy bandwidth), {}",
                        decl.name, out.candidates, out.seconds, out.gbs, out.stopped
                    ));
                    measured_gbs = Some(out.gbs);
                    tuned_on = Some(g.name());
                    trials = out.trials;
                    (
                        out.winner,
                        Provenance::Measured,
                        format!(
                            "measured: {:.0} GB/s, {pct:.0}% of copy, {} candidates",
                            out.gbs, out.candidates
                        ),
                    )
                }
                _ => {
                    self.announce_policy(&in_use.choice, announced);
                    let best = policy.propose(&first, decl.value, 1);
                    match best.first() {
                        Some(p) => {
                            predicted = Some(p.score);
                            let est = gpu_estimate_note(p.score);
                            (
                                // A numbering the descriptor asks for; else the given one.
                                Variant {
                                    reorder: decl.reorder.unwrap_or_default(),
                                    ..p.variant
                                },
                                Provenance::Policy,
                                format!("policy pick ({}), predicted {est}", policy.name()),
                            )
                        }
                        None => (
                            Variant::FALLBACK,
                            Provenance::Fallback,
                            "fallback (policy had no proposal)".into(),
                        ),
                    }
                }
            }
        };
        let codegen_err = |source: codegen::CodegenError| BuildError::Codegen {
            kernel: decl.name.clone(),
            source,
        };
        let chosen =
            codegen::generate_with(&variant, decl.value, &decl.epilogues).map_err(codegen_err)?;
        let fallback =
            codegen::generate_fallback(decl.value, &decl.epilogues).map_err(codegen_err)?;
        let fused = decl
            .epilogues
            .iter()
            .map(|e| {
                let in_chosen = chosen
                    .fused
                    .iter()
                    .find(|(f, _)| f == e)
                    .map(|(_, n)| n.clone());
                let in_fallback = fallback
                    .fused
                    .iter()
                    .find(|(f, _)| f == e)
                    .map(|(_, n)| n.clone())
                    .unwrap_or_default();
                FusedImage {
                    epilogue: *e,
                    entry: in_chosen,
                    fallback_entry: in_fallback,
                }
            })
            .collect();
        let ptx = |src: &str, arch: &str| -> Result<String, BuildError> {
            let opts: Vec<String> = COMPILE_OPTIONS.iter().map(|s| s.to_string()).collect();
            sparserl_rt::nvrtc::compile_ptx(src, arch, &opts).map_err(|source| {
                BuildError::Compile {
                    kernel: decl.name.clone(),
                    source,
                }
            })
        };
        // PTX for every target, and cubins (SASS) when ptxas is found, so a
        // device of a listed architecture loads the kernel without
        // compiling; PTX stays for newer devices.
        let with_cubins = compile && sparserl_rt::nvrtc::ptxas_available();
        let cubin = |ptx: &str, arch: &str| {
            sparserl_rt::nvrtc::assemble_cubin(ptx, arch).map_err(|source| BuildError::Compile {
                kernel: decl.name.clone(),
                source,
            })
        };
        let mut images = Vec::new();
        if compile {
            for arch in archs {
                let (p, f) = (ptx(&chosen.source, arch)?, ptx(&fallback.source, arch)?);
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
        }
        let lowest = images.first();
        Ok(Entry {
            name: decl.name.clone(),
            value: decl.value,
            variant,
            provenance,
            note,
            predicted,
            measured_gbs,
            arch: archs.to_vec(),
            ptx: lowest.map(|l| l.ptx.clone()),
            fallback_ptx: lowest.map(|l| l.fallback_ptx.clone()),
            images,
            tuned_on,
            entry: chosen.entry,
            source: chosen.source,
            fallback_entry: fallback.entry,
            fallback_source: fallback.source,
            fused,
            tuned_for,
            sample_features: feats.iter().map(|f| f.to_vec().to_vec()).collect(),
            trials,
            checked_on: None,
            objective,
        })
    }

    /// Checks the images `entry` ships on the build GPU (when there is one
    /// and they were not checked on it yet; [`crate::verify`]), recording
    /// the device in the entry and the cache. A wrong image stops the build.
    fn verify_shipped(
        &self,
        (gpu, desc, index): (Option<&crate::gpu::GpuTuner>, &Descriptor, usize),
        entry: &mut Entry,
        (cache, key): (&Cache, &str),
    ) -> Result<(), BuildError> {
        let Some(g) = gpu
            .filter(|g| crate::verify::needs_check(entry, &crate::verify::device_label(g.gpu())))
        else {
            return Ok(());
        };
        let samples = desc.load_samples(index)?;
        let matrices: Vec<&sparserl_rt::Csr> = samples.iter().map(|s| &s.matrix).collect();
        let report = crate::verify::check_entry(g.gpu(), entry, &matrices).map_err(|source| {
            BuildError::Shipped {
                kernel: entry.name.clone(),
                source: Box::new(source),
            }
        })?;
        self.info(&report.summary(&entry.name));
        entry.checked_on = Some(report.device);
        if let Err(err) = cache.put(key, entry) {
            self.warn(&format!(
                "cannot store cache entry ({err}); continuing uncached"
            ));
        }
        Ok(())
    }
}

/// Predicted GB/s on a reference H200-class copy bandwidth of 4100 GB/s.
fn gpu_estimate_note(score: f64) -> String {
    format!(
        "~{:.0} GB/s ({:.0}% of copy bandwidth, estimate)",
        score * 4100.0,
        score * 100.0
    )
}

/// Fingerprint of kernel `index` of `desc`: its canonical declaration plus
/// the bytes of its sample files, or for a synthetic pattern the code that
/// generates its samples. Lock entries are fresh when it matches.
pub fn descriptor_fingerprint(desc: &Descriptor, index: usize) -> Result<String, BuildError> {
    let decl = desc
        .kernels
        .get(index)
        .ok_or(BuildError::NoSuchKernel(index))?;
    let mut fp = KeyBuilder::new();
    fp.text("kernel", &decl.canonical_json());
    if decl.pattern.is_synthetic() {
        fp.text(
            "sample-generator",
            &crate::descriptor::sample_generator_fingerprint(),
        );
    }
    for f in decl.pattern.files(&desc.manifest_dir())? {
        let bytes = std::fs::read(&f).map_err(|source| BuildError::Io {
            path: f.clone(),
            source,
        })?;
        fp.part("sample", &bytes);
    }
    Ok(fp.finish())
}

/// Convenience for `build.rs`: `sparserl_build::build()`.
pub fn build() -> BuildReport {
    Builder::from_env().run()
}

/// Like [`build`] but returns errors.
pub fn try_build() -> Result<BuildReport, BuildError> {
    Builder::from_env().try_run()
}

/// Reads the descriptor of a crate directory (for tools).
pub fn descriptor_of(manifest_dir: &Path) -> Result<Descriptor, BuildError> {
    Ok(read_descriptor(&manifest_dir.join("Cargo.toml"))?)
}
