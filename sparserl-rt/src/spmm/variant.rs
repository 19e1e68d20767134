//! SpMM kernel variants: a point of the SpMM design space as a plain value.

use crate::dense::DenseLayout;
use crate::variant::ValueType;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Most warps the nnz-split pre- and post-passes launch: about two waves of
/// full occupancy on a GPU of 132 SMs; larger matrices give each warp up to
/// 32 rows, fewer waves of nearly idle warps.
pub const PASS_WARPS: usize = 16_384;

/// Threads per block of the transposed path's transpose entries (32 x 8
/// threads per 32 x 32 tile).
pub const TRANSPOSE_BLOCK: u32 = 256;

/// The transposed path's workspaces have this many columns for width `n`
/// (`n` rounded up to 4, so that vector loads of 4 columns stay aligned).
pub const fn workspace_ld(n: usize) -> usize {
    n.div_ceil(4) * 4
}

/// How an SpMM kernel maps work to threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpmmStrategy {
    /// A group of `group` lanes per (row, column chunk): the group loads
    /// `group` (column, value) pairs of its row coalesced and broadcasts
    /// them with shuffles; each lane owns `coarsen` slices of `vec`
    /// consecutive columns (vector loads of X rows). Several rows per warp
    /// when `group < 32`; with `split > 1` that many groups of a block
    /// share each item and add their partial sums in shared memory.
    RowWarp,
    /// Nonzero-balanced: every stream of `group` lanes (`32 / group`
    /// streams per warp) owns a range of `32 items` consecutive nonzeros
    /// and one column chunk of `group vec coarsen` columns; rows inside the
    /// range are written directly, rows cut at range edges are added with
    /// atomics after a per-row pre-pass (so hub rows spread over many
    /// streams). `group < 32` keeps every lane busy at narrow widths.
    NnzSplit,
    /// Register tile: `group` lanes per (row, tile of `tile` columns)
    /// split the row's nonzeros and reduce with shuffles; each lane keeps
    /// `tile` accumulators, so A is read once per `tile` columns. The
    /// column-major family (consecutive threads on consecutive rows).
    ColTile,
}

impl SpmmStrategy {
    /// Every strategy.
    pub const ALL: [SpmmStrategy; 3] = [
        SpmmStrategy::RowWarp,
        SpmmStrategy::NnzSplit,
        SpmmStrategy::ColTile,
    ];

    /// Short stable name (the first part of a variant id).
    pub const fn as_str(self) -> &'static str {
        match self {
            SpmmStrategy::RowWarp => "row-warp",
            SpmmStrategy::NnzSplit => "nnz-split",
            SpmmStrategy::ColTile => "col-tile",
        }
    }

    /// The `SPMM_STRATEGY` code of the fragments.
    pub const fn code(self) -> u32 {
        match self {
            SpmmStrategy::RowWarp => 1,
            SpmmStrategy::NnzSplit => 2,
            SpmmStrategy::ColTile => 3,
        }
    }

    /// Whether the kernel writes rows cut at range edges with atomics after
    /// a pre-pass entry (and, with an epilogue, a post-pass entry).
    pub const fn has_passes(self) -> bool {
        matches!(self, SpmmStrategy::NnzSplit)
    }
}

/// A fused SpMM epilogue (declared in the descriptor like the SpMV ones).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpmmEpilogue {
    /// `Y = relu(alpha A X + beta Y + bias[col])` (a GCN layer's aggregation).
    BiasRelu,
}

impl SpmmEpilogue {
    /// Every epilogue.
    pub const ALL: [SpmmEpilogue; 1] = [SpmmEpilogue::BiasRelu];
    /// Descriptor spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SpmmEpilogue::BiasRelu => "bias-relu",
        }
    }
    /// Parses the descriptor spelling.
    pub fn parse(s: &str) -> Option<SpmmEpilogue> {
        SpmmEpilogue::ALL.into_iter().find(|e| e.as_str() == s)
    }
    /// The `SPMM_EPILOGUE` code of the fragments (0 is plain).
    pub const fn code(self) -> u32 {
        match self {
            SpmmEpilogue::BiasRelu => 1,
        }
    }
    /// Suffix of the fused entry's name.
    pub const fn suffix(self) -> &'static str {
        match self {
            SpmmEpilogue::BiasRelu => "bias_relu",
        }
    }
}

