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
//! Blocks take the pieces first, longest first, then the tiles of whole
//! rows in matrix order. A piece does up to eight times the work of a tile;
//! started among the last blocks (a long row near the end of the matrix) it
//! would run on alone after the rest of the grid has finished. Scheduling
//! the longest work first keeps that tail short, and the whole-row tiles,
//! still in order, keep the `x` locality of neighbouring rows. The order is
//! the storage order, so a block finds its tile without an extra dependent
//! load: the layout lists the [`TiledLayout::pieces`] pieces first, then
//! every tile in matrix order, where each piece's entry stays as a marker
//! that the block meeting it skips (`tile_acc == SKIP`).
//!
//! Device form: one `i32` array `meta = [n_tiles, n_acc, tile_row[n_tiles + 1],
//! tile_nnz[n_tiles + 1], tile_acc[n_tiles], acc_row[n_acc],
//! acc_pieces[n_acc]]`, one block per tile (grid-stride). Tile `t` with
//! `tile_acc[t] == -1` covers rows `tile_row[t] .. tile_row[t + 1]` and
//! nonzeros `tile_nnz[t] .. tile_nnz[t + 1]`; with `tile_acc[t] >= 0` it is
//! one piece of row `acc_row[tile_acc[t]]` (a row of `acc_pieces` pieces),
//! nonzeros `tile_nnz[t] .. tile_row[t]` (a piece's `tile_row` entry is its
//! end); with `tile_acc[t] == SKIP` it is a piece's place in matrix order,
//! which only keeps `tile_row` and `tile_nnz` ascending there. Plus a zeroed `f64` scratch of `2 * n_acc` slots:
//! the accumulators, then per long row a 32-bit completion counter in each
//! slot; kernels leave it zeroed. The metadata is 12 bytes per tile (about
//! 1.5% of the CSR bytes of a matrix whose tiles are full), twice that for
//! a piece.
//!
//! ```
//! use sparserl_rt::{Csr, tiled};
//! // Row 1 has 20000 nonzeros, the other rows one each.
//! let mut t: Vec<(u32, u32, f64)> = (0..100).map(|r| (r, r, 1.0)).filter(|e| e.0 != 1).collect();
//! t.extend((0..20000).map(|c| (1, c, 0.5)));
//! let a = Csr::from_triplets(100, 20000, &t).unwrap();
//! let l = tiled::TiledLayout::build(&a);
//! // The three pieces of row 1 (8192 + 8192 + 3616) first; then row 0, the
//! // places of the pieces (skipped), rows 2..100.
//! assert_eq!(l.pieces, 3);
//! assert_eq!(l.tiles(), 3 + 5);
//! assert_eq!(l.tile_acc, vec![0, 0, 0, -1, tiled::SKIP, tiled::SKIP, tiled::SKIP, -1]);
//! assert_eq!(l.acc_row, vec![1]);
//! assert_eq!(l.acc_pieces, vec![3]);
//! ```

use crate::csr::Csr;

/// Most nonzeros of one tile (one block's shared-memory product buffer).
pub const TILE: usize = 1024;

/// Most nonzeros of one piece of a row longer than [`TILE`]. A piece needs
/// no shared memory, so it can be longer than a tile: fewer block reductions
/// and atomics per row (`docs/kernel-lab-h200.md`), while a row of a million
/// nonzeros still spreads over about a hundred blocks.
pub const PIECE: usize = 8192;

/// Most rows of one tile.
pub const TILE_ROWS: usize = 1024;

/// `tile_acc` of a piece's place in matrix order: the block that meets it
/// does nothing (one of the first blocks took the piece).
pub const SKIP: i32 = -2;

