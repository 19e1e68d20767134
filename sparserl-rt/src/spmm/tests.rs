use super::*;
use crate::dense::DenseLayout;
use crate::variant::ValueType;
use std::collections::HashSet;

const WIDTHS: [usize; 8] = [1, 3, 5, 16, 32, 64, 128, 257];

#[test]
fn every_point_of_the_space_is_valid_and_round_trips() {
    for n in WIDTHS {
        for layout in DenseLayout::ALL {
            let space = spmm_space(n, layout);
            assert!(space.len() >= 6, "n={n} {layout}: {}", space.len());
            let mut ids = HashSet::new();
            for v in &space {
                v.validate_for(layout).unwrap();
                assert_eq!(*v, v.canonical());
                assert!(ids.insert(v.id()), "duplicate {}", v.id());
                assert_eq!(SpmmVariant::parse(&v.id()), Ok(*v));
                assert_eq!(v.id().parse::<SpmmVariant>(), Ok(*v));
                let json = serde_json::to_string(v).unwrap();
                assert_eq!(serde_json::from_str::<SpmmVariant>(&json).unwrap(), *v);
            }
            for s in SpmmStrategy::ALL {
                assert!(
                    space.iter().any(|v| v.strategy == s),
                    "n={n} {layout} lacks {s:?}"
                );
            }
        }
    }
}

#[test]
fn fallback_is_valid_for_every_layout() {
    for layout in DenseLayout::ALL {
        SpmmVariant::FALLBACK.validate_for(layout).unwrap();
    }
    assert_eq!(SpmmVariant::FALLBACK.chunk(), 32);
}

#[test]
fn bad_ids_and_parameters_are_errors() {
    for bad in [
        "",
        "row-wrap.b256.g8.v1.c1.u1",
        "row-warp.b256.g3.v1.c1.u1",
        "row-warp.b256.g8.v8.c1.u1",
        "row-warp.b100.g8.v1.c1.u1",
        "col-tile.b128.g1.k3.u1",
        "row-warp.b256.g8.v1.c1.u1.zz",
        "row-warp.b256.g8.vx.c1.u1",
        // Not canonical: order and ignored fields.
        "row-warp.b256.v1.g8.c1.u1",
        "col-tile.b128.g1.k4.v2.u1",
    ] {
        assert!(SpmmVariant::parse(bad).is_err(), "{bad}");
    }
    let v = SpmmVariant {
        vec: 4,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    assert!(v.validate_for(DenseLayout::RowMajor).is_ok());
    assert!(v.validate_for(DenseLayout::ColMajor).is_err());
    let v = SpmmVariant {
        items: 0,
        ..SpmmVariant::FALLBACK
    };
    assert!(v.validate().is_err());
}

#[test]
fn entry_names_are_identifiers_and_distinct() {
    let mut names = HashSet::new();
    for layout in DenseLayout::ALL {
        for v in spmm_space(64, layout) {
            for t in ValueType::ALL {
                for w in [None, Some(64)] {
                    for e in [None, Some(SpmmEpilogue::BiasRelu)] {
                        let name = v.entry(t, layout, w, e);
                        assert!(
                            name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                                && !name.contains("__"),
                            "{name}"
                        );
                        assert!(names.insert(name.clone()), "{name}");
                    }
                }
            }
        }
    }
    assert_eq!(
        SpmmVariant::FALLBACK.entry(ValueType::F32, DenseLayout::RowMajor, Some(16), None),
        "sparserl_spmm_nnz_split_b256_i8_v1_c1_u1_ldg_rm_f32_n16"
    );
}

#[test]
fn grids_cover_the_work_and_stay_in_range() {
    let v = SpmmVariant {
        group: 8,
        vec: 4,
        coarsen: 1,
        ..SpmmVariant::of(SpmmStrategy::RowWarp)
    };
    // 1000 rows x 2 chunks of 32 columns x 8 lanes / 256 threads.
    assert_eq!(v.grid((1000, 10, 5000, 64)), 63);
    assert_eq!(v.grid((0, 10, 0, 64)), 1);
    let f = SpmmVariant::FALLBACK;
    // ceil(5000 / 256) ranges x 3 chunks x 32 lanes / 256.
    assert_eq!(f.grid((1000, 10, 5000, 65)), 8);
    assert_eq!(f.grid((1000, 10, 0, 65)), 1);
    assert_eq!(
        f.grid((usize::MAX / 4, 1, usize::MAX / 4, 1 << 20)),
        i32::MAX as u32
    );
    assert_eq!(f.pass_grid(1000), 125);
}

#[test]
fn compulsory_bytes_formula() {
    // nnz (v + 4) + (rows + 1) 4 + (cols + rows) n v.
    assert_eq!(spmm_bytes(2, 3, 4, 5, 4), 4 * 8 + 3 * 4 + 5 * 5 * 4);
    assert_eq!(spmm_bytes(2, 3, 4, 1, 8), 4 * 12 + 12 + 5 * 8);
}

#[test]
fn epilogues_parse_their_spelling() {
    assert_eq!(
        SpmmEpilogue::parse("bias-relu"),
        Some(SpmmEpilogue::BiasRelu)
    );
    assert_eq!(SpmmEpilogue::parse("relu"), None);
    assert_eq!(
        serde_json::to_string(&SpmmEpilogue::BiasRelu).unwrap(),
        "\"bias-relu\""
    );
}
