//! PNG charts drawn from a diagnosis's own series, for what people would
//! rather see than read: the culprit target group's latency against the
//! threshold (breaching periods shaded, the other groups faint) and each
//! pod's CPU against its request and limit. Pure: a diagnosis in, PNG bytes
//! out. Built only with the `charts` feature (notify-slack and the CLI).

use std::sync::OnceLock;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::diagnosis::{Diagnosis, FindingId};
use crate::series::Series;

/// Size of every chart: legible in Slack's preview (about 360 px wide) and sharp when opened.
pub const WIDTH: u32 = 960;
pub const HEIGHT: u32 = 480;

/// DejaVu Sans (Bitstream Vera licence, `assets/fonts/DejaVuSans-LICENSE.txt`),
/// embedded so that a Lambda without system fonts draws the same text.
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "alarm-triage-sans";

/// One rendered chart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chart {
    /// File name (`latency.png`).
    pub file_name: String,
    /// What it shows, for people (Slack's file title, alt text).
    pub title: String,
    pub png: Vec<u8>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("the {chart} chart could not be drawn: {problem}")]
pub struct ChartError {
    pub chart: &'static str,
    pub problem: String,
}

fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok())
}

/// The charts a diagnosis has data for (none for an alarm without a breakdown or pods).
pub fn charts(d: &Diagnosis) -> Result<Vec<Chart>, ChartError> {
    let mut out = Vec::new();
    if let Some(chart) = latency(d)? {
        out.push(chart);
    }
    if let Some(chart) = pods(d)? {
        out.push(chart);
    }
    Ok(out)
}

/// Minutes from `end` (negative: before it) of each value of `s`.
fn points(s: &Series, end: chrono::DateTime<chrono::Utc>) -> Vec<Vec<(f64, f64)>> {
    // Runs of consecutive values; a gap ends a run so that no line bridges it.
    let mut runs = vec![Vec::new()];
    for (i, v) in s.values.iter().enumerate() {
        let at = s.start + chrono::Duration::seconds((i as u64 * s.step_seconds) as i64);
        let minutes = (at - end).num_seconds() as f64 / 60.0;
        match v {
            Some(v) if v.is_finite() => runs.last_mut().map_or((), |r| r.push((minutes, *v))),
            _ => runs.push(Vec::new()),
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

fn end_of(series: &[&Series]) -> Option<chrono::DateTime<chrono::Utc>> {
    series
        .iter()
        .map(|s| {
            s.start + chrono::Duration::seconds((s.values.len() as u64 * s.step_seconds) as i64)
        })
        .max()
}

fn encode(buffer: &[u8], chart: &'static str) -> Result<Vec<u8>, ChartError> {
    let fail = |problem: String| ChartError { chart, problem };
    let mut png = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut png, WIDTH, HEIGHT);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Best);
        let mut writer = encoder.write_header().map_err(|e| fail(e.to_string()))?;
        writer
            .write_image_data(buffer)
            .map_err(|e| fail(e.to_string()))?;
    }
    Ok(png)
}

fn drawing_error<E: std::fmt::Debug>(chart: &'static str) -> impl Fn(E) -> ChartError {
    move |e| ChartError {
        chart,
        problem: format!("{e:?}"),
    }
}

/// The chart's frame on `root`: caption, axes over `start..0` minutes and
/// `0..top`, labelled in the embedded font.
fn frame<'a>(
    root: &DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>,
    title: &str,
    end: chrono::DateTime<chrono::Utc>,
    y_desc: &str,
    (start, top): (f64, f64),
    fail: &dyn Fn(String) -> ChartError,
) -> Result<
    ChartContext<'a, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    ChartError,
