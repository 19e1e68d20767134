//! Finding and using NVRTC (and `ptxas`) without panicking.
//!
//! cudarc loads CUDA libraries lazily and panics when one is missing. This
//! module finds the NVRTC library first, preloads it by absolute path with
//! `RTLD_GLOBAL` so that cudarc's own `dlopen` of the soname resolves to the
//! already loaded copy, and only then lets cudarc call into it. Everything
//! that can fail returns an [`NvrtcError`].
//!
//! Search order of [`locate`]:
//!
//! 1. `$SPARSERL_CUDA_ROOT`, `$CUDA_PATH`, `$CUDA_HOME` (each a toolkit root
//!    with `lib/` or `lib64/` holding `libnvrtc.so*`), then `/usr/local/cuda`;
//! 2. the provisioned wheel copy: `$SPARSERL_TOOLS_DIR/cuda/nvidia/cu13`
//!    (`SPARSERL_TOOLS_DIR` is the `.tools` directory that
//!    `cargo xtask provision` fills), or, when the variable is unset, the first
//!    `.tools/cuda/nvidia/cu13` in `$CARGO_MANIFEST_DIR` or a directory above
//!    it (the crate being built; the process's working directory is never
//!    searched);
//! 3. the dynamic linker's plain library search path (`libnvrtc.so.13`,
//!    `libnvrtc.so`).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::nvrtc::{CompileError, CompileOptions, compile_ptx_with_opts, sys};

/// Errors of NVRTC discovery, compilation and `ptxas` checks.
#[derive(Debug, thiserror::Error)]
pub enum NvrtcError {
    /// No usable NVRTC library was found.
    #[error(
        "NVRTC (libnvrtc.so) was not found. Searched:\n  {}\nTo fix: install the CUDA toolkit \
         (or point SPARSERL_CUDA_ROOT / CUDA_PATH / CUDA_HOME at it), or, without a toolkit, \
         `python3 -m pip install --target .tools/cuda nvidia-cuda-nvrtc==13.0.88 \
         nvidia-cuda-nvcc==13.0.88` next to your Cargo.toml and set \
         SPARSERL_TOOLS_DIR=$PWD/.tools (in the SparseRL repository `cargo xtask provision` \
         does this).",
        searched.join("\n  ")
    )]
    NotFound {
        /// Every place looked at, with the reason it was rejected.
        searched: Vec<String>,
    },
    /// NVRTC rejected the source (or the options); `log` is NVRTC's program log.
    #[error("NVRTC compilation failed:\n{log}")]
    Compile {
        /// NVRTC's program log, or a description of the failure.
        log: String,
    },
    /// `ptxas` failed or could not be run.
    #[error("ptxas failed:\n{stderr}")]
    Ptxas {
        /// What `ptxas` printed (or why it could not be started).
        stderr: String,
    },
    /// An I/O error (temporary files).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// A located, loaded NVRTC plus the matching `ptxas` when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolkit {
    /// Toolkit root the library was loaded from (`None`: found on the plain
    /// library search path).
    pub root: Option<PathBuf>,
    /// NVRTC version `(major, minor)`.
    pub nvrtc_version: (i32, i32),
    /// `root/bin/ptxas` if it exists, else `ptxas` found on `PATH`.
    pub ptxas: Option<PathBuf>,
}

/// Environment variables that [`locate`] may consult (build scripts emit
/// `cargo:rerun-if-env-changed` for each).
const ENV_VARS: &[&str] = &[
    "SPARSERL_CUDA_ROOT",
    "CUDA_PATH",
    "CUDA_HOME",
    "SPARSERL_TOOLS_DIR",
    "CARGO_MANIFEST_DIR",
    "LD_LIBRARY_PATH",
    "PATH",
];

/// The environment variables that [`locate`] reads to find the toolkit.
pub fn env_vars_read() -> &'static [&'static str] {
    ENV_VARS
}

/// Sub-path of a `.tools` directory holding the provisioned wheel copy.
const WHEEL_SUBDIR: &str = "cuda/nvidia/cu13";

static TOOLKIT: OnceLock<Result<Toolkit, Vec<String>>> = OnceLock::new();

