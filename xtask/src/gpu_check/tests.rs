//! Tests of `gpu_check`.

use super::*;

#[test]
fn half_row_matrix_has_a_row_with_half_the_nonzeros() {
    let m = half_row_matrix(10_000, 40_000, 3, 17, 1).unwrap();
    assert_eq!(m.rows(), 10_000);
    let longest = (0..m.rows()).max_by_key(|&r| m.row_len(r)).unwrap();
    assert_eq!(longest, 17);
    assert!(
        2 * m.row_len(17) >= m.nnz(),
        "{} of {}",
        m.row_len(17),
        m.nnz()
    );
}

#[test]
fn empty_rows_matrix_has_the_intended_empty_rows() {
    let m = empty_rows_matrix(100, 50, 2).unwrap();
    assert_eq!(m.row_len(0), 0);
    assert_eq!(m.row_len(99), 0);
    for r in 0..100usize {
        let empty = r == 0 || r == 99 || r.is_multiple_of(3);
        assert_eq!(m.row_len(r) == 0, empty, "row {r}");
    }
}

#[test]
fn edge_cases_are_valid_and_have_their_properties() {
    let cases = edge_cases().unwrap();
    let names: BTreeSet<&str> = cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names.len(), cases.len(), "names are unique");
    let get = |n: &str| &cases.iter().find(|c| c.name == n).unwrap().csr;
    for c in &cases {
        // Re-validating the arrays must succeed.
        let m = &c.csr;
        Csr::try_new(
            m.rows(),
            m.cols(),
            m.indptr().to_vec(),
            m.indices().to_vec(),
            m.values().to_vec(),
        )
        .unwrap();
        assert!(m.rows() > 0 && m.cols() > 0, "{}", c.name);
    }
    assert_eq!((get("edge-1x1").rows(), get("edge-1x1").nnz()), (1, 1));
    assert_eq!(get("edge-1x1-nnz0").nnz(), 0);
    assert_eq!(get("edge-1000x1").cols(), 1);
    let row = get("edge-1x100000-dense-row");
    assert_eq!((row.rows(), row.nnz()), (1, 100_000));
    let nnz0 = get("edge-nnz0-500x400");
    assert_eq!((nnz0.rows(), nnz0.cols(), nnz0.nnz()), (500, 400, 0));
    let long = get("edge-row-of-70000");
    assert!((0..long.rows()).any(|r| long.row_len(r) > 65_536));
    assert_eq!(get("edge-rect-3000x700").cols(), 700);
    assert_eq!(get("edge-rect-2000x5000").rows(), 2000);
    assert_eq!(get("edge-power-law-50000").rows(), 50_000);
    assert_eq!(get("edge-stencil5-64x64").rows(), 4096);
}

#[test]
fn sanitizer_matrices_are_small() {
    let m = sanitizer_matrices().unwrap();
    assert_eq!(m.len(), 5);
    assert!(m.iter().all(|m| m.csr.nnz() < 30_000));
    // A row cut into several pieces (the tiled kernels' atomics and
    // completion tickets) and a row of one piece (written directly) run
    // under the sanitizers too.
    let pieces = |m: &TestMatrix| sparserl_rt::tiled::TiledLayout::build(&m.csr).acc_pieces;
    assert!(m.iter().any(|m| pieces(m).iter().any(|&p| p >= 2)));
    assert!(m.iter().any(|m| pieces(m).contains(&1)));
    // The layout strategies run under the sanitizers too.
    assert!(
        m.iter()
            .any(|m| sparserl_rt::dia::diagonal_offsets(&m.csr).is_some())
    );
    assert!(
        m.iter()
            .any(|m| sparserl_rt::binned::BinnedLayout::build(&m.csr).is_some())
    );
}

#[test]
fn tile_mix_cases_reach_the_warp_path_and_the_row_cap() {
    use sparserl_rt::tiled::{TILE_ROWS, TiledLayout};
    for m in [
        tile_mix_matrix(4000, 3000, 1).unwrap(),
        tile_mix_matrix(40_000, 30_000, 2).unwrap(),
    ] {
        let l = TiledLayout::build(&m);
        let indptr = m.indptr();
        let mut capped = false;
        let mut warp_row = false;
        for t in 0..l.tiles() {
            let (r0, r1) = (l.tile_row[t] as usize, l.tile_row[t + 1] as usize);
            if l.tile_acc[t] >= 0 || r1 <= r0 {
                continue;
            }
            capped |= r1 - r0 == TILE_ROWS;
            // Lanes per row of a 256-thread block (the smallest g any
            // block size >= 256 gives this tile).
            let g = (256 / (r1 - r0)).clamp(1, 32);
            let g = 1usize << g.ilog2();
            warp_row |= (r0..r1).any(|r| (indptr[r + 1] - indptr[r]) as usize > 32 * g);
        }
        assert!(capped, "no tile at the row cap");
        assert!(warp_row, "no row summed by a whole warp");
    }
}