impl fmt::Display for SpmmEpilogue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One point of the SpMM design space. Fields a strategy ignores are kept
/// at their canonical value ([`SpmmVariant::canonical`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SpmmVariant {
    /// Mapping strategy.
    pub strategy: SpmmStrategy,
    /// Threads per block (multiple of 32, 64..=1024).
    pub block: u32,
    /// Lanes per work item (power of two 1..=32; nnz-split: the lanes of
    /// one nonzero stream, 32 unless the id says `g`).
    pub group: u32,
    /// Columns per vector load of X / store of Y (1, 2, 4; row-major only;
    /// col-tile: 1).
    pub vec: u32,
    /// Column slices per lane (row-warp, nnz-split: 1, 2, 4; col-tile: 1).
    pub coarsen: u32,
    /// Columns per register tile (col-tile: 1, 2, 4, 8, 16; others 1).
    pub tile: u32,
    /// Nonzeros per lane of a warp range (nnz-split: 1..=64; others 1).
    pub items: u32,
    /// Shorter ranges (nnz-split with `items` 1: the 32 nonzeros of a range
    /// cut into `sub` ranges of `32 / sub`, 1, 2 or 4: more streams and a
    /// shorter serial walk for small matrices of short rows; else 1).
    #[serde(default = "one")]
    pub sub: u32,
    /// Groups that share one row-warp work item (1, 2, 4, 8; others 1):
    /// the row's steps are dealt round-robin to `split` groups of one
    /// block and their partial sums are added through shared memory, so a
    /// row's serial walk is `split` times shorter (medium and long rows of
    /// a latency-bound matrix). Needs `block / group` a multiple of `split`
    /// and `block vec coarsen <= 4096` (at most 32 KiB of partial sums).
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub split: u32,
    /// Unroll factor of the nonzero loop (1, 2, 4, 8): row-warp keeps this
    /// many X rows in flight per lane (a step covers `max(group, unroll)`
    /// nonzeros), nnz-split `min(unroll, group)`.
    pub unroll: u32,
    /// Load X through the read-only data cache (`__ldg`).
    pub ldg_x: bool,
    /// Column-major X and Y through row-major workspaces (row-warp,
    /// nnz-split; column-major only): X is transposed into a row-major
    /// copy, the row-major kernel (vector loads of whole X rows) writes a
    /// row-major Y, and a second transpose applies `alpha`, `beta` and the
    /// epilogue while it writes Y back. Costs two passes over the dense
    /// matrices; saves a strided gather per nonzero and column. Id suffix `.t`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub trans: bool,
}

/// The sizes a kernel sees: rows of A, columns of A (rows of X), nonzeros, width N.
pub type SpmmShape = (usize, usize, usize, usize);

