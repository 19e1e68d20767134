//! The nonzero-tile layout read by [`Strategy::Tiled`](crate::Strategy::Tiled).
//!
//! The nonzeros are cut, in order, into tiles of at most [`TILE`] nonzeros
//! and [`TILE_ROWS`] rows, each processed by one thread block in two phases
//! (the CSR-Stream scheme of CSR-Adaptive): the block first computes every
//! product `value * x[col]` of the tile with fully coalesced loads into shared
//! memory, then sums the products of each row from shared memory with a group
//! of lanes per row sized to the tile's row count. A tile normally holds whole
//! rows; a row longer than [`TILE`] is cut into pieces of up to [`PIECE`]
//! nonzeros, whose block sums are combined through a per-row double accumulator (the last
//! piece to finish writes the row).
//!
//! Rows are added to a tile greedily while the tile stays within [`TILE`]
//! nonzeros and [`TILE_ROWS`] rows. In the second phase a row gets
//! `g = clamp(pow2_floor(block / rows), 1, 32)` lanes; a row with more than
//! `32 g` products is summed by a whole warp instead, so one long row cannot
//! stall a tile of short ones.
//!
//! Device form: one `i32` array `meta = [n_tiles, n_acc, tile_row[n_tiles + 1],
//! tile_nnz[n_tiles + 1], tile_acc[n_tiles], acc_row[n_acc],
//! acc_pieces[n_acc]]`: tile `t` covers rows `tile_row[t] ..
//! tile_row[t + 1]` and nonzeros `tile_nnz[t] .. tile_nnz[t + 1]`, or, when
//! `tile_acc[t] >= 0`, is one piece of row `acc_row[tile_acc[t]]` (a row of
//! `acc_pieces` pieces). Plus a zeroed `f64` scratch of `2 * n_acc` slots:
//! the accumulators, then per long row a 32-bit completion counter in each
//! slot; kernels leave it zeroed. The metadata is 12 bytes per tile (about
//! 1.5% of the CSR bytes of a matrix whose tiles are full).
//!
//! ```
//! use sparserl_rt::{Csr, tiled};
//! // Row 1 has 20000 nonzeros, the other rows one each.
//! let mut t: Vec<(u32, u32, f64)> = (0..100).map(|r| (r, r, 1.0)).filter(|e| e.0 != 1).collect();
//! t.extend((0..20000).map(|c| (1, c, 0.5)));
//! let a = Csr::from_triplets(100, 20000, &t).unwrap();
//! let l = tiled::TiledLayout::build(&a);
//! // Row 0, then row 1 in three pieces (8192 + 8192 + 3616), then rows 2..100.
//! assert_eq!(l.tiles(), 5);
//! assert_eq!(l.acc_row, vec![1]);
//! assert_eq!(l.acc_pieces, vec![3]);
//! ```

use crate::csr::Csr;

/// Most nonzeros of one tile (one block's shared-memory product buffer).
pub const TILE: usize = 1024;

/// Most nonzeros of one piece of a row longer than [`TILE`]. A piece needs
/// no shared memory, so it can be longer than a tile: fewer block reductions
/// and atomics per row (`docs/lab/kernel-lab-h200.md`), while a row of a million
/// nonzeros still spreads over about a hundred blocks.
pub const PIECE: usize = 8192;

/// Most rows of one tile.
pub const TILE_ROWS: usize = 1024;

/// The host form of the layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiledLayout {
    /// Per tile and one past the end: first row (`rows` at the end).
    pub tile_row: Vec<i32>,
    /// Per tile and one past the end: first nonzero (`nnz` at the end).
    pub tile_nnz: Vec<i32>,
    /// Per tile: index of the long row it is a piece of, or -1.
    pub tile_acc: Vec<i32>,
    /// The rows cut into pieces, ascending.
    pub acc_row: Vec<i32>,
    /// Pieces of each of those rows.
    pub acc_pieces: Vec<i32>,
}

