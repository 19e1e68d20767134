use super::*;

/// A 2-D 5-point grid numbered by a fixed scramble.
fn scrambled_grid(nx: usize) -> (Csr, Vec<u32>) {
    let n = nx * nx;
    // A deterministic scramble: multiply by a unit modulo n.
    let label = |v: usize| ((v * 7919) % n) as u32;
    let mut t = Vec::new();
    for i in 0..nx {
        for j in 0..nx {
            let v = i * nx + j;
            t.push((label(v), label(v), 4.0));
            if i + 1 < nx {
                t.push((label(v), label(v + nx), -1.0));
                t.push((label(v + nx), label(v), -1.0));
            }
            if j + 1 < nx {
                t.push((label(v), label(v + 1), -1.0));
                t.push((label(v + 1), label(v), -1.0));
            }
        }
    }
    let labels = (0..n).map(label).collect();
    (Csr::from_triplets(n, n, &t).unwrap(), labels)
}

fn bandwidth(a: &Csr) -> usize {
    (0..a.rows())
        .flat_map(|r| {
            a.indices()[a.indptr()[r] as usize..a.indptr()[r + 1] as usize]
                .iter()
                .map(move |&c| (c as i64 - r as i64).unsigned_abs() as usize)
        })
        .max()
        .unwrap_or(0)
}

fn is_permutation(p: &Permutation) -> bool {
    let mut seen = vec![false; p.len()];
    p.new_to_old()
        .iter()
        .all(|&o| !std::mem::replace(&mut seen[o as usize], true))
        && (0..p.len()).all(|i| p.old_to_new()[p.new_to_old()[i] as usize] as usize == i)
}

#[test]
fn every_order_is_a_permutation_that_keeps_the_product() {
    let (a, _) = scrambled_grid(23);
    let x: Vec<f64> = (0..a.cols()).map(|i| (i as f64 * 0.37).sin()).collect();
    let y = a.spmv_f64(&x).unwrap();
    for r in [Reorder::Rcm, Reorder::Degree] {
        let p = r.permutation(&a).unwrap();
        assert!(is_permutation(&p), "{r}");
        let b = p.apply(&a).unwrap();
        assert_eq!(b.nnz(), a.nnz());
        let yb = b.spmv_f64(&p.to_new(&x)).unwrap();
        let back = p.to_old(&yb);
        for (u, v) in back.iter().zip(&y) {
            assert!((u - v).abs() < 1e-12, "{r}: {u} vs {v}");
        }
    }
    assert!(Reorder::None.permutation(&a).is_none());
}

#[test]
fn rcm_recovers_a_narrow_band() {
    let nx = 40;
    let (a, _) = scrambled_grid(nx);
    assert!(
        bandwidth(&a) > a.rows() / 2,
        "the scramble must destroy the band"
    );
    let b = Reorder::Rcm.permutation(&a).unwrap().apply(&a).unwrap();
    // Cuthill-McKee on a square grid sweeps anti-diagonals: bandwidth <= 2 nx.
    assert!(bandwidth(&b) <= 2 * nx, "bandwidth {}", bandwidth(&b));
}

#[test]
fn rcm_covers_disconnected_components_and_isolated_vertices() {
    // Two paths and an isolated vertex (a row with only its diagonal).
    let t = [
        (0, 3, 1.0),
        (3, 0, 1.0),
        (3, 5, 1.0),
        (5, 3, 1.0),
        (1, 4, 1.0),
        (4, 1, 1.0),
        (2, 2, 1.0),
    ];
    let a = Csr::from_triplets(6, 6, &t).unwrap();
    let p = Reorder::Rcm.permutation(&a).unwrap();
    assert!(is_permutation(&p));
    assert!(bandwidth(&p.apply(&a).unwrap()) <= 1);
}

#[test]
fn degree_order_puts_hubs_first() {
    // A star around 5 plus a pendant edge 1-2.
    let mut t = vec![(1u32, 2u32, 1.0), (2, 1, 1.0)];
    for v in [0u32, 1, 3, 4, 6] {
        t.push((5, v, 1.0));
        t.push((v, 5, 1.0));
    }
    let a = Csr::from_triplets(7, 7, &t).unwrap();
    let p = Reorder::Degree.permutation(&a).unwrap();
    assert_eq!(p.new_to_old()[0], 5);
    assert_eq!(p.new_to_old()[1], 1, "degree 2 next, ties by index");
}

#[test]
fn unsymmetric_patterns_use_a_plus_a_transpose() {
    // Only the upper triangle of a path: RCM must still see the path.
    let t: Vec<(u32, u32, f64)> = (0..9u32)
        .map(|i| (i * 7 % 10, (i + 1) * 7 % 10, 1.0))
        .collect();
    let a = Csr::from_triplets(10, 10, &t).unwrap();
    let b = Reorder::Rcm.permutation(&a).unwrap().apply(&a).unwrap();
    assert!(bandwidth(&b) <= 1, "bandwidth {}", bandwidth(&b));
}

#[test]
fn rectangular_matrices_keep_their_numbering() {
    let a = Csr::from_triplets(2, 3, &[(0, 2, 1.0), (1, 0, 1.0)]).unwrap();
    for r in Reorder::ALL {
        assert!(r.permutation(&a).is_none());
    }
}

#[test]
fn try_from_order_rejects_non_permutations() {
    assert!(Permutation::try_from_order(vec![0, 2, 1]).is_some());
    assert!(Permutation::try_from_order(vec![0, 0, 1]).is_none());
    assert!(Permutation::try_from_order(vec![0, 3, 1]).is_none());
}

/// Host cost of the orders on a 1M-vertex power-law graph (run with
/// `cargo test --release -p sparserl-rt --features tools -- --ignored order_cost`).
#[cfg(feature = "tools")]
#[test]
#[ignore]
fn order_cost_on_a_large_graph() {
    let a = crate::synth::power_law(1_000_000, 16.0, 2.1, 7).unwrap();
    for r in [Reorder::Rcm, Reorder::Degree] {
        let t = std::time::Instant::now();
        let p = r.permutation(&a).unwrap();
        let t1 = t.elapsed();
        let b = p.apply(&a).unwrap();
        eprintln!(
            "{r}: order {:?}, apply {:?}, nnz {}",
            t1,
            t.elapsed() - t1,
            b.nnz()
        );
    }
}

#[test]
fn a_permutation_applies_only_to_matrices_of_its_size() {
    let (a, _) = scrambled_grid(5);
    let p = Reorder::Rcm.permutation(&a).unwrap();
    let (b, _) = scrambled_grid(6);
    assert!(p.apply(&b).is_none());
    let rect = Csr::from_triplets(25, 26, &[(0, 25, 1.0)]).unwrap();
    assert!(p.apply(&rect).is_none());
    // Many rows: the parallel fill agrees with the product.
    let (big, _) = scrambled_grid(120);
    let p = Reorder::Degree.permutation(&big).unwrap();
    let x: Vec<f64> = (0..big.cols()).map(|i| i as f64 % 7.0).collect();
    let y = big.spmv_f64(&x).unwrap();
    let yb = p.apply(&big).unwrap().spmv_f64(&p.to_new(&x)).unwrap();
    assert_eq!(p.to_old(&yb), y);
    // Split over threads (as large matrices are): the same matrix.
    assert_eq!(p.apply_split(&big, 1000), p.apply(&big));
}
