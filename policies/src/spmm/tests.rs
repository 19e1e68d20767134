//! Tests of the SpMM prior and template rule.

use super::*;

fn features(rows: f64, mean: f64, p90: f64, p99: f64, max: f64) -> Features {
    Features {
        rows,
        cols: rows,
        nnz: rows * mean,
        mean_row: mean,
        p50_row: mean.min(p90),
        p90_row: p90,
        p99_row: p99,
        max_row: max,
        ..Features::default()
    }
}

/// A regular matrix: every row 16 nonzeros.
fn regular() -> Features {
    features(1e6, 16.0, 16.0, 16.0, 16.0)
}

/// A power-law graph with hub rows of 50k nonzeros.
fn power_law() -> Features {
    features(1e6, 16.0, 30.0, 200.0, 50_000.0)
}

#[test]
fn the_prior_ranks_the_whole_space() {
    for layout in DenseLayout::ALL {
        for n in [1, 3, 16, 32, 64, 100, 128, 256] {
            let mut ranked = spmm_prior(&power_law(), n, layout);
            let mut space = spmm_space(n, layout);
            assert!(!ranked.is_empty());
            assert_eq!(ranked.len(), space.len(), "n = {n} {layout:?}");
            ranked.sort();
            space.sort();
            assert_eq!(ranked, space, "n = {n} {layout:?}");
        }
    }
}

#[test]
fn hub_rows_go_to_the_nnz_balanced_family_or_split_rows() {
    // One warp per hub row would serialise 50k nonzeros: the first pick
    // spreads it (nnz-split ranges, or a row split over groups), and
    // nnz-split is among the first 8 the search measures.
    for n in [16, 64, 128, 256] {
        let ranked = spmm_prior(&power_law(), n, DenseLayout::RowMajor);
        let best = ranked[0];
        let spread = best.strategy == SpmmStrategy::NnzSplit
            || (best.strategy == SpmmStrategy::RowWarp && best.split > 1);
        assert!(spread, "n = {n}: {best}");
        assert!(
            ranked[..8]
                .iter()
                .any(|v| v.strategy == SpmmStrategy::NnzSplit),
            "n = {n}: {:?}",
            &ranked[..8]
        );
    }
}

#[test]
fn regular_rows_take_row_mapped_kernels_with_vector_loads() {
    let best = spmm_prior(&regular(), 128, DenseLayout::RowMajor)[0];
    assert_ne!(best.strategy, SpmmStrategy::NnzSplit, "{best}");
    assert!(best.vec >= 2, "{best}");
    // The chosen chunk covers the width without idle lanes.
    let chunk = best.chunk() as usize;
    assert_eq!(128 % chunk, 0, "{best}");
}

#[test]
fn col_major_prefers_lanes_over_rows() {
    let best = spmm_prior(&regular(), 64, DenseLayout::ColMajor)[0];
    assert_eq!(best.strategy, SpmmStrategy::ColTile, "{best}");
}

#[test]
fn col_major_rows_with_local_columns_take_a_thread_per_row_at_every_width() {
    // A road network: short rows, neighbouring rows' columns close (0.2
    // distinct 128-byte segments per nonzero, as road_NW).
    let road = Features {
        x_segments_per_nnz: 0.2,
        ..features(1.2e6, 2.4, 3.0, 4.0, 9.0)
    };
    // (Among the kernels that read column-major X directly: the transposed
    // path is ranked by its own estimate.)
    let direct = |n| {
        spmm_prior(&road, n, DenseLayout::ColMajor)
            .into_iter()
            .find(|v| !v.trans)
            .unwrap()
    };
    for n in [16, 64, 128, 256] {
        let best = direct(n);
        assert_eq!(best.strategy, SpmmStrategy::ColTile, "n = {n}: {best}");
        assert_eq!(best.group, 1, "n = {n}: {best}");
    }
    // Lanes over the columns of a row fetch a sector per value.
    let rw = spmm_template_rule(256, DenseLayout::ColMajor);
    let ct = direct(256);
    let score = |v| spmm_prior_score(&v, &road, ValueType::F32, 256, DenseLayout::ColMajor);
    assert!(score(ct) > score(rw), "{} against {}", score(ct), score(rw));
}

#[test]
fn the_transposed_path_costs_its_transposes() {
    // Its estimate is the row-major variant's, less the two passes over
    // the dense matrices and their launches: below the row-major score.
    let t = SpmmVariant::parse("row-warp.b256.g32.v4.c1.u1.ldg.t").unwrap();
    let rm = SpmmVariant { trans: false, ..t };
    for (f, n) in [(regular(), 64), (features(2e3, 8.0, 8.0, 12.0, 20.0), 64)] {
        let cm = spmm_prior_score(&t, &f, ValueType::F32, n, DenseLayout::ColMajor);
        let r = spmm_prior_score(&rm, &f, ValueType::F32, n, DenseLayout::RowMajor);
        assert!(cm < r && cm > 0.0, "{cm} against {r}");
    }
}

#[test]
fn scores_are_fractions_and_the_value_type_counts() {
    let f = power_law();
    for v in spmm_space(64, DenseLayout::RowMajor) {
        for value in [ValueType::F32, ValueType::F64] {
            let s = spmm_prior_score(&v, &f, value, 64, DenseLayout::RowMajor);
            assert!(s > 0.0 && s <= 1.0, "{v}: {s}");
        }
    }
    // Deterministic.
    assert_eq!(
        spmm_prior(&f, 64, DenseLayout::RowMajor),
        spmm_prior(&f, 64, DenseLayout::RowMajor)
    );
}

#[test]
fn the_template_rule_is_a_point_of_the_space() {
    for layout in DenseLayout::ALL {
        for n in [1, 2, 3, 8, 16, 31, 32, 64, 100, 128, 256, 4096] {
            let t = spmm_template_rule(n, layout);
            assert!(t.validate_for(layout).is_ok(), "{t}");
            assert!(
                spmm_space(n, layout).contains(&t),
                "n = {n} {layout:?}: {t} not in the space"
            );
            assert!(t.chunk() as usize <= n.max(1).next_power_of_two(), "{t}");
        }
    }
}

#[test]
fn small_short_row_matrices_avoid_the_serial_range_walk() {
    // A power-network-like matrix (1138 rows, 3.6 nonzeros per row, longest
    // row 18): latency-bound, where a nonzero range's stream walks about nine
    // rows one dependent row-pointer load at a time. Measured on an H200
    // (docs/benchmarks/runs/spmm/0d8e91b, 1138_bus at N = 16): nnz-split
    // 14 us, col-tile 2.6-3.0 us.
    let small = features(1138.0, 3.6, 6.0, 12.0, 18.0);
    for n in [16, 64] {
        let best = spmm_prior(&small, n, DenseLayout::RowMajor)[0];
        assert_ne!(best.strategy, SpmmStrategy::NnzSplit, "n = {n}: {best}");
    }
}
