use super::*;
use std::collections::BTreeSet;

#[test]
fn every_family_builds_near_its_target_size_with_unique_names_and_provenance() {
    let plan = corpus(1, true);
    let names: BTreeSet<_> = plan.iter().map(|m| m.name.clone()).collect();
    assert_eq!(names.len(), plan.len());
    let classes: BTreeSet<_> = plan.iter().map(|m| m.class.as_str()).collect();
    assert_eq!(classes.len(), FAMILIES.len());
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
    assert_eq!(plan.len(), 12 * 4 + 6);
    assert_eq!(plan.iter().filter(|m| m.tier == 2).count(), 6);
    // Past-L2 instances are f32 (one value type keeps the run short).
    assert!(
        plan.iter()
            .filter(|m| m.tier == 2)
            .all(|m| m.value == ValueType::F32)
    );
}
