//! The large path's kernels (`spmv64.cu`): the variant space, entry
//! names, launch geometry, NVRTC at first use, and the typed SpMV launch.

use super::LargeError;
use super::device::{DeviceLargeCsr, DeviceOffsets};
use super::host::OffsetWidth;
use crate::device::{DeviceVec, Gpu, Scalar};
use crate::error::RtError;
use crate::variant::ValueType;
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};

/// CUDA source of every large-path entry.
pub const SOURCE: &str = include_str!("spmv64.cu");

/// Threads per block (`LARGE_BLOCK` in the source).
pub const BLOCK: u32 = 256;

/// One SpMV kernel of the large path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LargeVariant {
    /// `lanes` lanes per row (1: one thread per row; 4, 8 or 32), grid-stride
    /// over rows: no atomics, each `y[r]` stored once; a long row is walked by
    /// one group alone.
    Group {
        /// Lanes per row: 1, 4, 8 or 32.
        lanes: u32,
    },
    /// Merge path: `items` row ends and nonzeros per thread (8 or 16), found
    /// by binary search; rows cut at a thread boundary added atomically
    /// (`y` cleared first, in the same launch call). Balanced whatever the
    /// row lengths.
    Merge {
        /// Items per thread: 8 or 16.
        items: u32,
    },
    /// Nonzero split: `items` consecutive nonzeros per lane (8), the
    /// products loaded before the row search, a 32-way warp search of the
    /// warp's rows, a segmented shuffle reduction and one atomic per row
    /// and warp (`y` cleared first, in the same launch call). Balanced
    /// whatever the row lengths; empty rows cost nothing.
    NnzSplit {
        /// Nonzeros per lane: 8.
        items: u32,
    },
    /// Nonzero tiles: one block per `tile` consecutive nonzeros (1024 or
    /// 2048), loaded coalesced with all their gathers in flight, the
    /// products summed per row from shared memory (lanes per row fitted to
    /// the tile's rows); rows cut at a tile edge added atomically (`y`
    /// cleared first, in the same launch call). Balanced whatever the row
    /// lengths, and the matrix arrays are read as whole lines.
    Stream {
        /// Nonzeros per block: 1024 or 2048.
        tile: u32,
    },
}

impl LargeVariant {
    /// The compiled space, in a fixed order.
    pub const SPACE: [LargeVariant; 9] = [
        LargeVariant::Group { lanes: 1 },
        LargeVariant::Group { lanes: 4 },
        LargeVariant::Group { lanes: 8 },
        LargeVariant::Group { lanes: 32 },
        LargeVariant::Merge { items: 8 },
        LargeVariant::Merge { items: 16 },
        LargeVariant::NnzSplit { items: 8 },
        LargeVariant::Stream { tile: 1024 },
        LargeVariant::Stream { tile: 2048 },
    ];

    /// Short id in reports (`group1`, `group32`, `merge8`, ...).
    pub fn id(self) -> String {
        match self {
            LargeVariant::Group { lanes } => format!("group{lanes}"),
            LargeVariant::Merge { items } => format!("merge{items}"),
            LargeVariant::NnzSplit { items } => format!("nnz{items}"),
            LargeVariant::Stream { tile } => format!("stream{tile}"),
        }
    }

    /// [`LargeError::InvalidVariant`] unless the variant is in [`Self::SPACE`].
    pub fn validate(self) -> Result<(), LargeError> {
        if Self::SPACE.contains(&self) {
            Ok(())
        } else {
            Err(LargeError::InvalidVariant(self))
        }
    }

    /// Whether a launch clears `y` before the kernel (rows cut between
    /// threads are added atomically).
    pub fn clears_y(self) -> bool {
        matches!(
            self,
            LargeVariant::Merge { .. }
                | LargeVariant::NnzSplit { .. }
                | LargeVariant::Stream { .. }
        )
    }

    /// The entry point for row pointers of `width` and values of `value`.
    pub fn entry(self, width: OffsetWidth, value: ValueType) -> Result<&'static str, LargeError> {
        let index = Self::SPACE
            .iter()
            .position(|&v| v == self)
            .ok_or(LargeError::InvalidVariant(self))?;
        let w = matches!(width, OffsetWidth::U64) as usize;
        let t = matches!(value, ValueType::F64) as usize;
        Ok(ENTRIES[t][w][index])
    }

    /// Launch geometry for a matrix of `rows` rows and `nnz` nonzeros on a
    /// GPU of `sms` multiprocessors: grid-stride groups fill the device
    /// (at most 32 blocks per multiprocessor), merge path one thread per
    /// `items` items, nonzero split one lane per `items` nonzeros, stream one
    /// block per `tile` nonzeros. [`LargeError::InvalidVariant`] outside the space; a
    /// grid past 2^31 - 1 blocks is refused the same way (not reachable for
    /// matrices that fit an H200).
    pub fn grid(self, rows: u64, nnz: u64, sms: usize) -> Result<LaunchConfig, LargeError> {
        self.validate()?;
        let blocks = match self {
            LargeVariant::Group { lanes } => {
                let want = (rows * lanes as u64).div_ceil(BLOCK as u64);
                want.min(sms.max(1) as u64 * 32)
            }
            LargeVariant::Merge { items } => {
                (rows + nnz).div_ceil(items as u64).div_ceil(BLOCK as u64)
            }
            LargeVariant::NnzSplit { items } => nnz.div_ceil(items as u64).div_ceil(BLOCK as u64),
            LargeVariant::Stream { tile } => nnz.div_ceil(tile as u64),
        };
        if blocks > i32::MAX as u64 {
            return Err(LargeError::InvalidVariant(self));
        }
        Ok(LaunchConfig {
            grid_dim: (blocks.max(1) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        })
    }
}

