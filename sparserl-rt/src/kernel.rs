//! What the generated module hands to the runtime: one [`KernelSpec`] per declared kernel.

use crate::variant::{ValueType, Variant};

/// Where a kernel's code came from at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    /// Measured search on the build machine's GPU.
    Measured,
    /// Read from a fresh lock file (`SparseRL.lock`).
    LockFile,
    /// Picked by the policy without measuring (no GPU at build time).
    Policy,
    /// The safe fallback variant (search disabled and no lock file).
    Fallback,
}

/// A few statistics of the pattern a kernel was tuned for, used by runtime
/// dispatch to notice a matrix far from it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TunedFor {
    /// Mean nonzeros per row of the tuning samples.
    pub mean_row: f64,
    /// Coefficient of variation of row lengths (std / mean).
    pub cv_row: f64,
    /// Longest row divided by the mean row length.
    pub max_over_mean: f64,
}

impl Provenance {
    /// `measured`, `lock-file`, `policy` or `fallback`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Provenance::Measured => "measured",
            Provenance::LockFile => "lock-file",
            Provenance::Policy => "policy",
            Provenance::Fallback => "fallback",
        }
    }
}

impl std::fmt::Display for Provenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The PTX of a kernel and of its fallback for one target architecture,
/// and their cubins (SASS for exactly that architecture) when `ptxas` was
/// available at build time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchPtx {
    /// Target, e.g. `sm_90`.
    pub arch: &'static str,
    /// PTX of the chosen variant.
    pub ptx: &'static str,
    /// PTX of the fallback.
    pub fallback_ptx: &'static str,
    /// Cubin of the chosen variant.
    pub cubin: Option<&'static [u8]>,
    /// Cubin of the fallback.
    pub fallback_cubin: Option<&'static [u8]>,
}

/// A module image the runtime loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    /// SASS for exactly the device's architecture: loads without compiling.
    Cubin {
        /// Its architecture, e.g. `sm_90`.
        arch: &'static str,
        /// The bytes.
        bytes: &'static [u8],
    },
    /// PTX for this architecture or an older one: the driver compiles it
    /// when the module is loaded (and caches the result).
    Ptx {
        /// Its architecture.
        arch: &'static str,
        /// The text.
        text: &'static str,
    },
}

impl Image {
    /// `"sm_90 cubin"` or `"sm_80 PTX (compiled by the driver at load)"`.
    pub fn describe(&self) -> String {
        match self {
            Image::Cubin { arch, .. } => format!("{arch} cubin"),
            Image::Ptx { arch, .. } => format!("{arch} PTX (compiled by the driver at load)"),
        }
    }

    /// Its architecture, e.g. `sm_90`.
    pub fn arch(&self) -> &'static str {
        match self {
            Image::Cubin { arch, .. } | Image::Ptx { arch, .. } => arch,
        }
    }
}

/// The numeric compute capability of `sm_XY` / `compute_XY` (`90` for `sm_90`).
pub fn arch_number(arch: &str) -> Option<u32> {
    arch.strip_prefix("sm_")
        .or_else(|| arch.strip_prefix("compute_"))
        .and_then(|n| n.trim_end_matches(['a', 'f']).parse().ok())
}

/// The architecture number of the first `.target` directive of `ptx` (`90`
/// for `.target sm_90`, `sm_90a` or `sm_90, debug`); `None` without one or
/// when it does not parse. (Used by the measuring loaders of `tools`.)
#[cfg(any(feature = "tools", test))]
pub(crate) fn ptx_target_arch(ptx: &str) -> Option<u32> {
    let rest = ptx
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(".target"))?;
    let target = rest
        .split(|c: char| c == ',' || c.is_whitespace())
        .find(|t| !t.is_empty())?;
    arch_number(target)
}

