//! Kernel variants: a point of the design space as a plain data value.
//!
//! A [`Variant`] names a strategy (how rows are mapped to threads) plus the
//! mapping parameters and fine knobs. It is `const`-constructible so the
//! generated module can embed the chosen variant as a constant, and it is
//! serde-serializable so lock files and measurement logs can record it.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::reorder::Reorder;

/// Element type of a kernel's values, `x` and `y`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
}

impl ValueType {
    /// Size of one value in bytes.
    pub const fn size(self) -> usize {
        match self {
            ValueType::F32 => 4,
            ValueType::F64 => 8,
        }
    }
    /// The CUDA C++ type name.
    pub const fn cuda_name(self) -> &'static str {
        match self {
            ValueType::F32 => "float",
            ValueType::F64 => "double",
        }
    }
    /// The name used in descriptors (`"f32"` / `"f64"`).
    pub const fn as_str(self) -> &'static str {
        match self {
            ValueType::F32 => "f32",
            ValueType::F64 => "f64",
        }
    }
    /// Both value types.
    pub const ALL: [ValueType; 2] = [ValueType::F32, ValueType::F64];
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Top level of the design space: how work is mapped to threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// CSR, one thread per row.
    ThreadPerRow,
    /// CSR, a group of `lanes` (2..=32, power of two) lanes per row, shuffle reduction.
    GroupPerRow,
    /// CSR, one thread block per row (for very long rows), shared-memory reduction.
    BlockPerRow,
    /// CSR, nnz-balanced (merge-path style): every thread owns `items` consecutive
    /// nonzeros, finds its row by binary search and adds partial row sums with
    /// atomics at row ends. Safe and balanced for any row-length distribution.
    NnzSplit,
    /// Diagonal (DIA) layout, one thread per row: the matrix is stored as a
    /// few dense diagonals (offset `col - row` per diagonal, zero padding
    /// where a diagonal has no entry), so no column indices or row pointers
    /// are read. Available only for matrices whose nonzeros lie on at most
    /// [`crate::dia::MAX_DIAGONALS`] diagonals with little padding
    /// (stencils, narrow banded matrices); `unroll` unrolls the diagonal loop.
    Diagonal,
    /// CSR with rows binned by length (adaptive): `lanes` lanes per short
    /// row as in group-per-row, while rows longer than a threshold fixed at
    /// upload are cut into chunks of 1024 nonzeros spread over warps (see
    /// [`crate::binned`]). Available for matrices that have long rows.
    Binned,
    /// CSR over nonzero tiles (CSR-Stream): one block per tile of at most
    /// 1024 nonzeros computes the tile's products with coalesced loads into
    /// shared memory, then sums each row there with a lane group sized to
    /// the tile's row count; rows longer than a tile are cut into pieces
    /// combined through a per-row accumulator (see [`crate::tiled`]). The
    /// small tile layout is built at upload for every matrix.
    Tiled,
    /// CSR with 16-bit column offsets: as group-per-row (`lanes` lanes per
    /// row), but each nonzero's column is read as the 16-bit offset
    /// `col - row` (see [`crate::narrow`]), 2 index bytes instead of 4.
    /// Available for matrices whose nonzeros all lie within 32767 of the
    /// diagonal.
    Narrow,
    /// SELL-C-sigma (see [`crate::sell`]): rows sorted by length within
    /// windows, slices of 32 rows stored column-major and padded to their
    /// longest row, one thread per row with coalesced loads; for short and
    /// uniform rows. Available for matrices whose padding stays small.
    Sell,
}