/// The host form of the layout (see the module docs for the order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiledLayout {
    /// Per tile and one past the end: first row (`rows` at the end); of a
    /// piece (the first [`pieces`](Self::pieces) tiles), its end nonzero.
    pub tile_row: Vec<i32>,
    /// Per tile and one past the end: first nonzero (`nnz` at the end).
    pub tile_nnz: Vec<i32>,
    /// Per tile: index of the long row it is a piece of, -1 (whole rows),
    /// or [`SKIP`] (a piece's place in matrix order).
    pub tile_acc: Vec<i32>,
    /// The pieces listed first, longest first (ties in matrix order).
    pub pieces: usize,
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
            pieces: 0,
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
        l.pieces_first();
        l
    }

    /// Lists the pieces first, longest first, and marks their places in
    /// matrix order [`SKIP`] (see the module docs).
    fn pieces_first(&mut self) {
        let n = self.tile_acc.len();
        let len = |t: usize| self.tile_nnz[t + 1] - self.tile_nnz[t];
        let mut first: Vec<usize> = (0..n).filter(|&t| self.tile_acc[t] >= 0).collect();
        first.sort_by_key(|&t| (std::cmp::Reverse(len(t)), t));
        // In matrix order a piece ends where the next tile starts.
        let end: Vec<i32> = first.iter().map(|&t| self.tile_nnz[t + 1]).collect();
        let start: Vec<i32> = first.iter().map(|&t| self.tile_nnz[t]).collect();
        let acc: Vec<i32> = first.iter().map(|&t| self.tile_acc[t]).collect();
        for a in &mut self.tile_acc {
            if *a >= 0 {
                *a = SKIP;
            }
        }
        self.tile_row.splice(0..0, end);
        self.tile_nnz.splice(0..0, start);
        self.tile_acc.splice(0..0, acc);
        self.pieces = first.len();
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

    /// Every tile obeys the limits, the pieces come first, longest first, and
    /// the blocks that do work (pieces and whole-row tiles) take every
    /// nonzero exactly once.
    fn check(a: &Csr) {
        let l = TiledLayout::build(a);
        let indptr = a.indptr();
        let n = l.tiles();
        let p = l.pieces;
        assert_eq!(l.tile_row.len(), n + 1);
        assert_eq!(l.tile_nnz.len(), n + 1);
        // Matrix order after the pieces.
        assert_eq!(l.tile_row[p], 0);
        assert_eq!(l.tile_nnz[p], 0);
        assert_eq!(l.tile_row[n] as usize, a.rows());
        assert_eq!(l.tile_nnz[n] as usize, a.nnz());
        let mut taken = vec![0u8; a.nnz()];
        let mut pieces = vec![0i32; l.acc_row.len()];
        let mut places = Vec::new();
        for t in 0..p {
            let acc = l.tile_acc[t];
            assert!(acc >= 0, "tile {t} of the first {p} is no piece");
            let (k0, k1) = (l.tile_nnz[t] as usize, l.tile_row[t] as usize);
            assert!(k1 > k0 && k1 - k0 <= PIECE, "piece {t}: {k0}..{k1}");
            let r = l.acc_row[acc as usize] as usize;
            assert!(k0 >= indptr[r] as usize && k1 <= indptr[r + 1] as usize);
            if t > 0 {
                let prev = l.tile_row[t - 1] - l.tile_nnz[t - 1];
                assert!(prev >= (k1 - k0) as i32, "pieces not longest first");
            }
            pieces[acc as usize] += 1;
            taken[k0..k1].iter_mut().for_each(|x| *x += 1);
        }
        for t in p..n {
            let (r0, r1) = (l.tile_row[t] as usize, l.tile_row[t + 1] as usize);
            let (k0, k1) = (l.tile_nnz[t] as usize, l.tile_nnz[t + 1] as usize);
            match l.tile_acc[t] {
                SKIP => {
                    assert!(k1 > k0 && k1 - k0 <= PIECE, "place {t}");
                    assert!(l.acc_row.contains(&(r0 as i32)));
                    places.push((k0, k1));
                }
                -1 => {
                    assert!(k1 - k0 <= TILE, "tile {t} has {} nonzeros", k1 - k0);
                    assert!(r1 > r0 && r1 - r0 <= TILE_ROWS, "tile {t}");
                    assert_eq!(k0, indptr[r0] as usize);
                    assert_eq!(k1, indptr[r1] as usize);
                    // Greedy: the next row would not have fitted.
                    if t + 1 < n && l.tile_acc[t + 1] == -1 {
                        let next = (indptr[r1 + 1] - indptr[r1]) as usize;
                        assert!(k1 - k0 + next > TILE || r1 - r0 == TILE_ROWS, "tile {t}");
                    }
                    taken[k0..k1].iter_mut().for_each(|x| *x += 1);
                }
                other => panic!("tile {t} after the pieces has tile_acc {other}"),
            }
        }
        assert!(
            taken.iter().all(|&x| x == 1),
            "a nonzero taken twice or never"
        );
        let mut firsts: Vec<(usize, usize)> = (0..p)
            .map(|t| (l.tile_nnz[t] as usize, l.tile_row[t] as usize))
            .collect();
        firsts.sort_unstable();
        assert_eq!(firsts, places, "the pieces are not their places");
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
        // Long rows of several pieces, one of them the last row.
        let mut t: Vec<(u32, u32, f64)> = (0..3000u32)
            .flat_map(|r| (0..3).map(move |j| (r, (r * 7 + j) % 30_000, 1.0)))
            .collect();
        t.extend((0..20_000).map(|c| (5, c, 1.0)));
        t.extend((0..9000).map(|c| (2999, c + 100, 1.0)));
        t.extend((0..1500).map(|c| (1000, c, 1.0)));
        let a = Csr::from_triplets(3000, 30_000, &t).unwrap();
        check(&a);
        let l = TiledLayout::build(&a);
        assert_eq!(l.pieces, 3 + 2 + 1);
        assert_eq!(l.acc_row, vec![5, 1000, 2999]);
    }
}
