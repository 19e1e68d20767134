//! The validation pass: the model of a manifest ([`RawManifest`]) into a
//! [`Descriptor`], the descriptor table's keys first, then each kernel in
//! declaration order (`pattern` tables in `validate_pattern`).

use std::collections::HashMap;

use super::*;

/// Rust keywords (strict and reserved, edition 2024) that cannot name a kernel.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final", "gen", "macro",
    "override", "priv", "try", "typeof", "unsized", "virtual", "yield",
];

/// Validates a parsed manifest document (the whole `Cargo.toml`).
pub(super) fn validate(cx: &Cx<'_>, doc: &Value) -> Result<Descriptor, DescriptorError> {
    let manifest = deserialize_at::<RawManifest>(doc, String::new())
        .map_err(|e| e.into_descriptor_error(cx.manifest, None))?;
    let Some(root) = manifest
        .package
        .and_then(|p| p.metadata)
        .and_then(|m| m.sparserl)
    else {
        return Err(cx.err(
            ROOT,
            format!(
                "no SparseRL descriptor: add a [{ROOT}] table (optional keys: arch, \
                 budget-seconds, objective) and at least one [[{ROOT}.kernel]] entry, e.g. \
                 name = \"my_kernel\", op = \"spmv\", value = \"f32\", \
                 pattern = {{ kind = \"stencil\", grid = [1024, 1024], points = 5 }}"
            ),
        ));
    };

    let arch = match &root.arch {
        None => None,
        Some(v) => Some(validate_arch(cx, &join_key(ROOT, "arch"), v)?),
    };
    let budget_seconds = match &root.budget_seconds {
        None => None,
        Some(v) => Some(positive_number(cx, &join_key(ROOT, "budget-seconds"), v)?),
    };
    let objective = match &root.objective {
        None => crate::objective::Objective::Time,
        Some(v) => validate_objective(cx, &join_key(ROOT, "objective"), v)?,
    };
    let kernels = kernel_tables(cx, root.kernel.as_ref())?;

    let mut decls = Vec::with_capacity(kernels.len());
    // Generated identifier -> (kernel index, name) of the kernel it came from.
    let mut seen: HashMap<String, (usize, String)> = HashMap::new();
    for (i, item) in kernels.iter().enumerate() {
        let path = kernel_key_path(i);
        let raw = deserialize_at::<RawKernel>(item, path.clone())
            .map_err(|e| e.into_descriptor_error(cx.manifest, None))?;
        let decl = validate_kernel(cx, &path, raw, objective)?;
        // Every identifier the generated module derives from the name: the
        // type and the `NAME_SPEC` static (the name upper-cased).
        let idents = [
            ("type name", decl.type_name.clone()),
            ("static", spec_static_name(&decl.name)),
        ];
        for (kind, ident) in &idents {
            if let Some((j, other)) = seen.get(ident) {
                let what = if *other == decl.name {
                    format!("found \"{}\" again", decl.name)
                } else {
                    format!(
                        "found \"{}\", whose {kind} {ident} is also derived from \"{other}\"",
                        decl.name
                    )
                };
                return Err(cx.err(
                    &join_key(&path, "name"),
                    format!(
                        "{what} (kernel[{j}] and kernel[{i}]), expected unique kernel names \
                         (and unique UpperCamelCase type names and NAME_SPEC statics: \
                         names that differ only in letter case or underscores clash)"
                    ),
                ));
            }
        }
        for (_, ident) in idents {
            seen.insert(ident, (i, decl.name.clone()));
        }
        decls.push(decl);
    }

    Ok(Descriptor {
        manifest: cx.manifest.to_path_buf(),
        arch,
        budget_seconds,
        objective,
        kernels: decls,
    })
}

/// The `kernel` key: a non-empty array (of kernel tables, checked one by one).
fn kernel_tables<'v>(
    cx: &Cx<'_>,
    kernel: Option<&'v Value>,
) -> Result<&'v [Value], DescriptorError> {
    let path = join_key(ROOT, "kernel");
    match kernel {
        None => Err(cx.err(&path, no_kernels_message("no kernels declared"))),
        Some(Value::Array(items)) if items.is_empty() => {
            Err(cx.err(&path, no_kernels_message("found an empty array")))
        }
        Some(Value::Array(items)) => Ok(items),
        Some(Value::Table(_)) => Err(cx.err(
            &path,
            format!(
                "found a single table, expected an array of tables: write \
                 [[{ROOT}.kernel]] (double brackets) for each kernel"
            ),
        )),
        Some(other) => Err(cx.err(
            &path,
            format!(
                "found {}, expected an array of kernel tables ([[{ROOT}.kernel]])",
                found_typed(other)
            ),
        )),
    }
}

