//! Pure-Rust inference against the tch forward pass on fixed inputs.
#![cfg(feature = "train")]

use sparserl_policies::LearnedPolicy;
use sparserl_policies::dataset::Dataset;
use sparserl_policies::net::{INPUTS, VARIANT_ENCODING, encode_variant};
use sparserl_policies::train::{Net, TrainConfig, export};
use sparserl_rt::Features;
use sparserl_rt::ValueType;
use tch::Tensor;

fn max_diff(rust: &[f64], torch: &[f32]) -> f64 {
    assert_eq!(rust.len(), torch.len());
    rust.iter()
        .zip(torch)
        .map(|(a, b)| (a - *b as f64).abs())
        .fold(0.0, f64::max)
}

#[test]
fn rust_inference_matches_tch() {
    tch::manual_seed(11);
    let mut net = Net::new(24, 16);
    net.cost_mean = 6.5;
    net.cost_std = 1.3;
    let ds = sparserl_policies::synthetic::dataset(5, 2);
    let mean: Vec<f64> = (0..18).map(|j| 0.3 * j as f64 - 1.0).collect();
    let std: Vec<f64> = (0..18).map(|j| 0.5 + 0.1 * j as f64).collect();
    let meta = Dataset {
        matrices: Vec::new(),
        ..ds.clone()
    };
    let file = export(&net, mean, std, &meta, &TrainConfig::default());
    let policy = LearnedPolicy::from_json(&serde_json::to_string(&file).unwrap()).unwrap();
    let space = sparserl_policies::net::policy_space();
    let venc: Vec<f32> = space.iter().flat_map(encode_variant).collect();
    let venc = Tensor::from_slice(&venc).view([space.len() as i64, VARIANT_ENCODING as i64]);
    let mut worst: f64 = 0.0;
    for rec in &ds.matrices {
        let f = Features::from_slice(&rec.features);
        let value = rec.value;
        let x64 = policy.input(&f, value);
        let x32: Vec<f32> = x64.iter().map(|&v| v as f32).collect();
        let x = Tensor::from_slice(&x32).view([1, INPUTS as i64]);
        let rust = policy.head_probs(&f, value);
        let torch = tch::no_grad(|| net.head_log_probs(&x));
        let t = |t: &Tensor| -> Vec<f32> { Vec::try_from(&t.exp().flatten(0, -1)).unwrap() };
        worst = worst.max(max_diff(&rust.strategy, &t(&torch.strategy)));
        for (r, c) in rust.conditioned.iter().zip(&torch.conditioned) {
            worst = worst.max(max_diff(&r.block, &t(&c[0])));
            worst = worst.max(max_diff(&r.lanes, &t(&c[1])));
            worst = worst.max(max_diff(&r.items, &t(&c[2])));
            worst = worst.max(max_diff(&r.unroll, &t(&c[3])));
            worst = worst.max(max_diff(&r.ldg_x, &t(&c[4])));
        }
        let joint: Vec<f64> = policy
            .variant_probs(&f, value)
            .into_iter()
            .map(|x| x.1)
            .collect();
        let tj = tch::no_grad(|| net.joint_log_probs(&x));
        worst = worst.max(max_diff(&joint, &t(&tj)));
        let rust_cost: Vec<f64> = space
            .iter()
            .map(|v| policy.predicted_ln_gbs(&f, value, v))
            .collect();
        let xr = x.expand([space.len() as i64, INPUTS as i64], false);
        let tc: Vec<f32> = tch::no_grad(|| Vec::try_from(&net.cost_ln_gbs(&xr, &venc)).unwrap());
        worst = worst.max(max_diff(&rust_cost, &tc));
        assert!(matches!(value, ValueType::F32 | ValueType::F64));
    }
    assert!(worst <= 1e-5, "max abs diff {worst:e}");
    eprintln!("max abs diff rust vs tch: {worst:e}");
}