impl Strategy {
    /// Every strategy the generator knows.
    pub const ALL: [Strategy; 9] = [
        Strategy::ThreadPerRow,
        Strategy::GroupPerRow,
        Strategy::BlockPerRow,
        Strategy::NnzSplit,
        Strategy::Diagonal,
        Strategy::Binned,
        Strategy::Tiled,
        Strategy::Narrow,
        Strategy::Sell,
    ];
    /// The strategies that read plain CSR and so apply to every matrix
    /// (the strategies of [`core_space`]).
    pub const CSR: [Strategy; 4] = [
        Strategy::ThreadPerRow,
        Strategy::GroupPerRow,
        Strategy::BlockPerRow,
        Strategy::NnzSplit,
    ];
    /// Whether kernels of this strategy can fuse an epilogue
    /// ([`crate::Epilogue`]): they write each `y[r]` once with its final
    /// value (all but nnz-split, which adds into `y` with atomics).
    pub const fn fuses_epilogue(self) -> bool {
        !matches!(self, Strategy::NnzSplit)
    }
    /// Whether the strategy reads a layout other than CSR (built at upload
    /// when the matrix allows it, see [`crate::DeviceCsr`]).
    pub const fn needs_layout(self) -> bool {
        matches!(
            self,
            Strategy::Diagonal
                | Strategy::Binned
                | Strategy::Tiled
                | Strategy::Narrow
                | Strategy::Sell
        )
    }
    /// Short stable name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Strategy::ThreadPerRow => "thread-per-row",
            Strategy::GroupPerRow => "group-per-row",
            Strategy::BlockPerRow => "block-per-row",
            Strategy::NnzSplit => "nnz-split",
            Strategy::Diagonal => "diagonal",
            Strategy::Binned => "binned",
            Strategy::Tiled => "tiled",
            Strategy::Narrow => "narrow",
            Strategy::Sell => "sell",
        }
    }
}

/// One point of the design space.
///
/// Fields that a strategy does not use are kept at their canonical value
/// (see [`Variant::canonical`]) so that two equal kernels compare equal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Variant {
    /// Mapping strategy.
    pub strategy: Strategy,
    /// Threads per block (multiple of 32, 64..=1024).
    pub block: u32,
    /// Lanes cooperating on one row (`GroupPerRow` only; 2..=32, power of two). 1 otherwise.
    pub lanes: u32,
    /// Consecutive nonzeros per thread (`NnzSplit` only; 1..=16). 1 otherwise.
    pub items: u32,
    /// Unroll factor of the inner nonzero loop (1, 2, 4, 8).
    pub unroll: u32,
    /// Load `x` through the read-only data cache (`__ldg`).
    pub ldg_x: bool,
    /// Store `y` with streaming (evict-first) stores (tiled kernels also
    /// load the matrix arrays with streaming loads).
    pub stream_y: bool,
    /// `__launch_bounds__` minimum blocks per SM (0 = no hint); caps registers.
    pub min_blocks: u32,
    /// The numbering the matrix is stored in on the device (square matrices;
    /// see [`crate::reorder`]). Not part of the kernel's code: a renumbered
    /// variant runs the same kernel on `P A Pᵀ`, and its `spmv` gathers `x`
    /// and gathers `y` back around it (both timed by the search). Omitted from
    /// lock files and ids when `none`.
    #[serde(default, skip_serializing_if = "Reorder::is_none")]
    pub reorder: Reorder,
}

/// A variant parameter out of range ([`Variant::validate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    /// The block size.
    #[error("block {0} is not a multiple of 32 in 64..=1024")]
    Block(u32),
    /// The lanes of a lane-group strategy.
    #[error("lanes {0} is not a power of two in 2..=32")]
    Lanes(u32),
    /// The nonzeros per thread of an nnz-split kernel.
    #[error("items {0} is not in 1..=16")]
    Items(u32),
    /// The unroll factor.
    #[error("unroll {0} is not one of 1, 2, 4, 8")]
    Unroll(u32),
    /// The occupancy hint.
    #[error("min_blocks {0} is above 8")]
    MinBlocks(u32),
    /// Block size times occupancy hint above the register budget.
    #[error(
        "block {block} x min_blocks {min_blocks} exceeds 512 threads per SM of register budget"
    )]
    RegisterBudget {
        /// The block size.
        block: u32,
        /// The occupancy hint.
        min_blocks: u32,
    },
}

impl Variant {
    /// A default variant of `strategy` with typical parameters.
    pub const fn of(strategy: Strategy) -> Variant {
        let v = Variant {
            strategy,
            block: 256,
            lanes: 1,
            items: 1,
            unroll: 1,
            ldg_x: true,
            stream_y: false,
            min_blocks: 0,
            reorder: Reorder::None,
        };
        match strategy {
            Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow => {
                Variant { lanes: 8, ..v }
            }
            Strategy::NnzSplit => Variant { items: 4, ..v },
            _ => v,
        }
    }