/// Finds and loads NVRTC (once per process; the result is cached).
///
/// Never panics when the library is missing; returns [`NvrtcError::NotFound`]
/// listing every place it looked.
pub fn locate() -> Result<&'static Toolkit, NvrtcError> {
    match TOOLKIT.get_or_init(search) {
        Ok(t) => Ok(t),
        Err(searched) => Err(NvrtcError::NotFound {
            searched: searched.clone(),
        }),
    }
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// Candidate toolkit roots in search order, each with a label for messages
/// (`None`: a place that yielded no candidate, with the label explaining why).
fn candidate_roots() -> Vec<(String, Option<PathBuf>)> {
    let mut out = Vec::new();
    for var in ["SPARSERL_CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"] {
        if let Some(p) = env_path(var) {
            out.push((format!("${var}"), Some(p)));
        }
    }
    out.push(("default".into(), Some(PathBuf::from("/usr/local/cuda"))));
    if let Some(tools) = env_path("SPARSERL_TOOLS_DIR") {
        out.push(("$SPARSERL_TOOLS_DIR".into(), Some(tools.join(WHEEL_SUBDIR))));
        // Also accept the variable pointing straight at a toolkit root.
        out.push(("$SPARSERL_TOOLS_DIR".into(), Some(tools)));
    } else {
        // Anchored at the crate being built (build scripts, `cargo run`,
        // `cargo test` set it), never at the process's working directory.
        let starts: Vec<PathBuf> = env_path("CARGO_MANIFEST_DIR").into_iter().collect();
        let mut found = Vec::new();
        for start in starts {
            for dir in start.ancestors() {
                let cand = dir.join(".tools").join(WHEEL_SUBDIR);
                if cand.is_dir() {
                    if !found.contains(&cand) {
                        found.push(cand);
                    }
                    break;
                }
            }
        }
        if found.is_empty() {
            out.push((
                format!(
                    "provisioned copy: no .tools/{WHEEL_SUBDIR} in or above $CARGO_MANIFEST_DIR"
                ),
                None,
            ));
        }
        for f in found {
            out.push(("provisioned copy".into(), Some(f)));
        }
    }
    out
}

/// Files in `dir` whose name starts with `prefix`, sorted, preferring names
/// without `.alt.` (the wheels ship alternative builds next to the main one).
fn libs_with_prefix(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(OsStr::to_str)
                .is_some_and(|n| n.starts_with(prefix) && !n.contains(".alt."))
        })
        .collect();
    v.sort();
    v
}

/// Picks the NVRTC library in a lib dir: `libnvrtc.so.<major>` first (the
/// name cudarc asks for), then `libnvrtc.so`, then any `libnvrtc.so.*`.
fn pick_nvrtc(lib_dir: &Path) -> Option<PathBuf> {
    let all = libs_with_prefix(lib_dir, "libnvrtc.so");
    let name = |p: &PathBuf| {
        p.file_name()
            .and_then(OsStr::to_str)
            .unwrap_or_default()
            .to_owned()
    };
    let major_only = |n: &str| {
        n.strip_prefix("libnvrtc.so.")
            .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
    };
    all.iter()
        .rev()
        .find(|p| major_only(&name(p)))
        .or_else(|| all.iter().find(|p| name(p) == "libnvrtc.so"))
        .or_else(|| all.first())
        .cloned()
}

/// Opens `path` with `RTLD_NOW | RTLD_GLOBAL` and leaks the handle so the
/// library stays loaded (and visible by soname) for the whole process.
fn open_global(path: &OsStr) -> Result<(), libloading::Error> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: loading a CUDA library runs its initialisers; NVIDIA's NVRTC
    // libraries have no initialisers with preconditions on the caller. The
    // handle is leaked on purpose, so no symbol from it can outlive it.
    let lib = unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }?;
    std::mem::forget(lib);
    Ok(())
}