#[test]
fn diagonal_edge_cases_have_the_layout() {
    for (r, c) in [(3000, 2500), (200, 150)] {
        let m = diagonal_matrix(r, c).unwrap();
        let offs = sparserl_rt::dia::diagonal_offsets(&m).expect("qualifies");
        assert_eq!(offs, vec![-37, -1, 0, 2, 64]);
    }
    let s = synth::stencil(&[24, 24, 24], 27).unwrap();
    assert!(sparserl_rt::dia::diagonal_offsets(&s).is_some());
}

#[test]
fn fine_variants_are_valid_new_and_bounded() {
    let core: BTreeSet<String> = core_space().iter().map(Variant::id).collect();
    let fine = fine_variants();
    assert!(fine.len() >= 16, "{}", fine.len());
    for v in &fine {
        v.validate().unwrap();
        assert!(v.block * v.min_blocks <= 512, "{v}");
        assert!(!core.contains(&v.id()), "{v} is already in the core space");
    }
    assert!(fine.iter().any(|v| v.stream_y));
    assert!(fine.iter().any(|v| v.block == 64));
    assert!(fine.iter().any(|v| v.block == 1024));
    let all = variant_list(VariantSet::All);
    let ids: BTreeSet<String> = all.iter().map(Variant::id).collect();
    assert_eq!(ids.len(), all.len());
    assert_eq!(variant_list(VariantSet::Core).len(), full_space().len());
}

#[test]
fn parses_error_summary() {
    let memcheck =
        "========= COMPUTE-SANITIZER\nsanitizer pass: done\n========= ERROR SUMMARY: 0 errors\n";
    assert_eq!(parse_error_summary(memcheck), Some(0));
    let errs = "========= Invalid __global__ read of size 4 bytes\n\
                ========= ERROR SUMMARY: 1 error\n";
    assert_eq!(parse_error_summary(errs), Some(1));
    let two = "========= ERROR SUMMARY: 3 errors\nmore\n========= ERROR SUMMARY: 12 errors\n";
    assert_eq!(parse_error_summary(two), Some(12));
    let race = "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n";
    assert_eq!(parse_error_summary(race), Some(0));
    let race = "========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)\n";
    assert_eq!(parse_error_summary(race), Some(2));
    assert_eq!(
        parse_error_summary("RACECHECK SUMMARY: 1 hazard (x y)"),
        None
    );
    assert_eq!(parse_error_summary(""), None);
    assert_eq!(parse_error_summary("ERROR SUMMARY: lots"), None);
}

#[test]
fn tail_keeps_last_lines() {
    let text: String = (0..10).map(|i| format!("{i}\n")).collect();
    assert_eq!(tail_lines(&text, 3), "7\n8\n9\n");
    assert_eq!(tail_lines("a\nb", 5), "a\nb\n");
}

#[test]
fn sample_columns_are_sorted_distinct_and_in_range() {
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for (cols, len) in [(10, 10), (10, 3), (1000, 900), (1000, 5), (5, 9)] {
        let c = sample_columns(&mut rng, cols, len);
        assert_eq!(c.len(), len.min(cols));
        assert!(c.windows(2).all(|w| w[0] < w[1]));
        assert!(c.iter().all(|&x| (x as usize) < cols));
    }
}

#[test]
fn cancellation_factor() {
    let m = Csr::from_triplets(2, 2, &[(0, 0, 1.0), (1, 1, 2.0)]).unwrap();
    assert!((cancellation(&m) - 1.0).abs() < 1e-12);
    let c = Csr::from_triplets(1, 2, &[(0, 0, 1.0), (0, 1, -1.0)]).unwrap();
    assert!(cancellation(&c) > 1.0);
    assert_eq!(cancellation(&empty_matrix(3, 3).unwrap()), 1.0);
}

#[test]
fn worse_treats_nan_as_infinite() {
    assert_eq!(worse(1.0, 2.0), 2.0);
    assert_eq!(worse(1.0, f64::NAN), f64::INFINITY);
    assert_eq!(fmt_err(f64::INFINITY), "inf");
}