> {
    root.fill(&WHITE).map_err(|e| fail(format!("{e:?}")))?;
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(start..0.0, 0.0..top)
        .map_err(|e| fail(format!("{e:?}")))?;
    chart
        .configure_mesh()
        .x_desc(format!("minutes before {}", end.format("%H:%M UTC")))
        .y_desc(y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style((FAMILY, 15))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(|e| fail(format!("{e:?}")))?;
    Ok(chart)
}

/// The culprit target group's latency (the alarm's statistic and a second one)
/// against the threshold, over the window read; breaching periods shaded; the
/// other groups faint.
fn latency(d: &Diagnosis) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "latency";
    let Some(culprit) = d
        .target_groups
        .iter()
        .find(|g| g.culprit && !g.series.is_empty())
    else {
        return Ok(None);
    };
    let others: Vec<&Series> = d
        .target_groups
        .iter()
        .filter(|g| !g.culprit)
        .filter_map(|g| g.series.first())
        .collect();
    let mine: Vec<&Series> = culprit.series.iter().collect();
    let all: Vec<&Series> = mine.iter().chain(&others).copied().collect();
    let Some(end) = end_of(&all) else {
        return Ok(None);
    };
    let threshold = d.alarm.threshold;
    let top = all
        .iter()
        .filter_map(|s| s.max())
        .chain(threshold)
        .fold(0.0_f64, f64::max)
        * 1.15;
    let start = all
        .iter()
        .filter_map(|s| points(s, end).first().and_then(|r| r.first()).map(|p| p.0))
        .fold(0.0_f64, f64::min);
    if top <= 0.0 || start >= 0.0 || !font_ready() {
        return Ok(None);
    }
    let unit = culprit.series[0].unit.clone();
    let statistic = d.alarm.evaluated_statistic();
    let title = format!(
        "{} {statistic} vs threshold {}{}",
        culprit.name,
        threshold.map_or("?".to_owned(), |t| t.to_string()),
        if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        }
    );
    let fail = drawing_error(NAME);
    let mut buffer = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (WIDTH, HEIGHT)).into_drawing_area();
        let y_desc = if unit == "s" {
            "seconds".to_owned()
        } else {
            unit.clone()
        };
        let mut chart = frame(&root, &title, end, &y_desc, (start, top), &|problem| {
            ChartError {
                chart: NAME,
                problem,
            }
        })?;
        // Breaching periods of the alarm's own metric, shaded.
        if let (Some(metric), Some(t)) = (&d.alarm_metric, threshold) {
            let comparison = d.alarm.comparison_or_default();
            let step = metric.step_seconds as f64 / 60.0;
            let shade = RGBColor(255, 214, 214).filled();
            for run in points(metric, end) {
                for (x, v) in run {
                    if comparison.breaches(v, t) {
                        chart
                            .draw_series(std::iter::once(Rectangle::new(
                                [(x, 0.0), ((x + step).min(0.0), top)],
                                shade,
                            )))
                            .map_err(&fail)?;
                    }
                }
            }
        }
        let faint = RGBColor(190, 190, 190);
        for s in &others {
            for run in points(s, end) {
                chart
                    .draw_series(LineSeries::new(run, faint.stroke_width(1)))
                    .map_err(&fail)?;
            }
        }
        let colours = [RGBColor(200, 30, 30), RGBColor(240, 140, 0)];
        for (s, colour) in mine.iter().zip(colours) {
            let mut first = true;
            for run in points(s, end) {
                let drawn = chart
                    .draw_series(LineSeries::new(run, colour.stroke_width(3)))
                    .map_err(&fail)?;
                if first {
                    drawn.label(s.label.clone()).legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(3))
                    });
                    first = false;
                }
            }
        }
        mark_changes(&mut chart, d, end, (start, top), &fail)?;
        if let Some(t) = threshold {
            chart
                .draw_series(DashedLineSeries::new(
                    [(start, t), (0.0, t)],
                    8,
                    5,
                    BLACK.stroke_width(2),
                ))
                .map_err(&fail)?
                .label(format!("threshold {t}"))
                .legend(|(x, y)| PathElement::new([(x, y), (x + 18, y)], BLACK.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(faint)
            .label_font((FAMILY, 15))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(&fail)?;
        root.present().map_err(&fail)?;
    }
    Ok(Some(Chart {
        file_name: "latency.png".to_owned(),
        title,
        png: encode(&buffer, NAME)?,
    }))
}

/// Changes made (not the cluster reacting) as vertical dashed marks over
/// `start..0` minutes; the most plausible one bold and in the legend.
fn mark_changes<'a>(
    chart: &mut ChartContext<'a, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    d: &Diagnosis,
    end: chrono::DateTime<chrono::Utc>,
    (start, top): (f64, f64),
    fail: &impl Fn(DrawingAreaErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>) -> ChartError,
) -> Result<(), ChartError> {
    let colour = RGBColor(40, 90, 200);
    let mut labelled = false;
    for change in d.changes.iter().filter(|c| !c.automatic) {
        let x = (change.at - end).num_seconds() as f64 / 60.0;
        if x < start || x > 0.0 {
            continue;
        }
        let width = if change.most_plausible { 3 } else { 1 };
        let drawn = chart
            .draw_series(DashedLineSeries::new(
                [(x, 0.0), (x, top)],
                4,
                4,
                colour.stroke_width(width),
            ))
            .map_err(fail)?;
        if change.most_plausible && !labelled {
            labelled = true;
            drawn
                .label(format!("changed: {}", change.subject))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(3))
                });
        }
    }
    Ok(())
}