fn search() -> Result<Toolkit, Vec<String>> {
    let mut searched = Vec::new();
    let mut loaded_root: Option<Option<PathBuf>> = None;

    for (label, root) in candidate_roots() {
        let Some(root) = root else {
            searched.push(label);
            continue;
        };
        let found = ["lib64", "lib"].iter().find_map(|d| {
            let dir = root.join(d);
            pick_nvrtc(&dir).map(|lib| (dir, lib))
        });
        let Some((lib_dir, nvrtc)) = found else {
            searched.push(format!(
                "{label}: {} (no lib/ or lib64/ with libnvrtc.so*)",
                root.display()
            ));
            continue;
        };
        // The builtins library first: libnvrtc dlopens it by soname when compiling.
        let builtins = libs_with_prefix(&lib_dir, "libnvrtc-builtins.so")
            .into_iter()
            .next_back();
        if let Err(e) = builtins
            .as_ref()
            .map_or(Ok(()), |b| open_global(b.as_os_str()))
        {
            let b = builtins.as_deref().unwrap_or(Path::new(""));
            searched.push(format!("{label}: {}: {e}", b.display()));
            continue;
        }
        match open_global(nvrtc.as_os_str()) {
            Ok(()) => {
                loaded_root = Some(Some(root));
                break;
            }
            Err(e) => searched.push(format!("{label}: {}: {e}", nvrtc.display())),
        }
    }

    if loaded_root.is_none() {
        for name in ["libnvrtc.so.13", "libnvrtc.so"] {
            match open_global(OsStr::new(name)) {
                Ok(()) => {
                    loaded_root = Some(None);
                    break;
                }
                Err(e) => searched.push(format!("library search path: {name}: {e}")),
            }
        }
    }

    let Some(root) = loaded_root else {
        return Err(searched);
    };

    // SAFETY: only tries to dlopen the candidate names; calls nothing in them.
    if !unsafe { sys::is_culib_present() } {
        searched.push(format!(
            "loaded NVRTC from {}, but cudarc could not open it by soname",
            root.as_deref()
                .map_or("the library search path".into(), |p| p
                    .display()
                    .to_string())
        ));
        return Err(searched);
    }

    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library is present (checked above), so cudarc's symbol
    // lookup succeeds; both pointers are valid for writes.
    let rc = unsafe { sys::nvrtcVersion(&mut major, &mut minor) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        searched.push(format!("nvrtcVersion failed: {rc:?}"));
        return Err(searched);
    }

    let ptxas = root
        .as_ref()
        .map(|r| r.join("bin").join("ptxas"))
        .filter(|p| p.is_file())
        .or_else(|| find_on_path("ptxas"));

    log::debug!(
        "NVRTC {major}.{minor} from {:?}, ptxas {:?}",
        root.as_deref(),
        ptxas.as_deref()
    );
    Ok(Toolkit {
        root,
        nvrtc_version: (major, minor),
        ptxas,
    })
}

fn find_on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

/// Splits `sm_80` / `compute_80` / `sm_90a` into the numeric part (`80`, `90a`).
fn arch_number(arch: &str) -> Option<&str> {
    let n = arch
        .strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))?;
    let digits = n.trim_end_matches(|c: char| c.is_ascii_lowercase());
    let ok = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && n.len() - digits.len() <= 1;
    ok.then_some(n)
}

/// Compiles CUDA C++ `source` to PTX for the virtual architecture matching
/// `arch` (`"sm_80"` or `"compute_80"` both give `compute_80`), with
/// `-std=c++17` and `extra_opts` appended. Returns the PTX text.
pub fn compile_ptx(source: &str, arch: &str, extra_opts: &[String]) -> Result<String, NvrtcError> {
    locate()?;
    let Some(num) = arch_number(arch) else {
        return Err(NvrtcError::Compile {
            log: format!("invalid architecture {arch:?} (expected e.g. \"sm_80\")"),
        });
    };
    if source.contains('\0') {
        return Err(NvrtcError::Compile {
            log: "source contains a NUL byte".into(),
        });
    }
    let mut options = vec![
        format!("--gpu-architecture=compute_{num}"),
        "-std=c++17".into(),
    ];
    options.extend(extra_opts.iter().cloned());
    let opts = CompileOptions {
        options,
        name: Some("sparserl_kernel.cu".into()),
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(source, opts).map_err(|e| NvrtcError::Compile {
        log: match e {
            CompileError::CompileError { nvrtc, log, .. } => {
                format!("{nvrtc:?}\n{}", log.to_string_lossy())
            }
            other => format!("{other:?}"),
        },
    })?;
    let bytes = ptx.as_bytes().unwrap_or_default();
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8(bytes[..end].to_vec()).map_err(|e| NvrtcError::Compile {
        log: format!("NVRTC returned non-UTF-8 PTX: {e}"),
    })
}

/// Resource usage of one kernel entry as reported by `ptxas -v`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryReport {
    /// Entry (function) name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Stack frame bytes.
    pub stack_frame: u32,
    /// Spill store bytes.
    pub spill_stores: u32,
    /// Spill load bytes.
    pub spill_loads: u32,
}

