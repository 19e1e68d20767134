//! Optional per-kernel keys.

use super::*;

#[test]
fn reorder_key_restricts_the_numberings() {
    use sparserl_rt::reorder::Reorder;
    let base = with_pattern("kind = \"uniform\", rows = 100, cols = 100, avg-degree = 4");
    let d = parse(&base).unwrap();
    assert_eq!(d.kernels[0].reorder, None);
    assert_eq!(d.kernels[0].allowed_reorders(), Reorder::ALL.to_vec());
    let auto_json = d.kernels[0].canonical_json();
    assert!(!auto_json.contains("reorder"), "{auto_json}");
    for (value, want) in [
        ("auto", None),
        ("none", Some(Reorder::None)),
        ("rcm", Some(Reorder::Rcm)),
        ("degree", Some(Reorder::Degree)),
    ] {
        let d = parse(&format!("{base}reorder = \"{value}\"\n")).unwrap();
        assert_eq!(d.kernels[0].reorder, want, "{value}");
        if let Some(r) = want {
            assert_eq!(d.kernels[0].allowed_reorders(), vec![r]);
            // A restriction changes what is tuned: the fingerprint differs.
            assert_ne!(d.kernels[0].canonical_json(), auto_json);
        } else {
            assert_eq!(d.kernels[0].canonical_json(), auto_json);
        }
    }
    fails(
        &format!("{base}reorder = \"metis\"\n"),
        "package.metadata.sparserl.kernel[0].reorder",
        &["\"metis\"", "\"auto\"", "\"rcm\"", "\"degree\""],
    );
    fails(
        &format!("{base}reorder = 3\n"),
        "package.metadata.sparserl.kernel[0].reorder",
        &["integer"],
    );
}
