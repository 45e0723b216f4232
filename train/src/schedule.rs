//! Learning-rate schedules: the learning rate of step `t` (from 1), given
//! to the step function as its `lr` input.
//!
//! - `constant`: `lr` (after the warmup).
//! - `cosine`: after the warmup, `lr * (1 + cos(pi * (t - w) / (T - w))) / 2`,
//!   from `lr` down to 0 at step `T` (the schedule's horizon), then 0.
//! Both warm up linearly first: `lr * t / w` for `t <= w` (`w` = `--warmup`,
//! 0 = none), as PyTorch's `LinearLR` then `CosineAnnealingLR`.
//! Computed in f64, rounded to f32 once.

use std::str::FromStr;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScheduleKind {
    Constant,
    Cosine,
}

impl FromStr for ScheduleKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "constant" => Ok(ScheduleKind::Constant),
            "cosine" => Ok(ScheduleKind::Cosine),
            _ => Err(format!("unknown schedule '{s}' (valid: constant, cosine)")),
        }
    }
}

impl ScheduleKind {
    pub fn name(self) -> &'static str {
        match self {
            ScheduleKind::Constant => "constant",
            ScheduleKind::Cosine => "cosine",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    pub kind: ScheduleKind,
    /// The peak learning rate.
    pub lr: f32,
    pub warmup: usize,
    /// The horizon `T` of the cosine decay (total steps).
    pub total: usize,
}

impl Schedule {
    pub fn constant(lr: f32) -> Schedule {
        Schedule { kind: ScheduleKind::Constant, lr, warmup: 0, total: 0 }
    }
    /// The learning rate of step `t` (from 1).
    pub fn lr_at(&self, t: usize) -> f32 {
        let lr = self.lr as f64;
        let (t, w) = (t as f64, self.warmup as f64);
        if self.warmup > 0 && t <= w {
            return (lr * t / w) as f32;
        }
        match self.kind {
            ScheduleKind::Constant => self.lr,
            ScheduleKind::Cosine => {
                let span = (self.total as f64 - w).max(1.0);
                let x = ((t - w) / span).clamp(0.0, 1.0);
                (lr * 0.5 * (1.0 + (std::f64::consts::PI * x).cos())) as f32
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_cosine_values() {
        let s = Schedule { kind: ScheduleKind::Cosine, lr: 1.0, warmup: 4, total: 14 };
        let v: Vec<f32> = (1..=15).map(|t| s.lr_at(t)).collect();
        assert_eq!(&v[..4], &[0.25, 0.5, 0.75, 1.0]);
        // Half way through the decay (t = 9 of 4..14): 0.5.
        assert!((v[8] - 0.5).abs() < 1e-7, "{v:?}");
        assert!((v[5] - (0.5 * (1.0 + (std::f64::consts::PI * 0.2).cos())) as f32).abs() < 1e-7);
        assert_eq!(v[13], 0.0);
        assert_eq!(v[14], 0.0, "after the horizon");
        assert!(v[4..].windows(2).all(|w| w[1] <= w[0]), "decays monotonically");
        let c = Schedule { kind: ScheduleKind::Constant, lr: 0.1, warmup: 2, total: 0 };
        assert_eq!((1..=4).map(|t| c.lr_at(t)).collect::<Vec<_>>(), vec![0.05, 0.1, 0.1, 0.1]);
        assert_eq!("cosine".parse::<ScheduleKind>(), Ok(ScheduleKind::Cosine));
        assert!("linear".parse::<ScheduleKind>().unwrap_err().contains("constant, cosine"));
    }
}