/// What `ptxas -v` reported for one PTX module.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PtxasReport {
    /// Target architecture (`sm_XX`).
    pub arch: String,
    /// One report per entry function, in `ptxas` output order.
    pub entries: Vec<EntryReport>,
    /// The full `-v` output.
    pub log: String,
}

impl PtxasReport {
    /// Spill stores plus spill loads over all entries, in bytes.
    pub fn total_spill_bytes(&self) -> u64 {
        self.entries
            .iter()
            .map(|e| u64::from(e.spill_stores) + u64::from(e.spill_loads))
            .sum()
    }
}

/// Number right before `unit` in `line` (e.g. `"32"` in `"Used 32 registers"`).
fn number_before(line: &str, unit: &str) -> Option<u32> {
    let idx = line.find(unit)?;
    line[..idx].split_whitespace().last()?.parse().ok()
}

/// Parses `ptxas -v` output into per-entry reports.
pub fn parse_ptxas_verbose(log: &str) -> Vec<EntryReport> {
    let mut entries: Vec<EntryReport> = Vec::new();
    for line in log.lines() {
        if let Some(rest) = line
            .split_once("Compiling entry function '")
            .map(|(_, r)| r)
        {
            let name = rest.split('\'').next().unwrap_or_default().to_owned();
            entries.push(EntryReport {
                name,
                ..Default::default()
            });
            continue;
        }
        let Some(cur) = entries.last_mut() else {
            continue;
        };
        if line.contains("bytes stack frame") {
            cur.stack_frame = number_before(line, "bytes stack frame").unwrap_or(0);
            cur.spill_stores = number_before(line, "bytes spill stores").unwrap_or(0);
            cur.spill_loads = number_before(line, "bytes spill loads").unwrap_or(0);
        } else if line.contains("Used ") && line.contains(" registers") {
            cur.registers = number_before(line, "registers").unwrap_or(0);
        }
    }
    entries
}

fn temp_path(ext: &str) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    std::env::temp_dir().join(format!("sparserl-{}-{n}-{nanos}.{ext}", std::process::id()))
}

/// Removes the file when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Assembles `ptx` with `ptxas -arch=sm_XX -v` and reports per-entry
/// registers and spills. `arch` may be `sm_80` or `compute_80` (both mean `sm_80`).
pub fn ptxas_check(ptx: &str, arch: &str) -> Result<PtxasReport, NvrtcError> {
    run_ptxas(ptx, arch).map(|(report, _)| report)
}

/// Assembles `ptx` into a cubin (SASS) for `arch` (`sm_90` or `compute_90`)
/// with `ptxas`, returning the image a device of exactly that compute
/// capability loads without compiling.
pub fn assemble_cubin(ptx: &str, arch: &str) -> Result<Vec<u8>, NvrtcError> {
    run_ptxas(ptx, arch).map(|(_, cubin)| cubin)
}

/// Whether a `ptxas` to assemble cubins with was found.
pub fn ptxas_available() -> bool {
    locate()
        .ok()
        .and_then(|t| t.ptxas.clone())
        .or_else(|| find_on_path("ptxas"))
        .is_some()
}