/// Everything the runtime needs to launch one declared kernel.
///
/// Generated code builds these as `static` items; user code does not normally
/// construct them by hand.
#[derive(Debug, Clone, Copy)]
pub struct KernelSpec {
    /// Declared kernel name (`name` in the descriptor).
    pub name: &'static str,
    /// Value type.
    pub value: ValueType,
    /// The chosen variant.
    pub variant: Variant,
    /// How the variant was chosen.
    pub provenance: Provenance,
    /// Entry point of the chosen variant in `ptx`.
    pub entry: &'static str,
    /// CUDA C++ source of the chosen variant.
    pub source: &'static str,
    /// PTX of the chosen variant (`None` when NVRTC was unavailable at build time;
    /// the runtime then compiles `source` with NVRTC on first use).
    pub ptx: Option<&'static str>,
    /// Entry point of the nnz-balanced fallback.
    pub fallback_entry: &'static str,
    /// CUDA C++ source of the fallback.
    pub fallback_source: &'static str,
    /// PTX of the fallback, like `ptx`.
    pub fallback_ptx: Option<&'static str>,
    /// Statistics of the tuning samples.
    pub tuned_for: TunedFor,
    /// PTX per target architecture (`ptx` / `fallback_ptx` hold the lowest).
    pub ptx_by_arch: &'static [ArchPtx],
    /// The fused epilogues generated for this kernel (declared with
    /// `epilogues = [...]`), their entries in the same PTX modules.
    pub fused: &'static [crate::FusedEntry],
    /// The GPU the variant was measured on (a measured or locked choice).
    pub tuned_on: Option<&'static str>,
}

impl KernelSpec {
    /// A message when the kernel was tuned on another GPU than `device`
    /// (by name): its variant may not be the fastest here.
    pub fn tuned_elsewhere(&self, device: &str) -> Option<String> {
        let t = self.tuned_on?;
        (t != device).then(|| {
            format!(
                "sparserl: kernel `{}` was tuned on {t}, this is {device}: its variant may not \
                 be the fastest here; run `cargo xtask retune` on this GPU and commit the lock \
                 file (reported once per kernel)",
                self.name
            )
        })
    }

    /// The images (chosen, fallback) to load on a device of compute
    /// capability `cc`: the cubins of exactly that architecture when embedded,
    /// else the PTX of the highest embedded architecture not above the
    /// device's. `None` when every embedded architecture is newer than the
    /// device, or nothing was compiled at build time (see
    /// [`KernelSpec::ptx_for`] for the source fallback).
    pub fn images_for(&self, cc: (i32, i32)) -> Option<(Image, Image)> {
        let device = (cc.0.max(0) * 10 + cc.1.max(0)) as u32;
        let usable = self
            .ptx_by_arch
            .iter()
            .filter_map(|a| arch_number(a.arch).map(|n| (n, a)))
            .filter(|(n, _)| *n <= device);
        let (n, a) = usable.max_by_key(|(n, _)| *n)?;
        match (n == device, a.cubin, a.fallback_cubin) {
            (true, Some(c), Some(f)) => Some((
                Image::Cubin {
                    arch: a.arch,
                    bytes: c,
                },
                Image::Cubin {
                    arch: a.arch,
                    bytes: f,
                },
            )),
            _ => Some((
                Image::Ptx {
                    arch: a.arch,
                    text: a.ptx,
                },
                Image::Ptx {
                    arch: a.arch,
                    text: a.fallback_ptx,
                },
            )),
        }
    }

    /// The lowest embedded architecture number, if any.
    pub fn lowest_arch(&self) -> Option<u32> {
        self.ptx_by_arch
            .iter()
            .filter_map(|a| arch_number(a.arch))
            .min()
    }

