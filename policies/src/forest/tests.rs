use super::*;

fn config(
    trees: usize,
    min_leaf: usize,
    max_features: f64,
    max_depth: usize,
    seed: u64,
) -> ForestConfig {
    ForestConfig {
        trees,
        min_leaf,
        max_features,
        max_depth,
        seed,
    }
}

fn fit_points(points: &[(Vec<f32>, f32)], cfg: &ForestConfig) -> Forest {
    let (x, y, inputs) = rows_of(points);
    Forest::fit(
        &Rows {
            x: &x,
            y: &y,
            inputs,
        },
        cfg,
    )
}

fn rows_of(points: &[(Vec<f32>, f32)]) -> (Vec<f32>, Vec<f32>, usize) {
    let inputs = points[0].0.len();
    let x = points.iter().flat_map(|p| p.0.clone()).collect();
    let y = points.iter().map(|p| p.1).collect();
    (x, y, inputs)
}

/// A step in input 1 (input 0 is noise-free but irrelevant).
fn step_data() -> Vec<(Vec<f32>, f32)> {
    (0..400)
        .map(|i| {
            let a = (i % 20) as f32;
            let b = (i / 20) as f32;
            (vec![a, b], if b < 7.0 { -1.0 } else { 2.0 })
        })
        .collect()
}

#[test]
fn a_forest_learns_a_step() {
    let cfg = config(8, 2, 1.0, 8, 1);
    let f = fit_points(&step_data(), &cfg);
    assert!(f.valid());
    assert!((f.predict(&[3.0, 2.0]) + 1.0).abs() < 1e-6);
    assert!((f.predict(&[3.0, 15.0]) - 2.0).abs() < 1e-6);
}

#[test]
fn training_is_deterministic_and_leaves_respect_min_leaf() {
    let (x, y, inputs) = rows_of(&step_data());
    let rows = Rows {
        x: &x,
        y: &y,
        inputs,
    };
    let cfg = config(4, 50, 0.5, 32, 7);
    let a = Forest::fit(&rows, &cfg);
    assert_eq!(a, Forest::fit(&rows, &cfg));
    // 400 bootstrap rows and leaves of at least 50: at most 8 leaves.
    for t in &a.trees {
        let leaves = t.feature.iter().filter(|&&f| f == LEAF).count();
        assert!((1..=8).contains(&leaves), "{leaves} leaves");
    }
    let other = Forest::fit(&rows, &ForestConfig { seed: 8, ..cfg });
    assert_ne!(a, other);
}

#[test]
fn constant_targets_give_one_leaf() {
    let points: Vec<_> = (0..50).map(|i| (vec![i as f32], 0.5)).collect();
    let f = fit_points(&points, &DEFAULT_FOREST);
    assert!(f.trees.iter().all(|t| t.feature.len() == 1));
    assert!((f.predict(&[100.0]) - 0.5).abs() < 1e-6);
}

#[test]
fn corrupt_trees_are_invalid() {
    let cfg = config(1, 2, 1.0, 8, 1);
    let mut f = fit_points(&step_data(), &cfg);
    assert!(f.valid());
    f.trees[0].left[0] = 0;
    assert!(!f.valid(), "a cycle must be rejected");
    let mut g = fit_points(&step_data(), &cfg);
    g.inputs = 1;
    assert!(!g.valid(), "an input past the row must be rejected");
    assert!(
        !Forest {
            inputs: 2,
            trees: vec![]
        }
        .valid()
    );
}

#[test]
fn a_cautious_prediction_subtracts_the_trees_spread() {
    // Two hand-made stumps that disagree (0 and -1): mean -0.5, spread 0.5.
    let leaf = |v: f32| Tree {
        feature: vec![LEAF],
        threshold: vec![v],
        left: vec![0],
        right: vec![0],
    };
    let f = Forest {
        inputs: 1,
        trees: vec![leaf(0.0), leaf(-1.0)],
    };
    assert!((f.predict(&[0.0]) + 0.5).abs() < 1e-12);
    assert!((f.predict_cautious(&[0.0], 0.0) + 0.5).abs() < 1e-12);
    assert!((f.predict_cautious(&[0.0], 1.0) + 1.0).abs() < 1e-12);
    // Trees that agree lose nothing.
    let agree = Forest {
        inputs: 1,
        trees: vec![leaf(-0.2), leaf(-0.2)],
    };
    assert!((agree.predict_cautious(&[0.0], 1.0) + 0.2).abs() < 1e-6);
}
