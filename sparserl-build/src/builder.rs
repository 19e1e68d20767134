//! The build-script driver: descriptors in, generated module out.
//!
//! A build runs in phases: the setup resolves what every kernel shares
//! (descriptor, lock file, mode, GPU, NVRTC, targets, cache, policy); per
//! kernel (SpMV or SpMM), its fresh lock entry, else the cache, else the
//! measured search or the policy's pick, then codegen and compilation; the
//! module is emitted last. [`messages`] decides what the user sees and
//! writes the full report under `OUT_DIR`.

use crate::cache::{Cache, KeyBuilder, write_atomic};
use crate::codegen::{self, generator_fingerprint};
use crate::descriptor::{Descriptor, DescriptorError, read_descriptor};
use crate::emit::{self, MODULE_FILE};
use crate::lock::LockError;
use messages::Log;
use serde::{Deserialize, Serialize};
use setup::Setup;
use std::path::{Path, PathBuf};
use thiserror::Error;

pub mod messages;
mod objective;
mod setup;
mod spmm;
mod spmv;

pub use messages::{ENV_VERBOSE, REPORT_FILE};
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
    /// Build-script messages (`cargo:warning` via build-print) and cargo
    /// directives: one summary line, the warnings and the result of each
    /// measured search; the per-kernel details only with
    /// [`ENV_VERBOSE`]` = 1` (they are always in `OUT_DIR/`[`REPORT_FILE`]).
    BuildScript,
    /// Every message, details included, as plain lines on stderr (xtask and
    /// other binaries); no cargo directives.
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
    ///
    /// Phases: resolve the descriptor, lock file, mode, GPU, NVRTC and
    /// cache; per kernel: its fresh lock entry, the cache, else the measured
    /// search or the policy's pick, then codegen and compilation; emit the
    /// module. Every message goes to `OUT_DIR/`[`REPORT_FILE`]; the console
    /// gets one summary line and the warnings (see [`messages`]).
    pub fn try_run(&self) -> Result<BuildReport, BuildError> {
        let verbose = env_var(self.output, ENV_VERBOSE).is_some_and(|v| v.trim() == "1");
        let log = Log::new(self.output, verbose);
        let run = self.setup(&log)?;
        match self.build_all(&run, &log) {
            Ok(report) => {
                log.finish(&run.out_dir, &summary(&run, &report));
                Ok(report)
            }
            Err(e) => {
                log.finish_failed(&run.out_dir, &format!("error: {e}"));
                Err(e)
            }
        }
    }

    /// Builds every kernel and emits the module.
    fn build_all(&self, run: &Setup, log: &Log) -> Result<BuildReport, BuildError> {
        let mut reports = Vec::new();
        let mut spmm_reports = Vec::new();
        let spmm_build = run.spmm(log);
        for (index, decl) in run.desc.kernels.iter().enumerate() {
            match &decl.spmm {
                Some(s) => spmm_reports.push(self.build_spmm(&spmm_build, index, s)?),
                None => reports.push(self.build_spmv(run, log, index, decl)?),
            }
        }
        let module = emit_module(&run.out_dir, &reports, &spmm_reports)?;
        Ok(BuildReport {
            mode: run.mode,
            kernels: reports,
            spmm_kernels: spmm_reports,
            module,
            cache_dir: run.cache.root().map(Path::to_path_buf),
        })
    }
}

/// Writes the generated module (every kernel's type and images) to
/// `out_dir`; its path.
fn emit_module(
    out_dir: &Path,
    reports: &[KernelReport],
    spmm_reports: &[crate::entry_spmm::SpmmKernelReport],
) -> Result<PathBuf, BuildError> {
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
    Ok(module)
}

/// The build's one line: how many kernels, chosen how, e.g. `3 kernels: 2
/// from SparseRL.lock, 1 by the policy (no GPU)`.
fn summary(run: &Setup, report: &BuildReport) -> String {
    let provenances: Vec<Provenance> = report
        .kernels
        .iter()
        .map(|k| k.entry.provenance)
        .chain(report.spmm_kernels.iter().map(|k| k.entry.provenance))
        .collect();
    let why_not_measured = match run.not_measured {
        setup::NotMeasured::NoGpu => " (no GPU)",
        setup::NotMeasured::ModeAsked if run.mode == Mode::Policy => " (mode `policy`)",
        setup::NotMeasured::ModeAsked => " (mode `off`)",
        setup::NotMeasured::No => "",
    };
    let gpu = run.gpu.as_ref().map(|g| g.name()).unwrap_or_default();
    summary_line(&provenances, why_not_measured, &gpu)
}

/// [`summary`] of kernels chosen as `provenances`; `why_not_measured` (e.g.
/// ` (no GPU)`) follows the policy's and the fallback's counts.
fn summary_line(provenances: &[Provenance], why_not_measured: &str, gpu: &str) -> String {
    let count = |p: Provenance| provenances.iter().filter(|&&q| q == p).count();
    let parts: Vec<String> = [
        (
            Provenance::LockFile,
            format!("from {}", crate::lock::LOCK_FILE),
        ),
        (Provenance::Measured, format!("measured on {gpu}")),
        (
            Provenance::Policy,
            format!("by the policy{why_not_measured}"),
        ),
        (Provenance::Fallback, format!("fallback{why_not_measured}")),
    ]
    .into_iter()
    .filter_map(|(p, how)| {
        let n = count(p);
        (n > 0).then(|| format!("{n} {how}"))
    })
    .collect();
    let n = provenances.len();
    let kernels = if n == 1 { "kernel" } else { "kernels" };
    if parts.is_empty() {
        format!("{n} {kernels}")
    } else {
        format!("{n} {kernels}: {}", parts.join(", "))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_counts_kernels_by_where_they_come_from() {
        use Provenance::*;
        assert_eq!(
            summary_line(&[LockFile, Policy, LockFile], " (no GPU)", ""),
            "3 kernels: 2 from SparseRL.lock, 1 by the policy (no GPU)"
        );
        assert_eq!(
            summary_line(&[Measured], "", "NVIDIA H200"),
            "1 kernel: 1 measured on NVIDIA H200"
        );
        assert_eq!(
            summary_line(&[Fallback, Fallback], " (mode `off`)", ""),
            "2 kernels: 2 fallback (mode `off`)"
        );
        assert_eq!(summary_line(&[], "", ""), "0 kernels");
    }
}