/// Why an SpMM variant is not valid, or an id does not parse
/// ([`SpmmVariant::validate`], [`SpmmVariant::validate_for`],
/// [`SpmmVariant::parse`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpmmVariantError {
    /// The block size.
    #[error("block {0} is not a multiple of 32 in 64..=1024")]
    Block(u32),
    /// The lanes per row group.
    #[error("group {0} is not a power of two in 1..=32")]
    Group(u32),
    /// The vector width of X loads.
    #[error("vec {0} is not one of 1, 2, 4")]
    Vec(u32),
    /// The columns per lane.
    #[error("coarsen {0} is not one of 1, 2, 4")]
    Coarsen(u32),
    /// The column tile.
    #[error("tile {0} is not one of 1, 2, 4, 8, 16")]
    Tile(u32),
    /// The nonzeros per warp step.
    #[error("items {0} is not in 1..=64")]
    Items(u32),
    /// The range cut.
    #[error("sub {0} is not one of 1, 2, 4")]
    Sub(u32),
    /// The unroll factor.
    #[error("unroll {0} is not one of 1, 2, 4, 8")]
    Unroll(u32),
    /// The groups per row-warp work item.
    #[error("split {split} is not one of 1, 2, 4, 8 dividing the {groups} groups of a block")]
    Split {
        /// The split.
        split: u32,
        /// Groups per block (`block / group`).
        groups: u32,
    },
    /// A split whose partial sums would not fit the shared memory bound.
    #[error(
        "split {split} with {columns} columns per lane and block {block} needs more than 32 KiB of shared memory (block x columns per lane at most 4096)"
    )]
    SplitShared {
        /// The split.
        split: u32,
        /// Columns per lane (`vec coarsen`).
        columns: u32,
        /// The block size.
        block: u32,
    },
    /// Vector loads along the strided rows of a col-major X.
    #[error("vec {0} needs row-major X (col-major rows are strided)")]
    VecNeedsRowMajor(u32),
    /// The transposed path of a layout that needs none, or of col-tile.
    #[error("`.t` (column-major through row-major workspaces) {0}")]
    Trans(&'static str),
    /// An id whose first part names no strategy.
    #[error("unknown SpMM strategy `{strategy}` in `{id}`")]
    UnknownStrategy {
        /// The first part.
        strategy: String,
        /// The id.
        id: String,
    },
    /// A part whose number does not parse.
    #[error("bad part `{part}` in SpMM variant `{id}`")]
    BadPart {
        /// The part.
        part: String,
        /// The id.
        id: String,
    },
    /// A part with an unknown key.
    #[error("unknown part `{part}` in SpMM variant `{id}`")]
    UnknownPart {
        /// The part.
        part: String,
        /// The id.
        id: String,
    },
    /// An id that parses but is not the canonical one of its variant.
    #[error("`{id}` is not canonical (the id is `{canonical}`)")]
    NotCanonical {
        /// The id.
        id: String,
        /// The canonical id.
        canonical: String,
    },
}

impl SpmmVariant {
    /// A default variant of `strategy`.
    pub const fn of(strategy: SpmmStrategy) -> SpmmVariant {
        let v = SpmmVariant {
            strategy,
            block: 256,
            group: 32,
            vec: 1,
            coarsen: 1,
            tile: 1,
            items: 1,
            sub: 1,
            split: 1,
            unroll: 1,
            ldg_x: true,
            trans: false,
        };
        match strategy {
            SpmmStrategy::RowWarp => v,
            SpmmStrategy::NnzSplit => SpmmVariant { items: 8, ..v },
            SpmmStrategy::ColTile => SpmmVariant {
                group: 1,
                tile: 4,
                ..v
            },
        }
    }

    /// Correct on any matrix, width and layout: nnz-balanced, scalar loads,
    /// one column per lane, the column chunks looped over.
    pub const FALLBACK: SpmmVariant = SpmmVariant::of(SpmmStrategy::NnzSplit);

    /// Ignored fields set to their canonical values.
    pub const fn canonical(self) -> SpmmVariant {
        let mut v = self;
        match v.strategy {
            SpmmStrategy::RowWarp => {
                v.tile = 1;
                v.items = 1;
                v.sub = 1;
            }
            SpmmStrategy::NnzSplit => {
                v.tile = 1;
                v.split = 1;
                if v.items != 1 {
                    v.sub = 1;
                }
            }
            SpmmStrategy::ColTile => {
                v.vec = 1;
                v.coarsen = 1;
                v.items = 1;
                v.sub = 1;
                v.split = 1;
            }
        }
        v
    }

    /// Columns one work item covers per pass (row-warp, nnz-split:
    /// `group vec coarsen`, col-tile: `tile`).
    pub const fn chunk(&self) -> u32 {
        let v = self.canonical();
        match v.strategy {
            SpmmStrategy::ColTile => v.tile,
            _ => v.group * v.vec * v.coarsen,
        }
    }