macro_rules! entries {
    ($o:literal, $t:literal) => {
        [
            concat!("sparserl_large_group1_", $o, "_", $t),
            concat!("sparserl_large_group4_", $o, "_", $t),
            concat!("sparserl_large_group8_", $o, "_", $t),
            concat!("sparserl_large_group32_", $o, "_", $t),
            concat!("sparserl_large_merge8_", $o, "_", $t),
            concat!("sparserl_large_merge16_", $o, "_", $t),
            concat!("sparserl_large_nnz8_", $o, "_", $t),
            concat!("sparserl_large_stream1024_", $o, "_", $t),
            concat!("sparserl_large_stream2048_", $o, "_", $t),
        ]
    };
}

/// `ENTRIES[value f64?][offsets u64?][index in SPACE]`.
const ENTRIES: [[[&str; 9]; 2]; 2] = [
    [entries!("u32", "f32"), entries!("u64", "f32")],
    [entries!("u32", "f64"), entries!("u64", "f64")],
];

/// The widening entry (`u32` / `u64` to `long long`).
pub(crate) fn widen_entry(width: OffsetWidth) -> &'static str {
    match width {
        OffsetWidth::U32 => "sparserl_large_widen_u32",
        OffsetWidth::U64 => "sparserl_large_widen_u64",
    }
}

/// PTX of [`SOURCE`] per architecture, compiled once per process and kept
/// for its lifetime (a few hundred kB per architecture), so that every
/// `Gpu` loads one module per architecture.
#[cfg(feature = "jit")]
fn ptx_for(arch: &str) -> Result<&'static str, RtError> {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static PTX: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut map = PTX
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(p) = map.get(arch) {
        return Ok(p);
    }
    let ptx = crate::nvrtc::compile_ptx(SOURCE, arch, &[]).map_err(|e| RtError::NotCompiled {
        kernel: "the large path (spmv64.cu)".into(),
        reason: e.to_string(),
    })?;
    let leaked: &'static str = Box::leak(ptx.into_boxed_str());
    map.insert(arch.to_string(), leaked);
    Ok(leaked)
}

/// The function `entry` of [`SOURCE`] on `gpu` (crate-keyed: no user PTX
/// can stand in for it).
pub(crate) fn function(gpu: &Gpu, entry: &'static str) -> Result<CudaFunction, RtError> {
    #[cfg(feature = "jit")]
    {
        gpu.static_function(ptx_for(&gpu.arch())?, entry)
    }
    #[cfg(not(feature = "jit"))]
    {
        let _ = (gpu, entry);
        Err(RtError::NotCompiled {
            kernel: "the large path (spmv64.cu)".into(),
            reason: "it is compiled with NVRTC at first use: enable sparserl-rt's `jit` feature"
                .into(),
        })
    }
}

impl<T: Scalar> DeviceLargeCsr<T> {
    /// Enqueues `y = A x` with `variant` on `gpu`'s stream (a merge-path
    /// nonzero-split or stream variant clears `y` first, in the same stream). Checks the variant,
    /// the owner of every operand and the lengths first; compiles
    /// `spmv64.cu` with NVRTC at first use on this device.
    pub fn spmv(
        &self,
        gpu: &Gpu,
        variant: LargeVariant,
        x: &DeviceVec<T>,
        y: &mut DeviceVec<T>,
    ) -> Result<(), LargeError> {
        let entry = variant.entry(self.offset_width(), T::TYPE)?;
        let cfg = variant.grid(self.rows() as u64, self.nnz() as u64, gpu.sm_count())?;
        self.check_operands(gpu, x, y)?;
        let func = function(gpu, entry)?;
        let stream = gpu.enqueue("a large-path SpMV launch")?;
        if variant.clears_y() {
            stream.memset_zeros(y.as_mut_slice())?;
        }
        let (rows, nnz) = (self.rows() as u64, self.nnz() as u64);
        let mut b = stream.launch_builder(&func);
        b.arg(&rows).arg(&nnz);
        match &*self.indptr {
            DeviceOffsets::U32(p) => b.arg(p),
            DeviceOffsets::U64(p) => b.arg(p),
        };
        b.arg(&*self.indices)
            .arg(&*self.values)
            .arg(x.as_slice())
            .arg(y.as_mut_slice());
        // SAFETY: the arguments match the entry's parameters in type and
        // order: (u64 rows, u64 nnz, const O* indptr, const u32* indices,
        // const T* values, const T* x, T* y), with O the device offset width
        // that picked the entry and T = `Scalar::TYPE`. `indptr` holds rows + 1
        // entries nondecreasing from 0 to nnz, `indices` / `values` nnz entries
        // (at least one), every column below cols, all checked on the host by
        // `LargeCsr::try_from_parts` before the upload; x holds cols and y rows
        // entries (`check_operands`); the kernel reads only `indptr[0..=rows]`,
        // `indices` / `values` `[0, nnz)` and x at validated columns (or at
        // column 0, which exists: a stream tile past the last nonzero), and
        // writes y `[0, rows)`. Matrix and vectors belong to this Gpu's stream
        // (checked), so they outlive the queued launch in stream order.
        unsafe { b.launch(cfg) }?;
        Ok(())
    }
}