fn validate_arch(cx: &Cx<'_>, path: &str, v: &Value) -> Result<Vec<String>, DescriptorError> {
    const EXPECTED: &str = "expected an array of architectures like [\"sm_80\", \"sm_90\"] (\"sm_\" followed by 2 or 3 digits)";
    let Value::Array(items) = v else {
        return Err(cx.err(path, format!("found {}, {EXPECTED}", found_typed(v))));
    };
    if items.is_empty() {
        return Err(cx.err(
            path,
            format!("found an empty array, {EXPECTED}; omit the key for the default"),
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let item_path = format!("{path}[{i}]");
        let s = match item {
            Value::String(s) => s,
            other => {
                return Err(cx.err(
                    &item_path,
                    format!(
                        "found {}, expected a string like \"sm_80\"",
                        found_typed(other)
                    ),
                ));
            }
        };
        let digits = s.strip_prefix("sm_").unwrap_or("");
        if !(2..=3).contains(&digits.len()) || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(cx.err(
                &item_path,
                format!(
                    "found {}, expected an architecture like \"sm_80\" or \"sm_90\" \
                     (\"sm_\" followed by 2 or 3 digits)",
                    quote(s)
                ),
            ));
        }
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    Ok(out)
}

/// One kernel table at key path `path`.
fn validate_kernel(
    cx: &Cx<'_>,
    path: &str,
    raw: RawKernel,
    inherited: crate::objective::Objective,
) -> Result<KernelDecl, DescriptorError> {
    let name_path = join_key(path, "name");
    let name = string(
        cx,
        &name_path,
        cx.required(
            path,
            "name",
            &raw.name,
            "a string naming the kernel, e.g. \"laplace2d\"",
        )?,
    )?;
    let type_name = check_name(cx, &name_path, name)?;

    let op_path = join_key(path, "op");
    let ops: Vec<&str> = Op::ALL.iter().map(|o| o.as_str()).collect();
    let op_name = string(
        cx,
        &op_path,
        cx.required(path, "op", &raw.op, &one_of(&ops))?,
    )?;
    let op = Op::ALL
        .into_iter()
        .find(|o| o.as_str() == op_name)
        .ok_or_else(|| {
            cx.err(
                &op_path,
                format!("found {}, expected {}", quote(op_name), one_of(&ops)),
            )
        })?;

    let values = ["f32", "f64"];
    let value_path = join_key(path, "value");
    let value = match string(
        cx,
        &value_path,
        cx.required(path, "value", &raw.value, &one_of(&values))?,
    )? {
        "f32" => ValueType::F32,
        "f64" => ValueType::F64,
        other => {
            return Err(cx.err(
                &value_path,
                format!("found {}, expected {}", quote(other), one_of(&values)),
            ));
        }
    };

    let pattern = validate_pattern(
        cx,
        &join_key(path, "pattern"),
        cx.required(path, "pattern", &raw.pattern, PATTERN_EXPECTED)?,
    )?;

    let OpKeys { epilogues, spmm } = validate_op_keys(cx, path, op, &raw)?;
    let reorder = match &raw.reorder {
        None => None,
        Some(v) => validate_reorder(cx, &join_key(path, "reorder"), v)?,
    };
    if op == Op::Spmm
        && let Some(r) = reorder.filter(|r| !r.is_none())
    {
        return Err(cx.err(
            &join_key(path, "reorder"),
            format!(
                "found \"{}\", expected \"auto\" or \"none\" on an op = \"spmm\" kernel (SpMM \
                 kernels keep the given numbering; renumbering applies to op = \"spmv\" kernels)",
                r.as_str()
            ),
        ));
    }
    let objective = kernel_objective(cx, path, op, raw.objective.as_ref(), inherited)?;

    Ok(KernelDecl {
        name: name.to_string(),
        type_name,
        op,
        value,
        pattern,
        epilogues,
        reorder,
        objective,
        spmm,
    })
}

/// `reorder = "auto" | "none" | "rcm" | "degree"` (`None`: auto).
fn validate_reorder(
    cx: &Cx<'_>,
    path: &str,
    v: &Value,
) -> Result<Option<sparserl_rt::reorder::Reorder>, DescriptorError> {
    use sparserl_rt::reorder::Reorder;
    let names = ["auto", "none", "rcm", "degree"];
    match v {
        Value::String(s) if s == "auto" => Ok(None),
        Value::String(s) => Reorder::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .map(Some)
            .ok_or_else(|| {
                cx.err(
                    path,
                    format!("found {}, expected {}", quote(s), one_of(&names)),
                )
            }),
        other => Err(cx.err(
            path,
            format!("found {}, expected {}", found_typed(other), one_of(&names)),
        )),
    }
}

/// Validates a kernel name and returns its UpperCamelCase type name.
fn check_name(cx: &Cx<'_>, path: &str, name: &str) -> Result<String, DescriptorError> {
    const RULE: &str = "expected a Rust identifier in snake_case (ASCII letters, digits and \
                        underscores, not starting with a digit, not a keyword)";
    if name.is_empty() {
        return Err(cx.err(path, format!("found an empty string, {RULE}")));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
    {
        let hint: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        return Err(cx.err(
            path,
            format!(
                "found {}, {RULE}; {bad:?} is not allowed (try \"{hint}\")",
                quote(name)
            ),
        ));
    }
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err(cx.err(
            path,
            format!("found {}, {RULE}; it starts with a digit", quote(name)),
        ));
    }
    if KEYWORDS.contains(&name) {
        return Err(cx.err(
            path,
            format!("found {}, {RULE}; it is a Rust keyword", quote(name)),
        ));
    }
    let type_name = upper_camel(name);
    if !type_name.starts_with(|c: char| c.is_ascii_alphabetic())
        || KEYWORDS.contains(&type_name.as_str())
    {
        return Err(cx.err(
            path,
            format!(
                "found {}, {RULE}; its type name {:?} is not a valid Rust identifier",
                quote(name),
                type_name
            ),
        ));
    }
    Ok(type_name)
}

/// The static the generated module declares for kernel `name`:
/// `laplace2d` -> `LAPLACE2D_SPEC`.
pub(super) fn spec_static_name(name: &str) -> String {
    format!("{}_SPEC", name.to_ascii_uppercase())
}

/// `my_kernel_v2` -> `MyKernelV2`, `laplace2d` -> `Laplace2d`.
fn upper_camel(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for part in name.split('_') {
        let mut chars = part.chars();
        if let Some(first) = chars.next() {
            out.push(first.to_ascii_uppercase());
            out.extend(chars);
        }
    }
    out
}