    /// Checks the parameter ranges (and that `.t` is not on col-tile); the
    /// first violation.
    pub fn validate(&self) -> Result<(), SpmmVariantError> {
        let v = self.canonical();
        if !v.block.is_multiple_of(32) || !(64..=1024).contains(&v.block) {
            return Err(SpmmVariantError::Block(v.block));
        }
        if !v.group.is_power_of_two() || v.group > 32 {
            return Err(SpmmVariantError::Group(v.group));
        }
        if ![1, 2, 4].contains(&v.vec) {
            return Err(SpmmVariantError::Vec(v.vec));
        }
        if ![1, 2, 4].contains(&v.coarsen) {
            return Err(SpmmVariantError::Coarsen(v.coarsen));
        }
        if ![1, 2, 4, 8, 16].contains(&v.tile) {
            return Err(SpmmVariantError::Tile(v.tile));
        }
        if !(1..=64).contains(&v.items) {
            return Err(SpmmVariantError::Items(v.items));
        }
        if ![1, 2, 4].contains(&v.sub) {
            return Err(SpmmVariantError::Sub(v.sub));
        }
        if ![1, 2, 4, 8].contains(&v.unroll) {
            return Err(SpmmVariantError::Unroll(v.unroll));
        }
        let groups = v.block / v.group;
        if ![1, 2, 4, 8].contains(&v.split) || !groups.is_multiple_of(v.split) {
            return Err(SpmmVariantError::Split {
                split: v.split,
                groups,
            });
        }
        if v.split > 1 && v.block * v.vec * v.coarsen > 4096 {
            return Err(SpmmVariantError::SplitShared {
                split: v.split,
                columns: v.vec * v.coarsen,
                block: v.block,
            });
        }
        if v.trans && v.strategy == SpmmStrategy::ColTile {
            return Err(SpmmVariantError::Trans(
                "applies to row-warp and nnz-split, not col-tile",
            ));
        }
        Ok(())
    }

    /// The layout the main kernel sees: row-major for the transposed path
    /// ([`SpmmVariant::trans`]), else `layout`.
    pub const fn kernel_layout(&self, layout: DenseLayout) -> DenseLayout {
        if self.trans {
            DenseLayout::RowMajor
        } else {
            layout
        }
    }

    /// [`SpmmVariant::validate`] plus what the dense layout allows (vector
    /// loads only along contiguous rows of a row-major X).
    pub fn validate_for(&self, layout: DenseLayout) -> Result<(), SpmmVariantError> {
        self.validate()?;
        if self.trans && layout == DenseLayout::RowMajor {
            return Err(SpmmVariantError::Trans(
                "is for column-major dense matrices",
            ));
        }
        if self.kernel_layout(layout) == DenseLayout::ColMajor && self.canonical().vec > 1 {
            return Err(SpmmVariantError::VecNeedsRowMajor(self.vec));
        }
        Ok(())
    }

    /// Nonzeros per range of an nnz-split variant (`32 items / sub`).
    pub const fn range(&self) -> u32 {
        let v = self.canonical();
        32 * v.items / v.sub
    }

    /// A short stable identifier, e.g. `row-warp.b256.g8.v4.c2.u2.ldg`
    /// (row-warp: `.s<split>` after the coarsening when `split > 1`)
    /// (nnz-split: `.g<group>` only when the group is not 32, so ids of
    /// whole-warp streams read as they always did; `.r<range>` instead of
    /// `.i1` for ranges shorter than 32 nonzeros).
    pub fn id(&self) -> String {
        let v = self.canonical();
        let mut s = format!("{}.b{}", v.strategy.as_str(), v.block);
        match v.strategy {
            SpmmStrategy::RowWarp => {
                s += &format!(".g{}.v{}.c{}", v.group, v.vec, v.coarsen);
                if v.split > 1 {
                    s += &format!(".s{}", v.split);
                }
            }
            SpmmStrategy::NnzSplit => {
                if v.group != 32 {
                    s += &format!(".g{}", v.group);
                }
                if v.sub > 1 {
                    s += &format!(".r{}", v.range());
                } else {
                    s += &format!(".i{}", v.items);
                }
                s += &format!(".v{}.c{}", v.vec, v.coarsen);
            }
            SpmmStrategy::ColTile => s += &format!(".g{}.k{}", v.group, v.tile),
        }
        s += &format!(".u{}", v.unroll);
        if v.ldg_x {
            s += ".ldg";
        }
        if v.trans {
            s += ".t";
        }
        s
    }