impl TiledLayout {
    /// The layout of `csr`. O(rows + nnz / TILE).
    pub fn build(csr: &Csr) -> TiledLayout {
        let indptr = csr.indptr();
        let mut l = TiledLayout {
            tile_row: Vec::new(),
            tile_nnz: Vec::new(),
            tile_acc: Vec::new(),
            acc_row: Vec::new(),
            acc_pieces: Vec::new(),
        };
        // The open tile: first row, rows, nonzeros.
        let mut open: Option<(usize, usize, usize)> = None;
        // Validated CSR: rows and offsets fit in i32.
        let close = |l: &mut TiledLayout, first: usize| {
            l.tile_row.push(first as i32);
            l.tile_nnz.push(indptr[first] as i32);
            l.tile_acc.push(-1);
        };
        for r in 0..csr.rows() {
            let (start, end) = (indptr[r] as usize, indptr[r + 1] as usize);
            let len = end - start;
            if len > TILE {
                if let Some((first, ..)) = open.take() {
                    close(&mut l, first);
                }
                let acc = l.acc_row.len() as i32;
                l.acc_row.push(r as i32);
                l.acc_pieces.push(len.div_ceil(PIECE) as i32);
                for s in (start..end).step_by(PIECE) {
                    l.tile_row.push(r as i32);
                    l.tile_nnz.push(s as i32);
                    l.tile_acc.push(acc);
                }
                continue;
            }
            open = match open {
                Some((first, rows, nnz)) if nnz + len <= TILE && rows < TILE_ROWS => {
                    Some((first, rows + 1, nnz + len))
                }
                other => {
                    if let Some((first, ..)) = other {
                        close(&mut l, first);
                    }
                    Some((r, 1, len))
                }
            };
        }
        if let Some((first, ..)) = open {
            close(&mut l, first);
        }
        l.tile_row.push(csr.rows() as i32);
        l.tile_nnz.push(csr.nnz() as i32);
        l
    }

    /// Number of tiles.
    pub fn tiles(&self) -> usize {
        self.tile_acc.len()
    }

    /// The device `meta` array (see the module docs).
    pub fn meta(&self) -> Vec<i32> {
        let n = self.tiles();
        let mut m = Vec::with_capacity(2 + 3 * n + 2 + 2 * self.acc_row.len());
        m.push(n.min(i32::MAX as usize) as i32);
        m.push(self.acc_row.len() as i32);
        m.extend(&self.tile_row);
        m.extend(&self.tile_nnz);
        m.extend(&self.tile_acc);
        m.extend(&self.acc_row);
        m.extend(&self.acc_pieces);
        m
    }
}

#[cfg(all(test, feature = "tools"))]
mod tests {
    use super::*;
    use crate::synth;

    /// Every tile obeys the limits and the tiles partition rows and nonzeros.
    fn check(a: &Csr) {
        let l = TiledLayout::build(a);
        let indptr = a.indptr();
        let n = l.tiles();
        assert_eq!(l.tile_row.len(), n + 1);
        assert_eq!(l.tile_nnz.len(), n + 1);
        assert_eq!(l.tile_row[0], 0);
        assert_eq!(l.tile_nnz[0], 0);
        assert_eq!(l.tile_row[n] as usize, a.rows());
        assert_eq!(l.tile_nnz[n] as usize, a.nnz());
        let mut pieces = vec![0i32; l.acc_row.len()];
        for t in 0..n {
            let (r0, r1) = (l.tile_row[t] as usize, l.tile_row[t + 1] as usize);
            let (k0, k1) = (l.tile_nnz[t] as usize, l.tile_nnz[t + 1] as usize);
            assert!(k1 > k0 || l.tile_acc[t] < 0, "piece tile {t} is empty");
            if l.tile_acc[t] >= 0 {
                assert!(k1 - k0 <= PIECE, "piece {t} has {} nonzeros", k1 - k0);
                let acc = l.tile_acc[t] as usize;
                let r = l.acc_row[acc] as usize;
                assert_eq!(r0, r);
                assert!(k0 >= indptr[r] as usize && k1 <= indptr[r + 1] as usize);
                pieces[acc] += 1;
            } else {
                assert!(k1 - k0 <= TILE, "tile {t} has {} nonzeros", k1 - k0);
                assert!(r1 > r0 && r1 - r0 <= TILE_ROWS, "tile {t}");
                assert_eq!(k0, indptr[r0] as usize);
                assert_eq!(k1, indptr[r1] as usize);
                // Greedy: the next row would not have fitted.
                if t + 1 < n && l.tile_acc[t + 1] < 0 {
                    let next = (indptr[r1 + 1] - indptr[r1]) as usize;
                    assert!(k1 - k0 + next > TILE || r1 - r0 == TILE_ROWS, "tile {t}");
                }
            }
        }
        assert_eq!(pieces, l.acc_pieces);
        for &r in &l.acc_row {
            assert!((indptr[r as usize + 1] - indptr[r as usize]) as usize > TILE);
        }
        let m = l.meta();
        assert_eq!(m.len(), 2 + 3 * n + 2 + 2 * l.acc_row.len());
        assert_eq!(m[0] as usize, n);
    }

    #[test]
    fn tiles_partition_every_shape() {
        check(&synth::uniform(5000, 5000, 12.0, 1).unwrap());
        check(&synth::power_law(20_000, 8.0, 1.8, 3).unwrap());
        check(&synth::stencil(&[30, 30], 5).unwrap());
        check(&synth::uniform(50, 20_000, 3000.0, 2).unwrap());
        // Empty rows and an empty matrix.
        let t = vec![(3u32, 1u32, 1.0), (3000, 2, 2.0)];
        check(&Csr::from_triplets(5000, 10, &t).unwrap());
        check(&Csr::from_triplets(7, 7, &[]).unwrap());
    }
}
