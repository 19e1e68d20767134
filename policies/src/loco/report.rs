//! Summaries and the Markdown table of a leave-one-class-out run.

use super::LocoRecord;
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Mean and minimum of a set of fractions.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Stats {
    /// Values.
    pub n: usize,
    /// Arithmetic mean (0 without values).
    pub mean: f64,
    /// Minimum (0 without values).
    pub min: f64,
}

impl Stats {
    /// Stats of `xs`.
    pub fn of(xs: impl IntoIterator<Item = f64>) -> Stats {
        let v: Vec<f64> = xs.into_iter().collect();
        if v.is_empty() {
            return Stats {
                n: 0,
                mean: 0.0,
                min: 0.0,
            };
        }
        Stats {
            n: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().cloned().fold(f64::INFINITY, f64::min),
        }
    }
}

fn zs(r: &LocoRecord, rule: &str) -> f64 {
    r.zero_shot.get(rule).map_or(0.0, |p| p.1)
}

/// Mean zero-shot over mean template (`None` when the template scores 0).
fn vs_template(recs: &[&LocoRecord], rule: &str) -> Option<f64> {
    let t = Stats::of(recs.iter().map(|r| r.template)).mean;
    (t > 0.0).then(|| Stats::of(recs.iter().map(|r| zs(r, rule))).mean / t)
}

/// One row of the per-class table: a class and a size group.
fn class_row(class: &str, size: &str, recs: &[&LocoRecord], rules: &[String]) -> Value {
    let mut zero = serde_json::Map::new();
    let mut vs = serde_json::Map::new();
    for rule in rules {
        zero.insert(
            rule.clone(),
            json!(Stats::of(recs.iter().map(|r| zs(r, rule)))),
        );
        vs.insert(rule.clone(), json!(vs_template(recs, rule)));
    }
    json!({
        "class": class,
        "size": size,
        "real": recs.iter().any(|r| r.real),
        "records": recs.len(),
        "zero_shot": zero,
        "zero_shot_vs_template": vs,
        "template": Stats::of(recs.iter().map(|r| r.template)),
        "first16": Stats::of(recs.iter().map(|r| r.first16)),
        "first16_knn": Stats::of(recs.iter().map(|r| r.first16_knn)),
    })
}

/// Records grouped by class, sorted.
fn by_class(records: &[LocoRecord]) -> BTreeMap<&str, Vec<&LocoRecord>> {
    let mut m: BTreeMap<&str, Vec<&LocoRecord>> = BTreeMap::new();
    for r in records {
        m.entry(r.class.as_str()).or_default().push(r);
    }
    m
}

/// Per class: all records, then the small and the large ones where a class has both.
pub fn class_rows(records: &[LocoRecord], rules: &[String]) -> Vec<Value> {
    let mut out = Vec::new();
    for (class, recs) in by_class(records) {
        out.push(class_row(class, "all", &recs, rules));
        for size in ["small", "large"] {
            let part: Vec<&LocoRecord> = recs.iter().copied().filter(|r| r.size == size).collect();
            if !part.is_empty() && part.len() < recs.len() {
                out.push(class_row(class, size, &part, rules));
            }
        }
    }
    out
}

/// The headline numbers of one rule.
pub fn rule_summary(records: &[LocoRecord], rule: &str) -> Value {
    let all: Vec<&LocoRecord> = records.iter().collect();
    let class_means: Vec<(&str, f64)> = by_class(records)
        .into_iter()
        .map(|(c, rs)| (c, Stats::of(rs.iter().map(|r| zs(r, rule))).mean))
        .collect();
    let worst = class_means
        .iter()
        .cloned()
        .fold(None, |w: Option<(&str, f64)>, c| match w {
            Some(w) if w.1 <= c.1 => Some(w),
            _ => Some(c),
        });
    let part = |f: &dyn Fn(&LocoRecord) -> bool| -> Vec<&LocoRecord> {
        records.iter().filter(|r| f(r)).collect()
    };
    let real = part(&|r| r.real);
    let first16_min = by_class(records)
        .into_values()
        .map(|rs| Stats::of(rs.iter().map(|r| r.first16)).mean)
        .fold(f64::INFINITY, f64::min);
    let first16_knn_min = by_class(records)
        .into_values()
        .map(|rs| Stats::of(rs.iter().map(|r| r.first16_knn)).mean)
        .fold(f64::INFINITY, f64::min);
    json!({
        "zero_shot_pooled": Stats::of(all.iter().map(|r| zs(r, rule))).mean,
        "zero_shot_class_mean": Stats::of(class_means.iter().map(|c| c.1)).mean,
        "zero_shot_min_class": worst.map(|w| w.1),
        "zero_shot_min_class_name": worst.map(|w| w.0),
        "zero_shot_min_record": Stats::of(all.iter().map(|r| zs(r, rule))).min,
        "zero_shot_vs_template_real": vs_template(&real, rule),
        "zero_shot_vs_template_all": vs_template(&all, rule),
        "zero_shot_small": Stats::of(part(&|r| r.size == "small").iter().map(|r| zs(r, rule))),
        "zero_shot_large": Stats::of(part(&|r| r.size == "large").iter().map(|r| zs(r, rule))),
        "records_below_0_9": all.iter().filter(|r| zs(r, rule) < 0.9).count(),
        "classes_below_0_9": class_means.iter().filter(|c| c.1 < 0.9).count(),
        "unmeasured_picks": all.iter().filter(|r| r.unmeasured.iter().any(|u| u == rule)).count(),
        "first16_pooled": Stats::of(all.iter().map(|r| r.first16)).mean,
        "first16_min_class": first16_min,
        "first16_knn_pooled": Stats::of(all.iter().map(|r| r.first16_knn)).mean,
        "first16_knn_min_class": first16_knn_min,
        "template_pooled": Stats::of(all.iter().map(|r| r.template)).mean,
    })
}

