//! Property tests: every layout conversion keeps the matrix (CSR to the
//! layout and back is the identity), every renumbering is a permutation
//! that keeps the matrix's meaning, and the Matrix Market reader never
//! panics, whatever the bytes, and reads back what was written.

use proptest::prelude::*;
use sparserl_rt::Csr;
use sparserl_rt::reorder::Reorder;
use sparserl_rt::{binned, dia, narrow, sell, tiled};

/// A random CSR matrix: up to 40 x 40 with up to 400 entries, or up to 3
/// rows of 70000 columns with up to 20000 entries (so that nonzeros farther
/// than `i16::MAX` from the diagonal occur).
fn csr_strategy() -> impl Strategy<Value = Csr> {
    (1usize..40, 1usize..40, any::<bool>())
        .prop_flat_map(|(rows, cols, long)| {
            // Long: few wide rows, so that rows longer than a 1024-nonzero
            // tile, rows cut into several pieces of up to `tiled::PIECE`
            // nonzeros, and binned long rows occur.
            let (rows, cols, max) = if long {
                (rows.min(3), 70_000, 20_000)
            } else {
                (rows, cols, 400)
            };
            let entry = (0..rows as u32, 0..cols as u32, -4i32..5);
            (
                Just(rows),
                Just(cols),
                proptest::collection::vec(entry, 0..max),
            )
        })
        .prop_map(|(rows, cols, t)| {
            let t: Vec<(u32, u32, f64)> = t
                .into_iter()
                .map(|(r, c, v)| (r, c, if v == 0 { 0.5 } else { v as f64 }))
                .collect();
            Csr::from_triplets(rows, cols, &t).expect("in-range triplets")
        })
}

/// A matrix the diagonal layout must take: up to 200 rows (square, or up to
/// 3 columns more), every in-range entry of 1 to 8 diagonals within
/// a quarter of the rows of the main one (padding at most 25% per diagonal).
fn banded_strategy() -> impl Strategy<Value = Csr> {
    (4usize..200, 0i64..4)
        .prop_flat_map(|(rows, extra)| {
            let cols = (rows as i64 + extra).max(1) as usize;
            let reach = (rows / 4) as i32;
            (
                Just(rows),
                Just(cols),
                proptest::collection::btree_set(-reach..=reach, 1..9),
            )
        })
        .prop_map(|(rows, cols, offsets)| {
            let mut t = Vec::new();
            for (k, &o) in offsets.iter().enumerate() {
                for r in 0..rows as i64 {
                    let c = r + o as i64;
                    if (0..cols as i64).contains(&c) {
                        t.push((r as u32, c as u32, 1.0 + (k as f64) + (r % 5) as f64));
                    }
                }
            }
            Csr::from_triplets(rows, cols, &t).expect("in-range triplets")
        })
}

/// Diagonal layout back to dense (checking the padding is zero).
fn dia_dense(csr: &Csr, offsets: &[i32], vals: &[f64]) -> Result<Vec<f64>, TestCaseError> {
    prop_assert_eq!(vals.len(), offsets.len() * csr.rows());
    let mut back = vec![0.0; csr.rows() * csr.cols()];
    for (d, &off) in offsets.iter().enumerate() {
        for r in 0..csr.rows() {
            let c = r as i64 + off as i64;
            let v = vals[d * csr.rows() + r];
            if (0..csr.cols() as i64).contains(&c) {
                back[r * csr.cols() + c as usize] += v;
            } else {
                prop_assert_eq!(v, 0.0, "padding outside the matrix must be zero");
            }
        }
    }
    Ok(back)
}