    /// The PTX (chosen, fallback) to load on a device of compute capability
    /// `cc`: the highest embedded architecture not above the device's, else
    /// the portable lowest-architecture PTX in `ptx` / `fallback_ptx`.
    pub fn ptx_for(&self, cc: (i32, i32)) -> (Option<&'static str>, Option<&'static str>) {
        let device = (cc.0.max(0) * 10 + cc.1.max(0)) as u32;
        self.ptx_by_arch
            .iter()
            .filter_map(|a| arch_number(a.arch).map(|n| (n, a)))
            .filter(|(n, _)| *n <= device)
            .max_by_key(|(n, _)| *n)
            .map(|(_, a)| (Some(a.ptx), Some(a.fallback_ptx)))
            .unwrap_or((self.ptx, self.fallback_ptx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::variant::{Strategy, ValueType, Variant};

    #[test]
    fn picks_the_highest_arch_not_above_the_device() {
        static ARCHS: [ArchPtx; 2] = [
            ArchPtx {
                arch: "sm_80",
                ptx: "p80",
                fallback_ptx: "f80",
                cubin: None,
                fallback_cubin: None,
            },
            ArchPtx {
                arch: "sm_90",
                ptx: "p90",
                fallback_ptx: "f90",
                cubin: Some(b"c90"),
                fallback_cubin: Some(b"fc90"),
            },
        ];
        let spec = KernelSpec {
            name: "k",
            value: ValueType::F32,
            variant: Variant::of(Strategy::ThreadPerRow),
            provenance: Provenance::Policy,
            entry: "e",
            source: "",
            ptx: Some("p80"),
            fallback_entry: "f",
            fallback_source: "",
            fallback_ptx: Some("f80"),
            tuned_for: TunedFor {
                mean_row: 1.0,
                cv_row: 0.0,
                max_over_mean: 1.0,
            },
            ptx_by_arch: &ARCHS,
            fused: &[],
            tuned_on: Some("NVIDIA H200"),
        };
        assert_eq!(spec.tuned_elsewhere("NVIDIA H200"), None);
        let msg = spec.tuned_elsewhere("NVIDIA A100-SXM4-80GB").unwrap();
        assert!(msg.contains("tuned on NVIDIA H200") && msg.contains("cargo xtask retune"));
        assert_eq!(spec.ptx_for((9, 0)), (Some("p90"), Some("f90")));
        assert_eq!(spec.ptx_for((8, 6)), (Some("p80"), Some("f80")));
        assert_eq!(spec.ptx_for((10, 0)), (Some("p90"), Some("f90")));
        assert_eq!(spec.ptx_for((7, 5)), (Some("p80"), Some("f80")));
        // Exact architecture: its cubins; a newer device: the newest PTX;
        // an older device than every image: none.
        assert_eq!(
            spec.images_for((9, 0)),
            Some((
                Image::Cubin {
                    arch: "sm_90",
                    bytes: b"c90"
                },
                Image::Cubin {
                    arch: "sm_90",
                    bytes: b"fc90"
                }
            ))
        );
        assert!(matches!(
            spec.images_for((10, 0)),
            Some((Image::Ptx { arch: "sm_90", .. }, _))
        ));
        assert!(matches!(
            spec.images_for((8, 6)),
            Some((
                Image::Ptx {
                    arch: "sm_80",
                    text: "p80"
                },
                _
            ))
        ));
        assert_eq!(spec.images_for((7, 5)), None);
        assert_eq!(spec.lowest_arch(), Some(80));
        assert_eq!(arch_number("sm_100"), Some(100));
        assert_eq!(arch_number("sm_90a"), Some(90));
        assert_eq!(arch_number("x"), None);
    }

    #[test]
    fn reads_the_ptx_target() {
        let ptx = "//\n// Generated by NVIDIA NVVM Compiler\n.version 9.0\n.target sm_90\n\
                   .address_size 64\n";
        assert_eq!(ptx_target_arch(ptx), Some(90));
        assert_eq!(
            ptx_target_arch(".version 8.0\n  .target sm_80, debug\n"),
            Some(80)
        );
        assert_eq!(ptx_target_arch(".target\tsm_90a\r\n"), Some(90));
        assert_eq!(
            ptx_target_arch(".target sm_100a\n.target sm_80\n"),
            Some(100)
        );
        assert_eq!(ptx_target_arch("// .target sm_90\n.version 9.0\n"), None);
        assert_eq!(ptx_target_arch(".target compute_xx\n"), None);
        assert_eq!(ptx_target_arch(""), None);
    }
}
