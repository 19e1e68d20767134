//! The SpMM part of the generated module: one type per `op = "spmm"`
//! kernel, implementing `sparserl_rt::spmm::SpmmKernel` with an embedded
//! `SpmmSpec` (one module per declared width plus the generic-width
//! fallback, PTX and cubins per architecture included from `OUT_DIR`).

use crate::emit::KERNEL_DIR;
use crate::entry_spmm::{SpmmEntry, SpmmModuleEntry};
use sparserl_rt::dense::DenseLayout;
use sparserl_rt::spmm::{SpmmEpilogue, SpmmStrategy, SpmmVariant};
use std::fmt::Write as _;

/// The static the generated module declares for SpMM kernel `name`.
pub fn spec_static(name: &str) -> String {
    format!("{}_SPEC", name.to_uppercase())
}

fn include_str(file: &str) -> String {
    format!("include_str!(concat!(env!(\"OUT_DIR\"), \"/{KERNEL_DIR}/{file}\"))")
}

fn include_bytes(file: &str) -> String {
    format!("include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{KERNEL_DIR}/{file}\"))")
}

/// The variant as a Rust constant expression.
pub fn variant_expr(v: &SpmmVariant) -> String {
    let strategy = match v.strategy {
        SpmmStrategy::RowWarp => "RowWarp",
        SpmmStrategy::NnzSplit => "NnzSplit",
        SpmmStrategy::ColTile => "ColTile",
    };
    format!(
        "::sparserl_rt::spmm::SpmmVariant {{ strategy: ::sparserl_rt::spmm::SpmmStrategy::{strategy}, block: {}, group: {}, vec: {}, coarsen: {}, tile: {}, items: {}, sub: {}, split: {}, unroll: {}, ldg_x: {}, trans: {} }}",
        v.block,
        v.group,
        v.vec,
        v.coarsen,
        v.tile,
        v.items,
        v.sub,
        v.split,
        v.unroll,
        v.ldg_x,
        v.trans
    )
}

fn module_expr(kernel: &str, m: &SpmmModuleEntry) -> String {
    let stem = m.stem(kernel);
    let images: Vec<String> = m
        .images
        .iter()
        .map(|img| {
            let cubin = match &img.cubin {
                Some(_) => format!(
                    "Some({})",
                    include_bytes(&format!("{stem}.{}.cubin", img.arch))
                ),
                None => "None".into(),
            };
            format!(
                "::sparserl_rt::spmm::SpmmImage {{ arch: {:?}, ptx: {}, cubin: {cubin} }}",
                img.arch,
                include_str(&format!("{stem}.{}.ptx", img.arch))
            )
        })
        .collect();
    let width = match m.width {
        Some(n) => format!("Some({n})"),
        None => "None".into(),
    };
    format!(
        "::sparserl_rt::spmm::SpmmModule {{ variant: {}, width: {width}, source: {}, images: &[{}] }}",
        variant_expr(&m.variant),
        include_str(&format!("{stem}.cu")),
        images.join(", ")
    )
}

fn layout_expr(l: DenseLayout) -> &'static str {
    match l {
        DenseLayout::RowMajor => "::sparserl_rt::dense::DenseLayout::RowMajor",
        DenseLayout::ColMajor => "::sparserl_rt::dense::DenseLayout::ColMajor",
    }
}

fn epilogue_expr(e: SpmmEpilogue) -> &'static str {
    match e {
        SpmmEpilogue::BiasRelu => "::sparserl_rt::spmm::SpmmEpilogue::BiasRelu",
    }
}

fn provenance_expr(p: sparserl_rt::Provenance) -> &'static str {
    match p {
        sparserl_rt::Provenance::Measured => "::sparserl_rt::Provenance::Measured",
        sparserl_rt::Provenance::LockFile => "::sparserl_rt::Provenance::LockFile",
        sparserl_rt::Provenance::Policy => "::sparserl_rt::Provenance::Policy",
        sparserl_rt::Provenance::Fallback => "::sparserl_rt::Provenance::Fallback",
    }
}

/// Renders the SpMM kernels of `entries` (type name, entry; declaration
/// order) and the `ALL_SPMM_KERNELS` list (empty when there are none).
pub fn render(entries: &[(String, SpmmEntry)]) -> String {
    let mut s = String::new();
    for (type_name, e) in entries {
        let widths: Vec<String> = e
            .widths
            .iter()
            .map(|m| format!("N = {}: `{}`", m.width.unwrap_or(0), m.variant))
            .collect();
        let tuned: Vec<String> = e.widths.iter().map(|m| module_expr(&e.name, m)).collect();
        let epilogues: Vec<&str> = e.epilogues.iter().map(|x| epilogue_expr(*x)).collect();
        let rust_ty = e.value.as_str();
        let _ = write!(
            s,
            "/// Tuned SpMM kernel `{name}` ({rust_ty}, {layout} X and Y): {widths}; {note}.\n\
             ///\n\
             /// Launch it with [`::sparserl_rt::spmm::SpmmKernel::spmm`].\n\
             #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]\n\
             #[allow(dead_code)]\n\
             pub struct {type_name};\n\n\
             #[doc(hidden)]\n\
             #[allow(dead_code)]\n\
             pub static {static_name}: ::sparserl_rt::spmm::SpmmSpec = ::sparserl_rt::spmm::SpmmSpec {{\n\
             \x20   name: {name:?},\n\
             \x20   value: ::sparserl_rt::ValueType::{vt},\n\
             \x20   layout: {layout_expr},\n\
             \x20   tuned: &[{tuned}],\n\
             \x20   fallback: {fallback},\n\
             \x20   epilogues: &[{epilogues}],\n\
             \x20   provenance: {provenance},\n\
             \x20   tuned_on: {tuned_on},\n\
             }};\n\n\
             // SAFETY: every module of the spec was generated by sparserl-build\n\
             // for its variant and width, this value type, layout and epilogues.\n\
             unsafe impl ::sparserl_rt::spmm::SpmmKernel for {type_name} {{\n\
             \x20   type Value = {rust_ty};\n\
             \x20   fn spec(&self) -> &'static ::sparserl_rt::spmm::SpmmSpec {{\n\
             \x20       &{static_name}\n\
             \x20   }}\n\
             }}\n\n",
            name = e.name,
            layout = e.layout.as_str(),
            widths = widths.join(", "),
            note = e.note,
            static_name = spec_static(&e.name),
            vt = if rust_ty == "f32" { "F32" } else { "F64" },
            layout_expr = layout_expr(e.layout),
            tuned = tuned.join(", "),
            fallback = module_expr(&e.name, &e.fallback),
            epilogues = epilogues.join(", "),
            provenance = provenance_expr(e.provenance),
            tuned_on = match &e.tuned_on {
                Some(g) => format!("Some({g:?})"),
                None => "None".into(),
            },
        );
    }
    s.push_str("/// Every SpMM kernel declared by this crate, in declaration order.\n");
    s.push_str("#[allow(dead_code)]\n");
    s.push_str("pub static ALL_SPMM_KERNELS: &[&::sparserl_rt::spmm::SpmmSpec] = &[");
    for (_, e) in entries {
        let _ = write!(s, "&{}, ", spec_static(&e.name));
    }
    s.push_str("];\n");
    s
}