#[test]
fn sanitizer_slices_cover_the_subset_once() {
    use sanitizer_slices::{slice_prefix, spmm_slices};
    assert_eq!(
        slice_prefix("row-warp.b256.g1.v1.c2.u4.ldg", 4),
        "row-warp.b256.g1.v1."
    );
    assert_eq!(
        slice_prefix("row-warp.b256.g1.v1.c2.u4.ldg", 5),
        "row-warp.b256.g1.v1.c2."
    );
    assert_eq!(slice_prefix("col-tile.b128", 4), "col-tile.");
    assert_eq!(slice_prefix("x", 4), "x.");
    let slices = spmm_slices(None, 1);
    // No prefix is a prefix of another: a variant belongs to one slice.
    for a in &slices {
        for b in &slices {
            assert!(a == b || !b.prefix.starts_with(&a.prefix), "{a:?} {b:?}");
        }
    }
    let mut points = 0;
    for layout in sparserl_rt::dense::DenseLayout::ALL {
        for &n in &spmm::SANITIZER_WIDTHS {
            for v in sparserl_rt::spmm::spmm_space(n, layout) {
                let id = v.id();
                assert_eq!(
                    slices.iter().filter(|s| id.starts_with(&s.prefix)).count(),
                    1,
                    "{id}"
                );
                points += 1;
            }
        }
    }
    assert_eq!(slices.iter().map(|s| s.points).sum::<usize>(), points);
    assert!(slices.windows(2).all(|w| w[0].points >= w[1].points));
    let ns = spmm_slices(Some("nnz-split"), 1);
    assert!(!ns.is_empty() && ns.len() < slices.len());
    assert!(ns.iter().all(|s| s.prefix.starts_with("nnz-split.")));
    // Comma-separated parts: every part must be in the id.
    let nt = spmm_slices(Some(".t,nnz-split.b256.g16"), 1);
    assert!(!nt.is_empty() && nt.len() < ns.len());
    assert!(
        nt.iter()
            .all(|s| s.prefix.starts_with("nnz-split.b256.g16."))
    );
    let t_only = spmm_slices(Some(".t"), 1);
    for s in &nt {
        let whole = t_only.iter().find(|t| t.prefix == s.prefix);
        assert_eq!(whole.map(|t| t.points), Some(s.points), "{s:?}");
    }
}

#[test]
fn large_slices_are_cut_to_their_share_of_the_processes() {
    use sanitizer_slices::spmm_slices;
    // The split points: four-part slices hold up to 22 points each, more
    // than a sixteenth of them; cut by their next parts, none does, and the
    // cut slices still hold every point once.
    let only = "row-warp,!.s4.,.s";
    let whole = spmm_slices(Some(only), 1);
    let cut = spmm_slices(Some(only), 16);
    let total: usize = whole.iter().map(|s| s.points).sum();
    assert_eq!(cut.iter().map(|s| s.points).sum::<usize>(), total);
    assert!(whole[0].points > total.div_ceil(16), "{:?}", whole[0]);
    assert!(
        cut.iter().all(|s| s.points <= total.div_ceil(16)),
        "{cut:?}"
    );
    assert!(cut.len() > whole.len());
    for a in &cut {
        assert!(a.shared, "{a:?}");
        for b in &cut {
            assert!(a == b || !b.prefix.starts_with(&a.prefix), "{a:?} {b:?}");
        }
        assert!(
            whole.iter().any(|w| a.prefix.starts_with(&w.prefix)),
            "{a:?}"
        );
    }
}

#[test]
fn variant_filters_need_every_part() {
    let id = "nnz-split.b256.g16.i1.v2.c2.u4.ldg.t";
    assert!(spmm::id_matches(id, "nnz-split"));
    assert!(spmm::id_matches(id, ".t,g16"));
    assert!(!spmm::id_matches(id, ".t,g8"));
    assert!(!spmm::id_matches(
        "row-warp.b256.g16.v2.c1.u4.ldg",
        ".t,g16"
    ));
    assert!(!spmm::id_matches(id, "nnz-split,.r,!.t"));
    assert!(spmm::id_matches(
        "nnz-split.b256.g16.r8.v2.c2.u4.ldg",
        "nnz-split,.r,!.t"
    ));
}

#[test]
fn sanitizer_slice_launches_are_read_from_the_log() {
    let log = "========= COMPUTE-SANITIZER\nsanitizer pass: spmm 704 checks passed, 0 failed\nsanitizer pass: done: 704 launches, 0 wrong results, 0 launch errors, 0 kernels not compiled\n========= ERROR SUMMARY: 0 errors\n";
    assert_eq!(sanitizer_slices::launches_in(log), Some(704));
    assert_eq!(
        sanitizer_slices::launches_in("========= COMPUTE-SANITIZER\n"),
        None
    );
}

#[test]
fn sanitizer_tools_default_to_all_three_and_keep_the_given_order() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: Args,
    }
    let parse = |a: &[&str]| {
        Cli::try_parse_from(std::iter::once("gpu-check").chain(a.iter().copied())).map(|c| c.args)
    };
    let d = parse(&[]).unwrap();
    assert_eq!(sanitizer_slices::tools(&d), SANITIZER_TOOLS.to_vec());
    let r = parse(&["--sanitizer-tools", "racecheck,memcheck"]).unwrap();
    assert_eq!(sanitizer_slices::tools(&r), vec!["racecheck", "memcheck"]);
    assert!(parse(&["--sanitizer-tools", "synccheck"]).is_err());
    // Skipping the float64 pass needs the SpMM section and its sanitizers.
    assert!(
        parse(&["--spmm-only", "--sanitizers-only"])
            .unwrap()
            .sanitizers_only
    );
    assert!(parse(&["--sanitizers-only"]).is_err());
    assert!(parse(&["--spmm-only", "--sanitizers-only", "--no-sanitizer"]).is_err());
}