fn dense(csr: &Csr) -> Vec<f64> {
    let mut d = vec![0.0; csr.rows() * csr.cols()];
    for r in 0..csr.rows() {
        for k in csr.indptr()[r] as usize..csr.indptr()[r + 1] as usize {
            d[r * csr.cols() + csr.indices()[k] as usize] += csr.values()[k];
        }
    }
    d
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn diagonal_layout_round_trips(csr in csr_strategy()) {
        if let Some(offsets) = dia::diagonal_offsets(&csr) {
            let vals = dia::diagonal_values(&csr, &offsets, csr.values());
            prop_assert_eq!(dia_dense(&csr, &offsets, &vals)?, dense(&csr));
        }
    }

    #[test]
    fn banded_matrices_get_the_diagonal_layout_and_round_trip(csr in banded_strategy()) {
        // At most 8 diagonals and 25% padding: the layout must be built.
        let offsets = dia::diagonal_offsets(&csr);
        prop_assert!(offsets.is_some(), "{} x {} banded, nnz {}", csr.rows(), csr.cols(), csr.nnz());
        let offsets = offsets.unwrap_or_default();
        let vals = dia::diagonal_values(&csr, &offsets, csr.values());
        prop_assert_eq!(dia_dense(&csr, &offsets, &vals)?, dense(&csr));
    }

    #[test]
    fn narrow_offsets_round_trip(csr in csr_strategy()) {
        match narrow::offsets(&csr) {
            Some(off) => {
                prop_assert_eq!(off.len(), csr.nnz());
                for r in 0..csr.rows() {
                    let (s, e) = (csr.indptr()[r] as usize, csr.indptr()[r + 1] as usize);
                    for (o, &c) in off[s..e].iter().zip(&csr.indices()[s..e]) {
                        prop_assert_eq!(r as i64 + *o as i64, c as i64);
                    }
                }
            }
            None => {
                // Only without nonzeros, or when one lies farther than i16
                // from the diagonal.
                let far = (0..csr.rows()).any(|r| {
                    (csr.indptr()[r] as usize..csr.indptr()[r + 1] as usize)
                        .any(|k| (csr.indices()[k] as i64 - r as i64).abs() > i16::MAX as i64)
                });
                prop_assert!(csr.nnz() == 0 || far);
            }
        }
    }

    #[test]
    fn tiles_cover_every_nonzero_once_in_order(csr in csr_strategy()) {
        let t = tiled::TiledLayout::build(&csr);
        let n = t.tiles();
        prop_assert_eq!(t.tile_nnz.len(), n + 1);
        prop_assert_eq!(t.tile_nnz[0], 0);
        prop_assert_eq!(t.tile_nnz[n] as usize, csr.nnz());
        prop_assert_eq!(t.tile_row[n] as usize, csr.rows());
        for i in 0..n {
            prop_assert!(t.tile_nnz[i] <= t.tile_nnz[i + 1]);
            let len = (t.tile_nnz[i + 1] - t.tile_nnz[i]) as usize;
            // A tile of whole rows fits a block's shared memory; a piece of a
            // long row may be longer.
            let cap = if t.tile_acc[i] >= 0 { tiled::PIECE } else { tiled::TILE };
            prop_assert!(len <= cap, "tile {} has {} nonzeros", i, len);
            prop_assert!(t.tile_row[i] <= t.tile_row[i + 1]);
        }
        // Every row cut into pieces is listed once, with its piece count.
        for (a, &row) in t.acc_row.iter().enumerate() {
            let pieces = t.tile_acc.iter().filter(|&&x| x == a as i32).count();
            prop_assert_eq!(pieces as i32, t.acc_pieces[a]);
            prop_assert!(row >= 0 && (row as usize) < csr.rows());
        }
    }

    #[test]
    fn sell_layout_round_trips(csr in csr_strategy()) {
        // Without the padding limit, so that every random matrix is built.
        let l = sell::SellLayout::build_with_limit(&csr, f64::INFINITY).expect("fits");
        let vals = l.values(csr.values(), 0.0).expect("the layout's own matrix");
        let mut d = vec![0.0; csr.rows() * csr.cols()];
        let mut seen = vec![false; csr.rows()];
        for (slot, &r) in l.row_of.iter().enumerate() {
            if r < 0 {
                prop_assert_eq!(l.slot_len[slot], 0);
                continue;
            }
            prop_assert!(!std::mem::replace(&mut seen[r as usize], true));
            prop_assert_eq!(l.slot_len[slot] as usize, csr.row_len(r as usize));
            let base = l.slice_ptr[slot / sell::C] as usize + slot % sell::C;
            for j in 0..l.slot_len[slot] as usize {
                let at = base + j * sell::C;
                d[r as usize * csr.cols() + l.cols[at] as usize] += vals[at];
            }
        }
        prop_assert!(seen.iter().all(|&s| s));
        prop_assert_eq!(d, dense(&csr));
        // The padding of a slice is zero and never the only copy of a value.
        let stored_nonzero = l.src.iter().filter(|&&i| i != u32::MAX).count();
        prop_assert_eq!(stored_nonzero, csr.nnz());
    }

    #[test]
    fn renumberings_are_permutations_that_keep_the_matrix(csr in csr_strategy()) {
        for r in [Reorder::Rcm, Reorder::Degree] {
            match r.permutation(&csr) {
                None => prop_assert!(csr.rows() != csr.cols()),
                Some(p) => {
                    let mut seen = vec![false; p.len()];
                    for &o in p.new_to_old() {
                        prop_assert!(!std::mem::replace(&mut seen[o as usize], true));
                    }
                    let b = p.apply(&csr).expect("square of the permutation length");
                    let (da, db, n) = (dense(&csr), dense(&b), csr.rows());
                    for i in 0..n {
                        for j in 0..n {
                            let (oi, oj) = (p.new_to_old()[i] as usize, p.new_to_old()[j] as usize);
                            prop_assert_eq!(db[i * n + j], da[oi * n + oj]);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn binned_long_rows_are_exactly_the_rows_over_the_threshold(csr in csr_strategy()) {
        let threshold = binned::long_row_threshold(&csr);
        let long: Vec<i32> = (0..csr.rows())
            .filter(|&r| (csr.indptr()[r + 1] - csr.indptr()[r]) as usize > threshold)
            .map(|r| r as i32)
            .collect();
        match binned::BinnedLayout::build(&csr) {
            Some(l) => prop_assert_eq!(l.long_rows, long),
            None => prop_assert!(long.is_empty()),
        }
    }

    #[test]
    fn matrix_market_reader_never_panics_on_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let _ = sparserl_rt::mtx::read_matrix_market_from(&bytes[..], "fuzz");
    }

    #[test]
    fn matrix_market_reader_never_panics_on_near_valid_files(
        header in prop::sample::select(vec![
            "%%MatrixMarket matrix coordinate real general",
            "%%MatrixMarket matrix coordinate pattern symmetric",
            "%%MatrixMarket matrix coordinate integer skew-symmetric",
            "%%MatrixMarket matrix array real general",
            "%%MatrixMarket matrix coordinate complex general",
            "%%matrixmarket MATRIX Coordinate Real General",
            "",
        ]),
        size in (0i64..5, 0i64..5, -1i64..8),
        lines in proptest::collection::vec((-1i64..6, -1i64..6, -3.0f64..3.0, 0u8..4), 0..8),
    ) {
        let mut text = format!("{header}\n% comment\n{} {} {}\n", size.0, size.1, size.2);
        for (r, c, v, form) in lines {
            match form {
                0 => text += &format!("{r} {c} {v}\n"),
                1 => text += &format!("{r} {c}\n"),
                2 => text += &format!("{r} {c} {v} {v}\n"),
                _ => text += &format!("{r}\n"),
            }
        }
        let _ = sparserl_rt::mtx::read_matrix_market_from(text.as_bytes(), "fuzz");
    }

    #[test]
    fn matrix_market_round_trip(csr in csr_strategy()) {
        let mut text = format!(
            "%%MatrixMarket matrix coordinate real general\n{} {} {}\n",
            csr.rows(), csr.cols(), csr.nnz()
        );
        for r in 0..csr.rows() {
            for k in csr.indptr()[r] as usize..csr.indptr()[r + 1] as usize {
                text += &format!("{} {} {:?}\n", r + 1, csr.indices()[k] + 1, csr.values()[k]);
            }
        }
        let back = sparserl_rt::mtx::read_matrix_market_from(text.as_bytes(), "round-trip")
            .expect("a file we wrote reads back");
        prop_assert_eq!(dense(&back), dense(&csr));
    }
}
