use super::*;
use std::collections::BTreeSet;

#[test]
fn every_family_builds_near_its_target_size_with_unique_names_and_provenance() {
    let plan = corpus(1, true);
    let names: BTreeSet<_> = plan.iter().map(|m| m.name.clone()).collect();
    assert_eq!(names.len(), plan.len());
    let classes: BTreeSet<_> = plan.iter().map(|m| m.class.as_str()).collect();
    assert_eq!(classes.len(), FAMILIES.len() + LATER_FAMILIES.len());
    // Small to large: the time guard trims the large ones first.
    assert!(plan.windows(2).all(|w| w[0].tier <= w[1].tier));
    assert!(plan.iter().any(|m| m.value == ValueType::F64));
    for m in &plan {
        let a = m.build().unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let (lo, hi) = TIER_NNZ[m.tier];
        let nnz = a.nnz() as f64;
        // Within a factor 4 of the tier's range (sizes are divided by 16).
        assert!(
            nnz > lo / 64.0 && nnz < hi / 4.0,
            "{}: {nnz} nonzeros",
            m.name
        );
        let Provenance::Generated {
            generator,
            params,
            seed,
        } = m.provenance()
        else {
            panic!("{}: not generated", m.name)
        };
        assert_eq!(seed, m.seed);
        assert!(
            m.name.starts_with(&format!("fam-{generator}-{seed}-")),
            "{}",
            m.name
        );
        assert!(
            params
                .as_object()
                .is_some_and(|o| !o.is_empty() && !o.contains_key("generator"))
        );
    }
}

#[test]
fn generators_are_deterministic_and_seeds_matter() {
    let g = Gen::Rmat {
        scale: 10,
        edge_factor: 8,
        a: 0.57,
        b: 0.19,
        c: 0.19,
        shuffled: true,
    };
    assert_eq!(g.build(3).unwrap(), g.build(3).unwrap());
    assert_ne!(g.build(3).unwrap(), g.build(4).unwrap());
    let k = Gen::Knn {
        points: 2000,
        dim: 2,
        k: 6,
        shuffled: false,
    };
    let a = k.build(0).unwrap();
    // k neighbours plus the diagonal on every row.
    assert!((0..a.rows()).all(|r| a.row_len(r) == 7), "knn rows");
    let arrow = Gen::Arrow {
        rows: 1000,
        band: 1,
        border: 2,
    };
    let a = arrow.build(0).unwrap();
    assert_eq!(a.row_len(0), 1000);
    assert_eq!(a.row_len(500), 3 + 2);
    assert!(
        Gen::Knn {
            points: 3,
            dim: 4,
            k: 8,
            shuffled: false
        }
        .build(0)
        .is_err()
    );
}

#[test]
fn the_full_corpus_spans_latency_bound_to_past_l2() {
    let plan = corpus(1, false);
    // The twelve: 2 + 2 below tier 2, 6 past L2; dense-rows: 4 + 4.
    assert_eq!(plan.len(), 12 * 4 + 6 + 8);
    assert_eq!(plan.iter().filter(|m| m.tier == 2).count(), 6);
    // Past-L2 instances are f32 (one value type keeps the run short).
    assert!(
        plan.iter()
            .filter(|m| m.tier == 2)
            .all(|m| m.value == ValueType::F32)
    );
}

#[test]
fn later_families_leave_the_committed_instances_unchanged() {
    // Every record of the committed families dataset (seed 1) is planned by
    // today's corpus under its name, with the same generator, parameters
    // and seed: families added later draw after the original twelve.
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../policies/data/h200-families5.json.gz");
    let data = sparserl_policies::dataset::Dataset::read(&path).expect("committed dataset");
    let plan = corpus(1, false);
    assert!(!data.matrices.is_empty());
    for rec in &data.matrices {
        let m = plan
            .iter()
            .find(|m| m.name == rec.name)
            .unwrap_or_else(|| panic!("{} not planned", rec.name));
        assert_eq!(Some(m.provenance()), rec.provenance, "{}", rec.name);
        assert_eq!(m.class, rec.class);
    }
    let later: Vec<_> = plan.iter().filter(|m| m.class == "dense-rows").collect();
    assert_eq!(later.len(), 8);
    assert!(later.iter().any(|m| m.value == ValueType::F64));
}

#[test]
fn dense_rows_are_distinct_columns_near_the_density() {
    let g = Gen::DenseRows {
        rows: 300,
        cols: 500,
        density: 0.2,
        row_cv: 0.0,
    };
    let a = g.build(9).unwrap();
    assert_eq!((a.rows(), a.cols()), (300, 500));
    // cv 0: every row holds round(0.2 * 500) = 100 distinct columns.
    for r in 0..300 {
        let cols = &a.indices()[a.indptr()[r] as usize..a.indptr()[r + 1] as usize];
        assert_eq!(cols.len(), 100, "row {r}");
        assert!(cols.windows(2).all(|w| w[0] < w[1]), "row {r}");
    }
}
