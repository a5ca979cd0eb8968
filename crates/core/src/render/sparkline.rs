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

/// The scale shared by series of one unit drawn side by side (per-pod CPU):
/// the largest value among them, so a quiet pod draws low bars beside a busy one.
pub fn shared_ceiling<'a>(series: impl IntoIterator<Item = &'a Series>, unit: &str) -> Option<f64> {
    series
        .into_iter()
        .filter(|s| s.unit == unit)
        .flat_map(|s| s.values.iter().flatten().copied())
        .filter(|v| v.is_finite())
        .reduce(f64::max)
}

/// A series drawn against `ceiling`, followed by its range and unit:
/// `▁▂█ (scale 0-1.48 cores)`.
pub fn scaled_sparkline(series: &Series, ceiling: Option<f64>, width: usize) -> String {
    let ceiling = if series.unit == "ratio" {
        Some(1.0)
    } else {
        ceiling
    };
    let line = sparkline(&series.values, ceiling, width);
    let top = ceiling.or_else(|| {
        series
            .values
            .iter()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .reduce(f64::max)
    });
    match top {
        Some(top) => {
            let unit = if series.unit.is_empty() || series.unit == "value" {
                String::new()
            } else {
                format!(" {}", series.unit)
            };
            format!("{line} (scale 0-{}{unit})", trim(top))
        }
        None => line,
    }
}

/// A number with at most three significant decimals and no trailing zeros.
fn trim(v: f64) -> String {
    let text = format!("{v:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
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
    fn pods_on_a_shared_scale_draw_a_quiet_pod_low_beside_a_busy_one() {
        let pod = |label: &str, level: f64| Series {
            label: label.into(),
            unit: "cores".into(),
            start: chrono::DateTime::<chrono::Utc>::UNIX_EPOCH,
            step_seconds: 60,
            values: vec![Some(level); 4],
        };
        let pods = [pod("quiet", 0.5), pod("busy", 1.3)];
        let ceiling = shared_ceiling(&pods, "cores");
        assert_eq!(ceiling, Some(1.3));
        assert_eq!(
            scaled_sparkline(&pods[0], ceiling, 10),
            "▄▄▄▄ (scale 0-1.3 cores)"
        );
        assert_eq!(
            scaled_sparkline(&pods[1], ceiling, 10),
            "████ (scale 0-1.3 cores)"
        );
    }

    #[test]
    fn all_zero_draws_the_floor() {
        assert_eq!(sparkline(&[Some(0.0), Some(0.0)], None, 80), "▁▁");
    }
}