    /// Parses an [`SpmmVariant::id`].
    pub fn parse(id: &str) -> Result<SpmmVariant, SpmmVariantError> {
        let mut parts = id.split('.');
        let head = parts.next().unwrap_or_default();
        let strategy = SpmmStrategy::ALL
            .into_iter()
            .find(|s| s.as_str() == head)
            .ok_or_else(|| SpmmVariantError::UnknownStrategy {
                strategy: head.to_string(),
                id: id.to_string(),
            })?;
        let mut v = SpmmVariant {
            ldg_x: false,
            ..SpmmVariant::of(strategy)
        };
        for p in parts {
            if p == "ldg" {
                v.ldg_x = true;
                continue;
            }
            if p == "t" {
                v.trans = true;
                continue;
            }
            let (key, num) = p.split_at(p.chars().next().map_or(0, char::len_utf8));
            let num: u32 = num.parse().map_err(|_| SpmmVariantError::BadPart {
                part: p.to_string(),
                id: id.to_string(),
            })?;
            match key {
                "b" => v.block = num,
                "g" => v.group = num,
                "v" => v.vec = num,
                "c" => v.coarsen = num,
                "k" => v.tile = num,
                "i" => v.items = num,
                // A range of 16 or 8 nonzeros: items 1 cut in 2 or 4.
                "r" if num > 0 && 32 % num == 0 => {
                    v.items = 1;
                    v.sub = 32 / num;
                }
                "u" => v.unroll = num,
                "s" => v.split = num,
                _ => {
                    return Err(SpmmVariantError::UnknownPart {
                        part: p.to_string(),
                        id: id.to_string(),
                    });
                }
            }
        }
        v.validate()?;
        let v = v.canonical();
        if v.id() != id {
            return Err(SpmmVariantError::NotCanonical {
                id: id.to_string(),
                canonical: v.id(),
            });
        }
        Ok(v)
    }

    /// Entry-point base name for `value` and `layout`:
    /// `sparserl_spmm_` + the id with non-alphanumerics as `_` + `_rm`/`_cm` + `_f32`/`_f64`.
    pub fn entry_name(&self, value: ValueType, layout: DenseLayout) -> String {
        let id: String = self
            .id()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        format!("sparserl_spmm_{id}_{}_{}", layout.tag(), value.as_str())
    }

    /// The full entry name: [`SpmmVariant::entry_name`] + `_n<width>` (a
    /// compile-time width) or `_nx` (the generic runtime width) + `_`
    /// epilogue suffix when fused.
    pub fn entry(
        &self,
        value: ValueType,
        layout: DenseLayout,
        width: Option<usize>,
        epilogue: Option<SpmmEpilogue>,
    ) -> String {
        let mut s = self.entry_name(value, layout);
        match width {
            Some(n) => s += &format!("_n{n}"),
            None => s += "_nx",
        }
        if let Some(e) = epilogue {
            s += "_";
            s += e.suffix();
        }
        s
    }

    /// The transposed path's entry that copies a column-major X into the
    /// row-major workspace (`<entry_name>_tin`).
    pub fn tin_entry(&self, value: ValueType, layout: DenseLayout) -> String {
        format!("{}_tin", self.entry_name(value, layout))
    }

    /// The transposed path's entry that writes Y back from the row-major
    /// workspace, applying `alpha`, `beta` and `epilogue`
    /// (`<entry_name>_tout`, + `_` epilogue suffix).
    pub fn tout_entry(
        &self,
        value: ValueType,
        layout: DenseLayout,
        epilogue: Option<SpmmEpilogue>,
    ) -> String {
        let mut s = format!("{}_tout", self.entry_name(value, layout));
        if let Some(e) = epilogue {
            s += "_";
            s += e.suffix();
        }
        s
    }

    /// Grid of a transpose entry over an `r x n` dense matrix: a block of
    /// [`TRANSPOSE_BLOCK`] threads per 32 x 32 tile (grid-stride past 2^20 tiles).
    pub fn transpose_grid(r: usize, n: usize) -> u32 {
        let tiles = (r.div_ceil(32) as u128) * (n.div_ceil(32) as u128);
        tiles.clamp(1, 1 << 20) as u32
    }

