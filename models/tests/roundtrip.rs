//! Every generated model's printed text parses back with ckopt's own parser
//! (and verifies), and printing the parsed module gives the same text: the
//! files `ckopt-gen` writes are exactly what `ckopt-opt` will read.

use ckopt_ir::{parse_and_verify, print_module};
use ckopt_models::{GenOptions, ModelKind, generate};

#[test]
fn printed_models_parse_verify_and_print_identically() {
    for kind in ModelKind::ALL {
        let m = generate(kind, &GenOptions::default()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let text = print_module(&m);
        let back = parse_and_verify(&text, "gen.ck").unwrap_or_else(|d| panic!("{kind}:\n{}", d.render(Some(&text))));
        assert_eq!(print_module(&back), text, "{kind}: print(parse(print(m))) differs");
        let f = &back.funcs[0];
        assert_eq!(f.params.len(), m.funcs[0].params.len(), "{kind}");
        assert_eq!(f.trainable_indices(), m.funcs[0].trainable_indices(), "{kind}: ck.param lost");
    }
}