/// The Markdown report: headline per rule, then the per-class table.
pub fn markdown(title: &str, report: &Value, rules: &[String]) -> String {
    let mut md = format!("# {title}\n\n");
    let _ = writeln!(md, "{}\n", report["description"].as_str().unwrap_or(""));
    md += "| rule | zero-shot pooled | class mean | worst class | zero-shot / template (real) | small | large | records < 0.9 | first 16 pooled | first 16 worst class |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for rule in rules {
        let s = &report["summary"]["by_rule"][rule];
        let f = |v: &Value| v.as_f64().map_or("-".into(), |x| format!("{x:.3}"));
        let _ = writeln!(
            md,
            "| {rule} | {} | {} | {} {} | {} | {} | {} | {} | {} | {} |",
            f(&s["zero_shot_pooled"]),
            f(&s["zero_shot_class_mean"]),
            s["zero_shot_min_class_name"].as_str().unwrap_or("-"),
            f(&s["zero_shot_min_class"]),
            f(&s["zero_shot_vs_template_real"]),
            f(&s["zero_shot_small"]["mean"]),
            f(&s["zero_shot_large"]["mean"]),
            s["records_below_0_9"],
            f(&s["first16_pooled"]),
            f(&s["first16_min_class"]),
        );
    }
    if let Some(s) = rules.first().map(|r| &report["summary"]["by_rule"][r]) {
        let f = |v: &Value| v.as_f64().map_or("-".into(), |x| format!("{x:.3}"));
        let _ = writeln!(
            md,
            "\nFirst 16 with the 8 nearest training records' best 8 first, the policy's proposals \
             after them: pooled {}, worst class {} (the policy's 16 alone: {} / {}).",
            f(&s["first16_knn_pooled"]),
            f(&s["first16_knn_min_class"]),
            f(&s["first16_pooled"]),
            f(&s["first16_min_class"]),
        );
    }
    md += "\nPer class (mean / min of the class's records; zero-shot per rule):\n\n| class | size | real | records |";
    for rule in rules {
        let _ = write!(md, " zero-shot {rule} | vs template {rule} |");
    }
    md += " first 16 | first 16, records first | template |\n|---|---|---|---|";
    md += &"---|---|".repeat(rules.len());
    md += "---|---|---|\n";
    for row in report["classes"].as_array().into_iter().flatten() {
        let st = |v: &Value| {
            format!(
                "{:.3} / {:.3}",
                v["mean"].as_f64().unwrap_or(0.0),
                v["min"].as_f64().unwrap_or(0.0)
            )
        };
        let _ = write!(
            md,
            "| {} | {} | {} | {} |",
            row["class"].as_str().unwrap_or(""),
            row["size"].as_str().unwrap_or(""),
            row["real"],
            row["records"]
        );
        for rule in rules {
            let vs = row["zero_shot_vs_template"][rule]
                .as_f64()
                .map_or("-".into(), |x| format!("{x:.2}x"));
            let _ = write!(md, " {} | {vs} |", st(&row["zero_shot"][rule]));
        }
        let _ = writeln!(
            md,
            " {} | {} | {} |",
            st(&row["first16"]),
            st(&row["first16_knn"]),
            st(&row["template"])
        );
    }
    md
}