    /// Grid (blocks of [`SpmmVariant::block`]) of the main entry for a
    /// shape (any grid is correct: the kernels loop grid-stride).
    pub fn grid(&self, shape: SpmmShape) -> u32 {
        let (rows, _, nnz, n) = shape;
        let v = self.canonical();
        let chunks = n.div_ceil(v.chunk() as usize).max(1);
        let threads = match v.strategy {
            SpmmStrategy::RowWarp | SpmmStrategy::ColTile => {
                (rows.max(1) as u128) * chunks as u128 * (v.group * v.split) as u128
            }
            SpmmStrategy::NnzSplit => {
                let ranges = nnz.div_ceil(v.range() as usize).max(1);
                ranges as u128 * chunks as u128 * v.group as u128
            }
        };
        threads.div_ceil(v.block as u128).clamp(1, i32::MAX as u128) as u32
    }

    /// Grid of the pre- and post-passes: a warp per row up to
    /// [`PASS_WARPS`] warps; past that each warp checks `ceil(rows / warps)`
    /// rows, at most 32, with one coalesced load (the kernel derives that
    /// count from the grid).
    pub fn pass_grid(&self, rows: usize) -> u32 {
        (rows.min(PASS_WARPS) as u128 * 32)
            .div_ceil(self.block as u128)
            .clamp(1, i32::MAX as u128) as u32
    }
}

impl fmt::Display for SpmmVariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

impl FromStr for SpmmVariant {
    type Err = SpmmVariantError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SpmmVariant::parse(s)
    }
}

