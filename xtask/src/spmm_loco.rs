//! `cargo xtask spmm-records loco`: the record pick judged leave-one-class-out
//! (each case picked from the records of the other classes, under the rule a
//! leave-one-class-out over those classes chose) against the former rule and
//! the analytic prior's first variant, on the fraction of the case's fastest
//! measured time each reached. Written as JSON and Markdown.

use crate::spmm_records::{FOREST_SWEEP, Fits, GROUP_SWEEP, Judged, choose_rules_with, judge};
use anyhow::{Context, Result};
use serde::Serialize;
use sparserl_policies::SpmmRecords;
use sparserl_policies::spmm_model::{PickRule, RULE_GRID, pick_rule};
use std::collections::BTreeMap;
use std::path::Path;

/// Geometric mean and count of the present values.
pub(crate) fn gm(xs: impl Iterator<Item = Option<f64>>) -> (Option<f64>, usize) {
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
    /// Cases whose former pick the benchmark measured.
    pub former_measured: usize,
    /// The same for the former rule (8 nearest, equal weights, no regression).
    pub former: Option<f64>,
    /// Cases whose prior pick the benchmark measured.
    pub prior_measured: usize,
    /// The same for the prior.
    pub prior: Option<f64>,
    /// On the cases where both were measured: (record, prior, cases).
    pub both: (Option<f64>, Option<f64>, usize),
    /// Geomean of the best measured fraction among the record ranking's
    /// first 16, and the cases where any of them was measured.
    pub first16: (Option<f64>, usize),
    /// The same for the prior's first 16.
    pub prior_first16: (Option<f64>, usize),
    /// The same for the search order's first 16 (the records' first 8 and
    /// the prior's, alternately).
    pub order_first16: (Option<f64>, usize),
}

fn group(js: &[&Judged]) -> Group {
    let (record, record_measured) = gm(js.iter().map(|j| j.record_fraction));
    let (former, former_measured) = gm(js.iter().map(|j| j.former_fraction));
    let (prior, prior_measured) = gm(js.iter().map(|j| j.prior_fraction));
    let both: Vec<&&Judged> = js
        .iter()
        .filter(|j| j.record_fraction.is_some() && j.prior_fraction.is_some())
        .collect();
    Group {
        cases: js.len(),
        record_measured,
        record,
        former_measured,
        former,
        prior_measured,
        prior,
        both: (
            gm(both.iter().map(|j| j.record_fraction)).0,
            gm(both.iter().map(|j| j.prior_fraction)).0,
            both.len(),
        ),
        first16: gm(js.iter().map(|j| j.record_first16)),
        prior_first16: gm(js.iter().map(|j| j.prior_first16)),
        order_first16: gm(js.iter().map(|j| j.order_first16)),
    }
}

/// The report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Where the records come from.
    pub source: Vec<String>,
    /// How the figures are made.
    pub method: String,
    /// Per value type and layout, the rule a leave-one-class-out over every
    /// class chooses (the no-GPU pick's).
    pub rules: BTreeMap<String, String>,
    /// Per value type and layout.
    pub summary: BTreeMap<String, Group>,
    /// Per value type and layout, per class.
    pub classes: BTreeMap<String, BTreeMap<String, Group>>,
    /// Every case.
    pub cases: Vec<Judged>,
}

const METHOD: &str = "Each case is picked from the records of the other structure classes only \
(leave-one-class-out), over the records of the same value type and layout, by a rule: the \
nearest records (standardised distance over log sizes, row-length shape, X-gather locality and \
log2 N) give a variant their mean fraction of the fastest, either the 8 nearest with equal weights \
or the 16 nearest with the i-th weighing 1/(1+i); a per-variant ridge regression (penalty 10) of \
the log fraction on the same standardised features predicts it; a variant's score is s times the \
prediction plus (1 - s) times the log of the neighbours' mean, s in {0, 1/4, 1/2, 3/4}; with the 16 \
nearest, a share t in {1/4, 1/2} of the score may go to a regression shared by all variants \
(penalty 1) of the log fraction on the products of the standardised features (clamped to 3 \
deviations), their squares, their products with log2 N and a constant with the variant's knob \
tokens (its family and each knob within it), the rest (1 - t) to \
the score above; a variant needs 3 of the 8 nearest records to have measured it; four of the rules \
with the 16 nearest and the knob regression (ridge and knob shares 0 and 1/4, 1/4 and 1/4, 1/2 and \
1/4, 1/4 and 1/2) also rank a variant too few of the nearest measured where 3 of the 8 records \
nearest in size alone (log rows, columns, nonzeros and log2 N) did, with those records' mean (size \
votes). Which of these 20 rules picks a held-out \
class's cases is chosen, apart for each value type and layout, by a leave-one-class-out over the \
other classes only (nested: the held-out class never decides it); the no-GPU pick uses, for each \
value type and layout, the rule the same selection chooses over every class. \
The former rule is the 8 nearest, equal weights, no regression, not nested. A pick's figure is its \
fraction of the case's fastest time among the variants the benchmark's search measured (not the \
whole space); a pick the search did not measure has no figure and is counted apart. The prior's \
pick is the first variant of the analytic prior in the run that measured the case.";