    /// The nnz-balanced fallback that is safe and reasonably fast for any shape.
    pub const FALLBACK: Variant = Variant::of(Strategy::NnzSplit);

    /// The fallback of fused-epilogue entries: one warp per row, safe for
    /// any shape; it shares the block size and the x-load and y-store knobs
    /// of [`Variant::FALLBACK`], so both compile into one module.
    pub const FUSED_FALLBACK: Variant = Variant {
        lanes: 32,
        ..Variant::of(Strategy::GroupPerRow)
    };

    /// Fields the strategy ignores set to their canonical values.
    pub const fn canonical(self) -> Variant {
        let mut v = self;
        match v.strategy {
            Strategy::ThreadPerRow
            | Strategy::BlockPerRow
            | Strategy::Diagonal
            | Strategy::Sell => {
                v.lanes = 1;
                v.items = 1;
            }
            Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow => v.items = 1,
            Strategy::NnzSplit => {
                v.lanes = 1;
                v.unroll = 1;
            }
            Strategy::Tiled => {
                v.lanes = 1;
                v.items = 1;
                v.unroll = 1;
            }
        }
        v
    }

    /// Checks the parameter ranges; the first violation.
    pub fn validate(&self) -> Result<(), VariantError> {
        if !self.block.is_multiple_of(32) || !(64..=1024).contains(&self.block) {
            return Err(VariantError::Block(self.block));
        }
        if matches!(
            self.strategy,
            Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow
        ) && (!self.lanes.is_power_of_two() || !(2..=32).contains(&self.lanes))
        {
            return Err(VariantError::Lanes(self.lanes));
        }
        if self.strategy == Strategy::NnzSplit && !(1..=16).contains(&self.items) {
            return Err(VariantError::Items(self.items));
        }
        if ![1, 2, 4, 8].contains(&self.unroll) {
            return Err(VariantError::Unroll(self.unroll));
        }
        if self.min_blocks > 8 {
            return Err(VariantError::MinBlocks(self.min_blocks));
        }
        if self.block * self.min_blocks > 512 {
            // Fewer than 128 registers per thread: the wider kernels spill.
            return Err(VariantError::RegisterBudget {
                block: self.block,
                min_blocks: self.min_blocks,
            });
        }
        Ok(())
    }

    /// Whether `y` must be zeroed before the launch (strategies that accumulate with atomics).
    pub const fn needs_zeroed_y(&self) -> bool {
        matches!(self.strategy, Strategy::NnzSplit)
    }

    /// Grid size (number of blocks) for a matrix with `rows` rows and `nnz`
    /// nonzeros; [`RtError::InvalidVariant`](crate::RtError::InvalidVariant)
    /// for a variant that fails [`Variant::validate`] (its fields are public:
    /// a zero `block` or `items` would otherwise divide by zero).
    pub fn grid(&self, rows: usize, nnz: usize) -> Result<u32, crate::RtError> {
        self.validate()
            .map_err(|reason| crate::RtError::InvalidVariant {
                variant: self.id(),
                reason: reason.to_string(),
            })?;
        Ok(self.grid_of_valid(rows, nnz))
    }

    /// [`Variant::grid`] of a validated variant.
    fn grid_of_valid(&self, rows: usize, nnz: usize) -> u32 {
        let work_items: usize = match self.strategy {
            Strategy::ThreadPerRow | Strategy::Diagonal => rows,
            // Sell: one thread per row slot (rows rounded up to slices).
            Strategy::Sell => rows.div_ceil(crate::sell::C) * crate::sell::C,
            // Binned: the short-row part; the launch adds the long-row blocks.
            Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow => {
                rows * self.lanes as usize
            }
            Strategy::BlockPerRow => return rows.clamp(1, i32::MAX as usize) as u32,
            Strategy::NnzSplit => nnz.div_ceil(self.items as usize),
            // Tiled: one block per tile; the launch takes the layout's count.
            Strategy::Tiled => {
                return nnz.div_ceil(crate::tiled::TILE).clamp(1, i32::MAX as usize) as u32;
            }
        };
        work_items
            .div_ceil(self.block as usize)
            .clamp(1, i32::MAX as usize) as u32
    }

