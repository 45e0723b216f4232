//! Property test: print/parse round trip on THE shared random graph generator
//! (`ckopt_ir::testgen`). For every generated (verified) module m:
//! parse(print(m)) verifies, print(parse(print(m))) == print(m), and the
//! re-parsed module has the same ops, attributes and types as m.

use ckopt_ir::testgen::{GenConfig, arb_module};
use ckopt_ir::{parse_and_verify, print_module};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn print_parse_round_trip(m in arb_module(&GenConfig::default().annotated())) {
        let p = print_module(&m);
        let m2 = match parse_and_verify(&p, "gen.ck") {
            Ok(m2) => m2,
            Err(d) => return Err(TestCaseError::fail(d.render(Some(&p)))),
        };
        prop_assert_eq!(print_module(&m2), p.clone());
        prop_assert_eq!(m.funcs.len(), m2.funcs.len());
        for (a, b) in m.funcs.iter().zip(&m2.funcs) {
            prop_assert_eq!(a.body.len(), b.body.len());
            for (oa, ob) in a.body.iter().zip(&b.body) {
                prop_assert_eq!(oa.kind, ob.kind);
                prop_assert_eq!(&oa.attrs, &ob.attrs);
                prop_assert_eq!(oa.result.map(|r| a.ty(r).clone()), ob.result.map(|r| b.ty(r).clone()));
                let ta: Vec<_> = oa.operands.iter().map(|&v| a.ty(v)).collect();
                let tb: Vec<_> = ob.operands.iter().map(|&v| b.ty(v)).collect();
                prop_assert_eq!(ta, tb);
            }
        }
    }
}
