//! `cargo xtask spmm-records loco`: the record pick judged leave-one-class-out
//! (each case picked from the records of the other classes) against the
//! analytic prior's first variant, on the fraction of the case's fastest
//! measured time each reached. Written as JSON and Markdown.

use crate::spmm_records::{Judged, judge};
use anyhow::{Context, Result};
use serde::Serialize;
use sparserl_policies::SpmmRecords;
use std::collections::BTreeMap;
use std::path::Path;

/// Geometric mean and count of the present values.
fn gm(xs: impl Iterator<Item = Option<f64>>) -> (Option<f64>, usize) {
    let v: Vec<f64> = xs.flatten().filter(|x| *x > 0.0).collect();
    if v.is_empty() {
        return (None, 0);
    }
    let m = v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64;
    (Some(m.exp()), v.len())
}

/// One group's figures (a value type and layout, or a class within one).
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// Cases.
    pub cases: usize,
    /// Cases whose record pick the benchmark measured.
    pub record_measured: usize,
    /// Geomean fraction of the fastest of the record pick, where measured.
    pub record: Option<f64>,
    /// Cases whose prior pick the benchmark measured.
    pub prior_measured: usize,
    /// The same for the prior.
    pub prior: Option<f64>,
    /// On the cases where both were measured: (record, prior, cases).
    pub both: (Option<f64>, Option<f64>, usize),
}

fn group(js: &[&Judged]) -> Group {
    let (record, record_measured) = gm(js.iter().map(|j| j.record_fraction));
    let (prior, prior_measured) = gm(js.iter().map(|j| j.prior_fraction));
    let both: Vec<&&Judged> = js
        .iter()
        .filter(|j| j.record_fraction.is_some() && j.prior_fraction.is_some())
        .collect();
    Group {
        cases: js.len(),
        record_measured,
        record,
        prior_measured,
        prior,
        both: (
            gm(both.iter().map(|j| j.record_fraction)).0,
            gm(both.iter().map(|j| j.prior_fraction)).0,
            both.len(),
        ),
    }
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where the records come from.
    pub source: Vec<String>,
    /// How the figures are made.
    pub method: String,
    /// Per value type and layout.
    pub summary: BTreeMap<String, Group>,
    /// Per value type and layout, per class.
    pub classes: BTreeMap<String, BTreeMap<String, Group>>,
    /// Every case.
    pub cases: Vec<Judged>,
}

const METHOD: &str = "Each case is picked from the records of the other structure classes only \
(leave-one-class-out; k = 8 nearest records of the same value type and layout, standardised \
distance over log sizes, row-length shape, X-gather locality and log2 N; a variant needs 3 of \
them to have measured it). A pick's figure is its fraction of the case's fastest time among the \
variants the benchmark's search measured (not the whole space); a pick the search did not \
measure has no figure and is counted apart. The prior's pick is the first variant of the \
analytic prior in the run that measured the case.";

/// Runs the evaluation.
pub fn run(records: &Path, out: &Path) -> Result<()> {
    let bytes = std::fs::read(records).with_context(|| format!("reading {}", records.display()))?;
    let all = SpmmRecords::from_gz(&bytes)?;
    let judged = judge(&all);
    let mut by_key: BTreeMap<String, Vec<&Judged>> = BTreeMap::new();
    for j in &judged {
        by_key.entry(j.key.clone()).or_default().push(j);
    }
    let summary = by_key
        .iter()
        .map(|(k, js)| (k.clone(), group(js)))
        .collect();
    let classes = by_key
        .iter()
        .map(|(k, js)| {
            let mut per: BTreeMap<String, Vec<&Judged>> = BTreeMap::new();
            for j in js {
                per.entry(j.class.clone()).or_default().push(j);
            }
            let groups = per.iter().map(|(c, v)| (c.clone(), group(v))).collect();
            (k.clone(), groups)
        })
        .collect();
    let report = Report {
        source: all.source.clone(),
        method: METHOD.into(),
        summary,
        classes,
        cases: judged.clone(),
    };
    let json = out.with_extension("json");
    std::fs::write(&json, serde_json::to_string_pretty(&report)?)?;
    let md = out.with_extension("md");
    std::fs::write(&md, markdown(&report))?;
    println!("wrote {} and {}", json.display(), md.display());
    for (k, g) in &report.summary {
        println!("{k}: {}", line(g));
    }
    for d in NEAR_SWEEP {
        let near: Vec<Judged> = judged.iter().map(|j| near_switch(j, d)).collect();
        for (k, js) in by_key_of(&near) {
            let (x, m) = gm(js.iter().map(|j| j.record_fraction));
            println!(
                "  record pick only within mean distance {d} ({k}): {} ({m} measured)",
                f(x)
            );
        }
    }
    Ok(())
}

/// Mean neighbour distances the switch `near_switch` is judged at.
const NEAR_SWEEP: [f64; 4] = [1.0, 1.5, 2.0, 3.0];

/// The record pick where its neighbours lie within mean distance `d`, else
/// the prior's (in the record-pick fields).
fn near_switch(j: &Judged, d: f64) -> Judged {
    let mut out = j.clone();
    if j.distance >= d {
        out.record_pick = j.prior_pick.clone();
        out.record_fraction = j.prior_fraction;
    }
    out
}

fn by_key_of(js: &[Judged]) -> BTreeMap<String, Vec<&Judged>> {
    let mut m: BTreeMap<String, Vec<&Judged>> = BTreeMap::new();
    for j in js {
        m.entry(j.key.clone()).or_default().push(j);
    }
    m
}

fn f(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn line(g: &Group) -> String {
    format!(
        "record pick {} ({} of {} measured), prior {} ({} measured); both measured ({}): {} against {}",
        f(g.record),
        g.record_measured,
        g.cases,
        f(g.prior),
        g.prior_measured,
        g.both.2,
        f(g.both.0),
        f(g.both.1)
    )
}

fn markdown(r: &Report) -> String {
    let mut s = String::from("# SpMM no-GPU pick, leave-one-class-out (H200 measurements)\n\n");
    s += &format!("{}\n\nRecords: {}.\n\n", r.method, r.source.join("; "));
    s += "| value, layout | cases | record pick (measured) | prior (measured) | both measured: record / prior (cases) |\n|---|---:|---:|---:|---:|\n";
    for (k, g) in &r.summary {
        s += &format!(
            "| {k} | {} | {} ({}) | {} ({}) | {} / {} ({}) |\n",
            g.cases,
            f(g.record),
            g.record_measured,
            f(g.prior),
            g.prior_measured,
            f(g.both.0),
            f(g.both.1),
            g.both.2
        );
    }
    for (k, per) in &r.classes {
        s += &format!(
            "\n## {k}, per class\n\n| class | cases | record pick (measured) | prior (measured) |\n|---|---:|---:|---:|\n"
        );
        for (c, g) in per {
            s += &format!(
                "| {c} | {} | {} ({}) | {} ({}) |\n",
                g.cases,
                f(g.record),
                g.record_measured,
                f(g.prior),
                g.prior_measured
            );
        }
    }
    s
}
