//! Unicode sparklines: a series at a glance, one character per value.

use crate::series::Series;

const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// Draws `values` scaled from 0 to `ceiling` (or to the largest value when
/// `ceiling` is `None`); a missing value is a space. At most `width`
/// characters: longer series are averaged into buckets.
pub fn sparkline(values: &[Option<f64>], ceiling: Option<f64>, width: usize) -> String {
    let buckets = bucket(values, width.max(1));
    let top = ceiling
        .or_else(|| buckets.iter().flatten().copied().reduce(f64::max))
        .filter(|t| *t > 0.0 && t.is_finite());
    buckets
        .iter()
        .map(|v| match (v, top) {
            (None, _) => ' ',
            (Some(_), None) => BARS[0],
            (Some(v), Some(top)) => {
                let level = ((v / top).clamp(0.0, 1.0) * (BARS.len() - 1) as f64).round();
                BARS[level as usize]
            }
        })
        .collect()
}

/// A series' sparkline; ratios are drawn against 1.0 so that "always in ALARM" is a full bar.
pub fn series_sparkline(series: &Series, width: usize) -> String {
    let ceiling = (series.unit == "ratio").then_some(1.0);
    sparkline(&series.values, ceiling, width)
}

fn bucket(values: &[Option<f64>], width: usize) -> Vec<Option<f64>> {
    if values.len() <= width {
        return values.to_vec();
    }
    (0..width)
        .map(|i| {
            let from = i * values.len() / width;
            let to = ((i + 1) * values.len() / width).max(from + 1);
            let present: Vec<f64> = values[from..to].iter().flatten().copied().collect();
            (!present.is_empty()).then(|| present.iter().sum::<f64>() / present.len() as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_climbs_through_every_bar() {
        let ramp: Vec<Option<f64>> = (0..8).map(|i| Some(f64::from(i))).collect();
        assert_eq!(sparkline(&ramp, None, 80), "▁▂▃▄▅▆▇█");
    }

    #[test]
    fn missing_values_are_gaps_and_long_series_are_bucketed() {
        assert_eq!(
            sparkline(&[Some(1.0), None, Some(1.0)], Some(1.0), 80),
            "█ █"
        );
        let long = vec![Some(0.5); 100];
        assert_eq!(sparkline(&long, Some(1.0), 10).chars().count(), 10);
    }

    #[test]
    fn all_zero_draws_the_floor() {
        assert_eq!(sparkline(&[Some(0.0), Some(0.0)], None, 80), "▁▁");
    }
}