    /// A short stable identifier, e.g. `group-per-row.b256.l8.u2.ldg`.
    pub fn id(&self) -> String {
        let v = self.canonical();
        let mut s = format!("{}.b{}", v.strategy.as_str(), v.block);
        if matches!(
            v.strategy,
            Strategy::GroupPerRow | Strategy::Binned | Strategy::Narrow
        ) {
            s += &format!(".l{}", v.lanes);
        }
        if v.strategy == Strategy::NnzSplit {
            s += &format!(".i{}", v.items);
        } else {
            s += &format!(".u{}", v.unroll);
        }
        if v.ldg_x {
            s += ".ldg";
        }
        if v.stream_y {
            s += ".cs";
        }
        if v.min_blocks > 0 {
            s += &format!(".m{}", v.min_blocks);
        }
        if !v.reorder.is_none() {
            s += &format!("+{}", v.reorder.as_str());
        }
        s
    }

    /// The same kernel without renumbering (what is compiled: the numbering
    /// is a property of the upload, not of the code).
    pub const fn kernel(self) -> Variant {
        Variant {
            reorder: Reorder::None,
            ..self
        }
    }
}

/// The layout design space: variants of the strategies that need a layout
/// other than CSR ([`Strategy::needs_layout`]): diagonal kernels (block size
/// x unroll x `x` load path), binned and narrow-index kernels (lanes x
/// block 128/256 x unroll 1/2, `__ldg` loads), tiled kernels (block size
/// x `x` load path x streaming loads) and SELL-C-sigma kernels (block size
/// x unroll, `__ldg` loads). Diagonal, binned and narrow kernels
/// apply only to matrices whose structure allows their layout, and every one
/// needs more than the CSR arrays, so they are kept apart from [`core_space`]
/// (every variant of which runs on the CSR arrays of any matrix).
pub fn layout_space() -> Vec<Variant> {
    let mut out = Vec::new();
    for ldg_x in [true, false] {
        for block in [128, 256, 512, 1024] {
            for stream_y in [false, true] {
                out.push(Variant {
                    block,
                    ldg_x,
                    stream_y,
                    ..Variant::of(Strategy::Tiled)
                });
            }
        }
    }
    for strategy in [Strategy::Narrow, Strategy::Binned] {
        for block in [128, 256] {
            for unroll in [1, 2] {
                for lanes in [2, 4, 8, 16, 32] {
                    out.push(Variant {
                        block,
                        unroll,
                        lanes,
                        ..Variant::of(strategy)
                    });
                }
            }
        }
    }
    for ldg_x in [true, false] {
        for block in [128, 256, 512] {
            for unroll in [1, 2, 4] {
                out.push(Variant {
                    block,
                    unroll,
                    ldg_x,
                    ..Variant::of(Strategy::Diagonal)
                });
            }
        }
    }
    for block in [128, 256, 512] {
        for unroll in [1, 2, 4] {
            out.push(Variant {
                block,
                unroll,
                ..Variant::of(Strategy::Sell)
            });
        }
    }
    out
}

/// [`core_space`] followed by [`layout_space`]: what exhaustive sweeps measure.
pub fn full_space() -> Vec<Variant> {
    let mut out = core_space();
    out.extend(layout_space());
    out
}