/// Each pod's CPU against the pods' request and limit, on one scale; hot pods
/// drawn bold.
fn pods(d: &Diagnosis) -> Result<Option<Chart>, ChartError> {
    const NAME: &str = "pods";
    let Some(imbalance) = d.findings.iter().find(|f| f.id == FindingId::PodImbalance) else {
        return Ok(None);
    };
    let series: Vec<&Series> = imbalance
        .series
        .iter()
        .filter(|s| s.unit == "cores" && s.values.iter().any(Option::is_some))
        .collect();
    let Some(end) = end_of(&series) else {
        return Ok(None);
    };
    let pods = d
        .workload
        .as_ref()
        .map(|w| w.pods.as_slice())
        .unwrap_or_default();
    let request = pods.iter().filter_map(|p| p.cpu_request).reduce(f64::max);
    let limit = pods.iter().filter_map(|p| p.cpu_limit).reduce(f64::max);
    let hot: Vec<&str> = match &imbalance.facts {
        crate::diagnosis::Facts::Imbalance(f) => f.hot.iter().map(|h| h.pod.as_str()).collect(),
        _ => Vec::new(),
    };
    let top = series
        .iter()
        .filter_map(|s| s.max())
        .chain(request)
        .chain(limit)
        .fold(0.0_f64, f64::max)
        * 1.15;
    let start = series
        .iter()
        .filter_map(|s| points(s, end).first().and_then(|r| r.first()).map(|p| p.0))
        .fold(0.0_f64, f64::min);
    if top <= 0.0 || start >= 0.0 || !font_ready() {
        return Ok(None);
    }
    let title = format!(
        "CPU per pod{} (cores)",
        d.workload
            .as_ref()
            .map(|w| format!(
                " of {}/{}",
                w.namespace,
                w.deployment.as_deref().unwrap_or(&w.service)
            ))
            .unwrap_or_default()
    );
    let fail = drawing_error(NAME);
    let mut buffer = vec![0u8; (WIDTH * HEIGHT * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buffer, (WIDTH, HEIGHT)).into_drawing_area();
        let mut chart = frame(&root, &title, end, "cores", (start, top), &|problem| {
            ChartError {
                chart: NAME,
                problem,
            }
        })?;
        for (value, label, colour) in [
            (request, "request", RGBColor(40, 120, 40)),
            (limit, "limit", RGBColor(120, 0, 0)),
        ] {
            if let Some(v) = value {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(start, v), (0.0, v)],
                        8,
                        5,
                        colour.stroke_width(2),
                    ))
                    .map_err(&fail)?
                    .label(format!("{label} {v} cores"))
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2))
                    });
            }
        }
        for (i, s) in series.iter().enumerate() {
            let pod = s.label.trim_end_matches(" CPU");
            let is_hot = hot.contains(&pod);
            // Hot pods in orange, bold; the others in quiet blues and greys.
            const QUIET: [RGBColor; 4] = [
                RGBColor(70, 110, 170),
                RGBColor(120, 150, 190),
                RGBColor(110, 110, 110),
                RGBColor(160, 170, 180),
            ];
            let colour = if is_hot {
                RGBColor(235, 120, 0)
            } else {
                QUIET[i % QUIET.len()]
            };
            let width = if is_hot { 3 } else { 2 };
            let mut first = true;
            for run in points(s, end) {
                let drawn = chart
                    .draw_series(LineSeries::new(run, colour.stroke_width(width)))
                    .map_err(&fail)?;
                // A legend line per hot pod, and for the first few others.
                if first && (is_hot || i < 4) {
                    drawn
                        .label(if is_hot {
                            format!("{pod} (hot)")
                        } else {
                            pod.to_owned()
                        })
                        .legend(move |(x, y)| {
                            PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(width))
                        });
                }
                first = false;
            }
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(190, 190, 190))
            .label_font((FAMILY, 14))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()
            .map_err(&fail)?;
        root.present().map_err(&fail)?;
    }
    Ok(Some(Chart {
        file_name: "pods-cpu.png".to_owned(),
        title,
        png: encode(&buffer, NAME)?,
    }))
}