/// Reads gzipped SpMM records.
pub(crate) fn load(path: &Path) -> Result<SpmmRecords> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(SpmmRecords::from_gz(&bytes)?)
}

/// Runs the evaluation.
pub fn run(records: &Path, out: &Path) -> Result<()> {
    let all = load(records)?;
    let mut rules: BTreeMap<String, String> = BTreeMap::new();
    let fits = Fits::new(&all);
    for ((value, layout), rule) in choose_rules_with(&fits, None) {
        let key = format!("{value} {}", layout.as_str());
        let shipped = pick_rule(value, layout);
        println!(
            "rule chosen over every class ({key}): {} (the no-GPU pick's: {})",
            rule.name(),
            shipped.name()
        );
        if rule != shipped {
            eprintln!("warning: the chosen rule of {key} is not the no-GPU pick's pick_rule");
        }
        rules.insert(key, rule.name());
    }
    let judged = judge(&fits);
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
        rules,
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
    for (i, share) in FOREST_SWEEP.iter().enumerate() {
        print_sweep(&format!("forest share {share}"), &by_key, |j| {
            j.forest_sweep[i]
        });
    }
    for (i, g) in GROUP_SWEEP.iter().enumerate() {
        print_sweep(&format!("{g:?} first"), &by_key, |j| j.group_sweep[i]);
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

/// Prints, per key, a variant of the pick's pooled figure, its classes
/// below 0.9 and its three worst classes.
fn print_sweep(
    label: &str,
    by_key: &BTreeMap<String, Vec<&Judged>>,
    fig: impl Fn(&Judged) -> Option<f64>,
) {
    for (k, js) in by_key {
        let (x, m) = gm(js.iter().map(|j| fig(j)));
        let mut per: BTreeMap<&str, Vec<Option<f64>>> = BTreeMap::new();
        for j in js {
            per.entry(j.class.as_str()).or_default().push(fig(j));
        }
        let mut classes: Vec<(f64, &str)> = per
            .iter()
            .filter_map(|(c, v)| Some((gm(v.iter().copied()).0?, *c)))
            .collect();
        classes.sort_by(|a, b| a.0.total_cmp(&b.0));
        let below = classes.iter().filter(|c| c.0 < 0.9).count();
        let w: Vec<String> = classes
            .iter()
            .take(3)
            .map(|(x, c)| format!("{c} {x:.3}"))
            .collect();
        println!(
            "  {label} ({k}): {} ({m} measured), {below} classes below 0.9, worst {}",
            f(x),
            w.join(", ")
        );
    }
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

/// A figure to three decimals, `-` where absent.
pub(crate) fn f(x: Option<f64>) -> String {
    x.map_or("-".into(), |v| format!("{v:.3}"))
}

fn line(g: &Group) -> String {
    format!(
        "record pick {} ({} of {} measured), former {} ({} measured), prior {} ({} measured); both measured ({}): {} against {}; first 16 (cases): records {}, prior {}, search order {}",
        f(g.record),
        g.record_measured,
        g.cases,
        f(g.former),
        g.former_measured,
        f(g.prior),
        g.prior_measured,
        g.both.2,
        f(g.both.0),
        f(g.both.1),
        fc(g.first16),
        fc(g.prior_first16),
        fc(g.order_first16)
    )
}

/// A figure and its count, as `0.123 (45)`.
fn fc(x: (Option<f64>, usize)) -> String {
    format!("{} ({})", f(x.0), x.1)
}

/// The three lowest classes of `per` by `fig`, as `class 0.123`.
fn worst(per: &BTreeMap<String, Group>, fig: impl Fn(&Group) -> Option<f64>) -> String {
    let mut v: Vec<(f64, &str)> = per
        .iter()
        .filter_map(|(c, g)| Some((fig(g)?, c.as_str())))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let w: Vec<String> = v
        .iter()
        .take(3)
        .map(|(x, c)| format!("{c} {x:.3}"))
        .collect();
    w.join(", ")
}

/// What a rule does, in a sentence.
fn prose(p: &PickRule) -> String {
    let weights = if p.rank_weighted {
        "the i-th weighing 1/(1+i)"
    } else {
        "with equal weights"
    };
    let knobs = if p.knob_share > 0.0 {
        format!(
            "; {} of the score goes to the knob regression's predicted log fraction, {} to that \
             blend",
            p.knob_share,
            1.0 - p.knob_share
        )
    } else {
        String::new()
    };
    let votes = if p.size_votes {
        " (or 3 of the 8 nearest in size alone, with their mean)"
    } else {
        ""
    };
    format!(
        "the {} nearest records of the value type and layout, {weights}, give a variant their \
         mean fraction of the fastest; its score is {} times the ridge-predicted log fraction \
         plus {} times the log of that mean{knobs}; a variant needs 3 of the 8 nearest records \
         to have measured it{votes}.",
        p.neighbours,
        p.ridge_share,
        1.0 - p.ridge_share,
    )
}

fn markdown(r: &Report) -> String {
    let mut s = String::from("# SpMM no-GPU pick, leave-one-class-out (H200 measurements)\n\n");
    for (key, name) in &r.rules {
        if let Some(p) = RULE_GRID.iter().find(|p| p.name() == *name) {
            s += &format!(
                "The no-GPU pick's rule for {key}: `{name}`: {}\n\n",
                prose(p)
            );
        }
    }
    s += &format!(
        "The former rule (`{}`) ranked by the 8 nearest records' mean alone.\n\n",
        RULE_GRID[0].name()
    );
    s += &format!("{}\n\nRecords: {}.\n\n", r.method, r.source.join("; "));
    s += "| value, layout | cases | record pick, nested (measured) | former rule (measured) | prior (measured) | both measured: record / prior (cases) | record ranking's first 16 (cases) | prior's first 16 (cases) | search order's first 16 (cases) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (k, g) in &r.summary {
        s += &format!(
            "| {k} | {} | {} ({}) | {} ({}) | {} ({}) | {} / {} ({}) | {} | {} | {} |\n",
            g.cases,
            f(g.record),
            g.record_measured,
            f(g.former),
            g.former_measured,
            f(g.prior),
            g.prior_measured,
            f(g.both.0),
            f(g.both.1),
            g.both.2,
            fc(g.first16),
            fc(g.prior_first16),
            fc(g.order_first16)
        );
    }
    s += "\nFigures count measured picks only: a rule whose picks the search measured less \
          often is judged on fewer cases (the measured counts in brackets). The first-16 figure \
          is, per case, the best measured fraction among the record ranking's first 16 \
          variants (nested rule, other classes' records): what a search that measured those 16 \
          first would reach at least, among the variants the benchmark measured. The prior's \
          first 16 were measured first by the benchmark's own search, so nearly all have a \
          figure: that comparison leans the prior's way. The search order's first 16 are the \
          records' first 8 and the prior's first 8, alternately (what the search tries first).\n";
    s += "\n| value, layout | worst classes, record pick | worst classes, former rule |\n|---|---|---|\n";
    for (k, per) in &r.classes {
        s += &format!(
            "| {k} | {} | {} |\n",
            worst(per, |g| g.record),
            worst(per, |g| g.former)
        );
    }
    for (k, per) in &r.classes {
        s += &format!(
            "\n## {k}, per class\n\n| class | cases | record pick (measured) | former rule (measured) | prior (measured) | first 16 (cases) | prior's first 16 | search order's first 16 |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
        );
        for (c, g) in per {
            s += &format!(
                "| {c} | {} | {} ({}) | {} ({}) | {} ({}) | {} ({}) | {} | {} |\n",
                g.cases,
                f(g.record),
                g.record_measured,
                f(g.former),
                g.former_measured,
                f(g.prior),
                g.prior_measured,
                f(g.first16.0),
                g.first16.1,
                f(g.prior_first16.0),
                f(g.order_first16.0)
            );
        }
    }
    s
}