/// The core design space: every CSR strategy crossed with its mapping parameters
/// (block size, lanes, items, unroll) and the `x` load path. Fine knobs
/// (`stream_y`, `min_blocks`) are left at their defaults here and explored by
/// the search's refinement. Deterministic order, no duplicates.
pub fn core_space() -> Vec<Variant> {
    let mut out = Vec::new();
    for ldg_x in [true, false] {
        for block in [128, 256, 512] {
            // The strategy's defaults with this block size and x load path.
            let of = |s: Strategy| Variant {
                block,
                ldg_x,
                ..Variant::of(s)
            };
            for unroll in [1, 2, 4] {
                out.push(Variant {
                    unroll,
                    ..of(Strategy::ThreadPerRow)
                });
                out.extend([2, 4, 8, 16, 32].map(|lanes| Variant {
                    unroll,
                    lanes,
                    ..of(Strategy::GroupPerRow)
                }));
            }
            out.extend([1, 4].map(|unroll| Variant {
                unroll,
                ..of(Strategy::BlockPerRow)
            }));
            out.extend([1, 2, 4, 8, 16].map(|items| Variant {
                items,
                ..of(Strategy::NnzSplit)
            }));
        }
    }
    out
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_numbering_is_in_the_id_and_the_lock_form_only_when_renumbered() {
        let v = Variant::of(Strategy::Sell);
        let r = Variant {
            reorder: Reorder::Rcm,
            ..v
        };
        assert_eq!(r.id(), format!("{}+rcm", v.id()));
        assert_eq!(r.kernel(), v);
        // Lock files written before renumbering existed still parse.
        let plain = serde_json::to_string(&v).unwrap();
        assert!(!plain.contains("reorder"), "{plain}");
        assert_eq!(serde_json::from_str::<Variant>(&plain).unwrap(), v);
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"reorder\":\"rcm\""), "{json}");
        assert_eq!(serde_json::from_str::<Variant>(&json).unwrap(), r);
        let l = crate::Layouts::for_variants(&[r]);
        assert!(l.sell && l.reorder == Reorder::Rcm);
        let lean = crate::Layouts::lean(&r);
        assert!(lean.sell && !lean.csr && lean.reorder == Reorder::Rcm);
    }

    #[test]
    fn defaults_are_valid_and_canonical() {
        for s in Strategy::ALL {
            let v = Variant::of(s);
            v.validate().unwrap();
            assert_eq!(v, v.canonical());
        }
    }

    #[test]
    fn core_space_is_valid_and_unique() {
        let space = core_space();
        let set: std::collections::HashSet<_> = space.iter().map(|v| v.id()).collect();
        assert_eq!(set.len(), space.len());
        for v in &space {
            v.validate().unwrap();
            assert_eq!(*v, v.canonical());
        }
        assert_eq!(space.len(), 2 * 3 * (3 * 6 + 2 + 5));
        assert!(space.iter().all(|v| !v.strategy.needs_layout()));
        let full = full_space();
        let set: std::collections::HashSet<_> = full.iter().map(|v| v.id()).collect();
        assert_eq!(set.len(), full.len());
        assert_eq!(full.len(), space.len() + 18 + 20 + 16 + 20 + 9);
        for v in layout_space() {
            v.validate().unwrap();
            assert_eq!(v, v.canonical());
            assert!(v.strategy.needs_layout());
        }
    }

    #[test]
    fn grid_covers_work() {
        let v = Variant::of(Strategy::GroupPerRow);
        assert_eq!(
            v.grid(1000, 5000).unwrap(),
            (1000 * 8usize).div_ceil(256) as u32
        );
        assert_eq!(Variant::FALLBACK.grid(10, 0).unwrap(), 1);
        assert_eq!(Variant::of(Strategy::BlockPerRow).grid(7, 70).unwrap(), 7);
    }

    #[test]
    fn grid_of_an_invalid_variant_is_an_error_not_a_division_by_zero() {
        let mut v = Variant::of(Strategy::GroupPerRow);
        v.block = 0;
        let err = v.grid(1000, 5000).unwrap_err().to_string();
        assert!(err.contains("block 0"), "{err}");
        let mut v = Variant::of(Strategy::NnzSplit);
        v.items = 0;
        let err = v.grid(1000, 5000).unwrap_err().to_string();
        assert!(err.contains("items 0"), "{err}");
    }

    #[test]
    fn invalid_parameters_are_named() {
        let mut v = Variant::of(Strategy::GroupPerRow);
        v.lanes = 3;
        assert!(v.validate().unwrap_err().to_string().contains("lanes 3"));
        v.lanes = 4;
        v.block = 100;
        assert!(v.validate().unwrap_err().to_string().contains("block 100"));
    }
}