fn one() -> u32 {
    1
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_one(x: &u32) -> bool {
    *x == 1
}

/// Compulsory bytes of one SpMM `Y = A X` with `n` columns and values of
/// `value_size` bytes: `nnz (v + 4) + (rows + 1) 4 + (cols + rows) n v`.
pub fn spmm_bytes(rows: usize, cols: usize, nnz: usize, n: usize, value_size: usize) -> u64 {
    let (r, c, z, n, v) = (
        rows as u64,
        cols as u64,
        nnz as u64,
        n as u64,
        value_size as u64,
    );
    z * (v + 4) + (r + 1) * 4 + (c + r) * n * v
}

/// The smallest power of two >= `n` (1 for 0).
fn pow2_at_least(n: usize) -> u32 {
    n.max(1).next_power_of_two().min(1 << 16) as u32
}

/// Row-warp points: chunk = group vec coarsen at most the width (rounded up
/// to a power of two `np`) and at least a quarter of it (or of 128); for
/// column-major only whole warps once the width reaches 32; 1, 4 or 8 X rows
/// in flight per lane (8 where a lane holds at most 4 values of a row);
/// where a lane holds at most 4 values, also each row split over 2, 4 or 8
/// groups with 8 X rows in flight.
fn row_warp_points(np: u32, layout: DenseLayout, vecs: &[u32], out: &mut Vec<SpmmVariant>) {
    for group in [1, 2, 4, 8, 16, 32] {
        for &vec in vecs {
            for coarsen in [1, 2, 4] {
                let chunk = group * vec * coarsen;
                let wide_enough = chunk * 4 >= np.min(128) || chunk >= np;
                if chunk > np.max(1) || !wide_enough || vec > np {
                    continue;
                }
                if layout == DenseLayout::ColMajor && group < 32 && np >= 32 {
                    continue;
                }
                // Unroll 8 (8 X rows in flight per lane) only where a lane's
                // share of an X row is at most 4 values: 32 registers of
                // loads in flight, no spills in f64.
                let unrolls: &[u32] = if vec * coarsen <= 4 {
                    &[1, 4, 8]
                } else {
                    &[1, 4]
                };
                for &unroll in unrolls {
                    out.push(SpmmVariant {
                        group,
                        vec,
                        coarsen,
                        unroll,
                        ..SpmmVariant::of(SpmmStrategy::RowWarp)
                    });
                }
                // Split rows: 2, 4 or 8 groups per row with 8 X rows in
                // flight each, where a lane holds at most 4 values of a row
                // (the partial sums stay small in shared memory). Unroll 4
                // is a valid variant, not in the space: never the fastest
                // in the sweep that measured it.
                if vec * coarsen <= 4 {
                    for split in [2, 4, 8] {
                        out.push(SpmmVariant {
                            group,
                            vec,
                            coarsen,
                            split,
                            unroll: 8,
                            ..SpmmVariant::of(SpmmStrategy::RowWarp)
                        });
                    }
                }
            }
        }
    }
}

/// Nnz-split points: whole-warp streams (chunk = 32 vec coarsen at most
/// max(np, 32); ranges of 32, 128 or 512 nonzeros: the short ones give
/// small matrices enough warps and a short serial walk); for widths up to 64, streams of `group` in {4, 8, 16}
/// lanes whose chunk is exactly max(np, 4) (no idle lanes; `32 / group`
/// streams per warp, with `items` 1 too: ranges of 32 nonzeros, more warps
/// for small matrices). Every point of `items` 1 also comes with ranges of
/// 16 and 8 nonzeros (`sub` 2, 4): on the small real matrices the shortest
/// range measured was the fastest, typically about twice as fast as ranges
/// of 128, because the stream's serial walk is what a latency-bound launch
/// waits for.
fn nnz_split_points(np: u32, vecs: &[u32], out: &mut Vec<SpmmVariant>) {
    let mut push = |group, items, vec, coarsen| {
        let subs: &[u32] = if items == 1 { &[1, 2, 4] } else { &[1] };
        // Unroll: X rows of 1 or 4 nonzeros loaded before any is used.
        for (&sub, unroll) in subs.iter().flat_map(|s| [(s, 1), (s, 4)]) {
            out.push(SpmmVariant {
                group,
                items,
                sub,
                vec,
                coarsen,
                unroll,
                ..SpmmVariant::of(SpmmStrategy::NnzSplit)
            });
        }
    };
    for items in [1, 4, 16] {
        for &vec in vecs {
            for coarsen in [1, 2] {
                if 32 * vec * coarsen <= np.max(32) {
                    push(32, items, vec, coarsen);
                }
                if np > 64 || items == 1 {
                    continue;
                }
                for group in [4, 8, 16] {
                    if group * vec * coarsen == np.max(4) {
                        for it in if items == 4 { &[1, 4][..] } else { &[16][..] } {
                            push(group, *it, vec, coarsen);
                        }
                    }
                }
            }
        }
    }
}

/// The SpMM design space for width `n_cols` and `layout`: every point
/// valid for that layout, none whose column chunk is far wider than the
/// width (lanes that would idle), in a fixed order. Column-major also
/// holds the row-major row-warp and nnz-split points on the transposed path
/// ([`SpmmVariant::trans`]).
pub fn spmm_space(n_cols: usize, layout: DenseLayout) -> Vec<SpmmVariant> {
    let np = pow2_at_least(n_cols);
    let mut out = Vec::new();
    let vecs: &[u32] = match layout {
        DenseLayout::RowMajor => &[1, 2, 4],
        DenseLayout::ColMajor => &[1],
    };
    row_warp_points(np, layout, vecs, &mut out);
    nnz_split_points(np, vecs, &mut out);
    if layout == DenseLayout::ColMajor {
        // The transposed path: the row-major points through workspaces.
        let mut rm = Vec::new();
        row_warp_points(np, DenseLayout::RowMajor, &[1, 2, 4], &mut rm);
        nnz_split_points(np, &[1, 2, 4], &mut rm);
        out.extend(rm.into_iter().map(|v| SpmmVariant { trans: true, ..v }));
    }
    // Col-tile: lanes over nonzeros, a register tile of columns.
    for group in [1, 4, 32] {
        for tile in [1, 2, 4, 8, 16] {
            if tile > np || (tile < 4 && np >= 16 * tile) {
                continue;
            }
            // A warp per row (group 32) also takes 8 nonzeros per lane in
            // flight, for long rows (a dense row of an arrow or KKT matrix),
            // when the tile's X loads stay few (tile <= 4: with 8 columns f64
            // entries spill).
            let unrolls: &[u32] = match group {
                1 => &[1],
                32 if tile <= 4 => &[2, 8],
                _ => &[2],
            };
            for block in [128, 256] {
                for &unroll in unrolls {
                    out.push(SpmmVariant {
                        group,
                        tile,
                        block,
                        unroll,
                        ..SpmmVariant::of(SpmmStrategy::ColTile)
                    });
                }
            }
        }
    }
    out.retain(|v| v.validate_for(layout).is_ok());
    out.sort();
    out.dedup();
    out
}
