//! The markdown report of `eval-classes`.

use super::{Args, K, RecordRun, TARGET_TOP16, TARGET_ZERO_SHOT, shown};
use crate::common::workspace_root;
use serde_json::Value;
use std::fmt::Write as _;

fn f3(v: &Value) -> String {
    v.as_f64().map_or("-".into(), |x| format!("{x:.3}"))
}

/// `mean [min–max] ±sd`.
pub(super) fn fmt_spread(s: &Value) -> String {
    if s.is_null() {
        return "-".into();
    }
    format!(
        "{} [{}–{}] ±{}",
        f3(&s["mean"]),
        f3(&s["min"]),
        f3(&s["max"]),
        f3(&s["sd"])
    )
}

fn yes(b: &Value) -> &'static str {
    if b == true { "**yes**" } else { "no" }
}

pub(super) fn markdown(report: &Value, runs: &[Vec<RecordRun>], args: &Args) -> String {
    let src = &report["sources"];
    let p = &src["policy"];
    let n = runs.len();
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(
        w,
        "# Learned policy per structure class, {n} measurement runs (H200)\n"
    );
    let _ = writeln!(
        w,
        "Every GB/s behind these numbers is a **measurement** read from the recorded runs below \
         (`cargo xtask eval-classes`, offline); nothing is estimated. Fractions are of each \
         record's oracle: the best correct GB/s of the same run's sweep (every applicable \
         variant of the design space, in the matrix's given numbering).\n"
    );
    let _ = writeln!(w, "## Inputs\n");
    let _ = writeln!(
        w,
        "- policy `{}` (round {}, sha256 `{}`), trained on dataset sha256 `{}`; held out of \
         training: classes {}; matrices {}.",
        p["file"].as_str().unwrap_or("?"),
        p["round"],
        p["sha256"].as_str().unwrap_or("?"),
        p["dataset_sha256"].as_str().unwrap_or("?"),
        join(&p["holdout_classes"]),
        join(&p["holdout_names"])
    );
    for d in src["training"]["datasets"].as_array().into_iter().flatten() {
        let _ = writeln!(
            w,
            "- training {} `{}` (sha256 `{}`)",
            d["role"].as_str().unwrap_or("?"),
            d["file"].as_str().unwrap_or("?"),
            d["sha256"].as_str().unwrap_or("?")
        );
    }
    for r in src["runs"].as_array().into_iter().flatten() {
        for (kind, label) in [("sweep", "oracle sweep"), ("bench", "benchmark report")] {
            let x = &r[kind];
            let _ = writeln!(
                w,
                "- run {} {}: `{}` (sha256 `{}`; {}, {}; `{}`{})",
                r["run"],
                label,
                x["file"].as_str().unwrap_or("?"),
                x["sha256"].as_str().unwrap_or("?"),
                x["gpu"].as_str().unwrap_or("?"),
                x["date"].as_str().unwrap_or("?"),
                x["command"].as_str().unwrap_or("?"),
                x["policy"]
                    .as_str()
                    .map_or(String::new(), |s| format!("; policy `{s}`"))
            );
        }
    }
    let t = &src["training"];
    let _ = writeln!(
        w,
        "\nTraining classes ({} records after the hold-out; exact names): {}. Present in the \
         training data but held out: {}. Evaluated matrices whose name occurs in training: {}.\n",
        t["records"],
        join(&t["classes"]),
        join(&t["held_out_classes"]),
        match join(&report["matrices_in_training"]) {
            s if s.is_empty() => "none".to_string(),
            s => s,
        }
    );
    let _ = writeln!(w, "## Per class\n");
    let _ = writeln!(
        w,
        "Per run, the mean over the class's records; then over the {n} runs: mean [min–max] \
         ±sample sd. Targets (per class, mean over the runs): zero-shot >= {TARGET_ZERO_SHOT}, \
         first {K} search candidates >= {TARGET_TOP16}.\n"
    );
    let _ = writeln!(
        w,
        "| class | records | in training? | related training classes | zero-shot | top-16 | zero-shot >= {TARGET_ZERO_SHOT} | top-16 >= {TARGET_TOP16} | picks not measured | ours (search winner) | cuSPARSE |\n|---|---:|---|---|---:|---:|---|---|---:|---:|---:|"
    );
    for c in report["classes"].as_array().into_iter().flatten() {
        let s = &c["summary"];
        let related: Vec<String> = c["training"]["related"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| {
                format!(
                    "{} ({})",
                    r[0].as_str().unwrap_or("?"),
                    r[1].as_str().unwrap_or("?")
                )
            })
            .collect();
        let per_run = |k: &str| {
            s["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| r[k].to_string())
                .collect::<Vec<_>>()
                .join("/")
        };
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            c["class"].as_str().unwrap_or("?"),
            per_run("records"),
            c["training"]["label"].as_str().unwrap_or("?"),
            if related.is_empty() {
                "-".into()
            } else {
                related.join(", ")
            },
            fmt_spread(&s["stats"]["zero_shot"]),
            fmt_spread(&s["stats"]["top16"]),
            yes(&s["pass_zero_shot"]),
            yes(&s["pass_top16"]),
            per_run("zero_shot_missing"),
            fmt_spread(&s["stats"]["ours"]),
            fmt_spread(&s["stats"]["cusparse"])
        );
    }
    let ov = &report["overall"];
    for (k, label) in [
        ("all", "all records"),
        ("never_in_training", "classes never in training"),
    ] {
        let s = &ov[k];
        let _ = writeln!(
            w,
            "| *{label}* | {} | | | {} | {} | {} | {} | {} | {} | {} |",
            s["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| r["records"].to_string())
                .collect::<Vec<_>>()
                .join("/"),
            fmt_spread(&s["stats"]["zero_shot"]),
            fmt_spread(&s["stats"]["top16"]),
            yes(&s["pass_zero_shot"]),
            yes(&s["pass_top16"]),
            s["runs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| r["zero_shot_missing"].to_string())
                .collect::<Vec<_>>()
                .join("/"),
            fmt_spread(&s["stats"]["ours"]),
            fmt_spread(&s["stats"]["cusparse"])
        );
    }
    let all_pass =
        ov["classes_pass_zero_shot"] == ov["classes"] && ov["classes_pass_top16"] == ov["classes"];
    let _ = writeln!(
        w,
        "\nThe last two rows pool the records (the mean over all records of a run, then over the \
         runs). **Overall: the targets are {} per class**: zero-shot met by {} of {} classes, \
         top-16 by {} of {}.\n",
        if all_pass { "met" } else { "not met" },
        ov["classes_pass_zero_shot"],
        ov["classes"],
        ov["classes_pass_top16"],
        ov["classes"]
    );
    let _ = writeln!(w, "## Per record\n");
    let _ = writeln!(
        w,
        "Fractions of the oracle, run 1/2/3 (`x` = the pick had no correct measurement in that \
         run's sweep, counted as 0). Ours is the benchmark's search winner (its numbering in \
         brackets when it renumbers).\n"
    );
    let _ = writeln!(
        w,
        "| matrix | class | value | oracle GB/s | zero-shot pick | zero-shot | top-16 | ours | ours variant | cuSPARSE |\n|---|---|---|---:|---|---:|---:|---:|---|---:|"
    );
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in runs.iter().flatten() {
        let k = (r.class.clone(), r.matrix.clone(), r.value.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (class, matrix, value) in &keys {
        let per: Vec<Option<&RecordRun>> = runs
            .iter()
            .map(|run| {
                run.iter()
                    .find(|r| &r.matrix == matrix && &r.value == value)
            })
            .collect();
        let col = |f: &dyn Fn(&RecordRun) -> String| {
            per.iter()
                .map(|r| r.map_or("-".into(), f))
                .collect::<Vec<_>>()
                .join(" / ")
        };
        let frac = |k: &'static str| {
            move |r: &RecordRun| match (k, r.fractions[k]) {
                ("zero_shot", _) if r.zero_shot_gbs.is_none() => "x".into(),
                (_, Some(x)) => format!("{x:.3}"),
                (_, None) => "-".into(),
            }
        };
        let mut picks: Vec<String> = per
            .iter()
            .flatten()
            .map(|r| r.zero_shot_variant.clone())
            .collect();
        picks.dedup();
        let _ = writeln!(
            w,
            "| {matrix} | {class} | {value} | {} | `{}` | {} | {} | {} | {} | {} |",
            col(&|r| format!("{:.0}", r.oracle_gbs)),
            picks.join("` / `"),
            col(&frac("zero_shot")),
            col(&frac("top16")),
            col(&frac("ours")),
            col(&|r| {
                let b = r.bench.clone().unwrap_or_default();
                let v = b.ours_variant.unwrap_or("-".into());
                v.split('+').next().unwrap_or("-").to_string()
                    + &b.reorder
                        .filter(|o| o != "none")
                        .map_or(String::new(), |o| format!(" [{o}]"))
            }),
            col(&frac("cusparse"))
        );
    }
    let _ = writeln!(w, "\n## Notes\n");
    let missing: Vec<String> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, run)| {
            run.iter()
                .filter(|r| r.zero_shot_gbs.is_none())
                .map(move |r| {
                    format!(
                        "run {}: {} {} `{}` ({})",
                        i + 1,
                        r.matrix,
                        r.value,
                        r.zero_shot_variant,
                        r.zero_shot_status
                    )
                })
        })
        .collect();
    let _ = writeln!(
        w,
        "- Zero-shot picks without a correct measurement in the sweep (counted as 0): {}.",
        if missing.is_empty() {
            "none".into()
        } else {
            missing.join("; ")
        }
    );
    for c in report["classes"].as_array().into_iter().flatten() {
        let s = &c["summary"];
        let verdict = match (s["pass_zero_shot"] == true, s["pass_top16"] == true) {
            (true, true) => "meets both targets".to_string(),
            (false, false) => "misses both targets".to_string(),
            (true, false) => "meets the zero-shot target, misses the top-16 target".to_string(),
            (false, true) => "misses the zero-shot target, meets the top-16 target".to_string(),
        };
        let _ = writeln!(
            w,
            "- {} ({}): {verdict} (zero-shot {}, top-16 {} mean over the runs{}).",
            c["class"].as_str().unwrap_or("?"),
            c["training"]["label"].as_str().unwrap_or("?"),
            f3(&s["stats"]["zero_shot"]["mean"]),
            f3(&s["stats"]["top16"]["mean"]),
            if s["pass_zero_shot"] != s["pass_zero_shot_every_run"]
                || s["pass_top16"] != s["pass_top16_every_run"]
            {
                "; not in every run"
            } else {
                ""
            }
        );
    }
    for note in report["notes"].as_array().into_iter().flatten() {
        let _ = writeln!(w, "- {}", note.as_str().unwrap_or(""));
    }
    let _ = writeln!(
        w,
        "- Top-16 is the best measured GB/s among the first {K} candidates in the order of \
         `eval-policy` (the policy's proposals with the layout strategies inserted after the \
         first 4 where the matrix has their layout), so it means what it means in \
         `docs/policy/policy-eval-h200.md`. The sweep has no renumbered variants, so the search's \
         renumber phase is not part of it; ours (the benchmark's search winner) may renumber \
         and then exceeds the sweep oracle (ours / bench oracle, in the JSON, stays <= 1).\n- \
         Related training class names are a fixed list by name (`RELATED` in \
         `xtask/src/policy_classes.rs`): the generators of the evaluated matrices differ from \
         the training matrices of those classes.\n"
    );
    let runs_args: Vec<String> = args
        .runs
        .iter()
        .map(|p| shown(&workspace_root(), p))
        .collect();
    let bench_args: Vec<String> = args
        .bench
        .iter()
        .map(|p| shown(&workspace_root(), p))
        .collect();
    let _ = writeln!(
        w,
        "Reproduce (no GPU): `cargo xtask eval-classes --runs {} --bench {}`. Machine-readable: `{}.json`.",
        runs_args.join(" "),
        bench_args.join(" "),
        args.stem
    );
    o
}

fn join(v: &Value) -> String {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| x.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
