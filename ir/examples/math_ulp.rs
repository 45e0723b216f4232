//! The exhaustive accuracy check of `ckopt_ir::math` (every f32 input):
//! `cargo run --release -p ckopt-ir --example math_ulp [exp|tanh|erf|sigmoid]`.
//! The unit test `math_accuracy` samples one input in 4093.
use ckopt_ir::math::{erff, expf, sigmoidf, tanhf, ulp_error};

fn main() {
    let which: Vec<String> = std::env::args().skip(1).collect();
    let all: [(&str, fn(f32) -> f32, fn(f64) -> f64); 4] = [
        ("exp", expf, f64::exp),
        ("tanh", tanhf, f64::tanh),
        ("erf", erff, erf64),
        ("sigmoid", sigmoidf, |v| if v < -88.72 { 0.0 } else { 1.0 / (1.0 + (-v).exp()) }),
    ];
    for (name, f, r) in all {
        if !which.is_empty() && !which.iter().any(|w| w == name) {
            continue;
        }
        let (mut worst, mut at) = (0.0f64, 0.0f32);
        for i in 0..=u32::MAX {
            let x = f32::from_bits(i);
            let e = ulp_error(f(x), r(f64::from(x)));
            if e > worst {
                (worst, at) = (e, x);
            }
        }
        println!("{name}: worst {worst:.3} ulp at {at:e} (bits {:#010x})", at.to_bits());
    }
}

fn erf64(x: f64) -> f64 {
    libm::erf(x)
}