fn run_ptxas(ptx: &str, arch: &str) -> Result<(PtxasReport, Vec<u8>), NvrtcError> {
    let ptxas = locate()
        .ok()
        .and_then(|t| t.ptxas.clone())
        .or_else(|| find_on_path("ptxas"))
        .ok_or_else(|| NvrtcError::Ptxas {
            stderr: "ptxas not found (looked in the toolkit's bin/ and on PATH); \
                     install the CUDA toolkit or run `cargo xtask provision`"
                .into(),
        })?;
    let Some(num) = arch_number(arch) else {
        return Err(NvrtcError::Ptxas {
            stderr: format!("invalid architecture {arch:?} (expected e.g. \"sm_80\")"),
        });
    };
    let sm = format!("sm_{num}");
    let input = TempFile(temp_path("ptx"));
    let output = TempFile(temp_path("cubin"));
    std::fs::write(&input.0, ptx)?;
    let out = Command::new(&ptxas)
        .arg(format!("-arch={sm}"))
        .arg("-v")
        .arg("-o")
        .arg(&output.0)
        .arg(&input.0)
        .output()
        .map_err(|e| NvrtcError::Ptxas {
            stderr: format!("could not run {}: {e}", ptxas.display()),
        })?;
    let mut log = String::from_utf8_lossy(&out.stdout).into_owned();
    log += &String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(NvrtcError::Ptxas {
            stderr: format!("{} ({})\n{log}", ptxas.display(), out.status),
        });
    }
    let cubin = std::fs::read(&output.0)?;
    Ok((
        PtxasReport {
            arch: sm,
            entries: parse_ptxas_verbose(&log),
            log,
        },
        cubin,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ptxas_verbose_output() {
        let log = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k_a' for 'sm_80'
ptxas info    : Function properties for k_a
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'k_b' for 'sm_80'
ptxas info    : Function properties for k_b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 380 bytes cmem[0]
";
        let e = parse_ptxas_verbose(log);
        assert_eq!(e.len(), 2);
        assert_eq!(
            e[0],
            EntryReport {
                name: "k_a".into(),
                registers: 32,
                stack_frame: 8,
                spill_stores: 4,
                spill_loads: 12
            }
        );
        assert_eq!(e[1].registers, 10);
        assert_eq!(e[1].spill_stores + e[1].spill_loads, 0);
        let r = PtxasReport {
            arch: "sm_80".into(),
            entries: e,
            log: log.into(),
        };
        assert_eq!(r.total_spill_bytes(), 16);
    }

    #[test]
    fn arch_names() {
        assert_eq!(arch_number("sm_80"), Some("80"));
        assert_eq!(arch_number("compute_90a"), Some("90a"));
        assert_eq!(arch_number("80"), None);
        assert_eq!(arch_number("sm_"), None);
        assert_eq!(arch_number("sm_8x0"), None);
    }

    #[test]
    fn not_found_message_explains_fix() {
        let e = NvrtcError::NotFound {
            searched: vec!["$CUDA_HOME: /nowhere".into()],
        };
        let s = e.to_string();
        assert!(s.contains("/nowhere") && s.contains("SPARSERL_CUDA_ROOT"));
        // A fix that works in any crate, not only in this repository.
        assert!(s.contains("pip install --target .tools/cuda nvidia-cuda-nvrtc==13.0.88"));
        assert!(s.contains("SPARSERL_TOOLS_DIR"));
    }

    #[test]
    fn locate_never_panics_and_compiles_when_found() {
        match locate() {
            Ok(t) => {
                assert!(t.nvrtc_version.0 >= 11);
                let ptx = compile_ptx(
                    "extern \"C\" __global__ void k(float* y) { y[threadIdx.x] = 1.0f; }",
                    "sm_80",
                    &[],
                )
                .unwrap();
                assert!(ptx.contains(".entry k"));
                let err = compile_ptx("this is not cuda", "sm_80", &[]).unwrap_err();
                assert!(matches!(err, NvrtcError::Compile { .. }));
                if t.ptxas.is_some() {
                    let r = ptxas_check(&ptx, "sm_80").unwrap();
                    assert_eq!(r.entries.len(), 1);
                    assert_eq!(r.entries[0].name, "k");
                }
            }
            Err(e) => eprintln!("NVRTC not available, skipping: {e}"),
        }
    }
}
