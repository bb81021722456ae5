//! 2^k factorial designs with replications (Jain, "The Art of Computer
//! Systems Performance Analysis", ch. 17-18, as used in the Diversified
//! Router benchmarking report's Table 1): the sign table, the effect of
//! every factor and interaction, the allocation of variation, and
//! confidence intervals of the effects from the replication error.

/// Runs of a full 2^k design: `signs()[run][factor]` is -1 (low) or +1
/// (high), in standard order (factor 0 alternates fastest).
pub fn signs(k: usize) -> Vec<Vec<i8>> {
    (0..1usize << k)
        .map(|run| {
            (0..k)
                .map(|f| if run >> f & 1 == 1 { 1 } else { -1 })
                .collect()
        })
        .collect()
}

/// A term of the linear model: a set of factors (bit mask; 0 is the mean).
#[derive(Clone, Debug, PartialEq)]
pub struct Term {
    pub mask: usize,
    pub name: String,
    /// The effect q (half the change from low to high).
    pub effect: f64,
    /// Sum of squares explained, and its share of the total variation.
    pub ss: f64,
    pub fraction: f64,
    /// Confidence interval of the effect (None without replications).
    pub ci: Option<(f64, f64)>,
}

impl Term {
    /// Significant when the interval excludes zero.
    pub fn significant(&self) -> Option<bool> {
        self.ci.map(|(lo, hi)| lo > 0.0 || hi < 0.0)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Analysis {
    pub terms: Vec<Term>,
    /// Sum of squares of the replication error and its share.
    pub sse: f64,
    pub error_fraction: f64,
    pub sst: f64,
    pub confidence: f64,
}

/// Analyses responses `y[run][replication]` of a full 2^k design whose
/// runs are in the order of [`signs`]. `names` names the k factors.
pub fn analyse(names: &[String], y: &[Vec<f64>], confidence: f64) -> Result<Analysis, String> {
    let k = names.len();
    let n = 1usize << k;
    if y.len() != n {
        return Err(format!("a 2^{k} design needs {n} runs, got {}", y.len()));
    }
    let r = y.first().map(|v| v.len()).unwrap_or(0);
    if r == 0 || y.iter().any(|v| v.len() != r) {
        return Err("every run needs the same number (>= 1) of replications".into());
    }
    let mean: Vec<f64> = y.iter().map(|v| v.iter().sum::<f64>() / r as f64).collect();
    let sign = |run: usize, mask: usize| -> f64 {
        if (!run & mask).count_ones() % 2 == 1 {
            -1.0
        } else {
            1.0
        }
    };
    let sse: f64 = y
        .iter()
        .zip(&mean)
        .map(|(v, m)| v.iter().map(|x| (x - m) * (x - m)).sum::<f64>())
        .sum();
    let mut terms = Vec::with_capacity(n);
    for mask in 0..n {
        let q = (0..n).map(|run| sign(run, mask) * mean[run]).sum::<f64>() / n as f64;
        let name = if mask == 0 {
            "mean".to_string()
        } else {
            (0..k)
                .filter(|f| mask >> f & 1 == 1)
                .map(|f| names[f].as_str())
                .collect::<Vec<_>>()
                .join("*")
        };
        terms.push(Term {
            mask,
            name,
            effect: q,
            ss: if mask == 0 {
                0.0
            } else {
                (n * r) as f64 * q * q
            },
            fraction: 0.0,
            ci: None,
        });
    }
    let sst = terms.iter().map(|t| t.ss).sum::<f64>() + sse;
    let df = n * (r - 1);
    let half = if df > 0 {
        let se = (sse / df as f64).sqrt();
        let sq = se / ((n * r) as f64).sqrt();
        Some(t_quantile(0.5 + confidence / 2.0, df as f64) * sq)
    } else {
        None
    };
    for t in &mut terms {
        t.fraction = if sst > 0.0 { t.ss / sst } else { 0.0 };
        t.ci = half.map(|h| (t.effect - h, t.effect + h));
    }
    Ok(Analysis {
        terms,
        sse,
        error_fraction: if sst > 0.0 { sse / sst } else { 0.0 },
        sst,
        confidence,
    })
}

impl Analysis {
    /// A table of effects, confidence intervals and allocation of variation.
    pub fn render(&self, unit: &str) -> String {
        let mut out = format!(
            "{:<28} {:>12} {:>27} {:>10}\n",
            format!("term (effect in {unit})"),
            "effect",
            format!("{:.0}% confidence interval", self.confidence * 100.0),
            "variation"
        );
        for t in &self.terms {
            let ci = match t.ci {
                Some((lo, hi)) => format!(
                    "({lo:.4}, {hi:.4}){}",
                    if t.mask != 0 && t.significant() == Some(false) {
                        " ns"
                    } else {
                        ""
                    }
                ),
                None => "(no replications)".into(),
            };
            let var = if t.mask == 0 {
                String::new()
            } else {
                format!("{:.1}%", t.fraction * 100.0)
            };
            out.push_str(&format!(
                "{:<28} {:>12.4} {:>27} {:>10}\n",
                t.name, t.effect, ci, var
            ));
        }
        out.push_str(&format!(
            "{:<28} {:>12} {:>27} {:>9.1}%\n(ns: not significant, the interval includes 0)\n",
            "error (replications)",
            "",
            "",
            self.error_fraction * 100.0
        ));
        out
    }
}

/// Quantile of the standard normal distribution (Acklam's rational
/// approximation; relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.383_577_518_672_69e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let lo = 0.02425;
    if p < lo {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - lo {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    }
}

/// Quantile of Student's t with `df` degrees of freedom: exact for 1 and
/// 2, the Cornish-Fisher expansion otherwise (within 0.3% for df >= 3 at
/// the usual confidence levels).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if df <= 1.0 {
        return (std::f64::consts::PI * (p - 0.5)).tan();
    }
    if df <= 2.0 {
        let a = 4.0 * p * (1.0 - p);
        return (2.0 * p - 1.0) * (2.0 / a).sqrt();
    }
    let z = normal_quantile(p);
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92160.0;
    z + g1 / df + g2 / (df * df) + g3 / df.powi(3) + g4 / df.powi(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_tables() {
        assert!((normal_quantile(0.975) - 1.959964).abs() < 1e-5);
        assert!((normal_quantile(0.05) + 1.644854).abs() < 1e-5);
        // t tables: t(0.95; 4) = 2.132, t(0.975; 8) = 2.306, t(0.975; 2) = 4.303.
        assert!((t_quantile(0.95, 4.0) - 2.132).abs() < 0.01);
        assert!((t_quantile(0.975, 8.0) - 2.306).abs() < 0.01);
        assert!((t_quantile(0.975, 2.0) - 4.303).abs() < 0.001);
        assert!((t_quantile(0.975, 1.0) - 12.706).abs() < 0.01);
    }

    #[test]
    fn jain_2_2_3_example() {
        // Jain, Example 18.1: a 2^2 design with 3 replications.
        let y = vec![
            vec![15.0, 18.0, 12.0], // A-, B-
            vec![45.0, 48.0, 51.0], // A+, B-
            vec![25.0, 28.0, 19.0], // A-, B+
            vec![75.0, 75.0, 81.0], // A+, B+
        ];
        let names = vec!["A".to_string(), "B".to_string()];
        let a = analyse(&names, &y, 0.90).unwrap();
        let q: Vec<f64> = a.terms.iter().map(|t| t.effect).collect();
        assert_eq!(q, vec![41.0, 21.5, 9.5, 5.0]);
        assert!((a.sse - 102.0).abs() < 1e-9);
        assert!((a.sst - 7032.0).abs() < 1e-9);
        // Allocation of variation: A 78.9%, B 15.4%, AB 4.3%, error 1.5%.
        assert!((a.terms[1].fraction - 0.7888).abs() < 1e-3);
        assert!((a.terms[2].fraction - 0.1540).abs() < 1e-3);
        assert!((a.terms[3].fraction - 0.0427).abs() < 1e-3);
        assert!((a.error_fraction - 0.0145).abs() < 1e-3);
        // s_q = 1.03; 90% intervals with t(0.95; 8) = 1.86: A (19.58, 23.42).
        let (lo, hi) = a.terms[1].ci.unwrap();
        assert!(
            (lo - 19.58).abs() < 0.05 && (hi - 23.42).abs() < 0.05,
            "{lo} {hi}"
        );
        assert_eq!(a.terms[3].significant(), Some(true));
        assert!(a.render("x").contains("A*B"));
    }

    #[test]
    fn wrong_shapes_are_errors() {
        let names = vec!["A".to_string()];
        assert_eq!(
            analyse(&names, &[vec![1.0]], 0.9).err().as_deref(),
            Some("a 2^1 design needs 2 runs, got 1")
        );
        assert_eq!(
            analyse(&names, &[vec![1.0], vec![]], 0.9).err().as_deref(),
            Some("every run needs the same number (>= 1) of replications")
        );
        let a = analyse(&names, &[vec![1.0], vec![3.0]], 0.9).unwrap();
        assert_eq!(a.terms[1].ci, None);
        assert_eq!(a.terms[1].effect, 1.0);
    }

    #[test]
    fn sign_table_is_standard_order() {
        assert_eq!(
            signs(2),
            vec![vec![-1, -1], vec![1, -1], vec![-1, 1], vec![1, 1]]
        );
    }
}
